"""What a participant meets on the way from init to a bundle: one place for each knob,
help for typos, a word on knobs the engine ignores, no bundle silently replaced."""

from __future__ import annotations

import json
import tarfile
from collections.abc import Callable
from pathlib import Path

import pytest

from podium.cli.app import main
from podium.errors import UsageError
from schemas.challenge import load_challenge
from submission.bundle import package
from submission.scaffold import init_submission
from submission.validate import validate_submission

FAKE_DIGEST = "sha256:" + "ab" * 32


def _set_config(directory: Path, lines: str) -> None:
    text = (directory / "podium.toml").read_text()
    (directory / "podium.toml").write_text(
        text.replace("[engine.config]\n", "[engine.config]\n" + lines + "\n", 1)
    )


def _ids(directory: Path) -> list[tuple[str, str]]:
    return [(f.check_id, f.severity) for f in validate_submission(directory).findings]


def _bundle_config(bundle: Path) -> dict[str, object]:
    with tarfile.open(bundle) as tar:
        member = tar.extractfile("engine-config.json")
        assert member is not None
        return dict(json.loads(member.read()))


def test_podium_toml_is_the_one_place_a_knob_is_set(
    make_submission: Callable[..., Path], tmp_path: Path
) -> None:
    directory = make_submission()
    assert not (directory / "engine-config.json").exists()
    assert not (directory / "launch.py").exists()
    _set_config(directory, "MAX_MODEL_LEN = 512")
    result = package(directory, tmp_path / "dist", base_digest=FAKE_DIGEST, build=False)
    assert result.ok and result.bundle is not None
    assert _bundle_config(result.bundle.path)["MAX_MODEL_LEN"] == 512
    assert not (directory / "engine-config.json").exists()  # nothing to drift from


@pytest.mark.fires("submission.config-edited")
def test_a_hand_edited_engine_config_is_an_error_not_silently_replaced(
    make_submission: Callable[..., Path], tmp_path: Path
) -> None:
    directory = make_submission()
    (directory / "engine-config.json").write_text(
        json.dumps({"DEVICE": "cpu", "DTYPE": "bfloat16"})
    )
    findings = validate_submission(directory).findings
    (stale,) = [f for f in findings if f.check_id == "submission.config-edited"]
    assert stale.is_error and "DTYPE" in stale.message and "podium.toml" in (stale.hint or "")
    result = package(directory, tmp_path / "dist", base_digest=FAKE_DIGEST, build=False)
    assert result.bundle is None
    assert json.loads((directory / "engine-config.json").read_text())["DTYPE"] == "bfloat16"


@pytest.mark.fires("submission.generated-file")
def test_a_copy_that_matches_is_a_warning_and_is_bundled_once(
    make_submission: Callable[..., Path], tmp_path: Path
) -> None:
    directory = make_submission()
    same = {"DEVICE": "cpu", "DTYPE": "float32", "SERVED_MODEL_NAME": "podium/tiny-gemma4"}
    (directory / "engine-config.json").write_text(json.dumps(same))
    assert ("submission.generated-file", "warning") in _ids(directory)
    result = package(directory, tmp_path / "dist", base_digest=FAKE_DIGEST, build=False)
    assert result.ok and result.bundle is not None
    with tarfile.open(result.bundle.path) as tar:
        assert tar.getnames().count("engine-config.json") == 1


@pytest.mark.fires("config.knob-name")
def test_a_lower_case_knob_says_which_knob_was_meant(
    make_submission: Callable[..., Path], capsys: pytest.CaptureFixture[str]
) -> None:
    directory = make_submission()
    text = (directory / "podium.toml").read_text().replace('DTYPE = "float32"', 'dtype = "float32"')
    (directory / "podium.toml").write_text(text)
    (finding,) = [f for f in validate_submission(directory).findings if f.is_error]
    assert finding.check_id == "config.knob-name"
    assert finding.hint == "did you mean DTYPE?"
    assert "$:" not in finding.message and "$" not in (finding.where or "")
    with pytest.raises(SystemExit) as done:
        main(["submission", "validate", str(directory)])
    assert done.value.code == 1
    out = capsys.readouterr().out
    line = (directory / "podium.toml").read_text().splitlines().index('dtype = "float32"') + 1
    assert f"podium.toml:{line} dtype" in out and "did you mean DTYPE?" in out


@pytest.mark.fires("config.no-such-knob")
@pytest.mark.parametrize(("kind", "challenge"), [("vllm", "fast-gemma"), ("baseline", "tiny")])
def test_a_misspelt_knob_is_an_error_naming_the_line_and_the_knob_meant(
    kind: str,
    challenge: str,
    make_submission: Callable[..., Path],
    capsys: pytest.CaptureFixture[str],
) -> None:
    directory = make_submission(kind, challenge)
    _set_config(directory, "MAX_MODEL_LENN = 512")
    (finding,) = validate_submission(directory).findings
    assert (finding.check_id, finding.severity) == ("config.no-such-knob", "error")
    assert finding.hint is not None and finding.hint.startswith("did you mean MAX_MODEL_LEN?")
    assert "engine kind vllm" not in finding.hint  # the old hint, wrong for a typo
    line = (directory / "podium.toml").read_text().splitlines().index("MAX_MODEL_LENN = 512") + 1
    assert finding.where == f"podium.toml:{line} MAX_MODEL_LENN"
    with pytest.raises(SystemExit) as done:
        main(["submission", "validate", str(directory)])
    out = capsys.readouterr().out
    assert done.value.code == 1 and "is a valid submission" not in out
    assert "1 error:" in out and "  error   [config.no-such-knob]" in out


