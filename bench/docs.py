"""The numbers of ``docs/benchmarks.md`` and ``docs/measurement.md``, rendered from the
results files (``bench/results/*.json``, ``calibration/results/*.json``).

    python -m bench.docs --check       # exit 1 naming each region that differs from its results
    python -m bench.docs --write       # rewrite every region from the results
    python -m bench.docs --list        # each region, its document and the files it reads

Every number table of the two documents, and every sentence whose numbers come from a
results file, is a *region* (``bench.docs_region``): a marked stretch whose text is a pure
function of the files its start marker names. A region has one writer: this renderer.
``python -m calibration.calibrate --table`` and ``python -m calibration.gpu_verify --table``
rewrite their regions through it. ``tests/bench/test_docs_numbers.py`` runs ``--check`` on
the committed documents, so the test suite fails when a document and its results disagree.

The renderers: ``bench.docs_bench`` (the benchmarks' results), ``bench.docs_calibration``
(the calibration's, in benchmarks.md) and ``bench.docs_measurement`` (measurement.md).
"""

from __future__ import annotations

import argparse
import json
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from bench import docs_bench, docs_calibration, docs_measurement, docs_missed, docs_runs
from bench.common import REPO_ROOT
from bench.docs_region import END, START, Region

DOCS_DIR = REPO_ROOT / "docs"
#: the documents that hold regions, by the name a region gives
DOCUMENTS = ("benchmarks", "measurement")
_BLOCK = re.compile(re.escape(START) + r"([\w.-]+) \(from [^)]*\) -->\n.*?" + re.escape(END), re.S)


def regions() -> list[Region]:
    """Every region of every document, in the order of the documents."""
    found = [
        *docs_bench.REGIONS,
        *docs_runs.REGIONS,
        *docs_calibration.REGIONS,
        *docs_missed.REGIONS,
        *docs_measurement.REGIONS,
    ]
    names = [r.name for r in found]
    if len(set(names)) != len(names):
        raise ValueError(
            f"two regions share a name: {sorted(n for n in names if names.count(n) > 1)}"
        )
    return found


def reading(path: str) -> list[str]:
    """The names of the regions rendered from ``path`` (relative to the repository root)."""
    return [r.name for r in regions() if path in r.sources]


def render(region: Region, data: Mapping[str, Any] | None = None) -> str:
    """``region``'s marked block, rendered from its files (``data`` holds files already
    loaded, by their path relative to the repository root, in place of the committed ones)."""
    given = data or {}
    loaded = [
        given[p] if p in given else json.loads((REPO_ROOT / p).read_text(encoding="utf-8"))
        for p in region.sources
    ]
    return region.block(region.render(*loaded))


def _blocks(text: str) -> dict[str, list[re.Match[str]]]:
    found: dict[str, list[re.Match[str]]] = {}
    for match in _BLOCK.finditer(text):
        found.setdefault(match[1], []).append(match)
    return found


def _chosen(only: Iterable[str] | None) -> list[Region]:
    every = regions()
    if only is None:
        return every
    wanted = set(only)
    unknown = wanted - {r.name for r in every}
    if unknown:
        raise ValueError(f"no such region: {', '.join(sorted(unknown))} (--list names them)")
    return [r for r in every if r.name in wanted]


def _paths(paths: Mapping[str, Path] | None) -> dict[str, Path]:
    return {doc: (paths or {}).get(doc, DOCS_DIR / f"{doc}.md") for doc in DOCUMENTS}


def check(
    paths: Mapping[str, Path] | None = None,
    data: Mapping[str, Any] | None = None,
    only: Iterable[str] | None = None,
) -> list[str]:
    """What is wrong, one line each: a region whose text differs from its rendering, one
    missing from its document or there twice, and a marked region no renderer knows."""
    docs = _paths(paths)
    chosen = _chosen(only)
    problems: list[str] = []
    for doc, path in docs.items():
        blocks = _blocks(path.read_text(encoding="utf-8"))
        mine = {r.name for r in regions() if r.doc == doc}
        problems += [f"{path.name}: region {n!r} has no renderer" for n in blocks if n not in mine]
        for region in (r for r in chosen if r.doc == doc):
            hits = blocks.get(region.name, [])
            if len(hits) != 1:
                problems.append(f"{path.name}: region {region.name!r} appears {len(hits)} times")
            elif hits[0][0] != render(region, data):
                problems.append(
                    f"{path.name}: region {region.name!r} differs from "
                    f"{', '.join(region.sources)} (python -m bench.docs --write)"
                )
    return problems


def write(
    paths: Mapping[str, Path] | None = None,
    data: Mapping[str, Any] | None = None,
    only: Iterable[str] | None = None,
) -> list[str]:
    """Rewrite the regions (each must be in its document once); the names rewritten."""
    docs = _paths(paths)
    chosen = _chosen(only)
    changed: list[str] = []
    for doc, path in docs.items():
        mine = [r for r in chosen if r.doc == doc]
        if not mine:
            continue
        text = path.read_text(encoding="utf-8")
        for region in mine:
            hits = _blocks(text).get(region.name, [])
            if len(hits) != 1:
                raise ValueError(f"{path}: region {region.name!r} appears {len(hits)} times")
            new = render(region, data)
            if hits[0][0] != new:
                text = text[: hits[0].start()] + new + text[hits[0].end() :]
                changed.append(region.name)
        if text != path.read_text(encoding="utf-8"):
            path.write_text(text, encoding="utf-8")
    return changed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.docs", description=__doc__.split("\n\n")[0]
    )
    what = parser.add_mutually_exclusive_group(required=True)
    what.add_argument("--check", action="store_true", help="exit 1 where a region differs")
    what.add_argument("--write", action="store_true", help="rewrite the regions")
    what.add_argument("--list", action="store_true", help="the regions and what they read")
    parser.add_argument("--only", help="comma-separated region names (default: every one)")
    args = parser.parse_args(argv)
    only = [n.strip() for n in args.only.split(",") if n.strip()] if args.only else None
    try:
        if args.list:
            for r in _chosen(only):
                print(f"{r.doc}.md  {r.name}  <- {', '.join(r.sources)}")
            return 0
        if args.write:
            changed = write(only=only)
            print(f"rewrote {len(changed)} region(s){': ' + ', '.join(changed) if changed else ''}")
            return 0
        problems = check(only=only)
    except ValueError as exc:
        parser.error(str(exc))
    for line in problems:
        print(line)
    if not problems:
        print("every region agrees with its results")
    return 1 if problems else 0


if __name__ == "__main__":
    raise SystemExit(main())
