"""Ties and re-verifications: rank = 1 + the entries that beat it beyond the noise.

The arithmetic (docs/leaderboard.md, "Reading a tie"): an entry's interval runs from its
lowest 95 % bound x (1 - noise) to its highest x (1 + noise), the noise being the larger
of the challenge's stated one and the spread of the entry's own runs.
"""

from __future__ import annotations

import json
import zlib
from pathlib import Path

import pytest
from factories import make_record
from typer.testing import CliRunner

from leaderboard.publish import head_signer
from leaderboard.ranking import build_boards, make_entry, rank_entries
from leaderboard.stores.local import LocalStore
from podium.cli.app import app
from podium.signing import KeyPair

FAST_GEMMA_NOISE = {"fast-gemma": (0.03, "field notes")}


def single(keypair: KeyPair, tps: float, team: str, **kw: object) -> dict[str, object]:
    """A VERIFIED fast-gemma run measured in one pass: its interval is its median."""
    return make_record(
        keypair,
        team=team,
        tps=tps,
        challenge="fast-gemma",
        ci=(tps, tps),
        serial=zlib.crc32(team.encode()),
        **kw,
    )


def ranks(records: list[dict[str, object]]) -> list[tuple[str, int, bool]]:
    (board,) = build_boards(records, noise=FAST_GEMMA_NOISE)  # type: ignore[arg-type]
    return [(str(r.record["team"]), r.rank, r.tied) for r in board.ranked]


def test_the_real_challenges_two_leaders_share_first_place(keypair: KeyPair) -> None:
    """510.06 and 505.42 TPS, about 1 % apart, inside a 3 % run-to-run noise."""
    rows = [single(keypair, 505.42, "second"), single(keypair, 510.06, "first")]
    assert ranks(rows) == [("first", 1, True), ("second", 1, True)]


def test_entries_apart_beyond_the_noise_do_not_share_a_rank(keypair: KeyPair) -> None:
    # 510.06 x 0.97 = 494.76 > 475 x 1.03 = 489.25: beyond the noise
    rows = [single(keypair, 510.06, "first"), single(keypair, 475.0, "third")]
    assert ranks(rows) == [("first", 1, False), ("third", 2, False)]


def test_the_docs_example_a_third_entry_behind_both_leaders(keypair: KeyPair) -> None:
    rows = [single(keypair, t, f"t{t}") for t in (510.06, 505.42, 475.0)]
    assert [(r[1], r[2]) for r in ranks(rows)] == [(1, True), (1, True), (3, False)]


def test_the_boundary_is_the_widened_intervals_touching(keypair: KeyPair) -> None:
    """Apart by more than (1 + e) / (1 - e) = 1.0619 for e = 3 %: just over and just under."""
    ratio = 1.03 / 0.97
    over = [single(keypair, 100.0 * ratio * 1.001, "a"), single(keypair, 100.0, "b")]
    under = [single(keypair, 100.0 * ratio * 0.999, "a"), single(keypair, 100.0, "b")]
    assert [r[1] for r in ranks(over)] == [1, 2]
    assert [r[1] for r in ranks(under)] == [1, 1]


def test_a_rank_counts_only_the_entries_beyond_the_noise(keypair: KeyPair) -> None:
    """100 ties 96 and 96 ties 92, but 100 beats 92: ranks 1, 1, 2 (no chain of ties)."""
    rows = [single(keypair, t, f"t{t:.0f}") for t in (100.0, 96.0, 92.0)]
    assert ranks(rows) == [("t100", 1, True), ("t96", 1, True), ("t92", 2, False)]


def test_measured_intervals_count_too(keypair: KeyPair) -> None:
    """With no stated noise, wide intervals alone make a tie; narrow ones do not."""
    wide = [
        make_record(keypair, team="a", tps=110.0, ci=(90.0, 130.0), serial=1),
        make_record(keypair, team="b", tps=100.0, ci=(95.0, 105.0), serial=2),
    ]
    narrow = [
        make_record(keypair, team="a", tps=110.0, ci=(109.0, 111.0), serial=1),
        make_record(keypair, team="b", tps=100.0, ci=(99.0, 101.0), serial=2),
    ]
    for rows, expected in ((wide, [1, 1]), (narrow, [1, 2])):
        (board,) = build_boards(rows)
        assert [r.rank for r in board.ranked] == expected


def test_sort_order_stays_the_median(keypair: KeyPair) -> None:
    rows = [single(keypair, t, f"t{t:.0f}") for t in (92.0, 100.0, 96.0)]
    assert [r[0] for r in ranks(rows)] == ["t100", "t96", "t92"]


def test_two_verifications_of_one_bundle_are_one_entry_with_both_runs(keypair: KeyPair) -> None:
    runs = [
        single(keypair, 500.0, "lead", bundle="B", finished="2026-11-20T10:00:00Z"),
        single(keypair, 520.0, "lead", bundle="B", finished="2026-11-21T10:00:00Z"),
    ]
    (board,) = build_boards(runs, noise=FAST_GEMMA_NOISE, best_per_team=False)
    (only,) = board.ranked
    assert [r["metrics"]["tps"] for r in only.entry.runs] == [500.0, 520.0]
    assert only.entry.tps == 510.0 and only.entry.spread == pytest.approx(20 / 510)
    summary = board.to_dict()["ranked"][0]
    assert [r["tps"] for r in summary["runs"]] == [500.0, 520.0]


def test_a_spread_larger_than_the_stated_noise_widens_the_entry(keypair: KeyPair) -> None:
    """Runs 8 % apart: the entry's noise is 8 %, not the stated 3 %, and the third-place
    entry that the stated noise alone would leave apart now shares its rank."""
    lead = [
        single(keypair, 540.0, "lead", bundle="L", finished="2026-11-20T10:00:00Z"),
        single(keypair, 500.0, "lead", bundle="L", finished="2026-11-21T10:00:00Z"),
    ]
    entry = make_entry(lead, 0.03)
    assert entry.noise == pytest.approx(40 / 520)
    assert entry.low == pytest.approx(500.0 * (1 - 40 / 520))
    other = single(keypair, 470.0, "other")
    assert ranks([*lead, other]) == [("lead", 1, True), ("other", 1, True)]
    steady = [single(keypair, 520.0, "lead"), other]  # one run at the same median
    assert ranks(steady) == [("lead", 1, False), ("other", 2, False)]


def test_rank_entries_is_fine_with_nothing() -> None:
    assert rank_entries([]) == []


def test_show_joins_two_verifications_of_one_bundle(
    tmp_path: Path, keypair: KeyPair, key_files: tuple[Path, Path]
) -> None:
    store = LocalStore(tmp_path / "store")
    store.publish(
        [
            make_record(keypair, team="lead", tps=800.0, bundle="B", serial=1),
            make_record(
                keypair,
                team="lead",
                tps=820.0,
                bundle="B",
                serial=2,
                finished="2026-11-22T10:00:00Z",
            ),
            make_record(keypair, team="next", tps=300.0, serial=3),
        ],
        head_signer(keypair),
    )
    res = CliRunner().invoke(
        app,
        ["leaderboard", "show", "--store", store.url, "--pubkey", str(key_files[1]), "--json"],
        catch_exceptions=False,
    )
    (board,) = json.loads(res.stdout)["boards"]
    lead, nxt = board["ranked"]
    assert (lead["team"], lead["tps"], len(lead["runs"])) == ("lead", 810.0, 2)
    assert (nxt["team"], nxt["rank"]) == ("next", 2)
    assert board["noise"] == 0.1 and "benchmarks" in board["noise_source"]
