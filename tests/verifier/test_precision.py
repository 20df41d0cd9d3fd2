"""The public report says each engine-made number on its grid, and its bits add up.

``verifier.precision`` projects the full document (the organizer's evidence) onto what a
participant and the public read, and counts the bits an engine could choose in it. Here on
reports built from run records directly (no engine): every kind a run can end as, the
grids' edges, the accountant catching a number with no grid, and a report that would carry
more than ``NUMBER_BITS`` refused before it is signed. (Every report the slow tests' runs
produce goes through the same refusal in ``verifier.report.public_of``.)
"""

from __future__ import annotations

import copy
import math
import random
from typing import Any

import pytest

from schemas.challenge import load_challenge
from schemas.check_ids import CATALOG
from schemas.findings import Finding
from schemas.report import CheckResult, Failure, Stage
from verifier import precision
from verifier.intake import Intake
from verifier.precision import (
    NUMBER_BITS,
    count_significant,
    engine_bits,
    ppl_public,
    public_report,
    tps_public,
)
from verifier.precision.words import blind
from verifier.report import RunRecord, TooPrecise, build_documents, public_of

SPEC = load_challenge("tiny")
GEMMA = load_challenge("fast-gemma")
CAP = SPEC.quality.reference_ppl * SPEC.quality.max_ratio  # type: ignore[operator]

TRIALS = [172.60660053519737, 166.955602793717, 186.6439776512025]


def metrics(ppl: float | None = 23.404752481086458) -> dict[str, Any]:
    return {
        "ppl": {
            "value": ppl,
            "engine_value": 23.40475219344332,
            "cap": CAP,
            "nll_sum": 4515.008772490255,
            "tokens": 1432,
            "records": 16,
        },
        "tps": {
            "median": 172.60660053519737,
            "mean": 175.40206032670562,
            "cv": 0.05779580501719755,
            "ci95": [150.2170735955325, 200.58704705787875],
            "trials": [{"index": i, "tps": t, "seconds": 256 / t} for i, t in enumerate(TRIALS)],
            "tokens_per_trial": 256,
            "concurrency": 1,
            "max_tokens": 32,
            "distinct_prompts": 1024,
            "repeated_requests": 0,
            "stability": {"cv": 0.0578, "trials_run": 3, "why": "3 planned trials"},
        },
        "reported_tps": 170.0,
        "baseline_tps": 473.9,
        "speedup": 172.60660053519737 / 473.9,
    }


RECORDS = [
    {"id": f"ppl-heldout-{i:02d}", "engine_nll_per_token": 3.0 + random.random(), "tokens": 50}
    for i in range(16)
]


def judged_checks(status: str = "pass") -> list[CheckResult]:
    return [
        CheckResult("reference.self-test", "pass", "sdpa agrees with eager (worst 9.5e-06)"),
        CheckResult("ppl.cap", status, "PPL 23.405 <= cap 24.575", {"ppl": 23.404752481086458}),
        CheckResult(
            "ppl.reference-mismatch",
            status,
            "16 sampled records: from -0.0000 to +0.0000 nats per token",
            {"records": RECORDS, "mean_delta_nats": 7.585368727921774e-09},
        ),
        CheckResult("tps.unstable", "pass", "the trials agree: CV 0.058", {"trials": TRIALS}),
        CheckResult("tps.reproduction", status, "blind 172.6 vs reported 170.0"),
        CheckResult("integrity.reference-decode", status, "mean gap 0.0123 nats (allowed 0.0100)"),
    ]


def stages(failed: str | None = None) -> list[Stage]:
    names = ["intake", "environment", "data", "weights", "rebuild", "start", "tokenizer"]
    names += ["reference-load", "isolation", "ready", "evaluation", "checks", "harness"]
    names += ["stop", "cleanup", "reference", "reference-engine", "teardown", "verdict"]
    out = []
    for i, n in enumerate(names):
        note = "boom 17 at 3" if n == failed else None
        out.append(Stage(n, "failed" if n == failed else "ok", 0.123 + i, note))
    return out


