"""What every benchmark shares: engine processes, the machine's description, result files.

Engines always run as separate processes (never threads of the benchmark), so the CPU
time the harness spends is its own and the engine's work does not hide inside it.
"""

from __future__ import annotations

import contextlib
import importlib
import json
import multiprocessing
import os
import platform
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import httpx

from podium.timestamps import now_iso

REPO_ROOT = Path(__file__).resolve().parents[1]
RESULTS_DIR = REPO_ROOT / "bench" / "results"
IMG_DIR = REPO_ROOT / "docs" / "img"
DATA = REPO_ROOT / "podium" / "data"
#: the test doubles (cheating engines, the sandbox stand-in): a package of the tests, outside
#: the wheel; a bundle carries it as ``engine/doubles/``
DOUBLES_DIR = REPO_ROOT / "tests" / "doubles"


def import_doubles() -> ModuleType:
    """The tests' ``doubles`` package, importable by that name as it is in the tests
    (pytest's ``pythonpath``) and in an engine bundle: the one place a benchmark puts the
    tests' folder on ``sys.path`` (last, so it shadows nothing)."""
    tests = str(DOUBLES_DIR.parent)
    if tests not in sys.path:
        sys.path.append(tests)
    return importlib.import_module("doubles")


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _cpu_model() -> str:
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return platform.processor() or "unknown"


def _git_sha() -> str | None:
    """The commit measured; ``$PODIUM_GIT_SHA`` wins where it is set (a copy of the tree
    made elsewhere may carry no git, or another checkout's)."""
    if os.environ.get("PODIUM_GIT_SHA"):
        return os.environ["PODIUM_GIT_SHA"]
    with contextlib.suppress(OSError, subprocess.CalledProcessError):
        out = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"],
            cwd=REPO_ROOT,
            capture_output=True,
            text=True,
            check=True,
        )
        return out.stdout.strip() or None
    return os.environ.get("PODIUM_GIT_SHA") or None


#: what the benchmarks themselves write: a run that wrote one part's result is still clean
OUTPUTS = ("bench/results/", "calibration/results/", "docs/img/bench-")


def _git_clean() -> bool | None:
    """True when the working tree had no change (tracked or untracked) against the commit,
    apart from the benchmarks' own outputs; ``$PODIUM_GIT_CLEAN`` (1 or 0) wins where set."""
    flag = os.environ.get("PODIUM_GIT_CLEAN")
    if flag in ("0", "1"):
        return flag == "1"
    with contextlib.suppress(OSError, subprocess.CalledProcessError):
        out = subprocess.run(
            ["git", "status", "--porcelain"],
            cwd=REPO_ROOT,
            capture_output=True,
            text=True,
            check=True,
        )
        changed = [line[3:] for line in out.stdout.splitlines() if line.strip()]
        return not [p for p in changed if not p.startswith(OUTPUTS)]
    return None


def machine() -> dict[str, Any]:
    """Where and when a result was measured, at which commit, and whether the tree was
    clean there; the load average says how shared the CPU was."""
    return {
        "date": now_iso(),
        "cpu": _cpu_model(),
        "cores": os.cpu_count(),
        "load_average": [round(x, 2) for x in os.getloadavg()],
        "python": platform.python_version(),
        "platform": platform.platform(),
        "git_sha": _git_sha(),
        "git_clean": _git_clean(),
    }


def write_result(name: str, data: dict[str, Any], out_dir: Path = RESULTS_DIR) -> Path:
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / f"{name}.json"
    path.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    return path


def cpu_model_dir() -> Path:
    """The small model the CPU benchmarks serve: the shipped tiny model, else the dev one."""
    tiny = DATA / "tiny" / "model"
    return tiny if (tiny / "config.json").is_file() else DATA / "devtest" / "model"


def cpu_prompts(n: int = 8) -> list[dict[str, Any]]:
    """Text prompts for the chat endpoint: the tiny challenge's public ones when shipped."""
    public = DATA / "tiny" / "public-prompts.jsonl"
    if public.is_file():
        rows = [json.loads(line) for line in public.read_text().splitlines() if line.strip()]
        return rows[:n]
    words = ["the", "quick", "brown", "fox", "jumps", "over", "a", "lazy", "dog", "while"]
    return [
        {"id": f"bench-{i}", "prompt": " ".join(words[(i + j) % len(words)] for j in range(12 + i))}
        for i in range(n)
    ]


