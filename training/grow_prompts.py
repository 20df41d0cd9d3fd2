"""Grow the tiny challenge's prompt sets so no verification repeats a timed prompt.

Every pass of every trial takes prompts that no earlier request of the run carried
(``verifier.harness.tps.PromptStream``), so the held-out set must hold at least
``num_prompts x passes x max_trials`` prompts plus the caching controls; so must the
public set, which a participant's self-check times. The first ``make_datasets`` prompts
stay as they are (same ids, same order); the new ones are one or two consecutive verses
(40 to 220 characters) of the same chapters (held-out chapters for the held-out set,
training chapters for the public one), each text distinct from every prompt of both.

    python training/grow_prompts.py --data podium/data/tiny --set heldout --total 1024
    python training/grow_prompts.py --data podium/data/tiny --set public --total 1024
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import kjv_corpus
from make_datasets import PROMPT_CHARS, file_entry, write_jsonl


def _rows(path: Path) -> list[dict[str, str]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def candidates(chapters: list[kjv_corpus.Chapter]) -> list[str]:
    """Every verse (joined with the next when short) of ``chapters`` that fits the bounds."""
    out: list[str] = []
    for chapter in chapters:
        for start, text in enumerate(chapter.verses):
            if len(text) < PROMPT_CHARS[0] and start + 1 < len(chapter.verses):
                text = text + " " + chapter.verses[start + 1]
            if PROMPT_CHARS[0] <= len(text) <= PROMPT_CHARS[1]:
                out.append(text)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--data", type=Path, required=True, help="podium/data/tiny")
    parser.add_argument("--total", type=int, default=1024)
    parser.add_argument("--seed", type=int, default=2025)
    parser.add_argument("--set", choices=["heldout", "public"], default="heldout")
    args = parser.parse_args(argv)
    other = "public" if args.set == "heldout" else "heldout"
    path = args.data / f"{args.set}-prompts.jsonl"
    rows = _rows(path)[: max(1, args.total)]
    seen = {r["prompt"] for r in rows} | {
        r["prompt"] for r in _rows(args.data / f"{other}-prompts.jsonl")
    }
    train, heldout = kjv_corpus.split(kjv_corpus.load_chapters())
    chapters = heldout[1::2] if args.set == "heldout" else train
    pool = [t for t in dict.fromkeys(candidates(chapters)) if t not in seen]
    random.Random(args.seed if args.set == "heldout" else f"{args.seed}:public").shuffle(pool)
    need = args.total - len(rows)
    if need > len(pool):
        raise SystemExit(f"only {len(pool)} more distinct prompts exist; asked for {need}")
    rows += [
        {"id": f"{args.set}-{len(rows) + i:04d}", "prompt": t} for i, t in enumerate(pool[:need])
    ]
    write_jsonl(path, rows)
    manifest_path = args.data / "MANIFEST.json"
    manifest = json.loads(manifest_path.read_text())
    manifest["files"][path.name] = file_entry(path)
    manifest[f"{args.set}_prompts"] = len(rows)
    manifest_path.write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n")
    print(json.dumps({"prompts": len(rows), **file_entry(path)}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
