"""Build podium's own image for harness jobs on this machine (local rehearsals).

``FROM podium/engine-base`` (Python 3.11, torch and transformers for the reference
engine), plus podium's light dependencies as wheels fetched by this machine's pip
(containers reach no registry), plus podium's packages on ``PYTHONPATH``. For HF Jobs
the same image is pushed to a registry Jobs can pull from (``--harness-image``).
"""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from podium import __version__, dockerx
from podium.errors import DockerError

BASE = "podium/engine-base:bookworm"
PACKAGES = ("podium", "schemas", "submission", "verifier", "leaderboard", "engines")
# what podium's core needs beyond the engine base (which has huggingface_hub, httpx2, h11,
# typer, rich and click already)
WHEELS = ("jsonschema", "cryptography")
DOCKERFILE = """\
ARG BASE_IMAGE
FROM ${BASE_IMAGE}
COPY wheels /tmp/wheels
RUN python3 -m pip install --no-index --find-links /tmp/wheels jsonschema cryptography \\
    && rm -rf /tmp/wheels
COPY src /opt/podium
ENV PYTHONPATH=/opt/podium PYTHONUNBUFFERED=1 PYTHONDONTWRITEBYTECODE=1 HF_HUB_OFFLINE=1
WORKDIR /tmp
"""


def _source_digest(root: Path) -> str:
    """sha256 over podium's packages, so a changed source never reuses a stale image."""
    h = hashlib.sha256()
    for pkg in PACKAGES:
        for path in sorted((root / pkg).rglob("*")):
            if path.is_file() and "__pycache__" not in path.parts:
                h.update(path.relative_to(root).as_posix().encode() + b"\0")
                h.update(hashlib.sha256(path.read_bytes()).digest())
    return h.hexdigest()[:12]


def harness_tag() -> str:
    root = Path(__file__).resolve().parents[3]
    return f"podium/harness:{__version__}-{_source_digest(root)}"


def build_harness_image(*, base: str = BASE, tag: str | None = None, rebuild: bool = False) -> str:
    """Build (or reuse) the harness image; returns its tag."""
    tag = tag or harness_tag()
    client = dockerx.connect()
    if not rebuild:
        try:
            client.images.get(tag)
            return tag
        except Exception:  # not built yet
            pass
    root = Path(__file__).resolve().parents[3]
    ctx = Path(tempfile.mkdtemp(prefix="podium-harness-image-"))
    try:
        for pkg in PACKAGES:
            shutil.copytree(
                root / pkg, ctx / "src" / pkg, ignore=shutil.ignore_patterns("__pycache__")
            )
        done = subprocess.run(
            [sys.executable, "-m", "pip", "download", "--quiet", "--only-binary=:all:",
             "--python-version", "3.11", "--implementation", "cp",
             "--platform", "manylinux_2_28_x86_64", "--platform", "manylinux_2_17_x86_64",
             "--platform", "manylinux2014_x86_64", "-d", str(ctx / "wheels"), *WHEELS],
            capture_output=True, text=True, check=False,
        )  # fmt: skip
        if done.returncode != 0:
            raise DockerError(f"could not fetch the harness image's wheels: {done.stderr[-500:]}")
        (ctx / "Dockerfile").write_text(DOCKERFILE)
        dockerx.build_image(
            client,
            ctx,
            tag=tag,
            dockerfile="Dockerfile",
            buildargs={"BASE_IMAGE": base},
            nocache=False,
            timeout_s=900,
            on_log=lambda _line: None,
        )
    finally:
        shutil.rmtree(ctx, ignore_errors=True)
    return tag
