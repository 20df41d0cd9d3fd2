"""Fidelity and cost of the TPS measurement, against an engine with a known token rate.

The engine (``bench.paced_engine``, a separate process) answers each request when its
``max_tokens`` are due at ``R`` tokens/s from the request's arrival. The harness runs its
real code (``verifier.harness.tps.measure_tps``) with fast-gemma's workload shape:
chat endpoint, 512 tokens, ``ignore_eos``, closed loop at concurrency 1 and 8.

Two truths are compared with the harness's TPS, per trial:

- **nominal**: ``c x R``. A client can only reach it if nothing at all happens between
  one answer and the next request; the difference is the whole loop's cost (server
  and client HTTP work, sleep overshoot), not a timing error.
- **engine clock**: the trial's tokens / (last answer written - first request arrived),
  both read by the engine. This is what a perfect timer would report for the same
  trial; the difference is the harness's timing error.

The engine's log also gives, per kept-alive connection, the **turnaround**: from one
answer's last byte written to the next request's arrival (server parsing included).
The harness's own part of the loop is ``client_us_per_request``: each request's latency
as the harness timed it minus the engine's busy time for it (request line received to
last byte written), i.e. building and sending the request and reading and parsing the
answer; ``client_share`` is that time over the streams' total time: the fraction of the
trial the engine spent waiting for the harness. ``harness_cpu_us_per_token`` is the
harness process's CPU time per counted token.
"""

from __future__ import annotations

import asyncio
import dataclasses
import itertools
import math
import statistics
import time
from collections import defaultdict
from collections.abc import Sequence
from typing import Any

import httpx

from bench.common import cpu_prompts, paced_engine
from schemas.challenge import ChallengeSpec, load_challenge
from verifier.harness.client import EngineClient
from verifier.harness.stats import summarize
from verifier.harness.tps import TpsResult, measure_tps

RATES = (100, 200, 500, 1000, 2000, 5000)
CONCURRENCY = (1, 8)
MAX_TOKENS = 512
UNPACED_REQUESTS = 64  # per stream, per trial, at --rate 0


def workload(concurrency: int, num_prompts: int, trials: int) -> ChallengeSpec:
    """fast-gemma's TPS rules with this cell's concurrency, size and trial count."""
    spec = load_challenge("fast-gemma")
    tps = dataclasses.replace(
        spec.tps,
        num_prompts=num_prompts,
        max_tokens=MAX_TOKENS,
        concurrency=concurrency,
        warmup_requests=concurrency,
        trials=trials,
        min_trial_seconds=0.0,
        request_timeout_s=120.0,
    )
    return spec.with_overrides(tps=tps)


def requests_per_trial(rate: float, concurrency: int, trial_s: float) -> int:
    """Enough requests for about ``trial_s`` seconds, a whole number per stream."""
    per_stream = UNPACED_REQUESTS if rate <= 0 else max(1, round(trial_s * rate / MAX_TOKENS))
    return per_stream * concurrency


async def _measure(
    url: str, spec: ChallengeSpec, client_cls: type[EngineClient] = EngineClient
) -> TpsResult:
    prompts = cpu_prompts(8)
    async with client_cls(url, timeout_s=120.0, concurrency=spec.tps.concurrency) as client:
        model = await client.served_model()
        return await measure_tps(client, spec, prompts, model=model, warmup_prompts=prompts)


def engine_log(url: str, expected: int, timeout_s: float = 10.0) -> list[dict[str, Any]]:
    """The engine's log of the cell, once it holds ``expected`` requests: the engine logs
    each one just after writing its answer, so the client can ask before the last is in."""
    deadline = time.monotonic() + timeout_s
    while True:
        log: list[dict[str, Any]] = httpx.get(url + "/stats", trust_env=False).json()["requests"]
        if len(log) >= expected or time.monotonic() > deadline:
            return log
        time.sleep(0.01)


def engine_side(log: Sequence[dict[str, Any]], warmup: int, per_trial: int) -> list[dict[str, Any]]:
    """Per trial, what the engine's own clock saw (warm-up requests come first: dropped)."""
    ordered = sorted(log, key=lambda r: r["arrival"])[warmup:]
    trials = []
    for start in range(0, len(ordered), per_trial):
        chunk = ordered[start : start + per_trial]
        span = max(r["end"] for r in chunk) - min(r["arrival"] for r in chunk)
        tokens = sum(r["tokens"] for r in chunk)
        by_conn: dict[int, list[dict[str, Any]]] = defaultdict(list)
        for r in chunk:
            by_conn[r["client_port"]].append(r)
        gaps = [
            b["arrival"] - a["end"]
            for reqs in by_conn.values()
            for a, b in itertools.pairwise(reqs)
        ]
        trials.append(
            {
                "tokens": tokens,
                "span_s": span,
                "tps": tokens / span,
                "turnaround_us": [g * 1e6 for g in gaps],
                "engine_busy_s": sum(r["end"] - r["line"] for r in chunk),
                "overshoot_us": [(r["end"] - r["due"]) * 1e6 for r in chunk],
            }
        )
    return trials


