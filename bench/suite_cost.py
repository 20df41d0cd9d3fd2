"""What the test suite costs, as CI runs it: a fresh clone's ``.ci/run``, timed.

    python -m bench.suite_cost                 # clones HEAD, runs .ci/run, writes the result
    python -m bench.suite_cost --keep DIR      # and keeps the clone and its log in DIR
    python -m bench.suite_cost --commit REV --out DIR   # an earlier commit, side by side

The clone is of this checkout's HEAD (committed work only), run as CI runs it: ``CI=true
bash .ci/run`` from the clone's root, which installs and starts what it needs. The result
(``bench/results/suite_cost.json``) holds the wall time of the whole run, the wall time and
the sum of the tests' own times of each pytest pass (from its JUnit file), what the rest
of the run took (the venvs, the Docker engine and images, the browser, lint, the lowest
dependencies), the counts of passed, failed and skipped tests, the exit code, and where,
when and at which commit it ran. A failed run is recorded as failed; the command exits
with its code.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

from bench.common import REPO_ROOT, RESULTS_DIR, machine, write_result

#: the JUnit files ``make test`` writes under test-artifacts/, one a pytest pass
PASSES = {"parallel": "junit.xml", "serial": "junit-serial.xml"}


def junit_pass(path: Path) -> dict[str, Any] | None:
    """One pytest pass from its JUnit file: its wall time, the sum of its tests' own times,
    and its counts; None where the pass did not run."""
    if not path.is_file():
        return None
    root = ET.parse(path).getroot()
    suites = [root] if root.tag == "testsuite" else list(root.iter("testsuite"))
    cases = [c for s in suites for c in s.iter("testcase")]

    def count(tag: str) -> int:
        return sum(1 for c in cases if c.find(tag) is not None)

    failed = count("failure") + count("error")
    skipped = count("skipped")
    return {
        "wall_s": round(sum(float(s.get("time", 0)) for s in suites), 1),
        "tests_s": round(sum(float(c.get("time", 0)) for c in cases), 1),
        "passed": len(cases) - failed - skipped,
        "failed": failed,
        "skipped": skipped,
    }


def run_ci(clone: Path, log: Path) -> tuple[int, float]:
    """``.ci/run`` in ``clone`` as CI runs it; its exit code and wall seconds."""
    env = {**os.environ, "CI": "true"}
    t0 = time.monotonic()
    with log.open("w", encoding="utf-8") as out:
        done = subprocess.run(
            ["bash", ".ci/run"], cwd=clone, env=env, stdout=out, stderr=subprocess.STDOUT
        )
    return done.returncode, time.monotonic() - t0


def measure(work: Path, commit: str | None = None) -> dict[str, Any]:
    clone = work / "clone"
    subprocess.run(["git", "clone", "-q", str(REPO_ROOT), str(clone)], check=True)
    if commit is not None:
        subprocess.run(["git", "checkout", "-q", commit], cwd=clone, check=True)
    before = machine()
    code, wall = run_ci(clone, work / "ci.log")
    passes = {name: junit_pass(clone / "test-artifacts" / f) for name, f in PASSES.items()}
    pytest_wall = sum(p["wall_s"] for p in passes.values() if p)
    return {
        # the clone is of HEAD and clean, whatever the checkout it was made from holds
        "machine": {**before, "git_sha": _head(clone), "git_clean": True},
        "load_average_after": [round(x, 2) for x in os.getloadavg()],
        "exit_code": code,
        "wall_s": round(wall, 1),
        "passes": passes,
        "setup_s": round(wall - pytest_wall, 1),
        "command": "python -m bench.suite_cost" + (f" --commit {commit}" if commit else ""),
    }


def _head(clone: Path) -> str:
    done = subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=clone, capture_output=True, text=True, check=True
    )
    return done.stdout.strip()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.suite_cost", description=__doc__)
    parser.add_argument("--out", type=Path, default=RESULTS_DIR, help="folder of the result")
    parser.add_argument("--keep", type=Path, help="keep the clone and its log here")
    parser.add_argument("--commit", help="run this commit's suite instead of HEAD's")
    args = parser.parse_args(argv)
    if args.keep:
        args.keep.mkdir(parents=True, exist_ok=True)
        result = measure(args.keep, args.commit)
    else:
        with tempfile.TemporaryDirectory(prefix="podium-suite-") as tmp:
            result = measure(Path(tmp), args.commit)
    path = write_result("suite_cost", result, args.out)
    print(
        f"exit {result['exit_code']} after {result['wall_s']:.0f} s; written to {path}",
        file=sys.stderr,
    )
    return int(result["exit_code"])


if __name__ == "__main__":
    sys.exit(main())
