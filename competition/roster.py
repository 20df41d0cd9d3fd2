"""The organizer's roster: teams of Hugging Face usernames, a contact, the quotas.

Written by the organizer in TOML, validated against ``schemas/json/roster.schema.json``
before anything reads it. A username may belong to one team only (a user in two teams
could spend both teams' quotas and submit under either name).
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from podium.errors import SchemaError, UsageError
from schemas.challenge import QuotaRules
from schemas.validate import validate

DEFAULT_PER_USER = 5
DEFAULT_PER_TEAM = 20
DEFAULT_WINDOW_H = 24.0


@dataclass(frozen=True)
class Quota:
    """Submissions allowed to one user and to one team over a rolling window."""

    per_user: int = DEFAULT_PER_USER
    per_team: int = DEFAULT_PER_TEAM
    window_s: float = DEFAULT_WINDOW_H * 3600

    def to_dict(self) -> dict[str, Any]:
        return {"per_user": self.per_user, "per_team": self.per_team, "window_s": self.window_s}


def quota_in_force(*layers: QuotaRules | None) -> Quota:
    """podium's defaults (the Fast Gemma Challenge's), then each layer's members that are
    set, a later layer over an earlier: the spec's, the roster's, the server's flags."""
    quota = Quota()
    for rules in layers:
        if rules is None:
            continue
        if rules.per_user is not None:
            quota = replace(quota, per_user=rules.per_user)
        if rules.per_team is not None:
            quota = replace(quota, per_team=rules.per_team)
        if rules.window_hours is not None:
            quota = replace(quota, window_s=rules.window_hours * 3600)
    return quota


@dataclass(frozen=True)
class Roster:
    teams: dict[str, tuple[str, ...]]
    contact: str | None = None
    #: the members of the quota the roster sets (``quota_in_force`` layers them)
    quota: QuotaRules = field(default_factory=QuotaRules)

    @classmethod
    def from_dict(cls, doc: dict[str, Any], *, file: str = "<roster>") -> Roster:
        validate("roster", doc, file=file)
        teams = {name: tuple(t["members"]) for name, t in doc["teams"].items()}
        seen: dict[str, str] = {}
        for team, members in teams.items():
            for user in members:
                key = user.lower()
                if key in seen:
                    raise SchemaError(
                        f"{user} is a member of both {seen[key]} and {team}",
                        file=file,
                        json_path=f"$.teams.{team}.members",
                    )
                seen[key] = team
        quota = QuotaRules.from_dict(doc.get("quota") or {})
        return cls(teams, doc.get("contact"), quota)

    def team_of(self, user: str) -> str | None:
        """The team ``user`` belongs to (usernames compare case-insensitively), or None."""
        key = user.lower()
        for team, members in self.teams.items():
            if any(m.lower() == key for m in members):
                return team
        return None


def load_roster(path: Path | str) -> Roster:
    path = Path(path)
    try:
        doc = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise UsageError(
            f"no roster at {path}",
            hint='write one: [teams.acme] members = ["alice"] (docs/scale.md)',
        ) from None
    except tomllib.TOMLDecodeError as exc:
        raise SchemaError(f"the roster is not TOML: {exc}", file=str(path)) from None
    return Roster.from_dict(doc, file=str(path))
