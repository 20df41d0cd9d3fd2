"""``integrity.isolation`` on a jail, judged on a synthetic plan and probe report: a
GPU container's read-only driver submount under ``/usr`` is the plan's own, a writable
one or an unplanned mount is not; the process limit holds by a pids cgroup, or by
``RLIMIT_NPROC`` only where the jail's host user is not root."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from schemas.challenge import load_challenge
from verifier.checks.base import CheckContext
from verifier.checks.isolation import isolation
from verifier.checks.isolation_jail import jail_problems
from verifier.evidence import IsolationEvidence

HOST_NS = {n: f"{n}:[1]" for n in ("user", "net", "pid", "mnt", "ipc")}
PLAN: dict[str, Any] = {
    "jail": {
        "tool": "bubblewrap",
        "binds": [
            {"source": "/usr", "point": "/usr", "mode": "ro"},
            {"source": "/etc", "point": "/etc", "mode": "ro"},
            {"source": "/srv/bundle", "point": "/bundle", "mode": "ro"},
            {"source": "/srv/model", "point": "/model", "mode": "ro"},
        ],
        "masks": [],
        "links": ["/bin"],
        "devices": ["/dev/nvidiactl"],
        "scratch": {"point": "/tmp", "bytes": 1 << 30},
        "shm": {"point": "/dev/shm", "bytes": 256 << 20},
        "gpu": True,
        "host_namespaces": HOST_NS,
        "environment": ["HOME", "PATH"],
        "host_uid": 0,
        "pids": {"cgroup": "/sys/fs/cgroup/podium-jail-1", "pids_max": "1024", "holds_jail": True},
        "paths_seen": {"/srv/heldout.jsonl": False},
    }
}


def _mount(point: str, kind: str = "none", mode: str = "ro") -> dict[str, str]:
    return {"point": point, "type": kind, "mode": mode}


PROBE: dict[str, Any] = {
    "interfaces": ["lo"],
    "egress": {"1.1.1.1:53": "OSError: unreachable"},
    "dns": "gaierror",
    "writes": {"/": False, "/usr": False, "/bundle": False},
    "scratch": {"point": "/tmp", "bytes": 1 << 30},
    "shm": {"point": "/dev/shm", "bytes": 256 << 20},
    "mounts": [
        _mount("/", "tmpfs"),
        _mount("/tmp", "tmpfs", "rw"),
        _mount("/usr", "overlay"),
        _mount("/etc", "overlay"),
        _mount("/bundle", "ext4"),
        _mount("/model", "ext4"),
        _mount("/dev", "tmpfs"),
        _mount("/dev/null", "devtmpfs", "rw"),
        _mount("/dev/nvidiactl", "devtmpfs", "rw"),
        _mount("/dev/shm", "tmpfs", "rw"),
        _mount("/proc", "proc", "rw"),
    ],
    "dev": ["null", "nvidiactl", "shm", "zero"],
    "status": {"Uid": ["1000"], "CapEff": "0000000000000000", "NoNewPrivs": "1"},
    "namespaces": {n: f"{n}:[2]" for n in HOST_NS},
    "limits": {"nproc": [1024, 1024], "fsize": [1 << 30, 1 << 30], "as": [-1, -1]},
    "pdeathsig": 9,
    "environment": ["HOME", "PATH"],
}


def _probe(*mounts: dict[str, str]) -> dict[str, Any]:
    probe = copy.deepcopy(PROBE)
    probe["mounts"] += list(mounts)
    return probe


@pytest.mark.quiet("integrity.isolation")
def test_the_synthetic_honest_jail_passes() -> None:
    ctx = CheckContext(load_challenge("tiny"), isolation=IsolationEvidence(PLAN, PROBE))
    outcome = isolation(ctx)
    assert outcome.result is not None and outcome.result.status == "pass", outcome.result
    assert not outcome.findings


@pytest.mark.quiet("integrity.isolation")
def test_a_read_only_driver_submount_under_usr_is_the_plans_own() -> None:
    probe = _probe(_mount("/usr/local/nvidia", "overlay"), _mount("/usr/local/nvidia"))
    assert jail_problems(PLAN, probe) == []


@pytest.mark.fires("integrity.isolation")
def test_a_writable_submount_under_usr_fails() -> None:
    probe = _probe(_mount("/usr/local/nvidia", "overlay", "rw"))
    assert jail_problems(PLAN, probe) == [
        "the jail has a mount the plan does not: /usr/local/nvidia"
    ]
    outcome = isolation(
        CheckContext(load_challenge("tiny"), isolation=IsolationEvidence(PLAN, probe))
    )
    assert outcome.result is not None and outcome.result.status == "fail"
    assert all(f.check_id == "integrity.isolation" for f in outcome.findings)


@pytest.mark.fires("integrity.isolation")
@pytest.mark.parametrize("point", ["/srv/heldout", "/opt/nvidia", "/usrx/lib", "/tmpdata"])
def test_an_unplanned_read_only_mount_elsewhere_fails(point: str) -> None:
    # /usrx is not under /usr; the root "/" and the scratch are no bind that brings submounts
    assert jail_problems(PLAN, _probe(_mount(point))) == [
        f"the jail has a mount the plan does not: {point}"
    ]


def test_a_read_only_mount_under_the_scratch_is_not_the_plans() -> None:
    assert jail_problems(PLAN, _probe(_mount("/tmp/keys"))) == [
        "the jail has a mount the plan does not: /tmp/keys"
    ]


def _unbounded(host_uid: int, nproc: int) -> dict[str, Any]:
    plan = copy.deepcopy(PLAN)
    plan["jail"].update(pids={"cgroup": None}, host_uid=host_uid)
    probe = copy.deepcopy(PROBE)
    probe["limits"]["nproc"] = [nproc, nproc]
    return {"plan": plan, "probe": probe}


@pytest.mark.quiet("integrity.isolation")
def test_without_a_cgroup_rlimit_nproc_holds_an_unprivileged_host_user() -> None:
    case = _unbounded(65534, 1024)
    assert jail_problems(case["plan"], case["probe"]) == []


@pytest.mark.fires("integrity.isolation")
@pytest.mark.parametrize(("host_uid", "nproc"), [(0, 1024), (65534, -1)])
def test_without_a_cgroup_root_or_no_rlimit_has_no_process_limit(host_uid: int, nproc: int) -> None:
    case = _unbounded(host_uid, nproc)
    assert jail_problems(case["plan"], case["probe"]) == [
        "the jail has no process limit (no pids cgroup holds it)"
    ]
