"""Reaching an engine that serves inside a network namespace of its own (the jail).

A jailed engine has no network but its own loopback, so no address of this host reaches
it. The harness reaches into its namespace instead: a socket is made with the calling
thread inside the jail's network namespace (Linux's ``setns``), and then used from here
like any other; a socket belongs for its whole life to the namespace it was made in.
Nothing is relayed: the timed bytes go straight from the harness to the engine's
loopback listener.

A jail's engine is named by a host name of its own (``route``), never by ``127.0.0.1``,
so a client that does not know of the route fails to resolve it rather than reaching
some other server on this host's loopback. Entering a namespace needs ``CAP_SYS_ADMIN``
over it: the verifier runs as root, or as the user that made the jail's user namespace
(which then holds every capability in it).
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import socket
import threading
from collections.abc import Callable, Iterator
from typing import TypeVar

CLONE_NEWNET = 0x40000000  # linux/sched.h
#: a jail's host name -> the path of its network namespace (``/proc/PID/ns/net``)
_ROUTES: dict[str, str] = {}
_LOCK = threading.Lock()
T = TypeVar("T")


def route(host: str, netns: str) -> None:
    """Send connections to ``host`` into the network namespace at ``netns``."""
    with _LOCK:
        _ROUTES[host] = netns


def unroute(host: str) -> None:
    with _LOCK:
        _ROUTES.pop(host, None)


def namespace_of(host: str) -> str | None:
    """The network namespace that ``host`` names, or None for an ordinary host."""
    with _LOCK:
        return _ROUTES.get(host)


def _setns(fd: int) -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.setns(fd, CLONE_NEWNET) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"setns into a jail's network namespace: {os.strerror(err)}")


@contextlib.contextmanager
def entered(netns: str) -> Iterator[None]:
    """The calling thread inside ``netns`` for the block, then back in its own."""
    own = os.open("/proc/thread-self/ns/net", os.O_RDONLY | os.O_CLOEXEC)
    try:
        target = os.open(netns, os.O_RDONLY | os.O_CLOEXEC)
        try:
            _setns(target)
        finally:
            os.close(target)
        try:
            yield
        finally:
            _setns(own)
    finally:
        os.close(own)


def socket_in(netns: str) -> socket.socket:
    """A TCP socket made inside ``netns`` (not connected yet)."""
    with entered(netns):
        return socket.socket(socket.AF_INET, socket.SOCK_STREAM)


def call_in(netns: str, fn: Callable[[], T]) -> T:
    """``fn()`` run by a thread of its own that lives in ``netns`` (a synchronous client,
    such as httpx's, then connects from there); its result or its exception."""
    box: dict[str, object] = {}

    def body() -> None:
        try:
            with entered(netns):
                box["value"] = fn()
        except Exception as exc:  # handed to the caller
            box["error"] = exc

    thread = threading.Thread(target=body, name="in-jail-netns", daemon=True)
    thread.start()
    thread.join()
    if "error" in box:
        raise box["error"]  # type: ignore[misc]
    return box["value"]  # type: ignore[return-value]
