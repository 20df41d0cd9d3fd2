"""``python -m bench.door_queue [--db postgres|sqlite] [--workers N] [--requests N]``: the
competition's queue under load, through ``podium server`` itself.

A ``podium server`` process (the real command, uvicorn and all) on PostgreSQL (a
throwaway cluster, ``bench.pgcluster``) or SQLite; a stand-in for the Hub's whoami; 50
simulated participants submitting distinct bundles over HTTP. First they fill the queue
with ``--requests`` (no worker yet); then the simulated workers drain it, each claiming
over HTTP, fetching the bundle, "verifying" for ``--verify-s`` and concluding, while the
participants submit ``--extra`` more. Measured: every claim's latency (p50, p99, empty
answers included), claims a second while draining, submissions a second (filling, and
while draining), and the two rules: no request verified twice, none lost (every request
submitted ends FINISHED). The clients run in one process beside the server, on the same
cores.

Writes ``bench/results/door_queue-<db>[-<tag>].json``.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tarfile
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from bench.common import machine, write_result
from podium.errors import PodiumError

REPO = Path(__file__).resolve().parents[1]
ADMIN, WORKER = "bench-admin", "bench-worker"
TEAM_SIZE = 5


class _Whoami(BaseHTTPRequestHandler):
    """The Hub's whoami for tokens ``tok-N``: user ``user-N``."""

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        token = (self.headers.get("Authorization") or "").removeprefix("Bearer ")
        ok = self.path.startswith("/api/whoami-v2") and token.startswith("tok-")
        body = json.dumps({"type": "user", "name": f"user-{token[4:]}"} if ok else {"error": "no"})
        self.send_response(200 if ok else 401)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body.encode())


@contextmanager
def whoami() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Whoami)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()


def team_of(user: int) -> str:
    return f"team-{user // TEAM_SIZE}"


def roster(participants: int) -> str:
    lines = ['contact = "bench@example.org"']
    for t in range((participants + TEAM_SIZE - 1) // TEAM_SIZE):
        members = [f'"user-{u}"' for u in range(t * TEAM_SIZE, (t + 1) * TEAM_SIZE)]
        lines += [f"[teams.team-{t}]", f"members = [{', '.join(members)}]"]
    return "\n".join(lines) + "\n"


def base_bundle(out: Path) -> Path:
    from submission.bundle import package

    src = out / "src"
    shutil.copytree(
        REPO / "examples" / "tiny-baseline",
        src,
        ignore=shutil.ignore_patterns("manifest.json", "engine-config.json"),
    )
    done = package(src, out / "dist", build=False)
    assert done.bundle is not None, [f.one_line() for f in done.findings]
    return done.bundle.path


def variant(base: bytes, team: str, entry: str) -> bytes:
    """The base bundle with its manifest naming ``team`` and ``entry`` (a distinct digest)."""
    out = io.BytesIO()
    with (
        tarfile.open(fileobj=io.BytesIO(base), mode="r:gz") as src,
        tarfile.open(fileobj=out, mode="w:gz") as dst,
    ):
        for info in src:
            data = src.extractfile(info).read() if info.isfile() else b""  # type: ignore[union-attr]
            if info.name == "manifest.json":
                doc = json.loads(data)
                doc["team"], doc["entry"] = team, entry
                data = json.dumps(doc).encode()
                info.size = len(data)
            dst.addfile(info, io.BytesIO(data) if info.isfile() else None)
    return out.getvalue()


def start_server(db: str, roster_path: Path, hub: str, requests: int) -> tuple[Any, str]:
    cmd = [
        sys.executable, "-c", "from podium.cli.app import main; main()", "server",
        "--db", db, "--roster", str(roster_path), "--challenge", "tiny", "--port", "0",
        "--admin-token", ADMIN, "--worker-token", WORKER,
        "--quota-user", str(requests), "--quota-team", str(requests), "--json",
    ]  # fmt: skip
    env = {**os.environ, "HF_ENDPOINT": hub, "HF_HUB_OFFLINE": "0", "PYTHONPATH": str(REPO)}
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True, env=env)
    assert proc.stdout is not None
    line = proc.stdout.readline()
    if not line:
        raise SystemExit(f"the server did not start (exit {proc.wait()})")
    return proc, str(json.loads(line)["url"])


class Drain:
    """The simulated workers and participants, and what they measured."""

    def __init__(self, url: str, verify_s: float):
        self.url, self.verify_s = url, verify_s
        self.claim_ms: list[float] = []
        self.verified: Counter[str] = Counter()
        self.submitted = 0
        self.submit_done = threading.Event()
        self.errors: list[str] = []
        self.lock = threading.Lock()
        self.first_claim = self.last_finish = self.submit_end = 0.0

    def participant(self, n: int, bundles: list[Path]) -> None:
        from competition.client import DoorClient

        client = DoorClient(self.url, f"tok-{n}")
        for path in bundles:
            try:
                client.submit(path)
            except PodiumError as exc:
                with self.lock:
                    self.errors.append(f"participant {n}: {exc}")
                continue
            with self.lock:
                self.submitted += 1

    def worker(self, n: int, scratch: Path) -> None:
        from competition.client import ServerQueue

        queue = ServerQueue(self.url, WORKER, worker=f"sim-{n}")
        while True:
            started = time.perf_counter()
            got = queue.claim(f"sim-{n}", 60)
            took = (time.perf_counter() - started) * 1000
            with self.lock:
                self.claim_ms.append(took)
                done = sum(self.verified.values())
            if got is None:
                if self.submit_done.is_set() and done >= self.submitted:
                    return
                time.sleep(0.05)
                continue
            req, claim = got
            with self.lock:
                self.first_claim = self.first_claim or time.perf_counter()
            queue.fetch_bundle(req, scratch / f"w{n}").unlink()
            time.sleep(self.verify_s)
            with self.lock:
                self.verified[req.request_id] += 1
            queue.finish(claim, {"verdict": "UNOFFICIAL", "report_id": "0" * 16})
            with self.lock:
                self.last_finish = time.perf_counter()


