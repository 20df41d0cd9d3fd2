"""The roster (a schema-checked TOML file) and the quota arithmetic, on their own."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from competition.app import open_door
from competition.quota import usage
from competition.roster import Quota, Roster, load_roster, quota_in_force
from podium.errors import SchemaError, UsageError
from schemas.challenge import QuotaRules, load_challenge

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
    quota = quota_in_force(roster.quota)
    assert (quota.per_user, quota.per_team, quota.window_s) == (3, 20, DAY)


def test_the_quota_is_the_specs_then_the_rosters_then_the_servers_member_by_member() -> None:
    spec = QuotaRules(per_user=2, per_team=8, window_hours=12)
    roster = QuotaRules(per_team=10)
    flags = QuotaRules(per_user=4)
    assert quota_in_force() == Quota(5, 20, DAY)  # the Fast Gemma Challenge's
    assert quota_in_force(spec) == Quota(2, 8, DAY / 2)
    assert quota_in_force(spec, roster, flags) == Quota(4, 10, DAY / 2)
    assert quota_in_force(None, roster, QuotaRules()) == Quota(5, 10, DAY)


def test_a_spec_sets_the_quota_of_its_competition(tmp_path: Path) -> None:
    doc = load_challenge("tiny").to_dict()
    doc["competition"] = {"quota": {"per_user": 2, "window_hours": 6}}
    path = tmp_path / "tiny-quota.json"
    path.write_text(json.dumps(doc))
    spec = load_challenge(str(path))
    assert spec.competition is not None
    assert quota_in_force(spec.competition.quota) == Quota(2, 20, DAY / 4)
    doc["competition"] = {"quota": {"per_user": 0}}
    path.write_text(json.dumps(doc))
    with pytest.raises(SchemaError):
        load_challenge(str(path))


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


def test_the_door_opens_with_the_specs_quota_under_the_rosters_and_its_flags(
    tmp_path: Path,
) -> None:
    doc = load_challenge("tiny").to_dict()
    doc["competition"] = {"quota": {"per_user": 2, "per_team": 6, "window_hours": 12}}
    spec = tmp_path / "tiny-quota.json"
    spec.write_text(json.dumps(doc))
    roster = tmp_path / "roster.toml"
    roster.write_text('[quota]\nper_team = 9\n[teams.acme]\nmembers = ["alice"]\n')
    door = open_door(
        db=f"sqlite:///{tmp_path / 'c.db'}",
        roster=roster,
        challenge=str(spec),
        admin_token="admin",
        worker_tokens=[],
        quota_user=3,
    )
    try:
        assert door.cfg.quota == Quota(per_user=3, per_team=9, window_s=DAY / 2)
    finally:
        door.db.close()
