"""Shared test fixtures.

Every test runs with an isolated ``HF_HOME`` and ``XDG_CACHE_HOME``, no Hub token, no
proxy to the Hub, a fixed terminal width and no colour, so nothing leaks between tests
or from the machine.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

REPO_ROOT = Path(__file__).resolve().parent.parent


def pytest_configure(config: pytest.Config) -> None:
    """Under ``pytest -n N`` (``make test``), worker ``gwK`` runs on a core of its own when
    there are cores enough: its engines (processes inherit the affinity, containers get it
    from the runner, ``verifier.runners.local_docker.own_cores``) then never share a core
    with the other worker's, so neither's timed trials see the other's load."""
    worker = os.environ.get("PYTEST_XDIST_WORKER", "")
    count = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "0") or 0)
    if not worker.startswith("gw") or not hasattr(os, "sched_setaffinity"):
        return
    cores = sorted(os.sched_getaffinity(0))
    if 1 < count <= len(cores):
        share = len(cores) // count
        index = int(worker[2:])
        os.sched_setaffinity(0, cores[index * share : (index + 1) * share])


@pytest.fixture(autouse=True)
def isolated_env(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path_factory.mktemp("hf_home")
    monkeypatch.setenv("HF_HOME", str(home))
    # the leaderboard's memory of heads checked (leaderboard.seen), one per test
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path_factory.mktemp("xdg_cache")))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_DISABLE_TELEMETRY", "1")
    monkeypatch.setenv("HF_HUB_DISABLE_XET", "1")
    for var in ("HF_TOKEN", "HUGGING_FACE_HUB_TOKEN", "HF_ENDPOINT", "PODIUM_STORE"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("COLUMNS", "160")
    monkeypatch.setenv("NO_COLOR", "1")
    monkeypatch.setenv("TERM", "dumb")


def docker_available() -> bool:
    if shutil.which("docker") is None:
        return False
    try:
        return (
            subprocess.run(
                ["docker", "info"], capture_output=True, timeout=20, check=False
            ).returncode
            == 0
        )
    except (OSError, subprocess.TimeoutExpired):
        return False


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The heaviest files first, so that ``pytest -n 2 --dist loadfile`` (which hands out
    files in this order) starts the long ones at once and fills in with the short ones:
    files with a Docker test, then files with a slow one, then the rest; within each, the
    file with more such tests first. Then skip docker tests where no engine runs, unless
    PODIUM_REQUIRE_DOCKER=1 (CI)."""
    kind: dict[str, int] = {}
    heavy: dict[str, int] = {}
    for item in items:
        path = item.nodeid.split("::")[0]
        mark = 0 if "docker" in item.keywords else 1 if "slow" in item.keywords else 2
        kind[path] = min(mark, kind.get(path, 2))
        heavy[path] = heavy.get(path, 0) + (mark < 2)
    # a stable sort on whole files: each file's tests stay together, in their order
    items.sort(key=lambda item: (kind[p := item.nodeid.split("::")[0]], -heavy[p]))
    _skip_jail_tests_where_refused(items)
    if os.environ.get("PODIUM_REQUIRE_DOCKER") == "1":
        return
    if any("docker" in item.keywords for item in items) and not docker_available():
        skip = pytest.mark.skip(reason="no Docker engine running (PODIUM_REQUIRE_DOCKER unset)")
        for item in items:
            if "docker" in item.keywords:
                item.add_marker(skip)


def _skip_jail_tests_where_refused(items: list[pytest.Item]) -> None:
    """``jail`` tests need a jail this kernel allows: skipped where it is refused, unless
    PODIUM_REQUIRE_JAIL=1 (CI), where a refused jail stops the run, naming what refused."""
    if not any("jail" in item.keywords for item in items):
        return
    from verifier.runners.jail_plan import refused

    why = refused()
    if why is None:
        return
    if os.environ.get("PODIUM_REQUIRE_JAIL") == "1":
        raise pytest.UsageError(f"PODIUM_REQUIRE_JAIL=1, but no jail can be made here: {why}")
    skip = pytest.mark.skip(reason=f"no jail here: {why} (PODIUM_REQUIRE_JAIL unset)")
    for item in items:
        if "jail" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(scope="session")
def repo_root() -> Iterator[Path]:
    yield REPO_ROOT


@pytest.fixture(scope="module")
def cuda() -> Any:
    """torch, where a CUDA GPU answers; else the test is skipped (the GPU suite,
    ``bash bench/gpu.sh``)."""
    torch = pytest.importorskip("torch", reason="torch is not installed")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA GPU on this machine")
    return torch


@pytest.fixture
def gpu_out(tmp_path: Path) -> Path:
    """Where a GPU test leaves its results: ``$OUT`` (what a device run brings back), else
    the test's temporary folder."""
    return Path(os.environ["OUT"]) if os.environ.get("OUT") else tmp_path
