"""``podium verify BUNDLE --runner jail --key K``: VERIFIED and signed with no Docker daemon.

The tiny baseline entry, packaged as a participant without Docker would, is verified
through the jail on the held-out set, with ``DOCKER_HOST`` pointing at no daemon at all:
the jail needs none. One verification (about a minute on two shared cores) serves every
assertion. A second one, through a jail weakened on purpose (``doubles.weak_jail``: its
network left open, a key mounted), is never VERIFIED: the jail's probe fails it at
``isolation``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from doubles.weak_jail import WeakJail
from entry_bundle import entry_source, packaged

from podium.cli.app import main
from podium.signing import KeyPair
from schemas.challenge import load_challenge
from verifier.pipeline import VerifyRequest, verify

pytestmark = [pytest.mark.slow, pytest.mark.jail]


@pytest.fixture(scope="module")
def verified(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    tmp = tmp_path_factory.mktemp("jail-verify")
    bundle = packaged(entry_source(tmp))
    key = tmp / "organizer.pem"
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("DOCKER_HOST", f"unix://{tmp}/no-docker-daemon.sock")
        with pytest.raises(SystemExit) as done:
            main(["keys", "generate", str(key)])
        assert not done.value.code
        args = ["verify", str(bundle), "--runner", "jail", "--challenge", "tiny"]
        args += ["--key", str(key), "-o", str(tmp / "out"), "--json"]
        with pytest.raises(SystemExit) as done:
            main(args)
    report = json.loads((tmp / "out" / "report.json").read_text())
    return {"code": done.value.code, "report": report, "key": key, "out": tmp / "out"}


@pytest.mark.quiet("integrity.isolation")
def test_the_jail_gives_verified_and_signs(verified: dict[str, Any]) -> None:
    report = verified["report"]
    assert verified["code"] in (0, None), report.get("failure")
    assert report["verdict"] == "VERIFIED", report.get("failure")
    assert report["runner"] == "jail"
    assert report["signature"]["value"]
    isolation = next(c for c in report["checks"] if c["id"] == "integrity.isolation")
    assert isolation["status"] == "pass"


def test_the_signature_checks_out(verified: dict[str, Any]) -> None:
    pub = Path(f"{verified['key']}.pub")
    with pytest.raises(SystemExit) as done:
        main(["report", "verify", str(verified["out"] / "report.json"), "--pubkey", str(pub)])
    assert not done.value.code


def test_the_jail_ran_on_the_held_out_set(verified: dict[str, Any]) -> None:
    assert verified["report"]["heldout"]["public"] is False


@pytest.mark.fires("integrity.isolation")
def test_a_weakened_jail_is_caught_and_never_verified(tmp_path: Path) -> None:
    planted = tmp_path / "planted.pem"
    planted.write_text("-----BEGIN PRIVATE KEY-----\nplanted\n")
    bundle = packaged(entry_source(tmp_path))
    outcome = verify(
        VerifyRequest(
            bundle,
            load_challenge("tiny"),
            WeakJail(planted),
            tmp_path / "out",
            key=KeyPair.generate(),
        )
    )
    report = outcome.evidence or outcome.report
    assert report["verdict"] != "VERIFIED"
    isolation = next(c for c in report["checks"] if c["id"] == "integrity.isolation")
    problems = " | ".join(isolation["details"]["problems"])
    assert isolation["status"] == "fail"
    assert "not only lo" in problems and "a mount the plan does not: /organizer.pem" in problems
    assert report["failure"]["stage"] == "isolation"
