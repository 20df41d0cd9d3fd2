"""The ``process`` runner: the engine as a plain local process.

For participants' self-checks and for the verifier's own reference engine on a GPU
(``verifier.runners.reference``). There is no sandbox, so a result from this runner is
never VERIFIED. It runs engines of kind ``baseline`` from the bundle's own copy of the
engine code (``engine/`` in the bundle), or podium's shipped baseline engine when
``engine_root`` is None (the reference).
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from podium.errors import UsageError
from schemas.challenge import ChallengeSpec
from schemas.findings import Finding
from verifier.intake import Intake
from verifier.runners.base import EngineHandle, ImageFacts, RunnerInfo

PR_SET_PDEATHSIG = 1  # linux/prctl.h


def _dies_with_parent() -> Callable[[], None] | None:
    """A ``preexec_fn`` that has the kernel SIGKILL the engine when the process that
    started it dies (Linux's ``PR_SET_PDEATHSIG``): a verifier or a sweep killed mid-run
    (SIGKILL included) leaves no engine behind, although the engine runs in a session of
    its own. None where there is no such call."""
    if not sys.platform.startswith("linux"):
        return None
    import ctypes  # loaded here, in the parent: the child only calls it

    try:
        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None
    parent = os.getpid()

    def preexec() -> None:
        prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
        if os.getppid() != parent:  # the parent died before the call: follow it now
            os._exit(1)

    return preexec


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def tail(path: Path, n: int) -> str:
    try:
        data = path.read_bytes()
    except OSError:
        return ""
    return data[-n:].decode("utf-8", "replace")


class ProcessRunner:
    info = RunnerInfo(name="process", can_verify=False)

    def __init__(
        self,
        *,
        engine_root: Path | None = None,
        served_model_name: str = "model",
        env: dict[str, str] | None = None,
        device: str | None = None,
        dtype: str | None = None,
    ):
        """``device`` None follows the pipeline's GPU decision; ``dtype`` None: the engine's."""
        self.engine_root = engine_root
        self.served_model_name = served_model_name
        self.env = env or {}
        self.device = device
        self.dtype = dtype
        self._procs: list[subprocess.Popen[bytes]] = []
        self._logdir = Path(tempfile.mkdtemp(prefix="podium-engine-"))

    def environment(self) -> dict[str, Any]:
        return {}

    def prepare(
        self, intake: Intake, spec: ChallengeSpec, *, on_log: Callable[[str], None]
    ) -> ImageFacts:
        assert intake.root is not None, "intake failed"
        engine_dir = intake.root / "engine"
        if not (engine_dir / "engines" / "baseline").is_dir():
            raise UsageError(
                "the process runner runs baseline engines only, and this bundle has no "
                "engine/engines/baseline",
                hint="use --runner local-docker for vllm and custom engines",
            )
        self.engine_root = engine_dir
        on_log(f"process runner: engine code from {engine_dir}")
        return ImageFacts()

    def start(
        self, spec: ChallengeSpec, *, model_dir: Path, gpu: bool, drafter_dir: Path | None = None
    ) -> EngineHandle:
        port = free_port()
        log_path = self._logdir / f"engine-{port}.log"
        env = {**os.environ, **self.env}
        if self.engine_root is not None:
            env["PYTHONPATH"] = str(self.engine_root)
        else:  # podium's own shipped engine package
            env["PYTHONPATH"] = str(Path(__file__).resolve().parents[2])
        if drafter_dir is not None:
            env["DRAFTER_PATH"] = str(drafter_dir)
        cmd = [
            sys.executable,
            "-m",
            "engines.baseline",
            "--model",
            str(model_dir),
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--served-model-name",
            self.served_model_name,
            "--device",
            self.device or ("cuda" if gpu else "cpu"),
        ]
        if self.dtype is not None:
            cmd += ["--dtype", self.dtype]
        log = open(log_path, "wb")  # noqa: SIM115 - owned by the process for its lifetime
        proc = subprocess.Popen(
            cmd,
            stdout=log,
            stderr=subprocess.STDOUT,
            env=env,
            start_new_session=True,
            preexec_fn=_dies_with_parent(),  # one libc call in the child, no Python locks
        )
        log.close()
        self._procs.append(proc)

        def stop() -> None:
            # SIGKILL to the whole session at once: its answers and its log are recorded,
            # and a graceful stop only waits for the interpreter to tear torch down
            if proc.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=10)

        return EngineHandle(
            base_url=f"http://127.0.0.1:{port}",
            is_alive=lambda: proc.poll() is None,
            logs=lambda n: tail(log_path, n),
            stop=stop,
            describe=lambda: {"runner": "process", "pid": proc.pid, "command": cmd},
        )

    def isolation(
        self, handle: EngineHandle, *, forbidden_paths: list[Path]
    ) -> tuple[str, str, dict[str, Any], list[Finding]]:
        return (
            "skip",
            "a plain process has no sandbox: the result cannot be VERIFIED",
            {"runner": "process"},
            [],
        )

    def cleanup(self) -> None:
        for proc in self._procs:
            if proc.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=10)
        self._procs.clear()
