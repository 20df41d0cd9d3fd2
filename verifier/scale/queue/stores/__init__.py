"""Queue stores, chosen by one URL-ish string like the leaderboard's stores.

``./dir`` or ``file:///abs/dir``: a local folder. ``hf://datasets/ORG/NAME``
(optionally ``?endpoint=URL``): a Hub dataset repo, private by default. With no string,
``$PODIUM_QUEUE`` or ``./verification-queue``. Keep the queue apart from the results.
"""

from __future__ import annotations

import os
from pathlib import Path

from podium.errors import UsageError
from podium.urls import locate, resolve_url
from verifier.scale.queue.stores.base import (
    BundleToSubmit,
    QueueStore,
    default_identity,
    describe_bundle,
)
from verifier.scale.queue.stores.local import LocalQueue

DEFAULT_QUEUE = "./verification-queue"
ENV_QUEUE = "PODIUM_QUEUE"

__all__ = [
    "BundleToSubmit",
    "LocalQueue",
    "QueueStore",
    "default_identity",
    "describe_bundle",
    "hub_repo_of",
    "open_queue",
]


def hub_repo_of(url: str) -> tuple[str, str | None]:
    """(ORG/NAME, endpoint or None) of an ``hf://datasets/ORG/NAME`` URL."""
    from podium.hub import parse_dataset_url

    parsed = parse_dataset_url(url, what="queue")
    return parsed.repo_id, parsed.endpoint


def open_queue(url: str | None = None) -> QueueStore:
    url = resolve_url(url, env=ENV_QUEUE, default=DEFAULT_QUEUE)
    where = locate(url, what="queue")
    if isinstance(where, Path):
        return LocalQueue(where)
    from verifier.scale.queue.stores.hub import HubQueue  # huggingface_hub only for Hub queues

    if where.revision:
        raise UsageError(
            f"a queue lives on its main branch: {url!r}", hint="drop the @revision part"
        )
    return HubQueue(
        where.repo_id,
        endpoint=where.endpoint,
        token=os.environ.get("HF_TOKEN") or None,
        private=True if where.private is None else where.private,
    )
