"""podium's TPS side by side with an established load generator, on the same engine.

One baseline engine process (the small CPU model) serves every run. Each round runs
podium's harness (``measure_tps``, one trial), ``guidellm run`` (synchronous profile,
the same prompts, ``max_tokens`` and ``ignore_eos``, non-streamed, greedy), and the
official ``openai`` client in a plain loop (the floor), in an order that rotates from
round to round so a drift of the machine does not favour one tool. The engine is warmed
up before the first round.

What each tool reports:

- podium: generated tokens counted from the returned ids / harness wall time of the
  trial (``time.perf_counter``, first request sent to last answer read).
- guidellm: its headline ``output_tokens_per_second`` (mean of its rate timeline, the
  number its console prints), and its output tokens (from the engine's ``usage``) /
  its benchmark duration.
- openai loop: ``usage.completion_tokens`` summed / the loop's wall time.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import math
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.common import baseline_engine, cpu_model_dir, cpu_prompts
from schemas.challenge import ChallengeSpec, load_challenge
from verifier.harness.client import EngineClient
from verifier.harness.tps import measure_tps

MAX_TOKENS = 128
N_PROMPTS = 8
SAMPLING = {"temperature": 0.0, "top_p": 1.0, "top_k": -1, "seed": 1}


def spec() -> ChallengeSpec:
    base = load_challenge("tiny")
    tps = dataclasses.replace(
        base.tps,
        num_prompts=N_PROMPTS,
        max_tokens=MAX_TOKENS,
        concurrency=1,
        warmup_requests=2,
        trials=1,
        min_trial_seconds=0.0,
        request_timeout_s=120.0,
    )
    return base.with_overrides(tps=tps)


def guidellm_path() -> str | None:
    local = Path(sys.executable).with_name("guidellm")
    return str(local) if local.is_file() else shutil.which("guidellm")


def run_podium(url: str, prompts: list[dict[str, Any]]) -> dict[str, Any]:
    async def go() -> dict[str, Any]:
        workload = spec()
        async with EngineClient(url, timeout_s=120.0) as client:
            model = await client.served_model()
            result = await measure_tps(
                client, workload, prompts, model=model, warmup_prompts=prompts
            )
        trial = result.trials[0]
        return {"tps": trial.tps, "tokens": trial.tokens, "seconds": trial.seconds}

    return asyncio.run(go())


def run_guidellm(exe: str, url: str, prompts: list[dict[str, Any]], work: Path) -> dict[str, Any]:
    data = work / "prompts.json"
    rows = [{"prompt": p["prompt"], "output_tokens_count": MAX_TOKENS} for p in prompts]
    data.write_text(json.dumps(rows))
    out = work / "guidellm.json"
    out.unlink(missing_ok=True)
    backend = {
        "kind": "openai_http",
        "target": url,
        "model": "bench",
        "request_format": "/v1/chat/completions",
        "stream": False,
        "http2": False,
        "extras": {"body": SAMPLING},
    }
    cmd = [
        exe,
        "run",
        "--backend",
        json.dumps(backend),
        "--profile",
        "kind=synchronous",
        "--constraint",
        f"kind=max_requests,count={len(prompts)}",
        "--data",
        f"kind=json_file,path={data}",
        "--output",
        f"kind=json,path={out}",
        "--disable-console",
    ]
    started = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=work, timeout=600)
    wall = time.perf_counter() - started
    if proc.returncode != 0 or not out.is_file():
        raise RuntimeError(f"guidellm failed ({proc.returncode}): {proc.stderr[-2000:]}")
    bench = json.loads(out.read_text())["benchmarks"][0]
    metrics = bench["metrics"]
    tokens = metrics["output_token_count"]["successful"]["total_sum"]
    count = metrics["output_token_count"]["successful"]["count"]
    return {
        "tps": metrics["output_tokens_per_second"]["successful"]["mean"],
        "tokens_over_duration": tokens / bench["duration"],
        "tokens": tokens,
        "requests": count,
        "seconds": bench["duration"],
        "process_wall_s": wall,
    }


def run_openai(url: str, prompts: list[dict[str, Any]]) -> dict[str, Any]:
    import openai

    client = openai.OpenAI(base_url=url + "/v1", api_key="none", max_retries=0)
    extra = {"ignore_eos": True, "top_k": -1}
    tokens = 0
    started = time.perf_counter()
    for p in prompts:
        answer = client.chat.completions.create(
            model="bench",
            messages=[{"role": "user", "content": p["prompt"]}],
            max_tokens=MAX_TOKENS,
            temperature=0.0,
            top_p=1.0,
            seed=1,
            extra_body=extra,
        )
        tokens += answer.usage.completion_tokens if answer.usage else 0
    seconds = time.perf_counter() - started
    client.close()
    return {"tps": tokens / seconds, "tokens": tokens, "seconds": seconds}


def paced(exe: str | None, rounds: int, rate: float = 1000.0) -> dict[str, Any]:
    """The same three tools against the paced engine, whose rate is known exactly.

    Without a model's CPU load the comparison is free of the machine's noise; the truth
    is the paced rate (each request lasts ``max_tokens / rate`` plus the loop's cost).
    """
    from bench.common import free_port, start_engine

    prompts = cpu_prompts(N_PROMPTS)
    port = free_port()
    engine = start_engine(
        ["-m", "bench.paced_engine", "--rate", str(rate), "--port", str(port)], port=port
    )
    rows: list[dict[str, Any]] = []
    try:
        with tempfile.TemporaryDirectory() as tmp:
            for _ in range(rounds):
                row = {"podium": run_podium(engine.url, prompts)["tps"]}
                if exe:
                    row["guidellm"] = run_guidellm(exe, engine.url, prompts, Path(tmp))["tps"]
                row["openai"] = run_openai(engine.url, prompts)["tps"]
                rows.append(row)
    finally:
        engine.stop()
    tools = list(rows[0])
    return {
        "rate": rate,
        "rounds": rows,
        "median": {t: statistics.median(r[t] for r in rows) for t in tools},
        "median_error_vs_rate": {
            t: statistics.median(r[t] for r in rows) / rate - 1 for t in tools
        },
    }


def run(*, quick: bool = False) -> dict[str, Any]:
    rounds = 5 if quick else 8
    prompts = cpu_prompts(N_PROMPTS)
    exe = guidellm_path()
    model = cpu_model_dir()
    tools = ["podium", "guidellm", "openai"] if exe else ["podium", "openai"]
    rows: list[dict[str, Any]] = []
    with baseline_engine(model) as engine, tempfile.TemporaryDirectory() as tmp:
        run_openai(engine.url, prompts[:2])  # warm the engine once before the first round
        for i in range(rounds):
            order = tools[i % len(tools) :] + tools[: i % len(tools)]
            row: dict[str, Any] = {"round": i, "order": order}
            for tool in order:
                if tool == "podium":
                    row["podium"] = run_podium(engine.url, prompts)
                elif tool == "guidellm":
                    assert exe is not None
                    row["guidellm"] = run_guidellm(exe, engine.url, prompts, Path(tmp))
                else:
                    row["openai"] = run_openai(engine.url, prompts)
            if "guidellm" in row:
                row["ratio_podium_guidellm"] = row["podium"]["tps"] / row["guidellm"]["tps"]
                row["ratio_podium_guidellm_duration"] = (
                    row["podium"]["tps"] / row["guidellm"]["tokens_over_duration"]
                )
            row["ratio_podium_openai"] = row["podium"]["tps"] / row["openai"]["tps"]
            rows.append(row)
            print(
                f"  round {i + 1}/{rounds}: podium {row['podium']['tps']:.2f}"
                + (f", guidellm {row['guidellm']['tps']:.2f}" if "guidellm" in row else "")
                + f", openai {row['openai']['tps']:.2f} tok/s",
                flush=True,
            )
    against_paced = paced(exe, 3 if quick else 5)
    print(f"  paced engine at 1000 tok/s: {against_paced['median']}", flush=True)
    return {
        "paced": against_paced,
        "model": str(model.relative_to(model.parents[3])),
        "max_tokens": MAX_TOKENS,
        "prompts": N_PROMPTS,
        "guidellm": _version("guidellm") if exe else None,
        "guidellm_missing": None if exe else "guidellm is not installed (pip install guidellm)",
        "openai": _version("openai"),
        "rounds": rows,
        "summary": {key: _spread([r[key] for r in rows if key in r]) for key in _RATIOS},
    }


_RATIOS = ("ratio_podium_guidellm", "ratio_podium_guidellm_duration", "ratio_podium_openai")


def _spread(values: list[float]) -> dict[str, float] | None:
    if not values:
        return None
    mean = statistics.fmean(values)
    return {
        "n": len(values),
        "median": statistics.median(values),
        "mean": mean,
        "min": min(values),
        "max": max(values),
        "stdev": statistics.stdev(values) if len(values) > 1 else math.nan,
    }


def _version(dist: str) -> str | None:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(dist)
    except PackageNotFoundError:
        return None
