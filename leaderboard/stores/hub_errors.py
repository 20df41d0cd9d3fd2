"""What the Hub's answers mean for a store: retry, or stop with an error people can act on.

``huggingface_hub`` raises its own ``HfHubHTTPError`` family for HTTP answers and the
``httpx2`` transport errors for connections; both are translated here, in one place,
into ``HubError`` (the Hub refused or failed) or ``StoreError`` (the answer could not
be used). ``is_retryable`` names the answers worth another try: a moved branch (412),
a concurrent commit (409), the rate limit (429), server errors and dropped connections.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from typing import TypeVar

import httpx2
from huggingface_hub.errors import (
    EntryNotFoundError,
    HfHubHTTPError,
    OfflineModeIsEnabled,
    RepositoryNotFoundError,
    RevisionNotFoundError,
)

from podium.errors import HubError, PodiumError, StoreError

#: the exceptions ``translate_hub_error`` understands; anything else is a bug in podium
HUB_ERRORS: tuple[type[Exception], ...] = (
    HfHubHTTPError,
    OfflineModeIsEnabled,
    EntryNotFoundError,
    httpx2.HTTPError,
    OSError,
    ValueError,
)

RETRY_STATUS = frozenset({408, 409, 412, 429})


def status_of(exc: BaseException) -> int | None:
    if isinstance(exc, HfHubHTTPError) and exc.response is not None:
        return int(exc.response.status_code)
    if isinstance(exc, httpx2.HTTPStatusError):
        return int(exc.response.status_code)
    return None


def is_retryable(exc: BaseException) -> bool:
    """True for answers that another attempt, a little later, can fix."""
    if _caused_by_offline(exc):
        return False
    status = status_of(exc)
    if status is not None:
        return status in RETRY_STATUS or status >= 500
    return isinstance(exc, (httpx2.TransportError, httpx2.TimeoutException))


def retry_after(exc: BaseException) -> float | None:
    """The server's ``Retry-After`` in seconds, when it sent one as a number."""
    if isinstance(exc, HfHubHTTPError) and exc.response is not None:
        value = exc.response.headers.get("Retry-After")
        try:
            return float(value) if value is not None else None
        except ValueError:
            return None
    return None


T = TypeVar("T")


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
            if not is_retryable(exc) or attempt == max_attempts - 1:
                raise translate_hub_error(
                    exc, action=action, target=target, attempts=attempt + 1
                ) from exc
            time.sleep(backoff(attempt, exc, base_delay=base_delay, max_delay=max_delay))
    raise AssertionError("unreachable: the last attempt raises")


def _server_text(exc: BaseException) -> str:
    if isinstance(exc, HfHubHTTPError) and exc.server_message:
        return str(exc.server_message).strip().splitlines()[0]
    return str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__


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
    if isinstance(exc, (httpx2.TransportError, httpx2.TimeoutException)):
        return HubError(
            f"cannot {action}: cannot reach the Hub{tried}: {_server_text(exc)}",
            where=where,
            hint="check the network, HF_ENDPOINT or the ?endpoint= of the store URL",
        )
    if isinstance(exc, EntryNotFoundError):
        return StoreError(
            f"cannot {action}: a file is missing on the Hub: {_server_text(exc)}", where=where
        )
    if isinstance(exc, ValueError):
        return StoreError(
            f"cannot {action}: {_server_text(exc)}",
            where=where,
            hint="the Hub's answer could not be used; check the endpoint is a Hub",
        )
    return StoreError(f"cannot {action}: {type(exc).__name__}: {_server_text(exc)}", where=where)
