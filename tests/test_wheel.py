"""The wheel holds podium's packages and no test double: the cheating engines, the fake
engine and every other part of ``tests/`` stay out of what a user installs."""

from __future__ import annotations

import subprocess
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


@pytest.mark.slow
def test_the_wheel_holds_no_test_double(tmp_path: Path) -> None:
    from uv import find_uv_bin

    build = [find_uv_bin(), "build", "--wheel", "--out-dir", str(tmp_path), str(REPO)]
    done = subprocess.run(build, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    (wheel,) = tmp_path.glob("podium-*.whl")
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
