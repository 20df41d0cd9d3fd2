"""The one builder of a verification report, its signature and its file.

A report is built from a ``RunRecord`` (everything one verification collected) and from
nothing else, wherever the run ended: rejected at intake, failed at any stage, or judged to
the end. It binds the result to the bundle digest, the image id, the held-out set's digests
(never its content), the hardware fingerprint, the seeds that placed and sampled the
checks, and the toolkit version. What the run measured is built once, in full, as the
organizer's evidence (every check's details and words, every trial, the engine's runtime
counters); the report is its public projection (``verifier.precision``): each engine-made
number on a grid, no per-record or per-trial list, so that a report carries at most
``precision.NUMBER_BITS`` bits of numbers the engine chose, checked before signing. What a
run did not reach is absent (``image`` and ``heldout`` null, ``environment`` null before
the fingerprint was taken), never a placeholder. Nothing the engine wrote or answered is in
it (a failure is described in podium's words); the engine's own output is in the
organizer's log beside it, and the full evidence in ``organizer/evidence.json``: the report
names both and signs neither. Every finding and check id in it must be declared in
``schemas.check_ids`` (or be a rule of the challenge), and the document is validated
against ``report.schema.json`` before it is signed; an invalid report is a bug and is never
signed.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from podium import __version__
from podium.canonical import canonical_json, sha256_bytes
from podium.fsutil import atomic_write
from podium.signing import KeyPair, sign_document
from podium.timestamps import now_iso
from podium.version import toolkit_git_sha
from schemas.challenge import ChallengeSpec
from schemas.check_ids import declared
from schemas.findings import Finding
from schemas.report import CheckResult, Failure, Stage
from schemas.validate import validate
from verifier import precision

if TYPE_CHECKING:
    from verifier.fingerprint import Fingerprint
    from verifier.intake import Intake
    from verifier.runners.base import ImageFacts


def json_safe(value: Any) -> Any:
    """NaN and infinities (an undefined PPL, a ratio over zero) become null: JSON has none."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_safe(v) for v in value]
    return value


@dataclass
class RunRecord:
    """Everything one verification collected, in the order the pipeline learns it."""

    spec: ChallengeSpec
    mode: str  # official | self-check
    runner: str | None  # None: the run ended at intake, before any runner was chosen
    started: str
    reported_tps: float | None = None
    intake: Intake | None = None
    fingerprint: Fingerprint | None = None
    official_hardware: bool = False
    image: ImageFacts | None = None
    heldout: dict[str, Any] | None = None
    metrics: dict[str, Any] = field(default_factory=dict)
    checks: list[CheckResult] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    stages: list[Stage] = field(default_factory=list)
    failure: Failure | None = None
    #: the fresh seeds that placed the probes and drew the reference samples (hex)
    seeds: dict[str, str] = field(default_factory=dict)
    #: what the engine reported about itself at run time (version, limits, counters)
    runtime: dict[str, Any] | None = None
    #: the organizer's log beside the report (a file name), once the run wrote one
    organizer_log: str | None = None
    #: the organizer's evidence beside the report (a path relative to its folder)
    organizer_evidence: str | None = None


class UndeclaredCheckId(AssertionError):
    """A report names a check id that ``schemas.check_ids`` does not declare: a bug."""


class TooPrecise(AssertionError):
    """A public report would carry more engine-chosen bits than stated, or a number the
    accountant knows no grid for: a bug, never signed."""


def _check_ids(run: RunRecord) -> None:
    rules = {rule.id for rule in run.spec.engine.forbidden}
    for check_id, severity in [(f.check_id, f.severity) for f in run.findings] + [
        (c.id, None) for c in run.checks
    ]:
        info = declared(check_id)
        if info is None and check_id not in rules:
            raise UndeclaredCheckId(f"{check_id!r} is not declared in schemas.check_ids")
        if info is not None and severity is not None and severity != info.severity:
            raise UndeclaredCheckId(
                f"{check_id!r} is declared {info.severity}, emitted as {severity}"
            )


def _submission(run: RunRecord) -> dict[str, Any]:
    assert run.intake is not None, "a report needs intake's result"
    out: dict[str, Any] = {
        "bundle_sha256": run.intake.bundle_sha256,
        "reported_tps": run.reported_tps,
    }
    manifest = run.intake.manifest
    if manifest is not None:
        out["team"] = manifest.team
        out["entry"] = manifest.entry
        out["manifest_sha256"] = run.intake.manifest_sha256
        out["engine_kind"] = manifest.engine.kind
        out["engine_config"] = manifest.engine.config
    return out


def _environment(run: RunRecord) -> dict[str, Any] | None:
    fp = run.fingerprint
    if fp is None:
        return None
    return {
        **fp.data,
        "fingerprint_sha256": fp.sha256,
        "official_hardware": run.official_hardware,
        "summary": fp.summary(),
    }


