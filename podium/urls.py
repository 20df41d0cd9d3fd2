"""Where a leaderboard store or a verification queue lives, from one URL-ish string.

``./dir`` or ``file:///abs/dir``: a local folder. ``hf://datasets/ORG/NAME`` (optionally
``@revision`` and ``?endpoint=URL&private=1``): a Hub dataset repo. With no string, an
environment variable, else a default folder. ``leaderboard.stores`` and
``verifier.scale.queue.stores`` both read their URL here; huggingface_hub is imported
only for a Hub URL.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from podium.errors import UsageError

if TYPE_CHECKING:
    from podium.hub import DatasetURL


def resolve_url(url: str | None, *, env: str, default: str) -> str:
    """``url``, else ``$env``, else ``default``."""
    return url or os.environ.get(env) or default


def locate(url: str, *, what: str) -> Path | DatasetURL:
    """The folder, or the Hub dataset taken apart, that ``url`` names; an unknown scheme
    is a ``UsageError`` naming ``what`` (``store``, ``queue``)."""
    if url.startswith("hf://"):
        from podium.hub import parse_dataset_url

        return parse_dataset_url(url, what=what)
    if url.startswith("file://"):
        return Path(urlsplit(url).path)
    if "://" in url:
        raise UsageError(
            f"unknown {what} URL {url!r}", hint="use a folder path or hf://datasets/ORG/NAME"
        )
    return Path(url)
