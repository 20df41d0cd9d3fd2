"""scripts/build-images.sh takes the Debian mirror from apt's sources, never a default host."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "build-images.sh"


def _mirror(apt_dir: Path, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", "-c", f"source {SCRIPT}; debian_mirror"],
        env={**os.environ, "APT_DIR": str(apt_dir), **env},
        capture_output=True,
        text=True,
        check=False,
    )


def test_the_mirror_comes_from_deb822_or_one_line_sources(tmp_path: Path) -> None:
    (tmp_path / "sources.list.d").mkdir()
    (tmp_path / "sources.list.d" / "debian.sources").write_text(
        "Types: deb\nURIs: http://mirror.example.org/debian\nSuites: bookworm bookworm-updates\n"
        "Components: main\n"
    )
    assert _mirror(tmp_path).stdout.strip() == "http://mirror.example.org/debian"
    (tmp_path / "sources.list.d" / "debian.sources").unlink()
    (tmp_path / "sources.list").write_text(
        "deb [arch=amd64] http://other.example.org/d bookworm main\n"
    )
    assert _mirror(tmp_path).stdout.strip() == "http://other.example.org/d"
    got = _mirror(tmp_path, PODIUM_DEBIAN_MIRROR="http://chosen.example.org/debian")
    assert got.stdout.strip() == "http://chosen.example.org/debian"


def test_no_mirror_anywhere_is_a_failure_not_a_shipped_host(tmp_path: Path) -> None:
    got = _mirror(tmp_path)
    assert got.returncode != 0 and got.stdout.strip() == ""
    assert "debian.org" not in SCRIPT.read_text()