@dataclass
class EngineProcess:
    """A running engine process and its log; stop it with ``stop()`` (SIGTERM, then KILL)."""

    proc: subprocess.Popen[bytes]
    url: str
    log: Path

    def alive(self) -> bool:
        return self.proc.poll() is None

    def log_tail(self, n: int = 2000) -> str:
        with contextlib.suppress(OSError):
            return self.log.read_bytes()[-n:].decode("utf-8", "replace")
        return ""

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=15)


def start_engine(
    args: Sequence[str],
    *,
    port: int,
    ready_timeout_s: float = 120.0,
    env: dict[str, str] | None = None,
    python: str = sys.executable,
) -> EngineProcess:
    """Start ``python ARGS`` and wait until ``GET /health`` answers on ``port``."""
    log = Path(tempfile.mkstemp(prefix="bench-engine-", suffix=".log")[1])
    full_env = {**os.environ, "HF_HUB_OFFLINE": "1", **(env or {})}
    with log.open("wb") as fh:
        proc = subprocess.Popen(
            [python, *args], cwd=REPO_ROOT, stdout=fh, stderr=subprocess.STDOUT, env=full_env
        )
    engine = EngineProcess(proc, f"http://127.0.0.1:{port}", log)
    deadline = time.monotonic() + ready_timeout_s
    while time.monotonic() < deadline:
        if not engine.alive():
            raise RuntimeError(f"the engine exited while starting:\n{engine.log_tail()}")
        with contextlib.suppress(httpx.HTTPError):
            if httpx.get(engine.url + "/health", timeout=2.0, trust_env=False).is_success:
                return engine
        time.sleep(0.2)
    engine.stop()
    raise RuntimeError(
        f"the engine was not ready within {ready_timeout_s:g} s:\n{engine.log_tail()}"
    )


@contextlib.contextmanager
def paced_engine(rate: float) -> Iterator[EngineProcess]:
    """``bench.paced_engine`` answering at ``rate`` tokens/s per request (0: at once)."""
    port = free_port()
    engine = start_engine(
        ["-m", "bench.paced_engine", "--rate", str(rate), "--port", str(port)], port=port
    )
    try:
        yield engine
    finally:
        engine.stop()


@contextlib.contextmanager
def baseline_engine(
    model: Path, *, served_name: str = "bench", max_model_len: int = 1024, threads: int = 1
) -> Iterator[EngineProcess]:
    """podium's baseline engine on the CPU, float32, as a separate process.

    One torch thread by default: the model is small enough that a second thread buys
    little, and on a shared machine idle OpenMP threads spinning for work make the
    engine's speed depend on everything else that runs.
    """
    port = free_port()
    engine = start_engine(
        [
            "-m",
            "engines.baseline",
            "--model",
            str(model),
            "--port",
            str(port),
            "--served-model-name",
            served_name,
            "--max-model-len",
            str(max_model_len),
        ],
        port=port,
        env={"OMP_NUM_THREADS": str(threads), "MKL_NUM_THREADS": str(threads)},
    )
    try:
        yield engine
    finally:
        engine.stop()


def _busy(stop: Any, origin: float, phase_s: float) -> None:
    # a session of its own, as another user's job has: the kernel shares the CPU between
    # sessions first (autogroup), so a busy child of the benchmark would barely touch an
    # engine that runs in a session of its own
    os.setsid()
    while not stop.is_set():
        # every neighbour keeps the same clock: all busy, then all idle, phase_s each
        turn, into = divmod(time.monotonic() - origin, phase_s)
        end = time.monotonic() + phase_s - into
        if int(turn) % 2 == 0:
            while time.monotonic() < end and not stop.is_set():
                pass
        else:
            stop.wait(end - time.monotonic())


@contextlib.contextmanager
def busy_neighbours(count: int, phase_s: float) -> Iterator[None]:
    """``count`` processes that spin for ``phase_s`` and idle for ``phase_s``, together,
    each in a session of its own: other users' jobs coming and going on the machine."""
    stop = multiprocessing.Event()
    origin = time.monotonic()
    procs = [
        multiprocessing.Process(target=_busy, args=(stop, origin, phase_s)) for _ in range(count)
    ]
    for proc in procs:
        proc.start()
    try:
        yield
    finally:
        stop.set()
        for proc in procs:
            proc.join()
