"""The calibration rows on a CUDA GPU as tests (``-m gpu``): skipped where there is none.

On the GPU machine (no Docker there: engines run as plain processes):

    bash bench/gpu.sh -k verifications    # installs the carried wheels it lacks, then these
    bash bench/gpu.sh -k jail             # the jail runner's part (bubblewrap carried)

``test_whole_verifications_on_the_gpu_pass_honest_entries_and_reject_cheats`` is
``calibration/gpu_verify.py``, one test per row (about 50 minutes on an H200 for all of them:
every honest row three times and every cheat once, one at a time, since a second engine on the GPU
makes a run unclean; ``-k`` picks rows, e.g. ``-k "bf16 or fp32"``): the runs gather in
``$OUT/gpu_verify.json``; ``python -m calibration.gpu_verify --merge`` makes the files of
several calls ``calibration/results/gpu_verify.json``. The tests import only what that
machine has (torch, transformers, pynvml, huggingface_hub) plus podium's core and pytest.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.gpu


def _gpu_rows() -> list[Any]:
    from calibration import gpu_verify

    return [pytest.param(row, id=_id(row.name)) for row in gpu_verify.rows()]


def _id(name: str) -> str:
    """A row's name as a ``-k``-friendly test id: ``undeclared W=24`` is ``undeclared-W-24``."""
    return re.sub(r"[^A-Za-z0-9]+", "-", name).strip("-")


@pytest.mark.parametrize("row", _gpu_rows())
def test_whole_verifications_on_the_gpu_pass_honest_entries_and_reject_cheats(
    cuda: Any, gpu_out: Path, row: Any
) -> None:
    """One row of ``calibration/gpu_verify.py``: its runs are added to ``$OUT/gpu_verify.json``
    (``--append``), so the rows of one pytest call, or of several, gather there."""
    from calibration import gpu_verify

    out = gpu_out
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


def _jail_rows() -> list[Any]:
    from calibration import gpu_verify

    return [pytest.param(row, id="jail-" + _id(row.name)) for row in gpu_verify.jail_rows()]


@pytest.mark.parametrize("row", _jail_rows())
def test_through_the_jail_honest_entries_are_verified_and_signed_and_cheats_rejected(
    cuda: Any, gpu_out: Path, row: Any
) -> None:
    """``calibration.gpu_verify --runner jail``, one run of one row: an honest fp32, bf16
    or window-16 entry VERIFIED and signed on the held-out set, every cheat REJECTED, as
    under the process runner (``$OUT/gpu_verify_jail.json``). Needs bubblewrap
    (``bench/gpu.sh`` unpacks the carried .deb where the machine has none)."""
    from calibration import gpu_verify
    from verifier.runners.jail_plan import refused

    if (why := refused()) is not None:
        pytest.fail(f"no jail on this GPU host: {why}")
    out = gpu_out
    args = ["--out", str(out), "--runner", "jail", "--only", row.name, "--runs", "1"]
    code = gpu_verify.main([*args, "--append"])
    runs = json.loads((out / gpu_verify.JAIL_RESULT).read_text())["runs"]
    (run,) = [r for r in runs if r["name"] == row.name]
    said = (row.name, run.get("verdict"), run.get("failing_checks"), run.get("failure"))
    assert run["ok"], (*said, run.get("error"))
    if row.kind == "honest":
        assert run["verdict"] == "VERIFIED" and run["signed"], said
    assert code == 0


def test_margin_rows_on_the_gpu_sit_apart(cuda: Any, gpu_out: Path) -> None:
    """The trust-margin rows on the GPU, once each (``PODIUM_MARGIN_ROWS`` names a subset,
    comma-separated): every honest row inside the cap at or below half of every
    allowance, every double spender over the cap that scores its answers honestly at or
    above 1.5 times one, and every one that answers its probes itself (forging or routing)
    and decodes two window-steps or more past the cap (a window of 8) REJECTED. One
    window-step harsher, those pass: no allowance can stop them without rejecting honest
    windows (``python -m calibration.attainable``, docs/measurement.md)."""
    from bench.common import REPO_ROOT
    from calibration import gpu_verify, margins

    out = gpu_out / "margins"
    only = os.environ.get("PODIUM_MARGIN_ROWS", "")
    args = ["--out", str(out), "--margins", "--runs", "1", "--append"]
    gpu_verify.main(args + (["--only", only] if only else []))
    runs = json.loads((out / gpu_verify.RESULT).read_text())["runs"]
    assert not [r for r in runs if "error" in r], [r["error"] for r in runs if "error" in r]
    spec = json.loads((REPO_ROOT / "podium/data/challenges/tiny.json").read_text())
    answering = ("forging ", "routing ")
    judged = [r for r in runs if not r["name"].startswith(answering)]
    sep = margins.separation(judged, cap_ratio=float(spec["quality"]["max_ratio"]))
    assert sep["honest_ok"], sep["per_bound"]
    assert sep["spenders_ok"] or not sep["spender_rows"], sep["deciding"]
    harsh = [r for r in runs if r["name"].startswith(answering) and r["name"].endswith("/8")]
    passed = [(r["name"], r["verdict"]) for r in harsh if r["verdict"] != "REJECTED"]
    assert not passed, passed
