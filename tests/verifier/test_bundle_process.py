"""``bundle_process``: what the process runner reads from a bundle's Dockerfile and manifest.

The sample baseline entry is packaged once and opened as the verifier opens it; each test
then gives the opened bundle another Dockerfile or manifest and checks what the process
would run, or that it is refused with a ``UsageError`` naming what cannot run.
"""

from __future__ import annotations

import dataclasses
import shutil
from pathlib import Path
from typing import Any

import pytest
from entry_bundle import entry_source, packaged

from podium.errors import UsageError
from schemas.challenge import load_challenge
from schemas.manifest import Manifest
from submission.dockerfile import instructions
from verifier.intake import intake
from verifier.runners.bundle_process import bundle_process

SCAFFOLD_CMD = '["python", "-m", "engines.baseline", "--config", "/submission/engine-config.json"]'


@pytest.fixture(scope="module")
def opened(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Manifest]:
    where = tmp_path_factory.mktemp("bundle-process")
    bundle = packaged(entry_source(where))
    taken = intake(bundle, where / "work", load_challenge("tiny"))
    assert taken.root is not None and taken.manifest is not None, taken.findings
    return taken.root, taken.manifest


def with_dockerfile(opened: tuple[Path, Manifest], tmp_path: Path, text: str) -> Path:
    """A copy of the opened bundle whose Dockerfile is ``text``."""
    root, manifest = opened
    copy = tmp_path / "bundle"
    shutil.copytree(root, copy)
    (copy / manifest.engine.dockerfile).write_text(text, encoding="utf-8")
    return copy


def dockerfile(*steps: str, cmd: str = SCAFFOLD_CMD) -> str:
    head = "ARG BASE_IMAGE=podium/engine-base:bookworm\nFROM ${BASE_IMAGE}\n"
    copies = "COPY engine/ /submission/engine/\nCOPY engine-config.json /submission/\n"
    return head + copies + "".join(s + "\n" for s in steps) + f"CMD {cmd}\n"


def with_engine(manifest: Manifest, **changes: Any) -> Manifest:
    return dataclasses.replace(manifest, engine=dataclasses.replace(manifest.engine, **changes))


def test_the_scaffolded_dockerfile_runs_the_frozen_config_with_the_manifest_env(
    opened: tuple[Path, Manifest],
) -> None:
    root, manifest = opened
    process = bundle_process(root, manifest)
    assert process.engine_root == root / "engine"
    assert process.args == ["--config", str((root / "engine-config.json").resolve())]
    # the container's own paths and addresses are the runner's to set, not the bundle's
    assert process.env == {"OMP_NUM_THREADS": "1"}


def test_continuations_are_joined_and_comments_skipped() -> None:
    text = (
        "# a comment\n"
        "FROM base\n"
        "\n"
        "ENV A=1 \\\n"
        "    # a comment inside the continued line\n"
        "    B=2\n"
        "   # an indented comment\n"
        'CMD ["python", \\\n'
        '     "-m", "engines.baseline"]\n'
    )
    assert [(i.name, i.args, i.line) for i in instructions(text)] == [
        ("FROM", "base", 2),
        ("ENV", "A=1 B=2", 4),
        ("CMD", '["python", "-m", "engines.baseline"]', 8),
    ]


def test_dockerfile_env_reaches_the_engine_with_container_paths_mapped_to_the_bundle(
    opened: tuple[Path, Manifest], tmp_path: Path
) -> None:
    root = with_dockerfile(
        opened,
        tmp_path,
        dockerfile("ENV TOKENS=/submission/engine-config.json LEVEL=3 PYTHONPATH=/elsewhere"),
    )
    process = bundle_process(root, opened[1])
    assert process.env == {
        "TOKENS": str((root / "engine-config.json").resolve()),
        "LEVEL": "3",
        "OMP_NUM_THREADS": "1",
    }


