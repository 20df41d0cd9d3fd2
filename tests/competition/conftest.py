"""A competition to test against: two teams on the fake Hub's whoami, their bundles, a key,
and ``podium server``'s app served by uvicorn on a free port in this process."""

from __future__ import annotations

import io
import json
import shutil
import socket
import tarfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from hubserver import FakeHub, allow_hub_requests

from competition.door import Door
from podium.signing import KeyPair, write_keypair
from submission.bundle import package

REPO = Path(__file__).resolve().parents[2]

#: HF token -> username, as the fake Hub's whoami answers
USERS = {"tok-alice": "alice", "tok-bob": "bob", "tok-carol": "carol", "tok-mallory": "mallory"}
ROSTER = """\
contact = "organizers@example.org"

[teams.acme]
members = ["alice"]

[teams.rival]
members = ["bob", "carol"]
"""
ADMIN = "admin-secret"
WORKER = "worker-secret"


def make_bundle(out: Path, team: str, entry: str) -> Path:
    """examples/tiny-baseline packaged as ``team``/``entry`` (no image build)."""
    src = out / f"src-{team}-{entry}"
    shutil.copytree(
        REPO / "examples" / "tiny-baseline",
        src,
        ignore=shutil.ignore_patterns("manifest.json", "engine-config.json"),
    )
    toml = (src / "podium.toml").read_text()
    toml = toml.replace('team = "podium"', f'team = "{team}"')
    toml = toml.replace('entry = "tiny-baseline"', f'entry = "{entry}"')
    (src / "podium.toml").write_text(toml)
    packaged = package(src, out / "dist", build=False)
    assert packaged.bundle is not None, [f.one_line() for f in packaged.findings]
    return packaged.bundle.path


def for_challenge(bundle: Path, challenge: str, out: Path) -> Path:
    """The same bundle with its manifest naming another challenge."""
    target = out / f"other-{challenge}.tar.gz"
    with tarfile.open(bundle, "r:gz") as src, tarfile.open(target, "w:gz") as dst:
        for info in src:
            data = src.extractfile(info).read() if info.isfile() else b""  # type: ignore[union-attr]
            if info.name == "manifest.json":
                doc = json.loads(data)
                doc["challenge"]["id"] = challenge
                data = json.dumps(doc).encode()
                info.size = len(data)
            dst.addfile(info, io.BytesIO(data) if info.isfile() else None)
    return target


@pytest.fixture(scope="session")
def bundles(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    out = tmp_path_factory.mktemp("competition-bundles")
    made = {
        "acme": make_bundle(out, "acme", "fast"),
        "acme2": make_bundle(out, "acme", "faster"),
        "acme3": make_bundle(out, "acme", "fastest"),
        "rival": make_bundle(out, "rival", "quick"),
    }
    made["other"] = for_challenge(made["acme"], "fast-gemma", out)
    data = made["acme2"].read_bytes()
    made["truncated"] = out / "truncated.tar.gz"
    made["truncated"].write_bytes(data[: len(data) // 2])
    return made


@pytest.fixture(scope="session")
def keypair() -> KeyPair:
    return KeyPair.generate()


@pytest.fixture
def key_file(tmp_path: Path, keypair: KeyPair) -> Path:
    private = tmp_path / "keys" / "organizer.pem"
    write_keypair(keypair, private)
    return private


@pytest.fixture
def hub(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeHub]:
    allow_hub_requests(monkeypatch)
    with FakeHub() as fake:
        fake.users.update(USERS)
        monkeypatch.setenv("HF_ENDPOINT", fake.endpoint)
        yield fake


@pytest.fixture
def roster(tmp_path: Path) -> Path:
    path = tmp_path / "roster.toml"
    path.write_text(ROSTER)
    return path


@contextmanager
def serving(door: Door) -> Iterator[str]:
    """``door``'s app under uvicorn on a free loopback port; its URL."""
    import uvicorn

    from competition.server import build_app

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)
    server = uvicorn.Server(uvicorn.Config(build_app(door), log_level="warning"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.02)
    assert server.started, "the server did not start"
    try:
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)
        sock.close()


@pytest.fixture(scope="session")
def pg_cluster() -> Iterator[Any]:
    """A PostgreSQL cluster of the suite's own (Debian's ``postgresql`` package)."""
    from bench.pgcluster import Cluster, binaries

    bindir = binaries()
    if bindir is None:
        pytest.skip("PostgreSQL is not installed (apt-get install postgresql)")
    try:
        import psycopg  # noqa: F401
    except ImportError:
        pytest.skip("psycopg is not installed (pip install 'podium[postgres]')")
    cluster = Cluster(bindir).start()
    try:
        yield cluster
    finally:
        cluster.remove()


@pytest.fixture
def pg_url(pg_cluster: Any, request: pytest.FixtureRequest) -> str:
    """A fresh, empty database in the suite's cluster."""
    name = "t_" + "".join(c if c.isalnum() else "_" for c in request.node.name)[-50:].lower()
    return str(pg_cluster.new_database(name))
