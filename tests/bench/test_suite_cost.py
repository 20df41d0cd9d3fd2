"""``bench.suite_cost`` reads each pytest pass from its JUnit file: wall time, the tests'
own times, and passed, failed (failures and errors) and skipped counts."""

from __future__ import annotations

from pathlib import Path

from bench.suite_cost import junit_pass

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
