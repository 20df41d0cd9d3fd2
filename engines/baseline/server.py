"""HTTP transport: a standard-library ``ThreadingHTTPServer`` in front of ``Api``.

HTTP/1.1 with keep-alive; every answer, errors included, is JSON with a Content-Length,
except streams, which are server-sent events sent with chunked transfer encoding and
ended by ``data: [DONE]``. Bad input gets a 4xx JSON error; a failure inside the engine
gets a 500 JSON error (the traceback goes to stderr only) and the server keeps serving.
"""

from __future__ import annotations

import json
import socket
import sys
import threading
import traceback
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from engines.baseline.api import Api, Reply
from engines.baseline.errors import ApiError, error_body

#: Largest accepted request body; a 4,096-token prompt as JSON is about 30 KB.
DEFAULT_MAX_BODY_BYTES = 8 * 1024 * 1024
#: A body over the limit is still read (then dropped) up to this many times the limit, so
#: the client hears the 413; beyond that the connection is closed unread.
DRAIN_FACTOR = 4

_ROUTES: dict[str, tuple[str, ...]] = {
    "/health": ("GET", "HEAD"),
    "/v1/models": ("GET", "HEAD"),
    "/v1/completions": ("POST",),
    "/v1/chat/completions": ("POST",),
}


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, address: tuple[str, int], api: Api, max_body: int, quiet: bool) -> None:
        super().__init__(address, _Handler)
        self.api = api
        self.max_body = max_body
        self.quiet = quiet


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "podium-baseline"
    server: _HTTPServer

    def setup(self) -> None:
        super().setup()
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def log_message(self, format: str, *args: Any) -> None:
        if not self.server.quiet:
            super().log_message(format, *args)

    # -- answers --------------------------------------------------------------------------

    def _send_json(self, status: int, body: Any, headers: dict[str, str] | None = None) -> None:
        data = json.dumps(body, separators=(",", ":")).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        if self.close_connection:
            self.send_header("Connection", "close")
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)

    def send_error(self, code: int, message: str | None = None, explain: str | None = None) -> None:
        """Protocol-level failures (bad request line, unknown method) as JSON, too."""
        self.close_connection = True
        self._send_json(code, error_body(code, message or explain or "bad request"))

    def _stream(self, reply: Reply) -> None:
        assert reply.events is not None
        events = reply.events
        try:
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Cache-Control", "no-cache")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            try:
                for event in events:
                    self._chunk(b"data: " + json.dumps(event, separators=(",", ":")).encode())
            except (BrokenPipeError, ConnectionResetError):
                raise
            except Exception as exc:  # the response has started: report in-band, as vLLM does
                traceback.print_exc(file=sys.stderr)
                self._chunk(b"data: " + json.dumps(_internal(exc).body()).encode())
            self._chunk(b"data: [DONE]")
            self.wfile.write(b"0\r\n\r\n")
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True
        finally:
            close = getattr(events, "close", None)
            if close is not None:
                close()
            reply.close()

    def _chunk(self, payload: bytes) -> None:
        data = payload + b"\n\n"
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))

    # -- requests -------------------------------------------------------------------------

    def _route(self) -> str | None:
        path = self.path.split("?", 1)[0]
        methods = _ROUTES.get(path)
        if methods is None:
            self._discard_body()
            self._send_json(404, error_body(404, f"no route for {path}"))
            return None
        if self.command not in methods:
            self._discard_body()
            allow = ", ".join(methods)
            message = f"method {self.command} is not allowed on {path}; use {allow}"
            self._send_json(405, error_body(405, message), {"Allow": allow})
            return None
        return path

    def _discard_body(self) -> None:
        length = self.headers.get("Content-Length")
        if length is None:
            return
        try:
            size = int(length)
        except ValueError:
            size = -1
        if 0 <= size <= self.server.max_body:
            self.rfile.read(size)
        else:
            self.close_connection = True

    def _drain(self, size: int) -> None:
        """Read and drop up to ``size`` bytes (at most ``DRAIN_FACTOR`` x the limit)."""
        left = min(size, DRAIN_FACTOR * self.server.max_body)
        while left > 0:
            chunk = self.rfile.read(min(left, 1 << 16))
            if not chunk:
                return
            left -= len(chunk)

    def _read_json(self) -> Any:
        if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
            self.close_connection = True
            raise ApiError(411, "chunked request bodies are not supported; send Content-Length")
        length = self.headers.get("Content-Length")
        if length is None:
            raise ApiError(411, "a request body with Content-Length is required")
        try:
            size = int(length)
        except ValueError:
            size = -1
        if size < 0:
            self.close_connection = True
            raise ApiError(400, "invalid Content-Length")
        if size > self.server.max_body:
            # Read the body before answering, as an ASGI server does: a client still
            # sending would otherwise see a broken pipe instead of the 413.
            self.close_connection = True
            self._drain(size)
            raise ApiError(413, f"the request body exceeds {self.server.max_body} bytes")
        raw = self.rfile.read(size)
        try:
            return json.loads(raw)
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise ApiError(400, f"the request body is not valid JSON: {exc}") from exc

    def _handle(self) -> None:
        path = self._route()
        if path is None:
            return
        api = self.server.api
        try:
            if path == "/health":
                self._send_json(200, {})
            elif path == "/v1/models":
                self._send_json(200, api.models())
            else:
                body = self._read_json()
                call: Callable[[Any], Reply] = api.chat if "chat" in path else api.completions
                reply = call(body)
                if reply.events is not None:
                    self._stream(reply)
                else:
                    self._send_json(200, reply.body)
        except ApiError as exc:
            self._send_json(exc.status, exc.body())
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True
        except Exception as exc:
            traceback.print_exc(file=sys.stderr)
            self._send_json(500, _internal(exc).body())

    do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = do_HEAD = do_OPTIONS = _handle


def _internal(exc: Exception) -> ApiError:
    return ApiError(500, f"internal error during generation: {type(exc).__name__}: {exc}")


class EngineServer:
    """An ``Api`` served over HTTP; ``start()`` runs it in a thread, ``serve_forever()`` here.

    ``port=0`` takes a free port; ``url`` gives the address actually bound.
    """

    def __init__(
        self,
        api: Api,
        host: str = "127.0.0.1",
        port: int = 8000,
        *,
        max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
        quiet: bool = True,
    ) -> None:
        self.api = api
        self._httpd = _HTTPServer((host, port), api, max_body_bytes, quiet)
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host!s}:{port}"

    def serve_forever(self) -> None:
        self._httpd.serve_forever(poll_interval=0.2)

    def start(self) -> EngineServer:
        self._thread = threading.Thread(target=self.serve_forever, name="engine-http", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop accepting requests and close the socket (safe from any other thread)."""
        self._httpd.shutdown()
        self._httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=10)
            self._thread = None

    def __enter__(self) -> EngineServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
