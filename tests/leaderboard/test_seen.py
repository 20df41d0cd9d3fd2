"""The viewer's memory of heads, rotations and withdrawals: per store, in the user's cache,
never going back."""

from __future__ import annotations

from pathlib import Path

import pytest

from leaderboard.seen import SeenHeads, cache_root


def head(version: int, key: str = "a" * 16) -> dict[str, object]:
    return {
        "version": version,
        "made_at": "2026-12-03T00:00:00Z",
        "size": version,
        "root": "0" * 64,
        "key_id": key,
    }


def test_the_memory_lives_in_the_users_cache(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache_root() == tmp_path / "xdg" / "podium" / "heads"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert cache_root() == tmp_path / "home" / ".cache" / "podium" / "heads"


def test_it_keeps_the_newest_head_per_store_whatever_key_signed_it(tmp_path: Path) -> None:
    seen = SeenHeads(tmp_path)
    seen.remember("store-a", head(3), "now")
    seen.remember("store-a", head(2), "later")  # an older head never replaces a newer one
    seen.remember("store-a", head(1, "b" * 16), "now")
    seen.remember("store-b", head(9), "now")
    assert seen.get("store-a")["a" * 16]["version"] == 3
    assert seen.get("store-a")["b" * 16]["version"] == 1
    # a key trusted then may be trusted now only through a rotation a writer can delete:
    # the newest head counts whoever signed it
    assert seen.latest("store-a")["version"] == 3  # type: ignore[index]
    assert seen.latest("store-c") is None


def test_it_remembers_every_rotation_and_withdrawal_once(tmp_path: Path) -> None:
    seen = SeenHeads(tmp_path)
    rot = {"kind": "podium.key-rotation", "revoked": True, "signature": {"value": "r1"}}
    wd = ("withdrawals/tiny/abc.json", {"record_id": "abc", "signature": {"value": "w1"}})
    seen.remember("s", None, "now", rotations=[rot], withdrawals=[wd])
    seen.remember("s", head(2), "later", rotations=[rot], withdrawals=[wd])
    assert seen.rotations("s") == [rot] and seen.withdrawals("s") == [wd]
    assert seen.latest("s")["version"] == 2  # type: ignore[index]
    seen.remember("s", None, "again")  # nothing seen now forgets what was seen before
    assert seen.rotations("s") == [rot] and seen.latest("s") is not None


def test_a_broken_or_unwritable_memory_is_an_empty_one(tmp_path: Path) -> None:
    seen = SeenHeads(tmp_path)
    seen.remember("s", head(1), "now")
    next(tmp_path.glob("*.json")).write_text("{not json")
    assert seen.get("s") == {}
    blocked = tmp_path / "file"
    blocked.write_text("")
    SeenHeads(blocked / "sub").remember("s", head(1), "now")  # no error: the view goes on
