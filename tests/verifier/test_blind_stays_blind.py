"""The blind stays blind: no engine carries held-out text out of a verification.

Three hostile engines (``tests/verifier/hostile_engines.py``) are sent held-out prompts,
then make the run fail while carrying every prompt they saw out: printed to their log
before they die, echoed in an error body (verbatim, every other word, base64, reversed),
or put in ``/v1/models``, in headers and in an answer that is not HTTP. Each ends FAILED
with its stage and cause in podium's words, and nothing the engine saw reaches what a
participant reads: the report, ``podium verify`` on the terminal and under ``--json``, and
the queue request a worker marks. The organizer's log beside the report keeps the engine's
whole output and what it answered.

The engines run as plain processes, one torch thread each: in the pipeline and worker
tests through ``VerifyingSandbox`` (the process runner posing as a sandbox, so that it is
given the held-out set), on the command line through ``--runner process``, which has no
sandbox and so runs on the public set: what must not leak there is the public prompts
the engine saw.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from doubles.sandbox import VerifyingSandbox
from entry_bundle import entry_source, packaged
from hostile_engines import encodings

from podium.cli.app import main
from podium.signing import KeyPair
from schemas.challenge import load_challenge
from verifier.pipeline import VerifyRequest, verify
from verifier.runners.reference_engine import reference_runner
from verifier.scale.queue.stores import LocalQueue, describe_bundle
from verifier.scale.worker import Worker, WorkerConfig

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
HELDOUT = REPO / "podium" / "data" / "tiny" / "heldout-prompts.jsonl"
PUBLIC = REPO / "podium" / "data" / "tiny" / "public-prompts.jsonl"

#: each engine, and the cause its FAILED verdict must name (podium's words)
CAUSE = {
    "PrintAndDie": "the engine closed or refused the connection",
    "EchoErrors": "from /v1/chat/completions (a body of ",  # the status: budget permitting
    "SmuggleHeaders": "the engine's answer is not well-formed HTTP/1.1",
}


def make_bundle(tmp: Path, engine: str, *, confirmed: bool = False) -> Path:
    """The sample entry carrying podium's baseline engine and the hostile engines."""
    hostile = Path(__file__).with_name("hostile_engines.py").read_text(encoding="utf-8")
    src = entry_source(
        tmp / engine,
        env={"ENGINE_CLASS": f"hostile_engines:{engine}"},
        files={"engine/hostile_engines.py": hostile},
        entry=engine.lower(),
    )
    return packaged(src, confirmed=confirmed)


