"""Whole verifications on a CUDA GPU, as an organizer without Docker runs them there.

    python -m calibration.gpu_verify --out DIR               # every row: honest x3, cheats x1
    python -m calibration.gpu_verify --only fp32,W=16 --runs 1
    python -m calibration.gpu_verify --only bf16 --append     # add to DIR/gpu_verify.json
    python -m calibration.gpu_verify --merge A.json B.json --note "..."   # results of several calls
    python -m calibration.gpu_verify --jobs 3                 # three verifications at a time
    python -m calibration.gpu_verify --table                  # docs table from the results

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

from bench.common import REPO_ROOT, machine
from calibration import RESULTS_DIR, margins, tiny_budget, tiny_spec
from calibration.rows import DECODE_RATIO, Row, doubles, margin_rows
from calibration.run_row import make_source
from calibration.summary import summarise
from calibration.table import GPU_HEADING, separation_text
from verifier.checks.reference import decode_allowances

ZERO_DIGEST = "sha256:" + "0" * 64
RESULT = "gpu_verify.json"


def rows() -> list[Row]:
    """Honest rows (the levers the rules allow, declared or not) and the cheats a process
    runner can host."""
    honest = [
        Row("fp32", "honest"),
        Row("bf16", "honest", config={"DTYPE": "bfloat16"}),
        Row("W=24", "honest", config={"SLIDING_WINDOW": 24}),
        Row("W=16", "honest", config={"SLIDING_WINDOW": 16}),
        Row("int8", "honest", config={"QUANTIZATION": "int8"}),
        Row("W=10", "honest", config={"SLIDING_WINDOW": 10}),  # over the cap: ppl.cap alone
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
    # what an engine might buy with a report, a declaration or a withheld top
    # (doubles.bought): each must get the verdict its decode alone earns
    bought = doubles.engine_class("BuysAllowance")
    lowered_at_cap = str(math.log(1.047))
    cheats_bought = [
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
    cheats += cheats_bought
    cheats += [
        Row(name, "cheat", engine=doubles.engine_class(name), replays=name == "CachedReplies")
        for name in (
            "SwitchPath",
            "ScaledLogprobs",
            "ForgedChat",
            "SometimesCheap",
            "CachedReplies",
            "Degraded",
        )
    ]
    return honest + cheats


def gpu_spec(where: Path) -> Path:
    """The tiny spec with this machine's GPU as its hardware and the reference on cuda."""
    import torch

    spec = tiny_spec()
    spec["title"] = "Tiny Gemma (GPU variant, calibration.gpu_verify)"
    spec["hardware"] = {
        "accelerator": "gpu",
        "gpu_name": torch.cuda.get_device_name(0),
        "gpu_count": 1,
    }
    spec["reference"] = {**spec["reference"], "device": "cuda", "dtype": "float32"}
    path = where / "tiny-gpu.json"
    path.write_text(json.dumps(spec, indent=1), encoding="utf-8")
    return path


def _podium(*args: str, timeout: float) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "podium.cli.app", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=REPO_ROOT,
    )


def package_row(row: Row, spec: Path, where: Path) -> Path:
    """The row's bundle, packaged as a participant would on a machine with no Docker."""
    src = make_source(row, where)
    toml = (src / "podium.toml").read_text(encoding="utf-8")
    toml = toml.replace('DEVICE = "cpu"', 'DEVICE = "cuda"')
    env = {"ENGINE_CLASS": row.engine, **row.env}
    lines = "".join(f"{k} = {json.dumps(v)}\n" for k, v in env.items())
    toml = toml.replace("[engine.env]\n", "[engine.env]\n" + lines, 1)
    (src / "podium.toml").write_text(toml, encoding="utf-8")
    dist = where / "dist"
    done = _podium(
        "submission",
        "package",
        str(src),
        "-o",
        str(dist),
        "--challenge",
        str(spec),
        "--base-digest",
        ZERO_DIGEST,
        "--no-build",
        "--force",
        "--json",
        timeout=300,
    )
    bundles = sorted(dist.glob("*.tar.gz"))
    if done.returncode != 0 or not bundles:
        said = done.stdout[-800:] + done.stderr[-800:]
        raise RuntimeError(f"{row.name}: packaging failed: {said}")
    return bundles[0]


