"""The verifier's reference engine: in its own process on a GPU, in the verifier's on a CPU.

The in-process reference is the same engine code on the same weights, so it must score
exactly as the process one that the calibration table was measured with; loaded ahead,
it must open nothing before it is started; cleanup must end whatever it still computes
and give its model back.
"""

from __future__ import annotations

import asyncio
import dataclasses
import os
import time
import weakref
from pathlib import Path

import pytest

from schemas.challenge import ReferenceEngine, load_challenge
from verifier.declared import DeclaredModel
from verifier.evidence.parse import listed_values
from verifier.harness.client import EngineClient, wait_ready
from verifier.harness.ppl import ppl_request
from verifier.runners.base import EngineHandle
from verifier.runners.process import ProcessRunner
from verifier.runners.reference_engine import InProcessReference, ProcessReference, reference_runner

MODEL = Path(__file__).resolve().parents[2] / "podium" / "data" / "tiny" / "model"
WINDOWED = DeclaredModel(dtype="float32", sliding_window=16, applied={"SLIDING_WINDOW": 16})
#: token-id prompts longer than the window, so that the window changes the scores
PROMPTS = [[2, *range(100, 160)], [2, *range(300, 340)], [2, 17, 42, 9, 1000, 5, 77]]


def test_a_cpu_reference_runs_in_process_and_any_other_in_a_process_of_its_own() -> None:
    cpu = reference_runner(ReferenceEngine(dtype="float32", device="cpu", logit_cells=4096))
    assert isinstance(cpu, InProcessReference)
    assert cpu.device == "cpu" and cpu.dtype == "float32"
    assert cpu.engine_kwargs == {"logit_cells": 4096}
    windowed = reference_runner(ReferenceEngine(dtype="float32", device="cpu"), WINDOWED)
    assert isinstance(windowed, InProcessReference)
    assert windowed.engine_kwargs == {"sliding_window": 16}

    gpu = reference_runner(ReferenceEngine(dtype="bfloat16", device="cuda", logit_cells=64))
    assert isinstance(gpu, ProcessReference)
    assert gpu.device == "cuda" and gpu.dtype == "bfloat16" and gpu.engine_root is None
    # the reference proves its attention path at start and writes what it found for us
    self_test = {"SELF_TEST": "on", "SELF_TEST_REPORT": str(gpu.report_path)}
    assert gpu.env == {"LOGIT_CELLS": "64", **self_test}
    declared = dataclasses.replace(WINDOWED, dtype="float16")
    gpu = reference_runner(ReferenceEngine(dtype="bfloat16", device="cuda"), declared)
    assert isinstance(gpu, ProcessReference)
    self_test = {"SELF_TEST": "on", "SELF_TEST_REPORT": str(gpu.report_path)}
    assert gpu.dtype == "float16" and gpu.env == {"SLIDING_WINDOW": "16", **self_test}


def _scores(handle: EngineHandle) -> list[list[dict[int, float]]]:
    spec = load_challenge("tiny")

    async def go() -> list[list[dict[int, float]]]:
        model = await wait_ready(handle.base_url, 120, is_alive=handle.is_alive)
        async with EngineClient(handle.base_url, timeout_s=60) as client:
            out = []
            for ids in PROMPTS:
                reply = await client.complete(ppl_request(spec, model, ids), kind="score")
                assert reply.prompt_logprobs is not None
                out.append([listed_values(e) for e in reply.prompt_logprobs[1:]])
            return out

    return asyncio.run(go())


def _scored_by(runner: ProcessRunner | InProcessReference) -> list[list[dict[int, float]]]:
    handle = runner.start(load_challenge("tiny"), model_dir=MODEL, gpu=False)
    try:
        return _scores(handle)
    finally:
        handle.stop()
        runner.cleanup()


def _process_scores(declared: DeclaredModel | None) -> list[list[dict[int, float]]]:
    """The reference as it ran before it moved in-process: a process of its own."""
    return _scored_by(
        ProcessRunner(
            engine_root=None,
            served_model_name="reference",
            env=declared.engine_env() if declared else {},
            device="cpu",
            dtype=load_challenge("tiny").reference.dtype,
        )
    )


def _in_process_scores(declared: DeclaredModel | None) -> list[list[dict[int, float]]]:
    reference = reference_runner(load_challenge("tiny").reference, declared)
    assert isinstance(reference, InProcessReference)
    return _scored_by(reference)


