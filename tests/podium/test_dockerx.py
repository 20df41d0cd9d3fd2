"""podium.dockerx: docker-py errors become named DockerErrors; builds stream, fail, time out."""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from podium import dockerx
from podium.errors import DockerError, MissingExtraError, PodiumError

docker = pytest.importorskip("docker")
requests = pytest.importorskip("requests")

BASE_IMAGE = "podium/base:bookworm"


def _response(status: int, url: str = "http+docker://localhost/v1.41/images/x/json") -> object:
    response = requests.Response()
    response.status_code = status
    response.url = url
    response.reason = "Not Found" if status == 404 else "Internal Server Error"
    return response


def test_translate_image_not_found_names_image_and_says_how_to_build() -> None:
    exc = docker.errors.ImageNotFound(
        "404", response=_response(404), explanation="No such image: podium/nothing:1"
    )
    err = dockerx.translate(exc, image="podium/nothing:1")
    assert isinstance(err, DockerError)
    assert "image podium/nothing:1 not found" in err.message
    assert err.where == "podium/nothing:1"
    assert err.hint is not None and "build-images.sh" in err.hint


def test_translate_not_found_names_container() -> None:
    exc = docker.errors.NotFound(
        "404", response=_response(404), explanation="No such container: abc123"
    )
    err = dockerx.translate(exc, container="abc123")
    assert isinstance(err, DockerError)
    assert err.message.startswith("container abc123 not found")
    assert err.hint is None


def test_translate_api_error_keeps_status_and_explanation() -> None:
    exc = docker.errors.APIError("500", response=_response(500), explanation="disk full")
    err = dockerx.translate(exc, image="podium/x:1")
    assert "HTTP 500" in err.message and "disk full" in err.message
    assert "image podium/x:1" in err.message


def test_translate_build_error_carries_log_tail() -> None:
    build_log = [{"stream": f"Step {i}/40 : RUN thing {i}\n"} for i in range(40)]
    build_log.append({"error": "The command '/bin/sh -c false' returned a non-zero code: 1"})
    exc = docker.errors.BuildError("returned a non-zero code: 1", build_log)
    err = dockerx.translate(exc, image="podium/broken:1")
    assert "building image podium/broken:1 failed" in err.message
    assert "Step 39/40" in err.message and "non-zero code: 1" in err.message
    assert "Step 0/40" not in err.message  # only the tail


def test_translate_container_error_names_container_and_stderr() -> None:
    class FakeContainer:
        name = "podium-engine-7"

    exc = docker.errors.ContainerError(
        FakeContainer(), 137, "python3 serve.py", "podium/engine:1", b"Killed: out of memory\n"
    )
    err = dockerx.translate(exc)
    assert err.where == "podium-engine-7"
    assert "status 137" in err.message and "podium/engine:1" in err.message
    assert "out of memory" in err.message


def test_translate_connection_error_hints_at_starting_the_engine() -> None:
    exc = requests.exceptions.ConnectionError("Connection aborted: FileNotFoundError")
    err = dockerx.translate(exc, image="podium/x:1")
    assert isinstance(err, DockerError)
    assert "lost the connection" in err.message
    assert err.hint == dockerx.START_ENGINE_HINT


def test_translate_passes_podium_errors_through() -> None:
    original = DockerError("already translated", where="x")
    assert dockerx.translate(original) is original


def test_connect_without_engine_raises_docker_error_with_hint(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path / 'no-such.sock'}")
    with pytest.raises(DockerError) as info:
        dockerx.connect(timeout_s=5)
    assert "cannot reach the Docker engine" in info.value.message
    assert info.value.hint == dockerx.START_ENGINE_HINT
    assert isinstance(info.value, PodiumError) and not isinstance(info.value, MissingExtraError)


def test_split_tag_keeps_registry_port() -> None:
    assert dockerx._split_tag("podium/x:abc") == ("podium/x", "abc")
    assert dockerx._split_tag("localhost:5000/podium/x") == ("localhost:5000/podium/x", "latest")
    assert dockerx._split_tag("localhost:5000/podium/x:v2") == ("localhost:5000/podium/x", "v2")


