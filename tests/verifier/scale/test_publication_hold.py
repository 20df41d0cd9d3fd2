"""How long a run took, and which PPL records the engine answered well, reach nothing public
beyond the bits the report already counts.

An engine hides 3 bits in how long it stalls on untimed requests (8 s a step) and 3 more in
which of the PPL records it answers malformed. Each hidden value here is one verification
as the pipeline ends it (the one report builder, on a controlled clock) and as the queue
ends it (``conclude``: hold, fence, publish, mark, into a local queue and a local board).
Everything a participant or the public reads (the signed report, the board's files, its
signed head, the queue's request and its history) is the same bytes for every hidden
value, so no decoder gets a bit from them; the organizer's evidence keeps the whole story.
A run that crosses a grid point shows it, and only as the report's ``finished`` says.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from hubserver import FakeHub

from leaderboard.stores.hub import HubStore
from leaderboard.stores.local import LocalStore
from podium.signing import KeyPair
from schemas.challenge import ChallengeSpec, load_challenge
from schemas.findings import Finding
from schemas.report import Stage
from verifier.evidence import PplRecordScore
from verifier.harness.ppl import PplScorer
from verifier.intake import Intake, intake
from verifier.pipeline import ORGANIZER_EVIDENCE, Outcome
from verifier.precision import FINISHED_GRID_S, engine_bits
from verifier.report import RunRecord, build_documents, sign_report, write_report
from verifier.scale.queue import request as rq
from verifier.scale.queue.hold import Hold, exposed, grid_after
from verifier.scale.queue.lease import LeaseKeeper
from verifier.scale.queue.loop import conclude, conclude_failed
from verifier.scale.queue.stores import LocalQueue, describe_bundle
from verifier.scale.queue.stores.base import QueueStore
from verifier.scale.queue.stores.hub import HubQueue

#: when the request is submitted: the run's end falls in the grid cell [10:00, 10:30)
T0 = datetime(2026, 12, 6, 10, 0, 7, 123456, tzinfo=UTC)
#: the honest run's evaluation, and one stall step
BASE_S, STEP_S = 600.0, 8.0
#: the PPL records: (context, target) lengths; every target token costs the same NLL, so
#: the PPL is the same whichever records enter it (the PPL's own bits are counted apart)
SHAPES = ((3, 5), (2, 9), (4, 2), (1, 7))
NLL_PER_TOKEN = 0.75
#: (hidden in the stall, hidden in which of records 1-3 are malformed)
HIDDEN = ((0, 1), (7, 5), (3, 2), (5, 7))


class Clock:
    """The wall clock of one verification, moved by the test and by the hold's waits."""

    def __init__(self, t: datetime) -> None:
        self.t = t

    def now(self) -> datetime:
        return self.t

    def wait(self, seconds: float) -> None:
        self.t += timedelta(seconds=seconds)


@dataclass
class Trace:
    public: dict[str, bytes]
    evidence: dict[str, Any]
    report: dict[str, Any]
    #: (the clock, what) of every write to the queue and the board after the claim: a
    #: Hub store or queue makes each of them a commit, dated by the Hub
    writes: list[tuple[datetime, str]]


def _logged(obj: Any, name: str, clock: Clock, writes: list[tuple[datetime, str]]) -> None:
    """Log the clock at each call of ``obj.name`` (shadowed on the instance)."""
    original = getattr(obj, name)

    def call(*args: Any, **kwargs: Any) -> Any:
        writes.append((clock.now(), name))
        return original(*args, **kwargs)

    setattr(obj, name, call)


def _records() -> list[dict[str, Any]]:
    return [
        {
            "id": f"rec-{i}",
            "context_token_ids": list(range(10, 10 + c)),
            "target_token_ids": list(range(50, 50 + t)),
        }
        for i, (c, t) in enumerate(SHAPES)
    ]


