"""The web page in headless Chromium: ranked rows in order, a scatter, 10,000 rows."""

from __future__ import annotations

import copy
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from factories import checked

from leaderboard.stores.base import record_path
from leaderboard.stores.local import LocalStore
from leaderboard.verify import GoodRow, StoreCheck
from leaderboard.views.web import build_site

REPO_ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
    "--hide-scrollbars",
    "--virtual-time-budget=10000",
]

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(
        CHROMIUM is None and os.environ.get("PODIUM_REQUIRE_BROWSER") != "1",
        reason="headless Chromium is not installed (PODIUM_REQUIRE_BROWSER unset)",
    ),
]


SERVE = [sys.executable, "-m", "podium.cli.app", "leaderboard", "serve"]


def unchecked(records: list[dict[str, Any]]) -> StoreCheck:
    """``records`` as ``--no-verify`` passes them (nothing checked)."""
    return StoreCheck(False, None, [GoodRow(record_path(r), r, None) for r in records])


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_for(url: str, proc: subprocess.Popen[bytes], timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(
                f"server exited: {proc.stderr.read().decode() if proc.stderr else ''}"
            )
        try:
            with urllib.request.urlopen(url, timeout=2) as resp:
                if resp.status == 200:
                    return
        except OSError:
            time.sleep(0.2)
    raise AssertionError(f"{url} did not answer within {timeout}s")


@contextmanager
def serving(*args: str) -> Iterator[str]:
    """``podium leaderboard serve ARGS`` on a free port: its URL once it answers."""
    port = free_port()
    proc = subprocess.Popen(
        [*SERVE, *args, "--port", str(port)], stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    try:
        url = f"http://127.0.0.1:{port}/"
        wait_for(url + "records.json", proc)
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def chromium(*args: str, cwd: Path) -> str:
    """Headless Chromium with a profile of its own under ``cwd``: two test files on two
    workers each start one, and two browsers on one profile (root's default) crash."""
    assert CHROMIUM is not None
    profile = Path(tempfile.mkdtemp(prefix="chromium-profile-", dir=cwd))
    out = subprocess.run(
        [CHROMIUM, *FLAGS, f"--user-data-dir={profile}", *args],
        capture_output=True,
        timeout=120,
        cwd=cwd,
        check=True,
    )
    return out.stdout.decode("utf-8", "replace")


def ranked_teams(dom: str) -> list[str]:
    rows = re.findall(r'<tr[^>]*class="ranked-row[^"]*"[^>]*>(.*?)</tr>', dom, flags=re.S)
    return [re.search(r'<td class="team">([^<]*)</td>', row).group(1) for row in rows]  # type: ignore[union-attr]


def test_served_page_shows_ranked_rows_in_order_and_a_scatter(
    seeded_store: LocalStore, tmp_path: Path, key_files: tuple[Path, Path]
) -> None:
    with serving("--store", seeded_store.url, "--pubkey", str(key_files[1])) as url:
        dom = chromium("--dump-dom", url, cwd=tmp_path)
        assert 'data-ready="1"' in dom
        assert ranked_teams(dom) == ["otters", "falcons", "herons"]
        others = re.findall(r'<td class="reason">([^<]*)</td>', dom)
        assert "PPL 2.437 &gt; cap 2.415" in others
        assert 'id="cap-line"' in dom and 'id="pareto"' in dom
        assert 'data-verdict="VERIFIED" data-count="4"' in dom
        shot = REPO_ROOT / "test-artifacts" / "leaderboard.png"
        shot.parent.mkdir(exist_ok=True)
        shot.unlink(missing_ok=True)
        chromium(f"--screenshot={shot}", "--window-size=1280,900", url, cwd=tmp_path)
        assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 20_000


@pytest.mark.serial
@pytest.mark.slow
def test_ten_thousand_records_render_paginated(seeded_store: LocalStore, tmp_path: Path) -> None:
    base = next(r for r in seeded_store.list_records() if r["verdict"] == "VERIFIED")
    records = []
    for i in range(10_000):
        rec = copy.deepcopy(base)
        rec["record_id"] = f"{i:032x}"
        rec["team"] = f"team-{i:05d}"
        rec["bundle_sha256"] = f"{i:064x}"
        rec["metrics"]["tps"] = 100.0 + i
        rec["metrics"]["ppl"] = 2.2 + (i % 200) / 1000
        rec["verdict"] = "VERIFIED" if i % 5 else "REJECTED"
        records.append(rec)
    site = tmp_path / "site"
    build_site(unchecked(records), site, store="synthetic")
    port = free_port()
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "http.server",
            str(port),
            "--bind",
            "127.0.0.1",
            "--directory",
            str(site),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        url = f"http://127.0.0.1:{port}/"
        wait_for(url + "records.json", proc)
        started = time.monotonic()
        dom = chromium("--dump-dom", url, cwd=tmp_path)
        elapsed = time.monotonic() - started
        assert 'data-ready="1"' in dom
        teams = ranked_teams(dom)
        assert len(teams) == 50 and teams[0] == "team-09999" and teams[1] == "team-09998"
        assert "page 1 of 160 (8000 rows)" in dom
        assert "10000 records" in dom
        assert 'data-checked="0"' in dom and "NOTHING WAS CHECKED" in dom
        assert elapsed < 60
    finally:
        proc.terminate()
        proc.wait(timeout=10)


HOSTILE = (
    "[/]oops [bold red]x\x1b[31mred <img src=x onerror=alert(1)>"
    "<img src=x onerror=\"document.body.setAttribute('data-pwned','1')\">"
)


def test_hostile_names_and_reasons_stay_text_in_the_browser(keypair: Any, tmp_path: Path) -> None:
    from factories import make_record

    records = [
        make_record(keypair, team=HOSTILE, entry=HOSTILE, serial=1),
        make_record(
            keypair,
            team="t2",
            entry="e2",
            verdict="REJECTED",
            serial=2,
            findings=[{"check_id": "x.y", "severity": "error", "message": HOSTILE}],
        ),
    ]
    site = tmp_path / "site"
    build_site(checked(records, keypair), site, store="hostile")
    port = free_port()
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "http.server",
            str(port),
            "--bind",
            "127.0.0.1",
            "--directory",
            str(site),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        url = f"http://127.0.0.1:{port}/"
        wait_for(url + "records.json", proc)
        dom = chromium("--dump-dom", url, cwd=tmp_path)
        assert 'data-ready="1"' in dom
        assert 'data-pwned="' not in dom  # the handler never ran
        assert "<img" not in dom  # no element was made from the text
        assert "&lt;img src=x onerror=alert(1)&gt;" in dom
        assert "[/]oops [bold red]x" in dom
        assert ranked_teams(dom)[0].startswith("[/]oops")
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def test_page_ranks_only_proven_rows_and_lists_the_forged_apart(
    seeded_store: LocalStore, keypair: Any, key_files: tuple[Path, Path], tmp_path: Path
) -> None:
    """The forged store of test_forged_rows.py, seen through the served page."""
    from factories import forge_store

    from podium.signing import KeyPair

    forged = forge_store(seeded_store.root, keypair, KeyPair.generate())
    port = free_port()
    proc = subprocess.Popen(
        [*SERVE, "--store", seeded_store.url, "--port", str(port), "--pubkey", str(key_files[1])],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        url = f"http://127.0.0.1:{port}/"
        wait_for(url + "records.json", proc)
        dom = chromium("--dump-dom", url, cwd=tmp_path)
        assert 'data-ready="1"' in dom and 'data-checked="1"' in dom
        assert ranked_teams(dom) == ["otters", "falcons"]
        keys = re.findall(r'<td class="key" data-key="([^"]*)"', dom)
        assert keys == [keypair.key_id, keypair.key_id]
        assert re.findall(r'<tr [^>]*data-tied="1"', dom)  # tiny's noise ties the two
        rows = r'class="unverified-row" data-kind="([^"]+)" data-path="([^"]+)"'
        bad = dict(re.findall(rows, dom))
        assert bad == {"bad-signature": forged["altered"], "unknown-key": forged["forged_key"]}
        # and the set check names both: the row changed, the row no head lists
        warned = r'class="set-problem" data-kind="([^"]+)" data-path="([^"]+)"'
        found = dict(re.findall(warned, dom))
        assert found == {"altered": forged["altered"], "unlisted": forged["forged_key"]}
        assert "9,999" not in dom and "99,999" not in dom
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def test_page_without_verification_says_nothing_was_checked(
    seeded_store: LocalStore, tmp_path: Path
) -> None:
    port = free_port()
    proc = subprocess.Popen(
        [*SERVE, "--store", seeded_store.url, "--port", str(port), "--no-verify"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        url = f"http://127.0.0.1:{port}/"
        wait_for(url + "records.json", proc)
        dom = chromium("--dump-dom", url, cwd=tmp_path)
        assert 'data-checked="0"' in dom and "NOTHING WAS CHECKED" in dom
        assert set(re.findall(r'<td class="key"[^>]*>([^<]*)</td>', dom)) == {"unchecked"}
    finally:
        proc.terminate()
        proc.wait(timeout=10)
