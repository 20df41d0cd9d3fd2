"""How often is an honest entry not VERIFIED? Whole verifications, counted.

    python -m calibration.false_rejection --runs 20                  # the sample, quiet machine
    python -m calibration.false_rejection --runs 3 --hog 2    # 2 CPU hogs switching on and off
    python -m calibration.false_rejection --runs 20 --example tiny-vllm
    python -m calibration.false_rejection --runs 20 --undeclared   # the trust-margin honest rows
    python -m calibration.false_rejection --runs 20 --undeclared "undeclared W=16,undeclared int8"
    python -m calibration.false_rejection --runs 20 --undeclared "W=16,int8,bf16"   # declared
    python -m calibration.false_rejection --positions   # those runs under today's allowances
    python -m calibration.false_rejection --runs 5 --controls   # integrity.controls, honest
    python -m calibration.false_rejection --runs 1 --controls --cheats   # and the replayers

Each run is the real pipeline on the tiny challenge exactly as an organizer runs it: the
sample submission packaged once, rebuilt without cache, run in the Docker sandbox, the
timed evaluation with its interleaved PPL records and probes (fresh seeds every run),
the reference stage on the verifier's own model. Per run it records the verdict, every
check's status, and the margins of the calibrated checks (the reference decode's gaps,
the PPL deltas, the fresh controls' speed ratio overall and in the worst trial and their
gap excess, the trials' CV and how many trials ran), so the
distance from each bound is visible, not only the verdict.

``--undeclared [NAMES]`` runs, instead of the sample submission, the honest undeclared
approximations of ``calibration.calibrate.margin_rows()`` that are inside the PPL cap (or the
ones named), each ``--runs`` times, as the calibration runs them (a process runner that
stands in for the sandbox; fresh seeds every run): none may be REJECTED.

``--hog N`` starts N busy processes that run for 3 s and pause for 3 s, over and over,
for the whole run: a loaded machine. Honest runs must then never be REJECTED (a noisy
measurement is FAILED by ``tps.unstable``, or still VERIFIED); the result says which.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.common import REPO_ROOT, busy_neighbours, machine
from calibration import RESULTS_DIR, tiny_budget, tiny_spec
from verifier.checks.budget import decode_allowances


def _margins(report: dict[str, Any]) -> dict[str, Any]:
    checks = {c["id"]: c for c in report["checks"]}

    def detail(check_id: str, key: str) -> Any:
        return (checks.get(check_id, {}).get("details") or {}).get(key)

    tps = report["metrics"].get("tps") or {}
    return {
        "reference_decode_mean_gap": detail("integrity.reference-decode", "mean_gap"),
        "reference_decode_large_gap_share": detail("integrity.reference-decode", "large_gap_share"),
        "reference_decode_max_gap": detail("integrity.reference-decode", "max_gap"),
        "reference_decode_worst_answer": (
            detail("integrity.reference-decode", "worst_answer") or {}
        ).get("mean_gap"),
        "scoring_loss": detail("integrity.reference-decode", "reported_scoring_loss"),
        "reference_decode_allowed_mean": (
            detail("integrity.reference-decode", "allowance") or {}
        ).get("mean"),
        "tops_withheld_share": (detail("ppl.reference-mismatch", "tops") or {}).get("share"),
        "tops_withheld_allowed": (detail("ppl.reference-mismatch", "tops") or {}).get("allowed"),
        "same_path_self_gap": detail("integrity.same-path", "mean_self_gap"),
        "ppl_delta_low": detail("ppl.reference-mismatch", "lowest_delta_nats"),
        "ppl_delta_high": detail("ppl.reference-mismatch", "highest_delta_nats"),
        "caching_speedup": detail("integrity.caching", "speedup"),
        "controls_ratio": detail("integrity.controls", "ratio"),
        "controls_worst_trial": max(
            (detail("integrity.controls", "per_trial") or {}).values(), default=None
        ),
        "controls_gap_excess": (detail("integrity.controls", "agreement") or {}).get("excess"),
        "same_path_fraction": detail("integrity.same-path", "fraction"),
        "same_path_left_out": detail("integrity.same-path", "reference_top_left_out"),
        "same_path_left_out_allowed": detail("integrity.same-path", "max_reference_top_left_out"),
        "tps_median": tps.get("median"),
        "tps_cv": tps.get("cv"),
        "tps_ci": (tps.get("stability") or {}).get("ci"),
        "trials_run": (tps.get("stability") or {}).get("trials_run"),
        "repeated_requests": tps.get("repeated_requests"),
        "free_running_identical": (detail("integrity.reference-decode", "free_running") or {}).get(
            "identical"
        ),
    }


def run(args: argparse.Namespace) -> dict[str, Any]:
    """The sample submission (``args.example``) packaged once and verified ``args.runs``
    times in the Docker sandbox, ``args.hog`` busy neighbours beside it."""
    from schemas.challenge import load_challenge
    from submission.bundle import package

    work = Path(tempfile.mkdtemp(prefix="podium-frr-"))
    src = work / "src"
    shutil.copytree(
        REPO_ROOT / "examples" / args.example,
        src,
        ignore=shutil.ignore_patterns("manifest.json", "engine-config.json"),
    )
    packaged = package(src, work / "dist", build=False)
    assert packaged.bundle is not None, [f.one_line() for f in packaged.findings]
    spec = load_challenge("tiny")
    runs: list[dict[str, Any]] = []
    try:
        with busy_neighbours(args.hog, 3.0):
            for i in range(args.runs):
                row = _run_once(packaged.bundle.path, spec, work / f"run-{i}", i)
                runs.append(row)
                print(json.dumps(row), flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    verdicts = [r["verdict"] for r in runs]
    return {
        "example": args.example,
        "challenge": "tiny",
        "hogs": args.hog,
        "runs": len(runs),
        "verdicts": {v: verdicts.count(v) for v in sorted(set(verdicts))},
        "false_rejections": sum(1 for v in verdicts if v == "REJECTED"),
        "not_verified": sum(1 for v in verdicts if v != "VERIFIED"),
        "wall_s_median": statistics.median(r["wall_s"] for r in runs) if runs else None,
        "margins": {key: _spread(runs, key) for key in SPREAD},
        "per_run": runs,
    }


#: the margins whose range over the runs ``run`` reports
SPREAD = (
    "reference_decode_mean_gap",
    "reference_decode_large_gap_share",
    "reference_decode_max_gap",
    "ppl_delta_low",
    "ppl_delta_high",
    "caching_speedup",
    "controls_ratio",
    "controls_worst_trial",
    "controls_gap_excess",
    "same_path_fraction",
    "tps_cv",
    "tps_ci",
    "trials_run",
    "repeated_requests",
)


def _run_once(bundle: Path, spec: Any, out_dir: Path, i: int) -> dict[str, Any]:
    """One verification of the bundle in the Docker sandbox: its verdict and margins."""
    from verifier.pipeline import VerifyRequest, verify
    from verifier.runners.local_docker import LocalDockerRunner
    from verifier.runners.reference_engine import reference_runner

    t0 = time.perf_counter()
    out = verify(
        VerifyRequest(
            bundle=bundle,
            spec=spec,
            runner=LocalDockerRunner(),
            out_dir=out_dir,
            reference=reference_runner,
        )
    )
    report = out.evidence or out.report  # the organizer's: every value in full
    return {
        "run": i,
        "verdict": out.verdict,
        "wall_s": time.perf_counter() - t0,
        "not_passed": {c["id"]: c["status"] for c in report["checks"] if c["status"] != "pass"},
        "error_findings": sorted(
            {f["check_id"] for f in report["findings"] if f["severity"] == "error"}
        ),
        "seeds": report.get("seeds"),
        **_margins(report),
    }


def _spread(runs: list[dict[str, Any]], key: str) -> dict[str, float] | None:
    values = [r[key] for r in runs if isinstance(r.get(key), int | float)]
    return {"min": min(values), "max": max(values)} if values else None


def undeclared_rows(names: str) -> list[Any]:
    """The honest margin rows inside the cap; a comma-separated list of names picks those,
    among the honest margin rows and the honest rows of the calibration table (declared
    windows, int8, bf16, and the vLLM rows, which need Docker and ``podium/vllm-cpu``)."""
    from calibration.rows import margin_rows
    from calibration.rows import rows as table_rows

    honest = [r for r in margin_rows() if r.kind == "honest"]
    if names:
        known = {r.name for r in honest}
        honest += [r for r in table_rows() if r.kind == "honest" and r.name not in known]
        wanted = {n.strip() for n in names.split(",") if n.strip()}
        unknown = wanted - {r.name for r in honest}
        if unknown:
            raise SystemExit(f"unknown honest margin rows {sorted(unknown)}")
        return [r for r in honest if r.name in wanted]
    return [r for r in honest if r.decode_ratio is not None and r.decode_ratio <= 1.05]


def control_rows(cheats: bool = False) -> list[Any]:
    """The honest engines ``integrity.controls`` must never reject: the baseline, and
    honest speculative decoding by n-gram lookup (whose speed depends on the text); with
    ``cheats``, also the corpus replayers it must reject (``tests/doubles/corpus.py``),
    reading tiny's shipped held-out set."""
    from calibration.rows import Row, corpus_rows, doubles

    rows = [
        Row("honest baseline", "honest"),
        Row("honest ngram", "honest", engine=doubles.engine_class("NgramLookup")),
    ]
    if not cheats:
        return rows
    return [*rows, *corpus_rows()]


