"""The GPU-machine runs as tests (``-m gpu``): skipped where no CUDA GPU is present.

On the GPU machine (no Docker there: engines run as plain processes):

    bash bench/gpu.sh        # installs the carried wheels it lacks, then these tests

``test_whole_verifications_on_the_gpu_pass_honest_entries_and_reject_cheats`` is
``bench/gpu_verify.py``, one test per row (about 25 minutes on an H200 for all of them:
18 honest verifications and 12 cheats, one at a time, since a second engine on the GPU
makes a run unclean; ``-k`` picks rows, e.g. ``-k "bf16 or fp32"``): the runs gather in
``$OUT/gpu_verify.json``; ``python -m bench.gpu_verify --merge`` makes the files of
several calls ``bench/results/gpu_verify.json``.
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
import re
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
        assert check["lengths"] >= 3 * found["window"]
        assert found["serving"] == check["serving"]
        assert check["passed"] or found["serving"] == "eager"


def _gpu_rows() -> list[Any]:
    from bench import gpu_verify

    return [pytest.param(row, id=_id(row.name)) for row in gpu_verify.rows()]


def _id(name: str) -> str:
    """A row's name as a ``-k``-friendly test id: ``undeclared W=24`` is ``undeclared-W-24``."""
    return re.sub(r"[^A-Za-z0-9]+", "-", name).strip("-")


@pytest.mark.parametrize("row", _gpu_rows())
def test_whole_verifications_on_the_gpu_pass_honest_entries_and_reject_cheats(
    cuda: Any, tmp_path: Path, row: Any
) -> None:
    """One row of ``bench/gpu_verify.py``: its runs are added to ``$OUT/gpu_verify.json``
    (``--append``), so the rows of one pytest call, or of several, gather there."""
    from bench import gpu_verify

    out = out_dir(tmp_path)
    code = gpu_verify.main(["--out", str(out), "--only", row.name, "--append"])
    runs = [r for r in json.loads((out / gpu_verify.RESULT).read_text())["runs"]]
    mine = [r for r in runs if r["name"] == row.name]
    if row.kind == "honest":
        assert len(mine) >= 3, row.name
        failing = [(r["run"], r.get("failing_checks"), r.get("failure")) for r in mine]
        assert all(r["ok"] for r in mine), failing
    else:
        (run,) = mine
        assert run["ok"], (row.name, run.get("verdict"), run.get("failure"), run.get("error"))
        if not (row.replays and run.get("no_repeat")):
            assert run["verdict"] == "REJECTED", row.name
    assert code == 0


def test_margin_rows_on_the_gpu_sit_apart(cuda: Any, tmp_path: Path) -> None:
    """Issue 26's rows on the GPU, once each (``PODIUM_MARGIN_ROWS`` names a subset,
    comma-separated): every honest row inside the cap at or below half of every
    allowance, every double spender over the cap at or above 1.5 times one."""
    from bench import gpu_verify, margins

    out = out_dir(tmp_path) / "margins"
    only = os.environ.get("PODIUM_MARGIN_ROWS", "")
    args = ["--out", str(out), "--margins", "--runs", "1", "--append"]
    gpu_verify.main(args + (["--only", only] if only else []))
    runs = json.loads((out / gpu_verify.RESULT).read_text())["runs"]
    assert not [r for r in runs if "error" in r], [r["error"] for r in runs if "error" in r]
    spec = json.loads((gpu_verify.REPO_ROOT / "podium/data/challenges/tiny.json").read_text())
    sep = margins.separation(runs, cap_ratio=float(spec["quality"]["max_ratio"]))
    assert sep["honest_ok"], sep["per_bound"]
    assert sep["spenders_ok"] or not sep["spender_rows"], sep["deciding"]


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
