"""PPL through the engine and the harness against a direct transformers computation.

The harness's PPL (``verifier.harness.ppl.PplScorer``, record by record, against
podium's baseline engine, float32 on the CPU) is compared with the same negative
log-likelihood computed directly: one forward pass of context + target with transformers, float32
log-softmax, the log-probability of each target token given everything before it,
summed with ``math.fsum``. Two engine set-ups are checked: the engine as a process with
its default scoring (the whole prompt in one chunk for a small vocabulary), and the
engine scoring prompts in chunks of 16 positions through its KV cache, which is how it
fits Gemma's 262k vocabulary on a 24 GB card.

The records are the tiny challenge's held-out PPL file when it is shipped, else seeded
random token ids (the arithmetic is the same; the PPL value then means nothing).
"""

from __future__ import annotations

import asyncio
import json
import math
import random
from pathlib import Path
from typing import Any

from bench.common import DATA, baseline_engine, cpu_model_dir
from schemas.challenge import load_challenge
from verifier.checks import registry
from verifier.checks.base import CheckContext
from verifier.evidence import PplResult
from verifier.harness.client import EngineClient
from verifier.harness.ppl import PplScorer, ppl_records_of

GOAL = 1e-5


def records(model: Path, n: int = 8) -> tuple[list[dict[str, Any]], str]:
    shipped = DATA / "tiny" / "ppl-heldout.jsonl"
    if shipped.is_file():
        rows = [json.loads(line) for line in shipped.read_text().splitlines() if line.strip()]
        return rows, "podium/data/tiny/ppl-heldout.jsonl"
    vocab = int(json.loads((model / "config.json").read_text())["vocab_size"])
    rng = random.Random(1234)
    rows = []
    for i in range(n):
        context = [rng.randrange(6, vocab) for _ in range(rng.randint(64, 160))]
        target = [rng.randrange(6, vocab) for _ in range(rng.randint(48, 128))]
        rows.append({"id": f"rand-{i}", "context_token_ids": context, "target_token_ids": target})
    return rows, f"{n} records of seeded random token ids"


def direct_nll(model_dir: Path, rows: list[dict[str, Any]]) -> list[tuple[float, int]]:
    """(NLL, scored tokens) per record, straight from transformers (float32, CPU)."""
    import torch
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(str(model_dir), dtype=torch.float32)
    model.eval()
    out = []
    with torch.inference_mode():
        for row in rows:
            ids = [int(t) for t in row["context_token_ids"] + row["target_token_ids"]]
            logits = model(torch.tensor([ids])).logits[0].float()
            logprobs = torch.log_softmax(logits, dim=-1)
            first = max(len(row["context_token_ids"]), 1)
            values = [float(logprobs[i - 1, ids[i]]) for i in range(first, len(ids))]
            out.append((-math.fsum(values), len(values)))
    return out


async def _engine_ppl(url: str, rows: list[dict[str, Any]]) -> PplResult:
    spec = load_challenge("tiny")
    async with EngineClient(url, timeout_s=120.0) as client:
        model = await client.served_model()
        scorer = PplScorer(spec, model=model)
        chosen = ppl_records_of(spec, rows)
        for row in chosen:  # one at a time, in order, as the harness scores each record
            await scorer.score(client, row)
        return scorer.result(chosen)


def _findings(engine: PplResult) -> list[str]:
    """The ids the PPL checks raise on the engine's answers (``verifier.checks.ppl``)."""
    ids = [
        "ppl.token-mismatch",
        "ppl.count-mismatch",
        "ppl.logprob-positive",
        "ppl.rank-mismatch",
        "ppl.non-finite",
    ]
    ctx = CheckContext(load_challenge("tiny"), ppl=engine)
    return [f.check_id for o in registry.judge(ids, ctx) for f in o.findings]


def compare(engine: PplResult, direct: list[tuple[float, int]]) -> dict[str, Any]:
    nll = math.fsum(n for n, _ in direct)
    tokens = sum(t for _, t in direct)
    ppl = math.exp(nll / tokens)
    per_record = [
        abs(s.nll - d) / d for s, (d, _) in zip(engine.per_record, direct, strict=True) if d
    ]
    return {
        "engine_ppl": engine.value,
        "direct_ppl": ppl,
        "engine_nll": engine.nll_sum,
        "direct_nll": nll,
        "tokens": tokens,
        "engine_tokens": engine.tokens,
        "rel_diff_ppl": abs(engine.value - ppl) / ppl,
        "rel_diff_nll": abs(engine.nll_sum - nll) / nll,
        "max_rel_diff_record_nll": max(per_record),
        "findings": _findings(engine),
        "meets_goal": abs(engine.value - ppl) / ppl <= GOAL,
    }


def run(*, quick: bool = False) -> dict[str, Any]:
    from engines.baseline import start_server

    model = cpu_model_dir()
    rows, source = records(model)
    direct = direct_nll(model, rows)
    with baseline_engine(model) as engine:
        process = compare(asyncio.run(_engine_ppl(engine.url, rows)), direct)
    server = start_server(model, max_model_len=1024, engine_kwargs={"logprob_chunk_tokens": 16})
    try:
        chunked = compare(asyncio.run(_engine_ppl(server.url, rows)), direct)
    finally:
        server.stop()
    for name, row in (("one pass", process), ("chunks of 16", chunked)):
        print(
            f"  {name}: engine PPL {row['engine_ppl']:.9g}, direct {row['direct_ppl']:.9g}, "
            f"relative difference {row['rel_diff_ppl']:.2e}",
            flush=True,
        )
    return {
        "model": str(model.relative_to(model.parents[3])),
        "records": len(rows),
        "source": source,
        "goal": GOAL,
        "engine_one_pass": process,
        "engine_chunks_of_16": chunked,
    }
