"""The pipeline's entry points: one call evaluates an engine; stages and failures are data."""

from __future__ import annotations

from typing import Any

from fake_engine import EOS, FakeEngine, Misbehave, retokenize
from harness_util import ppl_records, prompts, small_spec

from podium.errors import EngineError
from schemas.validate import validate
from verifier.harness import HarnessResult, compare_greedy_identity, run_harness

SPEC = small_spec()


def evaluate(engine: FakeEngine, **kw: Any) -> HarnessResult:
    return run_harness(
        engine.url,
        SPEC,
        public_prompts=prompts("pub", 3),
        heldout_prompts=prompts("held", 6),
        ppl_records=ppl_records(3),
        eos_token_ids=[EOS],
        tokenize=retokenize,
        **kw,
    )


def test_an_honest_engine_runs_every_stage_and_check() -> None:
    events: list[str] = []
    with FakeEngine(rate=400) as engine:
        result = evaluate(engine, reported_tps=390.0, progress=lambda s, d, n: events.append(s))
    assert [(s.name, s.status) for s in result.stages] == [
        ("ready", "ok"),
        ("ppl", "ok"),
        ("tps", "ok"),
        ("integrity", "ok"),
    ]
    assert result.failure is None and result.model == "fake/arith-64"
    statuses = {c.id: c.status for c in result.checks}
    assert statuses == {
        "ppl.cap": "fail",  # the arithmetic model is no Gemma
        "tps.reproduction": statuses["tps.reproduction"],
        "integrity.lengths": "pass",
        "integrity.same-path": "pass",
        "integrity.caching": "pass",
    }
    assert [f.check_id for f in result.findings if f.check_id != "tps.reproduction"] == ["ppl.cap"]
    assert "ppl" in events and "tps trial 1/2" in events
    assert result.greedy_sample is not None and len(result.greedy_sample.items) == 3
    # the metrics fit the report schema's member
    metrics = result.metrics(SPEC, reported_tps=390.0)
    schema_doc = {"metrics": metrics}
    assert set(metrics["tps"]) <= {
        "median",
        "mean",
        "cv",
        "ci95",
        "trials",
        "tokens_per_trial",
        "concurrency",
        "max_tokens",
    }
    assert metrics["ppl"]["cap"] == SPEC.quality.cap
    assert schema_doc["metrics"]["tps"]["tokens_per_trial"] == 64

    with FakeEngine() as reference:
        outcome = compare_greedy_identity(reference.url, SPEC, result.greedy_sample)
    assert outcome.result.status == "pass"


def test_a_crash_fails_its_stage_and_skips_the_rest() -> None:
    with FakeEngine(bad=Misbehave(crash_after=5)) as engine:
        result = evaluate(engine)
    assert [(s.name, s.status) for s in result.stages] == [
        ("ready", "ok"),
        ("ppl", "ok"),
        ("tps", "failed"),
        ("integrity", "skipped"),
    ]
    assert result.failure is not None and result.failure.stage == "tps"
    assert isinstance(result.error, EngineError)
    assert result.ppl is not None and result.tps is None and not result.checks


def test_an_engine_that_never_gets_ready_fails_the_ready_stage() -> None:
    with FakeEngine() as engine:
        url = engine.url
    result = run_harness(
        url,
        SPEC,
        public_prompts=[],
        heldout_prompts=[],
        ppl_records=[],
        ready_timeout_s=0.5,
    )
    assert result.stages[0].name == "ready" and result.stages[0].status == "failed"
    assert [s.status for s in result.stages[1:]] == ["skipped"] * 3


def test_the_report_schema_accepts_the_harness_output() -> None:
    with FakeEngine(rate=2000) as engine:
        result = evaluate(engine, reported_tps=1000.0)
    doc = {
        "schema_version": 1,
        "kind": "podium.report",
        "report_id": "0" * 16,
        "verdict": "REJECTED",
        "mode": "self-check",
        "challenge": {"id": SPEC.id, "version": SPEC.version, "spec_sha256": SPEC.sha256},
        "submission": {"team": "t", "entry": "e", "bundle_sha256": "a" * 64},
        "environment": {"fingerprint_sha256": "b" * 64, "official_hardware": False},
        "metrics": result.metrics(SPEC, reported_tps=1000.0),
        "checks": [c.to_dict() for c in result.checks],
        "findings": [f.to_dict() for f in result.findings],
        "stages": [s.to_dict() for s in result.stages],
        "toolkit": {"name": "podium", "version": "0"},
        "started": "2026-01-01T00:00:00Z",
        "finished": "2026-01-01T00:01:00Z",
    }
    validate("report", doc)
