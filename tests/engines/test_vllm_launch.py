"""The launcher at run time: the readiness proxy and real launches of a fake ``vllm``.

A fake ``vllm`` executable (tests/engines/fake_vllm.py) on PATH lets
``python -m engines.vllm_launcher`` really start a child, really warm it up and really
proxy to it; only vLLM itself is a stand-in. The proxy is tested against the same fake,
over real sockets.
"""

from __future__ import annotations

import http.client
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from knob_samples import PUBLISHED

from engines.vllm_launcher.proxy import ReadinessProxy

REPO = Path(__file__).resolve().parents[2]
FAKE_VLLM = Path(__file__).with_name("fake_vllm.py")


def option(argv: list[str], name: str) -> str:
    return argv[argv.index(name) + 1]


# --- the readiness proxy against a real (fake) upstream ----------------------------------


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def request(
    port: int, method: str, path: str, body: Any = None
) -> tuple[int, bytes, http.client.HTTPResponse]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    data = None if body is None else json.dumps(body).encode()
    headers = {"Content-Type": "application/json"} if data is not None else {}
    conn.request(method, path, body=data, headers=headers)
    response = conn.getresponse()
    content = response.read()
    conn.close()
    return response.status, content, response


def wait_until(predicate: Callable[[], bool], timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.02)
    raise AssertionError("timed out waiting")


def answers(port: int, path: str = "/health") -> int | None:
    try:
        return request(port, "GET", path)[0]
    except OSError:
        return None


@pytest.fixture
def upstream(tmp_path: Path) -> Iterator[tuple[int, Path]]:
    port, log = free_port(), tmp_path / "fake.log"
    process = subprocess.Popen(
        [sys.executable, str(FAKE_VLLM), "--model", "/model", "--host", "127.0.0.1",
         "--port", str(port), "--served-model-name", "gemma"],
        env={**os.environ, "FAKE_VLLM_LOG": str(log)},
    )  # fmt: skip
    try:
        wait_until(lambda: answers(port) == 200)
        yield port, log
    finally:
        process.terminate()
        process.wait(timeout=10)


@pytest.fixture
def proxy(upstream: tuple[int, Path]) -> Iterator[ReadinessProxy]:
    gate = ReadinessProxy("127.0.0.1", 0, "127.0.0.1", upstream[0])
    gate.start()
    try:
        yield gate
    finally:
        gate.close()


def test_proxy_answers_503_everywhere_until_ready_then_forwards(proxy: ReadinessProxy) -> None:
    for method, path in [("GET", "/health"), ("GET", "/v1/models"), ("POST", "/v1/completions")]:
        status, body, response = request(proxy.port, method, path, {} if method == "POST" else None)
        assert status == 503
        assert response.getheader("Retry-After") == "1"
    proxy.set_ready()
    assert request(proxy.port, "GET", "/health")[0] == 200
    status, body, _ = request(proxy.port, "GET", "/v1/models")
    assert status == 200 and json.loads(body)["data"][0]["id"] == "gemma"
    payload = {"model": "gemma", "prompt": [1, 2], "max_tokens": 3}
    status, body, _ = request(proxy.port, "POST", "/v1/completions", payload)
    assert status == 200 and json.loads(body)["choices"][0]["token_ids"] == [0, 1, 2]
    assert request(proxy.port, "GET", "/nowhere")[0] == 404


def test_proxy_streams_server_sent_events(proxy: ReadinessProxy) -> None:
    proxy.set_ready()
    payload = {"model": "gemma", "prompt": "x", "max_tokens": 5, "stream": True}
    status, body, response = request(proxy.port, "POST", "/v1/completions", payload)
    assert status == 200
    assert response.getheader("Content-Type") == "text/event-stream"
    events = [line for line in body.decode().split("\n\n") if line]
    assert len(events) == 6 and events[-1] == "data: [DONE]"
    assert json.loads(events[0].removeprefix("data: "))["choices"][0]["text"] == " t0"


def test_proxy_forwards_request_bodies_and_keeps_connections_alive(
    proxy: ReadinessProxy, upstream: tuple[int, Path]
) -> None:
    proxy.set_ready()
    conn = http.client.HTTPConnection("127.0.0.1", proxy.port, timeout=10)
    for n in (1, 2, 3):
        body = json.dumps({"model": "gemma", "prompt": "hi", "max_tokens": n})
        conn.request("POST", "/v1/completions", body=body)
        assert len(json.loads(conn.getresponse().read())["choices"][0]["token_ids"]) == n
    conn.close()
    seen = [json.loads(line) for line in upstream[1].read_text().splitlines()]
    posted = [e["body"]["max_tokens"] for e in seen if e.get("method") == "POST"]
    assert posted == [1, 2, 3]


def test_proxy_answers_502_when_vllm_is_gone() -> None:
    gate = ReadinessProxy("127.0.0.1", 0, "127.0.0.1", free_port())
    gate.start()
    try:
        gate.set_ready()
        assert request(gate.port, "GET", "/health")[0] == 502
    finally:
        gate.close()


