"""Signed verification reports and leaderboard records, made up for tests.

``make_report`` builds a dict that follows ``schemas/json/report.schema.json`` (it is
validated before it is signed), so anything that reads reports can be fed with it.
The numbers are chosen by the caller; the verdict decides which findings, failure
and environment go with them.
"""

from __future__ import annotations

import hashlib
from typing import Any

from leaderboard.publish import head_signer
from leaderboard.records import record_from_report
from leaderboard.stores.base import RawRecord, record_bytes, record_path
from leaderboard.trust import Trust, TrustedKey
from leaderboard.verify import StoreCheck, check_rows
from podium.signing import KeyPair, sign_document
from schemas.validate import validate

CHALLENGE = "tiny"
CAP = 2.415


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def make_report(
    keypair: KeyPair,
    *,
    team: str = "team-a",
    entry: str = "entry-1",
    verdict: str = "VERIFIED",
    tps: float | None = 1234.5,
    ppl: float | None = 2.30,
    cap: float = CAP,
    challenge: str = CHALLENGE,
    version: str = "1.0.0",
    mode: str = "official",
    serial: int = 0,
    finished: str = "2026-11-20T10:00:00Z",
    findings: list[dict[str, Any]] | None = None,
    failure: dict[str, Any] | None = None,
    official_hardware: bool = True,
    bundle: str | None = None,
    ci: tuple[float, float] | None = None,
) -> dict[str, Any]:
    """A signed report; ``serial`` makes otherwise equal reports distinct; ``bundle``
    names the bundle (the same for several verifications of one bundle); ``ci`` is the
    TPS interval (default: the median +- 2 %)."""
    ident = f"{challenge}/{team}/{entry}/{verdict}/{tps}/{ppl}/{serial}"
    if findings is None:
        findings = []
        if verdict == "REJECTED" and ppl is not None and ppl > cap:
            findings = [
                {
                    "check_id": "ppl.cap",
                    "severity": "error",
                    "message": f"PPL {ppl:.3f} > cap {cap:.3f}",
                    "hint": "lower the quantization or keep more layers in bf16",
                }
            ]
        elif verdict == "REJECTED":
            findings = [
                {
                    "check_id": "tps.token-count",
                    "severity": "error",
                    "message": "the engine returned fewer tokens than asked",
                }
            ]
    if verdict == "FAILED" and failure is None:
        failure = {
            "stage": "rebuild",
            "message": "docker build failed: no such file requirements.txt",
        }
    metrics: dict[str, Any] = {
        "ppl": None
        if ppl is None
        else {"value": ppl, "cap": cap, "nll_sum": 1000.0, "tokens": 1200, "records": 16},
        "tps": None
        if tps is None
        else {
            "median": tps,
            "mean": tps * 1.001,
            "cv": 0.012,
            "ci95": list(ci) if ci else [round(tps * 0.98, 3), round(tps * 1.02, 3)],
            "trials": [{"tps": tps}],
            "tokens_per_trial": 4096,
            "concurrency": 16,
            "max_tokens": 256,
        },
        "reported_tps": None if tps is None else round(tps * 1.05, 3),
        "baseline_tps": 400.0,
        "speedup": None if tps is None else round(tps / 400.0, 4),
    }
    doc: dict[str, Any] = {
        "schema_version": 1,
        "kind": "podium.report",
        "report_id": _sha("report:" + ident)[:32],
        "verdict": verdict,
        "mode": mode,
        "runner": "docker",
        "challenge": {
            "id": challenge,
            "version": version,
            "spec_sha256": _sha("spec:" + challenge),
        },
        "submission": {
            "team": team,
            "entry": entry,
            "bundle_sha256": _sha("bundle:" + (bundle or ident)),
            "manifest_sha256": _sha("manifest:" + ident),
            "engine_kind": "vllm",
            "engine_config": {"quantization": "fp8", "max_num_seqs": 64},
            "reported_tps": None if tps is None else round(tps * 1.05, 3),
        },
        "image": {
            "id": "sha256:" + _sha("image:" + ident),
            "context_sha256": _sha("ctx:" + ident),
            "base_image": "podium-base:bookworm",
            "size_bytes": 123456789,
            "build_seconds": 42.0,
        },
        "heldout": {
            "prompts_sha256": _sha("prompts"),
            "ppl_sha256": _sha("ppl"),
            "revision": None,
            "public": False,
        },
        "environment": {
            "fingerprint_sha256": _sha("env:" + ident),
            "official_hardware": official_hardware,
            "gpus": [{"name": "NVIDIA A10G", "memory_mib": 23028}],
            "driver": "550.54",
        },
        "metrics": metrics,
        "checks": [
            {"id": "ppl.cap", "status": "fail" if findings else "pass", "summary": "PPL under cap"}
        ],
        "findings": findings,
        "stages": [
            {"name": "intake", "status": "ok", "seconds": 0.5},
            {"name": "rebuild", "status": "failed" if failure else "ok", "seconds": 40.0},
        ],
        "toolkit": {"name": "podium", "version": "0.1.0", "git_sha": None},
        "started": "2026-11-20T09:50:00Z",
        "finished": finished,
        "failure": failure,
    }
    validate("report", doc, file="factory report")
    return sign_document(doc, keypair)


