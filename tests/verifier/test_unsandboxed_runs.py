"""A runner with no sandbox gets neither the blind nor the key.

The process runner's engine runs as the verifier's user and could read whatever that
user can, so a run on it uses the public set (the held-out files are never opened: an
audit hook on ``open`` watches the whole pipeline up to the engine's start), refuses a
signing key or a held-out set where one is given (the pipeline, ``podium verify``, the
worker), and says so on the first line of its output.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from doubles.sandbox import VerifyingSandbox

from podium.cli.app import main
from podium.errors import PodiumError, UsageError
from podium.signing import KeyPair
from schemas.challenge import ChallengeSpec, load_challenge
from submission.bundle import package
from submission.scaffold import init_submission
from verifier.intake import Intake
from verifier.pipeline import VerifyRequest, verify
from verifier.runners.base import ImageFacts
from verifier.runners.process import ProcessRunner
from verifier.scale.queue.stores import LocalQueue, describe_bundle
from verifier.scale.worker import Worker, WorkerConfig

FAKE_DIGEST = "sha256:" + "ab" * 32
HELDOUT_FILES = ("heldout-prompts.jsonl", "ppl-heldout.jsonl")
#: the files opened while a watch is on (an audit hook cannot be removed: it only records)
OPENED: list[str] | None = None


def _record_open(event: str, args: tuple[Any, ...]) -> None:
    if event == "open" and OPENED is not None and isinstance(args[0], str | Path):
        OPENED.append(str(args[0]))


sys.addaudithook(_record_open)


class StopsAtRebuild(ProcessRunner):
    """The process runner, stopped where the engine would be built: what the pipeline
    opened until then is what it would hand the engine."""

    def prepare(
        self, intake: Intake, spec: ChallengeSpec, *, on_log: Callable[[str], None]
    ) -> ImageFacts:
        raise UsageError("stopped before the engine starts")


class SandboxStopsAtRebuild(VerifyingSandbox):
    def prepare(
        self, intake: Intake, spec: ChallengeSpec, *, on_log: Callable[[str], None]
    ) -> ImageFacts:
        raise UsageError("stopped before the engine starts")


@pytest.fixture()
def bundle(tmp_path: Path) -> Path:
    directory = tmp_path / "entry"
    init_submission(directory, load_challenge("tiny"), team="acme")
    made = package(directory, tmp_path / "dist", base_digest=FAKE_DIGEST, build=False)
    assert made.bundle is not None
    return made.bundle.path


@pytest.fixture()
def checked_bundle(tmp_path: Path) -> Path:
    """A bundle whose base the local image confirms: the queue refuses an unchecked one."""
    directory = tmp_path / "entry"
    init_submission(directory, load_challenge("tiny"), team="acme")
    made = package(directory, tmp_path / "dist", build=False)
    assert made.bundle is not None
    return made.bundle.path


def opened_by_a_run(bundle: Path, runner: ProcessRunner, out: Path) -> tuple[list[str], Any]:
    global OPENED
    OPENED = []
    try:
        outcome = verify(VerifyRequest(bundle, load_challenge("tiny"), runner, out))
    finally:
        opened, OPENED = OPENED, None
    return [p for p in opened if Path(p).name in HELDOUT_FILES], outcome


def test_an_unsandboxed_run_uses_the_public_set_and_never_opens_the_held_out_files(
    bundle: Path, tmp_path: Path
) -> None:
    heldout, outcome = opened_by_a_run(bundle, StopsAtRebuild(), tmp_path / "process")
    assert heldout == []
    assert outcome.report["failure"]["stage"] == "rebuild"  # it got as far as the engine
    assert outcome.report["heldout"]["public"] is True
    assert outcome.signed is False
    # the same run in a sandbox opens them: the watch sees what it is meant to see
    heldout, outcome = opened_by_a_run(bundle, SandboxStopsAtRebuild(), tmp_path / "sandbox")
    assert sorted({Path(p).name for p in heldout}) == sorted(HELDOUT_FILES)
    assert outcome.report["heldout"]["public"] is False


@pytest.mark.parametrize("given", ["key", "heldout"])
def test_the_pipeline_refuses_a_key_or_a_held_out_set_for_an_unsandboxed_run(
    bundle: Path, tmp_path: Path, given: str
) -> None:
    extra: dict[str, Any] = (
        {"key": KeyPair.generate()} if given == "key" else {"heldout": str(tmp_path)}
    )
    request = VerifyRequest(
        bundle, load_challenge("tiny"), ProcessRunner(), tmp_path / "out", **extra
    )
    with pytest.raises(UsageError, match="the process runner has no sandbox"):
        verify(request)
    assert not (tmp_path / "out").exists()  # nothing ran, nothing was written


def run(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as done:
        main(args)
    out = capsys.readouterr()
    return int(done.value.code or 0), out.out, out.err


def test_verify_with_the_process_runner_and_a_key_refuses_first_and_reads_no_key(
    bundle: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    key = tmp_path / "organizer.pem"
    key.write_text("not a key: reading it would fail differently\n", encoding="utf-8")
    out = tmp_path / "out"
    args = ["verify", str(bundle), "--runner", "process", "--key", str(key), "-o", str(out)]
    code, printed, err = run(args, capsys)
    assert code == 2
    first = (printed + err).strip().splitlines()[0]
    assert "the process runner has no sandbox" in first and "--key is refused" in first
    assert "no key was read" in first
    assert not out.exists()


def test_verify_with_the_process_runner_says_first_that_it_runs_public_and_unsigned(
    bundle: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The run itself is cut short by a broken bundle (REJECTED at intake, no engine): what
    is checked is the first line and the unsigned result, with a key in the environment."""
    monkeypatch.setenv("PODIUM_SIGNING_KEY", "-----BEGIN PRIVATE KEY-----\nbroken\n")
    truncated = tmp_path / "truncated.tar.gz"
    truncated.write_bytes(bundle.read_bytes()[: bundle.stat().st_size // 2])
    args = ["verify", str(truncated), "--runner", "process", "-o", str(tmp_path / "out")]
    code, printed, _ = run(args, capsys)
    assert code == 1
    first = printed.strip().splitlines()[0]
    assert "the process runner has no sandbox" in first and "public set" in first, printed
    assert "never signed" in first
    code, printed, _ = run([*args, "--json"], capsys)
    doc = json.loads(printed)
    assert doc["signed"] is False and "no sandbox" in doc["unsandboxed"]


@pytest.mark.docker
def test_a_worker_on_an_unsandboxed_runner_hands_it_neither_the_key_nor_the_held_out_set(
    checked_bundle: Path, tmp_path: Path
) -> None:
    bundle = checked_bundle
    queue = LocalQueue(tmp_path / "queue")
    queue.submit([describe_bundle(bundle)])
    seen: list[VerifyRequest] = []

    def capture(req: VerifyRequest) -> Any:
        seen.append(req)
        raise PodiumError("captured")

    said: list[str] = []
    worker = Worker(
        WorkerConfig(
            hold=None,  # no hold here: test_publication_hold.py tests it
            queue=queue,
            key=KeyPair.generate(),
            runner=ProcessRunner,
            out_dir=tmp_path / "out",
            heldout=str(tmp_path / "heldout"),
            verify_fn=capture,
        ),
        say=said.append,
    )
    (handled,) = worker.run(once=True)
    (req,) = seen
    assert req.key is None and req.heldout is None
    assert any("the process runner has no sandbox" in line for line in said), said
    assert handled.state == "FAILED"


def test_the_worker_command_refuses_the_process_runner(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    key = tmp_path / "organizer.pem"
    key.write_text("not a key\n", encoding="utf-8")
    args = ["worker", "--queue", str(tmp_path / "q"), "--key", str(key), "--runner", "process"]
    code, printed, err = run([*args, "--once"], capsys)
    assert code == 2
    assert "needs a sandbox" in printed + err


def test_a_sweep_on_the_process_runner_needs_a_margin_it_cannot_measure_blind(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    directory = tmp_path / "entry"
    init_submission(directory, load_challenge("tiny"), team="acme")
    args = ["submission", "sweep", str(directory), "--knob", "MAX_MODEL_LEN=1024,2048"]
    code, printed, err = run([*args, "--runner", "process", "-o", str(tmp_path / "out")], capsys)
    assert code == 2
    assert "cannot measure the margin on the held-out set" in printed + err
    assert not (tmp_path / "out").exists()
