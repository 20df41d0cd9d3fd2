"""A verification queue in a local folder, laid out like the Hub dataset.

Every change happens under ``fcntl.flock`` on ``.podium-queue.lock``: read the request,
apply the pure transition, write the new file atomically (temp file, fsync,
``os.replace``) under the folder of its new state, then remove the old one. A crash
between the two leaves both; readers keep the one with the longer history, so a request
is never lost and never seen twice. Good for workers on one machine (or a filesystem
whose ``flock`` is honest); many machines should share a Hub queue.
"""

from __future__ import annotations

import contextlib
import json
import shutil
from collections.abc import Sequence
from pathlib import Path

from podium.errors import SchemaError, StoreError
from podium.fsutil import atomic_write, folder_lock
from verifier.scale.queue import request as rq
from verifier.scale.queue.request import QueueRequest
from verifier.scale.queue.stores.base import BundleToSubmit, Change, QueueStore

LOCK_NAME = ".podium-queue.lock"


class LocalQueue(QueueStore):
    def __init__(self, root: Path | str):
        self.root = Path(root)
        self.url = str(self.root)

    def _locked(self) -> contextlib.AbstractContextManager[None]:
        return folder_lock(self.root, LOCK_NAME, what="queue")

    # -- reading (callers may or may not hold the lock) ----------------------------

    def _files(self) -> dict[str, tuple[Path, QueueRequest]]:
        """Every request by id; of duplicate copies (a crash mid-move), the newest."""
        base = self.root / rq.REQUESTS_DIR
        found: dict[str, tuple[Path, QueueRequest]] = {}
        if not base.is_dir():
            return found
        for path in sorted(base.glob("*/*.json")):
            try:
                req = QueueRequest.parse(json.loads(path.read_bytes()), file=str(path))
            except (OSError, ValueError, SchemaError):
                continue  # writes are atomic, so this is a foreign file: skipped
            old = found.get(req.request_id)
            if old is None or len(req.doc["history"]) > len(old[1].doc["history"]):
                found[req.request_id] = (path, req)
        return found

    def list_requests(self, state: str | None = None) -> list[QueueRequest]:
        reqs = [r for _, r in self._files().values()]
        reqs.sort(key=lambda r: (r.doc["submitted_at"], r.request_id))
        return [r for r in reqs if state is None or r.state == state]

    def _candidates(self) -> list[str]:
        return [r.request_id for r in self.list_requests() if r.state in (rq.PENDING, rq.RUNNING)]

    # -- writing -----------------------------------------------------------------

    def _write(self, req: QueueRequest, old: Path | None) -> None:
        new = self.root / req.path
        try:
            atomic_write(new, req.to_bytes())
            if old is not None and old != new:
                old.unlink(missing_ok=True)
        except OSError as exc:
            raise StoreError(f"cannot write {new}: {exc.strerror}", where=str(new)) from exc

    def _change(self, ids: Sequence[str], change: Change, *, message: str) -> list[QueueRequest]:
        with self._locked():
            files = self._files()
            found = [files[i][1] if i in files else None for i in ids]
            out = change(found)
            for req in out:
                old = files.get(req.request_id)
                self._write(req, old[0] if old else None)
                for stale in (self.root / rq.REQUESTS_DIR).glob(f"*/*-{req.request_id}.json"):
                    if stale != self.root / req.path:
                        stale.unlink(missing_ok=True)
            return out

    def _put_bundles(self, bundles: list[BundleToSubmit], docs: list[QueueRequest]) -> None:
        with self._locked():
            for b in bundles:
                target = self.root / rq.BUNDLES_DIR / f"{b.sha256}.tar.gz"
                if not target.exists():
                    atomic_write(target, b.path.read_bytes())
            files = self._files()
            for req in docs:
                if req.request_id not in files:
                    self._write(req, None)

    def _download_bundle(self, req: QueueRequest, dest: Path) -> Path:
        src = self.root / req.doc["bundle"]["path"]
        if not src.is_file():
            raise StoreError(f"the bundle of {req.request_id} is missing", where=str(src))
        target = dest / src.name
        shutil.copyfile(src, target)
        return target
