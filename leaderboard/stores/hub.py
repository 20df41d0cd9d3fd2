"""A leaderboard store in a Hugging Face Hub dataset repo.

Same layout as the local folder. One ``publish`` call is one commit holding every new
record (the Hub allows about 128 commits per hour per repo). Records already in the
repo are skipped after listing their folder, so publishing twice adds nothing.

Concurrent publishers add different files, so commits need no ``parent_commit``; when
the Hub still answers 409 (concurrent commit), 412 (moved branch), 429 (rate limit) or
5xx, the whole attempt (list, build operations, commit) is repeated after a jittered,
exponentially growing, bounded pause. ``CommitOperationAdd`` objects are built afresh
for every attempt: the client refuses to reuse one.

Records are small JSON text, so the Hub's preupload answer puts them in the commit
itself (base64 in the NDJSON body, "regular" upload mode); podium also switches the
client's xet path off, so nothing here needs ``hf_xet``, LFS or a storage backend.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from huggingface_hub import CommitOperationAdd, HfApi, constants, hf_hub_download, snapshot_download
from huggingface_hub.errors import EntryNotFoundError
from huggingface_hub.hf_api import RepoFile
from huggingface_hub.utils import tqdm as hf_tqdm

from .base import (
    CARD,
    KEYS_DIR,
    RECORDS_DIR,
    PublishResult,
    RawRecord,
    check_publishable,
    key_path,
    parse_raw,
    record_bytes,
)
from .card import render_card
from .hub_errors import with_retries
from .local import key_id_of_pem

T = TypeVar("T")
DEFAULT_ENDPOINT = "https://huggingface.co"


def plain_http_uploads() -> None:
    """Keep uploads off xet, as ``HF_HUB_DISABLE_XET=1`` would.

    ``huggingface_hub`` reads that variable when it is imported; its
    ``is_xet_available()`` then consults ``constants.HF_HUB_DISABLE_XET`` at call time,
    which is what this sets (unless the user explicitly asked for xet with ``=0``).
    """
    if os.environ.get("HF_HUB_DISABLE_XET", "").strip() not in ("0", "false", "False"):
        constants.HF_HUB_DISABLE_XET = True


def default_cache_dir() -> str:
    """Where downloaded rows are cached, from the environment as it is now.

    ``huggingface_hub`` fixes its cache path when imported; reading ``HF_HUB_CACHE`` /
    ``HF_HOME`` here lets a process (or a test) that changes them later be obeyed.
    """
    if os.environ.get("HF_HUB_CACHE"):
        return os.environ["HF_HUB_CACHE"]
    if os.environ.get("HF_HOME"):
        return os.path.join(os.environ["HF_HOME"], "hub")
    return str(constants.HF_HUB_CACHE)


class _QuietTqdm(hf_tqdm):
    """Progress bars off for store reads: a leaderboard read is many tiny files."""

    def __init__(self, *args: Any, **kwargs: Any):
        kwargs["disable"] = True
        super().__init__(*args, **kwargs)


class HubStore:
    """Records in the dataset repo ``repo_id`` on the Hub at ``endpoint``."""

    def __init__(
        self,
        repo_id: str,
        *,
        endpoint: str | None = None,
        token: str | None = None,
        revision: str = "main",
        private: bool | None = None,
        cache_dir: Path | str | None = None,
        max_attempts: int = 8,
        base_delay: float = 0.5,
        max_delay: float = 8.0,
    ):
        self.repo_id = repo_id
        self.endpoint = (endpoint or DEFAULT_ENDPOINT).rstrip("/")
        self.token = token
        self.revision = revision
        self.private = private
        self.cache_dir = str(cache_dir) if cache_dir is not None else default_cache_dir()
        self.max_attempts = max(1, max_attempts)
        self.base_delay = base_delay
        self.max_delay = max_delay
        self.url = f"hf://datasets/{repo_id}" + (f"@{revision}" if revision != "main" else "")
        self.api = HfApi(endpoint=self.endpoint, token=token)
        self._repo_ready = False
        self.attempts_made = 0

    # -- retries -----------------------------------------------------------------

    def _retrying(self, action: str, fn: Callable[[], T]) -> T:
        def count() -> None:
            self.attempts_made += 1

        return with_retries(
            fn,
            action=action,
            target=self.url,
            max_attempts=self.max_attempts,
            base_delay=self.base_delay,
            max_delay=self.max_delay,
            on_attempt=count,
        )

    def _ensure_repo(self) -> None:
        if self._repo_ready:
            return

        def create() -> None:
            self.api.create_repo(
                self.repo_id, repo_type="dataset", exist_ok=True, private=self.private
            )

        self._retrying("create the dataset repo", create)
        self._repo_ready = True

    # -- listing -----------------------------------------------------------------

    def _files_under(self, folder: str | None, *, recursive: bool = False) -> set[str]:
        """Paths of the files under ``folder`` at the branch head; empty if it is absent."""
        try:
            entries = self.api.list_repo_tree(
                self.repo_id,
                path_in_repo=folder,
                recursive=recursive,
                repo_type="dataset",
                revision=self.revision,
            )
            return {e.path for e in entries if isinstance(e, RepoFile)}
        except EntryNotFoundError:
            return set()

    def _commit(self, ops: list[CommitOperationAdd], message: str) -> None:
        plain_http_uploads()
        self.api.create_commit(
            self.repo_id, ops, commit_message=message, repo_type="dataset", revision=self.revision
        )

    # -- writing -----------------------------------------------------------------

    def publish(self, records: list[dict[str, Any]]) -> PublishResult:
        """Commit every record not yet in the repo, in one commit."""
        items = check_publishable(records)
        if not items:
            return PublishResult()
        self._ensure_repo()
        folders = sorted({path.rsplit("/", 1)[0] for path, _ in items})
        payload = {path: record_bytes(rec) for path, rec in items}

        def attempt() -> PublishResult:
            existing: set[str] = set()
            for folder in folders:
                existing |= self._files_under(folder)
            todo = [(p, r) for p, r in items if p not in existing]
            present = [r["record_id"] for p, r in items if p in existing]
            ops = [CommitOperationAdd(path_in_repo=p, path_or_fileobj=payload[p]) for p, _ in todo]
            if ops:
                root = self._files_under(None)
                if CARD not in root:
                    keys = {Path(p).stem: b"" for p in self._files_under(KEYS_DIR)}
                    card = render_card(keys, self.url).encode("utf-8")
                    ops.append(CommitOperationAdd(path_in_repo=CARD, path_or_fileobj=card))
                self._commit(ops, f"Add {len(todo)} leaderboard record(s)")
            return PublishResult(added=[r["record_id"] for _, r in todo], already_present=present)

        return self._retrying("publish records", attempt)

    def publish_key(self, pem: bytes) -> str:
        """Commit ``keys/<key_id>.pub`` and a card that lists it, unless already there."""
        kid = key_id_of_pem(pem)
        self._ensure_repo()

        def attempt() -> str:
            present = self._files_under(KEYS_DIR)
            if key_path(kid) in present:
                return kid
            keys = {Path(p).stem: b"" for p in present} | {kid: pem}
            card = render_card(keys, self.url).encode("utf-8")
            self._commit(
                [
                    CommitOperationAdd(path_in_repo=key_path(kid), path_or_fileobj=pem),
                    CommitOperationAdd(path_in_repo=CARD, path_or_fileobj=card),
                ],
                f"Add public key {kid}",
            )
            return kid

        return self._retrying("publish a public key", attempt)

    # -- reading -----------------------------------------------------------------

    def _snapshot(self, pattern: str) -> Path:
        """Download the files matching ``pattern``; the cache keeps them per commit, so a
        second read fetches only the files added since."""

        def fetch() -> str:
            return str(
                snapshot_download(
                    self.repo_id,
                    repo_type="dataset",
                    revision=self.revision,
                    allow_patterns=[pattern],
                    endpoint=self.endpoint,
                    token=self.token,
                    cache_dir=self.cache_dir,
                    tqdm_class=_QuietTqdm,
                )
            )

        return Path(self._retrying("read the dataset", fetch))

    def raw_records(self) -> list[RawRecord]:
        folder = self._snapshot(f"{RECORDS_DIR}/**")
        if not (folder / RECORDS_DIR).is_dir():
            return []
        return [
            RawRecord(p.relative_to(folder).as_posix(), p.read_bytes())
            for p in sorted((folder / RECORDS_DIR).glob("*/*.json"))
        ]

    def list_records(self) -> list[dict[str, Any]]:
        return parse_raw(self.raw_records())

    def get(self, record_id: str) -> dict[str, Any] | None:
        paths = self._retrying(
            "list records", lambda: self._files_under(RECORDS_DIR, recursive=True)
        )
        match = sorted(p for p in paths if p.endswith(f"/{record_id}.json"))
        if not match:
            return None

        def fetch() -> str:
            return str(
                hf_hub_download(
                    self.repo_id,
                    match[0],
                    repo_type="dataset",
                    revision=self.revision,
                    endpoint=self.endpoint,
                    token=self.token,
                    cache_dir=self.cache_dir,
                )
            )

        local = Path(self._retrying("download a record", fetch))
        return next(iter(parse_raw([RawRecord(match[0], local.read_bytes())])), None)

    def public_keys(self) -> dict[str, bytes]:
        folder = self._snapshot(f"{KEYS_DIR}/*.pub")
        if not (folder / KEYS_DIR).is_dir():
            return {}
        return {p.stem: p.read_bytes() for p in sorted((folder / KEYS_DIR).glob("*.pub"))}
