"""A leaderboard store in a Hugging Face Hub dataset repo.

Same layout as the local folder. One ``publish`` call is one commit holding every new
record (the Hub allows about 128 commits per hour per repo). Records already in the
repo are skipped after listing their folder, so publishing twice adds nothing.

Every publish rewrites one file, the signed head (``log/head.json``, ``leaderboard.log``),
so publishers serialize on it: an attempt reads the branch's commit, the head at that
commit, builds and signs the next head, and commits the new rows with it with that
commit as ``parent_commit``. A publisher that lost the race (the Hub answers 412: the
branch moved) reads again and re-signs, after a jittered pause, up to ``head_races``
times. 409 (concurrent commit), 429 (rate limit) and 5xx repeat the attempt as before
(``podium.hub.with_retries``). ``CommitOperationAdd`` objects are built afresh for every
attempt: the client refuses to reuse one.

Records are small JSON text, so the Hub's preupload answer puts them in the commit
itself (base64 in the NDJSON body, "regular" upload mode). Transfers otherwise follow
huggingface_hub's own settings.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any, Unpack

from huggingface_hub import CommitOperationAdd, snapshot_download
from huggingface_hub.utils import tqdm as hf_tqdm

from podium.errors import HubError
from podium.hub import HUB_ERRORS, HubOptions, HubRepo, backoff, status_of

from . import base
from .base import HeadMaker, PublishResult, RawRecord, Snapshot
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
        head_races: int = 64,
        **hub: Unpack[HubOptions],
    ):
        """``hub``: endpoint, token, cache_dir and the retry policy (8 attempts, pauses from
        0.5 s doubling up to 8 s), as ``podium.hub.HubRepo`` takes them."""
        self.repo_id = repo_id
        self.revision = revision
        self.private = private
        self.url = f"hf://datasets/{repo_id}" + (f"@{revision}" if revision != "main" else "")
        self.repo = HubRepo(repo_id, self.url, **hub)
        self.identity = f"{self.repo.endpoint}/datasets/{repo_id}@{revision}"
        self.head_races = max(1, head_races)
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

    def publish(self, records: list[dict[str, Any]], signer: HeadMaker) -> PublishResult:
        """Commit every record the head does not list yet, with the next head, in one commit."""
        files = base.record_files(records)
        if not files:
            return PublishResult()
        return base.by_record_id(self.append(files, signer))

    def append(self, files: dict[str, bytes], signer: HeadMaker) -> PublishResult:
        """Commit the documents ``files`` the head does not list yet and the next head."""
        self._ensure_repo()

        def attempt() -> PublishResult | None:
            commit = self.repo.head(self.revision)
            plan = signer.plan(self._head_at(commit), files, lambda: self._documents_at(commit))
            if plan.head is None:
                return PublishResult(already_present=list(plan.present))
            ops = [CommitOperationAdd(path_in_repo=p, path_or_fileobj=files[p]) for p in plan.write]
            ops.append(CommitOperationAdd(path_in_repo=base.HEAD_PATH, path_or_fileobj=plan.head))
            if base.CARD not in self.repo.files(None, revision=commit):
                keys = {Path(p).stem: b"" for p in self.repo.files(base.KEYS_DIR, revision=commit)}
                card = render_card(keys, self.url).encode("utf-8")
                ops.append(CommitOperationAdd(path_in_repo=base.CARD, path_or_fileobj=card))
            what = (
                "record"
                if all(p.startswith(base.RECORDS_DIR + "/") for p in plan.write)
                else "document"
            )
            if not self._commit_on(ops, f"Add {len(plan.write)} leaderboard {what}(s)", commit):
                return None
            return PublishResult(added=list(plan.write), already_present=list(plan.present))

        return self._serialized("publish records", attempt)

    def resign_head(self, signer: HeadMaker) -> bytes:
        """Commit a new head over the same set (a later version and time)."""
        self._ensure_repo()

        def attempt() -> bytes | None:
            commit = self.repo.head(self.revision)
            head = signer.resign(self._head_at(commit), lambda: self._documents_at(commit))
            op = CommitOperationAdd(path_in_repo=base.HEAD_PATH, path_or_fileobj=head)
            return head if self._commit_on([op], "Re-sign the leaderboard head", commit) else None

        return self._serialized("re-sign the head", attempt)

    def _serialized(self, action: str, attempt: Any) -> Any:
        """Run ``attempt`` until it wins the race for the head (it returns None when another
        publisher moved the branch first), pausing with jitter between tries."""
        for race in range(self.head_races):
            outcome = self.repo.retrying(action, attempt)
            if outcome is not None:
                return outcome
            time.sleep(
                backoff(
                    race,
                    Exception(),
                    base_delay=self.repo.base_delay,
                    max_delay=self.repo.max_delay,
                )
            )
        raise HubError(
            f"cannot {action}: other publishers moved the branch first {self.head_races} times",
            where=self.url,
            hint="retry later; many publishers are committing at once",
        )

    def _commit_on(self, ops: list[CommitOperationAdd], message: str, parent: str) -> bool:
        """Commit on top of ``parent``; False when the branch has moved (HTTP 412)."""
        try:
            self.repo.commit(ops, message, revision=self.revision, parent=parent)
        except HUB_ERRORS as exc:
            if status_of(exc) == 412:
                return False
            raise
        return True

    def _head_at(self, commit: str) -> bytes | None:
        if base.HEAD_PATH not in self.repo.files(base.HEAD_PATH.rsplit("/", 1)[0], revision=commit):
            return None
        return self.repo.download(base.HEAD_PATH, revision=commit).read_bytes()

    def _documents_at(self, commit: str) -> list[RawRecord]:
        top = {p.split("/", 1)[0] for p in self.repo.files(None, revision=commit)}
        if not top & {base.RECORDS_DIR, base.WITHDRAWALS_DIR.split("/")[0], base.KEYS_DIR}:
            return []
        folder = self._snapshot_of(
            [f"{d}/**" for d in (base.RECORDS_DIR, *base.document_dirs())], commit
        )
        return [*self._read(folder, base.RECORDS_DIR), *self._docs(folder)]

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

    def _snapshot_of(self, patterns: list[str], revision: str | None = None) -> Path:
        """Download the files matching ``patterns`` at one commit; the cache keeps them per
        commit, so a second read fetches only the files added since."""

        def fetch() -> str:
            return str(
                snapshot_download(
                    self.repo_id,
                    repo_type="dataset",
                    revision=revision or self.revision,
                    allow_patterns=patterns,
                    endpoint=self.repo.endpoint,
                    token=self.repo.token,
                    cache_dir=self.repo.cache_dir,
                    tqdm_class=_QuietTqdm,
                )
            )

        return Path(self.repo.retrying("read the dataset", fetch))

    def _snapshot(self, pattern: str) -> Path:
        return self._snapshot_of([pattern])

    @staticmethod
    def _read(folder: Path, sub: str, *, layout: bool = True) -> list[RawRecord]:
        if not (folder / sub).is_dir():
            return []
        out: list[RawRecord] = []
        for p in sorted((folder / sub).rglob("*")):
            rel = p.relative_to(folder).as_posix()
            if p.is_dir():
                continue
            problem = base.layout_error(rel) if layout else None
            out.append(RawRecord(rel, b"", problem) if problem else RawRecord(rel, p.read_bytes()))
        return out

    def _docs(self, folder: Path) -> list[RawRecord]:
        return [d for sub in base.document_dirs() for d in self._read(folder, sub, layout=False)]

    def raw_records(self) -> list[RawRecord]:
        return self._read(self._snapshot(f"{base.RECORDS_DIR}/**"), base.RECORDS_DIR)

    def snapshot(self) -> Snapshot:
        """Rows, withdrawals, rotations, keys and the head, all from one commit."""
        subs = (base.RECORDS_DIR, *base.document_dirs(), "log", base.KEYS_DIR)
        folder = self._snapshot_of([f"{s}/**" for s in subs])
        head = folder / base.HEAD_PATH
        keys_dir = folder / base.KEYS_DIR
        keys = (
            {p.stem: p.read_bytes() for p in sorted(keys_dir.glob("*.pub"))}
            if keys_dir.is_dir()
            else {}
        )
        return Snapshot(
            self._read(folder, base.RECORDS_DIR),
            self._docs(folder),
            head.read_bytes() if head.is_file() else None,
            keys,
            self._bundles(),
        )

    def _bundles(self) -> dict[str, str]:
        """Links to the bundles under ``bundles/`` (listed, never downloaded)."""
        names = self.repo.retrying(
            "list bundles", lambda: self.repo.files(base.BUNDLES_DIR, revision=self.revision)
        )
        where = f"{self.repo.endpoint}/datasets/{self.repo_id}/resolve/{self.revision}"
        out = {}
        for path in names:
            sha = base.bundle_sha(path.rsplit("/", 1)[-1])
            if sha is not None:
                out[sha] = f"{where}/{path}"
        return out

    def read_bundle(self, sha: str) -> bytes | None:
        name = base.bundle_sha(f"{sha}.tar.gz")
        if name is None:
            return None
        path = base.bundle_path(name)
        held = self.repo.retrying(
            "list bundles", lambda: self._files_under(base.BUNDLES_DIR, recursive=True)
        )
        if path not in held:
            return None
        local = self.repo.retrying(
            "download a bundle", lambda: self.repo.download(path, revision=self.revision)
        )
        return local.read_bytes()

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
