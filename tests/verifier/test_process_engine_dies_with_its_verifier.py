"""A process engine never outlives the verifier that started it, even one killed with
SIGKILL (a sweep or a verification stopped hard): the engine runs in a session of its own,
so only the kernel's parent-death signal can reach it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from verifier.runners.process import _dies_with_parent

PARENT = textwrap.dedent(
    """
    import subprocess, sys, time
    from verifier.runners.process import _dies_with_parent
    child = subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(120)"],
        start_new_session=True, preexec_fn=_dies_with_parent(),
    )
    print(child.pid, flush=True)
    time.sleep(120)
    """
)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with open(f"/proc/{pid}/stat") as fh:  # a zombie is dead, only not yet reaped
        return fh.read().rsplit(")", 1)[1].split()[0] != "Z"


@pytest.mark.skipif(_dies_with_parent() is None, reason="needs Linux's PR_SET_PDEATHSIG")
def test_an_engine_dies_when_its_verifier_is_killed() -> None:
    parent = subprocess.Popen(
        [sys.executable, "-c", PARENT], stdout=subprocess.PIPE, text=True, cwd=os.getcwd()
    )
    assert parent.stdout is not None
    child = int(parent.stdout.readline())
    assert _alive(child)
    parent.send_signal(signal.SIGKILL)
    parent.wait(timeout=10)
    deadline = time.monotonic() + 10
    while _alive(child) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(child), f"engine {child} outlived its killed verifier"
