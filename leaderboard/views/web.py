"""The leaderboard web page: static files plus ``/records.json``.

The page (``static/``: HTML, vanilla JS, inline SVG, no CDN) ranks and filters in the
browser, so the same files work two ways: ``serve`` answers them from a store with a
small threaded HTTP server, and ``build_site`` writes them with a ``records.json``
snapshot into a folder a Hugging Face static Space can host as it is.
"""

from __future__ import annotations

import json
import threading
import time
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib import resources
from pathlib import Path
from typing import Any

from leaderboard.stores.base import Store
from podium.errors import PodiumError, UsageError

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


def records_document(records: list[dict[str, Any]], store: str) -> dict[str, Any]:
    rows = sorted(records, key=lambda r: str(r.get("record_id", "")))
    generated = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    return {"generated_at": generated, "store": store, "count": len(rows), "records": rows}


def build_site(records: list[dict[str, Any]], out_dir: Path, *, store: str) -> list[Path]:
    """Write the page, ``records.json`` and a Space card into ``out_dir``."""
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for name in STATIC_FILES:
        (out_dir / name).write_bytes(static_bytes(name))
        written.append(out_dir / name)
    doc = records_document(records, store)
    (out_dir / "records.json").write_text(json.dumps(doc, ensure_ascii=False), encoding="utf-8")
    (out_dir / "README.md").write_text(SPACE_README.format(store=store), encoding="utf-8")
    return [*written, out_dir / "records.json", out_dir / "README.md"]


class RecordsCache:
    """Records read from the store at most every ``ttl`` seconds (a Hub read is slow)."""

    def __init__(self, store: Store, ttl: float):
        self.store, self.ttl = store, ttl
        self._lock = threading.Lock()
        self._body: bytes | None = None
        self._at = 0.0

    def body(self) -> bytes:
        with self._lock:
            if self._body is None or time.monotonic() - self._at > self.ttl:
                doc = records_document(self.store.list_records(), self.store.url)
                self._body = json.dumps(doc, ensure_ascii=False).encode("utf-8")
                self._at = time.monotonic()
            return self._body


def make_server(
    store: Store, host: str = "127.0.0.1", port: int = 7860, *, ttl: float = 10.0
) -> ThreadingHTTPServer:
    """A server for the page; call ``serve_forever()`` on it (``port=0``: any free port)."""
    cache = RecordsCache(store, ttl)

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
            name = self.path.split("?", 1)[0].lstrip("/") or "index.html"
            if name == "records.json":
                try:
                    self._send(200, cache.body(), "application/json")
                except PodiumError as exc:
                    msg = json.dumps({"error": str(exc), "hint": exc.hint}).encode()
                    self._send(503, msg, "application/json")
            elif name in STATIC_FILES:
                self._send(200, static_bytes(name), STATIC_FILES[name])
            else:
                self._send(404, b"not found\n", "text/plain")

        do_HEAD = do_GET

    try:
        server = ThreadingHTTPServer((host, port), Handler)
    except OSError as exc:
        raise UsageError(
            f"cannot listen on {host}:{port}: {exc.strerror}", hint="choose another --port"
        ) from exc
    server.daemon_threads = True
    return server
