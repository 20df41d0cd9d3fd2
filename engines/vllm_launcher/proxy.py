"""A readiness gate in front of vLLM: 503 on every path until warm-up ends, then a proxy.

vLLM answers ``/health`` and ``/v1/models`` as soon as it has loaded, before the
launcher's warm-up has run, so vLLM cannot listen on the public port itself: a
harness polling either endpoint would start timing a cold engine. vLLM listens on an
internal loopback port instead, and this proxy holds the public one. Until ``set_ready``
it answers 503 to everything (so whichever readiness probe a harness uses, it waits);
afterwards it forwards every request unchanged, ``/health`` included, so a vLLM that
dies is seen as unhealthy. Responses are streamed chunk by chunk (server-sent events
pass through as they come); each client connection keeps one upstream keep-alive
connection, so the cost per request is a loopback hop and a little parsing.
"""

from __future__ import annotations

import http.client
import json
import socket
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import ClassVar

# Headers that describe one connection, not the message: never forwarded.
_HOP_BY_HOP = frozenset(
    {
        "connection",
        "keep-alive",
        "proxy-authenticate",
        "proxy-authorization",
        "te",
        "trailer",
        "transfer-encoding",
        "upgrade",
    }
)
_CHUNK = 65536


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    proxy: ReadinessProxy


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True
    server: _Server
    _NOT_READY: ClassVar[bytes] = json.dumps(
        {"error": {"message": "engine warming up", "type": "ServiceUnavailable", "code": 503}}
    ).encode()

    def setup(self) -> None:
        super().setup()
        self._upstream: http.client.HTTPConnection | None = None

    def finish(self) -> None:
        if self._upstream is not None:
            self._upstream.close()
        super().finish()

    def log_message(self, format: str, *args: object) -> None:
        if self.server.proxy.verbose:
            sys.stderr.write(f"[launcher] proxy {self.address_string()} {format % args}\n")

    def do_GET(self) -> None:
        self._handle()

    do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = do_OPTIONS = do_GET

    def _handle(self) -> None:
        body = self._read_body()
        if body is None:
            return
        if not self.server.proxy.ready.is_set():
            self._answer(503, self._NOT_READY, retry_after=True)
            return
        self._forward(body)

    def _read_body(self) -> bytes | None:
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            parts: list[bytes] = []
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    return b"".join(parts)
                parts.append(self.rfile.read(size))
                self.rfile.readline()
        length = self.headers.get("Content-Length")
        if length is None:
            return b""
        try:
            return self.rfile.read(int(length))
        except ValueError:
            self._answer(400, b'{"error": {"message": "bad Content-Length", "code": 400}}')
            return None

    def _answer(self, status: int, body: bytes, *, retry_after: bool = False) -> None:
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        if retry_after:
            self.send_header("Retry-After", "1")
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def _connection(self) -> tuple[http.client.HTTPConnection, bool]:
        fresh = self._upstream is None
        if self._upstream is None:
            proxy = self.server.proxy
            self._upstream = http.client.HTTPConnection(proxy.upstream_host, proxy.upstream_port)
            self._upstream.connect()
            self._upstream.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return self._upstream, fresh

    def _drop_upstream(self) -> None:
        if self._upstream is not None:
            self._upstream.close()
            self._upstream = None

    def _forward(self, body: bytes) -> None:
        headers = {k: v for k, v in self.headers.items() if k.lower() not in _HOP_BY_HOP}
        headers["Content-Length"] = str(len(body))
        while True:
            try:
                conn, fresh = self._connection()
            except OSError as exc:
                self._answer(502, _error(502, f"upstream unreachable: {exc}"))
                return
            try:
                conn.request(self.command, self.path, body=body, headers=headers)
                response = conn.getresponse()
                break
            except (OSError, http.client.HTTPException) as exc:
                self._drop_upstream()
                # A kept-alive upstream connection may have been closed while idle: retry once
                # on a fresh one. A fresh connection that fails means vLLM is gone.
                if fresh:
                    self._answer(502, _error(502, f"upstream failed: {exc}"))
                    return
        self._relay(response)
        if response.will_close:
            self._drop_upstream()

    def _relay(self, response: http.client.HTTPResponse) -> None:
        self.send_response_only(response.status, response.reason)
        for key, value in response.getheaders():
            if key.lower() not in _HOP_BY_HOP:
                self.send_header(key, value)
        no_body = self.command == "HEAD" or response.status in (204, 304) or response.status < 200
        length = response.getheader("Content-Length")
        chunked = not no_body and (length is None or response.chunked)
        if chunked:
            self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        if no_body:
            response.read()
            return
        while True:
            data = response.read1(_CHUNK) if chunked else response.read(_CHUNK)
            if not data:
                break
            if chunked:
                self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
            else:
                self.wfile.write(data)
            self.wfile.flush()
        if chunked:
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()


def _error(status: int, message: str) -> bytes:
    return json.dumps({"error": {"message": message, "code": status}}).encode()


class ReadinessProxy:
    """Holds ``host:port`` for an upstream server and opens the gate on ``set_ready``."""

    def __init__(
        self,
        host: str,
        port: int,
        upstream_host: str,
        upstream_port: int,
        *,
        verbose: bool = False,
    ) -> None:
        self.upstream_host = upstream_host
        self.upstream_port = upstream_port
        self.verbose = verbose
        self.ready = threading.Event()
        self._server = _Server((host, port), _Handler)
        self._server.proxy = self
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    def start(self) -> None:
        self._thread = threading.Thread(
            target=self._server.serve_forever, name="readiness-proxy", daemon=True
        )
        self._thread.start()

    def set_ready(self) -> None:
        self.ready.set()

    def close(self) -> None:
        if self._thread is not None:
            self._server.shutdown()
            self._thread.join(timeout=5)
        self._server.server_close()
