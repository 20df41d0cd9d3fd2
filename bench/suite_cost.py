"""What the test suite costs, as CI runs it: a fresh clone's ``.ci/run``, timed.

    python -m bench.suite_cost                    # clones HEAD, runs .ci/run, adds the run
    python -m bench.suite_cost --runs 3 --beside 600   # three in a row, each with a tiny
                                                  # verification looping beside it for 600 s
    python -m bench.suite_cost --keep DIR         # and keeps the clones and logs in DIR
    python -m bench.suite_cost --commit REV --out DIR   # an earlier commit, side by side

Each run clones this checkout's HEAD (committed work only) and runs it as CI does:
``CI=true bash .ci/run`` from the clone's root, which installs and starts what it needs.
A run records its wall time; each setup step's time and exit code (``scripts/test.sh``
writes them to ``test-artifacts/steps.jsonl``); the wall time, the sum of the tests' own
times and the counts of each pytest pass (from its JUnit file); the twenty slowest tests;
every failed test with the first line of its message, so that a flake is seen, not
forgotten; what ran beside it; the exit code; and where, when and at which commit it ran.
The results file (``bench/results/suite_cost.json``) keeps every run it was given, newest
last (``--reset`` starts it anew). The command exits with the last failed run's code.

``--beside SECONDS`` is the load CI must stand: from each run's start, the sample
submission is verified again and again (``podium verify --runner process`` on tiny, the
engine and the reference on this machine's cores) until SECONDS have passed.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

from bench.common import REPO_ROOT, RESULTS_DIR, machine, write_result

#: the JUnit files ``make test`` writes under test-artifacts/, one a pytest pass
PASSES = {"parallel": "junit.xml", "serial": "junit-serial.xml"}
#: how many of the slowest tests a run records
SLOWEST = 20


def _cases(path: Path) -> tuple[list[ET.Element], list[ET.Element]]:
    root = ET.parse(path).getroot()
    suites = [root] if root.tag == "testsuite" else list(root.iter("testsuite"))
    return suites, [c for s in suites for c in s.iter("testcase")]


def _test_id(case: ET.Element) -> str:
    """``tests/x/test_y.py::test_z`` from JUnit's dotted class name and the test's name."""
    parts = (case.get("classname") or "").split(".")
    for i in range(len(parts), 0, -1):  # the longest prefix that names a test file
        path = Path(*parts[:i]).with_suffix(".py")
        if path.name.startswith("test_") or i == 1:
            rest = parts[i:]
            return "::".join([path.as_posix(), *rest, case.get("name", "")])
    return case.get("name", "")


def junit_pass(path: Path) -> dict[str, Any] | None:
    """One pytest pass from its JUnit file: its wall time, the sum of its tests' own times,
    and its counts; None where the pass did not run."""
    if not path.is_file():
        return None
    suites, cases = _cases(path)

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


def junit_tests(paths: list[Path]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The ``SLOWEST`` slowest tests and every failed one, across the JUnit files given."""
    timed: list[dict[str, Any]] = []
    failures: list[dict[str, Any]] = []
    for path in paths:
        if not path.is_file():
            continue
        for case in _cases(path)[1]:
            test = _test_id(case)
            timed.append({"test": test, "s": round(float(case.get("time", 0)), 1)})
            bad = case.find("failure")
            if bad is None:
                bad = case.find("error")
            if bad is not None:
                message = (bad.get("message") or bad.text or "").strip().splitlines()
                failures.append({"test": test, "message": (message or [""])[0][:300]})
    timed.sort(key=lambda t: -t["s"])
    return timed[:SLOWEST], failures


def setup_steps(path: Path) -> list[dict[str, Any]]:
    """The steps ``scripts/test.sh`` timed, in the order they ended."""
    if not path.is_file():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


