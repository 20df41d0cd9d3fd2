"""What a jail holds, decided before it is made: the plan the jail runner hands to bwrap.

``plan_jail`` lists what the engine may see (each read-only: the system, the interpreter
and its libraries, the bundle, the pinned weights and drafter), what is masked (podium's
own packages, wherever a library folder holds them: a wheel of podium carries the
challenges' data), the GPU device nodes, the scratch's size and the user. ``JailPlan.bwrap``
writes it as bwrap's command line; ``JailPlan.facts`` is the same plan as evidence, which
``verifier.checks.isolation_jail`` holds the jail's own report against. ``refused`` tries
the primitives once and names what the kernel refused.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
import sysconfig
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from schemas.challenge import ChallengeSpec
from verifier.runners.process import MINIMAL_PATH, PLATFORM, RUNNER_OWN

#: the jail's scratch: a private tmpfs, the only place it can write
SCRATCH = "/tmp"
SCRATCH_BYTES = 1 << 30
#: the shared-memory scratch (torch's and vLLM's worker processes need one)
SHM_BYTES = 256 << 20
#: where the bundle is seen in the jail
BUNDLE = "/bundle"
#: the GPU's device nodes, passed in where this host has them (nothing else of /dev)
GPU_NODES = (
    "/dev/nvidia0",
    "/dev/nvidiactl",
    "/dev/nvidia-uvm",
    "/dev/nvidia-uvm-tools",
    "/dev/nvidia-caps",
)
#: the system's folders, read-only (each a folder or a symlink into /usr)
SYSTEM = ("/usr", "/etc", "/bin", "/sbin", "/lib", "/lib64", "/lib32", "/libx32")
#: podium's own packages: masked wherever a folder bound into the jail holds them
OWN_PACKAGES = ("podium", "verifier", "schemas", "leaderboard", "submission", "calibration")
#: the namespaces bwrap unshares; ``--unshare-cgroup-try`` adds the cgroup one where allowed
NAMESPACES = ("--unshare-user", "--unshare-net", "--unshare-pid", "--unshare-ipc", "--unshare-uts")
#: file size (bytes) and processes when the challenge does not set ``limits.pids``
FSIZE_BYTES = 1 << 30
DEFAULT_PIDS = 1024
#: how the refusal of each primitive reads in bwrap's words, and the setting that allows it
SETTINGS = (
    (
        "namespace",
        "user namespaces: set `sysctl -w user.max_user_namespaces=15000` (and, on Ubuntu, "
        "`kernel.apparmor_restrict_unprivileged_userns=0`); in a Docker container, whose "
        "default seccomp profile refuses them: `--security-opt seccomp=unconfined`",
    ),
    (
        "uid map",
        "user namespaces with an id map: allow unprivileged user namespaces "
        "(`sysctl -w kernel.unprivileged_userns_clone=1`)",
    ),
    ("loopback", "network namespaces: allow CAP_NET_ADMIN inside a user namespace"),
    (
        "mount proc",
        "a fresh /proc for the jail's PID namespace: a container's masked /proc paths forbid "
        "it (Docker: `--security-opt systempaths=unconfined`)",
    ),
    (
        "mount",
        "mounts inside a user namespace: a container's seccomp or AppArmor profile forbids "
        "them (Docker: `--security-opt seccomp=unconfined --security-opt apparmor=unconfined`)",
    ),
)


def _python_roots() -> list[str]:
    """The interpreter's folders: its install, its virtualenv, its library folders, the
    ``LD_LIBRARY_PATH`` folders, and the absolute ``PYTHONPATH`` entries that hold no
    podium package (a podium checkout on the path holds the challenges' data, and the
    engine does not need podium)."""
    roots = {sys.base_prefix, sys.prefix, *sysconfig.get_paths().values()}
    roots |= {str(Path(sys.executable).parent), os.path.realpath(sys.executable)}
    roots |= set(_library_path("PYTHONPATH"))
    # where the platform's shared libraries are (the GPU driver's, on some hosts)
    roots |= set(_library_path("LD_LIBRARY_PATH"))
    return _outermost(
        r for r in roots if os.path.exists(r) and not r.startswith(("/usr/", "/etc/"))
    )


def _library_path(name: str = "PYTHONPATH") -> list[str]:
    """The absolute entries of the verifier's ``name`` (a path list) that hold none of
    podium's packages."""
    return [
        entry
        for entry in os.environ.get(name, "").split(os.pathsep)
        if os.path.isabs(entry) and not any((Path(entry) / p).is_dir() for p in OWN_PACKAGES)
    ]


