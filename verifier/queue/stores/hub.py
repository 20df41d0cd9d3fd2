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
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

from huggingface_hub import (
    CommitOperationAdd,
    CommitOperationDelete,
    HfApi,
    hf_hub_download,
)
from huggingface_hub.errors import EntryNotFoundError
from huggingface_hub.hf_api import RepoFile

from leaderboard.stores.hub import default_cache_dir, plain_http_uploads
from leaderboard.stores.hub_errors import with_retries
from podium.errors import SchemaError
from verifier.queue import request as rq
from verifier.queue.request import QueueRequest
from verifier.queue.stores.base import BundleToSubmit, Change, QueueStore

T = TypeVar("T")
DEFAULT_ENDPOINT = "https://huggingface.co"


class HubQueue(QueueStore):
    def __init__(
        self,
        repo_id: str,
        *,
        endpoint: str | None = None,
        token: str | None = None,
        private: bool | None = True,
        cache_dir: Path | str | None = None,
        max_attempts: int = 30,
        base_delay: float = 0.2,
        max_delay: float = 5.0,
    ):
        self.repo_id = repo_id
        self.endpoint = (endpoint or DEFAULT_ENDPOINT).rstrip("/")
        self.token = token
        self.private = private
        self.cache_dir = str(cache_dir) if cache_dir is not None else default_cache_dir()
        self.max_attempts = max_attempts
        self.base_delay = base_delay
        self.max_delay = max_delay
        self.url = f"hf://datasets/{repo_id}"
        self.api = HfApi(endpoint=self.endpoint, token=token)
        self.commits_made = 0
        self._ready = False
        plain_http_uploads()

    # -- plumbing ----------------------------------------------------------------

    def _retrying(self, action: str, fn: Callable[[], T]) -> T:
        return with_retries(
            fn,
            action=action,
            target=self.url,
            max_attempts=self.max_attempts,
            base_delay=self.base_delay,
            max_delay=self.max_delay,
        )

    def _ensure(self) -> None:
        if not self._ready:
            self._retrying(
                "create the queue repo",
                lambda: self.api.create_repo(
                    self.repo_id, repo_type="dataset", exist_ok=True, private=self.private
                ),
            )
            self._ready = True

    def _head(self) -> str:
        info = self.api.dataset_info(self.repo_id)
        return str(info.sha)

    def _paths(self, sha: str, folder: str) -> list[str]:
        try:
            entries = self.api.list_repo_tree(
                self.repo_id, path_in_repo=folder, recursive=True, repo_type="dataset", revision=sha
            )
            return sorted(e.path for e in entries if isinstance(e, RepoFile))
        except EntryNotFoundError:
            return []

    def _read(self, sha: str, path: str) -> QueueRequest | None:
        local = hf_hub_download(
            self.repo_id,
            path,
            repo_type="dataset",
            revision=sha,
            endpoint=self.endpoint,
            token=self.token,
            cache_dir=self.cache_dir,
        )
        try:
            return QueueRequest.parse(json.loads(Path(local).read_bytes()), file=path)
        except (ValueError, SchemaError):
            return None

    def _commit(self, ops: list[Any], message: str, parent: str | None) -> None:
        self.api.create_commit(
            self.repo_id,
            ops,
            commit_message=message,
            repo_type="dataset",
            parent_commit=parent,
        )
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
            sha = self._head()
            folder = rq.state_dir(state) if state else rq.REQUESTS_DIR
            reqs = [r for p in self._paths(sha, folder) if (r := self._read(sha, p))]
            return sorted(reqs, key=lambda r: (r.doc["submitted_at"], r.request_id))

        return self._retrying("list the queue", read)

    def _candidates(self) -> list[str]:
        self._ensure()

        def read() -> list[str]:
            sha = self._head()
            names = self._paths(sha, rq.state_dir(rq.PENDING))
            names += self._paths(sha, rq.state_dir(rq.RUNNING))
            names.sort(key=lambda p: p.rsplit("/", 1)[-1])  # <submitted>-<id>: oldest first
            return list(self._by_id(names))

        return self._retrying("list the queue", read)

    def _change(self, ids: Sequence[str], change: Change, *, message: str) -> list[QueueRequest]:
        self._ensure()
        result: list[QueueRequest] = []

        def attempt() -> None:
            result.clear()
            sha = self._head()
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

        self._retrying(message[:60].lower(), attempt)
        return list(result)

    def _put_bundles(self, bundles: list[BundleToSubmit], docs: list[QueueRequest]) -> None:
        self._ensure()

        def attempt() -> None:
            sha = self._head()
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

        self._retrying("submit to the queue", attempt)

    def _download_bundle(self, req: QueueRequest, dest: Path) -> Path:
        def fetch() -> str:
            return str(
                hf_hub_download(
                    self.repo_id,
                    req.doc["bundle"]["path"],
                    repo_type="dataset",
                    endpoint=self.endpoint,
                    token=self.token,
                    local_dir=dest,
                )
            )

        return Path(self._retrying("download a bundle", fetch))