@pytest.mark.slow
@pytest.mark.parametrize("declared", [None, WINDOWED], ids=["as-pinned", "window-16"])
def test_the_in_process_reference_scores_exactly_as_the_process_one(
    declared: DeclaredModel | None,
) -> None:
    """Same engine, same weights, same dtype, same threads: the same logprobs to the bit,
    so the calibration of the reference checks holds for both."""
    scores = _in_process_scores(declared)
    assert scores == _process_scores(declared)
    if declared is not None:  # and the declared window is really what ran
        assert scores != _in_process_scores(None)


def _sockets() -> set[str]:
    fds = Path("/proc/self/fd")
    out = set()
    for fd in fds.iterdir():
        try:
            target = os.readlink(fd)
        except OSError:
            continue
        if target.startswith("socket:"):
            out.add(target)
    return out


@pytest.mark.slow
def test_a_loaded_reference_opens_nothing_until_started_and_frees_its_model() -> None:
    spec = load_challenge("tiny")
    reference = reference_runner(spec.reference)
    assert isinstance(reference, InProcessReference)
    before = _sockets()
    reference.load(MODEL)
    assert reference.loaded and _sockets() == before, "loading opened a socket"
    engine = weakref.ref(reference._engine)  # type: ignore[arg-type]
    handle = reference.start(spec, model_dir=MODEL, gpu=False)
    assert handle.is_alive() and engine() is reference._engine, "started without reloading"
    assert _sockets() - before, "started, it listens"
    handle.stop()
    assert not handle.is_alive() and _sockets() == before
    reference.cleanup()
    del handle
    assert engine() is None, "the model outlived cleanup"


def test_a_reference_that_cannot_load_says_why() -> None:
    reference = InProcessReference(device="cpu", dtype="float32", engine_kwargs={})
    from podium.errors import EngineError

    with pytest.raises(EngineError, match=r"could not load .*nowhere"):
        reference.load(Path("/nowhere"))
    assert not reference.loaded


def test_a_cancelled_engine_stops_at_its_next_chunk_or_token() -> None:
    from engines.baseline.model import BaselineEngine, Cancelled
    from engines.baseline.protocol import SamplingParams

    engine = BaselineEngine(MODEL)
    greedy = SamplingParams(
        max_tokens=8,
        temperature=0.0,
        top_p=1.0,
        top_k=0,
        seed=0,
        ignore_eos=True,
        min_tokens=0,
        stop_token_ids=(),
        logprobs=None,
    )
    assert len(list(engine.start(PROMPTS[2], greedy, None))) == 8
    engine.cancelled.set()
    with pytest.raises(Cancelled):
        list(engine.start(PROMPTS[2], greedy, None))
    with pytest.raises(Cancelled):
        engine.prefill(PROMPTS[0], prompt_logprobs=1)
    with pytest.raises(Cancelled):
        engine.prefill_batch(PROMPTS[:2], prompt_logprobs=1)


def _generate(url: str, max_tokens: int, timeout_s: float) -> None:
    import httpx

    body = {
        "model": "reference",
        "prompt": PROMPTS[2],
        "max_tokens": max_tokens,
        "temperature": 0.0,
        "ignore_eos": True,
    }
    httpx.post(f"{url}/v1/completions", json=body, timeout=timeout_s).raise_for_status()


@pytest.mark.serial
@pytest.mark.slow
def test_cleanup_ends_a_request_the_client_gave_up_on() -> None:
    """The client's deadline passed (the reference phase then fails the run): the request
    would go on computing in the verifier's process, beside the next verification's timed
    work. Cleanup cancels it; the engine stops within a step and lets go of the model."""
    import httpx

    spec = load_challenge("tiny")
    reference = reference_runner(spec.reference)
    assert isinstance(reference, InProcessReference)
    handle = reference.start(spec, model_dir=MODEL, gpu=False)
    asyncio.run(wait_ready(handle.base_url, 60))
    long = 4000
    t0 = time.perf_counter()
    _generate(handle.base_url, long, timeout_s=300)
    whole = time.perf_counter() - t0
    with pytest.raises(httpx.TimeoutException):
        _generate(handle.base_url, long, timeout_s=0.2)
    engine = weakref.ref(reference._engine)  # type: ignore[arg-type]
    t0 = time.perf_counter()
    handle.stop()
    reference.cleanup()
    took = time.perf_counter() - t0
    assert took < whole / 4, f"cleanup took {took:.2f} s; the whole answer takes {whole:.2f} s"
    del handle
    for _ in range(50):  # the request's thread unwinds its frames right after
        if engine() is None:
            break
        time.sleep(0.1)
    assert engine() is None, "the cancelled request still holds the model"
