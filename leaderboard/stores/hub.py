"""A leaderboard store in a Hugging Face Hub dataset repo.

Same layout as the local folder. One ``publish`` call is one commit holding every new
record (the Hub allows about 128 commits per hour per repo). Records already in the
repo are skipped after listing their folder, so publishing twice adds nothing.

Concurrent publishers add different files, so commits need no ``parent_commit``; when
the Hub still answers 409 (concurrent commit), 412 (moved branch), 429 (rate limit) or
5xx, the whole attempt (list, build operations, commit) is repeated after a jittered,
exponentially growing, bounded pause (``podium.hub.with_retries``). ``CommitOperationAdd``
objects are built afresh for every attempt: the client refuses to reuse one.

Records are small JSON text, so the Hub's preupload answer puts them in the commit
itself (base64 in the NDJSON body, "regular" upload mode). Transfers otherwise follow
huggingface_hub's own settings.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Unpack

from huggingface_hub import CommitOperationAdd, snapshot_download
from huggingface_hub.utils import tqdm as hf_tqdm

from podium.hub import HubOptions, HubRepo

from . import base
from .base import PublishResult, RawRecord
from .card import render_card
from .local import key_id_of_pem


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
        revision: str = "main",
        private: bool | None = None,
        **hub: Unpack[HubOptions],
    ):
        """``hub``: endpoint, token, cache_dir and the retry policy (8 attempts, pauses from
        0.5 s doubling up to 8 s), as ``podium.hub.HubRepo`` takes them."""
        self.repo_id = repo_id
        self.revision = revision
        self.private = private
        self.url = f"hf://datasets/{repo_id}" + (f"@{revision}" if revision != "main" else "")
        self.repo = HubRepo(repo_id, self.url, **hub)
        self._repo_ready = False

    @property
    def attempts_made(self) -> int:
        return self.repo.attempts_made

    def _ensure_repo(self) -> None:
        if not self._repo_ready:
            self.repo.retrying(
                "create the dataset repo", lambda: self.repo.create(private=self.private)
            )
            self._repo_ready = True

    def _files_under(self, folder: str | None, *, recursive: bool = False) -> set[str]:
        return set(self.repo.files(folder, revision=self.revision, recursive=recursive))

    def _commit(self, ops: list[CommitOperationAdd], message: str) -> None:
        self.repo.commit(ops, message, revision=self.revision)

    # -- writing -----------------------------------------------------------------

    def publish(self, records: list[dict[str, Any]]) -> PublishResult:
        """Commit every record not yet in the repo, in one commit."""
        items = base.check_publishable(records)
        if not items:
            return PublishResult()
        self._ensure_repo()
        folders = sorted({path.rsplit("/", 1)[0] for path, _ in items})
        payload = {path: base.record_bytes(rec) for path, rec in items}

        def attempt() -> PublishResult:
            existing: set[str] = set()
            for folder in folders:
                existing |= self._files_under(folder)
            todo = [(p, r) for p, r in items if p not in existing]
            present = [r["record_id"] for p, r in items if p in existing]
            ops = [CommitOperationAdd(path_in_repo=p, path_or_fileobj=payload[p]) for p, _ in todo]
            if ops:
                if base.CARD not in self._files_under(None):
                    keys = {Path(p).stem: b"" for p in self._files_under(base.KEYS_DIR)}
                    card = render_card(keys, self.url).encode("utf-8")
                    ops.append(CommitOperationAdd(path_in_repo=base.CARD, path_or_fileobj=card))
                self._commit(ops, f"Add {len(todo)} leaderboard record(s)")
            return PublishResult(added=[r["record_id"] for _, r in todo], already_present=present)

        return self.repo.retrying("publish records", attempt)

    def publish_key(self, pem: bytes) -> str:
        """Commit ``keys/<key_id>.pub`` and a card that lists it, unless already there."""
        kid = key_id_of_pem(pem)
        self._ensure_repo()

        def attempt() -> str:
            present = self._files_under(base.KEYS_DIR)
            if base.key_path(kid) in present:
                return kid
            keys = {Path(p).stem: b"" for p in present} | {kid: pem}
            card = render_card(keys, self.url).encode("utf-8")
            self._commit(
                [
                    CommitOperationAdd(path_in_repo=base.key_path(kid), path_or_fileobj=pem),
                    CommitOperationAdd(path_in_repo=base.CARD, path_or_fileobj=card),
                ],
                f"Add public key {kid}",
            )
            return kid

        return self.repo.retrying("publish a public key", attempt)

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
                    endpoint=self.repo.endpoint,
                    token=self.repo.token,
                    cache_dir=self.repo.cache_dir,
                    tqdm_class=_QuietTqdm,
                )
            )

        return Path(self.repo.retrying("read the dataset", fetch))

    def raw_records(self) -> list[RawRecord]:
        folder = self._snapshot(f"{base.RECORDS_DIR}/**")
        if not (folder / base.RECORDS_DIR).is_dir():
            return []
        out: list[RawRecord] = []
        for p in sorted((folder / base.RECORDS_DIR).rglob("*")):
            rel = p.relative_to(folder).as_posix()
            if p.is_dir():
                continue
            problem = base.layout_error(rel)
            out.append(RawRecord(rel, b"", problem) if problem else RawRecord(rel, p.read_bytes()))
        return out

    def list_records(self) -> list[dict[str, Any]]:
        return base.parse_raw(self.raw_records())

    def get(self, record_id: str) -> dict[str, Any] | None:
        paths = self.repo.retrying(
            "list records", lambda: self._files_under(base.RECORDS_DIR, recursive=True)
        )
        match = sorted(p for p in paths if p.endswith(f"/{record_id}.json"))
        if not match:
            return None
        local = self.repo.retrying(
            "download a record", lambda: self.repo.download(match[0], revision=self.revision)
        )
        return next(iter(base.parse_raw([RawRecord(match[0], local.read_bytes())])), None)

    def public_keys(self) -> dict[str, bytes]:
        folder = self._snapshot(f"{base.KEYS_DIR}/*.pub")
        if not (folder / base.KEYS_DIR).is_dir():
            return {}
        return {p.stem: p.read_bytes() for p in sorted((folder / base.KEYS_DIR).glob("*.pub"))}
