"""What a viewer has checked before: what a rollback or a revived key is measured against.

After a view checks a store, it remembers, per store (its ``identity``), in the user's
cache (``$XDG_CACHE_HOME/podium/heads/``, else ``~/.cache/podium/heads/``, one small JSON
file per store):

- the newest sound head it saw under each key (version, size, root, time, key);
- every key rotation a trusted key signed (the signed document itself), revocations
  included;
- every withdrawal a trusted key signed.

A later view of the same store compares against all of it, whatever keys it trusts now
(``leaderboard.setcheck``, ``leaderboard.checked``): a head older than the newest one
seen, under any key, is a rollback; a history that does not start with it was rewritten;
a rotation or withdrawal a writer removed from the store still counts, so a key rotated
away stays rotated away, a revoked key stays revoked and a withdrawn row stays withdrawn.
Remembered documents are signed: they are checked again against the view's keys, as if
they were in the store.

What it trusts: its own files, written only by podium on this machine. A missing or
unreadable memory is an empty one (the first view of a store has nothing to compare).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from podium.fsutil import atomic_write


def cache_root() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "podium" / "heads"


def _dicts(value: Any) -> list[dict[str, Any]]:
    return [v for v in value if isinstance(v, dict)] if isinstance(value, list) else []


def _signature_of(doc: dict[str, Any]) -> str:
    sig = doc.get("signature")
    return str(sig.get("value")) if isinstance(sig, dict) else json.dumps(doc, sort_keys=True)


class SeenHeads:
    """The heads, rotations and withdrawals checked before, per store (its ``identity``)."""

    def __init__(self, root: Path | None = None):
        self.root = root if root is not None else cache_root()

    def _file(self, identity: str) -> Path:
        return self.root / (hashlib.sha256(identity.encode("utf-8")).hexdigest()[:32] + ".json")

    def _doc(self, identity: str) -> dict[str, Any]:
        try:
            doc = json.loads(self._file(identity).read_bytes())
        except (OSError, ValueError):
            return {}
        return doc if isinstance(doc, dict) else {}

    def get(self, identity: str) -> dict[str, dict[str, Any]]:
        """Key id -> the newest head summary checked for that store under that key."""
        heads = self._doc(identity).get("heads")
        return (
            {k: v for k, v in heads.items() if isinstance(v, dict)}
            if isinstance(heads, dict)
            else {}
        )

    def latest(self, identity: str) -> dict[str, Any] | None:
        """The newest head of the store this viewer checked, whatever key signed it (a key
        trusted then may be trusted now only through a rotation a writer can delete)."""
        heads = self.get(identity).values()
        return max(heads, key=lambda h: int(h.get("version", 0)), default=None)

    def rotations(self, identity: str) -> list[dict[str, Any]]:
        """The signed key rotations seen in the store (revocations included)."""
        return _dicts(self._doc(identity).get("rotations"))

    def withdrawals(self, identity: str) -> list[tuple[str, dict[str, Any]]]:
        """(path, signed withdrawal) pairs seen in the store."""
        out = []
        for item in _dicts(self._doc(identity).get("withdrawals")):
            if isinstance(item.get("path"), str) and isinstance(item.get("doc"), dict):
                out.append((item["path"], item["doc"]))
        return out

    def remember(
        self,
        identity: str,
        summary: dict[str, Any] | None,
        seen_at: str,
        *,
        rotations: Iterable[dict[str, Any]] = (),
        withdrawals: Iterable[tuple[str, dict[str, Any]]] = (),
    ) -> None:
        """Add ``summary`` (a sound head, unless older than the one kept for its key) and
        the signed documents to the memory; nothing already remembered is forgotten."""
        doc = self._doc(identity)
        heads = self.get(identity)
        if summary is not None:
            old = heads.get(summary["key_id"])
            if old is None or int(old.get("version", 0)) <= summary["version"]:
                heads[summary["key_id"]] = {**summary, "seen_at": seen_at}
        known_rot = _dicts(doc.get("rotations"))
        have = {_signature_of(d) for d in known_rot}
        for rot in rotations:
            if _signature_of(rot) not in have:
                known_rot.append(rot)
                have.add(_signature_of(rot))
        known_wd = _dicts(doc.get("withdrawals"))
        paths = {str(d.get("path")) for d in known_wd}
        for path, wd in withdrawals:
            if path not in paths:
                known_wd.append({"path": path, "doc": wd})
                paths.add(path)
        new = {"store": identity, "heads": heads, "rotations": known_rot, "withdrawals": known_wd}
        if new == doc:
            return
        with contextlib.suppress(OSError):  # a read-only home loses the memory, not the view
            atomic_write(self._file(identity), json.dumps(new, sort_keys=True).encode("utf-8"))
