"""The leaderboard's views with 10,000 records in a local store: time to first render.

The store is filled with 10,000 signed, schema-valid records (a fifth of them REJECTED,
the rest VERIFIED, 2,000 teams), written in the store's own layout; the organizer's
public key is handed to every view with ``--pubkey``, so every row is checked. Then:

- ``podium leaderboard show --store DIR --pubkey KEY`` (and ``--json``, and
  ``--no-verify``) as a fresh process, output to a pipe: wall time from exec to exit,
  which includes the interpreter's start; plus the same work in-process, split into
  reading the store, checking every row (``leaderboard.verify``), ranking and rendering;
- ``podium leaderboard serve`` and headless Chromium loading the page: the page's own
  ``data-render-ms`` (script start to table drawn, set by ``app.js``), the first
  ``/records.json`` answer (the store read), and Chromium's whole wall time, against
  its wall time for an empty store (the browser's own start).
"""

from __future__ import annotations

import contextlib
import io
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

from bench.common import REPO_ROOT, free_port
from leaderboard.records import record_id_for
from leaderboard.stores.base import record_bytes, record_path
from leaderboard.stores.local import LocalStore
from podium.signing import KeyPair, sign_document

CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--virtual-time-budget=30000",
    "--dump-dom",
]


def make_record(keypair: KeyPair, i: int) -> dict[str, Any]:
    """One signed record, as ``leaderboard.records.record_from_report`` shapes them."""
    verdict = "REJECTED" if i % 5 == 0 else "VERIFIED"
    tps = 100.0 + i
    metrics = {
        "tps": tps,
        "tps_ci95": [tps * 0.98, tps * 1.02],
        "tps_cv": 0.01,
        "reported_tps": tps * 1.01,
        "ppl": 2.2 + (i % 200) / 1000,
        "ppl_cap": 2.415,
        "speedup": tps / 44.0,
        "baseline_tps": 44.0,
    }
    challenge = {"id": "fast-gemma", "version": "2026.1"}
    report_id = f"{i:032x}"
    bundle = f"{i:064x}"
    record = {
        "schema_version": 1,
        "kind": "podium.record",
        "record_id": record_id_for(
            report_id=report_id,
            bundle_sha256=bundle,
            challenge=challenge,
            verdict=verdict,
            metrics=metrics,
        ),
        "report_id": report_id,
        "report_sha256": f"{i + 1:064x}",
        "challenge": challenge,
        "team": f"team-{i % 2000:04d}",
        "entry": f"entry-{i:05d}",
        "verdict": verdict,
        "mode": "official",
        "reason": "PPL 2.437 > cap 2.415" if verdict == "REJECTED" else "",
        "metrics": metrics,
        "engine": {"kind": "vllm", "config": {"QUANTIZATION": "fp8"}},
        "hardware": {"gpu_name": "NVIDIA A10G", "official": True, "summary": "1 x NVIDIA A10G"},
        "fingerprint_sha256": f"{i + 2:064x}",
        "image_id": f"sha256:{i + 3:064x}",
        "bundle_sha256": bundle,
        "toolkit_version": "0.1.0",
        "verified_at": "2026-11-20T10:00:00Z",
        "findings": [],
    }
    return sign_document(record, keypair)


def fill_store(root: Path, n: int) -> LocalStore:
    """A store of ``n`` records, written directly in its layout (publishing is not timed);
    the organizer's public key is written beside it, at ``<root>.pub``."""
    keypair = KeyPair.generate()
    root.with_name(root.name + ".pub").write_bytes(keypair.public_pem())
    store = LocalStore(root)
    store.publish_key(keypair.public_pem())
    if n:
        store.publish([make_record(keypair, 0)])  # one through the real path: schema, card
    for i in range(1, n):
        rec = make_record(keypair, i)
        path = root / record_path(rec)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(record_bytes(rec))
    return store


def _timed(cmd: list[str]) -> float:
    started = time.perf_counter()
    subprocess.run(cmd, cwd=REPO_ROOT, capture_output=True, check=True, timeout=300)
    return time.perf_counter() - started


def pubkey_of(store: Path) -> Path:
    return store.with_name(store.name + ".pub")


def time_show(store: Path, repeats: int) -> dict[str, Any]:
    base = [sys.executable, "-m", "podium.cli.app", "leaderboard", "show", "--store", str(store)]
    checked = [*base, "--pubkey", str(pubkey_of(store))]
    table = [_timed(checked) for _ in range(repeats)]
    as_json = [_timed([*checked, "--json"]) for _ in range(repeats)]
    unchecked_json = [_timed([*base, "--no-verify", "--json"]) for _ in range(repeats)]
    interpreter = [_timed([sys.executable, "-c", "import podium.cli.app"]) for _ in range(repeats)]
    return {
        "show_s": statistics.median(table),
        "show_json_s": statistics.median(as_json),
        "show_json_no_verify_s": statistics.median(unchecked_json),
        "import_cli_s": statistics.median(interpreter),
        "runs": {
            "show": table,
            "show_json": as_json,
            "show_json_no_verify": unchecked_json,
            "import_cli": interpreter,
        },
    }