def _submit_all(drain: Drain, shares: dict[int, list[Path]]) -> float:
    """Every participant submits their share at once; the seconds it took."""
    started = time.perf_counter()
    subs = [threading.Thread(target=drain.participant, args=(u, b)) for u, b in shares.items()]
    for t in subs:
        t.start()
    for t in subs:
        t.join()
    return time.perf_counter() - started


def _bundles(scratch: Path, participants: int, first: int, n: int) -> dict[int, list[Path]]:
    base = (scratch / "base.tar.gz").read_bytes()
    shares: dict[int, list[Path]] = {u: [] for u in range(participants)}
    for i in range(first, first + n):
        user = i % participants
        path = scratch / f"b{i}.tar.gz"
        path.write_bytes(variant(base, team_of(user), f"e{i}"))
        shares[user].append(path)
    return shares


def measure(
    db: str, workers: int, participants: int, requests: int, extra: int, verify_s: float
) -> dict[str, Any]:
    """Fill the queue with ``requests`` (participants submitting, no worker yet), then
    drain it with ``workers`` while the participants submit ``extra`` more."""
    from competition.client import DoorClient

    with tempfile.TemporaryDirectory(prefix="bench-door-") as tmp, whoami() as hub:
        scratch = Path(tmp)
        (scratch / "roster.toml").write_text(roster(participants))
        shutil.copyfile(base_bundle(scratch), scratch / "base.tar.gz")
        fill = _bundles(scratch, participants, 0, requests)
        more = _bundles(scratch, participants, requests, extra)
        proc, url = start_server(db, scratch / "roster.toml", hub, requests + extra)
        try:
            drain = Drain(url, verify_s)
            fill_s = _submit_all(drain, fill)
            filled = drain.submitted
            pool = [
                threading.Thread(target=drain.worker, args=(n, scratch)) for n in range(workers)
            ]
            start = time.perf_counter()
            for t in pool:
                t.start()
            during_s = _submit_all(drain, more)
            drain.submit_done.set()
            for t in pool:
                t.join(timeout=1800)
            drain_s = time.perf_counter() - start
            states = DoorClient(url, ADMIN).get("/v1/admin/counts")["counts"]
        finally:
            proc.terminate()
            proc.wait(timeout=30)
    lat = sorted(drain.claim_ms)
    claims = sum(drain.verified.values())
    return {
        "db": db.split(":")[0],
        "workers": workers,
        "participants": participants,
        "requests": requests,
        "extra": extra,
        "verify_s": verify_s,
        "submitted": drain.submitted,
        "errors": drain.errors[:20],
        "finished": states["FINISHED"],
        "verified_twice": sum(1 for c in drain.verified.values() if c > 1),
        "lost": drain.submitted - states["FINISHED"],
        "claims_per_s": round(claims / drain_s, 1),
        "claim_calls": len(lat),
        "claim_p50_ms": round(statistics.median(lat), 1),
        "claim_p99_ms": round(lat[int(0.99 * (len(lat) - 1))], 1),
        "submissions_per_s_filling": round(filled / fill_s, 1),
        "submissions_per_s_draining": round((drain.submitted - filled) / during_s, 1),
        "fill_s": round(fill_s, 1),
        "drain_s": round(drain_s, 1),
    }


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--db", choices=["postgres", "sqlite"], default="postgres")
    ap.add_argument("--workers", type=int, default=None, help="default: 100 (pg), 10 (sqlite)")
    ap.add_argument("--participants", type=int, default=50)
    ap.add_argument("--requests", type=int, default=2000, help="in the queue before it drains")
    ap.add_argument("--extra", type=int, default=500, help="submitted while it drains")
    ap.add_argument("--verify-s", type=float, default=0.05)
    ap.add_argument("--out", type=Path, default=None)
    ap.add_argument("--tag", default="", help="appended to the result's name")
    args = ap.parse_args(argv)
    workers = args.workers or (100 if args.db == "postgres" else 10)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))  # the cluster is removed on the way
    cluster = None
    if args.db == "postgres":
        from bench.pgcluster import Cluster, binaries

        bindir = binaries()
        if bindir is None:
            raise SystemExit("PostgreSQL is not installed: apt-get install postgresql")
        cluster = Cluster(bindir, durable=True).start()
        url = cluster.new_database("bench")
    else:
        url = f"sqlite:///{tempfile.mkdtemp(prefix='bench-sqlite-')}/door.db"
    try:
        result = measure(url, workers, args.participants, args.requests, args.extra, args.verify_s)
    finally:
        if cluster is not None:
            cluster.remove()
    command = "python -m bench.door_queue " + " ".join(argv if argv is not None else sys.argv[1:])
    doc = {"machine": machine(), "command": command.strip(), **result}
    name = f"door_queue-{args.db}" + (f"-{args.tag}" if args.tag else "")
    path = write_result(name, doc, args.out) if args.out else write_result(name, doc)
    print(json.dumps(doc, indent=2))
    print(f"wrote {path}", file=sys.stderr)


if __name__ == "__main__":
    main()