# --- against the real engine ---------------------------------------------------------


@pytest.fixture
def client() -> Iterator[Any]:
    c = dockerx.connect()
    yield c
    c.close()


@pytest.fixture
def tag(client: Any) -> Iterator[str]:
    name = f"podium-test/dockerx:{uuid.uuid4().hex[:12]}"
    yield name
    with contextlib.suppress(docker.errors.ImageNotFound):
        client.images.remove(name, force=True)


def _context(tmp_path: Path, dockerfile: str) -> Path:
    (tmp_path / "Dockerfile").write_text(dockerfile, encoding="utf-8")
    return tmp_path


@pytest.mark.docker
def test_translate_real_missing_image(client: Any) -> None:
    with pytest.raises(docker.errors.ImageNotFound) as info:
        client.images.get("podium-test/never-built:0")
    err = dockerx.translate(info.value, image="podium-test/never-built:0")
    assert "podium-test/never-built:0" in err.message
    assert "build-images.sh" in (err.hint or "")


@pytest.mark.docker
def test_build_image_streams_log_tags_and_labels(client: Any, tag: str, tmp_path: Path) -> None:
    lines: list[str] = []
    context = _context(tmp_path, f"FROM {BASE_IMAGE}\nRUN echo podium-build-marker\n")
    image_id, log = dockerx.build_image(
        client,
        context,
        tag=tag,
        labels={"org.podium.test": "yes"},
        timeout_s=120,
        on_log=lines.append,
    )
    assert image_id.startswith("sha256:")
    assert "podium-build-marker" in log
    assert any("podium-build-marker" in line for line in lines)
    info = dockerx.image_info(client, tag)
    assert info["id"] == image_id
    assert tag in info["repo_tags"]
    assert info["labels"]["org.podium.test"] == "yes"
    assert info["size"] > 0 and info["created"]


@pytest.mark.docker
def test_build_image_failure_raises_with_log_tail(client: Any, tag: str, tmp_path: Path) -> None:
    context = _context(tmp_path, f"FROM {BASE_IMAGE}\nRUN echo before-the-failure && exit 3\n")
    with pytest.raises(DockerError) as info:
        dockerx.build_image(client, context, tag=tag, timeout_s=120)
    message = info.value.message
    assert f"building image {tag} failed" in message
    assert "before-the-failure" in message and "non-zero code: 3" in message
    assert info.value.where == tag
    with pytest.raises(DockerError):
        dockerx.image_info(client, tag)  # a failed build leaves no tag behind


@pytest.mark.docker
@pytest.mark.slow
def test_build_image_abandons_at_time_limit_without_tagging(
    client: Any, tag: str, tmp_path: Path
) -> None:
    context = _context(tmp_path, f"FROM {BASE_IMAGE}\nRUN echo started && sleep 60\n")
    with pytest.raises(DockerError) as info:
        dockerx.build_image(client, context, tag=tag, timeout_s=4)
    assert "did not finish within 4 s" in info.value.message
    assert "started" in info.value.message
    with pytest.raises(DockerError):
        dockerx.image_info(client, tag)


@pytest.mark.docker
def test_build_image_without_dockerfile_is_refused(client: Any, tmp_path: Path) -> None:
    with pytest.raises(DockerError, match="no Dockerfile in the build context"):
        dockerx.build_image(client, tmp_path, tag="podium-test/none:0", timeout_s=10)


@pytest.mark.docker
def test_image_info_of_base_image_carries_input_hash(client: Any) -> None:
    info = dockerx.image_info(client, BASE_IMAGE)
    assert BASE_IMAGE in info["repo_tags"]
    assert len(info["labels"]["org.podium.inputs-sha256"]) == 64


@pytest.mark.docker
def test_docker_version_reports_engine_and_sdk(client: Any) -> None:
    version = dockerx.docker_version(client)
    assert version["engine"] and version["api_version"]
    assert version["sdk"] == docker.__version__