@pytest.mark.fires("config.unknown-knob")
def test_a_near_miss_on_a_custom_engine_is_a_labelled_warning(
    make_submission: Callable[..., Path], capsys: pytest.CaptureFixture[str]
) -> None:
    directory = make_submission("custom", "tiny")
    _set_config(directory, "GPU_MEMORY_UTILISATION = 0.8")
    (finding,) = validate_submission(directory).findings
    assert (finding.check_id, finding.severity) == ("config.unknown-knob", "warning")
    assert finding.hint == "did you mean GPU_MEMORY_UTILIZATION?"
    with pytest.raises(SystemExit) as done:
        main(["submission", "validate", str(directory)])
    out = capsys.readouterr().out
    assert done.value.code == 0
    assert "1 warning:" in out and "  warning [config.unknown-knob]" in out


@pytest.mark.quiet("config.no-such-knob")
def test_a_vllm_entry_may_set_its_servers_environment_variables(
    make_submission: Callable[..., Path],
) -> None:
    directory = make_submission("vllm", "fast-gemma")
    _set_config(directory, 'OMP_NUM_THREADS = 1\nVLLM_LOGGING_LEVEL = "WARNING"')
    assert validate_submission(directory).findings == []


@pytest.mark.fires("engine.knob-ignored")
def test_vllm_only_knobs_on_a_baseline_entry_are_named(
    make_submission: Callable[..., Path],
) -> None:
    directory = make_submission()
    _set_config(directory, "ENABLE_PREFIX_CACHING = true\nGPU_MEMORY_UTILIZATION = 0.9")
    (finding,) = validate_submission(directory).findings
    assert (finding.check_id, finding.severity) == ("engine.knob-ignored", "warning")
    for knob in ("ENABLE_PREFIX_CACHING", "GPU_MEMORY_UTILIZATION"):
        assert knob in finding.message
    assert "use engine kind vllm" in (finding.hint or "")  # right here: known vLLM knobs
    vllm = make_submission("vllm", "fast-gemma", name="v")
    _set_config(vllm, "SLIDING_WINDOW = 8")
    assert validate_submission(vllm).findings == []  # vLLM's launcher acts on both


@pytest.mark.parametrize(
    ("old", "new"), [('DTYPE = "float32"', 'DTYPE = "auto"'), ('DEVICE = "cpu"', 'DEVICE = "auto"')]
)
def test_auto_values_validate_and_reach_the_engine_as_accepted_values(
    old: str, new: str, make_submission: Callable[..., Path], tmp_path: Path
) -> None:
    from engines.baseline.__main__ import parse_args

    directory = make_submission()
    (directory / "podium.toml").write_text(
        (directory / "podium.toml").read_text().replace(old, new)
    )
    assert validate_submission(directory).ok
    result = package(directory, tmp_path / "dist", base_digest=FAKE_DIGEST, build=False)
    assert result.bundle is not None
    config = tmp_path / "engine-config.json"
    config.write_text(json.dumps(_bundle_config(result.bundle.path)))
    args = parse_args(["--config", str(config), "--model", "m"])  # argparse exits on a bad value
    key = new.split()[0].lower()
    assert getattr(args, key) == "auto"


def test_init_names_the_entry_after_its_directory(tmp_path: Path) -> None:
    result = init_submission(tmp_path / "my fast entry", load_challenge("tiny"))
    assert 'entry = "my-fast-entry"' in (result.directory / "podium.toml").read_text()


def test_a_second_entry_never_silently_replaces_the_first_bundle(tmp_path: Path) -> None:
    spec = load_challenge("tiny")
    first, second = tmp_path / "a" / "entry", tmp_path / "b" / "entry"  # same default names
    init_submission(first, spec)
    init_submission(second, spec)
    dist = tmp_path / "dist"
    made = package(first, dist, base_digest=FAKE_DIGEST, build=False)
    assert made.bundle is not None
    before = made.bundle.path.read_bytes()
    again = package(first, dist, base_digest=FAKE_DIGEST, build=False)  # its own: fine
    assert again.ok
    (second / "podium.toml").write_text(
        (second / "podium.toml").read_text().replace('DTYPE = "float32"', 'DTYPE = "bfloat16"')
    )
    with pytest.raises(UsageError, match="was packaged from") as refused:
        package(second, dist, base_digest=FAKE_DIGEST, build=False)
    assert "--force" in (refused.value.hint or "")
    assert made.bundle.path.read_bytes() == before
    forced = package(second, dist, base_digest=FAKE_DIGEST, build=False, force=True)
    assert forced.ok and forced.bundle is not None
    assert forced.bundle.path.read_bytes() != before


@pytest.mark.docker  # package pins the base from the local image, so inspect accepts it
def test_each_participant_command_says_what_to_do_next(
    make_submission: Callable[..., Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    directory = make_submission()
    for args in (
        ["submission", "init", str(tmp_path / "fresh")],
        ["submission", "validate", str(directory)],
        [
            "submission",
            "package",
            str(directory),
            "-o",
            str(tmp_path / "dist"),
            "--no-build",
        ],
        ["submission", "inspect", str(tmp_path / "dist" / "acme-e1.tar.gz")],
    ):
        with pytest.raises(SystemExit) as done:
            main(args)
        out = capsys.readouterr().out
        assert done.value.code == 0, out
        assert "\nnext: " in "\n" + out, (args, out)
    assert "podium submission selfcheck" in out
