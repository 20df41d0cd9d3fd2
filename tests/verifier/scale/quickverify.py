"""A real but quick ``verify_fn`` for the queue tests: real intake, a real signed report.

The report comes from the one report builder, from a run record that ends after intake
(no fingerprint, no image: they are absent, never placeholders).

No engine runs, so twenty requests verify in seconds; everything around the verify
call (claim, lease, publish, mark) is the real worker. Each call appends one line to a
ledger file, so a test can count how many times each request was verified.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

from podium.timestamps import now_iso
from schemas.report import Stage
from verifier.intake import intake
from verifier.pipeline import ORGANIZER_EVIDENCE, Outcome, VerifyRequest
from verifier.report import RunRecord, build_documents, sign_report, write_report


def quick_verify(req: VerifyRequest, *, ledger: Path, delay_s: float = 0.0) -> Outcome:
    started = now_iso(microseconds=True)
    work = Path(tempfile.mkdtemp(prefix="quick-"))
    try:
        took = time.perf_counter()
        it = intake(req.bundle, work, req.spec)
        assert it.ok and it.manifest is not None, [f.message for f in it.findings]
        time.sleep(delay_s)
        stage = Stage("intake", "ok", round(time.perf_counter() - took, 3))
        record = RunRecord(
            spec=req.spec,
            mode="official",
            runner=req.runner.info.name if req.runner is not None else None,
            started=started,
            reported_tps=req.reported_tps,
            intake=it,
            metrics={"ppl": None, "tps": None, "reported_tps": req.reported_tps},
            stages=[stage],
            organizer_evidence=ORGANIZER_EVIDENCE,
        )
        doc, evidence = build_documents(record, verdict="UNOFFICIAL")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    assert req.key is not None
    doc = sign_report(doc, req.key)
    path = write_report(doc, req.out_dir / "report.json")
    evidence_path = write_report(evidence, req.out_dir / ORGANIZER_EVIDENCE)
    entry = {"reported_tps": req.reported_tps, "pid": os.getpid(), "report": doc["report_id"]}
    line = json.dumps(entry)
    with open(ledger, "a") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        fh.write(line + "\n")
    return Outcome(
        report=doc,
        report_path=path,
        verdict=doc["verdict"],
        signed=True,
        evidence=evidence,
        evidence_path=evidence_path,
    )


def main() -> None:
    """``python quickverify.py QUEUE STORE KEYFILE LEDGER OUT LEASE DELAY``: one worker."""
    from functools import partial

    from doubles.sandbox import VerifyingSandbox

    from leaderboard.stores import open_store
    from podium.signing import load_private_key
    from verifier.scale.queue.stores import open_queue
    from verifier.scale.worker import Worker, WorkerConfig

    queue, store, key, ledger, out, lease, delay = sys.argv[1:8]
    cfg = WorkerConfig(
        hold=None,  # no hold here: test_publication_hold.py tests it
        queue=open_queue(queue),
        store=open_store(store),
        key=load_private_key(Path(key)),
        runner=VerifyingSandbox,
        out_dir=Path(out),
        lease_s=float(lease),
        poll_s=0.2,
        worker_id=f"sub-{os.getpid()}",
        verify_fn=partial(quick_verify, ledger=Path(ledger), delay_s=float(delay)),
    )
    print("worker started", flush=True)
    Worker(cfg, say=lambda s: print(s, flush=True)).run(install_signals=True)


if __name__ == "__main__":
    main()