def record(**over: Any) -> RunRecord:
    args: dict[str, Any] = dict(
        spec=SPEC,
        mode="official",
        runner="test-sandbox",
        started="2026-12-03T12:46:01.123456Z",
        intake=Intake(bundle_sha256="c" * 64, root=None, manifest=None, manifest_sha256=None),
        metrics=metrics(),
        checks=judged_checks(),
        stages=stages(),
        runtime={"prefix_cache_hits": 12345, "version": "0.11.0"},
        organizer_log="engine.log",
        organizer_evidence="organizer/evidence.json",
    )
    args.update(over)
    return RunRecord(**args)


def documents(verdict: str = "VERIFIED", **over: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    return build_documents(record(**over), verdict=verdict, finished="2026-12-03T13:47:31.5Z")


def bits_of(doc: dict[str, Any], spec: Any = SPEC) -> precision.Bits:
    return engine_bits(doc, evaluation_s=spec.limits.evaluation_s)


# -- the grids ---------------------------------------------------------------------------------


def test_counting_the_values_of_a_grid() -> None:
    assert count_significant(1, 9.99, 3) == 900
    assert count_significant(1, 10, 3) == 901
    assert count_significant(0.1, 1e6, 3) == 7 * 900 + 1
    assert count_significant(12.3, 12.3, 3) == 1


def test_a_ppl_reads_on_the_side_of_the_cap_it_was_judged_on() -> None:
    cap = 2.415
    assert ppl_public(2.4149, cap) == 2.41  # nearest would read 2.41 too, but
    assert ppl_public(2.4150, cap) == 2.41  # at the cap: under it
    assert ppl_public(2.4151, cap) == 2.42  # over it, never reads as under
    assert ppl_public(2.3929, cap) == 2.39
    assert ppl_public(9.53, cap) == 9.6  # far from the cap: 2 digits, up
    assert ppl_public(None, cap) is None and ppl_public(math.inf, cap) is None
    assert ppl_public(0.5, cap) == 1.0 and ppl_public(1e9, cap) == 1e4


def test_tps_has_three_digits_and_a_range() -> None:
    assert tps_public(172.60660053519737) == 173.0
    assert tps_public(510.58) == 511.0
    assert tps_public(0.0) == 0.0 and tps_public(-1.0) == 0.0
    assert tps_public(1e-5) == 0.1 and tps_public(1e9) == 1e6


# -- the projection ----------------------------------------------------------------------------


def test_a_verified_report_has_aggregates_only_and_the_evidence_everything() -> None:
    doc, evidence = documents()
    assert evidence["kind"] == "podium.evidence" and evidence["report_id"] == doc["report_id"]
    assert evidence["metrics"] == record().metrics  # the organizer's: full precision
    assert evidence["checks"][2]["details"]["records"] == RECORDS
    assert evidence["runtime"] == {"prefix_cache_hits": 12345, "version": "0.11.0"}
    m = doc["metrics"]
    assert m["ppl"] == {"value": 23.4, "cap": CAP, "tokens": 1432, "records": 16}
    assert m["tps"] == {
        "median": 173.0,
        "ci95": [138.0, 208.0],  # the narrowest on the grid (20 %) that holds the interval
        "tokens_per_trial": 256,
        "concurrency": 1,
        "max_tokens": 32,
        "distinct_prompts": 1024,
    }
    assert m["speedup"] == 0.365 and m["reported_tps"] == 170.0
    assert all("details" not in c for c in doc["checks"]) and "runtime" not in doc
    summaries = {c["id"]: c["summary"] for c in doc["checks"]}
    assert summaries["reference.self-test"] == "sdpa agrees with eager (worst 9.5e-06)"
    assert summaries["ppl.cap"] == f"PPL 23.4 <= cap {CAP:g}"
    assert summaries["tps.unstable"] == "the timed trials agree within the challenge's bound"
    assert "0.0123" not in str(doc) and "7.585" not in str(doc)
    timed = {s["name"]: s for s in doc["stages"]}
    assert timed["ready"]["seconds"] == 9.123 and "seconds" not in timed["evaluation"]
    assert doc["finished"] == "2026-12-03T13:30:00.000000Z"
    assert doc["organizer_evidence"] == "organizer/evidence.json"


def test_a_rejected_report_says_which_rules_broke_in_the_catalogue_words() -> None:
    findings = [
        Finding("ppl.reference-mismatch", "error", "record 3 is 0.0312 nats better", where="r3"),
        Finding("ppl.reference-mismatch", "error", "record 9 is 0.0451 nats better", where="r9"),
        Finding("ppl.cap", "error", "PPL 30.123 > cap 24.575", hint="the cap is 24.575"),
        Finding("config.unknown-knob", "warning", "MAX_MODEL_LENN is one typo from 2 knobs"),
    ]
    doc, evidence = documents(
        "REJECTED",
        metrics=metrics(ppl=30.123),
        checks=judged_checks("fail"),
        findings=findings,
    )
    assert len(evidence["findings"]) == 4
    # made before any held-out request: as it was; the rest once each, in the catalogue's
    # order (not the order they fired in, which is the engine's to choose)
    knob, cap, mismatch = doc["findings"]
    assert knob["message"] == "MAX_MODEL_LENN is one typo from 2 knobs"
    assert cap["message"] == f"PPL 30.2 > cap {CAP:g}" and cap["hint"] is None
    assert mismatch["check_id"] == "ppl.reference-mismatch" and mismatch["where"] is None
    assert mismatch["message"].startswith("does not hold: the engine scores sampled PPL")
    assert "0.0312" not in str(doc["findings"])
    forged = copy.deepcopy(doc)
    forged["findings"][1:] = forged["findings"][:0:-1]
    assert "findings (order)" in bits_of(forged).unaccounted
    assert bits_of(doc).number_bits <= NUMBER_BITS


def test_a_failed_report_keeps_the_failure_numbers_the_budget_leaves() -> None:
    message = "TPS trial 1 request #57: HTTP 500 from /v1/chat/completions (a body of 12345 bytes)"
    doc, evidence = documents(
        "FAILED",
        metrics={"ppl": None, "tps": None, "reported_tps": None},
        checks=[],
        stages=stages(failed="evaluation"),
        failure=Failure("evaluation", message),
    )
    assert evidence["failure"]["message"] == message
    # two numbers fit in what the report's other numbers (finished and its publication)
    # leave of the budget on tiny
    said = doc["failure"]["message"]
    assert said == (
        "TPS trial 1 request #57: HTTP ... from /v1/chat/completions (a body of ... bytes)"
    )
    bits = bits_of(doc)
    assert bits.numbers["failure.message"] == 2 * precision.FAILURE_NUMBER_BITS
    assert bits.number_bits <= NUMBER_BITS and not bits.unaccounted
    failed = next(s for s in doc["stages"] if s["name"] == "evaluation")
    assert failed == {"name": "evaluation", "status": "failed"}  # its note was the message
    # before the engine saw anything held out, the words stay as they were
    early, _ = documents(
        "FAILED",
        metrics={"ppl": None, "tps": None, "reported_tps": None},
        checks=[],
        stages=stages(failed="start"),
        failure=Failure("start", "the engine exited with code 137 after 12.5 s"),
    )
    assert early["failure"]["message"] == "the engine exited with code 137 after 12.5 s"


@pytest.mark.parametrize("spec", [SPEC, GEMMA], ids=["tiny", "fast-gemma"])
def test_every_kind_of_report_stays_under_the_bound(spec: Any) -> None:
    kinds = {
        "VERIFIED": {},
        "REJECTED": {"checks": judged_checks("fail"), "metrics": metrics(ppl=99.9)},
        "FAILED": {
            "metrics": {"ppl": None, "tps": None, "reported_tps": None},
            "failure": Failure("reference", "record 12 of 16: position 40 lacks 7 of 9 tokens"),
            "stages": stages(failed="reference"),
        },
        "UNOFFICIAL": {"metrics": metrics(ppl=None)},
    }
    for verdict, over in kinds.items():
        doc, _ = build_documents(record(spec=spec, **over), verdict=verdict)
        bits = engine_bits(doc, evaluation_s=spec.limits.evaluation_s)
        assert not bits.unaccounted, (verdict, bits.unaccounted)
        assert bits.number_bits <= NUMBER_BITS, (verdict, bits.to_dict())


def test_the_stated_numbers_for_a_verified_report() -> None:
    doc, _ = documents()
    tiny, gemma = bits_of(doc), bits_of(doc, GEMMA)
    assert tiny.numbers == pytest.approx(
        {
            "metrics.ppl.value": math.log2(precision.ppl_values(CAP)),
            "metrics.tps.median": math.log2(6302),
            "metrics.tps.ci95": math.log2(20),
            "finished": 1.0,  # 600 s of evaluation and as long judging it: 2 times
            "publication": 1.0,  # the grid point after finished, or the next
        }
    )
    assert 27 < tiny.number_bits < 29 and 29 < gemma.number_bits <= NUMBER_BITS


# -- the accountant ----------------------------------------------------------------------------


def test_a_number_off_its_grid_or_with_no_grid_is_counted_in_full() -> None:
    doc, _ = documents()
    for path, change in [
        ("metrics.tps.ci95", lambda d: d["metrics"]["tps"].__setitem__("ci95", [150.21, 200.58])),
        ("metrics.speedup", lambda d: d["metrics"].__setitem__("speedup", 0.36422578716)),
        ("metrics.tps.mean", lambda d: d["metrics"]["tps"].__setitem__("mean", 175.4020603)),
        ("stages[10].seconds", lambda d: d["stages"][10].__setitem__("seconds", 9.84)),
        ("checks[3].summary", lambda d: d["checks"][3].__setitem__("summary", "CV 0.0577958")),
        ("finished", lambda d: d.__setitem__("finished", "2026-12-03T13:47:31.500000Z")),
    ]:
        forged = copy.deepcopy(doc)
        change(forged)
        bits = bits_of(forged)
        assert any(u.startswith(path) for u in bits.unaccounted), (path, bits.unaccounted)
        assert bits.number_bits > NUMBER_BITS


def test_a_report_over_the_bound_is_never_built(monkeypatch: pytest.MonkeyPatch) -> None:
    _, evidence = documents()
    monkeypatch.setattr(precision, "NUMBER_BITS", 20.0)
    with pytest.raises(TooPrecise, match="at most 20"):
        public_of(evidence, SPEC)


def test_the_projection_of_a_projection_is_itself() -> None:
    doc, _ = documents()
    again = public_report(doc, evaluation_s=SPEC.limits.evaluation_s)
    assert {k: v for k, v in again.items() if k != "report_id"} == {
        k: v for k, v in doc.items() if k != "report_id"
    }


def test_a_rule_seen_at_run_time_is_said_in_podium_words_and_one_at_intake_as_it_was() -> None:
    seen = "raw logits (--logprobs-mode raw_logits, 12 args) (seen at run time in vLLM's arguments)"
    findings = [
        Finding("engine.logprobs-mode", "error", seen, where="runtime"),
        Finding("engine.precache", "error", "PRECACHE_BENCH=1 is forbidden", where="podium.toml"),
    ]
    doc, evidence = documents("REJECTED", findings=findings)
    assert evidence["findings"][0]["message"] == seen
    intake, runtime = doc["findings"]
    assert runtime["message"] == "the engine ran with a setting the challenge forbids"
    assert runtime["where"] == "runtime"
    assert intake == {**findings[1].to_dict()}
    bits = engine_bits(doc, evaluation_s=SPEC.limits.evaluation_s, rules=4)
    judged_ids = [i for i in CATALOG if not blind(i)]  # the ids judged after exposure
    assert bits.outcome["findings (which)"] == pytest.approx(math.log2(len(judged_ids) + 4 + 1))
