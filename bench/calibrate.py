"""Calibration of the reference checks on honest engines with different numerics.

Two steps, so the decode can run where the engine runs (an H200, a vLLM server) and
the judging where the verifier runs (its float32 CPU reference, exactly as the tiny
challenge's spec starts it):

    python -m bench.calibrate decode --device cuda --dtype bfloat16 --label "bf16, H200" \\
        --out answers-bf16-h200.json            # podium's baseline engine, in process
    python -m bench.calibrate decode --url http://127.0.0.1:8000 --label "vLLM fp32, CPU" \\
        --out answers-vllm.json                 # any engine over the HTTP protocol
    python -m bench.calibrate score answers-*.json   # -> bench/results/calibration.json

``decode``: the 64 chat prompts of the tiny challenge (public and held-out), rendered by
the verifier's own renderer (the pinned chat template and tokenizer), decoded greedily
for ``--max-tokens`` (128) tokens with ``ignore_eos`` (EOS may be generated; it does not
end the answer, as in the timed workload); and the NLL of the 32 PPL records (public and
held-out). ``score``: the verifier's reference engine re-scores every answer teacher-
forced through ``verifier.checks.reference.reference_positions`` (the code the check
runs) and decodes each prompt free-running; the gap distribution, the worst answer, the
PPL deltas and the free-running identity go to the results file.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import sys
import time
from pathlib import Path
from typing import Any

from bench.common import DATA, RESULTS_DIR, machine

TOLERANCES = (0.0, 0.01, 0.05, 0.1, 0.25, 0.5)


def _rows(name: str) -> list[dict[str, Any]]:
    text = (DATA / "tiny" / name).read_text()
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def prompts() -> list[dict[str, Any]]:
    return _rows("public-prompts.jsonl") + _rows("heldout-prompts.jsonl")


def ppl_rows() -> list[dict[str, Any]]:
    return _rows("ppl-public.jsonl") + _rows("ppl-heldout.jsonl")


def _decode_inprocess(args: argparse.Namespace) -> dict[str, Any]:
    from engines.baseline.model import BaselineEngine
    from engines.baseline.protocol import SamplingParams
    from verifier.harness.render import TokenizerRenderer, render_prompt

    model = DATA / "tiny" / "model"
    renderer = TokenizerRenderer(model)
    engine = BaselineEngine(model, device=args.device, dtype=args.dtype)
    sampling = SamplingParams(
        max_tokens=args.max_tokens,
        temperature=0.0,
        top_p=1.0,
        top_k=0,
        seed=1,
        ignore_eos=True,
        min_tokens=0,
        stop_token_ids=(),
        logprobs=None,
    )
    answers = []
    t0 = time.perf_counter()
    for p in prompts():
        ids = render_prompt(renderer, p["prompt"], endpoint="/v1/chat/completions")
        gen = engine.start(ids, sampling, None)
        answers.append({"id": p["id"], "prompt_ids": ids, "token_ids": [s.token_id for s in gen]})
    decode_s = time.perf_counter() - t0
    ppl = []
    for rec in ppl_rows():
        context, target = rec["context_token_ids"], rec["target_token_ids"]
        entries = engine.prefill(context + target, 1).prompt_logprobs or []
        first = max(len(context), 1)
        nll = -math.fsum(e.chosen.logprob for e in entries[first:] if e is not None)
        ppl.append({"id": rec["id"], "nll": nll, "tokens": len(context) + len(target) - first})
    return {"answers": answers, "ppl": ppl, "decode_seconds": decode_s}


async def _decode_http(args: argparse.Namespace) -> dict[str, Any]:
    from schemas.challenge import load_challenge
    from verifier.harness.client import EngineClient
    from verifier.harness.ppl import PplScorer
    from verifier.harness.render import TokenizerRenderer, render_prompt
    from verifier.harness.tps import workload_body

    spec = load_challenge("tiny")
    renderer = TokenizerRenderer(DATA / "tiny" / "model")
    answers = []
    async with EngineClient(args.url, timeout_s=600) as client:
        model = await client.wait_ready(600)
        t0 = time.perf_counter()
        for p in prompts():
            body = workload_body(spec, model, p["prompt"], max_tokens=args.max_tokens)
            reply = await client.post("/v1/chat/completions", body, f"decode {p['id']}")
            ids = render_prompt(renderer, p["prompt"], endpoint="/v1/chat/completions")
            answers.append({"id": p["id"], "prompt_ids": ids, "token_ids": reply.token_ids})
        decode_s = time.perf_counter() - t0
        scorer = PplScorer(spec, model=model)
        for rec in ppl_rows():
            await scorer.score(client, rec)
    ppl = [{"id": s.id, "nll": s.nll, "tokens": s.tokens} for s in scorer.scores]
    return {"answers": answers, "ppl": ppl, "decode_seconds": decode_s}


def decode(args: argparse.Namespace) -> None:
    result = asyncio.run(_decode_http(args)) if args.url else _decode_inprocess(args)
    result.update(label=args.label, max_tokens=args.max_tokens, machine=machine())
    Path(args.out).write_text(json.dumps(result))
    print(f"{args.label}: {len(result['answers'])} answers in {result['decode_seconds']:.1f} s")


async def _score_one(ctx: Any, doc: dict[str, Any]) -> dict[str, Any]:
    from verifier.checks.reference import common_prefix, greedy_body, reference_positions

    gaps: list[float] = []
    per_answer: list[dict[str, Any]] = []
    identical, prefixes = 0, []
    for i, a in enumerate(doc["answers"]):
        key = f"{doc['label']}/{a['id']}"
        positions = await reference_positions(ctx, key, a["prompt_ids"], a["token_ids"])
        assert positions is not None
        g = [p.gap for p in positions]
        gaps += g
        per_answer.append(
            {"id": a["id"], "within_0.25": sum(x <= 0.25 for x in g) / len(g), "max_gap": max(g)}
        )
        body = greedy_body(ctx.spec, ctx.reference_model, a["prompt_ids"], len(a["token_ids"]))
        ref = (await ctx.reference.post("/v1/completions", body, f"free-run {i}")).token_ids
        identical += ref == a["token_ids"]
        prefixes.append(common_prefix(ref, a["token_ids"]))
    deltas = []
    ref_nll = {r["id"]: r for r in ctx.extra["reference_ppl"]}
    for r in doc["ppl"]:
        mine, theirs = r["nll"] / r["tokens"], ref_nll[r["id"]]["nll"] / ref_nll[r["id"]]["tokens"]
        deltas.append(mine - theirs)
    ordered = sorted(gaps)
    return {
        "label": doc["label"],
        "machine": doc.get("machine", {}).get("summary"),
        "answers": len(per_answer),
        "tokens": len(gaps),
        "exact_argmax": sum(1 for x in gaps if x == 0.0) / len(gaps),
        "within": {str(t): sum(1 for x in gaps if x <= t) / len(gaps) for t in TOLERANCES},
        "max_gap": ordered[-1],
        "gap_p999": ordered[min(len(ordered) - 1, int(0.999 * len(ordered)))],
        "worst_answer_within_0.25": min(a["within_0.25"] for a in per_answer),
        "free_running_identical": identical / len(per_answer),
        "free_running_mean_common_prefix": sum(prefixes) / len(prefixes),
        "ppl_delta_nats": {"min": min(deltas), "max": max(deltas)},
        "ppl_records": len(deltas),
    }


async def _score(files: list[Path], url: str) -> list[dict[str, Any]]:
    from schemas.challenge import load_challenge
    from verifier.checks.base import CheckContext
    from verifier.harness.client import EngineClient
    from verifier.harness.ppl import PplScorer

    spec = load_challenge("tiny")
    out = []
    async with EngineClient(url, timeout_s=600) as ref:
        model = await ref.wait_ready(600)
        scorer = PplScorer(spec, model=model)
        for rec in ppl_rows():
            await scorer.score(ref, rec)
        reference_ppl = [{"id": s.id, "nll": s.nll, "tokens": s.tokens} for s in scorer.scores]
        for path in files:
            ctx = CheckContext(spec=spec, reference=ref, reference_model=model, vocab_size=None)
            ctx.extra["reference_ppl"] = reference_ppl
            out.append(await _score_one(ctx, json.loads(path.read_text())))
            print(json.dumps(out[-1]))
    return out


def score(args: argparse.Namespace) -> None:
    from schemas.challenge import load_challenge
    from verifier.runners.process import reference_runner

    spec = load_challenge("tiny")
    runner = reference_runner(spec.reference)
    handle = runner.start(spec, model_dir=DATA / "tiny" / "model", gpu=False)
    try:
        results = asyncio.run(_score([Path(f) for f in args.files], handle.base_url))
    finally:
        handle.stop()
        runner.cleanup()
    doc = {
        "what": "honest engines' greedy answers re-scored by the tiny challenge's reference",
        "reference": spec.reference.to_dict(),
        "scored_on": machine(),
        "results": results,
    }
    target = Path(args.out) if args.out else RESULTS_DIR / "calibration.json"
    target.write_text(json.dumps(doc, indent=2) + "\n")
    print(f"wrote {target}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.calibrate", description=__doc__)
    sub = parser.add_subparsers(dest="cmd", required=True)
    d = sub.add_parser("decode", help="greedy answers and PPL of one honest engine")
    d.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    d.add_argument("--dtype", default="float32", choices=["float32", "bfloat16", "float16"])
    d.add_argument("--url", help="an engine already serving the tiny model (HTTP protocol)")
    d.add_argument("--label", required=True)
    d.add_argument("--max-tokens", type=int, default=128)
    d.add_argument("--out", required=True)
    s = sub.add_parser("score", help="re-score answer files with the verifier's reference")
    s.add_argument("files", nargs="+")
    s.add_argument("--out")
    args = parser.parse_args(argv)
    decode(args) if args.cmd == "decode" else score(args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
