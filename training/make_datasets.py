"""Make the tiny model's prompt and perplexity data sets, and its MANIFEST.json.

Usage (from the repository root, after train_tiny.py; about a minute on the CPU):

    nice -n 10 python training/make_datasets.py \
        --model podium/data/tiny/model --out podium/data/tiny

Writes, under ``--out``:

- ``public-prompts.jsonl`` (from training chapters) and ``heldout-prompts.jsonl`` (from
  held-out chapters): 32 ``{"id", "prompt"}`` records each, one or two verses.
- ``ppl-public.jsonl`` and ``ppl-heldout.jsonl``: 16 ``{"id", "context_token_ids",
  "target_token_ids"}`` records each, from two disjoint halves of the held-out chapters.
- ``MANIFEST.json``: sha256 and size of every model and data file, the honest perplexity
  of both PPL files, and the perplexity of deliberately degraded engines.

Perplexity is computed by the direct method the challenge uses: float32 on the CPU, the
model input is context + target ids as they are, and
PPL = exp(sum of target-token NLL / number of target tokens).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import random
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import kjv_corpus
import tiny_tokenizer

N_PROMPTS = 32
N_PPL = 16
CONTEXT_RANGE = (48, 160)
TARGET_RANGE = (48, 128)
PROMPT_CHARS = (40, 220)
DATA_FILES = (
    "public-prompts.jsonl",
    "heldout-prompts.jsonl",
    "ppl-public.jsonl",
    "ppl-heldout.jsonl",
)
DEGRADED_SLIDING_WINDOW = 8


def pick_prompts(
    chapters: list[kjv_corpus.Chapter], rng: random.Random, exclude: set[str]
) -> list[str]:
    """One or two consecutive verses from distinct chapters, 40-220 characters."""
    prompts: list[str] = []
    order = list(chapters)
    rng.shuffle(order)
    for chapter in order:
        if len(prompts) == N_PROMPTS:
            break
        start = rng.randrange(len(chapter.verses))
        text = chapter.verses[start]
        if len(text) < PROMPT_CHARS[0] and start + 1 < len(chapter.verses):
            text = text + " " + chapter.verses[start + 1]
        if PROMPT_CHARS[0] <= len(text) <= PROMPT_CHARS[1] and text not in exclude:
            prompts.append(text)
            exclude.add(text)
    if len(prompts) != N_PROMPTS:
        raise RuntimeError(f"only {len(prompts)} prompts found")
    return prompts


def pick_ppl_records(
    chapters: list[kjv_corpus.Chapter], tokenizer: Any, rng: random.Random, prefix: str
) -> list[dict[str, Any]]:
    """Context = <bos> + the opening of a chapter; target = the tokens that follow."""
    records: list[dict[str, Any]] = []
    order = list(chapters)
    rng.shuffle(order)
    for chapter in order:
        if len(records) == N_PPL:
            break
        n_ctx = rng.randint(*CONTEXT_RANGE)
        n_tgt = rng.randint(*TARGET_RANGE)
        ids = [tiny_tokenizer.BOS_ID, *tokenizer.encode(chapter.text(), add_special_tokens=False)]
        if len(ids) < n_ctx + n_tgt:
            continue
        records.append(
            {
                "id": f"{prefix}-{len(records):02d}",
                "context_token_ids": ids[:n_ctx],
                "target_token_ids": ids[n_ctx : n_ctx + n_tgt],
            }
        )
    if len(records) != N_PPL:
        raise RuntimeError(f"only {len(records)} PPL records found")
    return records


def perplexity(model: Any, records: list[dict[str, Any]]) -> float:
    """exp(total target NLL / total target tokens), one forward pass per record."""
    import torch

    total, count = 0.0, 0
    with torch.no_grad():
        for rec in records:
            ctx, tgt = rec["context_token_ids"], rec["target_token_ids"]
            x = torch.tensor([ctx + tgt])
            logits = model(input_ids=x).logits[0].float()
            logprobs = torch.log_softmax(logits[len(ctx) - 1 : -1], dim=-1)
            total -= float(logprobs.gather(1, torch.tensor(tgt).unsqueeze(1)).sum())
            count += len(tgt)
    return math.exp(total / count)


def load_model(model_dir: Path, **overrides: Any) -> Any:
    import torch
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(str(model_dir), dtype=torch.float32, **overrides)
    model.eval()
    return model


def write_jsonl(path: Path, rows: list[dict[str, Any]]) -> None:
    path.write_text("".join(json.dumps(r, separators=(",", ":")) + "\n" for r in rows))


def file_entry(path: Path) -> dict[str, Any]:
    return {"sha256": hashlib.sha256(path.read_bytes()).hexdigest(), "size": path.stat().st_size}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--model", type=Path, required=True, help="trained model directory")
    parser.add_argument("--out", type=Path, required=True, help="data directory (podium/data/tiny)")
    parser.add_argument("--seed", type=int, default=2024)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args(argv)

    import torch
    from transformers import AutoTokenizer

    torch.set_num_threads(args.threads)
    tokenizer = AutoTokenizer.from_pretrained(str(args.model))
    train, heldout = kjv_corpus.split(kjv_corpus.load_chapters())
    public_slice, heldout_slice = heldout[0::2], heldout[1::2]

    seen: set[str] = set()
    public_prompts = pick_prompts(train, random.Random(args.seed), seen)
    heldout_prompts = pick_prompts(heldout_slice, random.Random(args.seed + 1), seen)
    ppl_public = pick_ppl_records(
        public_slice, tokenizer, random.Random(args.seed + 2), "ppl-public"
    )
    ppl_heldout = pick_ppl_records(
        heldout_slice, tokenizer, random.Random(args.seed + 3), "ppl-heldout"
    )

    args.out.mkdir(parents=True, exist_ok=True)
    write_jsonl(
        args.out / "public-prompts.jsonl",
        [{"id": f"public-{i:03d}", "prompt": p} for i, p in enumerate(public_prompts)],
    )
    write_jsonl(
        args.out / "heldout-prompts.jsonl",
        [{"id": f"heldout-{i:03d}", "prompt": p} for i, p in enumerate(heldout_prompts)],
    )
    write_jsonl(args.out / "ppl-public.jsonl", ppl_public)
    write_jsonl(args.out / "ppl-heldout.jsonl", ppl_heldout)

    model = load_model(args.model)
    n_params = sum(p.numel() for p in model.parameters())
    heldout_ppl = perplexity(model, ppl_heldout)
    public_ppl = perplexity(model, ppl_public)
    window_ppl = perplexity(
        load_model(args.model, sliding_window=DEGRADED_SLIDING_WINDOW), ppl_heldout
    )
    from engines.baseline.load import round_per_tensor

    rounded_ppl = {}
    for bits in (8, 4):
        rounded = load_model(args.model)
        round_per_tensor(rounded, bits)
        rounded_ppl[bits] = perplexity(rounded, ppl_heldout)

    files = {f"model/{p.name}": file_entry(p) for p in sorted(args.model.iterdir()) if p.is_file()}
    files.update({name: file_entry(args.out / name) for name in DATA_FILES})
    manifest = {
        "files": files,
        "heldout_ppl": round(heldout_ppl, 6),
        "public_ppl": round(public_ppl, 6),
        "parameters": n_params,
        "vocab_size": tiny_tokenizer.VOCAB_SIZE,
        "target_tokens": {
            "heldout": sum(len(r["target_token_ids"]) for r in ppl_heldout),
            "public": sum(len(r["target_token_ids"]) for r in ppl_public),
        },
        "degraded": {
            "heldout_ppl_honest": round(heldout_ppl, 6),
            f"heldout_ppl_sliding_window_{DEGRADED_SLIDING_WINDOW}": round(window_ppl, 6),
            "heldout_ppl_int8_per_tensor": round(rounded_ppl[8], 6),
            "heldout_ppl_int4_per_tensor": round(rounded_ppl[4], 6),
        },
    }
    (args.out / "MANIFEST.json").write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n")
    print(json.dumps({k: v for k, v in manifest.items() if k != "files"}, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
