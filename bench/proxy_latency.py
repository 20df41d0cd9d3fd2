"""What the vLLM launcher's readiness gate adds to each request.

``python -m bench --only proxy`` (or ``python -m bench.proxy_latency``). The upstream is
``bench.paced_engine --rate 0`` (answers at once), a separate process; the gate is
``engines.vllm_launcher.proxy.ReadinessProxy`` in another process, open (warm-up done).
One client, one keep-alive connection each way, sends the same non-streamed POST
``/v1/completions`` either straight to the upstream or through the gate, in interleaved
rounds (direct, proxied, direct, ...) so a busy moment of the shared machine hits both.

Two answer sizes: ``max_tokens`` 1 (the smallest request) and 512 (a fast-gemma TPS
request's answer: 512 token ids and their text). Per round, the mean time per request;
the overhead is proxied minus direct of the same round pair. Reported: the median over
rounds, its spread, and the overhead relative to one 512-token request at 500 tokens/s
(about 1 s, the frontier).
"""

from __future__ import annotations

import http.client
import json
import statistics
import sys
import time
from typing import Any

from bench.common import EngineProcess, free_port, start_engine

GATE = (
    "import sys, time\n"
    "from engines.vllm_launcher.proxy import ReadinessProxy\n"
    "gate = ReadinessProxy('127.0.0.1', int(sys.argv[1]), '127.0.0.1', int(sys.argv[2]))\n"
    "gate.start(); gate.set_ready()\n"
    "while True: time.sleep(3600)\n"
)


def mean_request_s(port: int, body: bytes, count: int) -> float:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    headers = {"Content-Type": "application/json"}
    try:
        for _ in range(10):  # the connection and both servers' threads are warm
            conn.request("POST", "/v1/completions", body=body, headers=headers)
            conn.getresponse().read()
        start = time.perf_counter()
        for _ in range(count):
            conn.request("POST", "/v1/completions", body=body, headers=headers)
            conn.getresponse().read()
        return (time.perf_counter() - start) / count
    finally:
        conn.close()


def measure(direct: int, proxied: int, max_tokens: int, rounds: int, count: int) -> dict[str, Any]:
    body = json.dumps(
        {
            "model": "bench/paced",
            "prompt": "hello",
            "max_tokens": max_tokens,
            "temperature": 0,
            "return_token_ids": True,
        }
    ).encode()
    pairs = []
    for _ in range(rounds):
        d = mean_request_s(direct, body, count)
        p = mean_request_s(proxied, body, count)
        pairs.append({"direct_us": d * 1e6, "proxied_us": p * 1e6, "overhead_us": (p - d) * 1e6})
    overheads = sorted(x["overhead_us"] for x in pairs)
    median = statistics.median(overheads)
    return {
        "max_tokens": max_tokens,
        "requests_per_round": count,
        "rounds": pairs,
        "overhead_us_median": median,
        "overhead_us_min": overheads[0],
        "overhead_us_max": overheads[-1],
        "direct_us_median": statistics.median(x["direct_us"] for x in pairs),
        "proxied_us_median": statistics.median(x["proxied_us"] for x in pairs),
        # one 512-token answer at 500 tokens/s takes about 1.024 s
        "overhead_of_a_frontier_request": median * 1e-6 / (512 / 500),
    }


def run(quick: bool = False) -> dict[str, Any]:
    up_port, gate_port = free_port(), free_port()
    upstream: EngineProcess = start_engine(
        ["-m", "bench.paced_engine", "--rate", "0", "--port", str(up_port)], port=up_port
    )
    try:
        gate = start_engine(["-c", GATE, str(gate_port), str(up_port)], port=gate_port)
        try:
            rounds, count = (5, 200) if quick else (11, 400)
            sizes = [measure(up_port, gate_port, n, rounds, count) for n in (1, 512)]
        finally:
            gate.stop()
    finally:
        upstream.stop()
    return {"sizes": sizes}


def main() -> int:
    from bench.common import machine, write_result

    started = time.perf_counter()
    data = {
        "machine": machine(),
        "command": "python -m bench.proxy_latency",
        **run(quick="--quick" in sys.argv),
    }
    data["seconds"] = round(time.perf_counter() - started, 1)
    print(write_result("proxy", data))
    for size in data["sizes"]:
        print(
            f"max_tokens {size['max_tokens']}: direct {size['direct_us_median']:.0f} us, "
            f"proxied {size['proxied_us_median']:.0f} us, overhead median "
            f"{size['overhead_us_median']:.0f} us ({size['overhead_us_min']:.0f} to "
            f"{size['overhead_us_max']:.0f})"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
