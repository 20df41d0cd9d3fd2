"""A verification queue in a Hub dataset repo, kept apart from the results.

Every change is one commit made against the revision it was computed from
(``parent_commit``): read the branch head, read the request files at that revision,
apply the pure transition, commit the new file and the deletion of the old path. When
anyone else committed in between, the Hub answers 412 and the whole attempt (read,
decide, build new operation objects, commit) starts again, after a jittered pause; a
claim that lost the race finds the request RUNNING and moves to the next candidate.

Commit cost (the Hub allows about 128 commits per hour per repo; docs/scale.md):
submit 1 (bundle and request together, or many bundles in one), claim 1, each lease
renewal 1 (a dispatcher renews all its claims in one), finish or fail 1.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Unpack

from huggingface_hub import CommitOperationAdd, CommitOperationDelete

from podium.errors import SchemaError
from podium.hub import HubOptions, HubRepo
from verifier.scale.queue import request as rq
from verifier.scale.queue.request import QueueRequest
from verifier.scale.queue.stores.base import BundleToSubmit, Change, QueueStore


class HubQueue(QueueStore):
    def __init__(
        self,
        repo_id: str,
        *,
        private: bool | None = True,
        **hub: Unpack[HubOptions],
    ):
        """``hub`` as ``podium.hub.HubRepo`` takes it; claims race, so the retry policy is
        more patient than a store's: 30 attempts, pauses from 0.2 s doubling up to 5 s."""
        self.repo_id = repo_id
        self.private = private
        self.url = f"hf://datasets/{repo_id}"
        patient: HubOptions = {"max_attempts": 30, "base_delay": 0.2, "max_delay": 5.0}
        self.repo = HubRepo(repo_id, self.url, **(patient | hub))
        self.commits_made = 0
        self._ready = False

    # -- plumbing ----------------------------------------------------------------

    def _ensure(self) -> None:
        if not self._ready:
            self.repo.retrying(
                "create the queue repo", lambda: self.repo.create(private=self.private)
            )
            self._ready = True

    def _paths(self, sha: str, folder: str) -> list[str]:
        return self.repo.files(folder, revision=sha, recursive=True)

    def _read(self, sha: str, path: str) -> QueueRequest | None:
        local = self.repo.download(path, revision=sha)
        try:
            return QueueRequest.parse(json.loads(local.read_bytes()), file=path)
        except (ValueError, SchemaError):
            return None

    def _commit(self, ops: list[Any], message: str, parent: str | None) -> None:
        self.repo.commit(ops, message, revision="main", parent=parent)
        self.commits_made += 1

    @staticmethod
    def _by_id(paths: list[str]) -> dict[str, str]:
        out: dict[str, str] = {}
        for p in paths:
            if p.endswith(".json"):
                out[p.rsplit("-", 1)[-1][: -len(".json")]] = p
        return out

    # -- the primitives ----------------------------------------------------------

    def list_requests(self, state: str | None = None) -> list[QueueRequest]:
        self._ensure()

        def read() -> list[QueueRequest]:
            sha = self.repo.head()
            folder = rq.state_dir(state) if state else rq.REQUESTS_DIR
            reqs = [r for p in self._paths(sha, folder) if (r := self._read(sha, p))]
            return sorted(reqs, key=lambda r: (r.doc["submitted_at"], r.request_id))

        return self.repo.retrying("list the queue", read)

    def _candidates(self) -> list[str]:
        self._ensure()

        def read() -> list[str]:
            sha = self.repo.head()
            names = self._paths(sha, rq.state_dir(rq.PENDING))
            names += self._paths(sha, rq.state_dir(rq.RUNNING))
            names.sort(key=lambda p: p.rsplit("/", 1)[-1])  # <submitted>-<id>: oldest first
            return list(self._by_id(names))

        return self.repo.retrying("list the queue", read)

    def _change(self, ids: Sequence[str], change: Change, *, message: str) -> list[QueueRequest]:
        self._ensure()
        result: list[QueueRequest] = []

        def attempt() -> None:
            result.clear()
            sha = self.repo.head()
            where = self._by_id(self._paths(sha, rq.REQUESTS_DIR))
            found = [self._read(sha, where[i]) if i in where else None for i in ids]
            out = change(found)
            if not out:
                return
            ops: list[Any] = []
            for req in out:
                ops.append(
                    CommitOperationAdd(path_in_repo=req.path, path_or_fileobj=req.to_bytes())
                )
                old = where.get(req.request_id)
                if old and old != req.path:
                    ops.append(CommitOperationDelete(path_in_repo=old))
            self._commit(ops, message, sha)
            result.extend(out)

        self.repo.retrying(message[:60].lower(), attempt)
        return list(result)

    def _put_bundles(self, bundles: list[BundleToSubmit], docs: list[QueueRequest]) -> None:
        self._ensure()

        def attempt() -> None:
            sha = self.repo.head()
            present = set(self._paths(sha, rq.BUNDLES_DIR))
            known = self._by_id(self._paths(sha, rq.REQUESTS_DIR))
            ops: list[Any] = []
            for b in bundles:
                path = f"{rq.BUNDLES_DIR}/{b.sha256}.tar.gz"
                if path not in present:
                    present.add(path)
                    ops.append(CommitOperationAdd(path_in_repo=path, path_or_fileobj=str(b.path)))
            ops += [
                CommitOperationAdd(path_in_repo=r.path, path_or_fileobj=r.to_bytes())
                for r in docs
                if r.request_id not in known
            ]
            if ops:
                self._commit(ops, f"Submit {len(docs)} request(s)", sha)

        self.repo.retrying("submit to the queue", attempt)

    def _download_bundle(self, req: QueueRequest, dest: Path) -> Path:
        path = req.doc["bundle"]["path"]
        return self.repo.retrying(
            "download a bundle", lambda: self.repo.download(path, revision="main", local_dir=dest)
        )
