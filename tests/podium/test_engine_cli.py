"""`podium engine serve` runs the baseline engine as a process; `vllm-args` shows the mapping."""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx

EXAMPLES = Path(__file__).resolve().parents[1] / "schemas" / "examples"
CLI = [sys.executable, "-m", "podium.cli.app"]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_engine_serve_baseline_tiny_answers_and_stops_on_sigterm() -> None:
    port = _free_port()
    proc = subprocess.Popen(
        [*CLI, "engine", "serve", "baseline", "--model", "tiny", "--port", str(port)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    try:
        deadline = time.monotonic() + 90
        while True:
            assert proc.poll() is None, proc.stdout.read() if proc.stdout else b""
            try:
                if httpx.get(f"http://127.0.0.1:{port}/health", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert time.monotonic() < deadline
            time.sleep(0.3)
        models = httpx.get(f"http://127.0.0.1:{port}/v1/models").json()
        assert models["data"][0]["id"] == "model"  # the shipped folder's name
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == 0


def test_engine_serve_rejects_an_unknown_engine_and_a_missing_model() -> None:
    bad = subprocess.run([*CLI, "engine", "serve", "turbo"], capture_output=True, text=True)
    assert bad.returncode == 2 and "unknown engine" in bad.stderr
    bad = subprocess.run(
        [*CLI, "engine", "serve", "baseline", "--model", "/nonexistent"],
        capture_output=True,
        text=True,
    )
    assert bad.returncode == 2 and "not a model folder" in bad.stderr


def test_vllm_args_of_the_winning_config() -> None:
    out = subprocess.run(
        [*CLI, "engine", "vllm-args", str(EXAMPLES / "engine-config.winning.env"), "--json"],
        capture_output=True,
        text=True,
        check=True,
    )
    doc = json.loads(out.stdout)
    argv = doc["argv"]
    assert argv[:5] == ["python3", "-m", "vllm.entrypoints.openai.api_server", "--model", "/model"]
    assert argv[argv.index("--hf-overrides") + 1] == '{"text_config":{"sliding_window":188}}'
    assert "--speculative-config" in argv and "--max-model-len" in argv
    assert doc["drafter_copy"]["config"] == {"centroid_intermediate_top_k": 49}
