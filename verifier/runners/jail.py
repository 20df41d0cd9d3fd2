"""The ``jail`` runner: the engine in a sandbox the verifier makes itself, with no daemon.

For a GPU host without a Docker engine (a cluster node, a Jobs container). The jail is
made by Debian's ``bubblewrap`` (``bwrap``) from the kernel's own primitives: user,
network, mount, PID, IPC and UTS namespaces. It runs the bundle's baseline engine exactly
as the ``process`` runner reads it from the bundle (``verifier.runners.bundle_process``),
and inside the jail the engine has:

- no network but its own loopback: the harness reaches its listener from inside the
  jail's network namespace (``verifier.harness.netns``), and nothing of this host's
  network is there to reach;
- a read-only view of the system (``/usr``, ``/etc``), of the interpreter and its
  libraries, of the bundle and of the pinned weights (``/model``, ``/drafter``), with
  podium's own packages masked wherever a library folder holds them;
- a private tmpfs scratch of ``SCRATCH_BYTES`` at ``/tmp`` (its home in it);
- only the GPU's device nodes out of ``/dev`` (beside bwrap's minimal ``null``,
  ``zero``, ``random`` ...);
- nothing of the organizer: no held-out file, no key, no evidence folder is mounted; the
  verifier's processes are in another PID namespace; its environment is an allowlist;
- no capabilities, ``no_new_privs``, limits on processes, file size and (on the CPU)
  address space, and death with its parent. The jail's user is the verifier's, mapped to
  an unprivileged id in the jail's own user namespace, with no capability outside it.

The jail's first program is ``verifier.runners.jail_init``: the verifier's own probe,
run in the jail before the engine exists, which reports on a private pipe and then
becomes the engine. ``isolation`` adds what the verifier sees from outside (whether the
held-out files resolve inside the jail's root). A jail that cannot be made (no
``bwrap``, user namespaces refused) leaves this runner unsandboxed, naming the refused
primitive and the setting that would allow it: its runs are on the public set, unsigned.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import select
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from podium.errors import EngineError
from schemas.challenge import ChallengeSpec
from verifier.evidence import IsolationEvidence
from verifier.harness import netns
from verifier.runners import jail_cgroup, jail_init
from verifier.runners.base import EngineHandle, RunnerInfo
from verifier.runners.jail_plan import (
    BUNDLE,
    DEFAULT_PIDS,
    SCRATCH,
    JailPlan,
    jail_environment,
    jail_limits,
    plan_jail,
    refused,
)
from verifier.runners.process import ProcessRunner, tail

#: the port the engine serves on, on the jail's own loopback
PORT = 8000
#: what the probe tries to reach besides the runner's own listener
OUTSIDE = ("1.1.1.1:53", "8.8.8.8:443")
PROBE_TIMEOUT_S = 2.0
#: how long the runner waits for bwrap to report the jail made
MADE_WAIT_S = 30.0


def host_address() -> str | None:
    """This host's address on its default route (no packet is sent), or None."""
    with contextlib.suppress(OSError), socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.connect(("192.0.2.1", 9))
        return str(s.getsockname()[0])
    return None


def _preexec(limits: dict[str, int | None], parent: int, group: Path | None) -> Callable[[], None]:
    """Run in the child before bwrap: die with the verifier, and the jail's limits, which
    bwrap and everything under it inherit."""
    import ctypes
    import resource
    import signal

    prctl = ctypes.CDLL(None, use_errno=True).prctl
    names = {"nproc": resource.RLIMIT_NPROC, "fsize": resource.RLIMIT_FSIZE}
    names["as"] = resource.RLIMIT_AS
    names["core"] = resource.RLIMIT_CORE

    def preexec() -> None:
        prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
        if os.getppid() != parent:
            os._exit(1)
        for name, value in limits.items():
            if value is not None:
                resource.setrlimit(names[name], (value, value))
        if group is not None:
            jail_cgroup.enter(group)

    return preexec


