"""Times as podium writes them: ISO 8601 in UTC, ending in ``Z``.

Whole seconds (``2026-12-03T17:20:00Z``) for what a person reads or a record keeps;
microseconds (``2026-12-03T17:20:00.123456Z``) where a run's own start and end are kept
to the precision its stages are timed at.
"""

from __future__ import annotations

from datetime import UTC, datetime

_SECONDS = "%Y-%m-%dT%H:%M:%SZ"
_MICROSECONDS = "%Y-%m-%dT%H:%M:%S.%fZ"


def iso_utc(when: datetime, *, microseconds: bool = False) -> str:
    """``when`` in UTC (a naive ``when`` is read as local time, as ``astimezone`` reads it)."""
    return when.astimezone(UTC).strftime(_MICROSECONDS if microseconds else _SECONDS)


def now_iso(*, microseconds: bool = False) -> str:
    """This moment, as ``iso_utc`` writes it."""
    return iso_utc(datetime.now(UTC), microseconds=microseconds)
