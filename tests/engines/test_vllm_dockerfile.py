"""The top-level Dockerfile: pinned base, small context, and a real build and run.

The docker test builds the Dockerfile on a local stand-in for the vLLM image (the
debootstrapped ``podium/base:bookworm`` plus tests/engines/fake_vllm.py as ``vllm``),
runs it the way the verifier does (internal network, read-only root, tmpfs, no
capabilities) and talks to it through the launcher's readiness gate. Nothing is pulled.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import re
import shutil
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]
DOCKERFILE = (REPO / "Dockerfile").read_text()
STAND_IN_BASE = "podium/base:bookworm"
TEST_LABEL = "org.podium.test"


def context_files() -> list[str]:
    """The files ``docker build .`` at the repository root would send, per .dockerignore."""
    from docker.utils.build import exclude_paths

    lines = (REPO / ".dockerignore").read_text().splitlines()
    patterns = [line.strip() for line in lines if line.strip() and not line.startswith("#")]
    return sorted(p for p in exclude_paths(str(REPO), patterns) if (REPO / p).is_file())


def test_base_image_is_pinned_by_tag_and_digest() -> None:
    match = re.search(r"^ARG BASE_IMAGE=(\S+)$", DOCKERFILE, re.MULTILINE)
    assert match, "the Dockerfile must declare ARG BASE_IMAGE with a default"
    assert re.fullmatch(r"vllm/vllm-openai:v\d+\.\d+\.\d+@sha256:[0-9a-f]{64}", match.group(1))
    assert "FROM ${BASE_IMAGE}" in DOCKERFILE


def test_entrypoint_port_and_config() -> None:
    entrypoint = re.search(r"^ENTRYPOINT (.+)$", DOCKERFILE, re.MULTILINE)
    assert entrypoint and json.loads(entrypoint.group(1)) == [
        "python3",
        "-m",
        "engines.vllm_launcher",
        "/submission/engine-config.json",
    ]
    assert re.search(r"^EXPOSE 8000$", DOCKERFILE, re.MULTILINE)
    assert re.search(r"^ARG ENGINE_CONFIG=engine-config.json$", DOCKERFILE, re.MULTILINE)
    assert "COPY ${ENGINE_CONFIG} /submission/engine-config.json" in DOCKERFILE


def test_dockerignore_keeps_the_context_to_the_launcher() -> None:
    files = context_files()
    allowed = {".dockerignore", "Dockerfile", "engine-config.json", "engines/__init__.py"}
    assert [
        f for f in files if f not in allowed and not f.startswith("engines/vllm_launcher/")
    ] == []
    assert "engines/vllm_launcher/__main__.py" in files
    assert not [f for f in files if "__pycache__" in f or f.endswith(".pyc")]
    assert sum((REPO / f).stat().st_size for f in files) < 256 * 1024


# --- a real build and run on the stand-in base -------------------------------------------


@pytest.fixture(scope="module")
def client() -> Iterator[Any]:
    docker = pytest.importorskip("docker")
    client = docker.from_env()
    try:
        client.images.get(STAND_IN_BASE)
    except docker.errors.ImageNotFound:
        if os.environ.get("PODIUM_REQUIRE_DOCKER") == "1":
            pytest.fail(f"{STAND_IN_BASE} is missing: run scripts/build-images.sh")
        pytest.skip(f"{STAND_IN_BASE} is missing (scripts/build-images.sh builds it)")
    yield client
    client.close()


def build(client: Any, context: Path, tag: str, buildargs: dict[str, str] | None = None) -> None:
    log = []
    for chunk in client.api.build(
        path=str(context),
        tag=tag,
        buildargs=buildargs or {},
        rm=True,
        forcerm=True,
        decode=True,
        labels={TEST_LABEL: "vllm-dockerfile"},
    ):
        log.append(chunk.get("stream", ""))
        if "error" in chunk:
            raise AssertionError(f"docker build of {tag} failed: {chunk['error']}\n{''.join(log)}")


def get(host: str, path: str, body: Any = None) -> tuple[int, bytes]:
    conn = http.client.HTTPConnection(host, 8000, timeout=10)
    data = None if body is None else json.dumps(body).encode()
    conn.request("GET" if data is None else "POST", path, body=data)
    response = conn.getresponse()
    try:
        return response.status, response.read()
    finally:
        conn.close()


@pytest.mark.docker
def test_image_builds_and_serves_through_the_launcher(client: Any, tmp_path: Path) -> None:
    from docker import errors as docker_errors

    suffix = uuid.uuid4().hex[:10]
    stand_in, image, network_name = (
        f"podium-test/vllm-stand-in:{suffix}",
        f"podium-test/vllm-engine:{suffix}",
        f"podium-test-{suffix}",
    )
    stand_in_ctx = tmp_path / "stand-in"
    stand_in_ctx.mkdir()
    shutil.copy(Path(__file__).with_name("fake_vllm.py"), stand_in_ctx / "vllm")
    (stand_in_ctx / "Dockerfile").write_text(
        f"FROM {STAND_IN_BASE}\nCOPY vllm /usr/local/bin/vllm\nRUN chmod 0755 /usr/local/bin/vllm\n"
    )
    engine_ctx = tmp_path / "engine"
    for name in context_files():
        (engine_ctx / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(REPO / name, engine_ctx / name)
    config = {
        "SERVED_MODEL_NAME": "gemma",
        "SLIDING_WINDOW": 188,
        "WARMUP_BRIDGE": 1,
        "WARMUP_NUM_PROMPTS": 4,
        "WARMUP_MAX_TOKENS": 8,
        "MAX_MODEL_LEN": 4096,
    }
    (engine_ctx / "engine-config.json").write_text(json.dumps(config))

    container = network = None
    try:
        build(client, stand_in_ctx, stand_in)
        build(client, engine_ctx, image, {"BASE_IMAGE": stand_in})
        labels = client.images.get(image).labels
        assert labels["org.podium.engine"] == "vllm"
        assert labels["org.opencontainers.image.base.name"] == stand_in

        network = client.networks.create(
            network_name, driver="bridge", internal=True, labels={TEST_LABEL: "vllm-dockerfile"}
        )
        container = client.containers.create(
            image,
            network=network_name,
            read_only=True,
            tmpfs={"/tmp": "size=64m"},
            cap_drop=["ALL"],
            security_opt=["no-new-privileges"],
            pids_limit=256,
            mem_limit="512m",
            memswap_limit="512m",
            labels={TEST_LABEL: "vllm-dockerfile"},
        )
        container.start()
        container.reload()
        host = container.attrs["NetworkSettings"]["Networks"][network_name]["IPAddress"]
        assert host

        deadline, status = time.monotonic() + 60, None
        while time.monotonic() < deadline:
            container.reload()
            assert container.status == "running", container.logs().decode()
            try:
                status = get(host, "/health")[0]
            except OSError:
                status = None
            if status == 200:
                break
            time.sleep(0.2)
        assert status == 200, container.logs().decode()

        status, body = get(host, "/v1/models")
        assert status == 200 and json.loads(body)["data"][0]["id"] == "gemma"
        status, body = get(
            host, "/v1/completions", {"model": "gemma", "prompt": [1, 2], "max_tokens": 3}
        )
        assert status == 200 and json.loads(body)["choices"][0]["token_ids"] == [0, 1, 2]
        logs = container.logs().decode()
        assert "warm-up: 4/4 answered" in logs
        assert '--hf-overrides \'{"text_config":{"sliding_window":188}}\'' in logs

        container.stop(timeout=20)
        assert container.wait(timeout=30)["StatusCode"] == 0, container.logs().decode()
    finally:
        if container is not None:
            container.remove(force=True)
        if network is not None:
            network.remove()
        for tag in (image, stand_in):
            with contextlib.suppress(docker_errors.APIError):
                client.images.remove(tag, force=True)
