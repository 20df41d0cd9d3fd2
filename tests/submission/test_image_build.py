"""package builds the image from the re-opened bundle through a real Docker engine."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from submission.bundle import package
from submission.defaults import ENGINE_BASE_IMAGE

pytestmark = pytest.mark.docker


def _image_id(ref: str) -> str | None:
    out = subprocess.run(
        ["docker", "image", "inspect", "--format", "{{.Id}}", ref],
        capture_output=True,
        text=True,
        check=False,
    )
    return out.stdout.strip() if out.returncode == 0 else None


def _remove(tag: str) -> None:
    subprocess.run(["docker", "image", "rm", "-f", tag], capture_output=True, check=False)


def test_custom_image_on_a_local_base_is_pinned_by_id(
    make_submission: Callable[..., Path], tmp_path: Path
) -> None:
    base = "podium/base:bookworm"
    base_id = _image_id(base)
    if base_id is None:
        pytest.skip(f"{base} is not built (scripts/build-images.sh)")
    directory = make_submission("custom")
    text = (directory / "podium.toml").read_text()
    (directory / "podium.toml").write_text(
        text.replace(f'base_image = "{ENGINE_BASE_IMAGE}"', f'base_image = "{base}"')
    )
    (directory / "Dockerfile").write_text(
        "ARG BASE_IMAGE\nFROM ${BASE_IMAGE}\nWORKDIR /submission\nCOPY . /submission/\n"
        'CMD ["python3", "-c", "print(1)"]\n'
    )
    lines: list[str] = []
    result = package(directory, tmp_path / "out", on_log=lines.append)
    assert result.ok and result.image is not None, result.findings
    try:
        manifest = json.loads((directory / "manifest.json").read_text())
        assert manifest["engine"]["base_image"] == {"ref": base, "digest": base_id}
        record = json.loads((tmp_path / "out" / "acme-e1.image.json").read_text())
        assert record["tag"] == f"podium-submission/acme-e1:{result.bundle.sha256[:12]}"  # type: ignore[union-attr]
        assert _image_id(record["tag"]) == record["image_id"]
        assert record["base_image"] == base_id and record["build_seconds"] > 0
        assert any("COPY" in line for line in lines)  # the build log streamed live
        kept = (tmp_path / "out" / "acme-e1.build.log").read_text()
        assert kept.splitlines() == lines  # and is kept beside the bundle
        listing = subprocess.run(
            ["docker", "run", "--rm", "--network", "none", record["tag"], "ls", "/submission"],
            capture_output=True,
            text=True,
            check=True,
        )
        assert "manifest.json" in listing.stdout.split()
    finally:
        _remove(result.image["tag"])


@pytest.mark.slow
def test_baseline_image_builds_on_the_engine_base(
    make_submission: Callable[..., Path], tmp_path: Path
) -> None:
    if _image_id(ENGINE_BASE_IMAGE) is None:
        pytest.skip(f"{ENGINE_BASE_IMAGE} is not built (scripts/build-images.sh)")
    result = package(make_submission("baseline"), tmp_path / "out")
    assert result.ok and result.image is not None, result.findings
    try:
        out = subprocess.run(
            [
                "docker",
                "run",
                "--rm",
                "--network",
                "none",
                "--entrypoint",
                "python",
                result.image["tag"],
                "-c",
                "import engines.baseline, json; "
                "print(json.load(open('/submission/engine-config.json'))['DEVICE'])",
            ],
            capture_output=True,
            text=True,
            check=True,
        )
        assert out.stdout.strip() == "cpu"
    finally:
        _remove(result.image["tag"])


def test_package_shows_no_docker_log_unless_asked(
    make_submission: Callable[..., Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from podium.cli.app import main

    base = "podium/base:bookworm"
    if _image_id(base) is None:
        pytest.skip(f"{base} is not built (scripts/build-images.sh)")
    directory = make_submission("custom")
    text = (directory / "podium.toml").read_text()
    (directory / "podium.toml").write_text(
        text.replace(f'base_image = "{ENGINE_BASE_IMAGE}"', f'base_image = "{base}"')
    )
    (directory / "Dockerfile").write_text(
        'ARG BASE_IMAGE\nFROM ${BASE_IMAGE}\nCOPY . /submission/\nCMD ["true"]\n'
    )
    tags = []
    try:
        for logs in (False, True):
            out_dir = tmp_path / f"out-{logs}"
            with pytest.raises(SystemExit) as done:
                main(
                    ["submission", "package", str(directory), "-o", str(out_dir)]
                    + (["--logs"] if logs else [])
                )
            captured = capsys.readouterr()
            assert done.value.code == 0, captured.err
            shown = captured.out + captured.err
            assert ("Step 1/" in shown) is logs  # the build log only with --logs
            assert "Step 1/" in (out_dir / "acme-e1.build.log").read_text()
            assert "\nnext: podium submission selfcheck" in "\n" + captured.out
            tags.append(json.loads((out_dir / "acme-e1.image.json").read_text())["tag"])
    finally:
        for tag in tags:
            _remove(tag)