def run_cell(
    url: str,
    rate: float,
    concurrency: int,
    trials: int,
    trial_s: float,
    client_cls: type[EngineClient] = EngineClient,
    stats_url: str | None = None,
) -> dict[str, Any]:
    """``trials`` timed trials of one cell through ``client_cls`` (the harness's own client
    unless a benchmark compares others), judged against the engine's clock (its log read
    at ``stats_url``, ``url`` unless the harness reaches the engine by another name)."""
    per_trial = requests_per_trial(rate, concurrency, trial_s)
    spec = workload(concurrency, per_trial, trials)
    stats_url = stats_url or url
    httpx.get(stats_url + "/stats?reset=1", trust_env=False).raise_for_status()
    result = asyncio.run(_measure(url, spec, client_cls))
    log = engine_log(stats_url, spec.tps.warmup_requests + trials * per_trial)
    engine = engine_side(log, spec.tps.warmup_requests, per_trial)
    nominal = rate * concurrency if rate > 0 else None
    rows = []
    for trial, seen in zip(result.trials, engine, strict=True):
        assert trial.tokens == seen["tokens"], "harness and engine disagree on the tokens"
        records = [r for r in result.records if r.trial == trial.index]
        # the harness's part of each request: its latency minus the engine's busy time
        client_s = sum(r.latency_s for r in records) - seen["engine_busy_s"]
        rows.append(
            {
                "harness_tps": trial.tps,
                "engine_tps": seen["tps"],
                "error_vs_engine": trial.tps / seen["tps"] - 1,
                "error_vs_nominal": trial.tps / nominal - 1 if nominal else None,
                "engine_vs_nominal": seen["tps"] / nominal - 1 if nominal else None,
                "harness_s": trial.seconds,
                "engine_span_s": seen["span_s"],
                "tokens": trial.tokens,
                "requests": trial.requests,
                "harness_cpu_s": trial.cpu_s,
                "harness_cpu_us_per_token": (trial.cpu_s_per_token or 0.0) * 1e6,
                "turnaround_us_median": statistics.median(seen["turnaround_us"])
                if seen["turnaround_us"]
                else None,
                "overshoot_us_median": statistics.median(seen["overshoot_us"]),
                "client_us_per_request": client_s / len(records) * 1e6,
                "client_share": client_s / (trial.seconds * concurrency),
            }
        )
    worst = max(rows, key=lambda r: abs(r["error_vs_engine"]))
    turn = [r["turnaround_us_median"] for r in rows if r["turnaround_us_median"] is not None]
    out = {
        "rate": rate,
        "concurrency": concurrency,
        "nominal_tps": nominal,
        "requests_per_trial": per_trial,
        "max_tokens": MAX_TOKENS,
        "harness": summarize([r["harness_tps"] for r in rows]).to_dict(),
        "engine_tps_median": statistics.median(r["engine_tps"] for r in rows),
        "max_abs_error_vs_engine": abs(worst["error_vs_engine"]),
        "max_abs_error_vs_nominal": max(abs(r["error_vs_nominal"]) for r in rows)
        if nominal
        else None,
        "median_error_vs_nominal": statistics.median(r["error_vs_nominal"] for r in rows)
        if nominal
        else None,
        "turnaround_us_median": statistics.median(turn) if turn else None,
        "overshoot_us_median": statistics.median(r["overshoot_us_median"] for r in rows),
        "harness_cpu_us_per_token": statistics.median(r["harness_cpu_us_per_token"] for r in rows),
        "harness_cpu_share": statistics.median(r["harness_cpu_s"] / r["harness_s"] for r in rows),
        "client_us_per_request": statistics.median(r["client_us_per_request"] for r in rows),
        "client_share": statistics.median(r["client_share"] for r in rows),
        "trials": rows,
    }
    return out


def run(*, quick: bool = False, rates: Sequence[float] = RATES) -> dict[str, Any]:
    """Every rate x concurrency cell, plus the unpaced ceiling (``rate`` 0)."""
    trials, trial_s = (3, 1.5) if quick else (5, 3.0)
    cells = []
    for rate in [*rates, 0]:
        with paced_engine(rate) as engine:
            for concurrency in CONCURRENCY:
                cell = run_cell(engine.url, rate, concurrency, trials, trial_s)
                cells.append(cell)
                _print_cell(cell)
    paced = [c for c in cells if c["rate"] > 0]
    return {
        "trials_per_cell": trials,
        "target_trial_s": trial_s,
        "max_tokens": MAX_TOKENS,
        "cells": cells,
        "worst_error_vs_engine": max(c["max_abs_error_vs_engine"] for c in paced),
        "worst_error_vs_nominal": max(c["max_abs_error_vs_nominal"] for c in paced),
        "worst_single_stream_error_vs_nominal_to_2000": max(
            c["max_abs_error_vs_nominal"]
            for c in paced
            if c["concurrency"] == 1 and c["rate"] <= 2000
        ),
    }


def _print_cell(cell: dict[str, Any]) -> None:
    nominal = cell["nominal_tps"]
    vs_nominal = cell["median_error_vs_nominal"]
    print(
        f"  rate {cell['rate']:>6g} c={cell['concurrency']}: harness "
        f"{cell['harness']['median']:>10.1f} tok/s"
        + (f" (nominal {nominal:g}, {vs_nominal * 100:+.3f} %)" if nominal else " (unpaced)")
        + f", vs engine clock max {cell['max_abs_error_vs_engine'] * 100:.4f} %"
        + f", cpu {cell['harness_cpu_us_per_token']:.2f} us/token",
        flush=True,
    )


def fmt_pct(x: float | None, digits: int = 3) -> str:
    return "n/a" if x is None or math.isnan(x) else f"{x * 100:+.{digits}f} %"
