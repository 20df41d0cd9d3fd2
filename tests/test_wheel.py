"""The wheel holds podium's packages and no test double (the cheating engines, the fake
engine and every other part of ``tests/`` stay out of what a user installs), and it is
enough: in a fresh virtual environment, ``pip install 'podium[participant]'`` gives a
``podium`` that makes and validates a first entry for the real challenge."""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from uv import find_uv_bin

    out = tmp_path_factory.mktemp("wheel")
    build = [find_uv_bin(), "build", "--wheel", "--out-dir", str(out), str(REPO)]
    done = subprocess.run(build, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    (found,) = out.glob("podium-*.whl")
    return found


@pytest.mark.slow
def test_the_wheel_holds_no_test_double(wheel: Path) -> None:
    names = zipfile.ZipFile(wheel).namelist()
    assert "engines/baseline/model.py" in names and "verifier/pipeline.py" in names
    tops = {name.split("/")[0] for name in names}
    # nor the benchmarks and the calibration evidence, which import the test doubles
    assert not tops & {"tests", "doubles", "bench", "calibration"}, tops
    leaked = [
        n
        for n in names
        if Path(n).name in ("cheats.py", "adversarial.py", "fake_engine.py", "conftest.py")
        or "doubles" in Path(n).parts
    ]
    assert not leaked, leaked


@pytest.mark.slow
def test_the_wheel_names_an_extra_for_each_role(wheel: Path) -> None:
    meta = next(n for n in zipfile.ZipFile(wheel).namelist() if n.endswith("METADATA"))
    text = zipfile.ZipFile(wheel).read(meta).decode()
    extras = {ln.split(":", 1)[1].strip() for ln in text.splitlines() if ln.startswith("Provides-")}
    assert {"participant", "organizer", "viewer"} <= extras
    needs = {
        role: {
            ln.split(":", 1)[1].split(";")[0].strip().split(">")[0].split("[")[0]
            for ln in text.splitlines()
            if ln.startswith("Requires-Dist:") and f"extra == '{role}'" in ln
        }
        for role in ("participant", "organizer", "viewer")
    }
    # validate, package and push: Docker's client and no torch (selfcheck adds the engine)
    assert "docker" in needs["participant"]
    assert not {"torch", "transformers", "optuna"} & needs["participant"], needs["participant"]
    assert {"docker", "torch", "nvidia-ml-py"} <= needs["organizer"]
    assert "pyarrow" in needs["viewer"] and "torch" not in needs["viewer"]


def _pins(tmp_path: Path) -> Path:
    """The versions this suite runs with, as pip constraints: the fresh venv resolves the
    same releases (the CPU torch among them) rather than whatever is newest."""
    freeze = subprocess.run(
        [sys.executable, "-m", "pip", "freeze", "--exclude-editable"],
        capture_output=True,
        text=True,
        check=True,
    )
    lines = [ln for ln in freeze.stdout.splitlines() if "==" in ln and " @ " not in ln]
    path = tmp_path / "pins.txt"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


@pytest.mark.slow
def test_a_fresh_venv_with_the_participant_extra_makes_a_fast_gemma_entry(
    wheel: Path, tmp_path: Path
) -> None:
    """What the README's install line promises, in a venv that has seen nothing of this
    checkout (no torch: the participant's line brings Docker's client and the core). Set
    ``PODIUM_WHEELHOUSE`` to a folder of wheels to install with no index at all."""
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    python = venv / "bin" / "python"
    install = [str(python), "-m", "pip", "install", "--quiet", "-c", str(_pins(tmp_path))]
    if os.environ.get("PODIUM_WHEELHOUSE"):
        install += ["--no-index", "--find-links", os.environ["PODIUM_WHEELHOUSE"]]
    install.append(f"podium[participant] @ {wheel.as_uri()}")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    done = subprocess.run(install, capture_output=True, text=True, env=env, timeout=1200)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]

    work = tmp_path / "work"
    work.mkdir()

    def podium(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(venv / "bin" / "podium"), *args],
            capture_output=True,
            text=True,
            cwd=work,
            env=env,
            timeout=300,
        )

    version = podium("--version")
    assert version.returncode == 0 and version.stdout.startswith("podium "), version
    where = subprocess.run(
        [str(python), "-c", "import podium, verifier; print(podium.__file__, verifier.__file__)"],
        capture_output=True,
        text=True,
        cwd=work,
        env=env,
        check=True,
    )
    assert str(REPO) not in where.stdout and str(venv) in where.stdout, where.stdout
    init = podium("submission", "init", "x", "--challenge", "fast-gemma")
    assert init.returncode == 0, init.stdout + init.stderr
    assert "vllm engine" in init.stdout
    validate = podium("submission", "validate", "x")
    assert validate.returncode == 0, validate.stdout + validate.stderr
    assert "x is a valid submission" in validate.stdout
