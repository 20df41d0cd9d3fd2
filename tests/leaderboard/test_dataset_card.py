"""The store is a Hub dataset the ecosystem can read: ``datasets.load_dataset`` on the
local folder gives one row per record for each challenge, and never the keys."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from factories import make_record

from leaderboard.publish import head_signer
from leaderboard.stores.card import FEATURES
from leaderboard.stores.local import LocalStore
from podium.signing import KeyPair


def test_load_dataset_reads_one_row_per_record_for_each_challenge(
    seeded_store: LocalStore, keypair: KeyPair, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    datasets = pytest.importorskip("datasets")
    monkeypatch.setenv("HF_DATASETS_CACHE", str(tmp_path / "cache"))
    seeded_store.publish(
        [make_record(keypair, challenge="fast-gemma", team="gemma-team")], head_signer(keypair)
    )
    card = (seeded_store.root / "README.md").read_text()
    assert 'config_name: "fast-gemma"' in card and 'config_name: "tiny"' in card
    tiny = datasets.load_dataset(str(seeded_store.root), "tiny", split="train")
    records = [r for r in seeded_store.list_records() if r["challenge"]["id"] == "tiny"]
    assert tiny.num_rows == len(records) == 7
    assert sorted(tiny["record_id"]) == sorted(r["record_id"] for r in records)
    by_id = {r["record_id"]: r for r in records}
    for row in tiny:
        assert row["engine"]["config"] == by_id[row["record_id"]]["engine"]["config"]
        assert row["findings"] == by_id[row["record_id"]]["findings"]
        assert row["metrics"]["tps"] == by_id[row["record_id"]]["metrics"]["tps"]
    other = datasets.load_dataset(str(seeded_store.root), "fast-gemma", split="train")
    assert other["team"] == ["gemma-team"]


def test_the_card_features_are_the_record_schema() -> None:
    schema = json.loads(
        (Path(__file__).resolve().parents[2] / "schemas/json/record.schema.json").read_text()
    )
    assert [f["name"] for f in FEATURES] == list(schema["properties"])
