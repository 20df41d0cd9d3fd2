"""Build the image of a bundle through ``podium.dockerx`` (live log, time limit, no pull).

The build context is the bundle as re-opened by ``safe_bundle``, never the working
directory, so the image is exactly what the verifier will rebuild. ``BASE_IMAGE`` is
the frozen pin (``repo@sha256:...`` or a local image id), never the moving tag.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from schemas.manifest import Manifest


def image_tag(team: str, entry: str, bundle_sha256: str) -> str:
    """``podium-submission/TEAM-ENTRY:DIGEST12``, lower-cased to a valid Docker name."""
    name = re.sub(r"[^a-z0-9]+", "-", f"{team}-{entry}".lower()).strip("-") or "entry"
    return f"podium-submission/{name}:{bundle_sha256[:12]}"


def build_submission_image(
    context: Path,
    *,
    manifest: Manifest,
    bundle_sha256: str,
    base_pin: str,
    timeout_s: float,
    on_log: Callable[[str], None] | None = None,
    nocache: bool = False,
) -> dict[str, Any]:
    """Build and tag the image; return what ``OUT/NAME.image.json`` records."""
    from podium import dockerx

    tag = image_tag(manifest.team, manifest.entry, bundle_sha256)
    client = dockerx.connect()
    started = time.monotonic()
    image_id, _log = dockerx.build_image(
        client,
        context,
        tag=tag,
        dockerfile=manifest.engine.dockerfile,
        buildargs={"BASE_IMAGE": base_pin},
        labels={
            "org.podium.bundle-sha256": bundle_sha256,
            "org.podium.challenge": manifest.challenge.id,
        },
        nocache=nocache,
        timeout_s=timeout_s,
        on_log=on_log,
    )
    return {
        "image_id": image_id,
        "tag": tag,
        "base_image": base_pin,
        "bundle_sha256": bundle_sha256,
        "build_seconds": round(time.monotonic() - started, 3),
    }
