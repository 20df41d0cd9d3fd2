"""The leaderboard web page: static files plus ``/records.json``.

The page (``static/``: HTML, vanilla JS, inline SVG, no CDN) draws and filters in the
browser what ``records_document`` computed: the rows that passed the check
(``leaderboard.verify``), the boards ranked from them (``leaderboard.ranking``) and the
rows that failed, with their reasons. The same files work two ways: ``serve`` answers
them from a store with a small threaded HTTP server, and ``build_site`` writes them with
a ``records.json`` snapshot into a folder a Hugging Face static Space can host as it is.
"""

from __future__ import annotations

import errno
import json
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib import resources
from pathlib import Path
from typing import Any
from urllib.parse import unquote

from leaderboard.bundles import checked_bundle
from leaderboard.checked import check_snapshot
from leaderboard.ranking import Ranked
from leaderboard.seen import SeenHeads
from leaderboard.stores.base import BUNDLES_DIR, Store, bundle_path, bundle_sha
from leaderboard.trust import Trust
from leaderboard.verify import RowChecker, StoreCheck
from leaderboard.views.board import boards_of
from leaderboard.views.fallback import page_html
from podium.errors import PodiumError, StoreError, UsageError
from podium.timestamps import now_iso

STATIC_FILES = {
    "index.html": "text/html; charset=utf-8",
    "app.js": "text/javascript; charset=utf-8",
    "style.css": "text/css; charset=utf-8",
}

SPACE_README = """\
---
title: podium leaderboard
emoji: 🏁
colorFrom: green
colorTo: blue
sdk: static
app_file: index.html
pinned: false
---

The podium leaderboard: ranked VERIFIED entries, the others with their reason, and a
TPS-vs-PPL scatter. The rows in `records.json` are signed; check them with
`podium leaderboard verify --store {store} --pubkey KEY`.
"""


def static_bytes(name: str) -> bytes:
    return resources.files("leaderboard.views").joinpath("static", name).read_bytes()


def _page_entry(r: Ranked) -> dict[str, Any]:
    e = r.entry
    return {
        "rank": r.rank,
        "tied": r.tied,
        "runs": [run.get("record_id") for run in e.runs],
        "tps": e.tps,
        "interval": [e.low, e.high],
        "spread": e.spread,
        "noise": e.noise,
    }


def records_document(check: StoreCheck, store: str) -> dict[str, Any]:
    """``/records.json``: the rows that passed the check, the boards ranked from them (both
    each team's best and every attempt), and every row that failed, with its reason.

    The page only draws this document: ranking and checking happen here, once.
    """
    rows = sorted(check.records, key=lambda r: str(r.get("record_id", "")))
    boards: dict[str, Any] = {}
    best = {b.challenge: b for b in boards_of(check, best_per_team=True)}
    for board in boards_of(check, best_per_team=False):
        boards[board.challenge] = {
            "noise": board.noise,
            "noise_source": board.noise_source,
            "best": [_page_entry(r) for r in best[board.challenge].ranked],
            "all": [_page_entry(r) for r in board.ranked],
            "others": [r.get("record_id") for r in board.others],
        }
    return {
        "generated_at": now_iso(),
        "store": store,
        "checked": check.checked,
        "summary": check.summary(),
        "trusted_keys": check.trust.to_dict()["keys"] if check.trust else [],
        "count": len(rows),
        "records": rows,
        "boards": boards,
        "unverified": [b.to_dict() for b in check.bad],
        "bundles": {sha: href for sha, href in check.bundles.items()},
        "head": check.head,
        "set_ok": not check.set_problems,
        "set_problems": [p.to_dict() for p in check.set_problems],
        "withdrawn": [w.to_dict() for w in check.withdrawn],
    }


def build_site(check: StoreCheck, out_dir: Path, *, store: str) -> list[Path]:
    """Write the page, ``records.json`` (checked here) and a Space card into ``out_dir``."""
    out_dir.mkdir(parents=True, exist_ok=True)
    doc = records_document(check, store)
    # a folder's bundles stay in the folder: the site links only those at a URL (the Hub)
    doc["bundles"] = {k: v for k, v in doc["bundles"].items() if "://" in v}
    written = []
    for name in STATIC_FILES:
        data = index_bytes(doc) if name == "index.html" else static_bytes(name)
        (out_dir / name).write_bytes(data)
        written.append(out_dir / name)
    (out_dir / "records.json").write_text(json.dumps(doc, ensure_ascii=False), encoding="utf-8")
    (out_dir / "README.md").write_text(SPACE_README.format(store=store), encoding="utf-8")
    # the signed files as stored, so each row's link and the head resolve on the site too
    for rel, data in sorted(check.sources.items()):
        target = out_dir / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
    return [*written, out_dir / "records.json", out_dir / "README.md"]


def index_bytes(doc: dict[str, Any]) -> bytes:
    """``index.html`` with the no-JavaScript tables of ``doc`` in it."""
    return page_html(static_bytes("index.html").decode("utf-8"), doc).encode("utf-8")


