"""``calibration.gpu_verify --merge``: the rows of several device calls become one results file."""

from __future__ import annotations

import pytest

from calibration.gpu_run import tiny_cap
from calibration.gpu_verify import merge


def _doc(sha: str, command: str, *runs: tuple[str, str, int, bool]) -> dict[str, object]:
    return {
        "machine": {"git_sha": sha, "date": "2026-12-02T00:00:00Z"},
        "command": command,
        "wall_s": 1.0,
        "runs": [{"name": n, "kind": k, "run": i, "ok": ok} for n, k, i, ok in runs],
    }


def test_merge_gathers_every_call_and_a_later_run_replaces_the_same_run() -> None:
    first = _doc("abc", "--only fp32", ("fp32", "honest", 1, False), ("fp32", "honest", 2, True))
    second = _doc(
        "abc", "--only fp32,bf16", ("fp32", "honest", 1, True), ("bf16", "honest", 1, True)
    )
    doc = merge([first, second], "two calls")
    assert [(r["name"], r["run"], r["ok"]) for r in doc["runs"]] == [
        ("bf16", 1, True),
        ("fp32", 1, True),
        ("fp32", 2, True),
    ]
    assert [c["command"] for c in doc["calls"]] == ["--only fp32", "--only fp32,bf16"]
    assert doc["note"] == "two calls"


def test_merge_stamps_each_run_with_the_commit_its_call_measured() -> None:
    doc = merge(
        [
            _doc("abc", "x", ("fp32", "honest", 1, True)),
            _doc("def", "y", ("bf16", "honest", 1, True)),
        ],
        "",
    )
    assert {(r["name"], r["git_sha"]) for r in doc["runs"]} == {("fp32", "abc"), ("bf16", "def")}
    assert [c["git_sha"] for c in doc["calls"]] == ["abc", "def"]


def test_merge_refuses_a_file_that_names_no_commit() -> None:
    with pytest.raises(ValueError, match="names no commit"):
        merge([_doc("", "x")], "")


def _judged(kind: str, verdict: str, ppl: float, failing: list[str]) -> dict[str, object]:
    run = {"name": "row", "kind": kind, "run": 1, "ok": False, "verdict": verdict, "ppl": ppl}
    return {**run, "failure": None, "failing_checks": [{"id": f} for f in failing]}


def test_merge_judges_an_honest_approximation_over_the_cap_by_the_cap_alone() -> None:
    over = tiny_cap() * 1.3
    cases = [
        (_judged("honest", "REJECTED", over, ["ppl.cap"]), True),
        (_judged("honest", "REJECTED", over, ["ppl.cap", "integrity.same-path"]), False),
        (_judged("honest", "REJECTED", 23.4, ["integrity.same-path"]), False),
        (_judged("honest", "UNOFFICIAL", 23.4, []), True),
        (_judged("cheat", "UNOFFICIAL", 23.4, []), False),
        (_judged("cheat", "REJECTED", over, ["ppl.cap"]), True),
    ]
    for run, ok in cases:
        doc = {"machine": {"git_sha": "abc"}, "command": "x", "runs": [run]}
        assert merge([doc], "")["runs"][0]["ok"] is ok, run