def _outermost(paths: Any) -> list[str]:
    kept: list[str] = []
    for p in sorted({os.path.realpath(p) if os.path.isfile(p) else p for p in paths}):
        if not any(p == k or p.startswith(k.rstrip("/") + "/") for k in kept):
            kept.append(p)
    return kept


def _masks(roots: list[str]) -> list[str]:
    """podium's own package folders that lie under a bound root."""
    masks = []
    for name in OWN_PACKAGES:
        found = importlib.util.find_spec(name)
        for folder in (found.submodule_search_locations or []) if found else []:
            if any(folder.startswith(r.rstrip("/") + "/") for r in roots):
                masks.append(folder)
    return sorted(set(masks))


@dataclass(frozen=True)
class JailPlan:
    #: (host path, jail path), each bound read-only
    binds: list[tuple[str, str]]
    #: folders hidden under an empty read-only tmpfs
    masks: list[str]
    #: symlinks the jail gets in place of a host folder that is one (``/bin`` -> ``usr/bin``)
    links: list[tuple[str, str]]
    devices: list[str]
    scratch_bytes: int
    gpu: bool
    namespaces: tuple[str, ...] = NAMESPACES
    #: nothing in a real plan; a test's weakened jail adds bwrap arguments here
    extra: list[str] = field(default_factory=list)

    def bwrap(self, *, info_fd: int, keep_fd: int, inner: list[str]) -> list[str]:
        """bwrap's command line for this plan, ``inner`` its command. ``keep_fd`` is left
        open for ``inner`` (bwrap passes inherited descriptors on)."""
        argv = [bwrap_path(), "--die-with-parent", "--new-session", *self.namespaces]
        argv += ["--unshare-cgroup-try", "--hostname", "jail", "--cap-drop", "ALL"]
        argv += ["--uid", "1000", "--gid", "1000"]
        # the scratch first: a library folder under /tmp (wheels a GPU host was given)
        # is then bound over it, read-only, rather than hidden under it
        argv += ["--size", str(self.scratch_bytes), "--perms", "1777", "--tmpfs", SCRATCH]
        for target, link in self.links:
            argv += ["--symlink", target, link]
        for source, dest in self.binds:
            argv += ["--ro-bind", source, dest]
        argv += self.extra
        for folder in self.masks:
            argv += ["--perms", "0555", "--tmpfs", folder, "--remount-ro", folder]
        argv += ["--dev", "/dev"]
        for node in self.devices:
            argv += ["--dev-bind", node, node]
        argv += ["--size", str(SHM_BYTES), "--perms", "1777", "--tmpfs", "/dev/shm"]
        argv += ["--proc", "/proc", "--remount-ro", "/dev", "--remount-ro", "/"]
        argv += ["--chdir", SCRATCH, "--info-fd", str(info_fd)]
        del keep_fd  # documented: bwrap does not close what it inherits
        return [*argv, "--", *inner]

    def write_targets(self) -> list[str]:
        """Folders the probe tries to write in: the root and every bound one."""
        return ["/", "/dev", *(dest for _, dest in self.binds), *self.masks]

    def facts(self) -> dict[str, Any]:
        return {
            "tool": "bubblewrap",
            "binds": [{"source": s, "point": d, "mode": "ro"} for s, d in self.binds],
            "masks": self.masks,
            "links": [link for _, link in self.links],
            "devices": self.devices,
            "scratch": {"point": SCRATCH, "bytes": self.scratch_bytes},
            "shm": {"point": "/dev/shm", "bytes": SHM_BYTES},
            "gpu": self.gpu,
        }


