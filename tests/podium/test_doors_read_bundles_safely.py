"""Every door reads a bundle the same way: as intake does, before anything is kept or sent.

A truncated bundle and one whose file was changed after packaging are refused by
``podium queue submit`` (the queue holds nothing afterwards) and by ``podium submission
push`` (the test Hub server received no request), with the finding intake would name; the
sound bundle goes through both doors, so the setup is what the refusals are measured
against. A damaged bundle that reached a queue another way is REJECTED by the worker's
intake, and no engine starts for it.
"""

from __future__ import annotations

import gzip
import io
import tarfile
from pathlib import Path

import pytest
from doubles.sandbox import VerifyingSandbox
from hubserver import FakeHub, allow_hub_requests

from podium.canonical import sha256_file
from podium.cli.app import main
from podium.signing import KeyPair
from schemas.challenge import load_challenge
from submission.bundle import package
from submission.scaffold import init_submission
from verifier.scale.queue.stores import LocalQueue
from verifier.scale.queue.stores.base import BundleToSubmit
from verifier.scale.worker import Worker, WorkerConfig

# the bundle's base is pinned from the local image: every door refuses an unchecked one
pytestmark = pytest.mark.docker


@pytest.fixture()
def bundle(tmp_path: Path) -> Path:
    directory = tmp_path / "entry"
    init_submission(directory, load_challenge("tiny"), team="acme", entry="doors")
    made = package(directory, tmp_path / "dist", build=False)
    assert made.bundle is not None
    return made.bundle.path


def truncated(bundle: Path) -> Path:
    out = bundle.with_name("truncated.tar.gz")
    out.write_bytes(bundle.read_bytes()[: bundle.stat().st_size * 2 // 3])
    return out


def tampered(bundle: Path) -> Path:
    """The bundle with its Dockerfile changed after packaging (its manifest untouched)."""
    out = bundle.with_name("tampered.tar.gz")
    with tarfile.open(bundle) as src, tarfile.open(out, "w:gz") as dst:
        for member in src:
            body = src.extractfile(member).read() if member.isfile() else b""  # type: ignore[union-attr]
            if member.name.endswith("Dockerfile"):
                body += b"RUN echo changed after packaging\n"
                member.size = len(body)
            dst.addfile(member, io.BytesIO(body) if member.isfile() else None)
    return out


#: each damage, and what the refusal says (intake's own words)
DAMAGED = {
    "truncated": (truncated, "the bundle was refused"),
    "tampered": (tampered, "Dockerfile does not match the manifest"),
}


def cli(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    with pytest.raises(SystemExit) as done:
        main(args)
    out = capsys.readouterr()
    return int(done.value.code or 0), out.out + out.err


@pytest.mark.parametrize("damage", list(DAMAGED))
def test_queue_submit_refuses_a_damaged_bundle_and_stores_nothing(
    bundle: Path, tmp_path: Path, damage: str, capsys: pytest.CaptureFixture[str]
) -> None:
    queue = tmp_path / "queue"
    make, says = DAMAGED[damage]
    bad = make(bundle)
    code, printed = cli(["queue", "submit", str(bad), "--queue", str(queue)], capsys)
    assert code == 1 and says in printed, printed
    assert LocalQueue(queue).list_requests() == []
    assert not [p for p in queue.rglob("*") if p.is_file()] if queue.exists() else True
    code, printed = cli(["queue", "submit", str(bundle), "--queue", str(queue)], capsys)
    assert code == 0, printed
    assert len(LocalQueue(queue).list_requests()) == 1


@pytest.mark.parametrize("damage", list(DAMAGED))
def test_push_refuses_a_damaged_bundle_before_any_request(
    bundle: Path,
    damage: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    make, says = DAMAGED[damage]
    bad = make(bundle)
    with FakeHub() as hub:
        allow_hub_requests(monkeypatch)
        monkeypatch.setenv("HF_ENDPOINT", hub.endpoint)
        monkeypatch.setenv("HF_TOKEN", "hf_test_token_not_real")
        code, printed = cli(["submission", "push", str(bad), "--repo", "acme/entries"], capsys)
        assert code == 1 and says in printed, printed
        assert sum(hub.stats.values()) == 0, hub.stats
        assert not bad.with_name(bad.name + ".push.json").exists()
        code, printed = cli(["submission", "push", str(bundle), "--repo", "acme/entries"], capsys)
        assert code == 0, printed
        assert sum(hub.stats.values()) > 0


def test_a_worker_rejects_a_damaged_bundle_at_intake_without_starting_an_engine(
    bundle: Path, tmp_path: Path
) -> None:
    bad = truncated(bundle)
    queue = LocalQueue(tmp_path / "queue")
    # a request written past the doors (by hand): the worker's own reader must refuse it
    queue.submit(
        [
            BundleToSubmit(
                path=bad,
                challenge="tiny",
                team="acme",
                entry="doors",
                sha256=sha256_file(bad),
                size=bad.stat().st_size,
                reported_tps=None,
            )
        ]
    )
    runners: list[VerifyingSandbox] = []

    def runner() -> VerifyingSandbox:
        runners.append(VerifyingSandbox())
        return runners[-1]

    worker = Worker(
        WorkerConfig(
            hold=None,  # no hold here: test_publication_hold.py tests it
            queue=queue,
            key=KeyPair.generate(),
            runner=runner,
            out_dir=tmp_path / "out",
        )
    )
    (handled,) = worker.run(once=True)
    (done,) = queue.list_requests()
    assert handled.verdict == "REJECTED", handled
    assert done.doc["result"]["verdict"] == "REJECTED"
    assert runners and not runners[0].started


def test_a_gzip_of_garbage_is_refused_at_the_queue(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    junk = tmp_path / "junk.tar.gz"
    junk.write_bytes(gzip.compress(b"not a tar at all" * 64))
    queue = tmp_path / "queue"
    code, printed = cli(["queue", "submit", str(junk), "--queue", str(queue)], capsys)
    assert code == 1 and "the bundle was refused" in printed, printed
    assert LocalQueue(queue).list_requests() == []
