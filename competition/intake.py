"""Intake at the door: a submitted bundle read whole by the safe reader, in processes of
its own when the server has them.

Reading a bundle (gunzip, the tar stream, every member hashed, the manifest checked) is
CPU work in Python; in the server's own process it holds the interpreter while workers
wait for their claims. With ``processes`` > 0 it runs in a pool started with ``spawn``
(the server's threads are never forked), and only plain data crosses back.
"""

from __future__ import annotations

import multiprocessing
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from podium.canonical import sha256_file
from podium.errors import BundleError
from submission.safe_bundle import BundleLimits, check_bundle


@dataclass(frozen=True)
class Entered:
    """What the door needs of a bundle the safe reader accepted."""

    team: str
    entry: str
    reported_tps: float | None
    sha256: str
    size: int


def read_bundle(path: str, limits: BundleLimits) -> tuple[Entered | None, dict[str, Any] | None]:
    """(what the bundle enters, None), or (None, the refusal's fields)."""
    bundle = Path(path)
    try:
        manifest = check_bundle(bundle, limits=limits)
    except BundleError as exc:  # the server's scratch path means nothing to the sender
        where = None if exc.where == path else exc.where
        return None, {
            "message": exc.message.replace(path, "the bundle"),
            "finding_id": exc.finding_id,
            "hint": exc.hint,
            "where": where,
        }
    tps = manifest.reported.tps if manifest.reported is not None else None
    entered = Entered(
        team=manifest.team,
        entry=manifest.entry,
        reported_tps=float(tps) if tps is not None else None,
        sha256=sha256_file(bundle),
        size=bundle.stat().st_size,
    )
    return entered, None


class Intake:
    def __init__(self, processes: int = 0):
        self.pool = (
            ProcessPoolExecutor(processes, mp_context=multiprocessing.get_context("spawn"))
            if processes > 0
            else None
        )

    def read(self, bundle: Path, limits: BundleLimits) -> Entered:
        if self.pool is None:
            entered, refused = read_bundle(str(bundle), limits)
        else:
            entered, refused = self.pool.submit(read_bundle, str(bundle), limits).result()
        if refused is not None:
            raise BundleError(
                refused["message"],
                finding_id=refused["finding_id"],
                hint=refused["hint"],
                where=refused["where"],
            )
        assert entered is not None
        return entered

    def close(self) -> None:
        if self.pool is not None:
            self.pool.shutdown(cancel_futures=True)
