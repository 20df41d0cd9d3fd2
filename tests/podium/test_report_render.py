"""One renderer prints every report: it says what the document is worth, shows what is
there (and nothing that is not), and never lets report text steer the terminal."""

from __future__ import annotations

import copy
import io
import json
from pathlib import Path
from typing import Any

import pytest
from factories import make_report
from rich.console import Console

from podium.cli.app import main
from podium.cli.render import Signature, render_report
from podium.signing import KeyPair, sign_document, write_keypair

HOSTILE = "[/]oops [bold red]x\x1b[31mred\x1b[0m <img src=x onerror=alert(1)>"


@pytest.fixture(scope="module")
def keypair() -> KeyPair:
    return KeyPair.generate()


def run(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as done:
        main(args)
    out = capsys.readouterr()
    return int(done.value.code or 0), out.out, out.err


def render(
    report: dict[str, Any], signature: Signature | None = None, *, colour: bool = False
) -> str:
    buf = io.StringIO()
    con = Console(
        file=buf,
        width=1000 if colour else 160,
        height=100,
        force_terminal=colour,
        color_system="standard" if colour else None,
        emoji=False,
        highlight=False,
    )
    render_report(con, report, signature or Signature("unsigned"))
    return buf.getvalue()


def write(tmp_path: Path, doc: dict[str, Any], name: str = "report.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(doc), encoding="utf-8")
    return path


def alter_one_digit(doc: dict[str, Any]) -> dict[str, Any]:
    """The signed TPS with one digit changed: only the signature can tell."""
    bad = copy.deepcopy(doc)
    bad["metrics"]["tps"]["median"] = float(str(doc["metrics"]["tps"]["median"]).replace("1", "7"))
    assert bad["metrics"]["tps"]["median"] != doc["metrics"]["tps"]["median"]
    return bad


def test_show_says_plainly_that_the_signature_was_not_checked(
    tmp_path: Path, keypair: KeyPair, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write(tmp_path, alter_one_digit(make_report(keypair)))
    code, out, _ = run(["report", "show", str(path)], capsys)
    assert code == 0
    assert out.startswith("VERIFIED team-a/entry-1")
    assert "signature NOT CHECKED" in out and "report verify" in out and "--pubkey" in out
    code, out, _ = run(["report", "show", str(path), "--json"], capsys)
    assert json.loads(out)["signature"]["state"] == "unchecked"


def test_show_with_the_key_catches_one_altered_digit(
    tmp_path: Path, keypair: KeyPair, capsys: pytest.CaptureFixture[str]
) -> None:
    _, public = write_keypair(keypair, tmp_path / "k.pem"), tmp_path / "k.pem.pub"
    good = write(tmp_path, make_report(keypair), "good.json")
    code, out, _ = run(["report", "show", str(good), "--pubkey", str(public)], capsys)
    assert code == 0 and "signature OK" in out
    bad = write(tmp_path, alter_one_digit(make_report(keypair)), "bad.json")
    code, out, _ = run(["report", "show", str(bad), "--pubkey", str(public)], capsys)
    assert code == 1 and "signature INVALID" in out and "altered" in out
    code, out, _ = run(["report", "show", str(bad), "--pubkey", str(public), "--json"], capsys)
    assert code == 1 and json.loads(out)["signature"]["state"] == "invalid"


def test_an_unsigned_report_says_it_proves_nothing(
    tmp_path: Path, keypair: KeyPair, capsys: pytest.CaptureFixture[str]
) -> None:
    doc = make_report(keypair)
    del doc["signature"]
    code, out, _ = run(["report", "show", str(write(tmp_path, doc))], capsys)
    assert code == 0 and "unsigned" in out and "proves nothing" in out


def test_failed_and_intake_rejected_reports_print_no_empty_metrics_table(keypair: KeyPair) -> None:
    failed = render(make_report(keypair, verdict="FAILED", tps=None, ppl=None))
    assert "FAILED at stage rebuild" in failed and "metric" not in failed
    doc = make_report(keypair, verdict="REJECTED", tps=None, ppl=None)
    doc["metrics"] = {"ppl": None, "tps": None, "reported_tps": None}
    del doc["submission"]["manifest_sha256"]
    doc["submission"].update(team="unknown", entry="unknown")
    doc["checks"] = []
    doc["findings"] = [
        {"check_id": "bundle.corrupt", "severity": "error", "message": "truncated gzip"}
    ]
    out = render(doc)
    assert "metric" not in out and "unknown/unknown" not in out
    assert "manifest could not be read" in out and "bundle.corrupt" in out


def test_checks_and_metrics_it_has_never_heard_of_are_shown(keypair: KeyPair) -> None:
    doc = make_report(keypair)
    doc["checks"].append(
        {"id": "integrity.reference-decode", "status": "fail", "summary": "91% agreement"}
    )
    doc["metrics"]["tps"]["trials_run"] = 7
    doc["metrics"]["reference"] = {"seconds": 12.5, "records": 44}
    out = render(doc)
    assert "integrity.reference-decode" in out and "91% agreement" in out
    assert "TPS trials run" in out and "reference seconds" in out and "reference records" in out


def test_a_noisy_tps_is_called_unreliable_and_why(keypair: KeyPair) -> None:
    doc = make_report(keypair, mode="self-check", verdict="UNOFFICIAL")
    doc["metrics"]["tps"].update(median=120.0, cv=0.71, ci95=[0.0, 376.49])
    out = render(doc)
    assert out.startswith("SELF-REPORTED (UNOFFICIAL)")
    assert "TPS is unreliable" in out and "CV 71%" in out and "0.00 .. 376.49" in out
    quiet = render(make_report(keypair))
    assert "unreliable" not in quiet


def test_hostile_text_in_a_report_is_shown_as_text(keypair: KeyPair) -> None:
    doc = make_report(keypair, team=HOSTILE, entry=HOSTILE, verdict="FAILED", tps=None)
    doc["failure"] = {"stage": "ppl", "message": HOSTILE}
    doc["organizer_log"] = HOSTILE
    doc["findings"] = [
        {"check_id": "x.y", "severity": "error", "message": HOSTILE, "hint": HOSTILE}
    ]
    doc["checks"] = [{"id": HOSTILE, "status": HOSTILE, "summary": HOSTILE}]
    out = render(doc)
    assert "\x1b" not in out  # the engine's colour code never reaches the terminal
    assert "[/]oops [bold red]x\\x1b[31mred" in out  # shown, escaped, never interpreted
    assert "<img src=x onerror=alert(1)>" in out
    assert "the engine's own output: [/]oops" in out  # where the organizer's log is
    # in colour, hostile text adds no style: the same escape codes as for plain names
    plain = json.loads(json.dumps(doc).replace(json.dumps(HOSTILE)[1:-1], "plain-text"))
    assert render(doc, colour=True).count("\x1b[") == render(plain, colour=True).count("\x1b[")


def test_report_show_of_a_hostile_report_neither_crashes_nor_restyles(
    tmp_path: Path, keypair: KeyPair, capsys: pytest.CaptureFixture[str]
) -> None:
    doc = make_report(keypair, team=HOSTILE, entry="e")
    doc["findings"] = [{"check_id": "x.y", "severity": "warning", "message": HOSTILE}]
    path = write(
        tmp_path, sign_document({k: v for k, v in doc.items() if k != "signature"}, keypair)
    )
    code, out, err = run(["report", "show", str(path)], capsys)
    assert code == 0 and err == ""
    assert "\x1b" not in out and "[/]oops [bold red]x\\x1b[31mred" in out