class Beside:
    """The sample submission verified again and again beside the suite, for ``seconds``."""

    def __init__(self, seconds: float, work: Path) -> None:
        self.seconds = seconds
        self.work = work
        self.runs: list[dict[str, Any]] = []
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()

    def _podium(self, *args: str) -> subprocess.CompletedProcess[str]:
        cmd = [sys.executable, "-m", "podium.cli.app", *args]
        return subprocess.run(cmd, cwd=REPO_ROOT, capture_output=True, text=True, check=False)

    def _loop(self, deadline: float) -> None:
        dist = self.work / "beside-dist"
        done = self._podium(
            "submission", "package", str(REPO_ROOT / "examples" / "tiny-baseline"),
            "--no-build", "-o", str(dist), "--json",
        )  # fmt: skip
        bundles = sorted(dist.glob("*.tar.gz"))
        if done.returncode != 0 or not bundles:
            self.runs.append({"verdict": "could not package", "rc": done.returncode})
            return
        while time.monotonic() < deadline and not self._stop.is_set():
            t0 = time.monotonic()
            out = self.work / f"beside-{len(self.runs)}"
            done = self._podium(
                "verify", str(bundles[0]), "-c", "tiny", "--runner", "process",
                "-o", str(out), "--json",
            )  # fmt: skip
            verdict = "?"
            with contextlib.suppress(ValueError, KeyError, TypeError):
                verdict = str(json.loads(done.stdout)["verdict"])
            self.runs.append(
                {"verdict": verdict, "rc": done.returncode, "s": round(time.monotonic() - t0, 1)}
            )

    def start(self) -> None:
        if self.seconds > 0:
            deadline = time.monotonic() + self.seconds
            self._thread = threading.Thread(target=self._loop, args=(deadline,), daemon=True)
            self._thread.start()

    def stop(self) -> dict[str, Any] | None:
        if self._thread is None:
            return None
        self._stop.set()
        self._thread.join()
        return {
            "command": "podium verify SAMPLE -c tiny --runner process, again and again",
            "seconds": self.seconds,
            "verifications": self.runs,
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


def measure(work: Path, commit: str | None = None, beside_s: float = 0.0) -> dict[str, Any]:
    clone = work / "clone"
    subprocess.run(["git", "clone", "-q", str(REPO_ROOT), str(clone)], check=True)
    if commit is not None:
        subprocess.run(["git", "checkout", "-q", commit], cwd=clone, check=True)
    before = machine()
    beside = Beside(beside_s, work)
    beside.start()
    code, wall = run_ci(clone, work / "ci.log")
    loaded = beside.stop()
    art = clone / "test-artifacts"
    passes = {name: junit_pass(art / f) for name, f in PASSES.items()}
    slowest, failures = junit_tests([art / f for f in PASSES.values()])
    pytest_wall = sum(p["wall_s"] for p in passes.values() if p)
    return {
        # the clone is of HEAD and clean, whatever the checkout it was made from holds
        "machine": {**before, "git_sha": _head(clone), "git_clean": True},
        "load_average_after": [round(x, 2) for x in os.getloadavg()],
        "exit_code": code,
        "wall_s": round(wall, 1),
        "passes": passes,
        "setup_s": round(wall - pytest_wall, 1),
        "steps": setup_steps(art / "steps.jsonl"),
        "slowest": slowest,
        "failures": failures,
        "beside": loaded,
        "command": "python -m bench.suite_cost"
        + (f" --commit {commit}" if commit else "")
        + (f" --beside {beside_s:g}" if beside_s else ""),
    }


def _head(clone: Path) -> str:
    done = subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=clone, capture_output=True, text=True, check=True
    )
    return done.stdout.strip()


def earlier_runs(path: Path) -> list[dict[str, Any]]:
    """The runs a results file holds (a file of one run, as older ones were, is one run)."""
    if not path.is_file():
        return []
    doc = json.loads(path.read_text(encoding="utf-8"))
    runs: list[dict[str, Any]] = doc.get("runs", [doc])
    return runs


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.suite_cost",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--out", type=Path, default=RESULTS_DIR, help="folder of the result")
    parser.add_argument("--keep", type=Path, help="keep the clones and their logs here")
    parser.add_argument("--commit", help="run this commit's suite instead of HEAD's")
    parser.add_argument("--runs", type=int, default=1, help="runs in a row (default 1)")
    parser.add_argument(
        "--beside", type=float, default=0.0, metavar="SECONDS",
        help="verify the sample again and again beside each run for its first SECONDS",
    )  # fmt: skip
    parser.add_argument("--reset", action="store_true", help="drop the runs recorded before")
    args = parser.parse_args(argv)
    path = args.out / "suite_cost.json"
    runs = [] if args.reset else earlier_runs(path)
    worst = 0
    for i in range(args.runs):
        if args.keep:
            work = args.keep / f"run-{i + 1}"
            work.mkdir(parents=True, exist_ok=True)
            result = measure(work, args.commit, args.beside)
        else:
            with tempfile.TemporaryDirectory(prefix="podium-suite-") as tmp:
                result = measure(Path(tmp), args.commit, args.beside)
        runs.append(result)
        path = write_result("suite_cost", {"runs": runs}, args.out)
        failed = ", ".join(f["test"] for f in result["failures"]) or "none"
        print(
            f"run {i + 1}: exit {result['exit_code']} after {result['wall_s']:.0f} s "
            f"(failed: {failed}); written to {path}",
            file=sys.stderr,
        )
        worst = worst or int(result["exit_code"])
    return worst


if __name__ == "__main__":
    sys.exit(main())
