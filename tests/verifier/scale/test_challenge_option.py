"""``--challenge`` on the queue, the worker and the dispatcher: a locked spec by path."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from podium.cli.app import app, main
from podium.signing import KeyPair, write_keypair
from verifier.scale.resources import remote_challenge, spec_source

runner = CliRunner()


def invoke(*args: str):
    return runner.invoke(app, list(args), catch_exceptions=False)


def cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    """The whole command line, errors mapped to exit codes as users see them."""
    with pytest.raises(SystemExit) as done:
        main(list(args))
    out = capsys.readouterr()
    return int(done.value.code or 0), out.out + out.err


@pytest.fixture(scope="module")
def locked(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Path]:
    """(a locked copy of tiny, its signing key, another key that it does not pin)."""
    tmp = tmp_path_factory.mktemp("locked")
    public = write_keypair(KeyPair.generate(), tmp / "organizer.pem")
    write_keypair(KeyPair.generate(), tmp / "stranger.pem")
    spec = tmp / "tiny.locked.json"
    res = invoke("challenge", "lock", "tiny", "--pubkey", str(public), "-o", str(spec), "--json")
    assert res.exit_code == 0, res.output
    return spec, tmp / "organizer.pem", tmp / "stranger.pem"


def test_the_worker_takes_a_locked_spec_by_path(
    tmp_path: Path, locked: tuple[Path, Path, Path]
) -> None:
    spec, key, _ = locked
    (tmp_path / "queue").mkdir()
    q = str(tmp_path / "queue")
    res = invoke("worker", "-c", str(spec), "--queue", q, "--key", str(key), "--once", "--json")
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout) == {"handled": []}


def test_the_worker_refuses_an_unlocked_spec_naming_each_part(
    tmp_path: Path, locked: tuple[Path, Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    _, key, stranger = locked
    (tmp_path / "queue").mkdir()
    q = str(tmp_path / "queue")
    code, out = cli(capsys, "worker", "-c", "fast-gemma", "--queue", q, "--key", str(key))
    assert code == 2
    for part in ("model.files", "engine.vllm.images.gpu", "leaderboard.keys"):
        assert part in out
    assert "podium challenge lock" in out
    # shipped tiny pins its files but no organizer key
    code, out = cli(capsys, "worker", "-c", "tiny", "--queue", q, "--key", str(key))
    assert code == 2 and "leaderboard.keys" in out and "model.files" not in out
    # a locked spec, but the worker signs with a key it does not pin
    code, out = cli(capsys, "worker", "-c", str(locked[0]), "--queue", q, "--key", str(stranger))
    assert code == 2 and "is not pinned" in out


def test_queue_commands_keep_to_the_given_challenge(
    tmp_path: Path,
    sample_bundle: Path,
    locked: tuple[Path, Path, Path],
    capsys: pytest.CaptureFixture[str],
) -> None:
    spec = str(locked[0])
    q = str(tmp_path / "queue")
    sub = invoke("queue", "submit", str(sample_bundle), "--queue", q, "-c", spec, "--json")
    assert sub.exit_code == 0, sub.output
    (req,) = json.loads(sub.stdout)["requests"]
    listed = json.loads(invoke("queue", "list", "--queue", q, "-c", spec, "--json").stdout)
    assert [r["request_id"] for r in listed["requests"]] == [req["request_id"]]
    # another challenge: nothing listed, the request refused, the bundle refused
    other = tmp_path / "other.json"
    doc = json.loads(locked[0].read_text())
    other.write_text(json.dumps({**doc, "id": "tiny-two"}))
    none = json.loads(invoke("queue", "list", "--queue", q, "-c", str(other), "--json").stdout)
    assert none["requests"] == []
    code, out = cli(capsys, "queue", "show", req["request_id"], "--queue", q, "-c", str(other))
    assert code == 2 and "not 'tiny-two'" in out
    code, out = cli(capsys, "queue", "submit", str(sample_bundle), "--queue", q, "-c", str(other))
    assert code == 2 and "is for challenge 'tiny', not 'tiny-two'" in out
    cancel = invoke("queue", "cancel", req["request_id"], "--queue", q, "-c", spec, "--json")
    assert cancel.exit_code == 0 and json.loads(cancel.stdout)["state"] == "CANCELLED"


def test_the_given_spec_serves_its_id_and_a_job_gets_a_reference_it_can_load(
    locked: tuple[Path, Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    from schemas.challenge import load_challenge

    spec = load_challenge(locked[0])
    spec_for = spec_source(spec)
    assert spec_for("tiny") is spec
    assert spec_for("fast-gemma").source.endswith("fast-gemma.json")  # type: ignore[union-attr]
    url = "hf://datasets/org/challenges/tiny.locked.json"
    assert remote_challenge(url, spec) == {"tiny": url}
    assert remote_challenge("tiny", load_challenge("tiny")) == {"tiny": "tiny"}
    from podium.errors import UsageError

    with pytest.raises(UsageError, match="cannot read a spec file of this machine"):
        remote_challenge(str(locked[0]), spec)
    code, out = cli(capsys, "dispatch", "-c", str(locked[0]), "--queue", "./nowhere")
    assert code == 2 and "hf://datasets/ORG/NAME/challenge.json" in out