def _ppl(malformed: int, spec: ChallengeSpec) -> dict[str, Any]:
    """The PPL metrics of a run whose records ``malformed`` (bits over records 1-3) were
    answered malformed, summed by the harness's own scorer."""
    records = _records()
    scorer = PplScorer(spec, model="m")
    for i, (c, t) in enumerate(SHAPES):
        well = not (malformed >> (i - 1)) & 1 if i else True
        tokens = c + t - max(c, 1)
        nll = NLL_PER_TOKEN * tokens if well else 0.0
        scorer.scores.append(PplRecordScore(f"rec-{i}", tokens, nll, 0.1, scored=well))
    return scorer.result(records).to_metrics(cap=spec.quality.cap)


def _walk(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()
    }


def _local(root: Path) -> tuple[QueueStore, Any]:
    return LocalQueue(root / "queue"), LocalStore(root / "board")


def _public(root: Path, queue: QueueStore, store: Any, report: Path) -> dict[str, bytes]:
    """Every file a participant or the public reads: the report, the board, the queue."""
    public = {"report": report.read_bytes()}
    if isinstance(queue, LocalQueue):
        public.update({f"board/{k}": v for k, v in _walk(root / "board").items()})
        public.update({f"queue/{k}": v for k, v in _walk(root / "queue").items()})
        return public
    snap = store.snapshot()
    public["board/log/head.json"] = snap.head or b""
    public.update({f"board/{r.path}": r.data for r in snap.records})
    public.update({f"queue/req-{r.request_id}": r.to_bytes() for r in queue.list_requests()})
    return public


def verification(
    root: Path,
    taken: Intake,
    bundle: Path,
    key: KeyPair,
    stall: int,
    malformed: int,
    make: Callable[[Path], tuple[QueueStore, Any]] = _local,
) -> Trace:
    """One verification whose engine stalls ``stall`` steps and answers the records of
    ``malformed`` malformed, ended through the queue; what it leaves where."""
    shutil.rmtree(root, ignore_errors=True)
    spec = load_challenge("tiny")
    clock = Clock(T0)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(rq, "now", clock.now)
        queue, store = make(root)
        queue.submit([describe_bundle(bundle)], by="team")
        clock.wait(1.0)
        got = queue.claim("worker-1", lease_s=3600)
        assert got is not None
        req, claim = got
        started = clock.now() + timedelta(seconds=1)
        clock.t = started + timedelta(seconds=BASE_S + STEP_S * stall)  # the engine's end
        record = RunRecord(
            spec=spec,
            mode="official",
            runner="local-docker",
            started=rq.iso(started),
            intake=taken,
            metrics={"ppl": _ppl(malformed, spec), "tps": None, "reported_tps": None},
            findings=[Finding("ppl.count-mismatch", "error", "rec-x: 3 of 9", where="rec-x")],
            stages=[
                Stage("intake", "ok", 1.0),
                Stage("ready", "ok", 2.0),
                Stage("evaluation", "ok", BASE_S + STEP_S * stall),
            ],
            organizer_evidence=ORGANIZER_EVIDENCE,
        )
        doc, evidence = build_documents(record, verdict="REJECTED", finished=rq.iso(clock.t))
        report = sign_report(doc, key)
        path = write_report(report, root / "out" / "report.json")
        clock.wait(2.5)  # the verifier's own writing and signing
        outcome = Outcome(report, path, "REJECTED", True, evidence=evidence)
        writes: list[tuple[datetime, str]] = []
        _logged(queue, "_change", clock, writes)
        for name in ("publish", "publish_key"):
            _logged(store, name, clock, writes)
        hold = Hold(clock=clock.now, wait=clock.wait)
        with LeaseKeeper(queue, 3600) as keeper:
            keeper.hold(claim)
            done = conclude(queue, keeper, req.request_id, outcome, store, key, print, hold=hold)
        assert done.state == "FINISHED", done
    return Trace(_public(root, queue, store, path), evidence, report, writes)


