"""The Hugging Face Hub as podium's stores use it: one repo, retried calls, translated errors.

The leaderboard's Hub store, the verifier's Hub queue and the Jobs dispatcher all reach
the Hub through ``huggingface_hub``; what they share lives here, below both packages:

- ``DEFAULT_ENDPOINT`` and ``resolve_endpoint`` (an explicit endpoint, else
  ``HF_ENDPOINT`` read now, else the public Hub);
- ``HubRepo``: one dataset repo on one endpoint, the calls every store makes on it
  (create, list a folder, download a file, commit) and the retry policy around them;
- ``with_retries``: call until it works, retrying only the answers another attempt can
  fix: a moved branch (412), a concurrent commit (409), the rate limit (429), 408, server
  errors and dropped connections; full jitter over an exponential ceiling, at least what
  ``Retry-After`` asks;
- ``translate_hub_error``: the one translation of what the Hub client raises into
  ``HubError`` (the Hub refused or failed) or ``StoreError`` (the answer could not be
  used), each with a hint.

Only errors the Hub client raises are translated (``HUB_ERRORS``): its HTTP errors, its
offline and missing-file errors, its repo-id validation and the transport errors of the
HTTP library it is built on. A ``ValueError`` or ``OSError`` from podium's own code is a
bug and surfaces as one. huggingface_hub's own settings (xet transfers included) are left
as the user's environment has them.
"""

from __future__ import annotations

import os
import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypedDict, TypeVar
from urllib.parse import parse_qs, urlsplit

import httpx2
from huggingface_hub import HfApi, constants, hf_hub_download
from huggingface_hub.errors import (
    EntryNotFoundError,
    HfHubHTTPError,
    HFValidationError,
    OfflineModeIsEnabled,
    RepositoryNotFoundError,
    RevisionNotFoundError,
)
from huggingface_hub.hf_api import RepoFile

from podium.errors import HubError, PodiumError, StoreError, UsageError

T = TypeVar("T")

DEFAULT_ENDPOINT = "https://huggingface.co"

#: what the Hub client raises; anything else is a bug in podium and is not translated
HUB_ERRORS: tuple[type[Exception], ...] = (
    HfHubHTTPError,  # an HTTP answer (a subclass of httpx2.HTTPError)
    httpx2.HTTPError,  # the transport under huggingface_hub: refused, reset, timed out
    OfflineModeIsEnabled,
    EntryNotFoundError,  # remote (404) or not in the local cache
    HFValidationError,  # a repo id or revision the client will not send
)

RETRY_STATUS = frozenset({408, 409, 412, 429})


def resolve_endpoint(endpoint: str | None = None) -> str:
    """``endpoint``, else ``$HF_ENDPOINT`` as it is now, else the public Hub (no final slash)."""
    return (endpoint or os.environ.get("HF_ENDPOINT") or DEFAULT_ENDPOINT).rstrip("/")


@dataclass(frozen=True)
class DatasetURL:
    """``hf://datasets/ORG/NAME[@revision][?endpoint=URL&private=1]``, taken apart."""

    repo_id: str
    revision: str | None
    endpoint: str | None
    private: bool | None


def parse_dataset_url(url: str, *, what: str = "store") -> DatasetURL:
    """Read a Hub dataset URL; a malformed one is a ``UsageError`` saying how to write it."""
    parts = urlsplit(url)
    segments = (parts.netloc + parts.path).strip("/").split("/")
    if parts.scheme != "hf" or len(segments) != 3 or segments[0] != "datasets":
        segments = []
    name, _, revision = segments[2].partition("@") if segments else ("", "", "")
    if not segments or not segments[1] or not name:
        raise UsageError(
            f"bad Hub {what} URL {url!r}", hint="write hf://datasets/ORG/NAME[@revision]"
        )
    query = {k: v[-1] for k, v in parse_qs(parts.query).items()}
    flags = {"1": True, "true": True, "0": False, "false": False}
    return DatasetURL(
        repo_id=f"{segments[1]}/{name}",
        revision=revision or None,
        endpoint=query.get("endpoint") or None,
        private=flags.get(query.get("private", "").lower()),
    )


