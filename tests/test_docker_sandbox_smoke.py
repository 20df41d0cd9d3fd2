"""The sandbox recipe works on this machine's real Docker engine.

An engine container must be reachable from the host over HTTP while it can reach
nothing else, write nothing outside its tmpfs and hold no capabilities. This builds a
tiny HTTP server image on podium/base:bookworm, starts it the strict way (create +
start on a checked local image, never run or pull) on an ``internal=True`` network, and
proves each property from the host and from inside.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from podium import dockerx

pytestmark = [pytest.mark.docker, pytest.mark.slow]

docker = pytest.importorskip("docker")

BASE_IMAGE = "podium/base:bookworm"
PAGE = "podium-sandbox-smoke-ok"
DOCKERFILE = f"""\
FROM {BASE_IMAGE}
RUN mkdir -p /srv && echo {PAGE} > /srv/index.html
USER 65534:65534
EXPOSE 8000
CMD ["python3", "-m", "http.server", "8000", "--bind", "0.0.0.0", "--directory", "/srv"]
"""
OUTSIDE_PROBE = (
    "import socket\n"
    "try:\n"
    "    socket.create_connection(('1.1.1.1', 53), timeout=3)\n"
    "    print('REACHED')\n"
    "except OSError as exc:\n"
    "    print('UNREACHABLE', exc)\n"
)


@pytest.fixture
def sandbox(tmp_path: Path) -> Iterator[dict[str, Any]]:
    """A started strict container on an internal network; removed with its network and image."""
    client = dockerx.connect()
    suffix = uuid.uuid4().hex[:12]
    tag = f"podium-test/smoke:{suffix}"
    made: dict[str, Any] = {}
    try:
        (tmp_path / "Dockerfile").write_text(DOCKERFILE, encoding="utf-8")
        image_id, _ = dockerx.build_image(client, tmp_path, tag=tag, timeout_s=120)
        made["image"] = image_id
        network = client.networks.create(f"podium-smoke-{suffix}", driver="bridge", internal=True)
        made["network"] = network
        container = client.containers.create(
            image_id,
            name=f"podium-smoke-{suffix}",
            network=network.name,
            read_only=True,
            tmpfs={"/tmp": "rw,size=16m,mode=1777"},
            cap_drop=["ALL"],
            security_opt=["no-new-privileges"],
            pids_limit=64,
            mem_limit="256m",
            memswap_limit="256m",
            detach=True,
        )
        made["container"] = container
        container.start()
        container.reload()
        ip = container.attrs["NetworkSettings"]["Networks"][network.name]["IPAddress"]
        assert ip, "the container got no address on its internal network"
        yield {"client": client, "container": container, "ip": ip, "network": network}
    finally:
        if "container" in made:
            made["container"].remove(force=True)
        if "network" in made:
            made["network"].remove()
        if "image" in made:
            client.images.remove(tag, force=True)
        client.close()


def _get_page(url: str, deadline_s: float) -> httpx.Response:
    deadline = time.monotonic() + deadline_s
    while True:
        try:
            return httpx.get(url, timeout=2)
        except httpx.TransportError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)


def _exec(container: Any, *cmd: str) -> tuple[int, str]:
    result = container.exec_run(list(cmd))
    return result.exit_code, result.output.decode(errors="replace")


def test_strict_container_serves_host_and_reaches_nothing_else(sandbox: dict[str, Any]) -> None:
    container = sandbox["container"]

    response = _get_page(f"http://{sandbox['ip']}:8000/", deadline_s=20)
    assert response.status_code == 200
    assert PAGE in response.text

    code, out = _exec(container, "python3", "-c", OUTSIDE_PROBE)
    assert code == 0 and out.startswith("UNREACHABLE"), out

    code, out = _exec(container, "sh", "-c", "echo x > /probe")
    assert code != 0 and "Read-only file system" in out, out
    code, out = _exec(container, "sh", "-c", "echo x > /tmp/probe && cat /tmp/probe")
    assert code == 0 and out.strip() == "x", out

    code, out = _exec(container, "grep", "-E", "^(CapEff|NoNewPrivs):", "/proc/self/status")
    fields = dict(line.split(":\t") for line in out.strip().splitlines())
    assert fields == {"CapEff": "0000000000000000", "NoNewPrivs": "1"}, out

    attrs = container.attrs["HostConfig"]
    assert attrs["ReadonlyRootfs"] is True
    assert attrs["PidsLimit"] == 64
    assert attrs["Memory"] == attrs["MemorySwap"] == 256 * 1024 * 1024
    assert sandbox["network"].attrs["Internal"] is True
