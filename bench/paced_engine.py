"""An engine with an exact, known token rate, for measuring the harness itself.

``python -m bench.paced_engine --rate R --port P`` serves the protocol subset the TPS
stage uses (``/health``, ``/v1/models``, ``/v1/chat/completions`` and
``/v1/completions``, non-streamed, with ``return_token_ids``). Every request gets
exactly ``max_tokens`` token ids, and its answer is written when they are due on an
absolute clock started when the request line arrived: ``line + max_tokens / R`` (the
answer is encoded before the wait and written in one piece, and the end of the wait is
napped and spun rather than slept (``wait_until``), so the answer leaves on time, not a
sleep's late wake-up after). Requests
are paced independently (one thread each), so at concurrency ``c`` the engine delivers
``c x R`` tokens/s for as long as the client keeps ``c`` requests in flight. ``--rate 0``
answers at once (the client's ceiling).

The engine keeps its own clock per request: arrival (body read and parsed), when the answer was
due, when its last byte was written, and the client's port (one per kept-alive
connection); also when the request line arrived, so the server's own parsing is
separated from the client's time. ``GET /stats`` returns them (``?reset=1`` clears
them), so a benchmark can compare the harness's number with what the engine saw. Both sides use
``time.perf_counter``, which on Linux is the system-wide monotonic clock: the two
processes' timestamps are on one time line.
"""

from __future__ import annotations

import argparse
import json
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

MODEL_ID = "bench/paced"
#: the last part of each wait is napped and spun, not slept: a sleep wakes up late
SPIN_S = 0.002


def wait_until(due: float) -> None:
    """Sleep to within SPIN_S of ``due``, then in 0.1 ms naps, then spin the last 0.2 ms.

    A plain ``sleep`` wakes up to about a millisecond late on a busy machine; spinning the
    whole margin would burn a core per in-flight request. This is on time to tens of µs
    and spins for 0.2 ms per request at most.
    """
    left = due - time.perf_counter()
    if left > SPIN_S:
        time.sleep(left - SPIN_S)
    while (left := due - time.perf_counter()) > 0.0002:
        time.sleep(0.0001)
    while time.perf_counter() < due:
        pass


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, address: tuple[str, int], rate: float) -> None:
        super().__init__(address, _Handler)
        self.rate = rate
        self.lock = threading.Lock()
        self.log: list[dict[str, Any]] = []


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def setup(self) -> None:
        super().setup()
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def parse_request(self) -> bool:
        # called right after the request line arrived: headers and body are still unread
        self.line_at = time.perf_counter()
        return super().parse_request()

    def _encode(self, status: int, body: Any) -> bytes:
        """Status line, headers and JSON body as one buffer (one write, one segment)."""
        data = json.dumps(body, separators=(",", ":")).encode()
        head = (
            f"HTTP/1.1 {status} {self.responses.get(status, ('',))[0]}\r\n"
            "Content-Type: application/json\r\n"
            f"Content-Length: {len(data)}\r\n\r\n"
        )
        return head.encode("latin-1") + data

    def _send(self, status: int, body: Any) -> None:
        self.wfile.write(self._encode(status, body))
        self.wfile.flush()

    def do_GET(self) -> None:
        path, _, query = self.path.partition("?")
        if path == "/health":
            self._send(200, {})
        elif path == "/v1/models":
            self._send(200, {"object": "list", "data": [{"id": MODEL_ID, "object": "model"}]})
        elif path == "/stats":
            with self.server.lock:
                log = list(self.server.log)
                if "reset=1" in query:
                    self.server.log.clear()
            self._send(200, {"rate": self.server.rate, "requests": log})
        else:
            self._send(404, {"error": {"message": "not found"}})

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))))
        arrival = time.perf_counter()
        if self.path not in ("/v1/completions", "/v1/chat/completions"):
            self._send(404, {"error": {"message": "not found"}})
            return
        if body.get("stream"):
            self._send(400, {"error": {"message": "this engine does not stream"}})
            return
        n = int(body.get("max_completion_tokens") or body.get("max_tokens") or 16)
        ids = [(7 * i + 3) % 1000 + 10 for i in range(n)]
        chat = self.path.endswith("/chat/completions")
        choice: dict[str, Any] = {"index": 0, "finish_reason": "length"}
        if chat:
            choice["message"] = {"role": "assistant", "content": "x" * n}
        else:
            choice["text"] = "x" * n
        if body.get("return_token_ids"):
            choice["token_ids"] = ids
        usage = {"prompt_tokens": 8, "completion_tokens": n, "total_tokens": 8 + n}
        answer = {"id": "cmpl-paced", "model": MODEL_ID, "choices": [choice], "usage": usage}
        rate = self.server.rate
        # The answer is due n / R after the request line arrived; it is encoded before
        # the wait and written in one piece, and the last millisecond is spun rather
        # than slept, so the engine delivers at its nominal rate, not later.
        due = self.line_at + n / rate if rate > 0 else arrival
        payload = self._encode(200, answer)
        wait_until(due)
        self.wfile.write(payload)
        self.wfile.flush()
        end = time.perf_counter()
        entry = {
            "line": self.line_at,
            "arrival": arrival,
            "due": due,
            "end": end,
            "tokens": n,
            "client_port": self.client_address[1],
        }
        with self.server.lock:
            self.server.log.append(entry)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.paced_engine", description=__doc__)
    parser.add_argument("--rate", type=float, required=True, help="tokens/s per request; 0: none")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000)
    args = parser.parse_args(argv)
    server = _Server((args.host, args.port), args.rate)
    print(f"ready on http://{args.host}:{server.server_address[1]}", flush=True)
    try:
        server.serve_forever(poll_interval=0.2)
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
