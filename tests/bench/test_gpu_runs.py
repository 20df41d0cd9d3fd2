"""The GPU-machine runs as tests (``-m gpu``): skipped where no CUDA GPU is present.

On the GPU machine (no Docker there: engines run as plain processes):

    bash bench/gpu.sh        # installs the carried wheels it lacks, then these tests

``test_whole_verifications_on_the_gpu_pass_honest_entries_and_reject_cheats`` is
``bench/gpu_verify.py`` (about 20 minutes on an H200: 18 honest verifications and 12
cheats, one at a time, since a second engine on the GPU makes a run unclean): its JSON
lands in ``$OUT``, ready for ``bench/results/gpu_verify.json``.
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
import os
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.gpu


@pytest.fixture(scope="module")
def cuda() -> Any:
    torch = pytest.importorskip("torch", reason="torch is not installed")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA GPU on this machine")
    return torch


def out_dir(tmp_path: Path) -> Path:
    return Path(os.environ["OUT"]) if os.environ.get("OUT") else tmp_path


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


def test_the_baseline_engine_proves_its_attention_on_the_gpu(cuda: Any) -> None:
    """On CUDA the engine tests its attention path before serving; whatever it found (the
    fused float32 kernel was wrong at some lengths on an H200), it serves a path that
    agrees with eager attention at every length tested."""
    from engines.baseline.model import BaselineEngine
    from verifier.datasets import shipped_path

    for dtype in ("float32", "bfloat16"):
        engine = BaselineEngine(shipped_path("tiny/model"), device="cuda", dtype=dtype)
        check = engine.attention_check
        assert check is not None and check.ok, check
        assert check.lengths >= 3 * engine.sliding_window
        serving = engine.model.config._attn_implementation
        assert serving == check.serving and (check.passed or serving == "eager")


def test_whole_verifications_on_the_gpu_pass_honest_entries_and_reject_cheats(
    cuda: Any, tmp_path: Path
) -> None:
    from bench import gpu_verify

    out = out_dir(tmp_path)
    code = gpu_verify.main(["--out", str(out)])
    runs = json.loads((out / gpu_verify.RESULT).read_text())["runs"]
    honest = [r for r in runs if r["kind"] == "honest"]
    names = {r.name for r in gpu_verify.rows() if r.kind == "honest"}
    assert {r["name"] for r in honest} == names
    for name in names:
        assert sum(r["name"] == name for r in honest) >= 3, name
    bad = [(r["name"], r["run"], r.get("failing_checks"), r.get("failure")) for r in honest]
    assert not [b for b, r in zip(bad, honest, strict=True) if not r["ok"]]
    for r in runs:
        if r["kind"] == "cheat":
            assert r["ok"], (r["name"], r.get("verdict"), r.get("failure"))
            if not r.get("replays"):
                assert r["verdict"] == "REJECTED", r["name"]
    assert code == 0


def test_the_e4b_shape_decodes_on_the_gpu_under_the_harness(cuda: Any, tmp_path: Path) -> None:
    from bench import gpu_e4b

    out = out_dir(tmp_path)
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
