"""An engine kind a challenge allows runs on an image that can use the challenge's hardware.

podium's engine base image carries CPU torch, so a ``baseline`` entry on a GPU challenge
would be timed on the CPU: ``fast-gemma`` allows ``vllm`` and ``custom``, and a ``custom``
entry for a GPU challenge starts from the pinned vLLM image (CUDA torch and transformers),
as an imported entry of the real challenge does.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from podium.errors import UsageError
from schemas.challenge import load_challenge
from submission.defaults import ENGINE_BASE_IMAGE, VLLM_BASE_IMAGE
from submission.scaffold import init_submission
from submission.validate import validate_submission


def test_fast_gemma_refuses_a_baseline_entry_and_names_the_kinds_it_allows(
    tmp_path: Path,
) -> None:
    spec = load_challenge("fast-gemma")
    assert "baseline" not in spec.engine.kinds and {"vllm", "custom"} <= set(spec.engine.kinds)
    with pytest.raises(UsageError, match="does not allow the baseline engine") as refused:
        init_submission(tmp_path / "e", spec, kind="baseline")
    assert "vllm" in str(refused.value.hint) and "custom" in str(refused.value.hint)


def test_a_custom_entry_for_a_gpu_challenge_starts_from_the_cuda_vllm_image(
    tmp_path: Path,
) -> None:
    init_submission(tmp_path / "e", load_challenge("fast-gemma"), kind="custom", team="a")
    toml = (tmp_path / "e" / "podium.toml").read_text()
    dockerfile = (tmp_path / "e" / "Dockerfile").read_text()
    assert f'base_image = "{VLLM_BASE_IMAGE}"' in toml
    assert f"ARG BASE_IMAGE={VLLM_BASE_IMAGE}" in dockerfile
    # vLLM's image starts vLLM and has python3 only: the skeleton clears both
    assert "ENTRYPOINT []" in dockerfile
    assert 'CMD ["python3", "-m", "engines.baseline"' in dockerfile
    assert validate_submission(tmp_path / "e").findings == []


def test_a_custom_entry_for_a_cpu_challenge_keeps_podiums_engine_base(tmp_path: Path) -> None:
    init_submission(tmp_path / "e", load_challenge("tiny"), kind="custom", team="a")
    assert f"ARG BASE_IMAGE={ENGINE_BASE_IMAGE}" in (tmp_path / "e" / "Dockerfile").read_text()
