"""The store's log: RFC 9162's Merkle tree hash, heads that only grow, and a publisher
that builds only on a head it trusts."""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

import pytest
from factories import make_record, plant_row, seeded_records

from leaderboard.log import (
    HeadSigner,
    extends,
    leaf_hash,
    merkle_root,
    parse_head,
    sign_head,
)
from leaderboard.publish import head_signer
from leaderboard.stores.base import HEAD_PATH, record_bytes, record_path
from leaderboard.stores.local import LocalStore
from podium.errors import StoreError
from podium.signing import KeyPair


def rfc9162_mth(hashes: list[bytes]) -> bytes:
    """MTH as RFC 9162 section 2.1.1 defines it: split at the largest power of two
    smaller than n, recursively."""
    n = len(hashes)
    if n == 0:
        return hashlib.sha256(b"").digest()
    if n == 1:
        return hashes[0]
    k = 1
    while k * 2 < n:
        k *= 2
    return hashlib.sha256(b"\x01" + rfc9162_mth(hashes[:k]) + rfc9162_mth(hashes[k:])).digest()


@pytest.mark.parametrize("n", [*range(18), 31, 32, 33, 100])
def test_merkle_root_is_rfc9162s_tree_hash(n: int) -> None:
    leaves = [leaf_hash({"path": f"records/t/{i:032x}.json", "sha256": "0" * 64}) for i in range(n)]
    assert merkle_root(leaves) == rfc9162_mth(leaves).hex()


def test_a_leaf_hash_is_the_rfc_leaf_prefix_over_canonical_json() -> None:
    leaf = {"sha256": "ab" * 32, "path": "records/t/x.json", "team": "é"}
    expected = b'\x00{"path":"records/t/x.json","sha256":"' + b"ab" * 32 + '","team":"é"}'.encode()
    assert leaf_hash(leaf) == hashlib.sha256(expected).digest()


def test_a_head_extends_exactly_the_heads_before_it(keypair: KeyPair) -> None:
    leaves = [{"path": f"records/t/{i}.json", "sha256": f"{i:064x}"} for i in range(5)]
    old = parse_head(sign_head(leaves[:3], 3, keypair))
    new = parse_head(sign_head(leaves, 4, keypair))
    assert extends(new, old.doc["size"], old.root)
    swapped = [leaves[1], leaves[0], *leaves[2:]]
    assert not extends(parse_head(sign_head(swapped, 4, keypair)), 3, old.root)
    assert not extends(parse_head(sign_head(leaves[:2], 4, keypair)), 3, old.root)


def test_a_head_whose_root_or_size_lies_is_refused(keypair: KeyPair) -> None:
    leaves = [{"path": "records/t/a.json", "sha256": "1" * 64}]
    doc = json.loads(sign_head(leaves, 1, keypair))
    with pytest.raises(StoreError, match="Merkle root"):
        parse_head(json.dumps({**doc, "root": "2" * 64}).encode())
    with pytest.raises(StoreError, match="lists 1"):
        parse_head(json.dumps({**doc, "size": 2}).encode())
    bad_leaf = {**doc, "leaves": [{"path": "../etc/passwd", "sha256": "1" * 64}]}
    with pytest.raises(StoreError, match=r"\$\.leaves\[0\]"):
        parse_head(json.dumps(bad_leaf).encode())


def test_each_publish_appends_and_versions_grow(tmp_path: Path, keypair: KeyPair) -> None:
    store = LocalStore(tmp_path / "s")
    first, second = seeded_records(keypair)[:2], seeded_records(keypair)[2:4]
    store.publish(first, head_signer(keypair))
    h1 = parse_head((store.root / HEAD_PATH).read_bytes())
    store.publish(first, head_signer(keypair))  # nothing new: no new head
    assert parse_head((store.root / HEAD_PATH).read_bytes()).version == 1
    store.publish(second, head_signer(keypair))
    h2 = parse_head((store.root / HEAD_PATH).read_bytes())
    assert (h1.version, h2.version) == (1, 2) and extends(h2, 2, h1.root)
    assert [leaf["path"] for leaf in h2.leaves] == [record_path(r) for r in first + second]
    assert h2.leaves[0]["team"] == first[0]["team"]


def test_a_publisher_never_builds_on_a_head_it_does_not_trust(
    tmp_path: Path, keypair: KeyPair
) -> None:
    store = LocalStore(tmp_path / "s")
    store.publish(seeded_records(keypair)[:1], head_signer(keypair))
    stranger = KeyPair.generate()
    with pytest.raises(StoreError, match="does not trust"):
        store.publish([make_record(stranger, serial=5)], head_signer(stranger))
    head = parse_head((store.root / HEAD_PATH).read_bytes())
    forged = {**head.doc, "version": 9}  # altered after signing
    (store.root / HEAD_PATH).write_text(json.dumps(forged))
    with pytest.raises(StoreError, match="does not match its signature"):
        store.publish([make_record(keypair, serial=6)], head_signer(keypair))


def test_a_row_planted_before_a_publish_is_not_laundered_into_the_next_head(
    tmp_path: Path, keypair: KeyPair
) -> None:
    store = LocalStore(tmp_path / "s")
    store.publish(seeded_records(keypair)[:1], head_signer(keypair))
    planted = plant_row(store.root, make_record(keypair, team="sneaky", serial=7))
    store.publish([make_record(keypair, serial=8)], head_signer(keypair))
    head = parse_head((store.root / HEAD_PATH).read_bytes())
    assert planted not in {leaf["path"] for leaf in head.leaves} and head.doc["size"] == 2


def test_the_first_head_of_an_old_store_lists_only_rows_a_trusted_key_signed(
    tmp_path: Path, keypair: KeyPair
) -> None:
    store = LocalStore(tmp_path / "s")
    genuine = plant_row(store.root, make_record(keypair, serial=1))
    forged = plant_row(store.root, make_record(KeyPair.generate(), team="forger", serial=2))
    store.resign_head(HeadSigner(keypair))
    head = parse_head((store.root / HEAD_PATH).read_bytes())
    assert [leaf["path"] for leaf in head.leaves] == [genuine]
    assert forged not in {leaf["path"] for leaf in head.leaves}


def test_the_same_path_with_other_bytes_is_refused(tmp_path: Path, keypair: KeyPair) -> None:
    store = LocalStore(tmp_path / "s")
    rec = make_record(keypair, serial=1)
    store.publish([rec], head_signer(keypair))
    with pytest.raises(StoreError, match="listed in the store's head with other content"):
        store.append({record_path(rec): record_bytes(rec) + b" "}, head_signer(keypair))


def test_the_docs_name_every_kind_a_view_reports() -> None:
    from leaderboard.setcheck import SET_KINDS
    from leaderboard.verify import BAD_KINDS

    doc = (Path(__file__).resolve().parents[2] / "docs" / "leaderboard.md").read_text()
    rows = [line for line in doc.splitlines() if line.startswith("| `")]
    named = {kind for line in rows for kind in re.findall(r"`([a-z-]+)`", line.split("|")[1])}
    assert set(BAD_KINDS) <= named and set(SET_KINDS) <= named, (
        set(BAD_KINDS) | set(SET_KINDS)
    ) - named
