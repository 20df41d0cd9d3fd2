"""Object knobs are typed to their last member, from the pinned vLLM release's config classes.

The winner's levers are members of ``SPECULATIVE_CONFIG`` and ``HF_OVERRIDES``; a misspelt
member used to validate as ok (the schema left their members open) and cost a GPU run.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import json
import shutil
from pathlib import Path
from types import ModuleType

import pytest

from podium.cli.app import main
from schemas.challenge import list_challenges, load_challenge
from schemas.engine_config import check_engine_config
from schemas.knob_members import members_data, pinned_vllm

ROOT = Path(__file__).resolve().parents[2]
WINNER = ROOT / "examples" / "fast-gemma-winning"
WINNER_LINE = 'SPECULATIVE_CONFIG = { method = "mtp", num_speculative_tokens = 7 }'


def _entry(tmp_path: Path, line: str) -> Path:
    entry = tmp_path / "entry"
    shutil.copytree(WINNER, entry)
    toml = entry / "podium.toml"
    text = toml.read_text()
    assert WINNER_LINE in text
    toml.write_text(text.replace(WINNER_LINE, line))
    return entry


def _validate(entry: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    with pytest.raises(SystemExit) as done:
        main(["submission", "validate", str(entry)])
    return int(done.value.code or 0), capsys.readouterr().out


@pytest.mark.fires("config.member")
@pytest.mark.parametrize(
    ("line", "member", "meant"),
    [
        (
            'SPECULATIVE_CONFIG = { method = "mtp", num_speculative_token = 7 }',
            "SPECULATIVE_CONFIG.num_speculative_token",
            "num_speculative_tokens",
        ),
        (
            f"{WINNER_LINE}\nHF_OVERRIDES = {{ text_config = {{ sliding_windw = 188 }} }}",
            "HF_OVERRIDES.text_config.sliding_windw",
            "sliding_window",
        ),
        (
            f"{WINNER_LINE}\nCOMPILATION_CONFIG = {{ cudagraph_capture_size = [1, 2] }}",
            "COMPILATION_CONFIG.cudagraph_capture_size",
            "cudagraph_capture_sizes",
        ),
    ],
)
def test_a_misspelt_member_fails_validate_with_did_you_mean(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], line: str, member: str, meant: str
) -> None:
    code, out = _validate(_entry(tmp_path, line), capsys)
    assert code == 1 and "is a valid submission" not in out
    assert "1 error:" in out and "[config.member]" in out
    assert f"{member} is not a member of" in out and f"did you mean {meant}?" in out


@pytest.mark.quiet("config.member", "config.members-unpinned")
def test_the_winners_members_and_other_members_vllm_reads_pass(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    line = (
        'SPECULATIVE_CONFIG = { method = "mtp", num_speculative_tokens = 7, '
        "enforce_eager = false }\n"
        "HF_OVERRIDES = { text_config = { sliding_window = 188 } }\n"
        "COMPILATION_CONFIG = { cudagraph_capture_sizes = [1, 2, 4] }"
    )
    code, out = _validate(_entry(tmp_path, line), capsys)
    assert code == 0 and "is a valid submission" in out, out


@pytest.mark.fires("config.member")
def test_a_member_of_the_wrong_type_is_named_with_its_path() -> None:
    config = {"HF_OVERRIDES": {"text_config": {"sliding_window": "short"}}}
    (finding,) = check_engine_config(config, load_challenge("fast-gemma"), kind="vllm")
    assert finding.check_id == "config.member"
    assert finding.message.startswith("HF_OVERRIDES.text_config.sliding_window: 'short' is not")


def test_an_unknown_member_vllm_would_pass_on_passes_only_where_the_challenge_opens_it() -> None:
    config = {"HF_OVERRIDES": {"rope_local_base_freq_scale": 2.0}}
    spec = load_challenge("fast-gemma")
    (closed,) = check_engine_config(config, spec, kind="vllm")
    assert closed.check_id == "config.member" and "engine.open_members" in (closed.hint or "")
    opened = dataclasses.replace(
        spec, engine=dataclasses.replace(spec.engine, open_members=["HF_OVERRIDES"])
    )
    assert check_engine_config(config, opened, kind="vllm") == []
    # a near miss is an error even where the knob is open, and a closed knob never opens:
    # vLLM's SpeculativeConfig refuses an unknown field
    near = {"HF_OVERRIDES": {"sliding_windw": 8}, "SPECULATIVE_CONFIG": {"method": "mtp",
            "draft_temperature": 0.5}}  # fmt: skip
    found = check_engine_config(near, opened, kind="vllm")
    assert [f.check_id for f in found] == ["config.member", "config.member"]


@pytest.mark.fires("config.members-unpinned")
def test_a_challenge_pinning_another_vllm_gets_a_warning_not_member_checks() -> None:
    spec = load_challenge("fast-gemma")
    other = dataclasses.replace(
        spec, engine=dataclasses.replace(spec.engine, vllm={**spec.engine.vllm, "version": "9.9"})
    )
    config = {"SPECULATIVE_CONFIG": {"method": "mtp", "num_speculative_token": 7}}
    (finding,) = check_engine_config(config, other, kind="vllm")
    assert (finding.check_id, finding.severity) == ("config.members-unpinned", "warning")
    assert "vLLM 0.32.0" in finding.message and "vLLM 9.9" in finding.message


def test_the_member_table_is_pinned_to_every_shipped_challenges_vllm_release() -> None:
    pins = {
        name: (load_challenge(name).engine.vllm or {}).get("version") for name in list_challenges()
    }
    assert pinned_vllm() == "0.32.0"
    assert {v for v in pins.values() if v} == {pinned_vllm()}, pins
    # the table names where every knob's members come from, all from that release
    for knob, entry in members_data()["knobs"].items():
        assert pinned_vllm() in entry["source"], knob


def _generator() -> ModuleType:
    path = ROOT / "scripts" / "knob_members.py"
    spec = importlib.util.spec_from_file_location("knob_members", path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_generator_types_members_from_a_config_classs_source() -> None:
    gen = _generator()
    source = """
Method = Literal["ngram", "mtp"]

@config
class Inner:
    depth: int = 2

@config
class SpeculativeConfig:
    num_speculative_tokens: int = Field(default=None, gt=0)
    method: Method | None = None
    scale: float = 1.0
    inner: Inner = field(default_factory=Inner)
    target: SkipValidation[ModelConfig] = None
    computed: int = field(default=0, init=False)
    _private: int = 0
"""
    found = gen.members(gen.Module(source), "SpeculativeConfig")
    assert found == {
        "num_speculative_tokens": {
            "anyOf": [{"type": "integer", "exclusiveMinimum": 0}, {"type": "null"}]
        },
        "method": {"anyOf": [{"enum": ["ngram", "mtp"]}, {"type": "null"}]},
        "scale": {"type": "number"},
        "inner": {"type": "object", "members": {"depth": {"type": "integer"}}},
    }


def test_the_committed_table_is_what_the_generator_renders() -> None:
    """The file is the generator's output (sorted, one-space indent), not a hand edit."""
    gen = _generator()
    text = (ROOT / "schemas" / "json" / "knob-members.json").read_text()
    assert gen.render(json.loads(text)) == text
    assert members_data()["vllm"] == gen.VLLM[1]