class JailRunner(ProcessRunner):
    #: no image is built: the bundle's baseline engine runs on this host's interpreter
    info = RunnerInfo(name="jail", can_verify=True, sandboxed=True, rebuilds=False)
    #: the engine's port on the jail's own loopback
    port = PORT

    def __init__(self) -> None:
        super().__init__()
        self._jails: list[Jail] = []

    @classmethod
    def made(cls) -> JailRunner:
        """A jail runner whose jail this host can make; one that cannot is unsandboxed
        (``info``), its reason the primitive refused and the setting that would allow it."""
        runner = cls()
        reason = refused()
        if reason is not None:
            runner.info = RunnerInfo(
                name="jail", can_verify=False, sandboxed=False, rebuilds=False, reason=reason
            )
        return runner

    def environment(self) -> dict[str, Any]:
        return {}

    def start(
        self, spec: ChallengeSpec, *, model_dir: Path, gpu: bool, drafter_dir: Path | None = None
    ) -> EngineHandle:
        if not self.info.sandboxed:  # the jail cannot be made here: a plain process
            return super().start(spec, model_dir=model_dir, gpu=gpu, drafter_dir=drafter_dir)
        assert self.bundle is not None and self.engine_root is not None, "prepare() first"
        bundle_root = self.engine_root.parent
        plan = self.plan(spec, bundle=bundle_root, model=model_dir, drafter=drafter_dir, gpu=gpu)

        def inside(text: str) -> str:  # the bundle's files where the jail sees them
            return text.replace(str(bundle_root), BUNDLE)

        env = {"DEVICE": "cuda" if gpu else "cpu", **self.env}
        env.update({k: inside(v) for k, v in self.bundle.env.items()})
        env["SERVED_MODEL_NAME"] = self.served_model_name
        if drafter_dir is not None:
            env["DRAFTER_PATH"] = "/drafter"
        env = jail_environment(env, code=Path(BUNDLE) / "engine")
        cmd = [sys.executable, "-P", "-m", "engines.baseline"]
        cmd += [inside(a) for a in self.bundle.args]
        cmd += ["--model", "/model", "--host", "127.0.0.1", "--port", str(self.port)]
        jail = Jail(plan, env, cmd, self._logdir / f"jail-{len(self._jails)}.log", port=self.port)
        self._jails.append(jail)
        jail.open(limits=jail_limits(spec, gpu=gpu))
        return jail.handle()

    def plan(
        self, spec: ChallengeSpec, *, bundle: Path, model: Path, drafter: Path | None, gpu: bool
    ) -> JailPlan:
        """What the jail holds (``verifier.runners.jail_plan.plan_jail``)."""
        return plan_jail(spec, bundle=bundle, model=model, drafter=drafter, gpu=gpu)

    def isolation(self, handle: EngineHandle, *, forbidden_paths: list[Path]) -> IsolationEvidence:
        if not self.info.sandboxed:
            assert self.info.reason is not None
            return IsolationEvidence(no_sandbox=self.info.reason, facts={"runner": "jail"})
        jail = self._jails[-1]
        return IsolationEvidence(configuration=jail.describe(forbidden_paths), probe=jail.probe())

    def cleanup(self) -> None:
        for jail in self._jails:
            jail.close()
        self._jails.clear()
        super().cleanup()


def _read_line(fd: int, wait_s: float) -> dict[str, Any] | None:
    """One JSON line from ``fd`` within ``wait_s`` seconds (then it is closed); None at
    end of file, a ``TimeoutError`` when nothing came."""
    data = b""
    with os.fdopen(fd, "rb", buffering=0) as f:
        deadline = time.monotonic() + wait_s
        while not data.endswith(b"\n"):
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([f], [], [], left)[0]:
                raise TimeoutError("the jail's probe did not report in time")
            piece = f.read(1 << 16)
            if not piece:
                return None
            data += piece
    report: dict[str, Any] = json.loads(data)
    return report


