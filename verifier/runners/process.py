"""The ``process`` runner: the engine as a plain local process.

For participants' self-checks, for machines with no Docker engine (a GPU host an
organizer tries podium on), and for the verifier's own reference engine on a GPU
(``verifier.runners.reference``). There is no sandbox, so a result from this runner is
never VERIFIED. It runs podium's baseline engine (``python -m engines.baseline``), from
the bundle's own copy of the engine code (``engine/`` in the bundle), or podium's shipped
copy when ``engine_root`` is None (the reference).

A bundle runs **as it declares**, as far as a process can run it, or not at all: the
process gets what the container would have (``verifier.runners.bundle_process``): the
frozen engine config (``ENGINE_CONFIG``, so ``SLIDING_WINDOW``, ``QUANTIZATION``,
``DTYPE``, ``DEVICE`` and ``MAX_MODEL_LEN`` take effect), the Dockerfile's ``ENV``, the
manifest's ``[engine.env]`` (``ENGINE_CLASS`` included), and the arguments of the
Dockerfile's ``CMD``. A bundle whose image does more than that (a ``RUN`` step, another
server) is refused at ``prepare``, naming what the process runner cannot run.
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

from schemas.challenge import ChallengeSpec
from verifier.evidence import IsolationEvidence
from verifier.intake import Intake
from verifier.runners.base import EngineHandle, ImageFacts, RunnerInfo
from verifier.runners.bundle_process import BundleProcess, bundle_process

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
        #: how the bundle's image would run its engine (None for the reference)
        self.bundle: BundleProcess | None = None

    def environment(self) -> dict[str, Any]:
        return {}

    def prepare(
        self, intake: Intake, spec: ChallengeSpec, *, on_log: Callable[[str], None]
    ) -> ImageFacts:
        assert intake.root is not None and intake.manifest is not None, "intake failed"
        self.bundle = bundle_process(intake.root, intake.manifest)
        self.engine_root = self.bundle.engine_root
        self.served_model_name = intake.manifest.engine.served_model_name or "model"
        declared = ", ".join(f"{k}={v}" for k, v in sorted(self.bundle.env.items()))
        on_log(f"process runner: engine code from {self.engine_root}; environment {declared}")
        return ImageFacts()

    def start(
        self, spec: ChallengeSpec, *, model_dir: Path, gpu: bool, drafter_dir: Path | None = None
    ) -> EngineHandle:
        port = free_port()
        log_path = self._logdir / f"engine-{port}.log"
        # the device the pipeline decided is a default: a bundle's own DEVICE (its frozen
        # config or its environment) wins, as it does in the container
        env = {**os.environ, "DEVICE": "cuda" if gpu else "cpu", "HF_HUB_OFFLINE": "1"}
        env.update(self.env)
        if self.bundle is not None:
            env.update(self.bundle.env)
        # the engine's code first, then whatever the verifier's own Python is given
        root = self.engine_root or Path(__file__).resolve().parents[2]  # None: podium's own
        env["PYTHONPATH"] = os.pathsep.join(
            p for p in (str(root), os.environ.get("PYTHONPATH", "")) if p
        )
        if drafter_dir is not None:
            env["DRAFTER_PATH"] = str(drafter_dir)
        cmd = [sys.executable, "-m", "engines.baseline"]
        cmd += self.bundle.args if self.bundle is not None else []
        cmd += ["--model", str(model_dir), "--host", "127.0.0.1", "--port", str(port)]
        if self.bundle is not None:  # as the container has it: a frozen knob may rename it
            env["SERVED_MODEL_NAME"] = self.served_model_name
        else:
            cmd += ["--served-model-name", self.served_model_name]
        if self.device is not None:
            cmd += ["--device", self.device]
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

    def isolation(self, handle: EngineHandle, *, forbidden_paths: list[Path]) -> IsolationEvidence:
        return IsolationEvidence(
            no_sandbox="a plain process has no sandbox: the result cannot be VERIFIED",
            facts={"runner": "process"},
        )

    def cleanup(self) -> None:
        for proc in self._procs:
            if proc.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=10)
        self._procs.clear()
