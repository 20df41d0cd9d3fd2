"""Leaderboard records: one signed row per verification report.

A record is a summary of a signed report that a viewer can check on its own: it
carries the numbers a table needs, the one-line reason a row is not VERIFIED, the
fingerprints needed to trace it back (bundle, image, environment, report), and an
Ed25519 signature by the organizer. Its ``record_id`` is derived from the content that
identifies the verification, so publishing the same verification twice stores one row.
"""

from __future__ import annotations

import re
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from podium.canonical import canonical_json, sha256_bytes
from podium.errors import SignatureError
from podium.signing import KeyPair, sign_document, verify_document
from schemas.validate import validate

RECORD_KIND = "podium.record"
RECORD_ID_LENGTH = 32
REASON_MAX = 200
FINDINGS_MAX = 20


def record_id_for(
    *,
    report_id: str,
    bundle_sha256: str,
    challenge: dict[str, str],
    verdict: str,
    metrics: dict[str, Any],
) -> str:
    """The content-derived id: same verification, same id (sha256, 32 hex digits)."""
    identity = {
        "report_id": report_id,
        "bundle_sha256": bundle_sha256,
        "challenge": {"id": challenge["id"], "version": challenge["version"]},
        "verdict": verdict,
        "metrics": metrics,
    }
    return sha256_bytes(canonical_json(identity))[:RECORD_ID_LENGTH]


def expected_record_id(record: dict[str, Any]) -> str:
    """Recompute a record's id from its own members (used to catch renamed rows)."""
    return record_id_for(
        report_id=record["report_id"],
        bundle_sha256=record["bundle_sha256"],
        challenge=record["challenge"],
        verdict=record["verdict"],
        metrics=record["metrics"],
    )


def _one_line(text: str) -> str:
    line = re.sub(r"\s+", " ", text).strip()
    return line if len(line) <= REASON_MAX else line[: REASON_MAX - 1] + "…"


def as_number(value: Any) -> float | None:
    """A JSON number as a float; None for anything else (``true`` and ``false`` included)."""
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def reason_for(report: dict[str, Any]) -> str:
    """One line for humans: empty for VERIFIED, else why the row is not VERIFIED.

    The failure (for FAILED) comes first, then the first error finding, then the first
    warning, then what the numbers say (PPL over the cap), then the mode/hardware.
    """
    verdict = report["verdict"]
    if verdict == "VERIFIED":
        return ""
    failure = report.get("failure")
    if isinstance(failure, dict) and failure.get("message"):
        return _one_line(f"{failure.get('stage', 'run')}: {failure['message']}")
    findings = report.get("findings") or []
    for severity in ("error", "warning"):
        for f in findings:
            if f.get("severity") == severity:
                return _one_line(f["message"])
    ppl = (report.get("metrics") or {}).get("ppl") or {}
    value, cap = as_number(ppl.get("value")), as_number(ppl.get("cap"))
    if value is not None and cap is not None and value > cap:
        return f"PPL {value:.3f} > cap {cap:.3f}"
    if report.get("mode") == "self-check":
        return "self-check: numbers reported by the participant's own run"
    if not (report.get("environment") or {}).get("official_hardware", False):
        return "not measured on the challenge's official hardware"
    return verdict.lower()


def _metrics(report: dict[str, Any]) -> dict[str, Any]:
    m = report.get("metrics") or {}
    tps = m.get("tps") or {}
    ppl = m.get("ppl") or {}
    ci = tps.get("ci95")
    reported = m.get("reported_tps")
    if reported is None:
        reported = (report.get("submission") or {}).get("reported_tps")
    return {
        "tps": as_number(tps.get("median")),
        "tps_ci95": [float(ci[0]), float(ci[1])] if isinstance(ci, list) and len(ci) == 2 else None,
        "tps_cv": as_number(tps.get("cv")),
        "reported_tps": as_number(reported),
        "ppl": as_number(ppl.get("value")),
        "ppl_cap": as_number(ppl.get("cap")),
        "speedup": as_number(m.get("speedup")),
        "baseline_tps": as_number(m.get("baseline_tps")),
    }


