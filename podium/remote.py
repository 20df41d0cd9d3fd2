"""One small document read from where an organizer published it: a URL or the Hub.

``https://host/path/spec.json`` (or ``http://``) is fetched with podium's HTTP client
(httpx2), redirects followed, at most ``MAX_BYTES``. ``hf://datasets/ORG/NAME[@REV]/PATH``
(``spaces/`` likewise; ``hf://ORG/NAME[@REV]/PATH`` is a model repo) is downloaded through
huggingface_hub from the endpoint ``HF_ENDPOINT`` names, else the public Hub; with no
``PATH`` the file is ``default_file``. Failures are ``HubError``s (the server refused or
could not be reached) or ``UsageError``s (the reference is malformed), each with a hint.

What it trusts: nothing. The caller validates the bytes it gets (a challenge spec goes
through its JSON Schema), and records where they came from.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from podium.errors import HubError, UsageError

MAX_BYTES = 8 * 1024 * 1024
TIMEOUT_S = 30.0
REPO_TYPES = {"datasets": "dataset", "spaces": "space"}


def is_remote(ref: str) -> bool:
    """A reference this module reads (a URL or an ``hf://`` file), not a local path."""
    return ref.startswith(("http://", "https://", "hf://"))


@dataclass(frozen=True)
class HubFile:
    """``hf://[datasets/|spaces/]ORG/NAME[@REV][/PATH]``, taken apart."""

    repo_type: str
    repo_id: str
    revision: str | None
    path: str


def parse_hub_file(ref: str, *, default_file: str) -> HubFile:
    """Read an ``hf://`` file reference; a malformed one is a ``UsageError``."""
    segments = [s for s in ref.removeprefix("hf://").split("/") if s]
    repo_type = "model"
    if segments and segments[0] in REPO_TYPES:
        repo_type = REPO_TYPES[segments.pop(0)]
    if len(segments) < 2:
        raise UsageError(
            f"bad Hub reference {ref!r}",
            hint="write hf://datasets/ORG/NAME[@REVISION]/PATH (or hf://ORG/NAME/PATH for a "
            "model repo)",
        )
    name, _, revision = segments[1].partition("@")
    path = "/".join(segments[2:]) or default_file
    return HubFile(repo_type, f"{segments[0]}/{name}", revision or None, path)


def read_remote(ref: str, *, default_file: str) -> bytes:
    """The bytes ``ref`` names (a URL or an ``hf://`` file)."""
    if ref.startswith("hf://"):
        return _read_hub(parse_hub_file(ref, default_file=default_file), ref)
    if ref.startswith(("http://", "https://")):
        return _read_url(ref)
    raise UsageError(f"not a URL: {ref!r}", hint="use https://... or hf://datasets/ORG/NAME/PATH")


def _read_url(url: str) -> bytes:
    import httpx2

    host = urlsplit(url).netloc
    try:
        client = httpx2.Client(follow_redirects=True, timeout=TIMEOUT_S, trust_env=False)
        with client, client.stream("GET", url) as response:
            if response.status_code != 200:
                raise HubError(
                    f"cannot fetch {url}: HTTP {response.status_code}",
                    hint="check the URL; the server must answer the file itself (200)",
                    where=url,
                )
            body = bytearray()
            for chunk in response.iter_bytes():
                body += chunk
                if len(body) > MAX_BYTES:
                    raise HubError(f"cannot fetch {url}: larger than {MAX_BYTES} bytes", where=url)
            return bytes(body)
    except httpx2.HTTPError as exc:
        raise HubError(
            f"cannot fetch {url}: cannot reach {host}: {type(exc).__name__}: {exc}",
            hint="check the network and the URL",
            where=url,
        ) from exc


def _read_hub(ref: HubFile, where: str) -> bytes:
    from huggingface_hub import hf_hub_download

    from podium.hub import HUB_ERRORS, default_cache_dir, resolve_endpoint, translate_hub_error

    try:
        local = hf_hub_download(
            ref.repo_id,
            ref.path,
            repo_type=ref.repo_type,
            revision=ref.revision,
            endpoint=resolve_endpoint(),
            cache_dir=default_cache_dir(),
        )
    except HUB_ERRORS as exc:
        raise translate_hub_error(exc, action=f"read {ref.path}", target=where) from exc
    data = Path(local).read_bytes()
    if len(data) > MAX_BYTES:
        raise HubError(f"cannot read {where}: larger than {MAX_BYTES} bytes", where=where)
    return data