class RecordsCache:
    """``/records.json`` made at most every ``ttl`` seconds (a Hub read is slow); each
    row's bytes are checked once (``RowChecker``), so a refresh checks only new rows."""

    def __init__(self, store: Store, ttl: float, trust: Trust | None, seen: SeenHeads | None):
        self.store, self.ttl, self.seen = store, ttl, seen
        self.checker = RowChecker(trust)
        self._lock = threading.Lock()
        self._body: bytes | None = None
        self._index: bytes | None = None
        self._sources: dict[str, bytes] = {}
        self._check: StoreCheck | None = None
        self._at = 0.0

    def _refresh(self) -> None:
        if self._body is None or time.monotonic() - self._at > self.ttl:
            snap = self.store.snapshot()
            check = check_snapshot(snap, self.store.identity, self.checker, seen=self.seen)
            doc = records_document(check, self.store.url)
            # every bundle link goes through this server, which checks the bytes first
            doc["bundles"] = {sha: bundle_path(sha) for sha in check.bundles}
            self._body = json.dumps(doc, ensure_ascii=False).encode("utf-8")
            self._index = index_bytes(doc)
            self._sources = check.sources
            self._check = check
            self._at = time.monotonic()

    def check(self) -> StoreCheck:
        """The last check of the store (made now if none is fresh)."""
        with self._lock:
            self._refresh()
            assert self._check is not None
            return self._check

    def bundle(self, sha: str) -> bytes:
        """Bundle ``sha`` as the last check's head lists it (``leaderboard.bundles``)."""
        return checked_bundle(self.store, self.check(), sha)

    def body(self) -> bytes:
        with self._lock:
            self._refresh()
            assert self._body is not None
            return self._body

    def index(self) -> bytes:
        """The page, its no-JavaScript tables drawn from the same checked document."""
        with self._lock:
            self._refresh()
            assert self._index is not None
            return self._index

    def source(self, rel: str) -> bytes | None:
        """A stored row, withdrawal, rotation or the head, as the last read saw it."""
        with self._lock:
            self._refresh()
            return self._sources.get(rel)


class BoardServer(ThreadingHTTPServer):
    """The page's server; ``records``: its checked view of the store (what it serves)."""

    records: RecordsCache


#: folders whose stored files ``serve`` answers as they are (each row links to its own)
SOURCE_DIRS = ("records/", "withdrawals/", "keys/rotations/", "log/")


def make_server(
    store: Store,
    host: str = "127.0.0.1",
    port: int = 7860,
    *,
    trust: Trust | None,
    ttl: float = 10.0,
    seen: SeenHeads | None = None,
) -> BoardServer:
    """A server for the page; call ``serve_forever()`` on it (``port=0``: any free port).

    ``trust``: the keys every row is checked against (None: nothing is checked, and the
    page says so); ``seen``: the memory of heads rollbacks are measured against (default:
    the user's cache)."""
    cache = RecordsCache(store, ttl, trust, seen if seen is not None else SeenHeads())

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            return

        def _send(self, status: int, body: bytes, ctype: str) -> None:
            self.send_response(status)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Cache-Control", "no-store")
            self.send_header("X-Content-Type-Options", "nosniff")
            self.send_header(
                "Content-Security-Policy",
                "default-src 'self'; style-src 'self'; img-src 'self' data:",
            )
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(body)

        def do_GET(self) -> None:
            name = unquote(self.path.split("?", 1)[0].split("#", 1)[0]).lstrip("/") or "index.html"
            try:
                if name == "records.json":
                    self._send(200, cache.body(), "application/json")
                    return
                if name == "index.html":
                    self._send(200, cache.index(), STATIC_FILES[name])
                    return
                if name.endswith(".json") and name.startswith(SOURCE_DIRS):
                    data = cache.source(name)
                    if data is not None:
                        self._send(200, data, "application/json")
                        return
            except PodiumError as exc:
                msg = json.dumps({"error": str(exc), "hint": exc.hint}).encode()
                self._send(503, msg, "application/json")
                return
            sha = bundle_sha(name.removeprefix(BUNDLES_DIR + "/"))
            if name.startswith(BUNDLES_DIR + "/") and sha is not None:
                try:
                    data = cache.bundle(sha)
                except PodiumError as exc:  # refused (409), or the store unreachable (503)
                    msg = json.dumps({"error": str(exc), "hint": exc.hint}).encode()
                    self._send(409 if isinstance(exc, StoreError) else 503, msg, "application/json")
                    return
                self._send(200, data, "application/gzip")
            elif name in STATIC_FILES:
                self._send(200, static_bytes(name), STATIC_FILES[name])
            else:
                self._send(404, b"not found\n", "text/plain")

        do_HEAD = do_GET

    if not 0 <= port <= 65535:
        raise UsageError(
            f"--port {port} is not a port number",
            hint="choose one from 0 to 65535 (0: any free one)",
        )
    try:
        server = BoardServer((host, port), Handler)
    except OSError as exc:
        raise _listen_error(host, port, exc) from exc
    server.daemon_threads = True
    server.records = cache
    return server


def _listen_error(host: str, port: int, exc: OSError) -> UsageError:
    """Why ``host:port`` cannot be listened on, with a hint about the option at fault."""
    where = f"cannot listen on {host}:{port}"
    if isinstance(exc, socket.gaierror):
        return UsageError(
            f"{where}: --host {host!r} is not an address or a name this machine resolves "
            f"({exc.strerror})",
            hint="pass --host with an address of this machine, e.g. 127.0.0.1 or 0.0.0.0",
        )
    if exc.errno == errno.EADDRNOTAVAIL:
        return UsageError(
            f"{where}: --host {host} is not an address of this machine",
            hint="pass --host with one of this machine's addresses, e.g. 127.0.0.1 or 0.0.0.0",
        )
    if exc.errno == errno.EADDRINUSE:
        return UsageError(
            f"{where}: --port {port} is in use",
            hint="choose another --port (0: any free one)",
        )
    if exc.errno == errno.EACCES:
        return UsageError(
            f"{where}: not permitted ({exc.strerror})",
            hint="ports below 1024 need privileges: choose --port 1024 or higher",
        )
    return UsageError(f"{where}: {exc.strerror or exc}", hint="check --host and --port")