def time_in_process(store: LocalStore) -> dict[str, float]:
    from rich.console import Console

    from leaderboard.trust import build_trust
    from leaderboard.verify import check_rows
    from leaderboard.views.board import boards_of
    from leaderboard.views.table import render

    trust = build_trust([pubkey_of(store.root)])
    t0 = time.perf_counter()
    raw = store.raw_records()
    t1 = time.perf_counter()
    check = check_rows(raw, trust)
    t2 = time.perf_counter()
    unchecked = check_rows(raw, None)
    t3 = time.perf_counter()
    boards = boards_of(check, best_per_team=True)
    t4 = time.perf_counter()
    render(boards, Console(file=io.StringIO(), width=160, force_terminal=False), check)
    t5 = time.perf_counter()
    assert check.ok and len(check.good) == len(unchecked.good) == len(raw)
    return {
        "read_store_s": t1 - t0,
        "check_s": t2 - t1,
        "parse_only_s": t3 - t2,
        "rank_s": t4 - t3,
        "render_s": t5 - t4,
    }


def time_page(store: Path, chromium: str, repeats: int) -> dict[str, Any]:
    port = free_port()
    cmd = [sys.executable, "-m", "podium.cli.app", "leaderboard", "serve"]
    proc = subprocess.Popen(
        [*cmd, "--store", str(store), "--port", str(port), "--pubkey", str(pubkey_of(store))],
        cwd=REPO_ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}/"
    try:
        deadline = time.monotonic() + 30
        while True:
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(url, timeout=2, trust_env=False).is_success:
                    break
            if time.monotonic() > deadline:
                raise RuntimeError("the leaderboard server did not start")
            time.sleep(0.2)
        started = time.perf_counter()
        body = httpx.get(url + "records.json", timeout=120, trust_env=False).content
        first_json_s = time.perf_counter() - started
        time.sleep(10.5)  # past the page's 10 s cache: the store is read again
        started = time.perf_counter()
        httpx.get(url + "records.json", timeout=120, trust_env=False)
        refresh_json_s = time.perf_counter() - started
        walls, render_ms = [], []
        with tempfile.TemporaryDirectory() as profile:
            for _ in range(repeats):
                started = time.perf_counter()
                out = subprocess.run(
                    [chromium, *CHROMIUM_FLAGS, f"--user-data-dir={profile}", url],
                    capture_output=True,
                    text=True,
                    timeout=300,
                )
                walls.append(time.perf_counter() - started)
                match = re.search(r'data-render-ms="(\d+)"', out.stdout)
                if 'data-ready="1"' not in out.stdout or match is None:
                    raise RuntimeError("the page did not finish rendering")
                render_ms.append(int(match.group(1)))
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    return {
        "records_json_bytes": len(body),
        "first_records_json_s": first_json_s,
        "refresh_records_json_s": refresh_json_s,
        "chromium_wall_s": statistics.median(walls),
        "render_ms": statistics.median(render_ms),
        "runs": {"chromium_wall_s": walls, "render_ms": render_ms},
    }


def run(*, quick: bool = False, n: int = 10_000) -> dict[str, Any]:
    repeats = 2 if quick else 3
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    out: dict[str, Any] = {"records": n}
    with tempfile.TemporaryDirectory() as tmp:
        started = time.perf_counter()
        store = fill_store(Path(tmp) / "store", n)
        out["fill_s"] = time.perf_counter() - started
        empty = fill_store(Path(tmp) / "empty", 0)
        out["terminal"] = time_show(store.root, repeats)
        out["in_process"] = time_in_process(store)
        print(f"  show: {out['terminal']['show_s']:.2f} s; {out['in_process']}", flush=True)
        if chromium is None:
            out["page"] = None
            out["page_missing"] = "headless Chromium is not installed (make browser)"
        else:
            out["page"] = time_page(store.root, chromium, repeats)
            out["page_empty"] = time_page(empty.root, chromium, repeats)
            print(
                f"  page: render {out['page']['render_ms']} ms, chromium "
                f"{out['page']['chromium_wall_s']:.2f} s (empty store "
                f"{out['page_empty']['chromium_wall_s']:.2f} s)",
                flush=True,
            )
    return out
