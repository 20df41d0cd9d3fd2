"""Grow the tiny challenge's held-out prompt set so no verification repeats a timed prompt.

Every pass of every trial takes prompts that no earlier request of the run carried
(``verifier.harness.tps.PromptStream``), so the held-out set must hold at least
``num_prompts x passes x max_trials`` prompts plus the caching controls. The first
``make_datasets`` prompts stay as they are (same ids, same order); the new ones are
one or two consecutive verses (40 to 220 characters) of the same held-out chapters,
each text distinct from every public and held-out prompt.

    python training/grow_prompts.py --data podium/data/tiny --total 1024
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
    args = parser.parse_args(argv)
    path = args.data / "heldout-prompts.jsonl"
    rows = _rows(path)[: max(1, args.total)]
    seen = {r["prompt"] for r in rows} | {
        r["prompt"] for r in _rows(args.data / "public-prompts.jsonl")
    }
    _, heldout = kjv_corpus.split(kjv_corpus.load_chapters())
    pool = [t for t in dict.fromkeys(candidates(heldout[1::2])) if t not in seen]
    random.Random(args.seed).shuffle(pool)
    need = args.total - len(rows)
    if need > len(pool):
        raise SystemExit(f"only {len(pool)} more distinct prompts exist; asked for {need}")
    rows += [{"id": f"heldout-{len(rows) + i:04d}", "prompt": t} for i, t in enumerate(pool[:need])]
    write_jsonl(path, rows)
    manifest_path = args.data / "MANIFEST.json"
    manifest = json.loads(manifest_path.read_text())
    manifest["files"][path.name] = file_entry(path)
    manifest["heldout_prompts"] = len(rows)
    manifest_path.write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n")
    print(json.dumps({"prompts": len(rows), **file_entry(path)}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