def verify_once(row: Row, run: int, spec: Path, where: Path) -> dict[str, Any]:
    """One ``podium verify --runner process`` of the row; its summary and its stages."""
    bundle = package_row(row, spec, where)
    out = where / "out"
    t0 = time.perf_counter()
    done = _podium(
        "verify",
        str(bundle),
        "--runner",
        "process",
        "--challenge",
        str(spec),
        "-o",
        str(out),
        "--json",
        timeout=900,
    )
    wall_s = time.perf_counter() - t0
    report_path = out / "report.json"
    if not report_path.is_file():
        raise RuntimeError(f"{row.name}: no report (exit {done.returncode}): {done.stderr[-800:]}")
    from verifier.report import full_document

    report = full_document(report_path)  # the organizer's evidence: every value in full
    log = out / "engine.log"
    text = log.read_text(encoding="utf-8", errors="replace") if log.is_file() else ""
    quality = json.loads(spec.read_text())["quality"]
    model_ppl = float(quality["reference_ppl"])
    cap = model_ppl * float(quality["max_ratio"])
    summary = summarise(row, report, model_ppl=model_ppl, cap=cap, log=text)
    failing = [
        {"id": c["id"], "status": c["status"], "summary": c["summary"]}
        for c in report.get("checks", [])
        if c.get("status") in ("fail", "error")
    ]
    self_test = next(
        (c for c in report.get("checks", []) if c.get("id") == "reference.self-test"), None
    )
    attention = [line for line in text.splitlines() if line.startswith("attention self-test")]
    result = {
        **summary,
        "run": run,
        "exit_code": done.returncode,
        "podium_verify_s": round(wall_s, 2),
        "stages": {s["name"]: s["seconds"] for s in report.get("stages", [])},
        "failing_checks": failing,
        "reference_self_test": (self_test or {}).get("details"),
        "engine_attention": attention[-1] if attention else None,
    }
    return {**result, "ok": _ok(result, cap)}


def _ok(result: dict[str, Any], cap: float) -> bool:
    """A cheat is REJECTED; an honest run has no failing check and no failure, except an
    honest approximation whose PPL is over the cap, which ``ppl.cap`` alone must reject. A
    replaying cheat on a stream that never repeats a prompt had nothing to replay: it
    computed every token, so it is judged as an honest engine
    (``calibration.summary.expectation``). Judged on a run's stored summary, so that
    ``--merge`` judges runs of earlier calls by the same rule."""
    failing = [f["id"] for f in result.get("failing_checks") or []]
    if result["kind"] == "cheat" and not (result.get("replays") and result.get("no_repeat")):
        return bool(result["verdict"] == "REJECTED")
    if result.get("ppl") is not None and result["ppl"] > cap:
        return result["verdict"] == "REJECTED" and failing == ["ppl.cap"]
    return result.get("failure") is None and not failing and result["verdict"] != "REJECTED"


def _tiny_cap() -> float:
    quality = tiny_spec()["quality"]
    return float(quality["reference_ppl"]) * float(quality["max_ratio"])


def _busy(result: dict[str, Any]) -> bool:
    return result.get("failure_stage") == "environment" and "GPU" in str(result.get("failure"))


#: the docs subsection this script owns: from its heading to the next heading
HEADING = GPU_HEADING
DOCS = REPO_ROOT / "docs" / "benchmarks.md"
RESULTS = RESULTS_DIR / RESULT


