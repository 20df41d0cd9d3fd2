"""Would held-out chat records tell a forging double spender from an honest approximation?

    python -m calibration.chat_records            # about 2 minutes on 2 cores
    python -m calibration.chat_records --rows-from calibration/results/chat_records.json

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

A forger that scores with window A and decodes with a harsher B chooses what loss it
shows on the chat records: A's, B's, or any other (a log-prob can always be reported
lower than a model computes). ``analyse`` puts each pair against the honest rows' largest
ratios under its best choice, and beside the comparison made without the records.
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
from calibration.rows import DECODE_RATIO

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
    numbers are noise), and how far each forging pair sits from them.

    With chat records, the bounds would be ``gap <= r1 e_chat`` and ``e_chat <= r2 e_text``
    (r1, r2: the honest rows' largest ratios). A forger that scores with window A and
    decodes with B chooses the loss it shows on the records: A's (``records_scored_mild``),
    B's (``records_scored_harsh``), or any other, since it can report a token's log-prob
    lower than either model computes. Its best is the e_chat both bounds allow, which
    exists unless ``gap_B > r1 r2 e_text(A)``: ``apart`` is its gap over that, never more
    than either pure choice. ``apart_without_records`` is the same gap against the honest
    rows' largest ``gap / e_text``, the comparison the reference decode makes today (a
    product of two maxima is never less than the maximum of the products, so the records
    cannot widen it)."""
    honest = {k: r for k, r in rows.items() if r["e_chat"] > floor and r["e_text"] > floor}
    gap_over_chat = max(r["gap"] / r["e_chat"] for r in honest.values())
    chat_over_text = max(r["e_chat"] / r["e_text"] for r in honest.values())
    gap_over_text = max(r["gap"] / r["e_text"] for r in honest.values())
    pairs = {}
    for a, b in PAIRS:
        score, decode = rows[f"W={a}"], rows[f"W={b}"]
        direct = decode["gap"] / score["e_text"]
        pairs[f"{a}/{b}"] = {
            "records_scored_mild": decode["gap"] / score["e_chat"] / gap_over_chat,
            "records_scored_harsh": decode["e_chat"] / score["e_text"] / chat_over_text,
            "apart": direct / (gap_over_chat * chat_over_text),
            "apart_without_records": direct / gap_over_text,
        }
    return {
        "honest_gap_over_e_chat": gap_over_chat,
        "honest_e_chat_over_e_text": chat_over_text,
        "honest_gap_over_e_text": gap_over_text,
        "pairs": pairs,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m calibration.chat_records", description=__doc__)
    parser.add_argument("--answers", type=int, default=48, help="prompts per set")
    parser.add_argument("--tokens", type=int, default=32, help="greedy tokens per answer")
    parser.add_argument("--out", type=Path, default=RESULTS_DIR / "chat_records.json")
    parser.add_argument(
        "--rows-from",
        type=Path,
        help="re-analyse the rows recorded in this result instead of measuring them",
    )
    args = parser.parse_args(argv)
    if args.rows_from is not None:
        recorded = json.loads(args.rows_from.read_text(encoding="utf-8"))
        head = {k: recorded[k] for k in ("machine", "answers", "tokens")}
        rows = recorded["rows"]
    else:
        rows = measure(args.answers, args.tokens)
        head = {"machine": machine(), "answers": args.answers, "tokens": args.tokens}
    result = {**head, "rows": rows, **analyse(rows)}
    args.out.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    print(
        "| forger A/B | records scored by A | records scored by B | its best (apart) "
        "| without records |"
    )
    print("| --- | ---: | ---: | ---: | ---: |")
    for name, p in result["pairs"].items():
        print(
            f"| {name} | {p['records_scored_mild']:.2f} | {p['records_scored_harsh']:.2f} "
            f"| {p['apart']:.2f} | {p['apart_without_records']:.2f} |"
        )
    print(
        f"honest, largest: gap / e_chat {result['honest_gap_over_e_chat']:.2f}, "
        f"e_chat / e_text {result['honest_e_chat_over_e_text']:.2f}, "
        f"gap / e_text {result['honest_gap_over_e_text']:.2f}; wrote {args.out}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
