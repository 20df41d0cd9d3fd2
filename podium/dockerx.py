"""The one thin layer over docker-py that every podium package goes through.

Why a layer at all: docker-py raises a dozen exception types (plus requests' own) whose
messages rarely name the image or container involved, and its convenient calls hide what
podium must control (``images.build`` returns only after the build, ``containers.run``
pulls a missing image). Here docker-py errors become ``DockerError`` in exactly one place
(:func:`translate`), builds stream their log live and obey a time limit, and nothing ever
pulls. ``docker`` itself is imported lazily, so ``import podium.dockerx`` stays cheap.

Builds are the engine's classic builder (docker-py's ``api.build`` speaks only that one
API; it has no BuildKit session), and they run with **no network**: ``RUN`` steps get
``network_mode="none"``, only a loopback device. So an image follows from its build
context and its pinned base alone; a step that fetches anything fails, and the failure
says which step and what to vendor (:func:`build_failure`).
"""

from __future__ import annotations

import queue
import re
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from podium.errors import DockerError, ImageBuildError, PodiumError
from podium.extras import require

if TYPE_CHECKING:
    from docker import DockerClient

LOG_TAIL_LINES = 30
START_ENGINE_HINT = "start a Docker engine (as root: bash scripts/setup-docker.sh) and retry"
BUILD_IMAGES_HINT = "local images are never pulled; build them with scripts/build-images.sh"
#: the network a build's RUN steps get: none, only a loopback device
BUILD_NETWORK = "none"
#: what a step prints when it reaches for a network it does not have (resolvers, sockets,
#: pip, apt, curl, wget, git)
NETWORK_SIGNS = re.compile(
    r"Temporary failure in name resolution|Name or service not known|Could not resolve host"
    r"|Network is unreachable|No route to host|Temporary failure resolving"
    r"|unable to resolve host|bad address|Failed to establish a new connection"
    r"|getaddrinfo|\[Errno (?:101|113|-2|-3|-5)\]|Could not connect to|network unreachable",
    re.IGNORECASE,
)
_STEP = re.compile(r"^Step (\d+/\d+) : (.*)$", re.MULTILINE)
_URL = re.compile(r"\b(?:https?|ftp|git)://[^\s'\"\\)]+")


def _docker() -> Any:
    return require("docker", extra="docker")


def connect(*, timeout_s: float = 60.0) -> DockerClient:
    """A client for the engine named by ``DOCKER_HOST`` (default: the local socket), pinged."""
    docker = _docker()
    try:
        client: DockerClient = docker.from_env(timeout=int(timeout_s))
        client.ping()
    except Exception as exc:  # docker-py raises DockerException or requests' errors here
        raise DockerError(
            f"cannot reach the Docker engine: {exc}", hint=START_ENGINE_HINT, where="docker"
        ) from exc
    return client


def log_tail(text: str, lines: int = LOG_TAIL_LINES) -> str:
    """The last ``lines`` non-empty lines of a log, for error messages."""
    kept = [line for line in text.splitlines() if line.strip()]
    return "\n".join(kept[-lines:])


def translate(
    exc: BaseException, *, image: str | None = None, container: str | None = None
) -> PodiumError:
    """Turn a docker-py (or requests) exception into the matching podium error.

    ``image`` / ``container`` name what the caller was working on when the exception
    itself does not say; the result always names one of them when known.
    """
    errors = _docker().errors
    requests_exc = require("requests", extra="docker").exceptions
    if isinstance(exc, PodiumError):
        return exc
    subject = f"image {image}" if image else f"container {container}" if container else "docker"
    where = image or container or "docker"
    if isinstance(exc, errors.BuildError):
        lines = [str(c.get("stream") or c.get("error") or "") for c in exc.build_log or []]
        return DockerError(
            f"building {subject} failed: {exc.msg}\n{log_tail(''.join(lines))}", where=where
        )
    if isinstance(exc, errors.ContainerError):
        name = getattr(exc.container, "name", None) or container or "?"
        stderr = exc.stderr.decode(errors="replace") if isinstance(exc.stderr, bytes) else ""
        return DockerError(
            f"container {name} (image {exc.image}) exited with status {exc.exit_status}"
            + (f":\n{log_tail(stderr)}" if stderr else ""),
            where=name,
        )
    if isinstance(exc, errors.ImageNotFound):
        return DockerError(
            f"{subject} not found: {exc.explanation or exc}", hint=BUILD_IMAGES_HINT, where=where
        )
    if isinstance(exc, errors.NotFound):
        return DockerError(f"{subject} not found: {exc.explanation or exc}", where=where)
    if isinstance(exc, errors.APIError):
        status = exc.status_code if exc.response is not None else "?"
        return DockerError(
            f"Docker engine refused an operation on {subject} (HTTP {status}): "
            f"{exc.explanation or exc}",
            where=where,
        )
    if isinstance(exc, requests_exc.ConnectionError):
        return DockerError(
            f"lost the connection to the Docker engine while working on {subject}: {exc}",
            hint=START_ENGINE_HINT,
            where=where,
        )
    if isinstance(exc, requests_exc.Timeout):
        return DockerError(
            f"the Docker engine did not answer in time while working on {subject}: {exc}",
            where=where,
        )
    return DockerError(f"Docker operation on {subject} failed: {exc}", where=where)