def bwrap_path() -> str:
    """``$PODIUM_BWRAP`` (a bwrap unpacked from Debian's package where none is installed),
    else the ``bwrap`` on ``PATH``."""
    return os.environ.get("PODIUM_BWRAP") or shutil.which("bwrap") or "bwrap"


def plan_jail(
    spec: ChallengeSpec,
    *,
    bundle: Path,
    model: Path,
    drafter: Path | None,
    gpu: bool,
) -> JailPlan:
    links, binds = [], []
    for folder in SYSTEM:
        if os.path.islink(folder):
            links.append((os.readlink(folder), folder))
        elif os.path.isdir(folder):
            binds.append((folder, folder))
    roots = _python_roots()
    binds += [(r, r) for r in roots]
    binds.append((str(bundle), BUNDLE))
    binds.append((str(model), "/model"))
    if drafter is not None:
        binds.append((str(drafter), "/drafter"))
    devices = [n for n in GPU_NODES if os.path.exists(n)] if gpu else []
    if gpu and os.path.isdir("/sys"):  # CUDA and NVML read the device's topology there
        binds.append(("/sys", "/sys"))
    return JailPlan(
        binds=binds,
        masks=_masks(roots),
        links=links,
        devices=devices,
        scratch_bytes=SCRATCH_BYTES,
        gpu=gpu,
    )


def jail_limits(spec: ChallengeSpec, *, gpu: bool) -> dict[str, int | None]:
    """The jail's resource limits: processes (the challenge's ``limits.pids``), file size,
    no core dumps, and address space on the CPU (``limits.memory_bytes``; CUDA reserves
    far more address space than it uses, so a GPU run is bounded by the card instead)."""
    memory = spec.limits.memory_bytes
    return {
        "nproc": spec.limits.pids or DEFAULT_PIDS,
        "fsize": FSIZE_BYTES,
        "core": 0,
        "as": None if gpu or not memory else max(memory, 1 << 32),
    }


def jail_environment(declared: dict[str, str], *, code: Path) -> dict[str, str]:
    """The engine's whole environment, by allowlist (as ``process.engine_environment``,
    with its home and temporary folder in the jail's scratch)."""
    home = f"{SCRATCH}/home"
    env = {k: os.environ[k] for k in PLATFORM if k in os.environ}
    env.update(
        PATH=os.pathsep.join((str(Path(sys.executable).parent), *MINIMAL_PATH)),
        HOME=home,
        PWD=SCRATCH,  # bwrap's --chdir sets it
        TMPDIR=SCRATCH,
        HF_HOME=f"{home}/huggingface",
        HF_HUB_OFFLINE="1",
        LANG="C.UTF-8",
    )
    env.update({k: v for k, v in declared.items() if k not in RUNNER_OWN})
    env["PYTHONPATH"] = os.pathsep.join([str(code), *_library_path()])
    return env


def refused() -> str | None:
    """None when this host makes a jail (bwrap runs ``true`` in every namespace the jail
    uses, as its user); else which primitive was refused and the setting that allows it."""
    if shutil.which(bwrap_path()) is None:
        return "bubblewrap is not installed (`apt-get install bubblewrap`, or set PODIUM_BWRAP)"
    argv = [bwrap_path(), *NAMESPACES, "--ro-bind", "/", "/", "--proc", "/proc", "true"]
    try:
        done = subprocess.run(argv, capture_output=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"bubblewrap could not run: {exc}"
    if done.returncode == 0:
        return None
    said = done.stderr.decode("utf-8", "replace").strip().splitlines()[-1:] or ["no message"]
    setting = next((s for word, s in SETTINGS if word in said[0].lower()), None)
    where = f"; the setting that allows it: {setting}" if setting else ""
    return f"the kernel refused the jail ({said[0]}){where}"
