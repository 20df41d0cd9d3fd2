"""What a whole tiny verification costs now, side by side with an earlier commit.

    python -m bench.verify_cost --baseline d6aa555 --pairs 3     # bench/results/verify_cost.json

Each pair verifies the sample submission (``examples/tiny-baseline``, podium's engine and
test doubles carried) once with this tree and once with ``--baseline`` (a git worktree
of that commit made for the run), alternately, each in a fresh process: the engine as a
process under the sandbox stand-in (``tests/doubles/sandbox.py``, as
``calibration.calibrate`` runs it), the reference in the verifier's process, the tiny
challenge of each tree. The machine is shared and noisy, so the figure quoted is the
median of the per-pair ratios (this tree over the baseline), beside each stage's median
seconds; absolute times are this machine's only.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from bench.common import REPO_ROOT, RESULTS_DIR, machine, write_result

#: what each tree runs: one verification of the sample submission, timed in-process
PROBE = r"""
import json, sys, tempfile, time
from pathlib import Path
sys.path.insert(0, str(Path.cwd() / "tests"))
try:
    from calibration.rows import Row
    from calibration.run_row import verify_row
except ImportError:  # a tree from before calibration/calibrate.py was split
    from calibration.calibrate import Row, verify_row
with tempfile.TemporaryDirectory(prefix="podium-cost-") as tmp:
    t0 = time.perf_counter()
    done = verify_row(Row("baseline fp32", "honest"), Path(tmp))
    wall = time.perf_counter() - t0
report = done["report"]
stages = {}
for s in report["stages"]:
    stages[s["name"]] = stages.get(s["name"], 0.0) + s["seconds"]
print("COST " + json.dumps({"wall_s": wall, "verdict": report["verdict"], "stages": stages}))
"""


def _one(tree: Path) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, "-c", PROBE],
        cwd=tree,
        env={
            "PYTHONPATH": str(tree),
            "PATH": "/usr/bin:/bin",
            "OMP_NUM_THREADS": "1",
            "HF_HUB_OFFLINE": "1",
            "HOME": tempfile.gettempdir(),
        },
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    lines = [x for x in done.stdout.splitlines() if x.startswith("COST ")]
    if done.returncode or not lines:
        raise SystemExit(f"the verification in {tree} failed:\n{done.stderr[-2000:]}")
    out: dict[str, Any] = json.loads(lines[-1][5:])
    return out


def measure(baseline: str, pairs: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="podium-base-") as tmp:
        base = Path(tmp) / "tree"
        subprocess.run(
            ["git", "-C", str(REPO_ROOT), "worktree", "add", "--detach", str(base), baseline],
            check=True,
            capture_output=True,
        )
        try:
            rows: list[dict[str, Any]] = []
            for i in range(pairs):
                now, then = _one(REPO_ROOT), _one(base)
                rows.append({"pair": i, "now": now, "baseline": then})
                print(
                    f"pair {i}: now {now['wall_s']:.1f} s ({now['verdict']}), "
                    f"baseline {then['wall_s']:.1f} s ({then['verdict']})",
                    flush=True,
                )
        finally:
            subprocess.run(
                ["git", "-C", str(REPO_ROOT), "worktree", "remove", "--force", str(base)],
                check=False,
                capture_output=True,
            )
    ratios = [r["now"]["wall_s"] / r["baseline"]["wall_s"] for r in rows]
    names = sorted({n for r in rows for side in ("now", "baseline") for n in r[side]["stages"]})

    def stage(side: str, name: str) -> float:
        return statistics.median(r[side]["stages"].get(name, 0.0) for r in rows)

    return {
        "baseline": baseline,
        "pairs": rows,
        "ratio_median": statistics.median(ratios),
        "ratios": ratios,
        "stages_median_s": {
            name: {"now": stage("now", name), "baseline": stage("baseline", name)} for name in names
        },
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.verify_cost", description=__doc__)
    parser.add_argument("--baseline", default="d6aa555", help="the commit to compare with")
    parser.add_argument("--pairs", type=int, default=3)
    parser.add_argument("--out", type=Path, default=RESULTS_DIR)
    args = parser.parse_args(argv)
    before = machine()
    data = {"machine": before, **measure(args.baseline, args.pairs)}
    path = write_result("verify_cost", data, args.out)
    print(f"median ratio {data['ratio_median']:.3f} (now / {args.baseline}); wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