def run_rows(rows: list[Any], times: int) -> dict[str, Any]:
    """Each row ``times`` times, as the calibration runs it; verdicts and margins per row."""
    from calibration.run_row import verify_row

    out: dict[str, Any] = {}
    for row in rows:
        runs: list[dict[str, Any]] = []
        for i in range(times):
            with tempfile.TemporaryDirectory(prefix="podium-frr-") as tmp:
                done = verify_row(row, Path(tmp))
            report = done["report"]
            entry = {
                "run": i,
                "verdict": report.get("verdict"),
                "wall_s": done["wall_s"],
                "failure": report.get("failure"),
                "error_findings": sorted(
                    {f["check_id"] for f in report["findings"] if f["severity"] == "error"}
                ),
                "self_gap": next(
                    (
                        (c.get("details") or {}).get("mean_self_gap")
                        for c in report["checks"]
                        if c["id"] == "integrity.same-path"
                    ),
                    None,
                ),
                **_margins(report),
            }
            runs.append(entry)
            print(json.dumps({"row": row.name, **entry}), flush=True)
        verdicts = [r["verdict"] for r in runs]
        out[row.name] = {
            "env": row.env,
            "config": dict(row.config),
            "runs": len(runs),
            "verdicts": {v: verdicts.count(v) for v in sorted(set(verdicts))},
            "kind": row.kind,
            "false_rejections": (
                sum(1 for v in verdicts if v == "REJECTED") if row.kind == "honest" else 0
            ),
            "controls_ratio": _spread(runs, "controls_ratio"),
            "controls_worst_trial": _spread(runs, "controls_worst_trial"),
            "per_run": runs,
        }
    return {
        "challenge": "tiny",
        "runner": "process (tests/doubles/sandbox.py), as calibration.calibrate",
        "rows": out,
        "false_rejections": sum(r["false_rejections"] for r in out.values()),
        "runs": sum(r["runs"] for r in out.values()),
    }


