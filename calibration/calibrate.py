"""Calibration of the trust checks: honest lossy engines and cheats, one table.

    python -m calibration.calibrate                  # every row (about 25 minutes on 2 cores)
    python -m calibration.calibrate --only W=16,int4 # re-run some rows, merged into the results
    python -m calibration.calibrate --noisy          # re-run the rows only tps.unstable spoiled
    python -m calibration.calibrate --table          # re-write the docs' regions from the results
    python -m calibration.calibrate --list           # the rows' names

Every row is one whole verification on the ``tiny`` challenge (its real spec, every
bound as shipped): ``examples/tiny-baseline`` packaged with podium's engine code, the
cheats included, its knobs in the bundle's ``[engine.config]`` (so the verifier's
declared-model logic reads them from the frozen config, as it would from any entry),
run by ``verifier.pipeline.verify`` with a process runner that reports itself as a
verifying sandbox (``tests/doubles/sandbox.py``; no Docker) and the verifier's own
reference runner. The engine reads the same frozen config the bundle carries.

Rows: podium's baseline engine with lossy knobs the rules allow (sliding windows, int8
and int4 weights, bfloat16); real vLLM (``examples/tiny-vllm`` in the Docker sandbox,
``podium/vllm-cpu``) with a window and with the KV-cache, dtype and quantisation options
the rules allow, each either served and judged, or refused by vLLM's CPU build at start
(the row says with what error); the closest honest stand-in for an fp8 KV cache on
podium's engine (keys and values rounded to fp8 on every path, the knob declared, which
podium cannot confirm: judged against the plain budget); the forged vLLM entry
(``ForgedVllm``: ``kind = "vllm"`` on the baseline engine, vLLM's argument line printed,
REJECTED at intake by ``engine.not-vllm``); and every cheating engine of ``tests/doubles``
that cheats about work. ``Crash``, ``Hang`` and ``Escape`` are
left out: they test robustness and isolation (FAILED by design, or contained by the
sandbox, which a process runner is not), not the judgement of work.

What a row must show: an honest engine inside the PPL cap is VERIFIED; one over the cap
is REJECTED with ``ppl.cap`` as its only error; a cheat is REJECTED. The results go to
``calibration/results/calibration.json``, and every region of the docs rendered from it
(``docs/benchmarks.md`` section 7 and more) is rewritten through ``bench.docs``.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

from bench.common import REPO_ROOT, machine
from calibration import RESULTS_DIR
from calibration.rows import LEFT_OUT, Row, rows
from calibration.run_row import cheat_stats, verify_row
from calibration.summary import summarise
from calibration.table import COMMAND

RESULT = RESULTS_DIR / "calibration.json"
#: the results file as the docs' regions name it (``bench.docs``)
SOURCE = "calibration/results/calibration.json"
DOCS = REPO_ROOT / "docs" / "benchmarks.md"


def _load(path: Path) -> dict[str, Any] | None:
    with contextlib.suppress(OSError, ValueError):
        data = json.loads(path.read_text(encoding="utf-8"))
        if isinstance(data, dict) and isinstance(data.get("rows"), list) and "cap" in data:
            return data
    return None


def _keep_dir(keep: Path, row: Row) -> Path:
    return keep / row.name.replace(" ", "_").replace("=", "")


def _from_keep(
    keep: Path, previous: dict[str, Any], model_ppl: float, cap: float
) -> list[dict[str, Any]]:
    """The results' rows re-summarised from the reports and logs kept under ``keep``."""
    from verifier.report import full_document

    old = {s["name"]: s for s in previous["rows"]}
    out = []
    for row in rows():
        where = _keep_dir(keep, row) / "out"
        if not (where / "report.json").is_file():
            if row.name in old:
                out.append(old[row.name])
            continue
        report = full_document(where / "report.json")
        log = where / "engine.log"
        text = log.read_text(encoding="utf-8", errors="replace") if log.is_file() else ""
        before = old.get(row.name, {})
        summary = summarise(
            row,
            report,
            model_ppl=model_ppl,
            cap=cap,
            wall_s=before.get("wall_s"),
            stats=cheat_stats(text),
            log=text,
        )
        summary["git_sha"] = before.get("git_sha")
        out.append(summary)
    return out


