"""The leaderboard's views with 10,000 records in a local store: time to first render.

The store is filled with 10,000 signed, schema-valid records (a fifth of them REJECTED,
the rest VERIFIED, 2,000 teams), written in the store's own layout with a signed head
listing them all (as 10,000 publishes would leave it); the organizer's public key is
handed to every view with ``--pubkey``, so every row and the whole set are checked. Then:

- ``podium leaderboard show --store DIR --pubkey KEY`` (and ``--json``, and
  ``--no-verify``) as a fresh process, output to a pipe: wall time from exec to exit,
  which includes the interpreter's start; plus the same work in-process, split into
  reading the store, checking the whole set (``leaderboard.checked``: the head's one
  signature, every file's sha256 against it), ranking and rendering; and, beside it, the
  check of every row's own signature (``leaderboard.verify.check_rows``, what every view
  did before heads);
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
from leaderboard.log import make_leaf, parse_head, sign_head
from leaderboard.publish import head_signer
from leaderboard.records import record_id_for
from leaderboard.stores.base import HEAD_PATH, record_bytes, record_path
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
    """A store of ``n`` records, written directly in its layout with a head that lists them
    all (publishing is not timed); the organizer's public key is written beside it, at
    ``<root>.pub``."""
    keypair = KeyPair.generate()
    root.with_name(root.name + ".pub").write_bytes(keypair.public_pem())
    store = LocalStore(root)
    store.publish_key(keypair.public_pem())
    if n:
        # one through the real path: schema, card, head v1
        store.publish([make_record(keypair, 0)], head_signer(keypair))
        leaves = parse_head((root / HEAD_PATH).read_bytes()).leaves
        for i in range(1, n):
            rec = make_record(keypair, i)
            data = record_bytes(rec)
            path = root / record_path(rec)
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)
            leaves.append(make_leaf(record_path(rec), data))
        (root / HEAD_PATH).write_bytes(sign_head(leaves, 2, keypair))
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


def set_check(snap: Any, trust: Any, identity: str, memory: str) -> None:
    """The set check alone: the head's signature, memory and freshness, every file's
    sha256 against its leaf (what ``check_s`` adds to parsing the rows)."""
    from leaderboard.seen import SeenHeads
    from leaderboard.setcheck import check_head, compare_set

    state = check_head(
        snap.head,
        trust,
        seen=SeenHeads(Path(memory)),
        identity=identity,
        max_age_days=7.0,
        has_documents=True,
    )
    problems, listed, unlisted = compare_set(state, snap.records)
    assert state.sound and not problems and not unlisted and len(listed) == len(snap.records)


def time_in_process(store: LocalStore, repeats: int = 3) -> dict[str, float]:
    """The checked view's parts in this process, each the median of ``repeats``."""
    from rich.console import Console

    from leaderboard.checked import check_snapshot
    from leaderboard.seen import SeenHeads
    from leaderboard.trust import build_trust
    from leaderboard.verify import RowChecker, check_rows
    from leaderboard.views.board import boards_of
    from leaderboard.views.table import render

    trust = build_trust([pubkey_of(store.root)])
    parts: dict[str, list[float]] = {}

    def timed(name: str, fn: Any) -> Any:
        started = time.perf_counter()
        out = fn()
        parts.setdefault(name, []).append(time.perf_counter() - started)
        return out

    with tempfile.TemporaryDirectory() as memory:
        for _ in range(repeats):
            snap = timed("read_store_s", store.snapshot)
            check = timed(
                "check_s",
                lambda snap=snap: check_snapshot(
                    snap, store.identity, RowChecker(trust), seen=SeenHeads(Path(memory))
                ),
            )
            timed("set_check_s", lambda snap=snap: set_check(snap, trust, store.identity, memory))
            each = timed(
                "check_each_signature_s", lambda snap=snap: check_rows(snap.records, trust)
            )
            unchecked = timed("parse_only_s", lambda snap=snap: check_rows(snap.records, None))
            boards = timed("rank_s", lambda check=check: boards_of(check, best_per_team=True))
            con = Console(file=io.StringIO(), width=160, force_terminal=False)
            timed("render_s", lambda b=boards, c=check, con=con: render(b, con, c))
            assert check.ok and check.head is not None, check.summary()
            assert len(check.good) == len(each.good) == len(unchecked.good) == len(snap.records)
    out = {name: statistics.median(values) for name, values in parts.items()}
    out["checked_view_s"] = out["read_store_s"] + out["check_s"]
    return out


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
        while True:  # a static file: the page itself is drawn from the checked store
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(url + "app.js", timeout=2, trust_env=False).is_success:
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
        out["in_process"] = time_in_process(store, repeats)
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
