"""The harness's earlier hand-written HTTP/1.1 client, kept only for ``bench.http_clients``.

Until the harness moved to h11 (``verifier/harness/wire.py``) this was its wire to an
engine: request line, headers and body written in one piece on a TCP_NODELAY
connection; status line, headers and a body delimited by Content-Length, chunks or end
of file parsed by hand. The benchmark drives it side by side with the h11 wire and with
httpx. Nothing in podium imports it.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections.abc import AsyncIterator
from dataclasses import dataclass

from verifier.harness import wire
from verifier.harness.wire import ProtocolError, StaleConnection

_LIMIT = 1 << 20  # longest header block or chunk-size line read in one piece


@dataclass
class _Conn:
    reader: asyncio.StreamReader
    writer: asyncio.StreamWriter
    reused: bool = False

    def usable(self) -> bool:
        return not self.reader.at_eof() and not self.writer.is_closing()

    def close(self) -> None:
        self.writer.close()


class Stream(wire.Stream):
    """An answer whose body is read as it arrives; ``read`` and ``lines`` are the h11
    wire's, over these hand-parsed chunks."""

    def __init__(self, conn: _Conn, status: int, headers: dict[str, str], path: str) -> None:
        self._legacy = conn
        self.status = status
        self.headers = headers
        self.path = path
        self.done = status in (204, 304)  # answers that never have a body
        self.chunked = "chunked" in headers.get("transfer-encoding", "").lower()
        keep_alive = "close" not in headers.get("connection", "").lower()
        self.reusable = keep_alive and (self.chunked or "content-length" in headers)
        length = headers.get("content-length", "0")
        if not length.isdigit():
            raise ProtocolError(f"malformed Content-Length: {length[:40]!r}")
        self._left = int(length)

    async def chunks(self) -> AsyncIterator[bytes]:
        """The body's pieces, as they come; ``done`` is true once the body is complete."""
        reader = self._legacy.reader
        if self.done:
            return
        if self.chunked:
            while True:
                size = _chunk_size(await reader.readuntil(b"\r\n"))
                if size == 0:
                    while (await reader.readuntil(b"\r\n")) != b"\r\n":
                        pass  # trailers: ignored
                    break
                data = await reader.readexactly(size + 2)
                yield data[:-2]
        elif "content-length" in self.headers:
            while self._left > 0:
                data = await reader.read(min(self._left, 1 << 16))
                if not data:
                    raise asyncio.IncompleteReadError(b"", self._left)
                self._left -= len(data)
                yield data
        else:
            while data := await reader.read(1 << 16):
                yield data
        self.done = True


def _chunk_size(line: bytes) -> int:
    try:
        return int(line.split(b";", 1)[0].strip(), 16)
    except ValueError:
        raise ProtocolError(f"malformed chunk size: {line[:40]!r}") from None


async def _read_head(reader: asyncio.StreamReader) -> bytes:
    try:
        return await reader.readuntil(b"\r\n\r\n")
    except asyncio.LimitOverrunError:
        raise ProtocolError(f"an answer's header block exceeds {_LIMIT} bytes") from None


class Wire(wire.Wire):
    """The h11 wire's pool and ``request``, over the hand-written exchange below."""

    def __init__(self, base_url: str, *, pool: int = 1, connect_timeout_s: float = 10.0) -> None:
        super().__init__(base_url, pool=pool, connect_timeout_s=connect_timeout_s)
        host = self._headers[0][1]
        self._head = f"Host: {host}\r\nUser-Agent: podium-harness\r\nAccept: */*\r\n"

    @contextlib.asynccontextmanager
    async def stream(
        self, method: str, path: str, body: bytes | None = None
    ) -> AsyncIterator[Stream]:
        """Send one request; the caller reads the body. The connection is pooled again
        only if the body was read to its end and the engine keeps it alive."""
        data = self._encode(method, path, body)
        conn = await self._acquire()
        keep = False
        try:
            try:
                status, headers = await self._exchange(conn, data)
            except StaleConnection:
                conn.writer.close()
                conn = await self._connect()
                status, headers = await self._exchange(conn, data)
            stream = Stream(conn, status, headers, self.prefix + path)
            yield stream
            keep = stream.done and stream.reusable and len(self._idle) < self.pool
        finally:
            if keep:
                conn.reused = True
                self._idle.append(conn)
            else:
                conn.writer.close()

    def _encode(self, method: str, path: str, body: bytes | None) -> bytes:
        head = f"{method} {self.prefix}{path} HTTP/1.1\r\n{self._head}"
        if body is None:
            return (head + "\r\n").encode("latin-1")
        head += f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
        return head.encode("latin-1") + body

    async def _connect(self) -> _Conn:
        async with asyncio.timeout(self.connect_timeout_s):
            reader, writer = await asyncio.open_connection(self.host, self.port, limit=_LIMIT)
        sock = writer.get_extra_info("socket")
        if sock is not None:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return _Conn(reader, writer)

    async def _exchange(self, conn: _Conn, data: bytes) -> tuple[int, dict[str, str]]:
        """Write the request in one piece and read the answer's status line and headers."""
        try:
            conn.writer.write(data)
            await conn.writer.drain()
            head = await _read_head(conn.reader)
        except (asyncio.IncompleteReadError, ConnectionResetError, BrokenPipeError) as exc:
            partial = isinstance(exc, asyncio.IncompleteReadError) and exc.partial
            if conn.reused and not partial:
                raise StaleConnection(f"a kept-alive connection closed: {exc!r}") from exc
            raise
        status, headers = _parse_head(head)
        while 100 <= status < 200:  # informational answers precede the real one
            status, headers = _parse_head(await _read_head(conn.reader))
        return status, headers


def _parse_head(head: bytes) -> tuple[int, dict[str, str]]:
    lines = head.decode("latin-1").split("\r\n")[:-2]  # the head ends in two CRLFs
    parts = lines[0].split(" ", 2)
    if len(parts) < 2 or not parts[0].startswith("HTTP/1.") or not parts[1].isdigit():
        raise ProtocolError(f"not an HTTP/1.x status line: {lines[0][:80]!r}")
    headers: dict[str, str] = {}
    for line in lines[1:]:
        name, sep, value = line.partition(":")
        if not sep:
            raise ProtocolError(f"malformed header line: {line[:80]!r}")
        key, value = name.strip().lower(), value.strip()
        headers[key] = f"{headers[key]}, {value}" if key in headers else value
    if parts[0] == "HTTP/1.0" and "keep-alive" not in headers.get("connection", "").lower():
        headers["connection"] = "close"
    return int(parts[1]), headers
