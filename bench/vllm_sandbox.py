"""Real vLLM in podium's sandbox: the top-level Dockerfile on podium/vllm-cpu, as verified.

``engine_image`` builds the reference engine image (Dockerfile, launcher, one engine
config) on the locally built vllm-cpu base; ``SandboxedEngine`` runs it the way the
verifier does (its own internal network, read-only root, exec tmpfs, every capability
dropped, no-new-privileges, pid and memory limits, the tiny model read-only at /model)
and waits for the launcher's gate to open. Nothing is pulled; everything is labelled
``org.podium.test`` and removed afterwards. Used by the real-vLLM tests and benchmarks.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import shutil
import time
import uuid
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
VLLM_CPU = "podium/vllm-cpu:0.32.0"
MODEL = REPO / "podium" / "data" / "tiny" / "model"
TEST_LABEL = "org.podium.test"
SERVED = "podium/tiny-gemma4"
#: What every test engine freezes: the challenge's float32 (vLLM's CPU default is bfloat16),
#: eager mode (about 25 s to start instead of about 60 s of compilation), one torch thread
#: (two spinning OpenMP threads on a shared 2-core machine make vLLM slow and erratic:
#: docs/benchmarks.md, "OpenMP threads and runtime of vLLM").
BASE_CONFIG: dict[str, Any] = {
    "DEVICE": "cpu",
    "DTYPE": "float32",
    "ENFORCE_EAGER": True,
    "SERVED_MODEL_NAME": SERVED,
    "OMP_NUM_THREADS": 1,
}


def engine_image(client: Any, config: dict[str, Any], workdir: Path) -> str:
    """Build the top-level Dockerfile with ``config`` on podium/vllm-cpu; its image id."""
    context = workdir / f"context-{uuid.uuid4().hex[:8]}"
    (context / "engines").mkdir(parents=True)
    shutil.copy(REPO / "Dockerfile", context / "Dockerfile")
    shutil.copy(REPO / "engines" / "__init__.py", context / "engines" / "__init__.py")
    shutil.copytree(
        REPO / "engines" / "vllm_launcher",
        context / "engines" / "vllm_launcher",
        ignore=shutil.ignore_patterns("__pycache__"),
    )
    (context / "engine-config.json").write_text(json.dumps(config))
    base = client.images.get(VLLM_CPU).id
    log = []
    image_id = None
    for chunk in client.api.build(
        path=str(context),
        buildargs={"BASE_IMAGE": base},
        rm=True,
        forcerm=True,
        decode=True,
        labels={TEST_LABEL: "vllm"},
    ):
        log.append(chunk.get("stream", ""))
        if "error" in chunk:
            raise AssertionError(f"docker build failed: {chunk['error']}\n{''.join(log)}")
        if "aux" in chunk and "ID" in chunk["aux"]:
            image_id = chunk["aux"]["ID"]
    assert image_id, "".join(log)
    return str(image_id)


def request(
    base_url: str, method: str, path: str, body: Any = None, timeout: float = 60.0
) -> tuple[int, Any]:
    host, port = base_url.removeprefix("http://").split(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=timeout)
    data = None if body is None else json.dumps(body).encode()
    headers = {"Content-Type": "application/json"} if data is not None else {}
    try:
        conn.request(method, path, body=data, headers=headers)
        response = conn.getresponse()
        raw = response.read()
    finally:
        conn.close()
    try:
        return response.status, json.loads(raw)
    except ValueError:
        return response.status, raw.decode("utf-8", "replace")


class SandboxedEngine:
    """One container of an engine image, run as the verifier's sandbox runs it."""

    def __init__(self, client: Any, image: str, *, model: Path = MODEL) -> None:
        self.client, self.image, self.model = client, image, model
        self.suffix = uuid.uuid4().hex[:10]
        self.network: Any = None
        self.container: Any = None
        self.base_url = ""
        self.ready_seconds = 0.0
        self.counters_at_ready: dict[str, float] = {}

    def start(self, timeout_s: float = 240.0) -> SandboxedEngine:
        labels = {TEST_LABEL: "vllm"}
        self.network = self.client.networks.create(
            f"podium-test-{self.suffix}", driver="bridge", internal=True, labels=labels
        )
        self.container = self.client.containers.create(
            self.image,
            network=self.network.name,
            read_only=True,
            tmpfs={"/tmp": "rw,nosuid,nodev,exec,size=1g"},
            cap_drop=["ALL"],
            security_opt=["no-new-privileges"],
            pids_limit=512,
            mem_limit="4g",
            memswap_limit="4g",
            nano_cpus=2_000_000_000,
            shm_size="256m",
            volumes={str(self.model): {"bind": "/model", "mode": "ro"}},
            labels=labels,
        )
        started = time.monotonic()
        self.container.start()
        self.container.reload()
        ip = self.container.attrs["NetworkSettings"]["Networks"][self.network.name]["IPAddress"]
        self.base_url = f"http://{ip}:8000"
        while time.monotonic() - started < timeout_s:
            self.container.reload()
            if self.container.status != "running":
                raise AssertionError(f"the engine exited:\n{self.logs()[-6000:]}")
            with contextlib.suppress(OSError):
                if request(self.base_url, "GET", "/health", timeout=5)[0] == 200:
                    self.ready_seconds = time.monotonic() - started
                    return self
            time.sleep(0.5)
        raise AssertionError(f"not ready within {timeout_s} s:\n{self.logs()[-6000:]}")

    def logs(self) -> str:
        data: bytes = self.container.logs()
        return data.decode("utf-8", "replace")

    def stop(self) -> int:
        """``docker stop`` (SIGTERM through the launcher); the container's exit code."""
        self.container.stop(timeout=30)
        return int(self.container.wait(timeout=60)["StatusCode"])

    def remove(self) -> None:
        if self.container is not None:
            with contextlib.suppress(Exception):
                self.container.remove(force=True)
        if self.network is not None:
            with contextlib.suppress(Exception):
                self.network.remove()
        with contextlib.suppress(Exception):
            self.client.images.remove(self.image, force=True)
