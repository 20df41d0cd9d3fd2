"""The jail runner's sandbox, made for real with bubblewrap (no Docker daemon).

- a hostile program (``tests/doubles/jail_escape.py``) run in the jail as an engine tries
  every way out, and gets nothing: no listener outside, no name, no planted key or
  held-out file, no harness environment, no ptrace, no write outside the scratch, no more
  scratch than its size, no more processes than the limit, no process left behind;
- the jail's own probe passes an honest jail, and catches a jail weakened on purpose (its
  network left open, a key mounted): ``integrity.isolation`` fails it;
- a jail the kernel refuses leaves the runner unsandboxed, naming what was refused.

One jail per module-scoped fixture: each takes about a second to make.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from schemas.challenge import load_challenge
from verifier.checks import registry
from verifier.checks.base import CheckContext
from verifier.evidence import IsolationEvidence
from verifier.runners.factory import make_runner
from verifier.runners.jail import Jail, JailRunner, host_address
from verifier.runners.jail_plan import JailPlan, jail_environment, plan_jail

SPEC = load_challenge("tiny")
DOUBLE = Path(__file__).resolve().parents[1] / "doubles" / "jail_escape.py"
MARKER = "harness-only-3c9e1f"
SCRATCH = 8 << 20
PIDS = 48
LIMITS: dict[str, int | None] = {"nproc": PIDS, "fsize": 64 << 20, "core": 0, "as": 4 << 30}

pytestmark = pytest.mark.jail


def _dirs(tmp: Path) -> Path:
    (tmp / "bundle" / "engine").mkdir(parents=True, exist_ok=True)
    (tmp / "model").mkdir(exist_ok=True)
    return tmp


def _plan(tmp: Path) -> JailPlan:
    _dirs(tmp)
    plan = plan_jail(SPEC, bundle=tmp / "bundle", model=tmp / "model", drafter=None, gpu=False)
    return dataclasses.replace(plan, scratch_bytes=SCRATCH)


def _jail(plan: JailPlan, tmp: Path, cmd: list[str]) -> Jail:
    env = jail_environment({}, code=Path("/bundle/engine"))
    jail = Jail(plan, env, cmd, tmp / "jail.log")
    jail.open(limits=LIMITS)
    return jail


def _lines(path: Path, wait_s: float) -> list[str]:
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline:
        text = path.read_text(encoding="utf-8", errors="replace")
        found = [line for line in text.splitlines() if line.startswith("{")]
        if found:
            return found
        time.sleep(0.2)
    raise AssertionError(f"no report from the jail: {path.read_text()[-2000:]}")


def _lingering(word: str) -> list[int]:
    pids = []
    for pid in (p for p in os.listdir("/proc") if p.isdigit()):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                if word.encode() in f.read():
                    pids.append(int(pid))
        except OSError:
            continue
    return pids


@pytest.fixture(scope="module")
def escape(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """What the hostile program got, and what was left of it after the jail closed."""
    tmp = tmp_path_factory.mktemp("escape")
    key, heldout = tmp / "key.pem", tmp / "heldout-prompts.jsonl"
    key.write_text("-----BEGIN PRIVATE KEY-----\nplanted\n")
    heldout.write_text('{"prompt": "held out"}\n')
    listener = socket.create_server(("", 0))
    port = listener.getsockname()[1]
    outside = [f"127.0.0.1:{port}"]
    if (address := host_address()) is not None:
        outside.append(f"{address}:{port}")
    plan = _plan(tmp)
    word = f"linger-{os.getpid()}-{time.monotonic_ns()}"
    config = {
        "outside": outside,
        "files": [str(key), str(heldout), str(Path(sys.prefix) / "pyvenv.cfg.key")],
        "harness_pid": os.getpid(),
        "marker": MARKER,
        "writes": ["/", "/model", "/bundle", "/usr", "/etc", "/dev", sys.prefix],
        "linger": word,
    }
    os.environ["PODIUM_SIGNING_KEY"] = MARKER  # the harness's own: the jail must not see it
    try:
        cmd = [sys.executable, "-c", DOUBLE.read_text(), json.dumps(config)]
        jail = _jail(plan, tmp, cmd)
        try:
            got = json.loads(_lines(tmp / "jail.log", 120)[-1])
            inside = _lingering(word)
        finally:
            jail.close()
        time.sleep(0.5)
        yield {
            "got": got,
            "outside": outside,
            "key": str(key),
            "heldout": str(heldout),
            "lingering_inside": inside,
            "left": _lingering(word),
        }
    finally:
        os.environ.pop("PODIUM_SIGNING_KEY", None)
        listener.close()


def test_a_hostile_engine_reaches_nothing_outside(escape: dict[str, Any]) -> None:
    got = escape["got"]
    assert got["outside"] == {t: False for t in escape["outside"]}
    assert got["dns"] is False


def test_a_hostile_engine_reads_nothing_of_the_organizer(escape: dict[str, Any]) -> None:
    got = escape["got"]
    assert got["files"][escape["key"]] is False
    assert got["files"][escape["heldout"]] is False
    assert got["harness_environ"] is False and got["any_environ"] is False
    assert got["ptrace"] is False


def test_a_hostile_engine_writes_only_its_bounded_scratch(escape: dict[str, Any]) -> None:
    got = escape["got"]
    assert not any(got["writes"].values()), got["writes"]
    assert 0 < got["scratch_bytes"] <= SCRATCH


def test_a_hostile_engine_cannot_fork_without_bound(escape: dict[str, Any]) -> None:
    assert 0 < escape["got"]["forks"] < PIDS, escape["got"]


def test_a_hostile_engine_leaves_no_process_behind(escape: dict[str, Any]) -> None:
    assert escape["lingering_inside"], "the double did not start its lingering process"
    assert escape["left"] == []


def _judged(plan: JailPlan, tmp: Path, forbidden: list[Path]) -> Any:
    jail = _jail(plan, tmp, [sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        evidence = IsolationEvidence(configuration=jail.describe(forbidden), probe=jail.probe())
    finally:
        jail.close()
    (outcome,) = registry.judge(registry.ISOLATION, CheckContext(SPEC, isolation=evidence))
    return outcome


@pytest.mark.quiet("integrity.isolation")
def test_the_probe_passes_an_honest_jail(tmp_path: Path) -> None:
    heldout = tmp_path / "heldout-prompts.jsonl"
    heldout.write_text("{}\n")
    outcome = _judged(_plan(tmp_path), tmp_path, [heldout])
    assert outcome.result.status == "pass", outcome.result.details.get("problems")
    assert outcome.result.details["probe"]["interfaces"] == ["lo"]


@pytest.mark.fires("integrity.isolation")
def test_the_probe_catches_a_jail_left_open_with_a_key_mounted(tmp_path: Path) -> None:
    key = tmp_path / "organizer.pem"
    key.write_text("-----BEGIN PRIVATE KEY-----\nplanted\n")
    plan = _plan(tmp_path)
    weak = dataclasses.replace(
        plan,
        namespaces=tuple(n for n in plan.namespaces if n != "--unshare-net"),
        extra=["--ro-bind", str(key), "/key.pem"],
    )
    outcome = _judged(weak, tmp_path, [])
    problems = " | ".join(outcome.result.details["problems"])
    assert outcome.result.status == "fail"
    assert "network interfaces" in problems and "reached 127.0.0.1" in problems
    assert "shares the verifier's net namespace" in problems
    assert "a mount the plan does not: /key.pem" in problems
    assert all(f.check_id == "integrity.isolation" for f in outcome.findings)


@pytest.mark.fires("integrity.isolation")
def test_the_probe_catches_held_out_files_in_the_jail(tmp_path: Path) -> None:
    # outside /tmp, which the jail's scratch covers: a folder bound where the host has it
    data = Path(tempfile.mkdtemp(prefix="podium-heldout-", dir="/var/tmp"))
    try:
        heldout = data / "heldout-prompts.jsonl"
        heldout.write_text("{}\n")
        weak = dataclasses.replace(_plan(tmp_path), extra=["--ro-bind", str(data), str(data)])
        outcome = _judged(weak, tmp_path, [heldout])
    finally:
        shutil.rmtree(data)
    assert outcome.result.status == "fail"
    assert f"the jail can see {heldout}" in outcome.result.details["problems"]


@pytest.mark.parametrize(
    ("said", "words"),
    [
        # as bwrap says it in a Docker container with the default seccomp profile
        (
            "bwrap: No permissions to create new namespace, likely because ...",
            "max_user_namespaces",
        ),
        # ... and with seccomp=unconfined, where the masked /proc remains
        ("bwrap: Can't mount proc on /newroot/proc: Operation not permitted", "systempaths"),
    ],
)
def test_a_refused_jail_is_unsandboxed_and_says_why(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, said: str, words: str
) -> None:
    fake = tmp_path / "bwrap"
    fake.write_text(f"#!/bin/sh\ncat >&2 <<'SAID'\n{said}\nSAID\nexit 1\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    runner = make_runner("jail")
    assert isinstance(runner, JailRunner)
    assert not runner.info.sandboxed and not runner.info.can_verify
    told = runner.info.unsandboxed()
    assert told is not None and said in told and words in told


def test_the_jail_dies_with_its_killed_verifier(tmp_path: Path) -> None:
    """The verifier SIGKILLed: bwrap gets the kernel's parent-death signal, the jail's
    first process follows it, and with it every process in the jail's PID namespace."""
    word = f"orphan-{os.getpid()}-{time.monotonic_ns()}"
    script = (
        "import sys, time\n"
        "from pathlib import Path\n"
        "from verifier.runners.jail import Jail\n"
        "from verifier.runners.jail_plan import jail_environment, plan_jail\n"
        "from schemas.challenge import load_challenge\n"
        "tmp = Path(sys.argv[1])\n"
        "plan = plan_jail(load_challenge('tiny'), bundle=tmp / 'bundle', model=tmp / 'model',"
        " drafter=None, gpu=False)\n"
        "env = jail_environment({}, code=Path('/bundle/engine'))\n"
        "cmd = [sys.executable, '-c', 'import time; time.sleep(600)', sys.argv[2]]\n"
        "Jail(plan, env, cmd, tmp / 'jail.log').open(limits={'nproc': 64})\n"
        "print('open', flush=True)\n"
        "time.sleep(600)\n"
    )
    (tmp_path / "bundle" / "engine").mkdir(parents=True)
    (tmp_path / "model").mkdir()
    parent = subprocess.Popen(
        [sys.executable, "-c", script, str(tmp_path), word], stdout=subprocess.PIPE, text=True
    )
    assert parent.stdout is not None
    assert parent.stdout.readline().strip() == "open"
    deadline = time.monotonic() + 10
    while not set(_lingering(word)) - {parent.pid} and time.monotonic() < deadline:
        time.sleep(0.1)
    assert set(_lingering(word)) - {parent.pid}, "the jailed program never started"
    parent.send_signal(signal.SIGKILL)
    parent.wait(timeout=10)
    deadline = time.monotonic() + 10
    while _lingering(word) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _lingering(word) == []


