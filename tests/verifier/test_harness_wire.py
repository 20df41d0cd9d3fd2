"""The harness's own HTTP/1.1 client reads every answer shape an engine may send.

A real standard-library HTTP server answers; each path is one server behaviour:
Content-Length and chunked bodies, a body ended by closing the connection, an explicit
``Connection: close``, a kept-alive connection the server drops just as the next request
arrives, error statuses, an answer that never comes, and a connection reset.
"""

from __future__ import annotations

import asyncio
import json
import socket
import struct
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from podium.errors import EngineError, EngineTimeout
from verifier.harness.client import EngineClient
from verifier.harness.wire import Response, Wire


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def setup(self) -> None:
        super().setup()
        self.answered = 0  # requests answered on this connection

    def _send(self, status: int, data: bytes, *, close: bool = False) -> None:
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        if close:
            self.send_header("Connection", "close")
            self.close_connection = True
        self.end_headers()
        self.wfile.write(data)
        self.answered += 1

    def do_GET(self) -> None:
        self.server.ports.append(self.client_address[1])
        if self.path == "/len":
            self._send(200, b'{"a": 1}')
        elif self.path == "/close":
            self._send(200, b'{"closed": true}', close=True)
        elif self.path == "/chunked":
            self.send_response(200)
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            for piece in (b"data: 1\n", b"\ndata: [DO", b"NE]\n\n"):
                self.wfile.write(b"%x;ext=1\r\n%s\r\n" % (len(piece), piece))
            self.wfile.write(b"0\r\nX-Trailer: y\r\n\r\n")
            self.answered += 1
        elif self.path == "/eof":
            # HTTP/1.0 style: no length, the body ends when the connection closes
            self.wfile.write(b"HTTP/1.0 200 OK\r\nContent-Type: text/plain\r\n\r\nto the end")
            self.close_connection = True
        elif self.path == "/stale":
            if self.answered:  # an idle timeout that hits just as the next request comes
                self.close_connection = True
                return
            self._send(200, b'{"first": true}')
        elif self.path.startswith("/status/"):
            self._send(int(self.path[8:]), b'{"error": {"message": "the engine   is sad"}}')
        elif self.path == "/slow":
            time.sleep(1.5)
            self._send(200, b"{}")
        elif self.path == "/reset":
            linger = struct.pack("ii", 1, 0)  # close with RST instead of FIN
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, linger)
            self.close_connection = True
        else:
            self._send(404, b"{}")

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        self.server.ports.append(self.client_address[1])
        self._send(200, json.dumps({"echo": json.loads(body), "path": self.path}).encode())


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.ports: list[int] = []


@pytest.fixture
def server() -> Iterator[tuple[_Server, str]]:
    srv = _Server()
    thread = threading.Thread(target=srv.serve_forever, kwargs={"poll_interval": 0.05})
    thread.start()
    try:
        yield srv, f"http://127.0.0.1:{srv.server_address[1]}"
    finally:
        srv.shutdown()
        srv.server_close()
        thread.join()


def _get(url: str, *paths: str, timeout_s: float = 5.0) -> list[Response]:
    async def go() -> list[Response]:
        async with Wire(url, pool=2) as wire:
            return [await wire.request("GET", p, timeout_s=timeout_s) for p in paths]

    return asyncio.run(go())


def test_content_length_bodies_are_read_and_the_connection_is_reused(server: Any) -> None:
    srv, url = server
    answers = _get(url, "/len", "/len", "/len")
    assert [json.loads(a.body) for a in answers] == [{"a": 1}] * 3
    assert answers[0].headers["content-type"] == "application/json"  # names are lower-case
    assert len(set(srv.ports)) == 1, "three requests, one kept-alive connection"


def test_post_sends_the_json_body_and_reads_the_answer(server: Any) -> None:
    _, url = server

    async def go() -> Response:
        async with Wire(url + "/prefix/") as wire:
            return await wire.request("POST", "/v1/x", b'{"k": "\xc3\xa9"}', timeout_s=5.0)

    answer = asyncio.run(go())
    assert answer.ok and json.loads(answer.body) == {"echo": {"k": "é"}, "path": "/prefix/v1/x"}


def test_chunked_bodies_are_joined_and_read_as_lines(server: Any) -> None:
    srv, url = server
    first, _ = _get(url, "/chunked", "/len")
    assert first.body == b"data: 1\n\ndata: [DONE]\n\n"
    assert len(set(srv.ports)) == 1, "a chunked answer read to its end keeps the connection"

    async def lines() -> list[str]:
        async with Wire(url) as wire, wire.stream("GET", "/chunked") as stream:
            return [line async for line in stream.lines()]

    assert asyncio.run(lines()) == ["data: 1", "", "data: [DONE]", ""]


def test_connection_close_and_a_body_ended_by_eof_open_a_new_connection(server: Any) -> None:
    srv, url = server
    answers = _get(url, "/close", "/eof", "/len")
    assert answers[0].body == b'{"closed": true}'
    assert answers[1].body == b"to the end"
    assert answers[2].ok
    assert len(set(srv.ports)) == 3


def test_a_kept_alive_connection_dropped_before_answering_is_retried_once(server: Any) -> None:
    srv, url = server
    first, second = _get(url, "/stale", "/stale")
    assert first.body == second.body == b'{"first": true}'
    assert len(srv.ports) == 3 and len(set(srv.ports)) == 2


@pytest.mark.parametrize("status", [400, 404, 500, 503])
def test_error_statuses_become_engine_errors_naming_status_and_body(
    server: Any, status: int
) -> None:
    _, url = server
    answer = _get(url, f"/status/{status}")[0]
    assert answer.status == status and not answer.ok

    async def go() -> None:
        async with EngineClient(url, timeout_s=5.0) as client:
            await client.get_json(f"/status/{status}", "probe")

    with pytest.raises(EngineError) as info:
        asyncio.run(go())
    assert not isinstance(info.value, EngineTimeout)
    assert f"probe: HTTP {status} from /status/{status}: " in info.value.message
    assert "the engine is sad" in info.value.message


def test_an_answer_that_never_comes_times_out(server: Any) -> None:
    _, url = server
    start = time.monotonic()
    with pytest.raises(TimeoutError):
        _get(url, "/slow", timeout_s=0.3)
    assert time.monotonic() - start < 1.0

    async def go() -> None:
        async with EngineClient(url, timeout_s=0.3) as client:
            await client.get_json("/slow", "probe")

    with pytest.raises(EngineTimeout, match=r"probe: the engine did not answer within 0\.3 s"):
        asyncio.run(go())


def test_a_reset_connection_is_an_engine_error(server: Any) -> None:
    _, url = server
    with pytest.raises((ConnectionError, EOFError)):
        _get(url, "/reset")

    async def go() -> None:
        async with EngineClient(url, timeout_s=5.0) as client:
            await client.get_json("/reset", "probe")

    with pytest.raises(EngineError, match="probe: the engine closed or refused") as info:
        asyncio.run(go())
    assert not isinstance(info.value, EngineTimeout)


def test_a_refused_connection_is_an_engine_error() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]

    async def go() -> None:
        async with EngineClient(f"http://127.0.0.1:{port}", timeout_s=5.0) as client:
            await client.get_json("/v1/models", "list models")

    with pytest.raises(EngineError, match="list models: the engine closed or refused"):
        asyncio.run(go())