@pytest.mark.serial
def test_proxy_latency_overhead_is_small(proxy: ReadinessProxy, upstream: tuple[int, Path]) -> None:
    """Mean extra time per small POST through the proxy, over one keep-alive connection."""
    proxy.set_ready()
    body = json.dumps({"model": "gemma", "prompt": "hi", "max_tokens": 1})

    def mean_seconds(port: int, count: int = 300) -> float:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        for _ in range(20):
            conn.request("POST", "/v1/completions", body=body)
            conn.getresponse().read()
        start = time.perf_counter()
        for _ in range(count):
            conn.request("POST", "/v1/completions", body=body)
            conn.getresponse().read()
        conn.close()
        return (time.perf_counter() - start) / count

    direct = min(mean_seconds(upstream[0]) for _ in range(3))
    proxied = min(mean_seconds(proxy.port) for _ in range(3))
    overhead_us = (proxied - direct) * 1e6
    print(f"direct {direct * 1e6:.0f} us, proxied {proxied * 1e6:.0f} us, +{overhead_us:.0f} us")
    assert overhead_us < 5000


# --- a real launch with a fake vllm on PATH ----------------------------------------------


@pytest.fixture
def fake_vllm_path(tmp_path: Path) -> str:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    script = bin_dir / "vllm"
    script.write_text(f'#!/bin/sh\nexec "{sys.executable}" "{FAKE_VLLM}" "$@"\n')
    script.chmod(0o755)
    return f"{bin_dir}{os.pathsep}{os.environ['PATH']}"


def start_launcher(
    tmp_path: Path, config: dict[str, Any], path: str, *extra: str, **env: str
) -> tuple[subprocess.Popen[bytes], int, Path]:
    config_path = tmp_path / "engine-config.json"
    config_path.write_text(json.dumps(config))
    port, internal, log = free_port(), free_port(), tmp_path / "fake.log"
    process = subprocess.Popen(
        [sys.executable, "-m", "engines.vllm_launcher", str(config_path), "--host", "127.0.0.1",
         "--port", str(port), "--internal-port", str(internal), "--vllm", "vllm",
         "--drafter-dir", str(tmp_path / "drafter-copy"), *extra],
        cwd=REPO,
        env={**os.environ, "PATH": path, "FAKE_VLLM_LOG": str(log), **env},
        stderr=subprocess.PIPE,
    )  # fmt: skip
    return process, port, log


def read_log(log: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


def test_launch_warms_up_before_readiness_then_serves(tmp_path: Path, fake_vllm_path: str) -> None:
    config = {
        **PUBLISHED,
        "WARMUP_NUM_PROMPTS": 6,
        "WARMUP_MAX_TOKENS": 9,
        "SERVED_MODEL_NAME": "gemma",
        "ATTENTION_BACKEND": "FLASH_ATTN",
        "EXTRA_SETTING": "on",
    }
    drafter = tmp_path / "drafter"
    drafter.mkdir()
    (drafter / "config.json").write_text(json.dumps({"model_type": "gemma4_assistant"}))
    (drafter / "model.safetensors").write_bytes(b"weights")
    process, port, log = start_launcher(
        tmp_path, config, fake_vllm_path, "--drafter", str(drafter),
        FAKE_VLLM_DELAY="0.3", FAKE_VLLM_GEN_DELAY="0.05",
    )  # fmt: skip
    try:
        statuses: list[int | None] = []

        def ready() -> bool:
            statuses.append(answers(port))
            return statuses[-1] == 200

        wait_until(ready)
        at_ready = read_log(log)
        assert 503 in statuses, "the gate must have answered 503 while vLLM loaded and warmed"
        warmups = [e for e in at_ready if e.get("method") == "POST"]
        assert len(warmups) == 6
        assert [e["path"] for e in warmups[:2]] == ["/v1/completions", "/v1/chat/completions"]
        assert all(e["body"]["max_tokens"] == 9 and e["body"]["model"] == "gemma" for e in warmups)
        assert all(e["body"]["temperature"] == 0.0 for e in warmups)
        forwarded_health = [i for i, e in enumerate(at_ready) if e.get("path") == "/health"]
        last_warmup = max(i for i, e in enumerate(at_ready) if e.get("method") == "POST")
        assert all(i > last_warmup for i in forwarded_health)

        start = at_ready[0]
        assert start["argv"][:2] == ["--model", "/model"]
        copy = tmp_path / "drafter-copy"
        assert json.loads(option(start["argv"], "--speculative-config"))["model"] == str(copy)
        assert json.loads((copy / "config.json").read_text())["centroid_intermediate_top_k"] == 49
        assert (copy / "model.safetensors").resolve() == (drafter / "model.safetensors")
        assert start["env"]["VLLM_ATTENTION_BACKEND"] == "FLASH_ATTN"
        assert start["env"]["EXTRA_SETTING"] == "on"
        assert "--EXTRA_SETTING" not in start["argv"]

        status, body, _ = request(port, "GET", "/v1/models")
        assert status == 200 and json.loads(body)["data"][0]["id"] == "gemma"
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=20) == 0
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert process.stderr is not None
    stderr = process.stderr.read().decode()
    assert "warm-up: 6/6 answered" in stderr


def test_launch_without_warmup_is_ready_as_soon_as_vllm_answers(
    tmp_path: Path, fake_vllm_path: str
) -> None:
    process, port, log = start_launcher(tmp_path, {"WARMUP_BRIDGE": 0}, fake_vllm_path)
    try:
        wait_until(lambda: answers(port) == 200)
        assert not [e for e in read_log(log) if e.get("method") == "POST"]
    finally:
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=20) == 0


def test_launcher_exits_with_the_code_of_a_dying_vllm(tmp_path: Path, fake_vllm_path: str) -> None:
    process, port, _ = start_launcher(
        tmp_path, {}, fake_vllm_path, FAKE_VLLM_EXIT_AFTER="1.0", FAKE_VLLM_EXIT_CODE="3"
    )
    try:
        assert process.wait(timeout=30) == 3
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert answers(port) is None, "the public port closes with vLLM"
