"""What a whole verification of the tiny demo costs, this tree against an older one.

    git worktree add /tmp/podium-before <older commit>
    python -m bench.verify_cost --before /tmp/podium-before --pairs 5
    python -m bench.verify_cost --before /tmp/podium-before --pairs 4 --boots 4

Each tree packages the sample submission with its own code, then the two trees'
``podium verify`` (the Docker sandbox, the tiny challenge, everything the demo runs)
alternate, ``--pairs`` times each, in one run on one machine: A, B, A, B... so a machine
that slows down for a while slows both. Reported: every wall time, the medians and the
ratio this/before, with both commits. The older tree runs with this tree's Python
environment, so only the code differs. Each run's report also gives its stages: the
seconds of each, the report's own wall time (``finished`` - ``started``), the reference
stage's share of it, the share of every stage the reference has (its load, its judging,
its stop), and the wall time over the evaluation plus the reference. ``--boots N`` also
times this tree's sandboxed engine alone, N times: from its start to its first ready
answer, with the verifier doing nothing else. That is the time the verifier's own work
during the boot (its tokenizer, its reference's load, the isolation probe) can hide in.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path
from typing import Any

from bench.common import REPO_ROOT, RESULTS_DIR, machine


def _sha(tree: Path) -> str:
    out = subprocess.run(
        ["git", "-C", str(tree), "rev-parse", "--short", "HEAD"], capture_output=True, text=True
    )
    return out.stdout.strip() or "unknown"


def _cli(tree: Path, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(tree)}
    return subprocess.run(
        [sys.executable, "-m", "podium.cli.app", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=1800,
    )


def _bundle(tree: Path, work: Path) -> Path:
    src = work / "src"
    shutil.copytree(
        tree / "examples" / "tiny-baseline",
        src,
        ignore=shutil.ignore_patterns("manifest.json", "engine-config.json"),
    )
    done = _cli(tree, "submission", "package", str(src), "-o", str(work / "dist"), cwd=work)
    bundles = sorted((work / "dist").glob("*.tar.gz"))
    if done.returncode != 0 or not bundles:
        raise SystemExit(f"packaging with {tree} failed: {done.stdout[-800:]}{done.stderr[-800:]}")
    return bundles[0]


def _verify(tree: Path, bundle: Path, out: Path) -> dict[str, Any]:
    t0 = time.perf_counter()
    done = _cli(
        tree, "verify", str(bundle), "--challenge", "tiny", "-o", str(out), "--json", cwd=out.parent
    )
    wall = time.perf_counter() - t0
    try:
        verdict = json.loads(done.stdout).get("verdict")
    except ValueError:
        verdict = f"no JSON (exit {done.returncode}): {done.stderr[-300:]}"
    return {"wall_s": wall, "verdict": verdict, **stages_of(out / "report.json")}


def stages_of(report_path: Path) -> dict[str, Any]:
    """A report's mean TPS and its trials ([tps, passes] each), its stages (seconds,
    summed per name), its own wall time, and the two ratios of the cost goals: the
    reference's share of the wall time, and the wall time over the evaluation plus the
    reference. Empty when there is no report."""
    try:
        report = json.loads(report_path.read_text())
    except (OSError, ValueError):
        return {}
    stages: dict[str, float] = {}
    for stage in report.get("stages") or []:
        stages[stage["name"]] = round(stages.get(stage["name"], 0.0) + stage["seconds"], 3)
    started, finished = (datetime.fromisoformat(report[k]) for k in ("started", "finished"))
    report_wall = (finished - started).total_seconds()
    judged = stages.get("evaluation", 0.0) + stages.get("reference", 0.0)
    reference_all = sum(stages.get(k, 0.0) for k in ("reference-load", "reference"))
    reference_all += stages.get("reference-engine", 0.0)
    tps = (report.get("metrics") or {}).get("tps") or {}
    return {
        "tps": tps.get("mean"),
        "trials": [[t["tps"], t["passes"]] for t in tps.get("trials") or []],
        "stages": stages,
        "report_wall_s": report_wall,
        "reference_share": stages.get("reference", 0.0) / report_wall if report_wall else None,
        "reference_stages_share": reference_all / report_wall if report_wall else None,
        "wall_over_evaluation_and_reference": report_wall / judged if judged else None,
    }


def engine_boot(bundle: Path) -> float:
    """Seconds from the sandboxed engine's start to its first ready answer, the verifier
    doing nothing else meanwhile (this tree's code, the tiny challenge)."""
    import asyncio

    from podium.errors import EngineError
    from schemas.challenge import load_challenge
    from verifier.harness.client import EngineClient
    from verifier.intake import intake
    from verifier.runners.local_docker import LocalDockerRunner
    from verifier.weights import pinned_model

    spec = load_challenge("tiny")
    work = Path(tempfile.mkdtemp(prefix="podium-boot-"))
    runner = LocalDockerRunner()
    try:
        opened = intake(bundle, work, spec)
        runner.prepare(opened, spec, on_log=lambda line: None)
        model = pinned_model(spec)
        t0 = time.perf_counter()
        handle = runner.start(spec, model_dir=model.path, gpu=False)

        async def ready() -> None:  # every 50 ms: the pipeline's own wait polls every 0.5 s
            async with EngineClient(handle.base_url, timeout_s=spec.limits.startup_s) as c:
                await c.wait_ready(spec.limits.startup_s, is_alive=handle.is_alive, poll_s=0.05)

        try:
            asyncio.run(ready())
        except EngineError as exc:
            raise SystemExit(f"the engine did not become ready: {exc}") from exc
        finally:
            seconds = time.perf_counter() - t0
            handle.stop()
        return seconds
    finally:
        runner.cleanup()
        shutil.rmtree(work, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.verify_cost", description=__doc__)
    parser.add_argument("--before", type=Path, required=True, help="a checkout of the older tree")
    parser.add_argument("--pairs", type=int, default=5)
    parser.add_argument(
        "--boots", type=int, default=0, help="also time this tree's engine boot, N times"
    )
    parser.add_argument("--out", type=Path, default=RESULTS_DIR / "verify_cost.json")
    args = parser.parse_args(argv)
    trees = {"before": args.before.resolve(), "this": REPO_ROOT}
    work = Path(tempfile.mkdtemp(prefix="podium-cost-"))
    bundles = {}
    for name, tree in trees.items():
        (work / name).mkdir()
        bundles[name] = _bundle(tree, work / name)
    runs: dict[str, list[dict[str, Any]]] = {"before": [], "this": []}
    for i in range(args.pairs):
        for name in ("before", "this"):
            row = _verify(trees[name], bundles[name], work / name / f"out-{i}")
            runs[name].append(row)
            print(name, json.dumps(row), flush=True)
    boots = [engine_boot(bundles["this"]) for _ in range(args.boots)]
    for seconds in boots:
        print("engine boot", json.dumps({"start_to_ready_s": seconds}), flush=True)
    shutil.rmtree(work, ignore_errors=True)
    med = {k: statistics.median(r["wall_s"] for r in v) for k, v in runs.items()}
    medians = {
        name: {
            key: statistics.median(r[key] for r in rows if r.get(key) is not None)
            for key in (
                "report_wall_s",
                "reference_share",
                "reference_stages_share",
                "wall_over_evaluation_and_reference",
            )
            if any(r.get(key) is not None for r in rows)
        }
        for name, rows in runs.items()
    }
    result = {
        "machine": machine(),
        "commits": {name: _sha(tree) for name, tree in trees.items()},
        "pairs": args.pairs,
        "runs": runs,
        "median_wall_s": med,
        "median_of_reports": medians,
        "engine_boot_s": boots,
        "ratio_this_over_before": med["this"] / med["before"],
    }
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    ratio = result["ratio_this_over_before"]
    print(f"median {med['before']:.1f} s -> {med['this']:.1f} s: x{ratio:.3f}")
    for name, values in medians.items():
        print(name, json.dumps({k: round(v, 3) for k, v in values.items()}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
