"""The jail's host user where no pids cgroup can be made: an unprivileged one.

``RLIMIT_NPROC`` counts the processes of the host user a process runs as, and the kernel
does not hold root to it. Where ``verifier.runners.jail_cgroup`` can make no group (a
container's read-only ``/sys/fs/cgroup``), bwrap is started as ``UID``/``GID`` instead of
the verifier's root, with ``RLIMIT_NPROC`` set: the jail's processes are then that user's
on the host (its own user namespace maps it to the jail's user), and the kernel holds them
to the limit.

That user must reach what the jail binds while bwrap makes it: ``grant`` adds search
permission for others to the folders above each bound source that lack it (a verifier's
temporary folder is ``0700``), and read permission to the jail's own staging (the bundle,
the weights, the drafter: what the jail shows its engine anyway); ``revoke`` takes the
search permission back once the jail is made (its mounts hold the folders; nothing else
needs the way to them). No file beside a bound source is made readable.
"""

from __future__ import annotations

import contextlib
import os
import stat
from pathlib import Path

#: ``nobody``: the jail's host user where no pids cgroup holds it
UID = GID = 65534
#: the kernel's switch for user namespaces made by an unprivileged user (where it has one)
USERNS_CLONE = Path("/proc/sys/kernel/unprivileged_userns_clone")


def refused() -> str | None:
    """Why this host lets no unprivileged user make a user namespace; None where it does."""
    with contextlib.suppress(OSError, ValueError):
        if int(USERNS_CLONE.read_text()) == 0:
            return (
                "no pids cgroup can be made and unprivileged user namespaces are off: "
                "`sysctl -w kernel.unprivileged_userns_clone=1`, or run with a writable "
                "/sys/fs/cgroup"
            )
    with contextlib.suppress(OSError, ValueError):
        if int(Path("/proc/sys/user/max_user_namespaces").read_text()) == 0:
            return "user namespaces are off: `sysctl -w user.max_user_namespaces=15000`"
    return None


def _add(path: Path, bits: int, saved: dict[str, int]) -> None:
    """Add ``bits`` to ``path``'s mode; where it cannot be changed (a read-only file
    system), bwrap names the source it could not reach."""
    with contextlib.suppress(OSError):
        mode = stat.S_IMODE(path.lstat().st_mode)
        if mode & bits != bits:
            os.chmod(path, mode | bits)
            saved.setdefault(str(path), mode)


def grant(sources: list[str], staging: list[str]) -> dict[str, int]:
    """Let others search the folders above every source in ``sources`` and ``staging``,
    and read every file and folder of ``staging``. Returns the search permissions added
    (folder: its mode before), for ``revoke``."""
    saved: dict[str, int] = {}
    for source in [*sources, *staging]:
        for folder in reversed(Path(source).parents):
            _add(folder, stat.S_IXOTH, saved)
    kept: dict[str, int] = {}
    for top in staging:
        for root, dirs, files in os.walk(top):
            _add(Path(root), stat.S_IROTH | stat.S_IXOTH, kept)
            for name in files:
                if not os.path.islink(path := os.path.join(root, name)):
                    _add(Path(path), stat.S_IROTH, kept)
            dirs[:] = [d for d in dirs if not os.path.islink(os.path.join(root, d))]
    return {k: v for k, v in saved.items() if k not in kept}


def revoke(saved: dict[str, int]) -> None:
    """Put back the modes ``grant`` changed on the folders above the sources."""
    for path, mode in saved.items():
        with contextlib.suppress(OSError):
            os.chmod(path, mode)


def become() -> None:
    """Drop to ``UID``/``GID`` with no supplementary group (run in the child, before bwrap)."""
    os.setgroups([])
    os.setresgid(GID, GID, GID)
    os.setresuid(UID, UID, UID)


def closed_devices(nodes: list[str]) -> list[str]:
    """The device nodes among ``nodes`` that CUDA opens and ``UID`` cannot open for reading
    and writing (a GPU host's ``/dev/nvidia*`` are usually ``0666``; the profiler's
    ``nvidia-uvm-tools`` and the MIG folder ``nvidia-caps`` are not needed)."""
    closed = []
    for node in nodes:
        mode = os.stat(node).st_mode
        needed = stat.S_ISCHR(mode) and not node.endswith("-tools")
        if needed and mode & 0o006 != 0o006:
            closed.append(f"{node} ({stat.filemode(mode)})")
    return closed


def host_uid(pid: int | None) -> int | None:
    """The real uid the kernel has for process ``pid`` on this host, or None."""
    with contextlib.suppress(OSError, ValueError, IndexError):
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("Uid:"):
                return int(line.split()[1])
    return None