def _gpu_name(env: dict[str, Any]) -> str | None:
    """The GPU name from the report's free-form environment, where the verifier put it."""
    for key in ("gpu_name", "gpu"):
        value = env.get(key)
        if isinstance(value, str):
            return value
        if isinstance(value, dict) and isinstance(value.get("name"), str):
            return str(value["name"])
    gpus = env.get("gpus")
    if isinstance(gpus, list) and gpus and isinstance(gpus[0], dict):
        name = gpus[0].get("name")
        return name if isinstance(name, str) else None
    return None


def _hardware(env: dict[str, Any]) -> dict[str, Any]:
    name = _gpu_name(env)
    gpus = env.get("gpus")
    count = len(gpus) if isinstance(gpus, list) and gpus else (1 if name else 0)
    official = bool(env.get("official_hardware", False))
    summary = f"{count} x {name}" if name else "CPU"
    summary += " (official)" if official else " (unofficial)"
    return {"gpu_name": name, "official": official, "summary": summary}


def _findings(report: dict[str, Any]) -> list[dict[str, str]]:
    order = {"error": 0, "warning": 1, "info": 2}
    items = sorted(report.get("findings") or [], key=lambda f: order.get(f.get("severity"), 3))
    return [
        {"check_id": f["check_id"], "severity": f["severity"], "message": _one_line(f["message"])}
        for f in items[:FINDINGS_MAX]
    ]


def check_report(
    report: dict[str, Any], keypair: KeyPair, public_key: Ed25519PublicKey | None = None
) -> str:
    """Validate a report and its signature; return the key id that signed it.

    With no ``public_key`` the report must be signed by ``keypair`` itself: a record is
    only ever a re-signed summary of something the same organizer already signed.
    """
    validate("report", report, file=f"report {report.get('report_id', '?')}")
    if "signature" not in report:
        raise SignatureError("the report carries no signature", hint="publish signed reports only")
    return verify_document(report, public_key if public_key is not None else keypair.public_key)


def record_from_report(
    report_doc: dict[str, Any],
    keypair: KeyPair,
    *,
    public_key: Ed25519PublicKey | None = None,
    submitter: dict[str, str] | None = None,
) -> dict[str, Any]:
    """Build and sign the leaderboard record of a signed, schema-valid report.

    ``submitter``: the team and user a competition's door authenticated (signed into the
    row; the row's ``team`` stays the report's, which that door checked against it)."""
    check_report(report_doc, keypair, public_key)
    sub = report_doc["submission"]
    challenge = {"id": report_doc["challenge"]["id"], "version": report_doc["challenge"]["version"]}
    metrics = _metrics(report_doc)
    env = report_doc.get("environment") or {}
    image = report_doc.get("image") or {}
    record: dict[str, Any] = {
        "schema_version": 1,
        "kind": RECORD_KIND,
        "record_id": record_id_for(
            report_id=report_doc["report_id"],
            bundle_sha256=sub["bundle_sha256"],
            challenge=challenge,
            verdict=report_doc["verdict"],
            metrics=metrics,
        ),
        "report_id": report_doc["report_id"],
        "report_sha256": sha256_bytes(canonical_json(report_doc)),
        "challenge": challenge,
        "team": sub.get("team") or "(no team)",
        "entry": sub.get("entry") or "(no entry)",
        "verdict": report_doc["verdict"],
        "mode": report_doc["mode"],
        "reason": reason_for(report_doc),
        "metrics": metrics,
        "engine": {
            "kind": sub.get("engine_kind", "unknown"),
            "config": sub.get("engine_config") or {},
        },
        "hardware": _hardware(env),
        "fingerprint_sha256": env.get("fingerprint_sha256"),
        "image_id": image.get("id"),
        "bundle_sha256": sub["bundle_sha256"],
        "toolkit_version": report_doc["toolkit"]["version"],
        "verified_at": report_doc["finished"],
        "findings": _findings(report_doc),
    }
    if submitter is not None:
        record["submitter"] = {"team": submitter["team"], "user": submitter["user"]}
    validate("record", record, file=f"record of report {report_doc['report_id']}")
    return sign_document(record, keypair)
