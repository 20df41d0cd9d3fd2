"""The evidence behind the verifier's thresholds: whole verifications of honest entries and
of cheats, run to show where each check's bound sits between them.

- ``calibrate``: every honest and cheating row through ``podium verify`` on the CPU; the
  tables of ``docs/benchmarks.md`` section 7 (``python -m calibration.calibrate``). Its
  parts: ``rows`` (the rows and the trust-margin rows), ``run_row`` (one row packaged and
  verified), ``summary`` (a report's numbers and the row's expectation), ``table`` (the
  text of its docs regions, which ``bench.docs`` renders).
- ``margins``: each row's position at each bound, and the separation stated from them.
- ``attainable``: whether any reference-decode allowance could separate the recorded
  honest rows from the double spenders, read from the results (nothing is run).
- ``chat_records``: a design study of held-out chat records as evidence against a double
  spender that answers its probes (they would not widen the comparison made today).
- ``false_rejection``: repeated verifications of honest entries, the false-rejection rate.
- ``stability``: the tiny spec's TPS spread with busy neighbours (``tps.unstable``).
- ``gpu_verify``: the calibration rows on a CUDA GPU (run there by ``bash bench/gpu.sh``);
  ``gpu_run`` packages and verifies one run there, ``gpu_table`` is the text of its docs
  regions.

Their results live in ``calibration/results/``; what they share with the benchmarks (the
machine's description, engine processes, busy neighbours) is ``bench.common``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

#: where the calibration scripts write their results (``bench/results/`` is the benchmarks')
RESULTS_DIR = Path(__file__).resolve().parent / "results"

#: the tiny challenge as shipped: what every calibration row is judged by
TINY_SPEC = Path(__file__).resolve().parents[1] / "podium" / "data" / "challenges" / "tiny.json"


def tiny_spec() -> dict[str, Any]:
    """The shipped tiny spec, as JSON."""
    return dict(json.loads(TINY_SPEC.read_text(encoding="utf-8")))


def tiny_budget() -> float:
    """The shipped tiny spec's quality budget B (nats per token), which every reference
    decode allowance grows with."""
    from schemas.challenge import load_challenge
    from verifier.checks.budget import budget_of

    spec = load_challenge("tiny")
    return budget_of(spec, spec.check("reference_decode"))
