"""The base image's pin: resolved at freeze, judged at every door a bundle enters by.

Freeze pins the base image to a digest. The pin is *checked* when a local image confirmed
it (the image the tag names, or an image held under that digest): a rebuild from it can
start. A digest given by hand (``--base-digest``, or ``name@sha256:...`` in podium.toml)
that no local image confirms is written into the manifest as ``unchecked``: the bundle
may name an image nobody holds, and its rebuild would stop at the organizer's pull.

``bundle.base-unchecked`` refuses such a bundle unless the challenge spec confirms that
very digest for that image (``engine.vllm.images.*`` with ``digest_confirmed: true``, the
organizer's locked spec), and refuses an all-zero digest always: it is a placeholder,
never an image. ``podium submission inspect``, ``queue submit``, ``submission push`` and
the verifier's intake all judge it here.
"""

from __future__ import annotations

import re
from typing import Any

from podium.errors import DockerError, UsageError
from schemas.challenge import ChallengeSpec
from schemas.check_ids import BUNDLE_BASE_UNCHECKED
from schemas.findings import Finding
from schemas.manifest import Manifest

DIGEST_RE = re.compile(r"^sha256:[0-9a-f]{64}$")
ZERO_DIGEST = "sha256:" + "0" * 64


def repo_of(ref: str) -> str:
    """``"vllm/vllm-openai:v0.32.0@sha256:..."`` -> ``"vllm/vllm-openai"``."""
    name = ref.split("@", 1)[0]
    last = name.rsplit("/", 1)[-1]
    return name.rsplit(":", 1)[0] if ":" in last else name


def _name_of(ref: str) -> str:
    """The reference without its digest: ``repo:tag`` (or ``repo``)."""
    return ref.split("@", 1)[0]


def spec_images(spec: ChallengeSpec | None) -> list[dict[str, Any]]:
    """The base images the challenge spec names (``engine.vllm.images``)."""
    vllm = (spec.engine.vllm if spec is not None else None) or {}
    return [dict(v) for v in (vllm.get("images") or {}).values() if isinstance(v, dict)]


def locked_digest(spec: ChallengeSpec | None, ref: str) -> str | None:
    """The digest the spec confirms for ``ref``'s image (same ``repo:tag``), if any."""
    for image in spec_images(spec):
        spec_ref = str(image.get("ref") or "")
        digest = spec_ref.split("@", 1)[1] if "@" in spec_ref else ""
        confirmed = image.get("digest_confirmed") is not False and digest != ZERO_DIGEST
        if confirmed and DIGEST_RE.match(digest) and _name_of(spec_ref) == _name_of(ref):
            return digest
    return None


def confirmed_digests(spec: ChallengeSpec | None, ref: str) -> set[str]:
    """Every digest the spec confirms for ``ref``'s repository."""
    out = set()
    for image in spec_images(spec):
        spec_ref = str(image.get("ref") or "")
        digest = spec_ref.split("@", 1)[1] if "@" in spec_ref else ""
        if image.get("digest_confirmed") is False or digest == ZERO_DIGEST:
            continue
        if DIGEST_RE.match(digest) and repo_of(spec_ref) == repo_of(ref):
            out.add(digest)
    return out


def pull_hint(ref: str, spec: ChallengeSpec | None) -> str:
    """How to get a missing base image: a ``docker pull`` of the exact digest where the
    spec locks one, else of the tag (and where podium's own images come from)."""
    if repo_of(ref).startswith("podium/"):
        return "podium's local images are built by scripts/build-images.sh (never pulled)"
    locked = locked_digest(spec, ref) or (ref.split("@", 1)[1] if "@" in ref else None)
    if locked and locked != ZERO_DIGEST:
        return f"docker pull {repo_of(ref)}@{locked}, then package again"
    return (
        f"docker pull {_name_of(ref)}, then package again (the challenge spec locks no "
        "confirmed digest for it; the organizer's locked spec names the one to pull)"
    )


