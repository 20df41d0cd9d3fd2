"""A throwaway PostgreSQL cluster for the tests and the benchmark: Debian's ``postgresql``.

``initdb`` into a temporary folder, ``pg_ctl start`` on a free loopback port with its
socket in that folder, trust authentication on loopback only; ``stop`` and the folder is
gone. Run as root, the cluster belongs to the ``postgres`` user (PostgreSQL refuses to
run as root). ``binaries()`` is None when the package is not installed.
"""

from __future__ import annotations

import contextlib
import glob
import os
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path


def binaries() -> Path | None:
    """The folder holding ``initdb`` and ``pg_ctl`` (the newest installed), or None."""
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=_version)
    if found:
        return Path(found[-1]).parent
    initdb = shutil.which("initdb")
    return Path(initdb).resolve().parent if initdb else None


def _version(path: str) -> int:
    part = Path(path).parts[-3]
    return int(part) if part.isdigit() else 0


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Cluster:
    def __init__(self, bindir: Path, *, durable: bool = False):
        """``durable``: fsync and synchronous commits on, as a real deployment runs (the
        tests turn them off: a throwaway cluster needs no durability)."""
        self.bindir = bindir
        self.durable = durable
        self.root = Path(tempfile.mkdtemp(prefix="podium-pg-"))
        self.data = self.root / "data"
        self.port = _free_port()
        self._as: list[str] = []
        if os.geteuid() == 0:
            shutil.chown(self.root, "postgres", "postgres")
            self._as = ["runuser", "-u", "postgres", "--"]

    def _run(self, *args: str) -> None:
        subprocess.run([*self._as, *args], check=True, capture_output=True, timeout=120)

    def start(self) -> Cluster:
        if not self.data.exists():
            self._run(
                str(self.bindir / "initdb"),
                "-D", str(self.data), "-U", "postgres", "--auth=trust", "-E", "UTF8",
            )  # fmt: skip
        opts = f"-p {self.port} -k {self.root} -c listen_addresses=127.0.0.1 -c max_connections=300"
        if not self.durable:
            opts += " -c fsync=off -c synchronous_commit=off"
        self._run(
            str(self.bindir / "pg_ctl"), "-D", str(self.data), "-o", opts,
            "-l", str(self.root / "log"), "-w", "start",
        )  # fmt: skip
        return self

    def stop(self, mode: str = "fast") -> None:
        self._run(str(self.bindir / "pg_ctl"), "-D", str(self.data), "-m", mode, "-w", "stop")

    def remove(self) -> None:
        with contextlib.suppress(subprocess.CalledProcessError):
            self.stop("immediate")
        shutil.rmtree(self.root, ignore_errors=True)

    def url(self, db: str = "postgres") -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/{db}"

    def new_database(self, name: str) -> str:
        """Create an empty database; its URL."""
        import psycopg

        deadline = time.monotonic() + 30
        while True:
            try:
                with psycopg.connect(self.url(), autocommit=True) as conn:
                    conn.execute(f'CREATE DATABASE "{name}"')
                return self.url(name)
            except psycopg.OperationalError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)