def _order(summaries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    names = [r.name for r in rows()]
    return sorted(summaries, key=lambda s: names.index(s["name"]) if s["name"] in names else 99)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog=COMMAND, description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", help="comma-separated row names (see --list)")
    parser.add_argument(
        "--noisy", action="store_true", help="re-run the rows that only tps.unstable spoiled"
    )
    parser.add_argument("--list", action="store_true", help="print the rows' names")
    parser.add_argument(
        "--table", action="store_true", help="re-write the docs' regions from the results only"
    )
    parser.add_argument("--out", type=Path, default=RESULT)
    parser.add_argument(
        "--docs",
        type=Path,
        help=f"the document to rewrite (default: {DOCS.name}, and only when --out is the "
        "results file the docs are rendered from)",
    )
    parser.add_argument("--note", help="a sentence on what was measured, kept in the results")
    parser.add_argument(
        "--keep",
        type=Path,
        help="keep each row's verification here (with --table: rebuild the rows from it)",
    )
    return parser


def _table(
    parser: argparse.ArgumentParser,
    args: argparse.Namespace,
    previous: dict[str, Any] | None,
    model_ppl: float,
    cap: float,
) -> int:
    """``--table``: the docs section from the results (rebuilt from ``--keep``, noted)."""
    if previous is None:
        parser.error(f"no results in {args.out}: run without --table first")
    if args.keep is not None:  # rebuild the rows from the kept verifications
        previous["rows"] = _order(_from_keep(args.keep, previous, model_ppl, cap))
    if args.note is not None:
        previous["note"] = args.note
    if args.note is not None or args.keep is not None:
        args.out.write_text(json.dumps(previous, indent=2, sort_keys=True) + "\n")
    _write_docs_for(args, previous)
    return 0


def _write_docs_for(args: argparse.Namespace, result: dict[str, Any]) -> None:
    """Rewrite the docs from ``result`` where they are rendered from it: ``--docs`` names a
    document, or ``--out`` is the results file the docs cite. Results written elsewhere (a
    trial run, a single row) leave the docs as they are, and the command says so."""
    if args.docs is not None:
        write_docs(result, args.docs)
    elif args.out.resolve() == RESULT.resolve():
        write_docs(result, DOCS)
    else:
        print(
            f"results in {args.out}; {DOCS.name} not rewritten (it is rendered from "
            f"{RESULT.relative_to(REPO_ROOT)}; --docs FILE writes one from these)",
            file=sys.stderr,
        )


def write_docs(result: dict[str, Any], docs: Path = DOCS) -> list[str]:
    """Rewrite every region of the docs rendered from the calibration's results, from
    ``result`` (``docs`` in place of ``docs/benchmarks.md``), through ``bench.docs``."""
    from bench import docs as rendered

    return rendered.write(
        paths={"benchmarks": docs}, data={SOURCE: result}, only=rendered.reading(SOURCE)
    )


def _chosen(
    parser: argparse.ArgumentParser,
    args: argparse.Namespace,
    every: list[Row],
    previous: dict[str, Any] | None,
) -> list[Row]:
    """The rows to run: every one, those ``--only`` names, or those ``--noisy`` picks."""
    chosen = every
    if args.only:
        wanted = [n.strip() for n in args.only.split(",") if n.strip()]
        unknown = [n for n in wanted if n not in {r.name for r in every}]
        if unknown:
            parser.error(f"unknown rows {unknown}; --list shows them")
        chosen = [r for r in every if r.name in wanted]
    if args.noisy:
        if previous is None:
            parser.error(f"no results in {args.out}")
        noisy = {s["name"] for s in previous["rows"] if s.get("noise_only")}
        chosen = [r for r in every if r.name in noisy]
    return chosen


def _run(row: Row, keep: Path | None, model_ppl: float, cap: float) -> dict[str, Any]:
    """One row verified (its verification kept under ``keep``), summarised and printed."""
    with tempfile.TemporaryDirectory(prefix="calibrate-") as tmp:
        where = Path(tmp)
        if keep is not None:
            where = _keep_dir(keep, row)
            shutil.rmtree(where, ignore_errors=True)
            where.mkdir(parents=True)
        run = verify_row(row, where)
    return summarise(
        row,
        run["report"],
        model_ppl=model_ppl,
        cap=cap,
        wall_s=run["wall_s"],
        stats=run["stats"],
        log=run["log"],
    )


def _print(summary: dict[str, Any]) -> None:
    print(
        f"{summary['name']}: {summary['verdict']} {summary['errors']} ppl={summary['ppl']} "
        f"mean_gap={summary['mean_gap']} worst={summary['worst_answer_gap']} "
        f"e={summary['allowance']['excess']} {'ok' if summary['meets'] else 'MISS'} "
        f"({summary['wall_s']:.0f} s)",
        flush=True,
    )


def main(argv: list[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    every = rows()
    if args.list:
        print("\n".join(r.name for r in every))
        return 0
    from schemas.challenge import load_challenge

    spec = load_challenge("tiny")
    model_ppl = float(spec.quality.reference_ppl or 0.0)
    cap = float(spec.quality.cap)
    previous = _load(args.out)
    if args.table:
        return _table(parser, args, previous, model_ppl, cap)
    chosen = _chosen(parser, args, every, previous)
    kept = (
        {s["name"]: s for s in (previous or {}).get("rows", [])} if args.only or args.noisy else {}
    )
    sha = machine().get("git_sha")
    for row in chosen:
        summary = _run(row, args.keep, model_ppl, cap)
        summary["git_sha"] = sha
        kept[row.name] = summary
        _print(summary)
        result = {
            "command": f"{COMMAND} {' '.join(argv if argv is not None else sys.argv[1:])}".strip(),
            "machine": machine(),
            "model_ppl": model_ppl,
            "cap": cap,
            "left_out": LEFT_OUT,
            "note": args.note if args.note is not None else (previous or {}).get("note"),
            "rows": _order(list(kept.values())),
        }
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(result, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    final = _load(args.out)
    if final is not None:
        _write_docs_for(args, final)
    return 0 if all(s["meets"] for s in (final or {}).get("rows", [])) else 1


if __name__ == "__main__":
    raise SystemExit(main())