def default_cache_dir() -> str:
    """Where downloaded files are cached, from the environment as it is now.

    ``huggingface_hub`` fixes its cache path when imported; reading ``HF_HUB_CACHE`` /
    ``HF_HOME`` here lets a process (or a test) that changes them later be obeyed.
    """
    if os.environ.get("HF_HUB_CACHE"):
        return os.environ["HF_HUB_CACHE"]
    if os.environ.get("HF_HOME"):
        return os.path.join(os.environ["HF_HOME"], "hub")
    return str(constants.HF_HUB_CACHE)


# -- what an answer means ---------------------------------------------------------


def status_of(exc: BaseException) -> int | None:
    if isinstance(exc, HfHubHTTPError) and exc.response is not None:
        return int(exc.response.status_code)
    if isinstance(exc, httpx2.HTTPStatusError):
        return int(exc.response.status_code)
    return None


def _caused_by_offline(exc: BaseException) -> bool:
    """``snapshot_download`` wraps the offline error in a "not in the cache" one."""
    seen: BaseException | None = exc
    for _ in range(5):
        if seen is None:
            return False
        if isinstance(seen, OfflineModeIsEnabled):
            return True
        seen = seen.__cause__ or seen.__context__
    return False


def is_retryable(exc: BaseException) -> bool:
    """True for answers that another attempt, a little later, can fix."""
    if _caused_by_offline(exc):
        return False
    status = status_of(exc)
    if status is not None:
        return status in RETRY_STATUS or status >= 500
    return isinstance(exc, httpx2.TransportError)


def retry_after(exc: BaseException) -> float | None:
    """The server's ``Retry-After`` in seconds, when it sent one as a number."""
    if isinstance(exc, HfHubHTTPError) and exc.response is not None:
        value = exc.response.headers.get("Retry-After")
        try:
            return float(value) if value is not None else None
        except ValueError:
            return None
    return None


def backoff(attempt: int, exc: BaseException, *, base_delay: float, max_delay: float) -> float:
    """Full jitter over an exponential ceiling, at least what Retry-After asks."""
    ceiling = min(max_delay, base_delay * (2 ** min(attempt, 30)))
    delay = random.uniform(0, ceiling)
    hinted = retry_after(exc)
    if hinted is not None:
        delay = max(delay, min(hinted, max_delay))
    return delay


def with_retries(
    fn: Callable[[], T],
    *,
    action: str,
    target: str,
    max_attempts: int,
    base_delay: float,
    max_delay: float,
    on_attempt: Callable[[], None] | None = None,
) -> T:
    """Call ``fn`` until it succeeds, retrying only the Hub answers worth another try.

    ``fn`` must build its operation objects afresh on every call (huggingface_hub's
    cannot be reused after an attempt). podium's own errors raised inside ``fn`` (a lost
    lease, a bad state) pass through untouched: they are decisions, not Hub answers.
    """
    for attempt in range(max(1, max_attempts)):
        if on_attempt is not None:
            on_attempt()
        try:
            return fn()
        except PodiumError:
            raise
        except HUB_ERRORS as exc:
            if not is_retryable(exc) or attempt >= max_attempts - 1:
                raise translate_hub_error(
                    exc, action=action, target=target, attempts=attempt + 1
                ) from exc
            time.sleep(backoff(attempt, exc, base_delay=base_delay, max_delay=max_delay))
    raise AssertionError("unreachable: the last attempt raises")


def _server_text(exc: BaseException) -> str:
    if isinstance(exc, HfHubHTTPError) and exc.server_message:
        return str(exc.server_message).strip().splitlines()[0]
    return str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__