def test_manifest_env_overrides_the_dockerfile_env(
    opened: tuple[Path, Manifest], tmp_path: Path
) -> None:
    root = with_dockerfile(opened, tmp_path, dockerfile("ENV OMP_NUM_THREADS=8 SLIDING_WINDOW=32"))
    manifest = with_engine(opened[1], env={"OMP_NUM_THREADS": "1", "SLIDING_WINDOW": "16"})
    process = bundle_process(root, manifest)
    assert process.env == {"OMP_NUM_THREADS": "1", "SLIDING_WINDOW": "16"}


def test_manifest_env_cannot_set_the_runners_own_variables(
    opened: tuple[Path, Manifest], tmp_path: Path
) -> None:
    manifest = with_engine(opened[1], env={"PORT": "9", "PYTHONPATH": "/x", "DTYPE": "bfloat16"})
    process = bundle_process(opened[0], manifest)
    assert process.env == {"DTYPE": "bfloat16"}


@pytest.mark.parametrize(
    ("text", "named"),
    [
        (dockerfile("RUN pip install fastkernels"), "RUN step"),
        (dockerfile("FROM python:3.12 AS second"), "more than one FROM"),
        (dockerfile('ENTRYPOINT ["python", "serve.py"]'), "ENTRYPOINT"),
        (dockerfile(cmd='["python", "-m", "my_server"]'), "not python -m engines.baseline"),
        (dockerfile(cmd='["./serve.sh"]'), "not python -m engines.baseline"),
        (dockerfile(cmd="python -m engines.baseline"), "not in exec form"),
    ],
    ids=["run", "second-from", "entrypoint", "other-module", "other-program", "shell-form-cmd"],
)
def test_what_a_process_cannot_run_is_refused_by_name(
    opened: tuple[Path, Manifest], tmp_path: Path, text: str, named: str
) -> None:
    root = with_dockerfile(opened, tmp_path, text)
    with pytest.raises(UsageError, match=named):
        bundle_process(root, opened[1])


def test_a_vllm_entry_is_refused(opened: tuple[Path, Manifest]) -> None:
    with pytest.raises(UsageError, match="cannot run a vllm engine"):
        bundle_process(opened[0], with_engine(opened[1], kind="vllm"))


def test_a_bundle_without_the_baseline_engine_code_is_refused(
    opened: tuple[Path, Manifest], tmp_path: Path
) -> None:
    root = with_dockerfile(opened, tmp_path, dockerfile())
    shutil.rmtree(root / "engine" / "engines" / "baseline")
    with pytest.raises(UsageError, match="no engine/engines/baseline"):
        bundle_process(root, opened[1])


@pytest.mark.parametrize("package", ["engines", "engines/baseline"])
def test_a_bundle_package_without_its_init_is_refused_by_name(
    opened: tuple[Path, Manifest], tmp_path: Path, package: str
) -> None:
    root = with_dockerfile(opened, tmp_path, dockerfile())
    (root / "engine" / package / "__init__.py").unlink()
    with pytest.raises(UsageError, match=f"engine/{package}/ has no __init__.py"):
        bundle_process(root, opened[1])


def test_without_its_init_a_bundles_engines_folder_loses_to_podiums_own(
    opened: tuple[Path, Manifest], tmp_path: Path
) -> None:
    """Why the refusal above: a folder without ``__init__.py`` is a namespace portion, and
    Python goes on along the path to podium's own regular ``engines`` package (installed
    here), even with the bundle first on ``PYTHONPATH`` and ``-P``."""
    import os
    import subprocess
    import sys

    root = with_dockerfile(opened, tmp_path, dockerfile())
    engine = root / "engine"
    probe = "import engines.baseline as b; print(b.__file__)"

    def loaded() -> Path:
        env = {**os.environ, "PYTHONPATH": str(engine)}
        out = subprocess.run(
            [sys.executable, "-P", "-c", probe],
            env=env,
            cwd=tmp_path,
            capture_output=True,
            text=True,
            check=True,
        )
        return Path(out.stdout.strip())

    assert loaded().is_relative_to(engine)
    (engine / "engines" / "__init__.py").unlink()
    assert not loaded().is_relative_to(engine)