@pytest.fixture(scope="module")
def traces(tmp_path_factory: pytest.TempPathFactory, sample_bundle: Path) -> Iterator[list[Trace]]:
    tmp = tmp_path_factory.mktemp("hold")
    taken = intake(sample_bundle, tmp / "intake", load_challenge("tiny"))
    assert taken.ok
    key = KeyPair.generate()
    out = []
    for stall, malformed in HIDDEN:
        out.append(verification(tmp / "run", taken, sample_bundle, key, stall, malformed))
    out.append(verification(tmp / "run", taken, sample_bundle, key, 200, 1))  # past 10:30
    yield out


def test_no_hidden_bit_reaches_anything_public(traces: list[Trace]) -> None:
    first, *others = traces[: len(HIDDEN)]
    for trace in others:
        changed = sorted(k for k in first.public.keys() | trace.public.keys())
        changed = [k for k in changed if first.public.get(k) != trace.public.get(k)]
        assert not changed, changed
    report = first.report
    assert report["metrics"]["ppl"]["records"] == len(SHAPES)
    assert report["metrics"]["ppl"]["tokens"] == sum(c + t - max(c, 1) for c, t in SHAPES)
    bits = engine_bits(report, evaluation_s=load_challenge("tiny").limits.evaluation_s)
    assert not bits.unaccounted, bits.to_dict()


def test_nothing_is_written_while_the_end_is_held(traces: list[Trace]) -> None:
    for trace in traces:
        release = grid_after(rq.parse_time(trace.report["finished"]))
        assert [n for _, n in trace.writes] == ["_change", "publish_key", "publish", "_change"]
        assert {t for t, _ in trace.writes} == {release}, trace.writes


def test_the_organizers_evidence_keeps_the_whole_story(traces: list[Trace]) -> None:
    for (stall, malformed), trace in zip(HIDDEN, traces, strict=False):
        ev = trace.evidence
        took = rq.parse_time(ev["finished"]) - rq.parse_time(ev["started"])
        assert took.total_seconds() == pytest.approx(BASE_S + STEP_S * stall)
        assert ev["metrics"]["ppl"]["scored_records"] == len(SHAPES) - bin(malformed).count("1")
        assert ev["metrics"]["ppl"]["records"] == len(SHAPES)


def _times(trace: Trace) -> dict[str, str]:
    (request,) = [json.loads(v) for k, v in trace.public.items() if k.startswith("queue/req")]
    head = json.loads(trace.public["board/log/head.json"])
    stamps = {f"history[{i}]": h["at"] for i, h in enumerate(request["history"])}
    return {**stamps, "head.made_at": head["made_at"], "finished": trace.report["finished"]}


def test_a_run_that_crosses_a_grid_point_shows_only_what_finished_says(
    traces: list[Trace],
) -> None:
    for trace in (traces[0], traces[-1]):
        times = _times(trace)
        release = grid_after(rq.parse_time(times["finished"]))
        # submitted and claimed before the engine saw anything; the rest at the grid point
        assert rq.parse_time(times["history[2]"]) == release
        assert rq.parse_time(times["head.made_at"]) == release
    # the honest run's report says it started and ended in one cell (``finished`` is
    # ``started``); the long one says the next cell, and everything shows one cell later
    early, late = (rq.parse_time(_times(t)["finished"]) for t in (traces[0], traces[-1]))
    assert early == rq.parse_time(traces[0].report["started"])
    assert grid_after(late) == grid_after(early) + timedelta(seconds=FINISHED_GRID_S)


