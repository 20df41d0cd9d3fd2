"""The GPU-machine runs as tests (``-m gpu``): skipped where no CUDA GPU is present.

On the GPU machine (no Docker there: engines run as plain processes):

    bash bench/gpu.sh        # installs the carried wheels it lacks, then these tests

The whole verifications on the GPU (``calibration/gpu_verify.py``) are
``tests/calibration/test_gpu_verifications.py``, which the same script runs.
``test_the_e4b_shape_decodes_on_the_gpu_under_the_harness`` is ``bench/gpu_e4b.py``
itself (about 6 minutes on an H200): its JSON lands in ``$OUT`` (or the test's
temporary folder), ready for ``bench/results/gpu_e4b.json``. The tests import only
what that machine has (torch, transformers, pynvml, huggingface_hub) plus podium's
core and pytest.
"""

from __future__ import annotations

import asyncio
import json
import math
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.gpu


def test_the_shipped_tiny_model_scores_the_same_ppl_on_the_gpu(cuda: Any) -> None:
    from bench.common import free_port, start_engine
    from bench.ppl_check import _engine_ppl, compare, direct_nll, records
    from verifier.datasets import shipped_path

    model = shipped_path("tiny/model")
    rows, _ = records(model)
    direct = direct_nll(model, rows)  # float32 on the CPU: the reference
    port = free_port()
    args = ["-m", "engines.baseline", "--model", str(model), "--port", str(port)]
    args += ["--device", "cuda", "--dtype", "float32", "--max-model-len", "1024"]
    engine = start_engine(
        args,
        port=port,
        ready_timeout_s=300,
    )
    try:
        row = compare(asyncio.run(_engine_ppl(engine.url, rows)), direct)
    finally:
        engine.stop()
    assert row["findings"] == []
    assert row["engine_tokens"] == row["tokens"]
    # float32 on CUDA against float32 on the CPU: other kernels, the same arithmetic
    assert row["rel_diff_ppl"] <= 1e-4, row
    assert math.isclose(row["direct_ppl"], 23.404752, rel_tol=1e-6)


#: run in a process of its own: a CUDA context left in pytest's process would make every
#: later verification of this session find the GPU busy (``env.gpu-busy``)
ATTENTION_PROBE = """
import json, sys
from engines.baseline.model import BaselineEngine
from verifier.datasets import shipped_path
engine = BaselineEngine(shipped_path("tiny/model"), device="cuda", dtype=sys.argv[1])
check = engine.attention_check
print(json.dumps({
    "check": check.to_dict() if check is not None else None,
    "window": engine.sliding_window,
    "serving": engine.model.config._attn_implementation,
}))
"""


def test_the_baseline_engine_proves_its_attention_on_the_gpu(cuda: Any) -> None:
    """On CUDA the engine tests its attention path before serving; whatever it found (the
    fused float32 kernel was wrong at some lengths on an H200), it serves a path that
    agrees with eager attention at every length tested."""
    import subprocess
    import sys

    for dtype in ("float32", "bfloat16"):
        done = subprocess.run(
            [sys.executable, "-c", ATTENTION_PROBE, dtype],
            capture_output=True,
            text=True,
            timeout=600,
            check=True,
        )
        found = json.loads(done.stdout.strip().splitlines()[-1])
        check = found["check"]
        print(dtype, check and check["summary"])
        assert check is not None and check["ok"], check
        assert check["longest"] >= 2 * found["window"] + 2  # two windows, and the decode
        assert found["serving"] == check["serving"]
        assert check["passed"] or found["serving"] == "eager"


def test_the_e4b_shape_decodes_on_the_gpu_under_the_harness(
    cuda: Any, tmp_path: Path, gpu_out: Path
) -> None:
    from bench import gpu_e4b

    out = gpu_out
    code = gpu_e4b.main(["--out", str(out), "--workdir", str(tmp_path / "e4b")])
    result = json.loads((out / "gpu_e4b.json").read_text())
    harness = result["harness"]
    assert code == 0 and harness["failure"] is None, harness["failure"]
    assert result["build"]["parameters"] == 7_463_013_376
    assert [s["status"] for s in harness["stages"]] == ["ok"] * len(harness["stages"])
    tps = harness["tps"]
    assert tps["median"] > 0 and len(tps["trials"]) == 3
    assert all(t["tokens"] == 2 * 512 for t in tps["trials"]), "every request ran to 512 tokens"
    assert harness["cpu_share"] < 0.05, "the harness is not what limits the run"
    # bf16, chunked through the KV cache vs one direct pass: close, not equal
    assert result["ppl_vs_direct"]["rel_diff_nll"] < 1e-2
    assert result["machine"]["git_sha"], "the result names the commit it measured"
