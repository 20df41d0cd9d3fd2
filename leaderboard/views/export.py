"""Export a store's records as CSV, Parquet or JSON.

CSV and Parquet are flat: one column per field a spreadsheet needs, plus the whole
signed record as JSON text (``record_json``) so an export can still be verified.
JSON is the list of signed records as they are stored. Parquet needs ``pyarrow``
(the ``data`` extra), imported only here. A file is written whole or not at all, and only
when the caller proved the set (``podium leaderboard export`` writes nothing otherwise);
bundles only after their bytes matched the signed head.
"""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Any

from leaderboard.bundles import checked_bundle
from leaderboard.stores.base import BUNDLES_DIR, Store, bundle_path
from leaderboard.verify import StoreCheck
from podium.canonical import canonical_json
from podium.errors import StoreError, UsageError
from podium.extras import require
from podium.fsutil import atomic_write

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


def export_bundles(store: Store, check: StoreCheck) -> tuple[dict[str, bytes], list[str]]:
    """The bundles of ``check``'s rows that the store holds, each checked against the
    signed head (``leaderboard.bundles``): (sha256 -> bytes, why each other was refused)."""
    wanted = sorted({str(r.get("bundle_sha256")) for r in check.records} & set(check.bundles))
    held: dict[str, bytes] = {}
    refused: list[str] = []
    for sha in wanted:
        try:
            held[sha] = checked_bundle(store, check, sha)
        except StoreError as exc:
            refused.append(exc.message)
    return held, refused


def export(
    records: list[dict[str, Any]],
    fmt: str,
    out: Path,
    *,
    bundles: dict[str, bytes] | None = None,
    bundles_dir: Path | None = None,
) -> int:
    """Write ``records`` to ``out`` in ``fmt`` (whole or not at all: a temporary file moved
    into place), and ``bundles`` (sha256 -> checked bytes) into ``bundles_dir``; return
    the number of rows."""
    if fmt not in FORMATS:
        raise UsageError(
            f"unknown export format {fmt!r}", hint=f"choose one of: {', '.join(FORMATS)}"
        )
    records = sorted(records, key=lambda r: str(r.get("record_id", "")))
    if fmt == "json":
        data = (json.dumps(records, indent=1, ensure_ascii=False) + "\n").encode("utf-8")
    elif fmt == "csv":
        buf = io.StringIO(newline="")
        writer = csv.DictWriter(buf, fieldnames=[c for c, _ in COLUMNS])
        writer.writeheader()
        for rec in records:
            writer.writerow({k: "" if v is None else v for k, v in flat_row(rec).items()})
        data = buf.getvalue().encode("utf-8")
    else:
        data = _parquet_bytes(records)
    if bundles_dir is not None:
        for sha, blob in sorted((bundles or {}).items()):
            atomic_write(bundles_dir / bundle_path(sha).removeprefix(BUNDLES_DIR + "/"), blob)
    atomic_write(out, data)
    return len(records)


def _parquet_bytes(records: list[dict[str, Any]]) -> bytes:
    pa = require("pyarrow", extra="data")
    pq = require("pyarrow.parquet", extra="data")
    types = {"string": pa.string(), "double": pa.float64(), "bool": pa.bool_()}
    schema = pa.schema([(name, types[kind]) for name, kind in COLUMNS])
    rows = [flat_row(r) for r in records]
    table = pa.Table.from_pylist(rows, schema=schema)
    sink = pa.BufferOutputStream()
    pq.write_table(table, sink)
    return bytes(sink.getvalue().to_pybytes())
