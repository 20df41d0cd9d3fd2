"""The roster (a schema-checked TOML file) and the quota arithmetic, on their own."""

from __future__ import annotations

from pathlib import Path

import pytest

from competition.quota import usage
from competition.roster import Roster, load_roster
from podium.errors import SchemaError, UsageError

DAY = 24 * 3600.0


def test_a_roster_names_each_users_team_and_its_quota(tmp_path: Path) -> None:
    path = tmp_path / "roster.toml"
    path.write_text(
        'contact = "org@example.org"\n[quota]\nper_user = 3\n'
        '[teams.acme]\nmembers = ["Alice"]\n[teams.rival]\nmembers = ["bob", "carol"]\n'
    )
    roster = load_roster(path)
    assert roster.team_of("alice") == "acme" and roster.team_of("carol") == "rival"
    assert roster.team_of("mallory") is None
    assert (roster.quota.per_user, roster.quota.per_team, roster.quota.window_s) == (3, 20, DAY)


@pytest.mark.parametrize(
    ("doc", "says"),
    [
        ({"teams": {"a": {"members": ["x"]}, "b": {"members": ["X"]}}}, "both a and b"),
        ({"teams": {"a": {"members": []}}}, "$.teams.a.members"),
        ({"teams": {"a": {"members": ["x"]}}, "quota": {"per_user": 0}}, "$.quota.per_user"),
        ({"teams": {"../a": {"members": ["x"]}}}, "$.teams"),
        ({"team": {}}, "$"),
    ],
)
def test_a_broken_roster_is_refused_naming_where(doc: dict, says: str) -> None:
    with pytest.raises(SchemaError) as err:
        Roster.from_dict(doc, file="roster.toml")
    assert says in str(err.value) + " ".join(str(e) for e in err.value.errors)


def test_a_roster_that_is_not_toml_or_absent_says_so(tmp_path: Path) -> None:
    with pytest.raises(UsageError):
        load_roster(tmp_path / "none.toml")
    (tmp_path / "bad.toml").write_text("teams = [")
    with pytest.raises(SchemaError, match="not TOML"):
        load_roster(tmp_path / "bad.toml")


def test_the_next_slot_opens_when_the_oldest_charge_in_the_window_leaves_it() -> None:
    now = 10 * DAY
    charged = [now - DAY - 5, now - 3600, now - 60, now - 10]  # the first is outside
    used = usage(charged, limit=3, window_s=DAY, at=now)
    assert used.full and used.used == 3
    assert used.next_slot == now - 3600 + DAY and used.retry_after(now) == DAY - 3600
    assert not usage(charged, limit=4, window_s=DAY, at=now).full
    assert not usage(charged, limit=3, window_s=DAY, at=now - 3600 + DAY + 1).full
