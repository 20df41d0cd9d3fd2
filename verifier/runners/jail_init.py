"""The jail's first program: it probes the jail it runs in, reports, then becomes the engine.

The jail runner (``verifier.runners.jail``) starts it as the jail's command, as
``python -P -c <this file's text> FD CONFIG -- ENGINE-ARGV...``: it is the verifier's own
code, run in exactly the namespaces, mounts, environment, limits and user the engine
will have, before any code of the engine exists in there. What it finds goes to the
runner as one JSON line on the inherited descriptor ``FD`` (a pipe the engine never
holds: it is closed before ``exec``); then it creates the engine's home in the scratch
and ``exec``\\s the engine in its own place. ``verifier.checks.isolation_jail`` judges the
report. It uses the standard library only: nothing of podium is visible in the jail.

``CONFIG`` (JSON): ``targets`` (``host:port`` addresses to try to connect to, among them
a listener the runner holds outside the jail), ``writes`` (folders it tries to create a
file in), ``scratch`` (the scratch's mount point), ``home`` (the engine's home, made in
the scratch) and ``timeout_s`` (each connection attempt's).
"""

from __future__ import annotations

import ctypes
import json
import os
import resource
import socket
import sys
import threading
from typing import Any

PR_GET_PDEATHSIG = 2  # linux/prctl.h
LIMITS = {"nproc": "RLIMIT_NPROC", "fsize": "RLIMIT_FSIZE", "as": "RLIMIT_AS"}
STATUS = ("Uid", "CapEff", "CapPrm", "CapBnd", "CapAmb", "NoNewPrivs", "Seccomp")


def _connect(target: str, timeout_s: float, out: dict[str, str]) -> None:
    host, _, port = target.rpartition(":")
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.settimeout(timeout_s)
    try:
        s.connect((host, int(port)))
        out[target] = "connected"
    except OSError as exc:
        out[target] = f"{type(exc).__name__}: {str(exc)[:80]}"
    finally:
        s.close()


def _resolve(out: dict[str, str]) -> None:
    try:
        socket.getaddrinfo("huggingface.co", 443)
        out["dns"] = "resolved"
    except OSError as exc:
        out["dns"] = type(exc).__name__


def network(targets: list[str], timeout_s: float) -> dict[str, Any]:
    """The interfaces the jail has, and what became of each connection and a lookup."""
    egress: dict[str, str] = {}
    dns: dict[str, str] = {}
    jobs = [threading.Thread(target=_connect, args=(t, timeout_s, egress)) for t in targets]
    jobs.append(threading.Thread(target=_resolve, args=(dns,)))
    for job in jobs:
        job.daemon = True
        job.start()
    for job in jobs:
        job.join(timeout_s + 3)
    with open("/proc/net/dev", encoding="ascii") as f:
        interfaces = sorted(line.split(":")[0].strip() for line in f.readlines()[2:])
    for t in targets:
        egress.setdefault(t, "TimeoutError: no answer")
    return {"interfaces": interfaces, "egress": egress, "dns": dns.get("dns", "TimeoutError")}


def writes(folders: list[str]) -> dict[str, bool]:
    """Whether a file could be created in each folder (it is removed at once)."""
    out = {}
    for folder in folders:
        path = os.path.join(folder, ".podium-write-probe")
        try:
            with open(path, "x"):
                pass
        except OSError:
            out[folder] = False
        else:
            out[folder] = True
            os.unlink(path)
    return out


def mounts() -> list[dict[str, str]]:
    """Every mount the jail has: where, of what kind, and read-only or not."""
    found = []
    with open("/proc/self/mountinfo", encoding="utf-8") as f:
        for line in f:
            left, _, right = line.partition(" - ")
            fields = left.split()
            flags = fields[5].split(",")
            found.append(
                {
                    "point": fields[4],
                    "type": right.split()[0],
                    "mode": "ro" if "ro" in flags else "rw",
                }
            )
    return found


def process() -> dict[str, Any]:
    """This process's ids, capabilities, namespaces, limits and parent-death signal."""
    status = {}
    with open("/proc/self/status", encoding="utf-8") as f:
        for line in f:
            name, _, value = line.partition(":")
            if name in STATUS:
                status[name] = value.split()[0] if name != "Uid" else value.split()
    signal = ctypes.c_int(0)
    ctypes.CDLL(None).prctl(PR_GET_PDEATHSIG, ctypes.byref(signal))
    return {
        "status": status,
        "namespaces": {
            n: os.readlink(f"/proc/self/ns/{n}") for n in ("user", "net", "pid", "mnt", "ipc")
        },
        "limits": {k: list(resource.getrlimit(getattr(resource, v))) for k, v in LIMITS.items()},
        "pdeathsig": signal.value,
        "pids": sorted(int(p) for p in os.listdir("/proc") if p.isdigit()),
        "environment": sorted(os.environ),
    }


def probe(config: dict[str, Any]) -> dict[str, Any]:
    scratch, shm = os.statvfs(config["scratch"]), os.statvfs("/dev/shm")
    return {
        **network(config["targets"], float(config["timeout_s"])),
        "writes": writes(config["writes"]),
        "scratch": {"point": config["scratch"], "bytes": scratch.f_blocks * scratch.f_frsize},
        "shm": {"point": "/dev/shm", "bytes": shm.f_blocks * shm.f_frsize},
        "mounts": mounts(),
        "dev": sorted(os.listdir("/dev")),
        **process(),
    }


def main(argv: list[str]) -> None:
    fd, config = int(argv[0]), json.loads(argv[1])
    engine = argv[argv.index("--") + 1 :]
    try:
        report = probe(config)
    except Exception as exc:  # reported, never hidden: the check fails the run on it
        report = {"error": f"{type(exc).__name__}: {exc}"}
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        out.write(json.dumps(report) + "\n")
    os.makedirs(config["home"], exist_ok=True)
    sys.stdout.flush()
    os.execv(engine[0], engine)


if __name__ == "__main__":
    main(sys.argv[1:])
