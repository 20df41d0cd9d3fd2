"""Build, validate, sign and write the verification report.

The report binds the result to the bundle digest, the image id, the held-out set's
digests (never its content), the hardware fingerprint and the toolkit version. It is
schema-validated before signing; an invalid report is a bug and is never signed.
"""

from __future__ import annotations

import json
import math
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from podium import __version__
from podium.canonical import canonical_json, sha256_bytes
from podium.fsutil import atomic_write
from podium.signing import KeyPair, sign_document
from schemas.findings import Finding
from schemas.report import CheckResult, Failure, Stage
from schemas.validate import validate


def now_iso() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def json_safe(value: Any) -> Any:
    """NaN and infinities (an undefined PPL, a ratio over zero) become null: JSON has none."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_safe(v) for v in value]
    return value


def build_report(
    *,
    verdict: str,
    mode: str,
    runner: str,
    challenge: dict[str, Any],
    submission: dict[str, Any],
    image: dict[str, Any] | None,
    heldout: dict[str, Any] | None,
    environment: dict[str, Any],
    metrics: dict[str, Any],
    checks: list[CheckResult],
    findings: list[Finding],
    stages: list[Stage],
    failure: Failure | None,
    git_sha: str | None,
    started: str,
    finished: str,
    runtime: dict[str, Any] | None = None,
) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "schema_version": 1,
        "kind": "podium.report",
        "report_id": "",
        "verdict": verdict,
        "mode": mode,
        "runner": runner,
        "challenge": challenge,
        "submission": submission,
        "image": image,
        "heldout": heldout,
        "environment": environment,
        "metrics": metrics,
        "checks": [c.to_dict() for c in checks],
        "findings": [f.to_dict() for f in findings],
        "stages": [s.to_dict() for s in stages],
        "failure": failure.to_dict() if failure else None,
        "toolkit": {"name": "podium", "version": __version__, "git_sha": git_sha},
        "started": started,
        "finished": finished,
    }
    if runtime is not None:  # what a vLLM server reported about its own run
        doc["runtime"] = runtime
    doc = json_safe(doc)
    # The id is derived from everything but itself: the same run always has the same id.
    doc["report_id"] = sha256_bytes(
        canonical_json({k: v for k, v in doc.items() if k != "report_id"})
    )[:32]
    validate("report", doc, file="<report>")
    return doc


def sign_report(doc: dict[str, Any], keypair: KeyPair) -> dict[str, Any]:
    signed = sign_document(doc, keypair)
    validate("report", signed, file="<report>")
    return signed


def write_report(doc: dict[str, Any], path: Path) -> Path:
    """Write atomically so a crash never leaves half a report."""
    atomic_write(path, (json.dumps(doc, indent=2, sort_keys=True) + "\n").encode("utf-8"))
    return path