def make_record(keypair: KeyPair, **kwargs: Any) -> dict[str, Any]:
    """The signed record of ``make_report(keypair, **kwargs)``."""
    return record_from_report(make_report(keypair, **kwargs), keypair)


def trusting(keypair: KeyPair) -> Trust:
    """A viewer's trust in ``keypair``'s public key alone, for any challenge."""
    return Trust((TrustedKey(keypair.key_id, keypair.public_key, "test"),))


def checked(records: list[dict[str, Any]], keypair: KeyPair) -> StoreCheck:
    """``records`` checked against ``keypair``'s public key, as the views check them."""
    raw = [RawRecord(record_path(r), record_bytes(r)) for r in records]
    return check_rows(raw, trusting(keypair))


def seeded_records(keypair: KeyPair) -> list[dict[str, Any]]:
    """A small leaderboard: five teams, best-per-team ranking differs from all-attempts."""
    specs: list[dict[str, Any]] = [
        dict(team="falcons", entry="fp8-a", tps=2100.0, ppl=2.31),
        dict(team="falcons", entry="fp8-b", tps=1900.0, ppl=2.29),
        dict(team="otters", entry="awq", tps=2500.0, ppl=2.40),
        dict(team="herons", entry="bf16", tps=900.0, ppl=2.20),
        dict(team="lynx", entry="int4", tps=3100.0, ppl=2.437, verdict="REJECTED"),
        dict(team="moths", entry="broken", tps=None, ppl=None, verdict="FAILED"),
        dict(
            team="wrens",
            entry="laptop",
            tps=1500.0,
            ppl=2.33,
            verdict="UNOFFICIAL",
            official_hardware=False,
        ),
    ]
    return [
        make_record(keypair, serial=i, finished=f"2026-11-2{i}T10:00:00Z", **s)
        for i, s in enumerate(specs)
    ]


def seeded_bundle(record: dict[str, Any]) -> bytes:
    """Bytes whose sha256 is the ``bundle_sha256`` of a ``seeded_records`` row (the text
    ``make_report`` hashes into it), to stand for that row's bundle in a store."""
    m = record["metrics"]
    serial = int(record["verified_at"][9])  # seeded rows finish on 2026-11-2<serial>
    text = (
        f"bundle:{record['challenge']['id']}/{record['team']}/{record['entry']}/"
        f"{record['verdict']}/{m['tps']}/{m['ppl']}/{serial}"
    )
    assert _sha(text) == record["bundle_sha256"], "not a seeded row"
    return text.encode()


def publish_worker(args: tuple[str, bytes, int, int, int]) -> tuple[int, int]:
    """One publisher process: ``count`` records of its own, ``batch`` per publish call,
    then its first batch again (which must all be already present).

    Runs in a spawned process, so everything it needs comes in ``args``:
    (store URL, organizer private key PEM, worker number, count, batch).
    """
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    from leaderboard.stores import open_store

    url, pem, worker, count, batch = args
    key = serialization.load_pem_private_key(pem, password=None)
    assert isinstance(key, Ed25519PrivateKey)
    keypair = KeyPair(key)
    store = open_store(url)
    records = [
        make_record(
            keypair,
            team=f"team-{worker}",
            entry=f"e{i}",
            tps=100.0 + worker * 1000 + i,
            serial=worker * 10_000 + i,
        )
        for i in range(count)
    ]
    added = 0
    for start in range(0, count, batch):
        added += len(store.publish(records[start : start + batch], head_signer(keypair)).added)
    again = store.publish(records[:batch], head_signer(keypair))
    assert not again.added, f"worker {worker} re-added {again.added}"
    return added, len(again.already_present)


def forge_store(root: Any, genuine: KeyPair, forger: KeyPair) -> dict[str, str]:
    """Forge two rows in the seeded store at ``root``, as a hostile writer would.

    - herons' genuine row gets a TPS of 9,999 (its signature no longer matches);
    - a report of team "forger" at 99,999 TPS, signed by ``forger``, published into the
      store with the forger's key, so that key sits under ``keys/`` beside the genuine one.

    Returns the two forged rows' paths, by what was done.
    """
    import json
    from pathlib import Path

    from leaderboard.stores.local import LocalStore

    store = LocalStore(Path(root))
    altered = ""
    for path in sorted((store.root / "records" / "tiny").glob("*.json")):
        doc = json.loads(path.read_bytes())
        if doc["team"] == "herons":
            doc["metrics"]["tps"] = 9999.0
            path.write_text(json.dumps(doc, sort_keys=True) + "\n")
            altered = path.relative_to(store.root).as_posix()
    assert altered, "the seeded store has no herons row"
    rec = make_record(forger, team="forger", entry="fast", tps=99999.0, serial=99)
    store.publish_key(forger.public_pem())  # the forger's key beside the genuine one
    path = plant_row(store.root, rec)
    return {"altered": altered, "forged_key": path}


def plant_row(root: Any, record: dict[str, Any]) -> str:
    """Write ``record`` into the local store at ``root`` as a writer without the
    organizer's key would: the file in its place, no head listing it. Its path."""
    from pathlib import Path

    from leaderboard.stores.base import record_bytes, record_path

    rel = record_path(record)
    target = Path(root) / rel
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(record_bytes(record))
    return rel
