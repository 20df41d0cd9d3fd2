"""What the harness job runs (``podium harness --server URL ...``).

The ordinary pipeline with the ``hf-jobs`` runner: intake of the bundle (read from the
queue, mounted read-only), the held-out set (mounted read-only), PPL, TPS and the
checks against the server job at ``server_url``, the reference engine (podium's own,
inside this job), the verdict, a report signed with the key given as a secret. The
signed report is written to ``out`` and printed as ``PODIUM-REPORT`` lines, and the
organizer's evidence behind it as ``PODIUM-EVIDENCE`` lines, which is how both travel
back to the dispatcher through the Jobs log API (the organizer's).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from podium.signing import KeyPair
from schemas.challenge import load_challenge
from verifier.pipeline import Outcome, VerifyRequest, verify
from verifier.runners.hf_jobs import HfJobsRunner
from verifier.scale.dispatch.jobs import EVIDENCE_MARK, report_lines


def run_harness_job(
    *,
    server_url: str,
    bundle: Path,
    challenge: str,
    out: Path,
    key: KeyPair,
    heldout: str | None = None,
    reported_tps: float | None = None,
    facts: dict[str, Any] | None = None,
    print_line: Any = print,
) -> Outcome:
    from verifier.runners.reference_engine import reference_runner

    url = os.path.expandvars(server_url)  # e.g. http://${HF_NETWORK_GROUP_PREFIX}engine:8000
    req = VerifyRequest(
        bundle=bundle,
        spec=load_challenge(challenge),
        runner=HfJobsRunner(url, facts=facts),
        out_dir=out,
        reported_tps=reported_tps,
        heldout=heldout,
        key=key,
        reference=reference_runner,
    )
    outcome = verify(req)
    print_line(f"verdict {outcome.verdict}; report {outcome.report['report_id']}")
    for line in report_lines(outcome.report):
        print_line(line)
    if outcome.evidence is not None:
        for line in report_lines(outcome.evidence, EVIDENCE_MARK):
            print_line(line)
    return outcome