def failed_step(log: str) -> tuple[str, str] | None:
    """``(step, output)``: the last step a classic build log names (``"2/3 : RUN ..."``)
    and what the build printed after it; None when the log names no step."""
    steps = list(_STEP.finditer(log))
    if not steps:
        return None
    last = steps[-1]
    return f"{last[1]} : {last[2].strip()}", log[last.end() :]


def vendor_hint(instruction: str, urls: tuple[str, ...]) -> str:
    """What to put into the bundle instead of fetching it at build time."""
    if re.search(r"\bpip3?\b.*\binstall\b", instruction):
        return (
            "vendor the wheels: `pip download --only-binary=:all: -d wheels/ -r "
            "requirements.txt` (with --platform and --python-version of the base image), "
            "keep wheels/ in the entry, and install with `pip install --no-index "
            "--find-links wheels/ -r requirements.txt`"
        )
    if re.search(r"\bapt(-get)?\b", instruction):
        return (
            "build FROM a pinned base that has these packages, or vendor their .deb files "
            "into the entry and install them with `dpkg -i`"
        )
    if urls:
        return f"download {', '.join(urls)} into the entry's directory and COPY it in"
    return "put what the step fetches into the entry's files and COPY it in"


def build_failure(tag: str, error: str, log: str) -> ImageBuildError:
    """The error for a build that stopped at a step: which step, and whether (and what)
    it tried to fetch over the network the build does not have."""
    found = failed_step(log)
    step, output = found if found else (None, "")
    output = "\n".join(line for line in output.splitlines() if line != f"ERROR: {error}")
    instruction = step.split(" : ", 1)[1] if step else ""
    network = instruction.upper().startswith("RUN") and bool(NETWORK_SIGNS.search(output))
    urls = tuple(dict.fromkeys(_URL.findall(instruction)))
    if network:  # the step and the advice say it all; the log is the caller's to keep
        return ImageBuildError(
            f"building image {tag} failed at step {step}: the step reached for the network, "
            "and builds have none (the image must follow from the bundle and its pinned "
            "base alone)",
            step=step,
            network=True,
            urls=urls,
            hint=vendor_hint(instruction, urls),
            where=tag,
        )
    at = f" at step {step}" if step else ""
    return ImageBuildError(
        f"building image {tag} failed{at}: {error}\n{log_tail(log)}",
        step=step,
        urls=urls,
        where=tag,
    )


def _split_tag(ref: str) -> tuple[str, str]:
    """``"repo/name:tag"`` -> ``("repo/name", "tag")``; a registry port is not a tag."""
    repo, sep, tag = ref.rpartition(":")
    if not sep or "/" in tag:
        return ref, "latest"
    return repo, tag


def _pump(chunks: Iterator[dict[str, Any]], out: queue.Queue[Any], stop: threading.Event) -> None:
    """Move build-stream chunks into ``out``; ``None`` ends, an exception is passed on."""
    try:
        for chunk in chunks:
            if stop.is_set():
                break
            out.put(chunk)
        out.put(None)
    except Exception as exc:  # handed to the waiting thread, which translates it
        out.put(exc)
    finally:
        close = getattr(chunks, "close", None)
        if close is not None:
            close()  # drops the HTTP stream, so the engine cancels an abandoned build


def _request_build(
    client: DockerClient,
    context: Path,
    *,
    tag: str,
    dockerfile: str,
    buildargs: Mapping[str, str] | None,
    labels: Mapping[str, str] | None,
    nocache: bool,
    timeout_s: float,
) -> Iterator[dict[str, Any]]:
    """Ask the engine for a classic build that never pulls and whose steps have no
    network; return its decoded stream."""
    try:
        stream: Iterator[dict[str, Any]] = client.api.build(
            path=str(context),
            dockerfile=dockerfile,
            buildargs=dict(buildargs or {}),
            labels=dict(labels or {}),
            nocache=nocache,
            rm=True,
            forcerm=True,
            pull=False,
            decode=True,
            timeout=max(1, int(timeout_s)),
            use_config_proxy=False,
            network_mode=BUILD_NETWORK,
        )
    except Exception as exc:  # docker-py / requests errors
        raise translate(exc, image=tag) from exc
    return stream


