"""The heads a viewer has checked before: what a rollback is measured against.

After a view finds a store's head sound (its signature checks, it is not older than one
seen before and extends it), it remembers the head's version, size, root, time and key,
per store and key, in the user's cache: ``$XDG_CACHE_HOME/podium/heads/`` (else
``~/.cache/podium/heads/``), one small JSON file per store. A later view of the same
store compares against it (``leaderboard.setcheck``): an older version is a rollback, a
history that does not start with the remembered one was rewritten.

What it trusts: its own files, written only by podium on this machine. A missing or
unreadable memory is an empty one (the first view of a store has nothing to compare).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
from pathlib import Path
from typing import Any

from podium.fsutil import atomic_write


def cache_root() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "podium" / "heads"


class SeenHeads:
    """The last head checked per store (its ``identity``) and signing key."""

    def __init__(self, root: Path | None = None):
        self.root = root if root is not None else cache_root()

    def _file(self, identity: str) -> Path:
        return self.root / (hashlib.sha256(identity.encode("utf-8")).hexdigest()[:32] + ".json")

    def get(self, identity: str) -> dict[str, dict[str, Any]]:
        """Key id -> the head summary last checked for that store under that key."""
        try:
            doc = json.loads(self._file(identity).read_bytes())
        except (OSError, ValueError):
            return {}
        heads = doc.get("heads") if isinstance(doc, dict) else None
        return (
            {k: v for k, v in heads.items() if isinstance(v, dict)}
            if isinstance(heads, dict)
            else {}
        )

    def latest(self, identity: str, trusted: set[str]) -> dict[str, Any] | None:
        """The newest remembered head of the store signed by a key trusted now."""
        mine = [h for k, h in self.get(identity).items() if k in trusted]
        return max(mine, key=lambda h: int(h.get("version", 0)), default=None)

    def remember(self, identity: str, summary: dict[str, Any], seen_at: str) -> None:
        heads = self.get(identity)
        old = heads.get(summary["key_id"])
        if old is not None and int(old.get("version", 0)) > summary["version"]:
            return
        heads[summary["key_id"]] = {**summary, "seen_at": seen_at}
        doc = {"store": identity, "heads": heads}
        with contextlib.suppress(OSError):  # a read-only home loses the memory, not the view
            atomic_write(self._file(identity), json.dumps(doc, sort_keys=True).encode("utf-8"))
