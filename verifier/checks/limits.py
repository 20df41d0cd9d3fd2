"""The rebuild's rules: ``image.too-large`` and ``image.network``.

The image is the verifier's own rebuild of the bundle (``verifier.rebuild``), so its size
is the Docker engine's word, not the participant's. An image over the limit is a broken
rule, and nothing is started.

The rebuild runs every ``RUN`` step with no network (``podium.dockerx``): that, not this
check, keeps the image a function of the bundle and the pinned base. A step that
fetches fails the build; ``image.network`` only names it. Its inputs: the step is the
build log's own header (the Docker engine's, for the participant's Dockerfile), and the
sign of a network failure is the step's output, which the participant's code writes.
A participant can make the sign appear or vanish, but either way the build failed and
nothing runs: the finding turns a FAILED run into a REJECTED one that says what to
vendor, and never passes anything.
"""

from __future__ import annotations

from podium.errors import ImageBuildError
from schemas.challenge import ChallengeSpec
from schemas.check_ids import IMAGE_NETWORK, IMAGE_TOO_LARGE
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


def build_network(exc: ImageBuildError) -> list[Finding]:
    """An error finding when the build stopped at a step that reached for the network."""
    if not exc.network:
        return []
    return [
        Finding(
            IMAGE_NETWORK,
            "error",
            f"build step {exc.step} reached for the network"
            + (f" ({', '.join(exc.urls)})" if exc.urls else "")
            + "; the rebuild has none, so the image would not follow from the bundle alone",
            hint=exc.hint,
            where=exc.step,
        )
    ]
