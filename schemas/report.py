"""The verification report and its parts.

A report is built by the verifier, validated against ``report.schema.json`` and then
signed (``podium.signing``). ``Verdict`` values are stable strings.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

from schemas.contract import Contract
from schemas.findings import Finding
from schemas.validate import validate

VERIFIED = "VERIFIED"
UNOFFICIAL = "UNOFFICIAL"
REJECTED = "REJECTED"
FAILED = "FAILED"
PENDING = "PENDING"
VERDICTS = (VERIFIED, UNOFFICIAL, REJECTED, FAILED)


@dataclass(frozen=True)
class CheckResult(Contract):
    id: str
    status: str  # pass | fail | skip | error
    summary: str
    details: dict[str, Any] | None = None

    @property
    def passed(self) -> bool:
        return self.status == "pass"


@dataclass(frozen=True)
class Stage(Contract):
    name: str
    status: str  # ok | failed | skipped
    #: None in a public report for the stages the engine could time (see the schema)
    seconds: float | None = None
    note: str | None = None


@dataclass(frozen=True)
class Failure(Contract):
    """Why a run could not be evaluated: podium's words only, never the engine's (its
    log and error bodies go to the organizer's log, ``Report.organizer_log``)."""

    stage: str
    message: str


@dataclass(frozen=True)
class Report(Contract):
    _keep_none: ClassVar[frozenset[str]] = frozenset({"failure", "image", "heldout"})

    schema_version: int
    kind: str
    report_id: str
    verdict: str
    mode: str
    challenge: dict[str, Any]
    submission: dict[str, Any]
    environment: dict[str, Any]
    metrics: dict[str, Any]
    checks: list[CheckResult]
    findings: list[Finding]
    stages: list[Stage]
    toolkit: dict[str, Any]
    started: str
    finished: str
    runner: str | None = None
    image: dict[str, Any] | None = None
    heldout: dict[str, Any] | None = None
    failure: Failure | None = None
    organizer_log: str | None = None
    organizer_evidence: str | None = None
    signature: dict[str, Any] | None = field(default=None)

    @classmethod
    def parse(cls, doc: dict[str, Any], *, file: str | None = None) -> Report:
        validate("report", doc, file=file)
        return cls.from_dict(doc)

    @property
    def label(self) -> str:
        """What a human sees: self-checks are SELF-REPORTED whatever they measured."""
        if self.mode == "self-check":
            return "SELF-REPORTED" if self.verdict in (VERIFIED, UNOFFICIAL) else self.verdict
        return self.verdict
