"""`python -m engines.baseline` as a container runs it: set by environment, ended by SIGTERM."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

import httpx

REPO_ROOT = Path(__file__).resolve().parents[2]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def test_module_serves_from_env_and_exits_cleanly_on_sigterm(tiny_model_dir: Path) -> None:
    port = _free_port()
    env = {
        **os.environ,
        "MODEL_PATH": str(tiny_model_dir),
        "PORT": str(port),
        "SERVED_MODEL_NAME": "from-env",
        "MAX_MODEL_LEN": "128",
    }
    proc = subprocess.Popen(
        [sys.executable, "-m", "engines.baseline"],
        cwd=REPO_ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line.strip() == f"ready on http://127.0.0.1:{port}"
        models = httpx.get(f"http://127.0.0.1:{port}/v1/models", timeout=30).json()
        assert models["data"][0]["id"] == "from-env"
        assert models["data"][0]["max_model_len"] == 128
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_a_frozen_config_with_auto_values_starts_the_engine(
    tiny_model_dir: Path, tmp_path: Path
) -> None:
    """DTYPE and DEVICE "auto" pass validation, so the engine must run with them."""
    config = tmp_path / "engine-config.json"
    knobs = {"DEVICE": "auto", "DTYPE": "auto", "MAX_MODEL_LEN": 96, "SLIDING_WINDOW": 8}
    config.write_text(json.dumps({**knobs, "SERVED_MODEL_NAME": "from-config"}))
    port = _free_port()
    env = {**os.environ, "MODEL_PATH": str(tiny_model_dir), "PORT": str(port), "DTYPE": "float16"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "engines.baseline", "--config", str(config)],
        cwd=REPO_ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line.strip() == f"ready on http://127.0.0.1:{port}", proc.stderr.read()[-2000:]
        models = httpx.get(f"http://127.0.0.1:{port}/v1/models", timeout=30).json()
        assert models["data"][0]["id"] == "from-config"
        assert models["data"][0]["max_model_len"] == 96  # the config wins over the environment
        reply = httpx.post(
            f"http://127.0.0.1:{port}/v1/completions",
            json={"prompt": [2, 100, 200], "max_tokens": 3, "temperature": 0},
            timeout=30,
        ).json()
        assert len(reply["choices"][0]["text"]) >= 0 and reply["usage"]["completion_tokens"] == 3
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