def _follow_build(
    chunks: queue.Queue[Any],
    stop: threading.Event,
    *,
    tag: str,
    deadline: float,
    timeout_s: float,
    on_log: Callable[[str], None] | None,
) -> tuple[str | None, str | None, str]:
    """Read the pumped stream until it ends: ``(image id, build error, full log)``.

    Past ``deadline`` the pump is told to stop (dropping the stream) and the build is
    abandoned; an exception the pump handed over is translated.
    """
    log: list[str] = []
    image_id: str | None = None
    error: str | None = None
    while True:
        try:
            chunk = chunks.get(timeout=max(0.0, deadline - time.monotonic()))
        except queue.Empty:
            stop.set()
            raise DockerError(
                f"building image {tag} did not finish within {timeout_s:g} s; abandoned\n"
                f"{log_tail(''.join(log))}",
                hint="raise the build time limit or make the build lighter",
                where=tag,
            ) from None
        if chunk is None:
            break
        if isinstance(chunk, Exception):
            raise translate(chunk, image=tag) from chunk
        text = chunk.get("stream") or chunk.get("status") or ""
        if chunk.get("error"):
            error = str(chunk["error"])
            text = f"ERROR: {error}\n"
        if aux := chunk.get("aux"):
            image_id = aux.get("ID", image_id)
        if text:
            log.append(text if text.endswith("\n") else text + "\n")
            if on_log is not None:
                for line in text.splitlines():
                    on_log(line)
    return image_id, error, "".join(log)


def build_image(
    client: DockerClient,
    context_dir: str | Path,
    *,
    tag: str,
    dockerfile: str = "Dockerfile",
    buildargs: Mapping[str, str] | None = None,
    labels: Mapping[str, str] | None = None,
    nocache: bool = False,
    timeout_s: float,
    on_log: Callable[[str], None] | None = None,
) -> tuple[str, str]:
    """Build ``context_dir`` into ``tag``; return ``(image id, full build log)``.

    The log streams to ``on_log`` line by line as the engine sends it. The image is tagged
    only once the build succeeded within ``timeout_s``: a build abandoned at the limit
    leaves at most an untagged image, never a late tag. On abandon the stream is dropped,
    which makes the engine cancel the (classic) build. ``RUN`` steps have no network; a
    step that fails raises ``ImageBuildError`` naming it.
    """
    context = Path(context_dir)
    if not (context / dockerfile).is_file():
        raise DockerError(f"no {dockerfile} in the build context {context}", where=tag)
    stop = threading.Event()
    chunks: queue.Queue[Any] = queue.Queue()
    deadline = time.monotonic() + timeout_s
    stream = _request_build(
        client,
        context,
        tag=tag,
        dockerfile=dockerfile,
        buildargs=buildargs,
        labels=labels,
        nocache=nocache,
        timeout_s=timeout_s,
    )
    threading.Thread(target=_pump, args=(stream, chunks, stop), daemon=True).start()
    image_id, error, full_log = _follow_build(
        chunks, stop, tag=tag, deadline=deadline, timeout_s=timeout_s, on_log=on_log
    )
    if error is not None:
        raise build_failure(tag, error, full_log)
    if image_id is None:
        raise DockerError(
            f"building image {tag} failed: the engine reported no image id\n{log_tail(full_log)}",
            where=tag,
        )
    repository, tag_part = _split_tag(tag)
    try:
        client.api.tag(image_id, repository, tag_part, force=True)
    except Exception as exc:  # docker-py / requests errors
        raise translate(exc, image=tag) from exc
    return image_id, full_log


def image_info(client: DockerClient, ref: str) -> dict[str, Any]:
    """What podium records about a local image; a missing image is a ``DockerError``."""
    try:
        attrs = client.images.get(ref).attrs
    except Exception as exc:  # docker-py / requests errors
        raise translate(exc, image=ref) from exc
    config = attrs.get("Config") or {}
    return {
        "id": attrs["Id"],
        "repo_tags": list(attrs.get("RepoTags") or []),
        "repo_digests": list(attrs.get("RepoDigests") or []),
        "size": int(attrs.get("Size") or 0),
        "labels": dict(config.get("Labels") or {}),
        "created": attrs.get("Created"),
    }


def docker_version(client: DockerClient) -> dict[str, Any]:
    """The engine's and the SDK's versions, for reports and diagnostics."""
    try:
        info = client.version()
    except Exception as exc:  # docker-py / requests errors
        raise translate(exc) from exc
    return {
        "engine": info.get("Version"),
        "api_version": info.get("ApiVersion"),
        "min_api_version": info.get("MinAPIVersion"),
        "os": info.get("Os"),
        "arch": info.get("Arch"),
        "kernel": info.get("KernelVersion"),
        "sdk": _docker().__version__,
    }
