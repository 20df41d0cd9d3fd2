"""Would held-out chat records tell a forging double spender from an honest approximation?

    python -m calibration.chat_records            # about 2 minutes on 2 cores

A design study for the evidence that ``integrity.same-path``'s self-consistency cannot
give against an engine that remembers its answers and scores them with its decode model
(``doubles.decode:ForgedDecodeWindow``). On tiny (transformers float32, the baseline
engine's code), for honest windows W of 48 to 8 on every path:

- *gap*: the engine's greedy answers (``--answers`` held-out chat prompts, ``--tokens``
  each) re-scored teacher-forced by the unmodified model: its top logprob minus the
  generated token's, the mean over every token (``integrity.reference-decode``'s mean gap);
- *e_chat*: the engine's loss on chat records, other held-out chat prompts each followed
  by the unmodified model's own greedy answer, scored teacher-forced: engine NLL minus
  model NLL per answer token (the evidence proposed in docs/measurement.md);
- *e_text*: the engine's loss on the held-out PPL text, ln of its PPL ratio
  (``calibration.calibrate.DECODE_RATIO``), as ``e`` is today.

A forger that scores with window A and decodes with a harsher B has two choices on the
chat records: score them with A (then its decode's gap is B's, against A's e_chat) or with
B (then its e_chat is B's, against A's e_text on the PPL text). Each pair's ratio is
printed beside the honest rows' largest, which a bound would have to allow.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path
from typing import Any

from bench.common import DATA, machine
from calibration import RESULTS_DIR
from calibration.calibrate import DECODE_RATIO

TINY = DATA / "tiny"

WINDOWS = (48, 32, 24, 16, 12, 8)
PAIRS = ((32, 12), (24, 12), (16, 12), (16, 8), (24, 16))


def _render(engine: Any, text: str) -> list[int]:
    return list(engine.render_chat([{"role": "user", "content": text}], add_generation_prompt=True))


def _logprobs(engine: Any, ids: list[int]) -> Any:
    import torch

    with torch.inference_mode():
        out = engine.model(torch.tensor([ids], device=engine.device), use_cache=False)
    return torch.log_softmax(out.logits[0].float(), -1)


def _greedy(engine: Any, ids: list[int], tokens: int) -> list[int]:
    """Greedy tokens after ``ids`` through the engine's cached decode (EOS does not stop)."""
    import torch

    logits, cache = engine.forward(torch.tensor([ids]), None, all_logits=False)
    out: list[int] = []
    for _ in range(tokens):
        token = int(logits[-1].argmax())
        out.append(token)
        logits, cache = engine.forward(torch.tensor([[token]]), cache, all_logits=False)
    return out


def measure(answers: int, tokens: int) -> dict[str, dict[str, float]]:
    from engines.baseline.model import BaselineEngine

    model = TINY / "model"
    prompts = [
        json.loads(line)["prompt"]
        for line in (TINY / "heldout-prompts.jsonl").read_text().splitlines()
    ]
    reference = BaselineEngine(model)
    decode_prompts = [_render(reference, p) for p in prompts[:answers]]
    record_prompts = [_render(reference, p) for p in prompts[answers : 2 * answers]]
    records = [(ids, _greedy(reference, ids, tokens)) for ids in record_prompts]
    record_lp = []
    for ids, answer in records:
        lp = _logprobs(reference, ids + answer)
        record_lp.append([float(lp[len(ids) - 1 + i, t]) for i, t in enumerate(answer)])
    rows: dict[str, dict[str, float]] = {}
    for window in WINDOWS:
        started = time.perf_counter()
        engine = BaselineEngine(model, sliding_window=window)
        gaps: list[float] = []
        for ids in decode_prompts:
            answer = _greedy(engine, ids, tokens)
            lp = _logprobs(reference, ids + answer)
            for i, t in enumerate(answer):
                row = lp[len(ids) - 1 + i]
                gaps.append(float(row.max() - row[t]))
        excess: list[float] = []
        for (ids, answer), own in zip(records, record_lp, strict=True):
            lp = _logprobs(engine, ids + answer)
            excess += [own[i] - float(lp[len(ids) - 1 + i, t]) for i, t in enumerate(answer)]
        rows[f"W={window}"] = {
            "e_text": math.log(DECODE_RATIO[f"W={window}"]),
            "e_chat": sum(excess) / len(excess),
            "gap": sum(gaps) / len(gaps),
        }
        print(f"W={window}: {rows[f'W={window}']} ({time.perf_counter() - started:.0f} s)")
    return rows


def analyse(rows: dict[str, dict[str, float]], floor: float = 0.004) -> dict[str, Any]:
    """The honest rows' largest ratios (rows whose e is above ``floor``: below it both
    numbers are noise), and each forging pair's ratio under both of its choices."""
    honest = {k: r for k, r in rows.items() if r["e_chat"] > floor and r["e_text"] > floor}
    gap_over_chat = max(r["gap"] / r["e_chat"] for r in honest.values())
    chat_over_text = max(r["e_chat"] / r["e_text"] for r in honest.values())
    pairs = {}
    for a, b in PAIRS:
        score, decode = rows[f"W={a}"], rows[f"W={b}"]
        mild = decode["gap"] / score["e_chat"]
        harsh = decode["e_chat"] / score["e_text"]
        pairs[f"{a}/{b}"] = {
            "records_scored_mild": mild,
            "records_scored_harsh": harsh,
            "apart": min(mild / gap_over_chat, harsh / chat_over_text),
        }
    return {
        "honest_gap_over_e_chat": gap_over_chat,
        "honest_e_chat_over_e_text": chat_over_text,
        "pairs": pairs,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m calibration.chat_records", description=__doc__)
    parser.add_argument("--answers", type=int, default=48, help="prompts per set")
    parser.add_argument("--tokens", type=int, default=32, help="greedy tokens per answer")
    parser.add_argument("--out", type=Path, default=RESULTS_DIR / "chat_records.json")
    args = parser.parse_args(argv)
    rows = measure(args.answers, args.tokens)
    result = {
        "machine": machine(),
        "answers": args.answers,
        "tokens": args.tokens,
        "rows": rows,
        **analyse(rows),
    }
    args.out.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    print("| forger A/B | decode gap / e_chat(A) | e_chat(B) / e_text(A) | apart |")
    print("| --- | ---: | ---: | ---: |")
    for name, p in result["pairs"].items():
        print(
            f"| {name} | {p['records_scored_mild']:.2f} | {p['records_scored_harsh']:.2f} "
            f"| {p['apart']:.2f} |"
        )
    print(
        f"honest, largest: gap / e_chat {result['honest_gap_over_e_chat']:.2f}, "
        f"e_chat / e_text {result['honest_e_chat_over_e_text']:.2f}; wrote {args.out}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
