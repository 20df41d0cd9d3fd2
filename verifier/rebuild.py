"""Rebuild: the participant's image, built by the verifier, never taken from the participant.

The image is built from the bundle's own files with no cache, ``FROM`` the base image the
manifest pins (by registry digest, or by local image id for locally built bases); a base
that does not match its pin is refused. Every runner that needs an image (the local
sandbox, the Jobs dispatcher) rebuilds through here.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from podium import dockerx
from podium.errors import DockerError
from schemas.challenge import ChallengeSpec
from schemas.manifest import Manifest
from submission.base_pin import repo_of


def held_base(client: Any, ref: str, digest: str) -> dict[str, Any]:
    """The local image the pin names: by its reference, else by the digest itself (an
    image pulled as ``repo@digest`` carries no tag); missing, the hint is the pull."""
    first: DockerError | None = None
    for candidate in (ref, f"{repo_of(ref)}@{digest}", digest):
        try:
            return dockerx.image_info(client, candidate)
        except DockerError as exc:
            first = first or exc
    assert first is not None
    own = repo_of(ref).startswith("podium/")  # podium's images are built, never pulled
    hint = first.hint if own else f"docker pull {repo_of(ref)}@{digest}"
    raise DockerError(first.message, hint=hint, where=first.where)


def base_image_arg(manifest: Manifest, client: Any) -> str:
    """The FROM reference for the rebuild; refuses a base that does not match its pin."""
    ref, digest = manifest.engine.base_image.ref, manifest.engine.base_image.digest
    info = held_base(client, ref, digest)
    repo_digests = [d.split("@", 1)[1] for d in info.get("repo_digests", []) if "@" in d]
    if info["id"] == digest:
        return digest  # a locally built base, pinned by image id
    if digest in repo_digests:
        return f"{ref.split('@')[0]}@{digest}"
    raise DockerError(
        f"base image {ref} is {info['id'][:19]}, but the manifest pins {digest[:19]}",
        hint="the organizer must hold the exact base image the bundle was frozen against",
        where=ref,
    )


def rebuild_image(
    client: Any,
    root: Path,
    manifest: Manifest,
    spec: ChallengeSpec,
    *,
    tag: str,
    on_log: Callable[[str], None] = lambda _line: None,
) -> dict[str, Any]:
    """Build ``root`` without cache within the spec's build limit; facts for the report."""
    base = base_image_arg(manifest, client)
    started = time.monotonic()
    image_id, _log = dockerx.build_image(
        client,
        root,
        tag=f"{tag}:latest",
        dockerfile=manifest.engine.dockerfile,
        buildargs={"BASE_IMAGE": base},
        nocache=True,
        timeout_s=spec.limits.build_s,
        on_log=on_log,
    )
    info = dockerx.image_info(client, image_id)
    return {
        "id": image_id,
        "base_image": base,
        "size_bytes": int(info.get("size") or 0),
        "build_seconds": round(time.monotonic() - started, 3),
    }
