"""Stage ``verdict``, then the report: decided in one place, built by one builder, signed.

The verdict comes from ``verifier.verdict`` (each finding's declared effect), over what a
self-check counts (``verifier.verdict.counted``); a run that could have been VERIFIED but
for a required check is told which (``verifier.checks.completeness``). The full document
is the organizer's evidence; the report is its public projection (``verifier.report``),
signed when a key is given, both written atomically.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from podium.timestamps import now_iso
from schemas.check_ids import declared
from schemas.report import FAILED, Stage
from verifier.checks.completeness import checks_missing
from verifier.report import build_documents, sign_report, write_report
from verifier.stages.run import ORGANIZER_EVIDENCE, ORGANIZER_LOG, Run
from verifier.verdict import counted, decide, required_checks


@dataclass
class Outcome:
    #: the public report (what a participant, a queue and a board see)
    report: dict[str, Any]
    report_path: Path
    verdict: str
    signed: bool
    #: the organizer's evidence behind it: every value at full precision (calibration,
    #: benchmarks and the organizer read this; None where the caller had only a report)
    evidence: dict[str, Any] | None = None
    evidence_path: Path | None = None


def _verdict(run: Run) -> str:
    req, rec = run.req, run.record
    can_verify = req.runner is not None and req.runner.info.can_verify
    checks, findings = counted(rec.checks, rec.findings, self_check=req.self_check)
    required = required_checks(req.spec, reported_tps=req.reported_tps)
    verdict = decide(
        failed=rec.failure is not None,
        findings=findings,
        checks=checks,
        official_hardware=rec.official_hardware,
        runner_can_verify=can_verify,
        self_check=req.self_check,
        required=required,
    )
    error_check = next((c for c in checks if c.status == "error"), None)
    if verdict == FAILED and rec.failure is None and error_check is not None:
        info = declared(error_check.id)
        run.fail(info.phase if info else "checks", f"{error_check.id}: {error_check.summary}")
    could_verify = rec.official_hardware and can_verify and not req.self_check
    rec.findings += checks_missing(verdict, rec.checks, required, could_verify=could_verify)
    return verdict


def finish(run: Run) -> Outcome:
    """Decide, write the organizer's log and evidence, build, sign and write the report."""
    req, rec = run.req, run.record
    t0 = time.perf_counter()
    verdict = _verdict(run)
    if run.engine_said:  # after the engine's own output, for the organizer only
        with (req.out_dir / ORGANIZER_LOG).open("a", encoding="utf-8") as log:
            for said in run.engine_said:
                log.write(f"\n---- podium: what the engine answered at {said}\n")
        rec.organizer_log = ORGANIZER_LOG
    # the report's wall time ends here: building, signing and writing it follow (ms)
    rec.stages.append(Stage("verdict", "ok", round(time.perf_counter() - t0, 3)))
    rec.organizer_evidence = ORGANIZER_EVIDENCE
    doc, evidence = build_documents(rec, verdict=verdict, finished=now_iso(microseconds=True))
    signed = False
    if req.key is not None:
        doc = sign_report(doc, req.key)
        signed = True
    evidence_path = write_report(evidence, req.out_dir / ORGANIZER_EVIDENCE)
    path = write_report(doc, req.out_dir / "report.json")
    return Outcome(
        report=doc,
        report_path=path,
        verdict=verdict,
        signed=signed,
        evidence=evidence,
        evidence_path=evidence_path,
    )
