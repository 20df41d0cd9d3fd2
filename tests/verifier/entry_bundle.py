"""Bundles of the sample baseline entry, packaged as a participant with no Docker would.

``entry_source`` copies ``examples/tiny-baseline`` with podium's baseline engine in its
``engine/`` folder and the given knobs under ``[engine.config]`` and ``[engine.env]``;
``packaged`` freezes it into a bundle (no image is built).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from submission.bundle import package

REPO = Path(__file__).resolve().parents[2]
ZERO_DIGEST = "sha256:" + "0" * 64


def entry_source(
    where: Path,
    *,
    config: dict[str, Any] | None = None,
    env: dict[str, str] | None = None,
    files: dict[str, str] | None = None,
    entry: str | None = None,
) -> Path:
    """The sample entry's source at ``where/src``, with ``config`` knobs, ``env`` variables,
    extra ``files`` (paths relative to the source, text) and another ``entry`` name."""
    src = where / "src"
    shutil.copytree(
        REPO / "examples" / "tiny-baseline",
        src,
        ignore=shutil.ignore_patterns("manifest.json", "engine-config.json"),
    )
    engines = src / "engine" / "engines"
    shutil.copytree(
        REPO / "engines" / "baseline",
        engines / "baseline",
        ignore=shutil.ignore_patterns("__pycache__"),
    )
    shutil.copy(REPO / "engines" / "__init__.py", engines / "__init__.py")
    toml = (src / "podium.toml").read_text(encoding="utf-8")
    if entry is not None:
        toml = toml.replace('entry = "tiny-baseline"', f'entry = "{entry}"')
    knobs = dict(config or {})
    if "DTYPE" in knobs:
        toml = toml.replace('DTYPE = "float32"\n', "")
    lines = "".join(f"{k} = {json.dumps(v)}\n" for k, v in knobs.items())
    toml = toml.replace("[engine.config]\n", "[engine.config]\n" + lines, 1)
    lines = "".join(f"{k} = {json.dumps(v)}\n" for k, v in (env or {}).items())
    toml = toml.replace("[engine.env]\n", "[engine.env]\n" + lines, 1)
    (src / "podium.toml").write_text(toml, encoding="utf-8")
    for name, text in (files or {}).items():
        (src / name).parent.mkdir(parents=True, exist_ok=True)
        (src / name).write_text(text, encoding="utf-8")
    return src


def packaged(src: Path, *, confirmed: bool = False) -> Path:
    """The bundle of ``src``, written beside it; its base pinned by a placeholder digest,
    or, ``confirmed``, by the local image's own (Docker), as every door wants it."""
    digest = None if confirmed else ZERO_DIGEST
    done = package(src, src.parent / "dist", base_digest=digest, build=False)
    assert done.bundle is not None, [f.one_line() for f in done.findings]
    return done.bundle.path
