"""The jail's process limit, by a control group of its own.

``RLIMIT_NPROC`` counts a user's processes, and the kernel does not hold the verifier's
root (the jail's user, mapped) to it, so the jail's bound on processes is the kernel's
``pids`` controller: a cgroup made for the jail (cgroup v2's unified tree, else v1's
``pids`` hierarchy), ``pids.max`` set, bwrap moved into it before it starts, and removed
after (an empty one that a killed verifier left is removed by the next). Where no cgroup
can be made (not root, a read-only ``/sys/fs/cgroup``), there is none: the jail runner
then starts bwrap as an unprivileged host user (``verifier.runners.jail_user``), whom
``RLIMIT_NPROC`` holds, and the isolation check says the jail has no process limit unless
the jail's host user is not root.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import time
from pathlib import Path

ROOTS = (Path("/sys/fs/cgroup"), Path("/sys/fs/cgroup/pids"), Path("/sys/fs/cgroup/unified"))


def _own(root: Path) -> Path | None:
    """This process's cgroup under ``root``, where ``root`` has the pids controller."""
    if not (root / "cgroup.procs").exists():
        return None
    v2 = (root / "cgroup.controllers").exists()
    if v2 and "pids" not in (root / "cgroup.controllers").read_text().split():
        return None
    for line in Path("/proc/self/cgroup").read_text().splitlines():
        _, controllers, path = line.split(":", 2)
        if (v2 and controllers == "") or (not v2 and "pids" in controllers.split(",")):
            return root / path.lstrip("/")
    return None


def _sweep(own: Path) -> None:
    """Remove the empty jail cgroups a verifier killed mid-run left (a live jail's is
    never empty, and one only just made is left a minute to be entered)."""
    for old in own.glob("podium-jail-*"):
        with contextlib.suppress(OSError):
            if time.time() - old.stat().st_mtime > 60:
                old.rmdir()


def make(pids: int) -> Path | None:
    """A fresh cgroup beside this process's own, holding at most ``pids`` tasks; None
    where none can be made here."""
    for root in ROOTS:
        with contextlib.suppress(OSError, ValueError):
            own = _own(root)
            if own is None:
                continue
            _sweep(own)
            group = own / f"podium-jail-{secrets.token_hex(4)}"
            group.mkdir()
            try:
                (group / "pids.max").write_text(str(pids))
            except OSError:
                group.rmdir()
                continue
            return group
    return None


def enter(group: Path) -> None:
    """Move the calling process into ``group`` (run in the child, before bwrap)."""
    fd = os.open(group / "cgroup.procs", os.O_WRONLY)
    try:
        os.write(fd, b"0")
    finally:
        os.close(fd)


def facts(group: Path | None, pid: int | None) -> dict[str, object]:
    """What the verifier reads of the jail's cgroup: its limit, and whether the jail's
    first process is in it."""
    if group is None or pid is None:
        return {"cgroup": None}
    try:
        limit = (group / "pids.max").read_text().strip()
        members = (group / "cgroup.procs").read_text().split()
    except OSError:
        return {"cgroup": str(group), "pids_max": None}
    return {"cgroup": str(group), "pids_max": limit, "holds_jail": str(pid) in members}


def remove(group: Path | None) -> None:
    if group is not None:
        with contextlib.suppress(OSError):
            group.rmdir()
