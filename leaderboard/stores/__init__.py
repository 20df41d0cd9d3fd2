"""Stores of leaderboard records, chosen by one URL-ish string.

``./dir`` or ``file:///abs/dir``: a local folder. ``hf://datasets/ORG/NAME`` (optionally
``@revision`` and ``?endpoint=URL&private=1``): a Hub dataset repo. With no string,
``$PODIUM_STORE`` or ``./leaderboard-data``.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from podium.errors import UsageError
from podium.urls import locate, resolve_url

from .base import PublishResult, RawRecord, Store, record_path
from .local import LocalStore

if TYPE_CHECKING:
    from podium.hub import DatasetURL

DEFAULT_STORE = "./leaderboard-data"
ENV_STORE = "PODIUM_STORE"

__all__ = [
    "DEFAULT_STORE",
    "LocalStore",
    "PublishResult",
    "RawRecord",
    "Store",
    "open_existing_store",
    "open_store",
    "record_path",
    "resolve_store_url",
]


def resolve_store_url(url: str | None = None) -> str:
    return resolve_url(url, env=ENV_STORE, default=DEFAULT_STORE)


def open_store(url: str | None = None) -> Store:
    """The store named by ``url`` (see the module docstring)."""
    where = locate(resolve_store_url(url), what="store")
    if isinstance(where, Path):
        return LocalStore(where)
    return _open_hub(where)


def open_existing_store(url: str | None = None) -> Store:
    """A store to read from: a folder that does not exist, or is not a store, is an error."""
    store = open_store(url)
    if isinstance(store, LocalStore):
        root = store.root
        hint = (
            "pass --store with a store folder or hf://datasets/ORG/NAME; "
            "`podium verify BUNDLE --key KEY --publish DIR` creates one"
        )
        if not root.exists():
            raise UsageError(
                f"no leaderboard store at {resolve_store_url(url)}: no such folder", hint=hint
            )
        if not root.is_dir() or not any((root / p).exists() for p in ("README.md", "records")):
            raise UsageError(
                f"{resolve_store_url(url)} is not a leaderboard store (no README.md, no records/)",
                hint=hint,
            )
    return store


def _open_hub(parsed: DatasetURL) -> Store:
    from .hub import HubStore  # huggingface_hub only for Hub stores

    return HubStore(
        parsed.repo_id,
        endpoint=parsed.endpoint,
        token=os.environ.get("HF_TOKEN") or None,
        revision=parsed.revision or "main",
        private=parsed.private,
    )