def positions(result: dict[str, Any], calibration: dict[str, Any]) -> list[dict[str, Any]]:
    """Per undeclared row of a ``--undeclared`` result: the largest mean gap and share over
    1 nat of its runs, and where they sit under the reference decode's allowances as the
    tiny spec ships them now. The scoring loss e is the run's own where it was recorded,
    else that of the calibration row with the same knobs (e is the same from run to run on
    tiny: every PPL record is scored)."""
    settings = tiny_spec()["integrity"]["reference_decode"]
    budget = tiny_budget()
    known = {
        json.dumps(r.get("env"), sort_keys=True): (r.get("allowance") or {}).get("excess")
        for r in calibration.get("rows", [])
    }
    out = []
    for name, row in result["rows"].items():
        per_run = row["per_run"]
        fallback = known.get(json.dumps(row["env"], sort_keys=True))
        means, larges = [], []
        for r in per_run:
            e = r.get("scoring_loss", fallback)
            if e is None or r.get("reference_decode_mean_gap") is None:
                continue
            mean_allowed, _, large_allowed = decode_allowances(budget, settings)
            means.append((r["reference_decode_mean_gap"] / mean_allowed, r))
            larges.append(r["reference_decode_large_gap_share"] / large_allowed)
        if not means:
            continue
        worst, run = max(means, key=lambda m: m[0])
        out.append(
            {
                "row": name,
                "runs": len(per_run),
                "verdicts": row["verdicts"],
                "largest_mean_gap": run["reference_decode_mean_gap"],
                "e": run.get("scoring_loss", fallback),
                "decode_mean": worst,
                "decode_large": max(larges),
            }
        )
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m calibration.false_rejection", description=__doc__
    )
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--hog", type=int, default=0, help="busy processes, 3 s on / 3 s off")
    parser.add_argument("--example", default="tiny-baseline", help="a folder of examples/")
    parser.add_argument("--out", type=Path)
    parser.add_argument(
        "--undeclared",
        nargs="?",
        const="",
        default=None,
        help="run the honest undeclared approximations of calibration.calibrate.margin_rows() "
        "(inside the cap, or the comma-separated names given, which may also name the "
        "calibration table's honest rows: 'W=16,int8,bf16,vLLM KV fp8') instead of the sample",
    )
    parser.add_argument(
        "--controls",
        action="store_true",
        help="run the honest baseline and an honest n-gram speculating engine (process "
        "runner) instead of the sample: integrity.controls' ratios on honest engines",
    )
    parser.add_argument(
        "--cheats",
        action="store_true",
        help="with --controls: also the corpus replayers the check must reject",
    )
    parser.add_argument(
        "--positions",
        action="store_true",
        help="print where the recorded --undeclared runs sit under the allowances shipped now",
    )
    args = parser.parse_args(argv)
    if args.positions:
        source = args.out or RESULTS_DIR / "false_rejection-undeclared.json"
        calibration = json.loads((RESULTS_DIR / "calibration.json").read_text())
        found = positions(json.loads(source.read_text()), calibration)
        print(
            "| row | runs | verdicts | largest mean gap | e | mean / allowed | > 1 nat / allowed |"
        )
        print("| --- | ---: | --- | ---: | ---: | ---: | ---: |")
        for p in found:
            print(
                f"| {p['row']} | {p['runs']} | {p['verdicts']} | {p['largest_mean_gap']:.4f} "
                f"| {p['e']:.4f} | {p['decode_mean']:.2f} | {p['decode_large']:.2f} |"
            )
        return 0
    if args.controls or args.undeclared is not None:  # --controls first
        rows = control_rows(args.cheats) if args.controls else undeclared_rows(args.undeclared)
        which = "controls" if args.controls else "undeclared"
        result = {"machine": machine(), **run_rows(rows, args.runs)}
        target = args.out or RESULTS_DIR / f"false_rejection-{which}.json"
        target.write_text(json.dumps(result, indent=2) + "\n")
        print(f"{result['false_rejections']} REJECTED over {result['runs']} runs; wrote {target}")
        return 0
    result = {"machine": machine(), **run(args)}
    name = f"false_rejection-{args.example}" + (f"-hog{args.hog}" if args.hog else "") + ".json"
    target = args.out or RESULTS_DIR / name
    target.write_text(json.dumps(result, indent=2) + "\n")
    print(f"{result['verdicts']} over {result['runs']} runs; wrote {target}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
