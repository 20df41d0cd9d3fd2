"""The harness's wire (h11 underneath) reads every answer shape an engine may send, and
every malformed one becomes a clear ``EngineError``.

A real standard-library HTTP server answers the well-formed cases; each path is one
server behaviour: Content-Length and chunked bodies, a body ended by closing the
connection, an explicit ``Connection: close``, a kept-alive connection the server drops
just as the next request arrives, error statuses, an answer that never comes, and a
connection reset. A raw socket server plays the hostile engine: malformed status and
header lines, bad lengths and chunking, an oversized header block, answers cut short, a
drip-fed answer, a body that is not JSON and bytes smuggled after an answer.
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
    assert str(info.value).startswith(f"probe: HTTP {status} from /status/{status} (a body of")
    assert "the engine is sad" not in str(info.value)
    assert "the engine   is sad" in (info.value.engine_text or "")


@pytest.mark.serial
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


# -- hostile engines: answers written byte by byte on a raw socket -----------------------

OK_HEAD = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
HOSTILE: dict[str, list[bytes | float]] = {
    "/bad-status": [b"HTTP/1.1 OK\r\nContent-Length: 2\r\n\r\n{}"],
    "/not-http": [b"SSH-2.0-OpenSSH_9.6\r\n\r\n"],
    "/no-colon": [OK_HEAD + b"this line has no colon\r\nContent-Length: 2\r\n\r\n{}"],
    "/bad-length": [OK_HEAD + b"Content-Length: twelve\r\n\r\n{}"],
    "/two-lengths": [OK_HEAD + b"Content-Length: 2\r\nContent-Length: 3\r\n\r\n{}x"],
    "/bad-chunk": [OK_HEAD + b"Transfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n"],
    "/chunk-overrun": [OK_HEAD + b"Transfer-Encoding: chunked\r\n\r\n2\r\n{}}}}\r\n0\r\n\r\n"],
    "/huge-head": [OK_HEAD + b"X-Pad: " + b"a" * 200_000 + b"\r\nContent-Length: 2\r\n\r\n{}"],
    "/truncated": [OK_HEAD + b'Content-Length: 100\r\n\r\n{"choices": ['],
    "/truncated-chunks": [OK_HEAD + b'Transfer-Encoding: chunked\r\n\r\n10\r\n{"cho'],
    "/head-cut": [b"HTTP/1.1 200 OK\r\nContent-Le"],
    "/bad-json": [OK_HEAD + b"Content-Length: 9\r\n\r\n{not json"],
    "/drip": [b"H", 0.2, b"T", 0.2, b"T", 0.2, b"P", 0.2, b"/", 0.2, b"1", 0.2, b".", 0.2],
    # one write, so the smuggled answer is there before the next request could be sent
    "/smuggle": [
        OK_HEAD
        + b'Content-Length: 15\r\n\r\n{"first": true}'
        + OK_HEAD
        + b'Content-Length: 18\r\n\r\n{"smuggled": true}'
    ],
}


class _RawServer:
    """Reads each request, then writes the scripted bytes of its path (a float: a pause)."""

    def __init__(self) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        self.connections = 0
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.connections += 1
            threading.Thread(target=self._answer, args=(conn,), daemon=True).start()

    def _answer(self, conn: socket.socket) -> None:
        with conn:
            buf = b""
            while True:
                while b"\r\n\r\n" not in buf:
                    data = conn.recv(65536)
                    if not data:
                        return
                    buf += data
                head, _, buf = buf.partition(b"\r\n\r\n")
                path = head.split(b" ")[1].decode()
                if path == "/honest":
                    conn.sendall(OK_HEAD + b'Content-Length: 16\r\n\r\n{"honest": true}')
                    continue
                try:
                    for step in HOSTILE[path]:
                        if isinstance(step, float):
                            time.sleep(step)
                        else:
                            conn.sendall(step)
                except OSError:
                    return  # the client gave up first
                if path != "/smuggle":
                    return  # close after the scripted answer

    def close(self) -> None:
        self.sock.close()


@pytest.fixture
def hostile() -> Iterator[_RawServer]:
    srv = _RawServer()
    try:
        yield srv
    finally:
        srv.close()


def _probe(url: str, path: str, timeout_s: float = 5.0) -> Any:
    async def go() -> Any:
        async with EngineClient(url, timeout_s=timeout_s) as client:
            return await client.get_json(path, "probe")

    return asyncio.run(go())


@pytest.mark.parametrize(
    "path",
    [
        "/bad-status",
        "/not-http",
        "/no-colon",
        "/bad-length",
        "/two-lengths",
        "/bad-chunk",
        "/chunk-overrun",
        "/huge-head",
    ],
)
def test_a_malformed_answer_is_an_engine_error_saying_it_is_not_http(
    hostile: _RawServer, path: str
) -> None:
    with pytest.raises(EngineError) as info:
        _probe(hostile.url, path)
    assert not isinstance(info.value, EngineTimeout)
    assert str(info.value).startswith("probe: the engine's answer is not well-formed HTTP/1.1")
    assert info.value.hint and "malformed" in info.value.hint


@pytest.mark.parametrize("path", ["/truncated", "/truncated-chunks", "/head-cut"])
def test_an_answer_cut_short_is_an_engine_error_naming_the_bytes_received(
    hostile: _RawServer, path: str
) -> None:
    with pytest.raises(EngineError, match=r"closed mid-answer after \d+ bytes") as info:
        _probe(hostile.url, path)
    assert not isinstance(info.value, EngineTimeout)


def test_a_header_block_over_the_limit_is_refused_before_it_is_all_read(
    hostile: _RawServer,
) -> None:
    from verifier.harness.wire import MAX_HEAD_BYTES

    assert len(HOSTILE["/huge-head"][0]) > 3 * MAX_HEAD_BYTES  # type: ignore[arg-type]
    with pytest.raises(EngineError, match="not well-formed"):
        _probe(hostile.url, "/huge-head")


@pytest.mark.serial
def test_a_drip_fed_answer_times_out_at_the_request_deadline(hostile: _RawServer) -> None:
    start = time.monotonic()
    with pytest.raises(EngineTimeout, match=r"probe: the engine did not answer within 0\.5 s"):
        _probe(hostile.url, "/drip", timeout_s=0.5)
    assert time.monotonic() - start < 1.0, "bytes trickling in do not extend the deadline"


def test_a_body_that_is_not_json_is_an_engine_error(hostile: _RawServer) -> None:
    with pytest.raises(EngineError, match=r"probe: the answer is not JSON") as info:
        _probe(hostile.url, "/bad-json")
    assert not isinstance(info.value, EngineTimeout)


def test_bytes_after_an_answer_are_never_read_as_the_next_answer(hostile: _RawServer) -> None:
    async def go() -> list[Any]:
        async with EngineClient(hostile.url, timeout_s=5.0) as client:
            return [await client.get_json(p, "probe") for p in ("/smuggle", "/honest")]

    assert asyncio.run(go()) == [{"first": True}, {"honest": True}]
    assert hostile.connections == 2, "the connection with trailing bytes was not reused"