def translate_hub_error(
    exc: BaseException, *, action: str, target: str, attempts: int = 1
) -> PodiumError:
    """One ``PodiumError`` with a hint for a failed Hub call (``action`` on ``target``)."""
    tried = f" (after {attempts} attempts)" if attempts > 1 else ""
    where = target
    if _caused_by_offline(exc):
        return HubError(
            f"cannot {action}: offline mode is on",
            where=where,
            hint="unset HF_HUB_OFFLINE (it is read when huggingface_hub is imported)",
        )
    if isinstance(exc, RevisionNotFoundError):
        return HubError(
            f"cannot {action}: the revision does not exist",
            where=where,
            hint="check the @revision part of the store URL",
        )
    if isinstance(exc, RepositoryNotFoundError):
        return HubError(
            f"cannot {action}: the dataset repo does not exist or is private",
            where=where,
            hint="check the repo name; set HF_TOKEN to a token that can read it",
        )
    status = status_of(exc)
    if status in (401, 403):
        return HubError(
            f"cannot {action}: the Hub refused the token (HTTP {status})",
            where=where,
            hint="set HF_TOKEN to a token with write access to this dataset",
        )
    if status == 429:
        return HubError(
            f"cannot {action}: rate limited by the Hub{tried}",
            where=where,
            hint="wait a few minutes; publish more records per call (one commit each)",
        )
    if status in (409, 412):
        return HubError(
            f"cannot {action}: the repo kept changing under us (HTTP {status}){tried}",
            where=where,
            hint="retry later; many publishers are committing at once",
        )
    if status is not None and status >= 500:
        return HubError(
            f"cannot {action}: the Hub failed (HTTP {status}){tried}: {_server_text(exc)}",
            where=where,
            hint="the Hub may be down; retry later",
        )
    if status is not None:
        return HubError(f"cannot {action}: HTTP {status}: {_server_text(exc)}", where=where)
    if isinstance(exc, httpx2.TransportError):
        return HubError(
            f"cannot {action}: cannot reach the Hub{tried}: {_server_text(exc)}",
            where=where,
            hint="check the network, HF_ENDPOINT or the ?endpoint= of the store URL",
        )
    if isinstance(exc, EntryNotFoundError):
        return StoreError(
            f"cannot {action}: a file is missing on the Hub: {_server_text(exc)}", where=where
        )
    if isinstance(exc, HFValidationError):
        return StoreError(
            f"cannot {action}: {_server_text(exc)}",
            where=where,
            hint="check the repo name (ORG/NAME) of the store or queue URL",
        )
    return StoreError(f"cannot {action}: {type(exc).__name__}: {_server_text(exc)}", where=where)


# -- one repo ---------------------------------------------------------------------


class HubOptions(TypedDict, total=False):
    """How a store or queue reaches its repo (keyword arguments of ``HubRepo``)."""

    endpoint: str | None
    token: str | None
    cache_dir: Path | str | None
    max_attempts: int
    base_delay: float
    max_delay: float


@dataclass
class HubRepo:
    """The dataset repo ``repo_id`` on ``endpoint``, and how calls to it are retried.

    ``url`` names it in errors. Every method is one Hub call, not retried by itself:
    wrap whole attempts (read, decide, commit) in ``retrying``.
    """

    repo_id: str
    url: str
    endpoint: str | None = None
    token: str | None = None
    cache_dir: Path | str | None = None
    max_attempts: int = 8
    base_delay: float = 0.5
    max_delay: float = 8.0
    #: attempts made by ``retrying`` so far (every call of the wrapped function)
    attempts_made: int = 0
    api: HfApi = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self.endpoint = resolve_endpoint(self.endpoint)
        self.cache_dir = str(self.cache_dir) if self.cache_dir is not None else default_cache_dir()
        self.max_attempts = max(1, self.max_attempts)
        self.api = HfApi(endpoint=self.endpoint, token=self.token)

    def retrying(self, action: str, fn: Callable[[], T]) -> T:
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

    def create(self, *, private: bool | None) -> None:
        self.api.create_repo(self.repo_id, repo_type="dataset", exist_ok=True, private=private)

    def head(self, revision: str = "main") -> str:
        """The commit sha ``revision`` points at now."""
        return str(self.api.dataset_info(self.repo_id, revision=revision).sha)

    def files(self, folder: str | None, *, revision: str, recursive: bool = False) -> list[str]:
        """Paths of the files under ``folder`` at ``revision``, sorted; none if it is absent."""
        try:
            entries = self.api.list_repo_tree(
                self.repo_id,
                path_in_repo=folder,
                recursive=recursive,
                repo_type="dataset",
                revision=revision,
            )
            return sorted(e.path for e in entries if isinstance(e, RepoFile))
        except EntryNotFoundError:
            return []

    def download(self, path: str, *, revision: str, local_dir: Path | None = None) -> Path:
        """One file, into the cache (or ``local_dir``); its local path."""
        return Path(
            hf_hub_download(
                self.repo_id,
                path,
                repo_type="dataset",
                revision=revision,
                endpoint=self.endpoint,
                token=self.token,
                cache_dir=None if local_dir is not None else self.cache_dir,
                local_dir=local_dir,
            )
        )

    def commit(
        self, ops: list[Any], message: str, *, revision: str, parent: str | None = None
    ) -> None:
        self.api.create_commit(
            self.repo_id,
            ops,
            commit_message=message,
            repo_type="dataset",
            revision=revision,
            parent_commit=parent,
        )