class Jail:
    """One jailed program (the engine): bwrap, the probe's pipe, the route the harness
    takes to it. ``open`` makes the jail and returns once the probe inside reported;
    ``close`` kills all of it."""

    def __init__(
        self, plan: JailPlan, env: dict[str, str], cmd: list[str], log: Path, *, port: int = PORT
    ):
        self.plan, self.env, self.cmd, self.log, self.port = plan, env, cmd, log, port
        self.host = f"jail-{secrets.token_hex(4)}.podium.invalid"
        self.proc: subprocess.Popen[bytes] | None = None
        self.pid: int | None = None  # the jail's first process, seen from here
        self._report: dict[str, Any] | None = None
        self.group: Path | None = None  # the jail's pids cgroup, where one can be made

    def open(self, *, limits: dict[str, int | None]) -> None:
        self.group = jail_cgroup.make(limits.get("nproc") or DEFAULT_PIDS)
        listener = socket.create_server(("", 0), backlog=8)  # the probe must not reach it
        port = listener.getsockname()[1]
        targets = [*OUTSIDE, f"127.0.0.1:{port}"]
        if (address := host_address()) is not None:
            targets.append(f"{address}:{port}")
        report_r, report_w = os.pipe()
        info_r, info_w = os.pipe()
        config = {
            "targets": targets,
            "writes": self.plan.write_targets(),
            "scratch": SCRATCH,
            "home": self.env["HOME"],
            "timeout_s": PROBE_TIMEOUT_S,
        }
        init = [sys.executable, "-P", "-c", Path(jail_init.__file__).read_text(encoding="utf-8")]
        inner = [*init, str(report_w), json.dumps(config), "--", *self.cmd]
        argv = self.plan.bwrap(info_fd=info_w, keep_fd=report_w, inner=inner)
        with open(self.log, "wb") as log:
            self.proc = subprocess.Popen(
                argv,
                stdout=log,
                stderr=subprocess.STDOUT,
                env=self.env,
                cwd="/",
                pass_fds=(info_w, report_w),
                start_new_session=True,
                preexec_fn=_preexec(limits, os.getpid(), self.group),
            )
        os.close(info_w)
        os.close(report_w)
        try:
            with os.fdopen(info_r, "rb") as info:
                self.pid = int(json.loads(info.read())["child-pid"])
            # the jail is made once its first program, inside it, reports on it
            self._report = _read_line(report_r, MADE_WAIT_S)
        except (ValueError, KeyError, TimeoutError):
            self._report = None
        finally:
            listener.close()
        if self._report is None:
            self.close()
            raise EngineError(
                "bubblewrap could not make the jail: " + tail(self.log, 400).strip(),
                hint="run `bwrap --unshare-all --ro-bind / / true` to see what the kernel refuses",
            )
        netns.route(self.host, f"/proc/{self.pid}/ns/net")

    def probe(self) -> dict[str, Any] | None:
        return self._report

    def describe(self, forbidden: list[Path]) -> dict[str, Any]:
        """The jail as the verifier made it and sees it from outside: its plan, this
        process's namespaces (the jail's must differ), and whether each forbidden path
        resolves under the jail's root."""
        root = f"/proc/{self.pid}/root"
        alive = self.proc is not None and self.proc.poll() is None and os.path.isdir(root)
        seen = {str(p): os.path.lexists(f"{root}{p}") for p in forbidden} if alive else None
        return {
            "jail": {
                **self.plan.facts(),
                "host_namespaces": {
                    n: os.readlink(f"/proc/self/ns/{n}")
                    for n in ("user", "net", "pid", "mnt", "ipc")
                },
                "environment": sorted(self.env),
                "host_uid": os.geteuid(),
                "pids": jail_cgroup.facts(self.group, self.pid),
                "paths_seen": seen,
            }
        }

    def handle(self) -> EngineHandle:
        proc = self.proc
        assert proc is not None

        return EngineHandle(
            base_url=f"http://{self.host}:{self.port}",
            is_alive=lambda: proc.poll() is None,
            logs=lambda n: tail(self.log, n),
            stop=self.close,
            describe=lambda: {"runner": "jail", "pid": proc.pid, "command": self.cmd},
        )

    def close(self) -> None:
        """SIGKILL to bwrap's session: the jail's first process dies, and with it (the
        kernel's rule for a PID namespace) every process the engine left in the jail."""
        netns.unroute(self.host)
        proc = self.proc
        if proc is not None and proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, 9)
            proc.wait(timeout=10)
        for _ in range(50):  # the jail's processes go as its PID namespace is torn down
            jail_cgroup.remove(self.group)
            if self.group is None or not self.group.exists():
                break
            time.sleep(0.1)
