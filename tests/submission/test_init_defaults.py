"""``init`` writes only knobs that differ from the engine's defaults, so a config pasted into a
fresh entry is that config and nothing more; ``validate`` warns on a knob vllm ignores."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from schemas.challenge import load_challenge
from submission.config import read_config
from submission.scaffold import init_submission
from submission.validate import validate_submission

WINNER = Path(__file__).resolve().parents[2] / "examples" / "fast-gemma-winning"


def _config_lines(toml: Path) -> list[str]:
    """The ``KEY = value`` lines of ``[engine.config]``."""
    section = toml.read_text().split("\n[engine.config]\n", 1)[1].split("\n[", 1)[0]
    return [ln for ln in section.splitlines() if re.match(r"^[A-Z][A-Z0-9_]* = ", ln)]


def test_init_writes_no_knob_a_vllm_engine_already_defaults_to(tmp_path: Path) -> None:
    gpu = tmp_path / "gpu"
    init_submission(gpu, load_challenge("fast-gemma"), kind="vllm")
    assert _config_lines(gpu / "podium.toml") == []  # vLLM's defaults: prefix caching on
    cpu = tmp_path / "cpu"
    init_submission(cpu, load_challenge("tiny"), kind="vllm")
    keys = [ln.split(" = ")[0] for ln in _config_lines(cpu / "podium.toml")]
    assert "DEVICE" not in keys and "ENABLE_PREFIX_CACHING" not in keys
    assert keys[:2] == ["DTYPE", "ENFORCE_EAGER"]  # vLLM's CPU build would differ on both
    for entry in (gpu, cpu):
        result = validate_submission(entry)
        assert result.ok and not result.findings, [f.to_dict() for f in result.findings]


def test_the_winners_knobs_pasted_into_a_fresh_entry_give_the_winners_config(
    tmp_path: Path,
) -> None:
    entry = tmp_path / "mine"
    init_submission(entry, load_challenge("fast-gemma"), kind="vllm")
    toml = entry / "podium.toml"
    pasted = "\n".join(_config_lines(WINNER / "podium.toml"))
    text = toml.read_text().replace("\n[engine.config]\n", f"\n[engine.config]\n{pasted}\n")
    toml.write_text(text)
    mine, winner = read_config(entry).config, read_config(WINNER).config
    assert mine is not None and winner is not None
    assert mine.config == winner.config
    assert validate_submission(entry).ok


@pytest.mark.fires("engine.knob-ignored")
def test_validate_warns_on_device_on_a_vllm_entry(tmp_path: Path) -> None:
    entry = tmp_path / "entry"
    shutil.copytree(WINNER, entry)
    toml = entry / "podium.toml"
    toml.write_text(
        toml.read_text().replace("MAX_MODEL_LEN = 4096", 'MAX_MODEL_LEN = 4096\nDEVICE = "cuda"')
    )
    result = validate_submission(entry)
    (finding,) = result.findings
    assert (finding.check_id, finding.severity) == ("engine.knob-ignored", "warning")
    assert "the vllm engine ignores DEVICE" in finding.message
    assert result.ok  # a warning: the entry still packages
