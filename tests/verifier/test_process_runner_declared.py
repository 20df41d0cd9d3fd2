"""The process runner serves the engine a bundle declares, knob by knob.

Each test packages the sample baseline entry with one knob, opens it as the verifier does,
starts it through ``ProcessRunner.prepare`` and ``start`` (a real engine process), and
scores the first public PPL records of ``tiny`` through it. The same records scored by an
in-process ``BaselineEngine`` built with the knob's arguments give the value the declared
engine must give; the plain engine's value shows that the knob changed something. A
bundle whose image the process cannot reproduce is refused before any engine starts.
"""

from __future__ import annotations

import asyncio
import json
import math
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from entry_bundle import REPO, entry_source, packaged
from harness_util import score_ppl

from podium.errors import UsageError
from schemas.challenge import load_challenge
from verifier.harness.client import EngineClient, wait_ready
from verifier.intake import intake
from verifier.runners.process import ProcessRunner

MODEL = REPO / "podium" / "data" / "tiny" / "model"
RECORDS = 3
#: two scorings of one model by one code on one CPU agree to float32 rounding
SAME = 1e-4

SPEC = load_challenge("tiny")

MARKED_ENGINE = '''"""A baseline engine that marks each usage it reports."""

from engines.baseline.model import BaselineEngine


class Marked(BaselineEngine):
    def report_usage(self, prompt_ids, output_ids):
        return {**super().report_usage(prompt_ids, output_ids), "declared_class": 1}
'''


def records() -> list[dict[str, Any]]:
    path = REPO / "podium" / "data" / "tiny" / "ppl-public.jsonl"
    lines = path.read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines[:RECORDS]]


def ppl_at(url: str) -> float:
    async def score() -> float:
        async with EngineClient(url, timeout_s=120.0) as client:
            model = await client.served_model()
            result = await score_ppl(client, SPEC, records(), model=model)
        return float(result.value)

    return asyncio.run(score())


@contextmanager
def declared_engine(tmp_path: Path, **knobs: Any) -> Iterator[str]:
    """The URL of the bundle's engine, started by the process runner from the bundle."""
    bundle = packaged(entry_source(tmp_path, **knobs))
    taken = intake(bundle, tmp_path / "work", SPEC, rebuilds=False)  # the process runner
    assert not [f for f in taken.findings if f.severity == "error"], taken.findings
    runner = ProcessRunner()
    runner.prepare(taken, SPEC, on_log=lambda line: None)
    handle = runner.start(SPEC, model_dir=MODEL, gpu=False)
    try:
        try:
            asyncio.run(wait_ready(handle.base_url, 120.0, handle.is_alive))
        except Exception as exc:
            raise AssertionError(f"the engine did not start: {handle.logs(3000)}") from exc
        yield handle.base_url
    finally:
        handle.stop()
        runner.cleanup()


def in_process_ppl(**kwargs: Any) -> float:
    """The records' PPL through a ``BaselineEngine`` built with ``kwargs`` in this process."""
    from engines.baseline.api import Api
    from engines.baseline.model import BaselineEngine
    from engines.baseline.server import EngineServer

    engine = BaselineEngine(MODEL, device="cpu", **kwargs)
    server = EngineServer(Api(engine, "model"), "127.0.0.1", 0).start()
    try:
        return ppl_at(server.url)
    finally:
        server.stop()


@pytest.fixture(scope="module")
def plain_ppl() -> float:
    return in_process_ppl(dtype="float32")


@pytest.mark.slow
def test_a_declared_sliding_window_is_served(tmp_path: Path, plain_ppl: float) -> None:
    with declared_engine(tmp_path, config={"SLIDING_WINDOW": 16}) as url:
        served = ppl_at(url)
    windowed = in_process_ppl(dtype="float32", sliding_window=16)
    assert math.isclose(served, windowed, rel_tol=SAME), (served, windowed)
    assert not math.isclose(served, plain_ppl, rel_tol=100 * SAME), (served, plain_ppl)


