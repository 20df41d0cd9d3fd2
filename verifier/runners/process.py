"""The ``process`` runner: the engine as a plain local process.

For participants' self-checks, for machines with no Docker engine (a GPU host an
organizer tries podium on), and for the verifier's own reference engine on a GPU
(``verifier.runners.reference_engine``). There is no sandbox, so a result from this runner is
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

It runs **only** the bundle's code, wherever the verifier was started: the engine starts
as ``python -P -m engines.baseline`` in a working directory of its own, with the bundle's
``engine/`` (podium's installed copy for the reference) first on ``PYTHONPATH``, so a
podium checkout the verifier happens to run in cannot shadow the bundle's ``engines``.
Its environment is built from an allowlist (``engine_environment``), never from
``os.environ``: the organizer's signing key, Hub token and own knobs stay out of it.

What it cannot do is keep the engine away from what the verifier's user can read: the
engine runs as that user. So the pipeline never gives it the held-out set (it runs on
the public one) and never signs its result (``RunnerInfo.sandboxed`` is False).
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
#: the folder that holds podium's own ``engines`` package (a checkout or site-packages)
PODIUM_ROOT = Path(__file__).resolve().parents[2]
#: the only variables of the verifier's environment an engine process gets: how this
#: machine finds its GPU driver and which GPUs it may use, nothing the operator chose
PLATFORM = ("LD_LIBRARY_PATH", "CUDA_VISIBLE_DEVICES", "NVIDIA_VISIBLE_DEVICES")
#: the system folders of an engine's ``PATH`` (after the interpreter's own)
MINIMAL_PATH = ("/usr/local/bin", "/usr/bin", "/bin")
#: what the runner sets itself and no declaration may replace
RUNNER_OWN = frozenset({"PATH", "HOME", "TMPDIR", "PYTHONPATH", "HF_HUB_OFFLINE"})


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


def engine_command() -> list[str]:
    """How an engine process starts: this interpreter, ``-P`` (neither the working
    directory nor the script's is put first on ``sys.path``), ``-m engines.baseline``
    resolved from ``PYTHONPATH``, on which ``engine_environment`` puts the code's root first."""
    return [sys.executable, "-P", "-m", "engines.baseline"]


def engine_environment(declared: dict[str, str], *, code: Path, home: Path) -> dict[str, str]:
    """The whole environment of an engine process, by allowlist: what the runner and the
    bundle declare (``declared``), the code's root first on ``PYTHONPATH`` (then the
    verifier's own absolute ``PYTHONPATH`` entries, where this machine keeps libraries),
    a ``HOME`` and a temporary folder of its own (created here, under ``home``), a minimal
    ``PATH`` that starts with this interpreter's folder, and of the verifier's own
    environment only the names in ``PLATFORM`` (how this machine reaches its GPU). Nothing
    else of the operator's shell reaches the engine: no signing key, no Hub token, no knob
    of theirs."""
    tmp = home / "tmp"
    tmp.mkdir(parents=True, exist_ok=True)
    env = {k: os.environ[k] for k in PLATFORM if k in os.environ}
    env.update(
        PATH=os.pathsep.join((str(Path(sys.executable).parent), *MINIMAL_PATH)),
        HOME=str(home),
        TMPDIR=str(tmp),
        HF_HOME=str(home / "huggingface"),
        HF_HUB_OFFLINE="1",
        LANG="C.UTF-8",
    )
    env.update({k: v for k, v in declared.items() if k not in RUNNER_OWN})
    # the code first, then where this interpreter was told to find its libraries (torch,
    # transformers): every module the code ships is its own, whatever follows it
    given = os.environ.get("PYTHONPATH", "").split(os.pathsep)
    env["PYTHONPATH"] = os.pathsep.join([str(code), *(p for p in given if os.path.isabs(p))])
    return env


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
    info = RunnerInfo(name="process", can_verify=False, sandboxed=False, rebuilds=False)

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
        root = self.engine_root or PODIUM_ROOT  # None: podium's own (the reference)
        # the device the pipeline decided is a default: a bundle's own DEVICE (its frozen
        # config or its environment) wins, as it does in the container
        env = {"DEVICE": "cuda" if gpu else "cpu", **self.env}
        if self.bundle is not None:
            env.update(self.bundle.env)
        if drafter_dir is not None:
            env["DRAFTER_PATH"] = str(drafter_dir)
        cmd = [*engine_command(), *(self.bundle.args if self.bundle is not None else [])]
        cmd += ["--model", str(model_dir), "--host", "127.0.0.1", "--port", str(port)]
        if self.bundle is not None:  # as the container has it: a frozen knob may rename it
            env["SERVED_MODEL_NAME"] = self.served_model_name
        else:
            cmd += ["--served-model-name", self.served_model_name]
        if self.device is not None:
            cmd += ["--device", self.device]
        if self.dtype is not None:
            cmd += ["--dtype", self.dtype]
        env = engine_environment(env, code=root, home=self._logdir / f"home-{port}")
        log = open(log_path, "wb")  # noqa: SIM115 - owned by the process for its lifetime
        proc = subprocess.Popen(
            cmd,
            cwd=env["HOME"],  # a directory of its own: nothing of where the verifier runs
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