def _image(run: RunRecord) -> dict[str, Any] | None:
    if run.image is None or run.image.id is None:
        return None
    assert run.intake is not None
    return {**run.image.to_dict(), "context_sha256": run.intake.bundle_sha256}


def build_evidence(run: RunRecord, *, verdict: str, finished: str) -> dict[str, Any]:
    """Everything ``run`` measured, at full precision: the organizer's, never published."""
    _check_ids(run)
    spec = run.spec
    doc: dict[str, Any] = {
        "schema_version": 1,
        "kind": "podium.evidence",
        "report_id": "",
        "verdict": verdict,
        "mode": run.mode,
        "challenge": {"id": spec.id, "version": spec.version, "spec_sha256": spec.sha256},
        "submission": _submission(run),
        "image": _image(run),
        "heldout": run.heldout,
        "environment": _environment(run),
        "metrics": run.metrics,
        "checks": [c.to_dict() for c in run.checks],
        "findings": [f.to_dict() for f in run.findings],
        "stages": [s.to_dict() for s in run.stages],
        "failure": run.failure.to_dict() if run.failure else None,
        "seeds": dict(run.seeds),
        "toolkit": {"name": "podium", "version": __version__, "git_sha": toolkit_git_sha()},
        "started": run.started,
        "finished": finished,
    }
    if run.runner is not None:
        doc["runner"] = run.runner
    if run.runtime is not None:
        doc["runtime"] = run.runtime
    if run.organizer_log is not None:
        doc["organizer_log"] = run.organizer_log
    if run.organizer_evidence is not None:
        doc["organizer_evidence"] = run.organizer_evidence
    return json_safe(doc)


def public_of(evidence: dict[str, Any], spec: ChallengeSpec) -> dict[str, Any]:
    """The report of ``evidence``: its public projection, with its id, validated, and
    checked to carry no more engine-chosen bits than stated."""
    doc = precision.public_report(evidence, evaluation_s=spec.limits.evaluation_s)
    bits = precision.engine_bits(
        doc, evaluation_s=spec.limits.evaluation_s, rules=len(spec.engine.forbidden)
    )
    if bits.unaccounted or bits.number_bits > precision.NUMBER_BITS:
        raise TooPrecise(
            f"the public report would carry {bits.number_bits:.1f} bits of engine-chosen "
            f"numbers (at most {precision.NUMBER_BITS:g}); no grid for {bits.unaccounted}"
        )
    # The id is derived from everything but itself: the same run always has the same id.
    doc["report_id"] = sha256_bytes(
        canonical_json({k: v for k, v in doc.items() if k != "report_id"})
    )[:32]
    validate("report", doc, file="<report>")
    return doc


def build_documents(
    run: RunRecord, *, verdict: str, finished: str | None = None
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The report of ``run`` with ``verdict`` (validated, not yet signed) and the
    organizer's evidence behind it (which names the report's id)."""
    evidence = build_evidence(run, verdict=verdict, finished=finished or now_iso(microseconds=True))
    doc = public_of(evidence, run.spec)
    evidence["report_id"] = doc["report_id"]
    return doc, evidence


def build_report(run: RunRecord, *, verdict: str, finished: str | None = None) -> dict[str, Any]:
    """The report document of ``run`` with ``verdict``, validated (not yet signed)."""
    return build_documents(run, verdict=verdict, finished=finished)[0]


def sign_report(doc: dict[str, Any], keypair: KeyPair) -> dict[str, Any]:
    signed = sign_document(doc, keypair)
    validate("report", signed, file="<report>")
    return signed


def write_report(doc: dict[str, Any], path: Path) -> Path:
    """Write atomically so a crash never leaves half a report."""
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(path, (json.dumps(doc, indent=2, sort_keys=True) + "\n").encode("utf-8"))
    return path


def read_evidence(report_path: Path, report: dict[str, Any]) -> dict[str, Any] | None:
    """The organizer's evidence behind ``report`` (read from beside ``report_path``), or
    None where the report names none or it is not there; one of another report is None."""
    name = report.get("organizer_evidence")
    if not isinstance(name, str):
        return None
    path = report_path.parent / name
    if not path.is_file():
        return None
    evidence = json.loads(path.read_text(encoding="utf-8"))
    if not isinstance(evidence, dict) or evidence.get("report_id") != report.get("report_id"):
        return None
    return evidence


def full_document(report_path: Path) -> dict[str, Any]:
    """The fullest document there is for the report at ``report_path``: the organizer's
    evidence beside it where it has one (calibration and benchmarks read every value),
    else the report itself (one written before reports were projected)."""
    report = json.loads(report_path.read_text(encoding="utf-8"))
    return read_evidence(report_path, report) or report
