"""The challenge's limits on what the rebuild made: ``image.too-large``.

The image is the verifier's own rebuild of the bundle (``verifier.rebuild``), so its size
is the Docker engine's word, not the participant's. An image over the limit is a broken
rule, and nothing is started.
"""

from __future__ import annotations

from schemas.challenge import ChallengeSpec
from schemas.check_ids import IMAGE_TOO_LARGE
from schemas.findings import Finding


def image_size(spec: ChallengeSpec, size_bytes: int | None) -> list[Finding]:
    """An error finding when the rebuilt image is over ``spec.limits.image_bytes``."""
    if size_bytes is None or size_bytes <= spec.limits.image_bytes:
        return []
    return [
        Finding(
            IMAGE_TOO_LARGE,
            "error",
            f"the image is {size_bytes} bytes, over the limit of {spec.limits.image_bytes}",
            hint="leave build tools and caches out of the image",
        )
    ]
