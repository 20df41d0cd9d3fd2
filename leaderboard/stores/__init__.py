"""Stores of leaderboard records, chosen by one URL-ish string.

``./dir`` or ``file:///abs/dir``: a local folder. ``hf://datasets/ORG/NAME`` (optionally
``@revision`` and ``?endpoint=URL&private=1``): a Hub dataset repo. With no string,
``$PODIUM_STORE`` or ``./leaderboard-data``.
"""

from __future__ import annotations

import os
from pathlib import Path
from urllib.parse import urlsplit

from podium.errors import UsageError

from .base import PublishResult, RawRecord, Store, record_path
from .local import LocalStore

DEFAULT_STORE = "./leaderboard-data"
ENV_STORE = "PODIUM_STORE"

__all__ = [
    "DEFAULT_STORE",
    "LocalStore",
    "PublishResult",
    "RawRecord",
    "Store",
    "open_store",
    "record_path",
    "resolve_store_url",
]


def resolve_store_url(url: str | None = None) -> str:
    return url or os.environ.get(ENV_STORE) or DEFAULT_STORE


def open_store(url: str | None = None) -> Store:
    """The store named by ``url`` (see the module docstring)."""
    url = resolve_store_url(url)
    if url.startswith("hf://"):
        return _open_hub(url)
    if url.startswith("file://"):
        return LocalStore(Path(urlsplit(url).path))
    if "://" in url:
        raise UsageError(
            f"unknown store URL {url!r}", hint="use a folder path or hf://datasets/ORG/NAME"
        )
    return LocalStore(Path(url))


def _open_hub(url: str) -> Store:
    from podium.hub import parse_dataset_url  # huggingface_hub only for Hub stores

    from .hub import HubStore

    parsed = parse_dataset_url(url)
    return HubStore(
        parsed.repo_id,
        endpoint=parsed.endpoint,
        token=os.environ.get("HF_TOKEN") or None,
        revision=parsed.revision or "main",
        private=parsed.private,
    )
