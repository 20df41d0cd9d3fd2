"""``integrity.isolation`` reads the container's configuration and the in-container probe."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from schemas.challenge import load_challenge
from schemas.findings import Finding
from verifier.checks.base import CheckContext
from verifier.checks.isolation import isolation
from verifier.evidence import IsolationEvidence

CLOSED: dict[str, Any] = {
    "container": {
        "HostConfig": {
            "ReadonlyRootfs": True,
            "CapDrop": ["ALL"],
            "SecurityOpt": ["no-new-privileges"],
            "PortBindings": {},
            "Privileged": False,
        },
        "NetworkSettings": {"Networks": {"podium-sbx-1": {}}},
        "Mounts": [{"Type": "bind", "Source": "/srv/model", "Destination": "/model", "RW": False}],
    },
    "network": {"Name": "podium-sbx-1", "Internal": True},
}
PROBE = {
    "egress": {"1.1.1.1:53": "TimeoutError: timed out"},
    "dns": "gaierror",
    "paths": {"/data/heldout.jsonl": False},
    "root_writable": False,
}


def judge_isolation(
    desc: dict[str, Any], probe: dict[str, Any] | None
) -> tuple[str, str, dict[str, Any], list[Finding]]:
    ctx = CheckContext(load_challenge("tiny"), isolation=IsolationEvidence(desc, probe))
    outcome = isolation(ctx)
    assert outcome.result is not None and outcome.result.details is not None
    result = outcome.result
    return result.status, result.summary, result.details, outcome.findings


@pytest.mark.quiet("integrity.isolation")
def test_closed_sandbox_passes_with_probe_evidence() -> None:
    status, summary, details, findings = judge_isolation(CLOSED, PROBE)
    assert status == "pass" and not findings
    assert "probe" in summary and details["probe"] == PROBE


@pytest.mark.quiet("integrity.isolation")
def test_the_pinned_drafter_mounted_read_only_beside_the_model_passes() -> None:
    mounts = [
        *CLOSED["container"]["Mounts"],
        {"Type": "bind", "Source": "/srv/drafter", "Destination": "/drafter", "RW": False},
    ]
    status, _, details, _ = judge_isolation(_mutate(["container", "Mounts"], mounts), PROBE)
    assert status == "pass", details


def _mutate(path: list[str], value: Any) -> dict[str, Any]:
    desc = copy.deepcopy(CLOSED)
    node = desc
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    return desc


@pytest.mark.fires("integrity.isolation")
@pytest.mark.parametrize(
    ("path", "value", "words"),
    [
        (["network", "Internal"], False, "not internal"),
        (["container", "HostConfig", "ReadonlyRootfs"], False, "writable"),
        (["container", "HostConfig", "CapDrop"], ["NET_RAW"], "capabilities"),
        (["container", "HostConfig", "SecurityOpt"], [], "no-new-privileges"),
        (
            ["container", "HostConfig", "PortBindings"],
            {"8000/tcp": [{"HostPort": "8000"}]},
            "published",
        ),
        (
            ["container", "Mounts"],
            [{"Type": "bind", "Source": "/data", "Destination": "/data", "RW": False}],
            "unexpected mount",
        ),
        (
            ["container", "Mounts"],
            [{"Type": "bind", "Source": "/srv/drafter", "Destination": "/drafter", "RW": True}],
            "unexpected mount",
        ),
    ],
)
def test_each_configuration_hole_fails(path: list[str], value: Any, words: str) -> None:
    status, _, details, findings = judge_isolation(_mutate(path, value), PROBE)
    assert status == "fail"
    assert any(words in p for p in details["problems"])
    assert all(f.check_id == "integrity.isolation" for f in findings)


def test_probe_that_got_out_or_saw_heldout_fails() -> None:
    probe = {**PROBE, "egress": {"1.1.1.1:53": "connected"}, "paths": {"/data/heldout.jsonl": True}}
    status, _, details, _ = judge_isolation(CLOSED, probe)
    assert status == "fail"
    assert any("reached 1.1.1.1:53" in p for p in details["problems"])
    assert any("can see /data/heldout.jsonl" in p for p in details["problems"])


def test_without_python_in_the_image_it_says_configuration_only() -> None:
    status, summary, _, _ = judge_isolation(CLOSED, None)
    assert status == "pass" and "configuration only" in summary
