"""What a sweep point costs on tiny, and what the sweep found against the default config.

``python -m bench.sweep_cost [--grid small|tutorial] [--baseline-every N]`` runs
``podium submission sweep examples/tiny-vllm`` (real vLLM in the Docker sandbox, the
organizers' pipeline on the public prompts for each point, the front once more on the
held-out set) as a participant runs it, keeps its printed output
(``bench/results/sweep_cost.txt``, what docs/submission.md shows), and reads its
``sweep.jsonl`` and ``answer.json`` back: the wall time of a point by kind of run
(baseline, point, held-out), the sweep's whole wall time, and the recommended config
beside the default (the directory's own config, measured between the points) in one run.
Needs Docker and podium/vllm-cpu (scripts/build-images.sh), and the sweep extra.
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
from pathlib import Path
from typing import Any

from bench.common import REPO_ROOT, RESULTS_DIR, machine, write_result

EXAMPLE = REPO_ROOT / "examples" / "tiny-vllm"
MTP3 = '{"method":"mtp","num_speculative_tokens":3}'
GRIDS = {
    # 2 x 3 configs, 5 points besides the default
    "tutorial": ["SLIDING_WINDOW=none,16,32", f"SPECULATIVE_CONFIG=none,{MTP3}"],
    # 2 points besides the default
    "small": ["SLIDING_WINDOW=none,16", f"SPECULATIVE_CONFIG=none,{MTP3}"],
}


def sweep_command(workdir: Path, grid: str, baseline_every: int) -> list[str]:
    knobs = [arg for k in GRIDS[grid] for arg in ("--knob", k)]
    return [
        sys.executable, "-m", "podium.cli.app", "submission", "sweep", "examples/tiny-vllm",
        *knobs, "--baseline-every", str(baseline_every), "-o", str(workdir / "sweep"),
    ]  # fmt: skip


def summarise(out: Path) -> dict[str, Any]:
    lines = [json.loads(x) for x in (out / "sweep.jsonl").read_text().splitlines() if x]
    runs = [x for x in lines if x.get("type") == "measurement"]
    answer = json.loads((out / "answer.json").read_text())
    cost: dict[str, Any] = {}
    for role in ("baseline", "point", "heldout"):
        secs = [r["seconds"] for r in runs if r["role"] == role]
        if secs:
            cost[role] = {
                "runs": len(secs),
                "median_s": round(statistics.median(secs), 1),
                "min_s": min(secs),
                "max_s": max(secs),
            }
    points = {p["point"]: p for p in answer["points"]}
    default = next((p for p in answer["points"] if not p["changes"]), None)
    best = points.get(answer["recommended"] or "")
    return {
        "cost": cost,
        "runs": [
            {k: r[k] for k in ("seq", "role", "changes", "verdict", "ppl", "tps", "failing")}
            | {"seconds": r["seconds"]}
            for r in runs
        ],
        "default": default,
        "recommended": best,
        "front": [points[p]["label"] for p in answer["front"]],
        "margin": answer["margin"],
        "limit": answer["limit"],
        "cap": answer["cap"],
        "drift": answer["drift"],
        "speedup_vs_default": best["rel"] if best else None,
    }


def run(
    grid: str = "tutorial",
    baseline_every: int = 2,
    keep: Path | None = None,
    out_dir: Path = RESULTS_DIR,
) -> dict:
    workdir = Path(tempfile.mkdtemp(prefix="podium-bench-sweep-"))
    try:
        cmd = sweep_command(workdir, grid, baseline_every)
        env = {**os.environ, "COLUMNS": "118"}
        started = time.perf_counter()
        done = subprocess.run(cmd, cwd=REPO_ROOT, capture_output=True, text=True, env=env)
        wall = time.perf_counter() - started
        transcript = done.stdout.replace(str(workdir), "out")
        out_dir.mkdir(parents=True, exist_ok=True)
        (out_dir / "sweep_cost.txt").write_text(transcript, encoding="utf-8")
        if done.returncode not in (0, 1):
            raise SystemExit(f"the sweep failed ({done.returncode}):\n{done.stderr[-3000:]}")
        result = summarise(workdir / "sweep")
        if keep is not None:
            shutil.copytree(workdir / "sweep", keep, dirs_exist_ok=True)
        shown = " ".join(c if " " not in c and "{" not in c else f"'{c}'" for c in cmd[3:])
        return {
            "command": "podium " + shown.replace(str(workdir), "out"),
            "exit_code": done.returncode,
            "wall_s": round(wall, 1),
            "grid": GRIDS[grid],
            "baseline_every": baseline_every,
            **result,
        }
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.sweep_cost", description=__doc__)
    parser.add_argument("--grid", choices=sorted(GRIDS), default="tutorial")
    parser.add_argument("--baseline-every", type=int, default=2)
    parser.add_argument("--keep", type=Path, help="copy the sweep's folder here")
    parser.add_argument("--out", type=Path, default=RESULTS_DIR, help="folder for the results")
    args = parser.parse_args(argv)
    before = machine()
    data = run(args.grid, args.baseline_every, args.keep, args.out)
    data = {"machine": before, "load_average_after": machine()["load_average"], **data}
    path = write_result("sweep_cost", data, args.out)
    print(f"wrote {path} ({data['wall_s']} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
