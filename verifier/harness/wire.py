"""The harness's wire to an engine: HTTP/1.1 keep-alive connections, parsed by h11.

An engine under test is an adversary, so its answers are parsed by ``h11`` (the sans-IO
HTTP/1.1 state machine under httpx), not by hand: status line, headers, Content-Length,
chunked and close-delimited bodies, informational answers and keep-alive rules are h11's;
this module only moves bytes between h11 and an asyncio connection. Each request is one
write (request line, headers and body together, on a TCP_NODELAY connection): the TPS
loop is closed, so whatever happens between one answer and the next request is charged
to the engine (``docs/benchmarks.md``, section 1, measures what the loop costs).

Failures are plain exceptions, translated by ``client.engine_error``: ``OSError``
(refused, reset), ``ProtocolError`` (h11 refused the answer: a malformed status line,
bad chunking, a header block over ``MAX_HEAD_BYTES``, a body cut short),
``TimeoutError``. A kept-alive connection the engine closed meanwhile (nothing of the
answer arrived) is retried once on a fresh connection.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from urllib.parse import urlsplit

import h11

from verifier.harness import netns

#: the longest header block (or chunk-size line) an engine may send before h11 refuses it
MAX_HEAD_BYTES = 64 * 1024
_MAX_BUFFER = 1 << 20  # unparsed bytes held before reading pauses


class ProtocolError(Exception):
    """The engine's answer is not well-formed HTTP/1.1 (h11 refused it).

    ``summary`` is podium's own description; ``detail``, h11's, may quote the bytes the
    engine sent (``str()`` holds both: for the organizer's log, not for the report).
    """

    def __init__(self, summary: str, detail: str | None = None) -> None:
        super().__init__(f"{summary} ({detail})" if detail else summary)
        self.summary = summary
        self.detail = detail


class StaleConnection(ConnectionError):
    """A reused connection closed before any byte of the answer: safe to send again."""


@dataclass
class Response:
    """A complete answer; ``path`` is the request's path, for error messages."""

    status: int
    headers: dict[str, str]
    body: bytes
    path: str

    @property
    def ok(self) -> bool:
        return 200 <= self.status < 300

    @property
    def text(self) -> str:
        return self.body.decode("utf-8", "replace")


class _Conn(asyncio.Protocol):
    """One TCP connection: bytes go straight from the socket into its h11 state machine.

    Everything the engine sends lands in h11's buffer as it arrives, so bytes sent past
    an answer are seen (``usable`` is then false) instead of being read later as the
    answer to the next request. Reading pauses while more than ``_MAX_BUFFER`` bytes
    wait to be parsed.
    """

    def __init__(self) -> None:
        self.h11 = h11.Connection(h11.CLIENT, max_incomplete_event_size=MAX_HEAD_BYTES)
        self.transport: asyncio.Transport | None = None
        self.reused = False
        self.received = 0  # bytes of the current answer so far
        self.eof = False  # the engine closed its side
        self.lost: Exception | None = None
        self._unparsed = 0  # bytes given to h11 since it last asked for more
        self._paused = False
        self._wake: asyncio.Future[None] | None = None

    # -- asyncio's side ----------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        if self.eof:
            return
        self.received += len(data)
        self._unparsed += len(data)
        self.h11.receive_data(data)
        if not self._paused and self._unparsed > _MAX_BUFFER:
            assert self.transport is not None
            self.transport.pause_reading()
            self._paused = True
        self._notify()

    def eof_received(self) -> bool:
        if not self.eof:
            self.eof = True
            self.h11.receive_data(b"")
        self._notify()
        return False  # close our side too

    def connection_lost(self, exc: Exception | None) -> None:
        self.lost = exc
        self.eof_received()

    def _notify(self) -> None:
        if self._wake is not None and not self._wake.done():
            self._wake.set_result(None)

    # -- ours ----------------------------------------------------------------------

    def usable(self) -> bool:
        """Open, and nothing arrived since the last answer ended."""
        assert self.transport is not None
        return not self.eof and not self.transport.is_closing() and not self.h11.trailing_data[0]

    def close(self) -> None:
        if self.transport is not None:
            self.transport.close()

    def send(self, method: str, target: str, headers: list[tuple[str, str]], body: bytes) -> None:
        """The whole request in one write: h11 checks and frames it."""
        try:
            data = self.h11.send(h11.Request(method=method, target=target, headers=headers))
            if body:
                data = (data or b"") + (self.h11.send(h11.Data(data=body)) or b"")
            data = (data or b"") + (self.h11.send(h11.EndOfMessage()) or b"")
        except h11.LocalProtocolError as exc:  # a request podium built wrongly: a bug
            raise ValueError(f"cannot send {method} {target}: {exc}") from exc
        if self.eof or self.transport is None or self.transport.is_closing():
            raise self._closed()
        self.received = 0
        self.transport.write(data)

    def _closed(self) -> OSError:
        if self.reused and self.received == 0:
            return StaleConnection("a kept-alive connection closed before answering")
        if self.lost is not None and isinstance(self.lost, OSError):
            return self.lost
        return ConnectionError("the engine closed the connection without answering")

    async def next_event(self) -> object:
        """The next event of the answer, waiting for bytes as h11 needs them."""
        while True:
            try:
                event = self.h11.next_event()
            except h11.RemoteProtocolError as exc:
                if self.eof and self.received:
                    cut = f"the connection closed mid-answer after {self.received} bytes"
                    raise ProtocolError(cut, str(exc)) from None
                if self.eof:
                    raise self._closed() from None
                raise ProtocolError("h11 refused it", str(exc)) from None
            if event is not h11.NEED_DATA:
                return event
            if self.eof:  # h11 wants more, and no more will come
                raise self._closed()
            self._unparsed = 0
            if self._paused:
                assert self.transport is not None
                self._paused = False
                self.transport.resume_reading()
            self._wake = asyncio.get_running_loop().create_future()
            await self._wake

    def reusable(self) -> bool:
        """True once both sides finished the exchange, h11 allows another on it, and the
        engine sent nothing past its answer (never read as the next request's answer)."""
        done = self.h11.our_state is h11.DONE and self.h11.their_state is h11.DONE
        if done and self.usable():
            self.h11.start_next_cycle()
            return True
        return False


class Stream:
    """An answer whose body is read as it arrives (server-sent events)."""

    def __init__(self, conn: _Conn, status: int, headers: dict[str, str], path: str) -> None:
        self._conn = conn
        self.status = status
        self.headers = headers
        self.path = path
        self.done = False  # the body was read to its end

    async def chunks(self) -> AsyncIterator[bytes]:
        """The body's pieces, as they come; ``done`` is true once the body is complete."""
        while not self.done:
            event = await self._conn.next_event()
            if isinstance(event, h11.Data):
                yield bytes(event.data)
            elif isinstance(event, h11.EndOfMessage):
                self.done = True
            else:
                raise ProtocolError(f"unexpected {type(event).__name__} in an answer's body")

    async def read(self) -> bytes:
        return b"".join([piece async for piece in self.chunks()])

    async def lines(self) -> AsyncIterator[str]:
        """The body's lines (``\\n`` or ``\\r\\n``), decoded as UTF-8."""
        rest = b""
        async for piece in self.chunks():
            rest += piece
            *whole, rest = rest.split(b"\n")
            for line in whole:
                yield line.rstrip(b"\r").decode("utf-8", "replace")
        if rest:
            yield rest.rstrip(b"\r").decode("utf-8", "replace")


class Wire:
    """Kept-alive connections to one ``http://host:port[/prefix]`` base URL.

    Up to ``pool`` idle connections are kept; a request that finds none idle opens a new
    one at once rather than waiting, so no request queues for the pool inside a timed
    region. Use as ``async with``, or call ``aclose``.
    """

    def __init__(self, base_url: str, *, pool: int = 1, connect_timeout_s: float = 10.0) -> None:
        url = urlsplit(base_url)
        if url.scheme != "http" or not url.hostname:  # engines are local: no TLS
            raise ValueError(f"not an http:// URL: {base_url!r}")
        self.host, self.port, self.prefix = url.hostname, url.port or 80, url.path.rstrip("/")
        self._headers = [
            ("Host", url.netloc.rpartition("@")[2]),
            ("User-Agent", "podium-harness"),
            ("Accept", "*/*"),
        ]
        self.pool, self.connect_timeout_s = max(1, pool), connect_timeout_s
        self._idle: list[_Conn] = []

    async def __aenter__(self) -> Wire:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        idle, self._idle = self._idle, []
        for conn in idle:
            conn.close()

    async def request(
        self, method: str, path: str, body: bytes | None = None, *, timeout_s: float
    ) -> Response:
        """Send one request and read its whole answer within ``timeout_s`` seconds."""
        async with asyncio.timeout(timeout_s), self.stream(method, path, body) as stream:
            data = await stream.read()
        return Response(stream.status, stream.headers, data, stream.path)

    @contextlib.asynccontextmanager
    async def stream(
        self, method: str, path: str, body: bytes | None = None
    ) -> AsyncIterator[Stream]:
        """Send one request; the caller reads the body. The connection is pooled again
        only if the body was read to its end and both sides may go on with it."""
        conn = await self._acquire()
        keep = False
        try:
            try:
                status, headers = await self._exchange(conn, method, path, body)
            except StaleConnection:
                conn.close()
                conn = await self._connect()
                status, headers = await self._exchange(conn, method, path, body)
            stream = Stream(conn, status, headers, self.prefix + path)
            yield stream
            keep = stream.done and len(self._idle) < self.pool and conn.reusable()
        finally:
            if keep:
                conn.reused = True
                self._idle.append(conn)
            else:
                conn.close()

    async def _acquire(self) -> _Conn:
        while self._idle:
            conn = self._idle.pop()
            if conn.usable():
                return conn
            conn.close()
        return await self._connect()

    async def _connect(self) -> _Conn:
        loop = asyncio.get_running_loop()
        jail = netns.namespace_of(self.host)
        async with asyncio.timeout(self.connect_timeout_s):
            if jail is None:
                transport, conn = await loop.create_connection(_Conn, self.host, self.port)
            else:  # an engine in a jail: its own loopback, reached from inside its namespace
                sock = netns.socket_in(jail)
                try:
                    sock.setblocking(False)
                    await loop.sock_connect(sock, ("127.0.0.1", self.port))
                except BaseException:
                    sock.close()
                    raise
                transport, conn = await loop.create_connection(_Conn, sock=sock)
        sock = transport.get_extra_info("socket")
        if sock is not None:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return conn

    async def _exchange(
        self, conn: _Conn, method: str, path: str, body: bytes | None
    ) -> tuple[int, dict[str, str]]:
        """Write the request in one piece and read the answer's status line and headers."""
        headers = list(self._headers)
        if body is not None:
            headers += [("Content-Type", "application/json"), ("Content-Length", str(len(body)))]
        conn.send(method, self.prefix + path, headers, body or b"")
        while True:
            event = await conn.next_event()
            if isinstance(event, h11.InformationalResponse):
                continue  # 1xx answers precede the real one
            if not isinstance(event, h11.Response):
                raise ProtocolError(f"expected an answer, got {type(event).__name__}")
            return event.status_code, _headers(event.headers)


def _headers(raw: Sequence[tuple[bytes, bytes]]) -> dict[str, str]:
    """Header names lower-case (h11 already made them so); repeated names joined by ', '."""
    out: dict[str, str] = {}
    for name, value in raw:
        key, text = name.decode("latin-1"), value.decode("latin-1")
        out[key] = f"{out[key]}, {text}" if key in out else text
    return out
