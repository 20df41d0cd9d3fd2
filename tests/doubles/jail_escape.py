"""A hostile engine for the jail: it tries every way out it knows and says what it got.

Run inside a jail (``verifier.runners.jail.Jail``) as ``python -c <this file's text>
CONFIG``, standard library only. ``CONFIG`` (JSON) names what to try for: ``outside``
(``host:port`` listeners outside the jail), ``files`` (a planted key, a held-out file),
``harness_pid`` (the verifier's pid, as the host numbers it) and ``marker`` (a variable
only the harness's environment holds), ``writes`` (folders outside the scratch), and
``linger`` (a word the process it tries to leave behind carries on its command line).
It prints one JSON line: for each attempt, what it got (``True`` only where it got in).
It fills its scratch and forks until refused, so the jail's limits must bound it.
"""

import ctypes
import json
import os
import signal
import socket
import subprocess
import sys
import time


def connect(target):
    host, _, port = target.rpartition(":")
    try:
        with socket.create_connection((host, int(port)), timeout=2):
            return True
    except OSError:
        return False


def resolve():
    try:
        socket.getaddrinfo("huggingface.co", 443)
        return True
    except OSError:
        return False


def read(path):
    try:
        with open(path, "rb") as f:
            return bool(f.read(1) or True)
    except OSError:
        return False


def environ_of_anyone(marker):
    """Whether any process this jail can see has the harness's marker in its environment."""
    for pid in [p for p in os.listdir("/proc") if p.isdigit()]:
        try:
            with open(f"/proc/{pid}/environ", "rb") as f:
                if marker.encode() in f.read():
                    return True
        except OSError:
            continue
    return False


def ptrace(pid):
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.ptrace(16, pid, None, None) == 0:  # PTRACE_ATTACH
        libc.ptrace(17, pid, None, None)  # PTRACE_DETACH
        return True
    return False


def write(folder):
    try:
        with open(os.path.join(folder, "escaped"), "w") as f:
            f.write("x")
        return True
    except OSError:
        return False


def fill_scratch():
    """Bytes written into the scratch before the jail said no."""
    done = 0
    chunk = b"\0" * (1 << 20)
    try:
        with open("/tmp/fill", "wb") as f:
            while done < (1 << 34):
                f.write(chunk)
                f.flush()
                done += len(chunk)
    except OSError:
        pass
    finally:
        os.unlink("/tmp/fill")
    return done


def fork_bomb(cap=512):
    """Processes started before the jail said no (each sleeps, then all are killed)."""
    children = []
    try:
        while len(children) < cap:  # a cap, so that a broken jail cannot take the machine
            pid = os.fork()
            if pid == 0:
                time.sleep(30)
                os._exit(0)
            children.append(pid)
    except OSError:
        pass
    for pid in children:
        os.kill(pid, 9)
        os.waitpid(pid, 0)
    return len(children)


def linger(word):
    """A process in a session of its own that means to outlive the jail."""
    subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(600)", word],
        start_new_session=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def main(config):
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # so the file-size limit cannot kill it
    got = {
        "outside": {t: connect(t) for t in config["outside"]},
        "dns": resolve(),
        "files": {p: read(p) for p in config["files"]},
        "harness_environ": read(f"/proc/{config['harness_pid']}/environ")
        and environ_of_anyone(config["marker"]),
        "any_environ": environ_of_anyone(config["marker"]),
        "ptrace": ptrace(config["harness_pid"]),
        "writes": {f: write(f) for f in config["writes"]},
        "scratch_bytes": fill_scratch(),
        "forks": fork_bomb(),
    }
    linger(config["linger"])
    print(json.dumps(got), flush=True)
    time.sleep(600)


main(json.loads(sys.argv[1]))
