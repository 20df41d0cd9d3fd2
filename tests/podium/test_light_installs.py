"""Each install line carries what its role runs, and a missing one is named as the README names it.

The participant's validate, package and push run with no torch (``pip install '.[participant]'``
brings none); selfcheck and sweep need the engine (and the sweep extra) and say so before they
start, with the README's own line, never an extra alone (``podium[docker]``).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from hubserver import FakeHub, allow_hub_requests

from podium.errors import MissingExtraError
from podium.extras import LINES, install_hint, require, require_installed

ROOT = Path(__file__).resolve().parents[2]
ENTRY = ROOT / "examples" / "tiny-baseline"
#: what a role that never runs the engine must not import: torch and what only comes with it
HEAVY = ("torch", "transformers", "tokenizers", "safetensors", "optuna", "matplotlib")
BLOCKED_RUN = (
    "import sys\n"
    f"for name in {HEAVY!r}:\n"
    "    sys.modules[name] = None  # an import of it raises ImportError, as with no install\n"
    "from podium.cli.app import main\n"
    "main(sys.argv[1:])\n"
)


def _podium_without_torch(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "200"}
    return subprocess.run(
        [sys.executable, "-c", BLOCKED_RUN, *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )


def _entry(tmp_path: Path) -> Path:
    entry = tmp_path / "entry"
    shutil.copytree(ENTRY, entry, ignore=shutil.ignore_patterns("manifest.json"))
    return entry


def test_the_participant_validates_and_packages_with_no_torch(tmp_path: Path) -> None:
    entry = _entry(tmp_path)
    validate = _podium_without_torch(["submission", "validate", str(entry)], tmp_path)
    assert validate.returncode == 0, validate.stdout + validate.stderr
    digest = "sha256:" + "ab" * 32
    package = _podium_without_torch(
        ["submission", "package", str(entry), "-o", "dist", "--no-build", "--base-digest", digest],
        tmp_path,
    )
    assert package.returncode == 0, package.stdout + package.stderr
    assert len(list((tmp_path / "dist").glob("*.tar.gz"))) == 1


@pytest.mark.docker
def test_the_participant_pushes_with_no_torch(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The base confirmed by the local Docker engine (push refuses an unchecked one)."""
    image = subprocess.run(["docker", "image", "inspect", "podium/engine-base:bookworm"],
                           capture_output=True, check=False)  # fmt: skip
    if image.returncode != 0 and os.environ.get("PODIUM_REQUIRE_DOCKER") != "1":
        pytest.skip("podium/engine-base:bookworm is not built (scripts/build-images.sh)")
    entry = _entry(tmp_path)
    package = _podium_without_torch(
        ["submission", "package", str(entry), "-o", "dist", "--no-build"], tmp_path
    )
    assert package.returncode == 0, package.stdout + package.stderr
    (bundle,) = (tmp_path / "dist").glob("*.tar.gz")
    with FakeHub() as hub:
        allow_hub_requests(monkeypatch)
        monkeypatch.setenv("HF_ENDPOINT", hub.endpoint)
        monkeypatch.setenv("HF_TOKEN", "hf_test_token_not_real")
        push = _podium_without_torch(
            ["submission", "push", str(bundle), "--repo", "acme/entries"], tmp_path
        )
        assert push.returncode == 0, push.stdout + push.stderr
        assert sum(hub.stats.values()) > 0


def test_selfcheck_and_sweep_name_the_line_they_need_before_they_start(tmp_path: Path) -> None:
    selfcheck = _podium_without_torch(
        ["submission", "selfcheck", str(ENTRY), "-o", "out"], tmp_path
    )
    assert selfcheck.returncode == 3, selfcheck.stdout + selfcheck.stderr
    assert "selfcheck needs torch and transformers" in selfcheck.stderr
    assert "pip install '.[participant,engine]'" in selfcheck.stderr
    assert "download.pytorch.org/whl/cpu" in selfcheck.stderr
    assert not (tmp_path / "out").exists(), "nothing was packaged before the refusal"
    sweep = _podium_without_torch(
        ["submission", "sweep", str(ENTRY), "--knob", "SLIDING_WINDOW=none,16"], tmp_path
    )
    assert sweep.returncode == 3, sweep.stdout + sweep.stderr
    assert "the sweep needs matplotlib and torch and transformers" in sweep.stderr
    assert "pip install '.[participant,engine,sweep]'" in sweep.stderr


def test_a_missing_module_hint_is_a_line_the_readme_runs() -> None:
    with pytest.raises(MissingExtraError) as caught:
        require("podium_no_such_module", extra="docker")
    assert caught.value.hint is not None and "podium[" not in caught.value.hint
    assert caught.value.hint.startswith("pip install '.[participant]' (or '.[organizer]')")
    with pytest.raises(MissingExtraError) as both:
        require_installed("x", ("podium_no_a", "podium_no_b"), extra="data")
    assert "podium_no_a and podium_no_b, which are not installed" in both.value.message
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    shown = set(re.findall(r"^pip install '(\.\[[a-z,]+\])'", readme, flags=re.M))
    for extra, lines in LINES.items():
        assert set(lines) <= shown, (extra, set(lines) - shown)
        assert f"pip install '{lines[0]}'" in install_hint(extra)
    assert "pip install torch --index-url https://download.pytorch.org/whl/cpu" in readme


def _installs(line: str) -> set[str]:
    """The extras ``.[a,b]`` brings, the role extras' own extras followed."""
    optional = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
        "optional-dependencies"
    ]
    pending, seen = line.removeprefix(".[").removesuffix("]").split(","), set()
    while pending:
        extra = pending.pop()
        if extra not in seen:
            seen.add(extra)
            for dep in optional[extra]:
                if dep.startswith("podium["):
                    pending += dep.removeprefix("podium[").split("]")[0].split(",")
    return seen


def test_each_hints_line_brings_its_extra_and_the_participants_brings_no_torch() -> None:
    for extra, lines in LINES.items():
        for line in lines:
            assert extra in _installs(line), (extra, line)
    assert _installs(".[participant]") == {"participant", "docker"}