@pytest.fixture(scope="module")
def bundles(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    tmp = tmp_path_factory.mktemp("hostile")
    return {name: make_bundle(tmp, name) for name in CAUSE}


# -- what must not leak --------------------------------------------------------------------


def strings(doc: Any) -> str:
    """Every key and string of a JSON document, one per line (JSON's escapes undone)."""
    if isinstance(doc, dict):
        return "\n".join(f"{k}\n{strings(v)}" for k, v in doc.items())
    if isinstance(doc, list):
        return "\n".join(strings(v) for v in doc)
    return doc if isinstance(doc, str) else ""


def _norm(text: str) -> str:
    return " ".join(text.split())


def seen_by_engine(log: str) -> list[str]:
    """The prompts the engine was sent, as it logged them (``SEEN <json>``)."""
    seen = [json.loads(x[5:]) for x in log.splitlines() if x.startswith("SEEN ")]
    # the process runner has no sandbox, so its runs use the public set: what must not
    # leak is whatever the run sent
    sent = [json.loads(x)["prompt"] for f in (HELDOUT, PUBLIC) for x in f.read_text().splitlines()]
    assert any(p in text for text in seen for p in sent), "no prompt of the run was sent"
    return seen


def leaks(visible: str, seen: list[str], width: int = 24) -> list[str]:
    """Every piece (``width`` characters) of every form of every seen prompt in ``visible``."""
    hay = _norm(visible)
    found = []
    for text in seen:
        for form, value in encodings(text).items():
            value = _norm(value)
            for i in range(0, max(len(value) - width, 0) + 1, 8):
                piece = value[i : i + width]
                if len(piece) == width and piece in hay:
                    found.append(f"{form}: {piece!r}")
    return found


def check_organizer_log(out: Path, engine: str) -> list[str]:
    """The organizer's log keeps the whole story; returns what the engine saw."""
    log = (out / "engine.log").read_text(encoding="utf-8")
    seen = seen_by_engine(log)
    if engine == "PrintAndDie":
        assert all(f"PROMPT {text}" in log for text in seen)
    if engine == "EchoErrors":  # the error body, every encoding of every prompt
        assert "---- podium: what the engine answered at " in log
        assert all(v in log for text in seen for v in encodings(text).values())
    if engine == "SmuggleHeaders":  # h11's refusal, quoting the bad header line
        assert "---- podium: what the engine answered at " in log and "h11 refused it" in log
    return seen


def check_report(report: dict[str, Any], engine: str) -> None:
    assert report["verdict"] == "FAILED", report["failure"]
    failure = report["failure"]
    assert failure["stage"] == "evaluation", failure
    assert CAUSE[engine] in failure["message"], failure
    assert "TPS trial 1 request #" in failure["message"], failure
    assert failure["message"].count("request #") == 1, failure  # the kind, said once
    assert report["organizer_log"] == "engine.log"
    assert "log_tail" not in failure


# -- the report ----------------------------------------------------------------------------


@pytest.mark.parametrize("engine", list(CAUSE))
def test_a_hostile_engine_fails_naming_the_cause_and_the_report_holds_nothing_it_saw(
    bundles: dict[str, Path], tmp_path: Path, engine: str
) -> None:
    out = tmp_path / "out"
    outcome = verify(
        VerifyRequest(
            bundles[engine],
            load_challenge("tiny"),
            VerifyingSandbox(),  # a process, given the held-out set as a sandbox would be
            out,
            reference=reference_runner,
        )
    )
    check_report(outcome.report, engine)
    seen = check_organizer_log(out, engine)
    assert leaks(strings(outcome.report), seen) == []
    assert leaks((out / "report.json").read_text(encoding="utf-8"), seen) == []


# -- the CLI -------------------------------------------------------------------------------


def cli(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as done:
        main(args)
    captured = capsys.readouterr()
    return int(done.value.code or 0), captured.out, captured.err


@pytest.mark.parametrize("engine", list(CAUSE))
def test_podium_verify_json_holds_nothing_the_engine_saw(
    bundles: dict[str, Path],
    tmp_path: Path,
    engine: str,
    capsys: pytest.CaptureFixture[str],
) -> None:
    out = tmp_path / "out"
    code, printed, err = cli(
        ["verify", str(bundles[engine]), "--runner", "process", "-o", str(out), "--json"], capsys
    )
    assert code == 3
    doc = json.loads(printed)
    check_report(doc["report_document"], engine)
    seen = check_organizer_log(out, engine)
    assert leaks(printed + err, seen) == [] and leaks(strings(doc), seen) == []


@pytest.mark.parametrize("engine", ["PrintAndDie", "EchoErrors"])
def test_podium_verify_on_the_terminal_shows_the_cause_and_nothing_the_engine_saw(
    bundles: dict[str, Path],
    tmp_path: Path,
    engine: str,
    capsys: pytest.CaptureFixture[str],
) -> None:
    out = tmp_path / "out"
    code, out_text, err = cli(
        ["verify", str(bundles[engine]), "--runner", "process", "-o", str(out)], capsys
    )
    printed = out_text + err
    assert code == 3
    assert "FAILED at stage evaluation: " in printed and CAUSE[engine] in _norm(printed)
    assert "engine.log" in printed  # where the organizer finds the engine's words
    seen = check_organizer_log(out, engine)
    assert leaks(printed, seen) == []


# -- the queue -----------------------------------------------------------------------------


@pytest.mark.docker  # a queue takes a bundle whose base a local image confirms
@pytest.mark.parametrize("engine", ["PrintAndDie", "EchoErrors"])
def test_a_worker_marks_the_request_failed_naming_the_cause_and_nothing_the_engine_saw(
    tmp_path: Path, engine: str
) -> None:
    queue = LocalQueue(tmp_path / "queue")
    queue.submit([describe_bundle(make_bundle(tmp_path, engine, confirmed=True))])
    worker = Worker(
        WorkerConfig(
            hold=None,  # no hold here: test_publication_hold.py tests it
            queue=queue,
            key=KeyPair.generate(),
            runner=VerifyingSandbox,  # a process, given the held-out set as a sandbox is
            out_dir=tmp_path / "out",
            reference=reference_runner,
            lease_s=120,
        )
    )
    (handled,) = worker.run(once=True)
    (done,) = queue.list_requests()
    result = done.doc["result"]
    assert handled.state == "FAILED" and result["verdict"] == "FAILED", result
    assert result["message"].startswith("verification FAILED: TPS trial 1 request #")
    assert CAUSE[engine] in result["message"], result
    report = json.loads(Path(result["logs"]["report"]).read_text(encoding="utf-8"))
    seen = check_organizer_log(Path(result["logs"]["report"]).parent, engine)
    assert leaks(strings(done.doc), seen) == [] and leaks(strings(report), seen) == []
    for path in (tmp_path / "queue").rglob("*.json"):  # every file the queue holds
        assert leaks(path.read_text(encoding="utf-8"), seen) == [], path
