"""``bench.suite_cost`` reads each pytest pass from its JUnit file: wall time, the tests'
own times, and passed, failed (failures and errors) and skipped counts."""

from __future__ import annotations

from pathlib import Path

from bench.suite_cost import earlier_runs, junit_pass, junit_tests, setup_steps

JUNIT = """<?xml version="1.0" encoding="utf-8"?>
<testsuites><testsuite name="pytest" errors="1" failures="1" skipped="1" tests="5" time="12.5">
<testcase classname="a" name="ok1" time="3.0"/>
<testcase classname="a" name="ok2" time="4.0"/>
<testcase classname="a" name="bad" time="2.0"><failure message="x"/></testcase>
<testcase classname="a" name="broken" time="1.0"><error message="y"/></testcase>
<testcase classname="a" name="skip" time="0.0"><skipped message="z"/></testcase>
</testsuite></testsuites>
"""


def test_a_pass_is_read_from_its_junit_file(tmp_path: Path) -> None:
    path = tmp_path / "junit.xml"
    path.write_text(JUNIT, encoding="utf-8")
    assert junit_pass(path) == {
        "wall_s": 12.5,
        "tests_s": 10.0,
        "passed": 2,
        "failed": 2,
        "skipped": 1,
    }


def test_a_pass_that_did_not_run_is_none(tmp_path: Path) -> None:
    assert junit_pass(tmp_path / "junit-serial.xml") is None


def test_the_slowest_tests_and_every_failure_are_named_from_the_junit_files(
    tmp_path: Path,
) -> None:
    parallel = tmp_path / "junit.xml"
    parallel.write_text(JUNIT.replace('classname="a"', 'classname="tests.x.test_y"'))
    serial = tmp_path / "junit-serial.xml"
    serial.write_text(
        '<testsuites><testsuite time="9"><testcase classname="tests.test_z.TestK" '
        'name="t" time="8.5"><failure message="assert 1 == 2&#10;more"/></testcase>'
        "</testsuite></testsuites>"
    )
    slowest, failures = junit_tests([parallel, serial, tmp_path / "absent.xml"])
    assert [t["test"] for t in slowest[:3]] == [
        "tests/test_z.py::TestK::t",
        "tests/x/test_y.py::ok2",
        "tests/x/test_y.py::ok1",
    ]
    assert slowest[0]["s"] == 8.5
    assert failures == [
        {"test": "tests/x/test_y.py::bad", "message": "x"},
        {"test": "tests/x/test_y.py::broken", "message": "y"},
        {"test": "tests/test_z.py::TestK::t", "message": "assert 1 == 2"},
    ]


def test_the_setup_steps_are_read_in_the_order_they_ended(tmp_path: Path) -> None:
    path = tmp_path / "steps.jsonl"
    path.write_text('{"step": "packages", "s": 3.5, "rc": 0}\n{"step": "venv", "s": 60, "rc": 1}\n')
    assert [(s["step"], s["rc"]) for s in setup_steps(path)] == [("packages", 0), ("venv", 1)]
    assert setup_steps(tmp_path / "none.jsonl") == []


def test_a_results_file_of_one_run_reads_as_one_run(tmp_path: Path) -> None:
    path = tmp_path / "suite_cost.json"
    path.write_text('{"wall_s": 1.0, "exit_code": 0}')
    assert earlier_runs(path) == [{"wall_s": 1.0, "exit_code": 0}]
    path.write_text('{"runs": [{"wall_s": 1.0}, {"wall_s": 2.0}]}')
    assert [r["wall_s"] for r in earlier_runs(path)] == [1.0, 2.0]
    assert earlier_runs(tmp_path / "absent.json") == []
