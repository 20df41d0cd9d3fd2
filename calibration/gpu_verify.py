"""Whole verifications on a CUDA GPU, as an organizer without Docker runs them there.

    python -m calibration.gpu_verify --out DIR               # every row: honest x3, cheats x1
    python -m calibration.gpu_verify --only fp32,W=16 --runs 1
    python -m calibration.gpu_verify --only bf16 --append     # add to DIR/gpu_verify.json
    python -m calibration.gpu_verify --merge A.json B.json --note "..."   # results of several calls
    python -m calibration.gpu_verify --jobs 3                 # three verifications at a time
    python -m calibration.gpu_verify --table                  # the docs' regions from the results
    python -m calibration.gpu_verify --runner jail            # through the jail, signed

Each row is ``examples/tiny-baseline`` with the row's knobs in ``[engine.config]``
(``DEVICE = "cuda"`` always) and its environment in ``[engine.env]`` (``ENGINE_CLASS``
for the cheats and for the undeclared approximation), packaged with no Docker
(``--base-digest``, ``--no-build``), then verified by ``podium verify BUNDLE --runner
process`` in a process of its own, exactly as a person runs it, on the GPU variant of the
``tiny`` challenge: the shipped spec with its hardware set to the GPU this machine has and
its reference on ``cuda`` (float32), every bound as shipped. The process runner has no
sandbox, so an honest row ends UNOFFICIAL; what a row must show is that no check fails
on an honest run (no ``fail``, no ``error``, no failure) and that every cheat is
REJECTED.

The results (one summary per run, in ``calibration.calibrate``'s row format, plus each run's
stage times and the reference's self-test) go to ``DIR/gpu_verify.json`` after every run,
so a run cut short still leaves what it measured; ``--append`` keeps the runs already
there (a run of the same row and number is replaced), and ``--merge`` gathers the files of
several calls (a machine whose commands are cut at ten minutes runs the rows in parts)
into ``calibration/results/gpu_verify.json``. ``--jobs`` above 1 runs verifications
side by side: a run that another's engine made unclean (``env.gpu-busy`` at
``environment``) is run again alone at the end.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from bench.common import machine
from calibration import RESULTS_DIR
from calibration.gpu_run import gpu_spec, run_ok, tiny_cap, verify_once
from calibration.rows import DECODE_RATIO, Row, corpus_rows, doubles, margin_rows

RESULT = "gpu_verify.json"
#: the runs through the jail runner (``--runner jail``): signed, on the held-out set
JAIL_RESULT = "gpu_verify_jail.json"
#: the honest rows run through the jail (the cheats all are)
JAIL_HONEST = ("fp32", "bf16", "W=16")
RESULTS = RESULTS_DIR / RESULT
#: the results file as the docs' regions name it (``bench.docs``)
SOURCE = "calibration/results/" + RESULT


def rows() -> list[Row]:
    """Honest rows (the levers the rules allow, declared or not) and the cheats a process
    runner can host."""
    return _honest_rows() + _cheat_rows()


def _honest_rows() -> list[Row]:
    """The levers the rules allow, declared, then undeclared (``doubles.honest:Undeclared``)."""
    honest = [
        Row("fp32", "honest"),
        Row("bf16", "honest", config={"DTYPE": "bfloat16"}),
        Row("W=24", "honest", config={"SLIDING_WINDOW": 24}),
        Row("W=16", "honest", config={"SLIDING_WINDOW": 16}),
        Row("int8", "honest", config={"QUANTIZATION": "int8"}),
        # over the cap: ppl.cap, or on the public set the reference decode
        Row("W=10", "honest", config={"SLIDING_WINDOW": 10}, decode_ratio=DECODE_RATIO["W=10"]),
    ]
    undeclared = doubles.engine_class("Undeclared")
    honest += [
        Row(f"undeclared {name}", "honest", engine=undeclared, env=env)
        for name, env in (
            ("W=32", {"UNDECLARED_WINDOW": "32"}),
            ("W=24", {"UNDECLARED_WINDOW": "24"}),
            ("W=16", {"UNDECLARED_WINDOW": "16"}),
            ("int8", {"UNDECLARED_QUANT": "int8"}),
            ("int8 W=24", {"UNDECLARED_QUANT": "int8", "UNDECLARED_WINDOW": "24"}),
        )
    ]
    return honest


def _bought_rows() -> list[Row]:
    """What an engine might buy with a report, a declaration or a withheld top
    (``doubles.bought``): each must get the verdict its decode alone earns."""
    bought = doubles.engine_class("BuysAllowance")
    lowered_at_cap = str(math.log(1.047))
    return [
        Row("lossy 0.9", "cheat", engine=bought, env={"BUY_LOSSY_NATS": "0.9"}),
        Row(
            "lossy 0.9 lowered hidden",
            "cheat",
            engine=bought,
            env={"BUY_LOSSY_NATS": "0.9", "BUY_LOWER_NATS": "0.0131", "BUY_HIDE_TOPS": "1"},
        ),
        Row(
            "lossy 0.9 KV declared",
            "cheat",
            engine=bought,
            config={"KV_CACHE_DTYPE": "fp8"},
            env={"BUY_LOSSY_NATS": "0.9"},
        ),
        Row(
            "decode W=10 lowered",
            "cheat",
            engine=bought,
            env={"BUY_DECODE_WINDOW": "10", "BUY_LOWER_NATS": lowered_at_cap},
            decode_ratio=DECODE_RATIO["W=10"],
        ),
        Row(
            "decode W=16 lowered",
            "cheat",
            engine=bought,
            env={"BUY_DECODE_WINDOW": "16", "BUY_LOWER_NATS": "0.02"},
            decode_ratio=DECODE_RATIO["W=16"],
        ),
    ]


def _cheat_rows() -> list[Row]:
    """The cheats a process runner can host, the purchases and the corpus replayers among
    them."""
    cheats = [
        Row(name, "cheat", engine=doubles.engine_class(name), replays=name == "ReplayShaped")
        for name in ("FlatterLogprobs", "FlatterSomeRecords", "ReplayShaped")
    ]
    cheats += [
        Row(
            f"DecodeWindow {a}/{b}",
            "cheat",
            engine=doubles.engine_class("DecodeWindow"),
            env={"CHEAT_SCORE_WINDOW": str(a), "CHEAT_WINDOW": str(b)},
            decode_ratio=DECODE_RATIO[f"W={b}"],
        )
        for a, b in ((64, 10), (24, 12), (64, 16))
    ]
    cheats += _bought_rows()
    cheats += corpus_rows(timed="public")  # the process runner times the public set
    cheats += [
        Row(name, "cheat", engine=doubles.engine_class(name), replays=name == "CachedReplies")
        for name in (
            "SwitchPath",
            "ScaledLogprobs",
            "ForgedChat",
            "SometimesCheap",
            "CachedReplies",
        )
    ]
    # noise of 0.35, not 0.25: the public set the process runner times puts 0.25 at 1.0499
    # of the model's PPL there, inside the cap (1.059 on the held-out set)
    cheats.append(
        Row(
            "Degraded",
            "cheat",
            engine=doubles.engine_class("Degraded"),
            env={"ADVERSARY_NOISE": "0.35"},
        )
    )
    return cheats


def _busy(result: dict[str, Any]) -> bool:
    return result.get("failure_stage") == "environment" and "GPU" in str(result.get("failure"))


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m calibration.gpu_verify", description=__doc__)
    parser.add_argument("--out", type=Path, default=Path(os.environ.get("OUT") or "out/gpu"))
    parser.add_argument("--runs", type=int, default=3, help="runs of each honest row")
    parser.add_argument("--cheat-runs", type=int, default=1, help="runs of each cheat")
    parser.add_argument("--jobs", type=int, default=1, help="verifications side by side")
    parser.add_argument("--only", default="", help="comma-separated row names")
    parser.add_argument(
        "--margins",
        action="store_true",
        help="calibration.calibrate's margin rows (undeclared approximations, double spenders) "
        "instead of the honest rows and cheats; each runs --runs times",
    )
    parser.add_argument(
        "--first-run",
        type=int,
        default=1,
        help="number the runs from here (a third run of a row measured twice before is "
        "--runs 1 --first-run 3)",
    )
    parser.add_argument(
        "--runner",
        choices=("process", "jail"),
        default="process",
        help="jail: the honest rows fp32, bf16, W=16 and every cheat through the jail runner, "
        "signed with a key made for the run; results in gpu_verify_jail.json",
    )
    parser.add_argument("--append", action="store_true", help="keep the runs already in --out")
    parser.add_argument("--merge", type=Path, nargs="+", help="gather these result files")
    parser.add_argument("--note", default="", help="what --merge's results were run on")
    parser.add_argument(
        "--table", action="store_true", help="rewrite the docs' regions from the results only"
    )
    return parser


def _plan(args: argparse.Namespace, chosen: list[Row]) -> list[tuple[Row, int]]:
    """Each chosen row with each of its run numbers."""
    return [
        (row, run)
        for row in chosen
        for run in range(
            args.first_run,
            args.first_run
            + (args.runs if row.kind == "honest" or args.margins else args.cheat_runs),
        )
    ]


def jail_rows() -> list[Row]:
    """What ``--runner jail`` runs: three honest rows and every cheat."""
    return [r for r in _honest_rows() if r.name in JAIL_HONEST] + _cheat_rows()


def _key(work: Path) -> Path:
    """A signing key made for this call (``podium keys generate``)."""
    key = work / "organizer.pem"
    subprocess.run(
        [sys.executable, "-m", "podium.cli.app", "keys", "generate", str(key)],
        check=True,
        capture_output=True,
    )
    return key


def _one(item: tuple[Row, int], spec: Path, work: Path, key: Path | None = None) -> dict[str, Any]:
    """One run of a row in a folder of its own under ``work``; an exception is a result.
    With ``key``, the run is through the jail runner, signed."""
    row, run = item
    where = work / f"{row.name.replace(' ', '_').replace('/', '-')}-{run}"
    where.mkdir()
    try:
        if key is None:
            result = verify_once(row, run, spec, where)
        else:
            result = verify_once(row, run, spec, where, runner="jail", key=key)
    except Exception as exc:  # a row that could not even run is a result too
        result = {
            "name": row.name,
            "kind": row.kind,
            "run": run,
            "ok": False,
            "error": f"{type(exc).__name__}: {exc}",
        }
    finally:
        shutil.rmtree(where, ignore_errors=True)
    print(_line(result), flush=True)
    return result


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.merge:
        merged = merge([json.loads(p.read_text(encoding="utf-8")) for p in args.merge], args.note)
        target = RESULTS_DIR / JAIL_RESULT if args.runner == "jail" else RESULTS
        target.write_text(json.dumps(merged, indent=1) + "\n", encoding="utf-8")
        print(f"{len(merged['runs'])} runs from {len(args.merge)} files -> {target}")
        return 0
    if args.table:
        from bench import docs

        changed = docs.write(only=docs.reading(SOURCE))
        print(f"rewrote {len(changed)} region(s) from {SOURCE}")
        return 0
    listed = margin_rows() if args.margins else jail_rows() if args.runner == "jail" else rows()
    chosen = [r for r in listed if not args.only or r.name in args.only.split(",")]
    args.out.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="podium-gpu-verify-"))
    spec = gpu_spec(work)
    key = _key(work) if args.runner == "jail" else None
    name = JAIL_RESULT if args.runner == "jail" else RESULT
    plan = _plan(args, chosen)
    results: list[dict[str, Any]] = []
    kept: list[dict[str, Any]] = []
    if args.append and (args.out / name).is_file():
        kept = json.loads((args.out / name).read_text(encoding="utf-8"))["runs"]
    started = time.perf_counter()

    def save() -> None:
        document = {
            "machine": {**machine(), "gpu": json.loads(spec.read_text())["hardware"]},
            "command": "python -m calibration.gpu_verify " + " ".join(argv or sys.argv[1:]),
            "wall_s": round(time.perf_counter() - started, 1),
            "runs": _gather(kept, results),
        }
        (args.out / name).write_text(json.dumps(document, indent=1) + "\n", encoding="utf-8")

    with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        for result in pool.map(lambda item: _one(item, spec, work, key), plan):
            results.append(result)
            save()
    again = [r for r in results if _busy(r)]
    for result in again:  # made unclean by a neighbour: alone now
        row = next(r for r in chosen if r.name == result["name"])
        results.remove(result)
        results.append(_one((row, result["run"]), spec, work, key))
        save()
    bad = [r for r in results if not r["ok"]]
    print(
        f"{len(results) - len(bad)} of {len(results)} runs as expected "
        f"({time.perf_counter() - started:.0f} s)",
        flush=True,
    )
    shutil.rmtree(work, ignore_errors=True)
    return 1 if bad else 0


def _gather(*parts: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The runs of several parts, a later run of the same row and number replacing one
    before it, in the table's order."""
    runs: dict[tuple[str, int], dict[str, Any]] = {}
    for part in parts:
        runs.update({(r["name"], r["run"]): r for r in part})
    return sorted(runs.values(), key=lambda r: (r["kind"], r["name"], r["run"]))