@pytest.mark.slow
def test_a_declared_int8_quantization_is_served(tmp_path: Path, plain_ppl: float) -> None:
    with declared_engine(tmp_path, config={"QUANTIZATION": "int8"}) as url:
        served = ppl_at(url)
    quantised = in_process_ppl(dtype="float32", quantization="int8")
    assert math.isclose(served, quantised, rel_tol=SAME), (served, quantised)
    assert not math.isclose(served, plain_ppl, rel_tol=10 * SAME), (served, plain_ppl)


@pytest.mark.slow
def test_a_declared_bfloat16_dtype_is_served(tmp_path: Path, plain_ppl: float) -> None:
    with declared_engine(tmp_path, config={"DTYPE": "bfloat16"}) as url:
        served = ppl_at(url)
    halved = in_process_ppl(dtype="bfloat16")
    # bfloat16 moves the tiny model's PPL by little: the served value sits with the
    # bfloat16 engine's, far closer than the float32 engine's
    assert abs(served - halved) * 10 < abs(served - plain_ppl), (served, halved, plain_ppl)


@pytest.mark.slow
def test_a_declared_engine_class_is_served(tmp_path: Path) -> None:
    knobs = {
        "env": {"ENGINE_CLASS": "marked:Marked"},
        "files": {"engine/marked.py": MARKED_ENGINE},
    }
    with declared_engine(tmp_path, **knobs) as url:
        body = json.dumps(
            {
                "model": "podium/tiny-gemma4",
                "messages": [{"role": "user", "content": "Hello"}],
                "max_tokens": 2,
                "temperature": 0,
            }
        ).encode()
        request = urllib.request.Request(
            f"{url}/v1/chat/completions", body, {"Content-Type": "application/json"}
        )
        with urllib.request.urlopen(request, timeout=60) as response:
            answer = json.loads(response.read())
    assert answer["usage"]["declared_class"] == 1, answer["usage"]


def test_a_bundle_whose_image_runs_a_step_is_refused_before_its_engine_starts(
    tmp_path: Path,
) -> None:
    dockerfile = (REPO / "examples" / "tiny-baseline" / "Dockerfile").read_text(encoding="utf-8")
    dockerfile = dockerfile.replace("EXPOSE 8000\n", "RUN pip install fastkernels\nEXPOSE 8000\n")
    bundle = packaged(entry_source(tmp_path, files={"Dockerfile": dockerfile}))
    taken = intake(bundle, tmp_path / "work", SPEC, rebuilds=False)  # the process runner
    runner = ProcessRunner()
    with pytest.raises(UsageError, match="RUN step"):
        runner.prepare(taken, SPEC, on_log=lambda line: None)
    assert runner.bundle is None


@pytest.mark.slow
def test_a_declared_window_of_16_verifies_clean_through_podium_verify_with_the_process_runner(
    tmp_path: Path,
) -> None:
    """The windowed entry's PPL is the windowed model's, and no check calls it a flatterer
    or its decode lossier than the budget allows (under the budget rule the reference is
    the pinned model)."""
    bundle = packaged(entry_source(tmp_path, config={"SLIDING_WINDOW": 16}))
    out = tmp_path / "out"
    command = [sys.executable, "-m", "podium.cli.app", "verify", str(bundle)]
    command += ["--runner", "process", "--challenge", "tiny", "-o", str(out), "--json"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=600, check=False)
    assert (out / "report.json").is_file(), done.stdout[-2000:] + done.stderr[-2000:]
    report = json.loads((out / "report.json").read_text(encoding="utf-8"))
    assert report["verdict"] == "UNOFFICIAL", (report["failure"], report["findings"])
    # on the public set: the process runner has no sandbox, so it is never given the
    # held-out one (the windowed model's PPL on the held-out records is 24.276)
    assert report["heldout"]["public"] is True
    evidence = json.loads((out / "organizer" / "evidence.json").read_text(encoding="utf-8"))
    assert evidence["metrics"]["ppl"]["value"] == pytest.approx(21.243, abs=0.001)
    assert report["metrics"]["ppl"]["value"] == 21.2  # the public report: 3 digits
    bad = [c for c in report["checks"] if c["status"] in ("fail", "error")]
    assert not bad, bad
    statuses = {c["id"]: c["status"] for c in report["checks"]}
    assert statuses["reference.self-test"] == "pass"
