"""The local folder store: Hub layout, idempotent, safe with concurrent publishers."""

from __future__ import annotations

import multiprocessing
from pathlib import Path

from factories import make_record, publish_worker, trusting

from leaderboard.checked import check_store
from leaderboard.log import parse_head
from leaderboard.publish import head_signer
from leaderboard.stores import open_store
from leaderboard.stores.local import LocalStore
from leaderboard.verify import check_rows
from podium.signing import KeyPair


def test_layout_matches_the_hub_dataset(seeded_store: LocalStore, keypair: KeyPair) -> None:
    root = seeded_store.root
    files = sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file())
    records = [f for f in files if f.startswith("records/")]
    assert len(records) == 7 and all(f.startswith("records/tiny/") for f in records)
    assert f"keys/{keypair.key_id}.pub" in files
    card = (root / "README.md").read_text()
    assert keypair.key_id in card and "podium leaderboard verify" in card
    assert not [f for f in files if f.endswith(".tmp")]
    for rec in seeded_store.list_records():
        assert (root / "records" / "tiny" / f"{rec['record_id']}.json").stat().st_mode & 0o044


def test_get_and_public_keys(seeded_store: LocalStore, keypair: KeyPair) -> None:
    rec = seeded_store.list_records()[0]
    assert seeded_store.get(rec["record_id"]) == rec
    assert seeded_store.get("0" * 32) is None
    assert list(seeded_store.public_keys()) == [keypair.key_id]


def test_open_store_default_and_env(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert isinstance(open_store(), LocalStore)
    assert Path(open_store().url) == Path("leaderboard-data")
    monkeypatch.setenv("PODIUM_STORE", str(tmp_path / "elsewhere"))
    assert open_store().url == str(tmp_path / "elsewhere")


def test_publishing_a_batch_with_duplicates_stores_each_once(
    keypair: KeyPair, tmp_path: Path
) -> None:
    recs = [make_record(keypair, serial=i) for i in range(3)]
    store = LocalStore(tmp_path / "s")
    result = store.publish(recs + recs, head_signer(keypair))
    assert sorted(result.added) == sorted(r["record_id"] for r in recs)
    assert len(store.list_records()) == 3


def test_eight_processes_publishing_fifty_records_each_lose_nothing(
    keypair: KeyPair, tmp_path: Path
) -> None:
    url = str(tmp_path / "shared")
    pem = keypair.private_pem()
    ctx = multiprocessing.get_context("spawn")
    with ctx.Pool(8) as pool:
        results = pool.map(publish_worker, [(url, pem, w, 50, 1) for w in range(8)])
    assert results == [(50, 1)] * 8
    store = LocalStore(url)
    raw = store.raw_records()
    assert len(raw) == 400
    each = check_rows(raw, trusting(keypair))  # every row's own signature and id
    assert each.ok and len(each.good) == 400
    check = check_store(store, trusting(keypair))  # the rows and the whole set, as views do
    assert check.ok and len(check.good) == 400
    head = parse_head((store.root / "log" / "head.json").read_bytes())
    assert head.version == 400  # one head per publish call that added rows (1 row each)
    assert sorted(leaf["path"] for leaf in head.leaves) == sorted(item.path for item in raw)


def test_a_read_finds_every_file_rglob_finds_in_the_same_order(
    seeded_store: LocalStore,
) -> None:
    """The reader walks folders with scandir: the same files as ``Path.rglob`` (a hidden
    file, one still being written, left out; a stray folder's files reported as rows)."""
    import gc

    root = seeded_store.root
    (root / "records" / "tiny" / ".half-written.json").write_bytes(b"{")
    (root / "records" / "tiny-b").mkdir()
    (root / "records" / "tiny-b" / "x.json").write_bytes(b"{}")
    (root / "records" / "tiny" / "nested").mkdir()
    (root / "records" / "tiny" / "nested" / "y.json").write_bytes(b"{}")
    base = root / "records"
    expected = [
        p.relative_to(root).as_posix()
        for p in sorted(base.rglob("*"))
        if not p.is_dir() and not p.name.startswith(".")
    ]
    raw = seeded_store.snapshot().records
    assert [r.path for r in raw] == expected
    assert len(expected) == 9 and "records/tiny-b/x.json" in expected
    stray = {r.path: r.error for r in raw if r.error is not None}
    assert list(stray) == ["records/tiny/nested/y.json"] and "layout" in str(stray.values())
    good = [r for r in raw if r.error is None and r.path.startswith("records/tiny/")]
    assert all(r.data == (root / r.path).read_bytes() for r in good)
    assert gc.isenabled()  # the reader paused the cycle collector only while it read
