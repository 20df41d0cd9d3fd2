"""Export a store's records as CSV, Parquet or JSON.

CSV and Parquet are flat: one column per field a spreadsheet needs, plus the whole
signed record as JSON text (``record_json``) so an export can still be verified.
JSON is the list of signed records as they are stored. Parquet needs ``pyarrow``
(the ``data`` extra), imported only here.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

from podium.canonical import canonical_json
from podium.errors import UsageError
from podium.extras import require

FORMATS = ("csv", "parquet", "json")
#: the format each file extension names
SUFFIXES = {".csv": "csv", ".parquet": "parquet", ".pq": "parquet", ".json": "json"}

COLUMNS: list[tuple[str, str]] = [
    ("record_id", "string"),
    ("challenge", "string"),
    ("challenge_version", "string"),
    ("team", "string"),
    ("entry", "string"),
    ("verdict", "string"),
    ("mode", "string"),
    ("reason", "string"),
    ("tps", "double"),
    ("tps_ci95_low", "double"),
    ("tps_ci95_high", "double"),
    ("tps_cv", "double"),
    ("reported_tps", "double"),
    ("ppl", "double"),
    ("ppl_cap", "double"),
    ("speedup", "double"),
    ("baseline_tps", "double"),
    ("engine_kind", "string"),
    ("gpu_name", "string"),
    ("official_hardware", "bool"),
    ("fingerprint_sha256", "string"),
    ("image_id", "string"),
    ("bundle_sha256", "string"),
    ("report_id", "string"),
    ("toolkit_version", "string"),
    ("verified_at", "string"),
    ("key_id", "string"),
    ("record_json", "string"),
]


def format_of(out: Path, fmt: str | None) -> str:
    """The format ``out``'s extension names; a ``fmt`` (``--format``) that disagrees is
    refused, and one is needed only when the extension names none."""
    if fmt is not None and fmt not in FORMATS:
        raise UsageError(
            f"unknown export format {fmt!r} (--format)", hint=f"choose one of: {', '.join(FORMATS)}"
        )
    by_suffix = SUFFIXES.get(out.suffix.lower())
    if by_suffix is None:
        if fmt is not None:
            return fmt
        raise UsageError(
            f"cannot tell the format of {out} from its extension {out.suffix or '(none)'!r}",
            hint="name it .csv, .parquet or .json, or pass --format",
        )
    if fmt is not None and fmt != by_suffix:
        raise UsageError(
            f"--format {fmt} disagrees with {out}'s extension ({out.suffix}: {by_suffix})",
            hint=f"name the file .{fmt} or leave out --format",
        )
    return by_suffix


def flat_row(rec: dict[str, Any]) -> dict[str, Any]:
    m = rec.get("metrics") or {}
    ci = m.get("tps_ci95") or [None, None]
    hw = rec.get("hardware") or {}
    return {
        "record_id": rec.get("record_id"),
        "challenge": (rec.get("challenge") or {}).get("id"),
        "challenge_version": (rec.get("challenge") or {}).get("version"),
        "team": rec.get("team"),
        "entry": rec.get("entry"),
        "verdict": rec.get("verdict"),
        "mode": rec.get("mode"),
        "reason": rec.get("reason"),
        "tps": m.get("tps"),
        "tps_ci95_low": ci[0],
        "tps_ci95_high": ci[1],
        "tps_cv": m.get("tps_cv"),
        "reported_tps": m.get("reported_tps"),
        "ppl": m.get("ppl"),
        "ppl_cap": m.get("ppl_cap"),
        "speedup": m.get("speedup"),
        "baseline_tps": m.get("baseline_tps"),
        "engine_kind": (rec.get("engine") or {}).get("kind"),
        "gpu_name": hw.get("gpu_name"),
        "official_hardware": hw.get("official"),
        "fingerprint_sha256": rec.get("fingerprint_sha256"),
        "image_id": rec.get("image_id"),
        "bundle_sha256": rec.get("bundle_sha256"),
        "report_id": rec.get("report_id"),
        "toolkit_version": rec.get("toolkit_version"),
        "verified_at": rec.get("verified_at"),
        "key_id": (rec.get("signature") or {}).get("key_id"),
        "record_json": canonical_json(rec).decode("utf-8"),
    }


def export(records: list[dict[str, Any]], fmt: str, out: Path) -> int:
    """Write ``records`` to ``out`` in ``fmt``; return the number of rows."""
    if fmt not in FORMATS:
        raise UsageError(
            f"unknown export format {fmt!r}", hint=f"choose one of: {', '.join(FORMATS)}"
        )
    records = sorted(records, key=lambda r: str(r.get("record_id", "")))
    out.parent.mkdir(parents=True, exist_ok=True)
    if fmt == "json":
        out.write_text(json.dumps(records, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    elif fmt == "csv":
        with open(out, "w", newline="", encoding="utf-8") as fh:
            writer = csv.DictWriter(fh, fieldnames=[c for c, _ in COLUMNS])
            writer.writeheader()
            for rec in records:
                writer.writerow({k: "" if v is None else v for k, v in flat_row(rec).items()})
    else:
        _write_parquet(records, out)
    return len(records)


def _write_parquet(records: list[dict[str, Any]], out: Path) -> None:
    pa = require("pyarrow", extra="data")
    pq = require("pyarrow.parquet", extra="data")
    types = {"string": pa.string(), "double": pa.float64(), "bool": pa.bool_()}
    schema = pa.schema([(name, types[kind]) for name, kind in COLUMNS])
    rows = [flat_row(r) for r in records]
    table = pa.Table.from_pylist(rows, schema=schema)
    pq.write_table(table, out)