def table(doc: dict[str, Any]) -> str:
    """The GPU rows as markdown, one line per row (runs gathered), with each honest row's
    decode positions under the bounds the spec ships now, recomputed from the recorded gaps
    and scoring loss e (``integrity.reference_decode``'s arithmetic)."""
    settings = tiny_spec()["integrity"]["reference_decode"]
    budget = tiny_budget()
    rows: dict[str, list[dict[str, Any]]] = {}
    for r in doc["runs"]:
        rows.setdefault(r["name"], []).append(r)
    lines = [
        "| row | kind | runs | commit | verdicts | PPL | mean gap | worst answer | e "
        "| mean / allowed now | worst / allowed now | reference attention | failing checks "
        "| as expected |",
        "| --- | --- | ---: | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | --- | --- "
        "| --- |",
    ]

    def most(values: list[Any]) -> str:
        nums = [v for v in values if isinstance(v, int | float)]
        return f"{max(nums):.4f}" if nums else "–"

    for name, runs in rows.items():
        first = runs[0]
        excess = [(r.get("allowance") or {}).get("excess") or 0.0 for r in runs]
        mean_pos = [
            (r["mean_gap"] or 0.0) / decode_allowances(budget, settings)[0]
            for r, e in zip(runs, excess, strict=True)
            if r.get("mean_gap") is not None
        ]
        answer_pos = [
            (r["worst_answer_gap"] or 0.0) / decode_allowances(budget, settings)[1]
            for r, e in zip(runs, excess, strict=True)
            if r.get("worst_answer_gap") is not None
        ]
        tests = [r.get("reference_self_test") or {} for r in runs]
        attention = sorted({f"{t.get('tested')}→{t.get('serving')}" for t in tests if t})
        failing = sorted({c["id"] for r in runs for c in r.get("failing_checks") or []})
        verdicts = sorted({str(r.get("verdict")) for r in runs})
        ppl = first.get("ppl")
        cells = [
            name,
            first["kind"],
            str(len(runs)),
            ", ".join(sorted({str(r.get("git_sha", ""))[:7] for r in runs})),
            ", ".join(verdicts),
            f"{ppl:.3f}" if ppl else "–",
            most([r.get("mean_gap") for r in runs]),
            most([r.get("worst_answer_gap") for r in runs]),
            most(excess) if mean_pos else "–",
            f"{max(mean_pos):.2f}" if mean_pos else "–",
            f"{max(answer_pos):.2f}" if answer_pos else "–",
            ", ".join(attention) or "–",
            ", ".join(f"`{f}`" for f in failing) or "–",
            "yes" if all(r["ok"] for r in runs) else "no: " + str(first.get("note") or ""),
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def margin_runs(doc: dict[str, Any]) -> list[dict[str, Any]]:
    """The runs of trust-margin rows among ``doc``'s (a margin row run among the honest
    rows, ``rows()``, counts as one too), each with its row's ``decode_ratio``."""
    decode_ratio = {r.name: r.decode_ratio for r in margin_rows()}
    return [
        {**r, "decode_ratio": decode_ratio[r["name"]]}
        for r in doc["runs"]
        if r["name"] in decode_ratio and "error" not in r
    ]


def margins_text(doc: dict[str, Any]) -> str:
    """The trust-margin rows among the runs (``--margins``), one line per run, each
    position under the exchange rates the spec ships now (``calibration.margins.at_rates``
    on the recorded gaps and e), and their separation."""
    spec = tiny_spec()
    settings = spec["integrity"]["reference_decode"]
    runs = [margins.at_rates(r, settings) for r in margin_runs(doc)]
    if not runs:
        return ""
    return (
        "\n**Trust margins on the GPU** (`python -m calibration.gpu_verify --margins`): the "
        "rows of the CPU's trust-margin table above, one line per run, each position recomputed "
        "under the exchange rates the spec ships now from the run's recorded gaps and e; "
        "*verdict* is the run's own, under the rates of its commit.\n\n"
        + separation_text(runs, float(spec["quality"]["max_ratio"]))
    )


def write_table(doc: dict[str, Any]) -> None:
    text = DOCS.read_text(encoding="utf-8")
    start = text.index(HEADING)
    end = text.index("\n#", start + len(HEADING))
    m = doc["machine"]
    body = (
        f"{HEADING}\n\n`bash bench/gpu.sh -k verifications` (`python -m calibration.gpu_verify`; "
        "`--merge` gathers the calls, `--table` writes this table) · "
        "`calibration/results/gpu_verify.json`\n\n"
        f"{m['gpu']['gpu_name']}, {m.get('cores')} CPU cores, {m['date']}: {doc['note']}. "
        "Each run is `podium verify BUNDLE --runner process` on the GPU variant of tiny (the "
        "spec as shipped, its hardware that GPU, its reference on `cuda` in float32), so an "
        "honest run ends UNOFFICIAL: what counts is that no check fails. *mean / allowed now* "
        "and *worst / allowed now* put the largest recorded gaps against the allowances the "
        "spec ships today (the same gaps and e, today's exchange rates); *reference "
        "attention* is what the reference's self-test found (tested → served); *commit* is "
        "the tree each row's runs measured. Runs made unclean by a neighbour's engine "
        "(`--jobs`, `env.gpu-busy`) were re-run alone and are not counted.\n\n"
        + table(doc)
        + "\n"
        + margins_text(doc)
    )
    DOCS.write_text(text[:start] + body + text[end:], encoding="utf-8")


def main(argv: Sequence[str] | None = None) -> int:
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
    parser.add_argument("--append", action="store_true", help="keep the runs already in --out")
    parser.add_argument("--merge", type=Path, nargs="+", help="gather these result files")
    parser.add_argument("--note", default="", help="what --merge's results were run on")
    parser.add_argument("--table", action="store_true", help="rewrite the docs table only")
    args = parser.parse_args(argv)
    if args.merge:
        merged = merge([json.loads(p.read_text(encoding="utf-8")) for p in args.merge], args.note)
        RESULTS.write_text(json.dumps(merged, indent=1) + "\n", encoding="utf-8")
        print(f"{len(merged['runs'])} runs from {len(args.merge)} files -> {RESULTS}")
        return 0
    if args.table:
        write_table(json.loads(RESULTS.read_text(encoding="utf-8")))
        return 0
    listed = margin_rows() if args.margins else rows()
    chosen = [r for r in listed if not args.only or r.name in args.only.split(",")]
    args.out.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="podium-gpu-verify-"))
    spec = gpu_spec(work)
    plan = [
        (row, run)
        for row in chosen
        for run in range(
            args.first_run,
            args.first_run
            + (args.runs if row.kind == "honest" or args.margins else args.cheat_runs),
        )
    ]
    results: list[dict[str, Any]] = []
    kept: list[dict[str, Any]] = []
    if args.append and (args.out / RESULT).is_file():
        kept = json.loads((args.out / RESULT).read_text(encoding="utf-8"))["runs"]
    started = time.perf_counter()

    def one(item: tuple[Row, int]) -> dict[str, Any]:
        row, run = item
        where = work / f"{row.name.replace(' ', '_').replace('/', '-')}-{run}"
        where.mkdir()
        try:
            result = verify_once(row, run, spec, where)
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

    def save() -> None:
        document = {
            "machine": {**machine(), "gpu": json.loads(spec.read_text())["hardware"]},
            "command": "python -m calibration.gpu_verify " + " ".join(argv or sys.argv[1:]),
            "wall_s": round(time.perf_counter() - started, 1),
            "runs": _gather(kept, results),
        }
        (args.out / RESULT).write_text(json.dumps(document, indent=1) + "\n", encoding="utf-8")

    with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        for result in pool.map(one, plan):
            results.append(result)
            save()
    again = [r for r in results if _busy(r)]
    for result in again:  # made unclean by a neighbour: alone now
        row = next(r for r in chosen if r.name == result["name"])
        results.remove(result)
        results.append(one((row, result["run"])))
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
    by today's rule (``_ok``)."""
    if not documents:
        raise ValueError("nothing to merge")
    parts = []
    for d in documents:
        sha = d.get("machine", {}).get("git_sha") or d.get("git_sha")
        if not sha:
            raise ValueError(f"a results file names no commit: {d.get('command')!r}")
        cap = _tiny_cap()
        parts.append(
            [
                {"git_sha": sha, **r, **({"ok": _ok(r, cap)} if "verdict" in r else {})}
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
