"""How noisy is a TPS figure, and how many trials does a 95 % interval need?

Each **run** is what a verification's TPS stage does: a freshly started baseline engine
process, the tiny challenge's workload (chat endpoint, 8 prompts x 32 tokens,
``ignore_eos``, 2 warm-ups), then ``trials`` timed trials through
``verifier.harness.tps.measure_tps``. Repeating runs gives two spreads:

- **within a run**: the CV of trial TPS around the run's mean (pooled over runs);
- **between runs**: the CV of the runs' medians, the number a re-verification of the
  same bundle is compared with under the 5 % reproduction tolerance.

The trials a spec needs: the smallest ``n`` with a 95 % Student t-interval of the mean
(the harness's own, ``verifier.harness.stats``) narrower than the tolerance, both as the
whole width ``2 t s / sqrt(n)`` and as the half-width, relative to the mean. And the
chance that two honest verifications differ by more than the tolerance, with the runs'
medians normal with the between-run CV: ``2 (1 - Phi(tol / (sqrt(2) cv)))``.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import math
import statistics
from typing import Any

from bench.common import DATA, baseline_engine, cpu_model_dir, cpu_prompts
from schemas.challenge import ChallengeSpec, load_challenge
from verifier.harness.client import EngineClient
from verifier.harness.stats import summarize, t975
from verifier.harness.tps import measure_tps

TOLERANCE = 0.05


def trials_needed(cv: float, width: float, *, half: bool = False) -> int | None:
    """Smallest n >= 2 whose t-interval (whole or half width) / mean is <= ``width``."""
    factor = 1.0 if half else 2.0
    for n in range(2, 10_001):
        if factor * t975(n - 1) * cv / math.sqrt(n) <= width:
            return n
    return None


def reproduction_risk(cv: float, tolerance: float = TOLERANCE) -> float:
    """P(|a/b - 1| > tolerance) for two runs whose medians have this CV (normal approx.)."""
    if cv <= 0:
        return 0.0
    z = tolerance / (math.sqrt(2) * cv)
    return math.erfc(z / math.sqrt(2))


def workload(trials: int) -> ChallengeSpec:
    spec = load_challenge("tiny")
    return spec.with_overrides(tps=dataclasses.replace(spec.tps, trials=trials))


async def _one_run(url: str, spec: ChallengeSpec) -> list[float]:
    public = cpu_prompts(32)
    shipped = DATA / "tiny" / "heldout-prompts.jsonl"
    heldout = (
        [json.loads(line) for line in shipped.read_text().splitlines() if line.strip()]
        if shipped.is_file()
        else public
    )
    async with EngineClient(url, timeout_s=120.0) as client:
        model = await client.served_model()
        result = await measure_tps(client, spec, heldout, model=model, warmup_prompts=public)
    return [t.tps for t in result.trials]


def run(*, quick: bool = False) -> dict[str, Any]:
    runs_n, trials = (3, 5) if quick else (5, 10)
    spec = workload(trials)
    model = cpu_model_dir()
    runs = []
    for i in range(runs_n):
        with baseline_engine(model) as engine:
            values = asyncio.run(_one_run(engine.url, spec))
        summary = summarize(values)
        runs.append({"trials": values, **summary.to_dict()})
        print(
            f"  run {i + 1}/{runs_n}: median {summary.median:.2f} tok/s, "
            f"CV {summary.cv * 100:.2f} %",
            flush=True,
        )
    within = math.sqrt(statistics.fmean(r["cv"] ** 2 for r in runs))
    medians = [r["median"] for r in runs]
    between = summarize(medians).cv
    return {
        "model": str(model.relative_to(model.parents[3])),
        "workload": {
            "prompts": spec.tps.num_prompts,
            "max_tokens": spec.tps.max_tokens,
            "endpoint": spec.tps.endpoint,
            "warmup_requests": spec.tps.warmup_requests,
            "trials_per_run": trials,
        },
        "runs": runs,
        "within_run_cv": within,
        "between_run_cv": between,
        "tolerance": TOLERANCE,
        "trials_needed_width": trials_needed(within, TOLERANCE),
        "trials_needed_half_width": trials_needed(within, TOLERANCE, half=True),
        "spec_trials": load_challenge("tiny").tps.trials,
        "ci_width_at_spec_trials": 2 * t975(2) * within / math.sqrt(3),
        "reproduction_risk": reproduction_risk(between),
    }