@pytest.mark.gpu
def test_cuda_computes_in_a_gpu_jail_whose_probe_passes_and_which_holds(tmp_path: Path) -> None:
    """On a GPU host: the jail with the GPU's device nodes passes its probe, CUDA computes
    inside it, and the hostile program's way out (a listener on the host) stays shut."""
    if not os.path.exists("/dev/nvidiactl"):
        pytest.skip("no NVIDIA device nodes here")
    plan = plan_jail(
        SPEC, bundle=_dirs(tmp_path) / "bundle", model=tmp_path / "model", drafter=None, gpu=True
    )
    assert plan.devices, "no GPU device node was planned"
    outcome = _judged(plan, tmp_path, [])
    assert outcome.result.status == "pass", outcome.result.details.get("problems")
    listener = socket.create_server(("", 0))
    port = listener.getsockname()[1]
    code = (
        "import socket, torch\n"
        "x = torch.ones(1024, device='cuda').sum().item()\n"
        "try:\n"
        f"    socket.create_connection(('127.0.0.1', {port}), timeout=2); out = 'escaped'\n"
        "except OSError:\n"
        "    out = 'shut'\n"
        "print('{' + f'\"sum\": {x}, \"host\": \"{out}\"' + '}', flush=True)\n"
        "import time; time.sleep(60)\n"
    )
    env = jail_environment({}, code=Path("/bundle/engine"))
    jail = Jail(plan, env, [sys.executable, "-c", code], tmp_path / "gpu.log")
    jail.open(limits={**LIMITS, "as": None, "nproc": 1024})
    try:
        got = json.loads(_lines(tmp_path / "gpu.log", 180)[-1])
    finally:
        jail.close()
        listener.close()
    assert got == {"sum": 1024.0, "host": "shut"}