def merge(documents: list[dict[str, Any]], note: str) -> dict[str, Any]:
    """One results document from the documents of several calls (in the order given):
    their runs gathered, a later run of a row and number replacing an earlier one, each run
    stamped with the commit its call measured (calls of one gathering may span commits:
    the table names each row's), each call's command and machine kept; each run judged again
    by today's rule (``run_ok``)."""
    if not documents:
        raise ValueError("nothing to merge")
    parts = []
    for d in documents:
        sha = d.get("machine", {}).get("git_sha") or d.get("git_sha")
        if not sha:
            raise ValueError(f"a results file names no commit: {d.get('command')!r}")
        cap = tiny_cap()
        parts.append(
            [
                {"git_sha": sha, **r, **({"ok": run_ok(r, cap)} if "verdict" in r else {})}
                for r in d["runs"]
            ]
        )
    return {
        "machine": documents[-1]["machine"],
        "note": note or f"{len(documents)} calls",
        "calls": [
            {
                "command": d.get("command") or d.get("commands"),
                "git_sha": d.get("machine", {}).get("git_sha") or d.get("git_sha"),
                "date": d.get("machine", {}).get("date"),
                "wall_s": d.get("wall_s"),
            }
            for d in documents
        ],
        "runs": _gather(*parts),
    }


def _line(r: dict[str, Any]) -> str:
    if "error" in r:
        return f"{r['name']:<22} run {r['run']}  ERROR {r['error'][:200]}"
    gap = r.get("mean_gap")
    allowed = (r.get("allowance") or {}).get("mean")
    return (
        f"{r['name']:<22} run {r['run']}  {r['verdict']:<10} ok={r['ok']!s:<5} "
        f"ppl={r['ppl'] or 0:.3f} gap={gap if gap is not None else '-'}/"
        f"{allowed if allowed is not None else '-'} errors={','.join(r['errors']) or '-'} "
        f"failing={[c['id'] for c in r['failing_checks']]} {r['podium_verify_s']:.0f}s"
    )


if __name__ == "__main__":
    sys.exit(main())
