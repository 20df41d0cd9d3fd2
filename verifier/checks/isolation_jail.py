"""The jail's part of ``integrity.isolation``: does the jail hold every point it must?

Inputs, and who made them:

- ``configuration["jail"]``: the verifier's own. The plan the jail runner gave bwrap (what
  is bound, read-only, where; the masks, device nodes, scratch size, user), the
  verifier's own namespaces, the engine's environment as the runner built it, and
  ``paths_seen``: whether each forbidden path (the held-out files) resolves under the
  jail's root, looked up by the verifier from outside through ``/proc/PID/root``.
- ``probe``: the jail's own report, by ``verifier.runners.jail_init``: the verifier's
  code, run inside the jail before the engine exists (so no engine code could have
  shaped it), on a pipe the engine never holds.

The plan is what the verifier meant; the probe is what the kernel made of it. Each point
is judged on the probe against the plan, so a jail weakened by mistake (its network left
open, a key mounted) fails here even where the plan forgot to say so. Nothing the engine
says is read.
"""

from __future__ import annotations

from typing import Any

#: what bwrap's ``--dev`` puts in a jail's /dev (the GPU's nodes come from the plan)
MINIMAL_DEV = frozenset(
    {
        "console",
        "core",
        "fd",
        "full",
        "null",
        "ptmx",
        "pts",
        "random",
        "shm",
        "stderr",
        "stdin",
        "stdout",
        "tty",
        "urandom",
        "zero",
    }
)
#: mounts every jail has besides the plan's binds: its root, /proc, /dev and its parts,
#: the scratch
OWN_MOUNTS = ("/", "/proc", "/dev", "/dev/pts", "/dev/shm", "/dev/mqueue", "/tmp")
#: the mounts a jail may write in: its scratch, its shared memory, its device nodes
WRITABLE = ("/proc", "/tmp", "/dev/shm", "/dev/pts", "/dev/mqueue")
#: the parent-death signal the jail's processes must carry (SIGKILL)
SIGKILL = 9


def _network(probe: dict[str, Any]) -> list[str]:
    problems = []
    if probe.get("interfaces") != ["lo"]:
        problems.append(f"the jail has network interfaces {probe.get('interfaces')}, not only lo")
    for target, result in sorted((probe.get("egress") or {}).items()):
        if result == "connected":
            problems.append(f"the jail reached {target}")
    if probe.get("dns") == "resolved":
        problems.append("the jail resolved a public host name")
    return problems


def _files(plan: dict[str, Any], probe: dict[str, Any]) -> list[str]:
    problems = []
    for folder, wrote in sorted((probe.get("writes") or {}).items()):
        if wrote:
            problems.append(f"the jail wrote in {folder}")
    allowed = {b["point"] for b in plan.get("binds") or []} | set(plan.get("masks") or [])
    allowed |= set(plan.get("devices") or []) | set(OWN_MOUNTS)
    for m in probe.get("mounts") or []:
        point = m.get("point") or ""
        if _own_read_only(point, m.get("mode")):
            continue
        if point not in allowed:
            problems.append(f"the jail has a mount the plan does not: {point}")
        elif m.get("mode") != "ro" and point not in WRITABLE + tuple(plan.get("devices") or []):
            problems.append(f"the jail's {point} is writable")
    for part in ("scratch", "shm"):  # the two places it may write, each a bounded tmpfs
        seen = probe.get(part) or {}
        limit = (plan.get(part) or {}).get("bytes")
        tmp = [m for m in probe.get("mounts") or [] if m.get("point") == seen.get("point")]
        if not tmp or tmp[-1].get("type") != "tmpfs":
            problems.append(f"the jail's {seen.get('point', part)} is not a tmpfs of its own")
        elif not isinstance(limit, int) or (seen.get("bytes") or 0) > limit:
            problems.append(
                f"the jail's {seen.get('point')} holds {seen.get('bytes')} bytes, over {limit}"
            )
    extra = sorted(set(probe.get("dev") or []) - MINIMAL_DEV - _device_names(plan))
    if extra:
        problems.append(f"the jail's /dev has {extra}")
    for path, seen in sorted((plan.get("paths_seen") or {}).items()):
        if seen:
            problems.append(f"the jail can see {path}")
    if plan.get("paths_seen") is None:
        problems.append("the jail was gone before the verifier could look for the held-out files")
    return problems


def _own_read_only(point: str, mode: str | None) -> bool:
    """bwrap's own: a minimal device node (bound from the host), a read-only part of
    /proc (``/proc/sys``, ``/proc/bus`` ...), or a read-only mount under a GPU jail's
    /sys (the kernel's views, such as ``/sys/fs/cgroup``, come with it)."""
    name = point.removeprefix("/dev/")
    return (point.startswith("/dev/") and name in MINIMAL_DEV) or (
        point.startswith(("/proc/", "/sys/")) and mode == "ro"
    )


def _device_names(plan: dict[str, Any]) -> set[str]:
    return {d.removeprefix("/dev/").split("/")[0] for d in plan.get("devices") or []}


def _process(plan: dict[str, Any], probe: dict[str, Any]) -> list[str]:
    problems = []
    ours = plan.get("host_namespaces") or {}
    theirs = probe.get("namespaces") or {}
    for name in ("user", "net", "pid", "mnt", "ipc"):
        if not theirs.get(name) or theirs.get(name) == ours.get(name):
            problems.append(f"the jail shares the verifier's {name} namespace")
    status = probe.get("status") or {}
    if status.get("CapEff", "1") != "0000000000000000":
        problems.append(f"the jail holds capabilities ({status.get('CapEff')})")
    if status.get("NoNewPrivs") != "1":
        problems.append("no_new_privs is not set in the jail")
    if probe.get("pdeathsig") != SIGKILL:
        problems.append("the jail's processes do not die with their parent")
    limits = probe.get("limits") or {}
    soft = (limits.get("fsize") or [-1])[0]
    if soft is None or soft < 0:
        problems.append("the jail has no file-size limit")
    if not _pids_bounded(plan, limits):
        problems.append("the jail has no process limit (no pids cgroup holds it)")
    if not plan.get("gpu") and (limits.get("as") or [-1])[0] in (None, -1):
        problems.append("the jail has no memory limit")
    names = set(probe.get("environment") or [])
    extra = sorted(names - set(plan.get("environment") or []))
    if extra:
        problems.append(f"the jail's environment has variables the runner did not give: {extra}")
    return problems


def _pids_bounded(plan: dict[str, Any], limits: dict[str, Any]) -> bool:
    """A pids cgroup the verifier saw holding the jail, or ``RLIMIT_NPROC`` where the
    jail's user is not root (the kernel does not hold root's processes to it)."""
    group = plan.get("pids") or {}
    if group.get("holds_jail") and str(group.get("pids_max", "max")).isdigit():
        return True
    nproc = (limits.get("nproc") or [-1])[0]
    return plan.get("host_uid") not in (0, None) and isinstance(nproc, int) and nproc >= 0


def jail_problems(configuration: dict[str, Any], probe: dict[str, Any] | None) -> list[str]:
    """Every point a jail must hold that this one does not; empty when it holds."""
    plan = configuration.get("jail") or {}
    if not probe or "error" in probe:
        said = (probe or {}).get("error", "none came")
        return [f"the jail's probe did not report ({said}): nothing inside was attested"]
    return _network(probe) + _files(plan, probe) + _process(plan, probe)
