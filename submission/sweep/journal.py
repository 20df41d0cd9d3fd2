"""A sweep's results: one JSON Lines file, one line appended as each measurement ends.

Line kinds (``type``):

- ``sweep``: the first line; the directory, its challenge and its own ``[engine.config]``
  (the baseline). A file whose baseline is not the directory's config any more belongs
  to another sweep, and is refused.
- ``round``: ``--remeasure`` starts a new round; what is measured again is what the
  latest round lacks, and the answer reads each point's latest measurement.
- ``measurement``: one run of the organizers' pipeline on one point (``role`` is
  ``baseline``, ``point`` or ``heldout``), in the order they ran (``seq``).

Appending a whole line with one ``write`` and ``fsync`` means a killed sweep leaves every
finished measurement and at most one partial last line, which ``load`` skips.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from podium.errors import UsageError
from schemas.check_ids import TPS_UNSTABLE
from submission.sweep.space import Point, canonical

VERSION = 1
#: verdicts of a run that passed every check (a self-check is never VERIFIED)
PASSING = ("VERIFIED", "UNOFFICIAL")


@dataclass(frozen=True)
class Measurement:
    """What one pipeline run said about one point (numbers from its report)."""

    seq: int
    role: str  # baseline | point | heldout
    point: str  # Point.id
    changes: dict[str, Any]
    verdict: str
    ppl: float | None
    ppl_cap: float | None
    tps: float | None
    tps_ci95: list[float] | None = None
    tps_cv: float | None = None
    failing: list[str] = field(default_factory=list)
    reason: str = ""
    seconds: float = 0.0
    report: str | None = None
    round: int = 1
    ended: str = ""

    @property
    def key(self) -> str:
        return canonical(self.changes)

    @property
    def passed(self) -> bool:
        """Every check passed (the PPL cap is one of them). An unstable TPS is the machine's
        noise, not a broken rule: a self-check's verdict ignores it, so does this; it stays
        listed in ``failing`` (and the interval shows it)."""
        return self.verdict in PASSING and not [i for i in self.failing if i != TPS_UNSTABLE]

    def to_dict(self) -> dict[str, Any]:
        return {"type": "measurement", **asdict(self)}

    @classmethod
    def from_dict(cls, doc: dict[str, Any]) -> Measurement:
        names = set(cls.__dataclass_fields__)
        return cls(**{k: v for k, v in doc.items() if k in names})


def failing_ids(report: dict[str, Any]) -> list[str]:
    """The ids of the checks that failed or could not be evaluated, and of error findings."""
    ids = [c["id"] for c in report.get("checks") or [] if c.get("status") in ("fail", "error")]
    ids += [f["check_id"] for f in report.get("findings") or [] if f.get("severity") == "error"]
    return sorted(set(ids))


def reason_of(report: dict[str, Any]) -> str:
    failure = report.get("failure") or {}
    if failure.get("message"):
        return f"{failure.get('stage')}: {str(failure['message']).splitlines()[0][:160]}"
    for f in report.get("findings") or []:
        if f.get("severity") == "error":
            return str(f.get("message", ""))[:160]
    for c in report.get("checks") or []:
        if c.get("status") in ("fail", "error"):
            return f"{c['id']}: {str(c.get('summary', ''))[:140]}"
    return ""


def measurement_of(
    report: dict[str, Any],
    *,
    seq: int,
    role: str,
    point: Point,
    seconds: float,
    report_path: Path | None,
    round_: int,
    ended: str,
) -> Measurement:
    metrics = report.get("metrics") or {}
    ppl, tps = metrics.get("ppl") or {}, metrics.get("tps") or {}
    return Measurement(
        seq=seq,
        role=role,
        point=point.id,
        changes=dict(point.changes),
        verdict=str(report.get("verdict")),
        ppl=ppl.get("value"),
        ppl_cap=ppl.get("cap"),
        tps=tps.get("median"),
        tps_ci95=tps.get("ci95"),
        tps_cv=tps.get("cv"),
        failing=failing_ids(report),
        reason=reason_of(report),
        seconds=round(seconds, 2),
        report=str(report_path) if report_path else None,
        round=round_,
        ended=ended,
    )


@dataclass
class SweepFile:
    """The records of one sweep, as read back from its JSON Lines file."""

    path: Path
    header: dict[str, Any] | None = None
    measurements: list[Measurement] = field(default_factory=list)
    round: int = 1
    skipped_lines: int = 0

    @property
    def next_seq(self) -> int:
        return max((m.seq for m in self.measurements), default=0) + 1

    def in_round(self) -> list[Measurement]:
        return [m for m in self.measurements if m.round == self.round]

    def done(self, role: str, *, retry_failed: bool = False) -> set[str]:
        """Keys of the points this round has measured in ``role`` (with ``retry_failed``,
        not those whose latest run could not be evaluated: FAILED)."""
        latest = {m.key: m for m in self.in_round() if m.role == role}
        return {k for k, m in latest.items() if not (retry_failed and m.verdict == "FAILED")}

    def last_role(self) -> str | None:
        mine = self.in_round()
        return mine[-1].role if mine else None

    def spent_seconds(self) -> float:
        return sum(m.seconds for m in self.in_round())


def load(path: Path) -> SweepFile:
    """Read a sweep file; a missing one is an empty sweep. A torn last line is skipped."""
    sweep = SweepFile(path)
    if not path.exists():
        return sweep
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        try:
            doc = json.loads(line)
        except ValueError:
            sweep.skipped_lines += 1
            continue
        kind = doc.get("type")
        if kind == "sweep":
            sweep.header = doc
        elif kind == "round":
            sweep.round = int(doc["round"])
        elif kind == "measurement":
            sweep.measurements.append(Measurement.from_dict(doc))
    return sweep


def append(path: Path, doc: dict[str, Any]) -> None:
    """Append one line, durably; after a torn last line (a kill mid-write), on a new one."""
    path.parent.mkdir(parents=True, exist_ok=True)
    data = (json.dumps(doc, sort_keys=True, separators=(",", ":")) + "\n").encode("utf-8")
    fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        size = os.fstat(fd).st_size
        if size and os.pread(fd, 1, size - 1) != b"\n":
            data = b"\n" + data
        os.write(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)


def header(directory: Path, challenge: str, base_config: dict[str, Any], started: str) -> dict:
    return {
        "type": "sweep",
        "version": VERSION,
        "directory": str(directory),
        "challenge": challenge,
        "base_config": base_config,
        "started": started,
    }


def open_sweep(
    path: Path,
    *,
    directory: Path,
    challenge: str,
    base_config: dict[str, Any],
    started: str,
    remeasure: bool,
) -> SweepFile:
    """Load (or start) the sweep file of ``directory``; refuse one of another baseline."""
    sweep = load(path)
    if sweep.header is None:
        doc = header(directory, challenge, base_config, started)
        append(path, doc)
        sweep.header = doc
        return sweep
    if sweep.header.get("version") != VERSION:
        raise UsageError(f"{path} was written by another version of the sweep")
    if canonical(sweep.header.get("base_config")) != canonical(base_config) or (
        sweep.header.get("challenge") != challenge
    ):
        raise UsageError(
            f"{path} is the sweep of another baseline: {directory}'s [engine.config] or "
            "challenge changed since it started",
            hint="sweep into another folder with -o, or delete the file to start again",
            where=str(path),
        )
    if remeasure:
        sweep.round += 1
        append(path, {"type": "round", "round": sweep.round, "started": started})
    return sweep
