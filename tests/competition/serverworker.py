"""``python serverworker.py URL TOKEN KEYFILE LEDGER OUT LEASE DELAY``: one worker process
claiming from ``podium server`` with ``quick_verify`` (a test may kill it mid-verification)."""

from __future__ import annotations

import os
import sys
from functools import partial
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "verifier" / "scale"))


def main() -> None:
    from doubles.sandbox import VerifyingSandbox
    from quickverify import quick_verify

    from competition.client import ServerQueue
    from podium.signing import load_private_key
    from verifier.scale.worker import Worker, WorkerConfig

    url, token, key, ledger, out, lease, delay = sys.argv[1:8]
    who = f"sub-{os.getpid()}"
    cfg = WorkerConfig(
        queue=ServerQueue(url, token, worker=who),
        key=load_private_key(Path(key)),
        runner=VerifyingSandbox,
        out_dir=Path(out),
        lease_s=float(lease),
        poll_s=0.2,
        worker_id=who,
        verify_fn=partial(quick_verify, ledger=Path(ledger), delay_s=float(delay)),
    )
    print("worker started", flush=True)
    Worker(cfg, say=lambda s: print(s, flush=True)).run(install_signals=True)


if __name__ == "__main__":
    main()
