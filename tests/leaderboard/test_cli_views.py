"""The leaderboard commands: show ranks, verify catches tampering, export, publish, site."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
from factories import checked, make_report, plant_row
from typer.testing import CliRunner

from leaderboard.publish import head_signer
from leaderboard.stores.local import LocalStore
from podium.cli.app import app
from podium.signing import KeyPair

runner = CliRunner()


def invoke(*args: str):
    return runner.invoke(app, list(args), catch_exceptions=False)


def test_show_ranks_verified_by_tps_and_lists_the_rest_apart(
    seeded_store: LocalStore, key_files: tuple[Path, Path]
) -> None:
    key = str(key_files[1])
    res = invoke("leaderboard", "show", "--store", seeded_store.url, "--pubkey", key, "--json")
    assert res.exit_code == 0, res.output
    (board,) = json.loads(res.stdout)["boards"]
    ranked = [(r["rank"], r["tied"], r["team"], r["entry"]) for r in board["ranked"]]
    # tiny's stated noise (10 %) widens 2,500 [2,450, 2,550] and 2,100 [2,058, 2,142] until
    # they overlap: a shared first place; 900 is beyond the noise of both
    assert ranked == [
        (1, True, "otters", "awq"),
        (1, True, "falcons", "fp8-a"),
        (3, False, "herons", "bf16"),
    ]
    others = [(r["verdict"], r["team"], r["reason"]) for r in board["others"]]
    assert others == [
        ("UNOFFICIAL", "wrens", "not measured on the challenge's official hardware"),
        ("REJECTED", "lynx", "PPL 2.437 > cap 2.415"),
        ("FAILED", "moths", "rebuild: docker build failed: no such file requirements.txt"),
    ]
    every = json.loads(
        invoke(
            "leaderboard", "show", "--store", seeded_store.url, "--all", "--pubkey", key, "--json"
        ).stdout
    )["boards"][0]["ranked"]
    assert [r["entry"] for r in every] == ["awq", "fp8-a", "fp8-b", "bf16"]


def test_show_for_humans_has_the_table_and_the_reasons(
    seeded_store: LocalStore, key_files: tuple[Path, Path]
) -> None:
    res = invoke("leaderboard", "show", "--store", seeded_store.url, "--pubkey", str(key_files[1]))
    assert res.exit_code == 0
    out = res.stdout
    assert out.index("otters") < out.index("falcons") < out.index("herons") < out.index("lynx")
    assert "PPL 2.437 > cap 2.415" in out and "2,500.0 [2,450.0, 2,550.0]" in out


def test_verify_passes_a_clean_store_and_catches_one_altered_byte(
    seeded_store: LocalStore, key_files: tuple[Path, Path]
) -> None:
    _, public = key_files
    ok = invoke("leaderboard", "verify", "--store", seeded_store.url, "--pubkey", str(public))
    assert ok.exit_code == 0 and "7 of 7 rows verified" in ok.stdout
    victim = sorted((seeded_store.root / "records" / "tiny").glob("*.json"))[3]
    data = bytearray(victim.read_bytes())
    at = data.index(b'"tps": ') + len(b'"tps": ')
    data[at] = ord("9") if data[at] != ord("9") else ord("8")  # one digit of the TPS
    victim.write_bytes(bytes(data))
    bad = invoke(
        "leaderboard", "verify", "--store", seeded_store.url, "--pubkey", str(public), "--json"
    )
    assert bad.exit_code == 1
    doc = json.loads(bad.stdout)
    assert doc["good"] == 6 and [b["path"] for b in doc["bad"]] == [f"records/tiny/{victim.name}"]
    assert doc["bad"][0]["kind"] == "bad-signature" and "altered" in doc["bad"][0]["problem"]


def test_verify_flags_unknown_keys_moved_rows_and_broken_json(
    seeded_store: LocalStore, key_files: tuple[Path, Path]
) -> None:
    _, public = key_files
    forger = KeyPair.generate()
    from factories import make_record

    plant_row(seeded_store.root, make_record(forger, team="forger", serial=77))
    files = sorted((seeded_store.root / "records" / "tiny").glob("*.json"))
    moved = seeded_store.root / "records" / "other" / files[0].name
    moved.parent.mkdir()
    moved.write_bytes(files[0].read_bytes())
    (seeded_store.root / "records" / "tiny" / ("0" * 32 + ".json")).write_text("{not json")
    res = invoke(
        "leaderboard", "verify", "--store", seeded_store.url, "--pubkey", str(public), "--json"
    )
    assert res.exit_code == 1
    bad = json.loads(res.stdout)["bad"]
    problems = " | ".join(b["problem"] for b in bad)
    assert {b["kind"] for b in bad} == {"unknown-key", "path-mismatch", "unreadable"}
    assert "not trusted" in problems and "belongs at" in problems and "not valid JSON" in problems


def test_export_writes_csv_parquet_and_json(
    seeded_store: LocalStore, tmp_path: Path, keypair: KeyPair, key_files: tuple[Path, Path]
) -> None:
    import pyarrow.parquet as pq

    for fmt in ("csv", "parquet", "json"):
        out = tmp_path / f"lb.{fmt}"
        res = invoke(
            "leaderboard",
            "export",
            "--store",
            seeded_store.url,
            "--format",
            fmt,
            "-o",
            str(out),
            "--pubkey",
            str(key_files[1]),
        )
        assert res.exit_code == 0 and out.stat().st_size > 0
    with open(tmp_path / "lb.csv", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    assert len(rows) == 7 and {r["team"] for r in rows} >= {"otters", "lynx"}
    table = pq.read_table(tmp_path / "lb.parquet")
    assert table.num_rows == 7 and table.schema.field("tps").type == "double"
    exported = [json.loads(text) for text in table.column("record_json").to_pylist()]
    check = checked(exported, keypair)  # the signed records, whole
    assert check.ok and len(check.good) == 7
    assert len(json.loads((tmp_path / "lb.json").read_text())) == 7


def test_publish_command_is_idempotent(
    tmp_path: Path, keypair: KeyPair, key_files: tuple[Path, Path]
) -> None:
    private, _ = key_files
    report = tmp_path / "report.json"
    report.write_text(json.dumps(make_report(keypair, verdict="REJECTED", ppl=2.5)))
    store = str(tmp_path / "store")
    first = invoke(
        "leaderboard", "publish", str(report), "--store", store, "--key", str(private), "--json"
    )
    assert first.exit_code == 0 and len(json.loads(first.stdout)["added"]) == 1
    again = json.loads(
        invoke(
            "leaderboard", "publish", str(report), "--store", store, "--key", str(private), "--json"
        ).stdout
    )
    assert again["added"] == [] and len(again["already_present"]) == 1
    assert again["records"][0]["reason"] == "PPL 2.500 > cap 2.415"
    assert len(LocalStore(store).list_records()) == 1


def test_build_site_writes_a_static_space(
    seeded_store: LocalStore, tmp_path: Path, key_files: tuple[Path, Path]
) -> None:
    out = tmp_path / "site"
    args = ["--store", seeded_store.url, "-o", str(out), "--pubkey", str(key_files[1])]
    res = invoke("leaderboard", "build-site", *args)
    assert res.exit_code == 0
    assert {p.name for p in out.iterdir()} == {
        "index.html",
        "app.js",
        "style.css",
        "records.json",
        "README.md",
        "records",  # each row's signed file, as stored, for the page's links
        "log",  # the signed head the rows were checked against
    }
    assert len(list((out / "records" / "tiny").glob("*.json"))) == 7
    assert (out / "log" / "head.json").read_bytes() == (
        seeded_store.root / "log/head.json"
    ).read_bytes()
    assert json.loads((out / "records.json").read_text())["count"] == 7
    assert "sdk: static" in (out / "README.md").read_text()
    assert "http" not in (out / "index.html").read_text().replace("http-equiv", "")


HOSTILE = "[/]oops [bold red]x\x1b[31mred\x1b[0m <img src=x onerror=alert(1)>"


def test_show_prints_hostile_names_and_reasons_as_text(
    tmp_path: Path, keypair: KeyPair, key_files: tuple[Path, Path]
) -> None:
    from factories import make_record

    store = LocalStore(tmp_path / "store")
    store.publish(
        [
            make_record(keypair, team=HOSTILE, entry=HOSTILE, serial=1),
            make_record(
                keypair,
                team="t2",
                entry=HOSTILE,
                verdict="REJECTED",
                serial=2,
                findings=[{"check_id": "x.y", "severity": "error", "message": HOSTILE}],
            ),
        ],
        head_signer(keypair),
    )
    res = invoke("leaderboard", "show", "--store", store.url, "--pubkey", str(key_files[1]))
    assert res.exit_code == 0, res.output
    assert "\x1b" not in res.stdout
    flat = " ".join(res.stdout.split())  # the table folds long cells over lines
    assert "[/]oops" in flat and "[bold" in flat and "onerror=alert(1)>" in flat
    assert "\\x1b[31mred" in flat


def test_show_of_a_store_that_does_not_exist_is_an_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from podium.cli.app import main

    for args in (["--store", str(tmp_path / "typo")], ["--store", str(tmp_path), "--json"]):
        with pytest.raises(SystemExit) as done:
            main(["leaderboard", "show", *args])
        out = capsys.readouterr()
        assert done.value.code == 2
        text = out.out if "--json" in args else out.err
        assert "no leaderboard store" in text or "is not a leaderboard store" in text
    empty = LocalStore(tmp_path / "fresh")
    empty.publish(
        [], head_signer(KeyPair.generate())
    )  # what a first publish leaves: the card, no records yet
    with pytest.raises(SystemExit) as done:
        main(["leaderboard", "show", "--store", str(tmp_path / "fresh")])
    assert done.value.code == 0 and "no records in this store yet" in capsys.readouterr().out