def test_the_hold_waits_for_the_grid_point_after_what_it_can_see() -> None:
    clock = Clock(datetime(2026, 12, 6, 10, 29, 58, tzinfo=UTC))
    hold = Hold(clock=clock.now, wait=clock.wait)
    ran = {"finished": "2026-12-06T10:00:00.000000Z", "stages": [{"name": "evaluation"}]}
    assert hold.release_at(ran) == datetime(2026, 12, 6, 10, 30, tzinfo=UTC)
    clock.t = datetime(2026, 12, 6, 10, 30, 4, tzinfo=UTC)  # the verifier's work crossed it
    assert hold.release_at(ran) == datetime(2026, 12, 6, 11, 0, tzinfo=UTC)
    assert hold.release_at(None) == datetime(2026, 12, 6, 11, 0, tzinfo=UTC)  # no report
    blind = {"finished": ran["finished"], "stages": [{"name": "intake", "status": "ok"}]}
    assert not exposed(blind) and hold.release_at(blind) is None  # no engine ever ran
    never_ready = {"stages": [{"name": "start"}, {"name": "ready", "status": "failed"}]}
    assert exposed(never_ready)  # the report need not tell where the held-out part began
    assert hold.until(None) == datetime(2026, 12, 6, 11, 0, tzinfo=UTC) == clock.now()


def test_a_failure_without_a_report_is_held_too(tmp_path: Path, sample_bundle: Path) -> None:
    clock = Clock(T0)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(rq, "now", clock.now)
        queue = LocalQueue(tmp_path / "queue")
        queue.submit([describe_bundle(sample_bundle)], by="team")
        got = queue.claim("worker-1", lease_s=3600)
        assert got is not None
        clock.wait(777.0)  # the engine crashed when it chose
        hold = Hold(clock=clock.now, wait=clock.wait)
        with LeaseKeeper(queue, 3600) as keeper:
            keeper.hold(got[1])
            conclude_failed(queue, keeper, got[0].request_id, "could not verify", print, hold=hold)
    (req,) = queue.list_requests()
    assert req.state == rq.FAILED
    assert rq.parse_time(req.doc["history"][-1]["at"]) == grid_after(T0)


def test_a_hub_queue_and_board_are_held_the_same_way(
    fake_hub: FakeHub, tmp_path: Path, sample_bundle: Path
) -> None:
    def hub(root: Path) -> tuple[QueueStore, Any]:
        cache = root / "cache"
        queue = HubQueue("org/queue", endpoint=fake_hub.endpoint, cache_dir=cache)
        return queue, HubStore("org/board", endpoint=fake_hub.endpoint)

    taken = intake(sample_bundle, tmp_path / "intake", load_challenge("tiny"))
    key = KeyPair.generate()
    trace = verification(tmp_path / "run", taken, sample_bundle, key, 5, 3, make=hub)
    release = grid_after(rq.parse_time(trace.report["finished"]))
    # each write is one commit, made once the end may show
    assert {t for t, _ in trace.writes} == {release}, trace.writes
    times = _times(trace)
    assert rq.parse_time(times["history[2]"]) == rq.parse_time(times["head.made_at"]) == release
    # another hidden value, on fresh repos: the same bytes in every public file
    fake_hub.repos.clear()
    other = verification(tmp_path / "run", taken, sample_bundle, key, 2, 6, make=hub)
    assert other.public == trace.public


def test_a_second_signal_during_the_hold_lets_the_request_go_unpublished(
    tmp_path: Path, sample_bundle: Path
) -> None:
    clock = Clock(T0)

    def interrupted(_seconds: float) -> None:
        raise KeyboardInterrupt

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(rq, "now", clock.now)
        queue = LocalQueue(tmp_path / "queue")
        queue.submit([describe_bundle(sample_bundle)], by="team")
        got = queue.claim("worker-1", lease_s=3600)
        assert got is not None
        hold = Hold(clock=clock.now, wait=interrupted)
        with LeaseKeeper(queue, 3600) as keeper, pytest.raises(KeyboardInterrupt):
            keeper.hold(got[1])
            conclude_failed(queue, keeper, got[0].request_id, "could not verify", print, hold=hold)
    (req,) = queue.list_requests()
    assert req.state == rq.PENDING and req.doc["result"] is None
