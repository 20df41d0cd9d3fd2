"""The page as viewers use it, in headless Chromium driven over the DevTools protocol:
sorting by a column, following a row's links (its signed record, its bundle), opening a
row's permalink, at 1280 and at 800 px; the same set warning as the terminal when a row
is missing; and the tables a reader without JavaScript sees."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from cdp import Browser
from factories import checked, seeded_bundle
from test_browser import CHROMIUM, chromium, serving

from leaderboard.publish import publish_bundle
from leaderboard.stores.local import LocalStore
from podium.signing import KeyPair

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(CHROMIUM is None, reason="headless Chromium is not installed"),
]

RANKED_TEAMS = (
    "[...document.querySelectorAll('#ranked tbody tr td.team')].map(td => td.textContent)"
)


def wait_for_order(browser: Browser, teams: list[str]) -> None:
    """The ranked table lists ``teams`` in this order (waited for: a click re-renders)."""
    want = json.dumps(json.dumps(teams, separators=(",", ":")))
    browser.wait(f"JSON.stringify({RANKED_TEAMS}) === {want}")


@pytest.fixture
def served(
    seeded_store: LocalStore, key_files: tuple[Path, Path], keypair: KeyPair
) -> Iterator[tuple[str, LocalStore]]:
    """``podium leaderboard serve`` of the seeded store (with herons' bundle in it)."""
    with_bundle(seeded_store, "herons", keypair)
    with serving("--store", seeded_store.url, "--pubkey", str(key_files[1])) as url:
        yield url, seeded_store


def with_bundle(store: LocalStore, team: str, keypair: KeyPair) -> tuple[dict[str, Any], bytes]:
    """Publish the bundle of ``team``'s row into the store, a leaf of its signed head
    (idempotent); (the row, the bundle's bytes)."""
    rec = next(r for r in store.list_records() if r["team"] == team)
    data = seeded_bundle(rec)
    publish_bundle(store, keypair, data)
    return rec, data


@pytest.fixture
def browser(tmp_path: Path) -> Iterator[Browser]:
    assert CHROMIUM is not None
    b = Browser(CHROMIUM, tmp_path / "profile")
    try:
        yield b
    finally:
        b.close()


@pytest.mark.parametrize("width", [1280, 800])
def test_sort_follow_a_link_and_open_a_permalink(
    served: tuple[str, LocalStore], browser: Browser, keypair: Any, width: int
) -> None:
    url, store = served
    herons, bundle = with_bundle(store, "herons", keypair)  # as the fixture put it there
    browser.resize(width, 900)
    browser.open(url)
    browser.wait("document.body.dataset.ready === '1'")
    wait_for_order(browser, ["otters", "falcons", "herons"])

    # sort: a click on "team" sorts A to Z, a second Z to A; "#" goes back to the ranks
    browser.js("document.querySelector('#ranked th[data-sort=team]').click()")
    wait_for_order(browser, ["falcons", "herons", "otters"])
    assert browser.js("document.querySelector('#ranked th[data-sort=team]').ariaSort") == (
        "ascending"
    )
    browser.js("document.querySelector('#ranked th[data-sort=team]').click()")
    wait_for_order(browser, ["otters", "herons", "falcons"])
    browser.js("document.querySelector('#ranked th[data-sort=ppl]').click()")
    wait_for_order(browser, ["herons", "falcons", "otters"])  # 2.20, 2.31, 2.40
    browser.js("document.querySelector('#ranked th[data-sort=rank]').click()")
    wait_for_order(browser, ["otters", "falcons", "herons"])

    if width == 1280:  # every column, the date last, fits the table's box: nothing cut
        cut = browser.js(
            """(() => {
              const box = document.getElementById('left').getBoundingClientRect();
              return [...document.querySelectorAll('#ranked td.date, #ranked th.date')]
                .filter(c => { const r = c.getBoundingClientRect();
                  return r.right > box.right + 0.5 || r.right > innerWidth ||
                         c.scrollWidth > c.clientWidth; })
                .map(c => c.textContent);
            })()"""
        )
        assert cut == []
        first = browser.js("document.querySelector('#ranked td.date').textContent")
        assert first == "2026-11-22"  # otters' date, whole

    # the bundle link: the bytes the store holds
    got = browser.js(
        f"""fetch(document.querySelector('#ranked tr[data-record-id="{herons["record_id"]}"]'
              + ' a.bundle-link').href).then(r => r.text())"""
    )
    assert got == bundle.decode()
    assert browser.js("document.querySelectorAll('#ranked a.bundle-link').length") == 1

    # follow a row's link to its signed record: it verifies against the organizer's key
    browser.js(
        f"""document.querySelector('#ranked tr[data-record-id="{herons["record_id"]}"]'
              + ' a.record-link').click()"""
    )
    browser.wait(f"location.pathname.endsWith('/{herons['record_id']}.json')")
    record = json.loads(browser.wait("document.body && document.body.innerText"))
    assert len(checked([record], keypair).good) == 1
    assert record["team"] == "herons"

    # a permalink opens its row: the row marked and in view, its details shown
    otters = next(r for r in store.list_records() if r["team"] == "otters")
    browser.open(f"{url}#record={otters['record_id']}")
    browser.wait(f"document.body.dataset.permalink === '{otters['record_id']}'")
    marked = browser.js(
        """(() => { const tr = document.querySelector('tr.permalinked');
             const r = tr.getBoundingClientRect();
             return [tr.dataset.recordId, r.top >= 0 && r.bottom <= innerHeight]; })()"""
    )
    assert marked == [otters["record_id"], True]
    details = browser.js("document.getElementById('details').innerText")
    assert "otters / awq" in details and otters["record_id"] in details
    # and the permalink each row carries is that link
    href = browser.js(
        f"""document.querySelector('tr[data-record-id="{otters["record_id"]}"] a.permalink').href"""
    )
    assert href == f"{url}#record={otters['record_id']}"
    # a REJECTED row's permalink opens it in the rows not ranked
    lynx = next(r for r in store.list_records() if r["team"] == "lynx")
    browser.js(f"location.hash = '#record={lynx['record_id']}'")
    browser.wait(f"document.body.dataset.permalink === '{lynx['record_id']}'")
    assert browser.js("document.querySelector('tr.permalinked').className").startswith("other-row")


def test_page_warns_when_a_row_is_missing(
    seeded_store: LocalStore, key_files: tuple[Path, Path], tmp_path: Path
) -> None:
    herons = next(
        p
        for p in (seeded_store.root / "records" / "tiny").glob("*.json")
        if json.loads(p.read_bytes())["team"] == "herons"
    )
    herons.unlink()  # a writer with access to the store deletes a rival's row
    with serving("--store", seeded_store.url, "--pubkey", str(key_files[1])) as url:
        dom = chromium("--dump-dom", url, cwd=tmp_path)
        assert 'data-ready="1"' in dom
        assert '<section id="set-warnings" role="alert">' in dom  # shown, not hidden
        (item,) = re.findall(r'<li class="set-problem" data-kind="missing"[^>]*>([^<]*)</li>', dom)
        assert "row herons/bf16" in item and "listed in the signed head v1" in item
        assert "THE SET DOES NOT CHECK" in dom
        # the same warning as the terminal's
        doc = json.loads(urllib_get(url + "records.json"))
        assert [p["message"] for p in doc["set_problems"]] == [item.replace("&amp;", "&")]


def urllib_get(url: str) -> bytes:
    import urllib.request

    with urllib.request.urlopen(url, timeout=30) as resp:
        data: bytes = resp.read()
        return data


def test_without_javascript_the_page_shows_plain_tables(
    served: tuple[str, LocalStore], browser: Browser
) -> None:
    url, _ = served
    browser.call("Emulation.setScriptExecutionDisabled", session=True, value=True)
    browser.call("Page.navigate", session=True, url=url)
    deadline = time.monotonic() + 30
    out = ""
    while "fallback-ranked" not in out and time.monotonic() < deadline:
        time.sleep(0.2)
        try:
            out = browser.html()
        except AssertionError:  # the document was replaced between the two calls
            continue
    assert 'data-ready="1"' not in out  # no script ran
    ranked = re.search(r'<table class="fallback-ranked">(.*?)</table>', out, flags=re.S)
    assert ranked is not None
    teams = re.findall(r"<tr><td>=?\d+</td><td>([^<]*)</td>", ranked.group(1))
    assert teams == ["otters", "falcons", "herons"]
    assert ranked.group(1).count(">signed record</a>") == 3
    assert "PPL 2.437 &gt; cap 2.415" in out  # the rows not ranked, with their reason
    # v2: publishing herons' bundle, a leaf of the head, signed the head again
    assert "the whole set checks against signed head v2" in out


def test_a_withdrawal_shows_on_the_page(
    seeded_store: LocalStore, keypair: Any, key_files: tuple[Path, Path], tmp_path: Path
) -> None:
    from leaderboard.publish import withdraw

    otters = next(r for r in seeded_store.list_records() if r["team"] == "otters")
    withdraw(seeded_store, keypair, otters["record_id"], "answers cached between runs")
    with serving("--store", seeded_store.url, "--pubkey", str(key_files[1])) as url:
        dom = chromium("--dump-dom", url, cwd=tmp_path)
        assert 'data-ready="1"' in dom
        ranked = re.findall(
            r'<tr[^>]*class="ranked-row[^"]*"[^>]*>.*?<td class="team">([^<]*)', dom
        )
        assert ranked == ["falcons", "herons"]  # no longer ranked
        section = re.search(r'<section id="withdrawn-section">(.*?)</section>', dom, flags=re.S)
        assert section is not None  # shown, not hidden
        row = re.search(r'<tr class="withdrawn-row"[^>]*>(.*?)</tr>', section.group(1), flags=re.S)
        assert row is not None and "otters" in row.group(1)
        assert "answers cached between runs" in row.group(1)