def _local_pin(client: Any, ref: str, digest: str) -> str | None:
    """The pin a build should use when a local image carries ``digest``: ``repo@digest``
    for a RepoDigest of its repository, the id itself for a locally built image; None
    when no local image carries it."""
    from podium import dockerx

    repo = repo_of(ref)
    for candidate in (f"{repo}@{digest}", digest, _name_of(ref)):
        try:
            info = dockerx.image_info(client, candidate)
        except DockerError:
            continue
        if f"{repo}@{digest}" in info.get("repo_digests", []):
            return f"{repo}@{digest}"
        if info["id"] == digest:
            return digest
    return None


def confirmed_locally(ref: str, digest: str) -> bool:
    """True when the local Docker engine holds an image with that digest; False when it
    holds none, or no engine answers (the pin is then unchecked, never an error)."""
    from podium import dockerx

    try:
        client = dockerx.connect(timeout_s=10)
    except Exception:  # no engine, or no docker extra: nothing confirms the digest
        return False
    try:
        return _local_pin(client, ref, digest) is not None
    finally:
        client.close()


def resolve_base_image(
    ref: str, override: str | None = None, spec: ChallengeSpec | None = None
) -> tuple[str, str, bool]:
    """``(digest, pin, checked)``: the base image's digest, the reference a build should
    use, and whether a local image confirmed the digest.

    A registry digest (the image has a RepoDigest) pins as ``repo@sha256:...``; a locally
    built base has none, so its image id ``sha256:...`` is both the digest and the pin.
    """
    if override is not None:
        if not DIGEST_RE.match(override):
            raise UsageError(f"--base-digest {override!r} is not sha256:<64 hex digits>")
        if "@" in ref and ref.split("@", 1)[1] != override:
            raise UsageError(f"--base-digest {override} contradicts the digest in {ref}")
        pin = f"{repo_of(ref)}@{override}" if "@" in ref else override
        return override, pin, confirmed_locally(ref, override)
    if "@" in ref:
        digest = ref.split("@", 1)[1]
        if not DIGEST_RE.match(digest):
            raise UsageError(f"base_image {ref!r} has a malformed digest")
        return digest, ref, confirmed_locally(ref, digest)
    from podium import dockerx  # heavy: only when the engine must be asked

    client = dockerx.connect()
    locked = locked_digest(spec, ref)
    try:
        info = dockerx.image_info(client, ref)
    except DockerError as exc:
        held = _local_pin(client, ref, locked) if locked is not None else None
        if locked is not None and held is not None:
            return locked, held, True
        raise DockerError(exc.message, hint=pull_hint(ref, spec), where=exc.where) from exc
    repo = repo_of(ref)
    for entry in info.get("repo_digests") or []:
        name, _, digest = str(entry).partition("@")
        if name == repo and DIGEST_RE.match(digest):
            return digest, f"{repo}@{digest}", True
    image_id = str(info.get("id"))
    if not DIGEST_RE.match(image_id):
        raise UsageError(f"the Docker engine gave no usable id for {ref}: {image_id!r}")
    return image_id, image_id, True


def base_findings(manifest: Manifest, spec: ChallengeSpec | None) -> list[Finding]:
    """``bundle.base-unchecked`` for an all-zero digest, or an unchecked one the spec does
    not confirm. Who wrote what: the participant's freeze wrote the pin and its
    ``unchecked`` flag; the organizer's spec, the confirmed digests."""
    base = manifest.engine.base_image
    shown = f"{_name_of(base.ref)}@{base.digest[:19]}..."
    where = "manifest.json:engine.base_image"
    if base.digest == ZERO_DIGEST:
        return [
            Finding(
                BUNDLE_BASE_UNCHECKED,
                "error",
                f"the base image {shown} has an all-zero digest: a placeholder, not an image",
                hint=pull_hint(base.ref, spec),
                where=where,
            )
        ]
    if not base.unchecked:
        return []
    confirmed = confirmed_digests(spec, base.ref)
    if base.digest in confirmed:
        return []
    named = spec.id if spec is not None else "the bundle's"
    says = "confirms another digest" if confirmed else "confirms none"
    return [
        Finding(
            BUNDLE_BASE_UNCHECKED,
            "error",
            f"the base image {shown} is unchecked (no local image confirmed it when the "
            f"bundle was frozen), and the {named} challenge spec {says} for "
            f"{repo_of(base.ref)}: the rebuild could not start",
            hint=pull_hint(base.ref, spec),
            where=where,
        )
    ]
