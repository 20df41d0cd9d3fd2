"""What the reference stage costs for fast-gemma, measured at the real model's size.

    python -m bench.reference_cost --out "$OUT"            # on the GPU machine (bf16, cuda)
    python -m bench.reference_cost --tiny --out /tmp/rc    # the same steps, small, on a CPU

The reference stage runs podium's baseline engine on the pinned weights after the
participant's engine has stopped (``verifier.checks.reference``). For fast-gemma it asks:
``reference_decode.sample`` (44) timed answers plus up to ``same_path.sample`` (8) probed
ones scored teacher-forced (a prompt of about 200 tokens and its 512 generated tokens),
``reference_ppl.sample`` (44) held-out PPL records (contexts of 114 to
2,431 tokens and targets of 216 to 512, the real challenge's range, drawn evenly), and
``free_running`` answers decoded free-running for information. This script builds a
Gemma 4 text model with the E4B configuration and random bf16 weights (the cost does not
depend on the values), loads it as the reference engine loads it (``BaselineEngine``),
and times each part with the engine's own code path (chunked prompt logprobs through the
KV cache, so no full-vocabulary logit matrix of a long record exists at once), in
several configurations side by side (``--configs``): prompts per padded batch x the
logit-cell budget of one chunk, as a multiple of the engine's default (2^26 cells). The
first is the unbatched one the reference used to run; fast-gemma's own (its
``reference.batch`` and ``reference.logit_cells``) is always measured, with the peak GPU
memory of each (weights included: it must fit on the A10G's 22.5 GiB beside nothing,
since the participant's engine has stopped).

The A10G figure is an ESTIMATE from the H200 measurement (``a10g_estimate``):
teacher-forced scoring is compute-bound, and the A10G's bf16 tensor throughput (125
TFLOP/s dense, data sheet) is about 1/8 of the H200's (989 TFLOP/s), so scoring is
scaled by 8. The baseline engine's free-running decode is bound by its per-token
overhead (one Python step and its kernel launches per token), far below either card's
bandwidth bound (weights / bandwidth: about 40 tokens/s on the A10G's 600 GB/s), so it
is estimated at the slower of the measured H200 rate and the A10G's bandwidth bound.
The load from local disk is taken as measured.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import time
from pathlib import Path
from typing import Any

from bench.common import machine
from bench.gpu_e4b import E4B, TINY, GpuSampler, build

H200_OVER_A10G = 8.0  # bf16 dense tensor throughput, 989 / 125 TFLOP/s
A10G_BANDWIDTH = 600e9  # bytes/s


def a10g_estimate(result: dict[str, Any]) -> dict[str, Any]:
    """The A10G ESTIMATE from an H200 result (see the module docstring for the model)."""
    free = result["free_running"]
    tokens = free["answers"] * free["tokens_each"]
    bandwidth_bound_s = tokens * result["build"]["checkpoint_bytes"] / A10G_BANDWIDTH
    return {
        "note": "ESTIMATE, not a measurement: H200 scoring x 8 (tensor throughput), "
        "free-running at the slower of the H200's measured rate and the A10G's "
        "bandwidth bound, load as measured",
        "judging_s": result["total_s"]["judging"] * H200_OVER_A10G,
        "judging_unbatched_s": result["total_s"]["judging_unbatched"] * H200_OVER_A10G,
        "free_running_s": max(free["seconds"], bandwidth_bound_s),
        "load_s": result["load_s"],
    }


def parse_configs(text: str) -> list[tuple[int, int]]:
    """``"1x1,8x4"``: (prompts per batch, multiple of the default logit-cell budget)."""
    out = []
    for item in text.split(","):
        batch, _, cells = item.strip().partition("x")
        out.append((int(batch), int(cells or 1)))
    return out


def score_all(engine: Any, prompts: list[list[int]], batch: int) -> None:
    """Score every prompt, ``batch`` at a time, nearest lengths together (as the
    reference phase sends them: ``verifier.harness.reference``)."""
    ordered = sorted(prompts, key=len)
    for i in range(0, len(ordered), batch):
        group = ordered[i : i + batch]
        if len(group) == 1:
            engine.prefill(group[0], 1)
        else:
            engine.prefill_batch(group, 1)


def _lengths(n: int, lo: int, hi: int, rng: random.Random) -> list[int]:
    return sorted(rng.randint(lo, hi) for _ in range(n))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.reference_cost", description=__doc__)
    parser.add_argument("--out", type=Path, default=Path(os.environ.get("OUT", "bench-out")))
    parser.add_argument("--tiny", action="store_true", help="small model on the CPU (a dry run)")
    parser.add_argument(
        "--answers", type=int, default=None, help="default: fast-gemma's decode + same-path samples"
    )
    parser.add_argument(
        "--ppl-records", type=int, default=None, help="default: fast-gemma's PPL sample"
    )
    parser.add_argument("--free-running", type=int, default=2)
    parser.add_argument(
        "--configs",
        default="1x1,1x4,8x8",
        help="batch x logit-cell multiplier per scoring configuration: the first is the "
        "unbatched one; fast-gemma's own (spec.reference: batch, logit_cells) is added",
    )
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/podium-refcost"))
    args = parser.parse_args(argv)
    from schemas.challenge import load_challenge

    fast_gemma = load_challenge("fast-gemma")
    if args.answers is None:
        args.answers = int(fast_gemma.check("reference_decode")["sample"]) + int(
            fast_gemma.check("same_path")["sample"]
        )
    if args.ppl_records is None:
        args.ppl_records = int(fast_gemma.check("reference_ppl")["sample"])
    shape: dict[str, Any] = TINY if args.tiny else E4B
    device, dtype = ("cpu", "float32") if args.tiny else ("cuda", "bfloat16")
    args.out.mkdir(parents=True, exist_ok=True)
    given = argv if argv is not None else sys.argv[1:]
    result: dict[str, Any] = {
        "machine": machine(),
        "device": device,
        "dtype": dtype,
        "command": "python -m bench.reference_cost " + " ".join(given),
    }

    def save() -> None:
        (args.out / "reference_cost.json").write_text(json.dumps(result, indent=2) + "\n")

    gpu = GpuSampler().start()
    folder = args.workdir / ("tiny" if args.tiny else "e4b")
    folder.mkdir(parents=True, exist_ok=True)
    result["build"], _ = build(folder, shape, device, dtype, [])
    save()
    import torch

    from engines.baseline.model import LOGIT_CELLS_PER_CHUNK, BaselineEngine
    from engines.baseline.protocol import SamplingParams

    t0 = time.perf_counter()
    engine = BaselineEngine(folder, device=device, dtype=dtype, max_model_len=4096)
    if device == "cuda":
        torch.cuda.synchronize()
    result["load_s"] = time.perf_counter() - t0
    vocab = shape["vocab_size"]
    rng = random.Random(7)

    def ids(n: int) -> list[int]:
        return [rng.randrange(8, vocab) for _ in range(n)]

    def timed(fn: Any) -> float:
        if device == "cuda":
            torch.cuda.synchronize()
        t = time.perf_counter()
        fn()
        if device == "cuda":
            torch.cuda.synchronize()
        return time.perf_counter() - t

    engine.prefill(ids(64), 1)  # first call: kernels, allocator
    answers = [ids(200 + 512) for _ in range(args.answers)]
    contexts = _lengths(args.ppl_records, 114, 2431, rng)
    targets = _lengths(args.ppl_records, 216, 512, rng)
    records = [ids(c + t) for c, t in zip(contexts, targets, strict=True)]
    default_chunk = engine.logprob_chunk_tokens
    default_cells = LOGIT_CELLS_PER_CHUNK
    result["configs"] = []
    fast = fast_gemma.reference  # what fast-gemma's reference phase runs
    spec_config = (fast.batch, (fast.logit_cells or default_cells) // default_cells)
    result["spec_reference"] = fast.to_dict()
    configs = parse_configs(args.configs)
    if spec_config not in configs:
        configs.insert(1, spec_config)
    for batch, cells in configs:
        engine.logprob_chunk_tokens = default_chunk * cells
        row: dict[str, Any] = {
            "batch": batch,
            "cells_multiplier": cells,
            "spec": (batch, cells) == spec_config,
        }
        if device == "cuda":
            torch.cuda.reset_peak_memory_stats()
        row["answers_s"] = timed(lambda b=batch: score_all(engine, answers, b))
        row["ppl_s"] = timed(lambda b=batch: score_all(engine, records, b))
        row["judging_s"] = row["answers_s"] + row["ppl_s"]
        if device == "cuda":  # weights included: what must fit beside nothing else
            row["peak_allocated_bytes"] = torch.cuda.max_memory_allocated()
        result["configs"].append(row)
        print(json.dumps(row), flush=True)
        save()
    engine.logprob_chunk_tokens = default_chunk
    first = result["configs"][0]
    spec_row = next(r for r in result["configs"] if r.get("spec"))
    best = min(result["configs"], key=lambda r: r["judging_s"])
    result["scoring"] = {
        "answers": args.answers,
        "tokens_each": 712,
        "seconds": first["answers_s"],
        "seconds_best": best["answers_s"],
    }
    result["ppl"] = {
        "records": args.ppl_records,
        "tokens": sum(contexts) + sum(targets),
        "seconds": first["ppl_s"],
        "seconds_best": best["ppl_s"],
    }
    result["best_config"] = {"batch": best["batch"], "cells_multiplier": best["cells_multiplier"]}
    save()
    sampling = SamplingParams(
        max_tokens=512,
        temperature=0.0,
        top_p=1.0,
        top_k=0,
        seed=1,
        ignore_eos=True,
        min_tokens=0,
        stop_token_ids=(),
        logprobs=None,
    )

    def decode() -> None:
        for _ in engine.start(ids(200), sampling, None):
            pass

    free_s = [timed(decode) for _ in range(args.free_running)]
    result["free_running"] = {
        "answers": args.free_running,
        "tokens_each": 512,
        "seconds": sum(free_s),
        "tokens_per_s": 512 * len(free_s) / sum(free_s) if free_s else None,
    }
    gpu.stop()
    result["gpu"] = {"name": gpu.name, "total_bytes": gpu.total, "peak_bytes": gpu.peak_since(0)}
    result["total_s"] = {
        "load": result["load_s"],
        "judging": spec_row["judging_s"],
        "judging_unbatched": first["judging_s"],
        "judging_best": best["judging_s"],
        "free_running": result["free_running"]["seconds"],
    }
    if not args.tiny:
        result["a10g_estimate"] = a10g_estimate(result)
    save()
    print(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
