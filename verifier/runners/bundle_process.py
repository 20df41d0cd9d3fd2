"""How a bundle's image would run its engine, as a plain process runs it.

The process runner has no image: it runs the bundle's own copy of the baseline engine
with what the container would have had. That is read from the bundle intake opened
(never from the engine): the Dockerfile's ``ENV`` and ``CMD`` arguments, with container
paths mapped back through its ``COPY`` lines to the bundle's files, then the manifest's
``[engine.env]``, as the Docker runner sets it over the image's own. The frozen engine
config reaches the engine through ``--config`` (or ``ENGINE_CONFIG``), exactly as in the
container, so every knob the engine acts on takes effect.

What a process cannot reproduce is refused, naming it (``UsageError``, the run is not
started): an image built with ``RUN`` steps (installed packages, patched files), another
``FROM`` stage, an ``ENTRYPOINT``, a ``CMD`` that is not ``python -m engines.baseline``,
an engine kind other than ``baseline`` or ``custom``, and a bundle without the baseline
engine's code (both of its packages, ``engines`` and ``engines.baseline``, with their
``__init__.py``). The parse is deliberately small: an instruction it does not know is
refused, never skipped. The lines are read by ``submission.dockerfile``, the reader
``validate`` and intake use.
"""

from __future__ import annotations

import json
import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from podium.errors import UsageError
from schemas.manifest import Manifest
from submission.dockerfile import DockerfileError, env_pairs, instructions

#: the container's own addresses and paths, which the process runner sets itself
RUNNER_SET = frozenset({"PYTHONPATH", "MODEL_PATH", "HOST", "PORT", "SERVED_MODEL_NAME"})
#: instructions that change nothing a process would see
INERT = frozenset({"ARG", "EXPOSE", "LABEL", "WORKDIR", "STOPSIGNAL", "HEALTHCHECK"})
_ENGINE_MODULE = ("-m", "engines.baseline")
_HINT = "use --runner local-docker, which builds and runs the bundle's image"


@dataclass(frozen=True)
class BundleProcess:
    """The engine's code root, its environment and its command-line arguments."""

    engine_root: Path
    env: dict[str, str] = field(default_factory=dict)
    args: list[str] = field(default_factory=list)


def _exec_form(args: str, what: str) -> list[str]:
    try:
        value = json.loads(args)
    except ValueError:
        value = None
    if not (isinstance(value, list) and all(isinstance(v, str) for v in value)):
        raise UsageError(
            f'the Dockerfile\'s {what} {args!r} is not in exec form (["python", ...]): the '
            "process runner runs only the baseline engine's own command",
            hint=_HINT,
        )
    return value


class _Paths:
    """Container paths mapped back to the bundle's files through the ``COPY`` lines."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.copies: list[tuple[str, Path]] = []

    def copy(self, args: str) -> None:
        words = [w for w in shlex.split(args) if not w.startswith("--")]
        if len(words) != 2:
            raise UsageError(f"the Dockerfile's COPY {args!r} copies more than one path")
        src, dst = words
        source = (self.root / src).resolve()
        if not source.is_relative_to(self.root.resolve()):
            raise UsageError(f"the Dockerfile's COPY {args!r} copies from outside the bundle")
        if source.is_file() and dst.endswith("/"):
            dst += PurePosixPath(src).name
        self.copies.append((dst.rstrip("/") or "/", source))

    def map(self, text: str) -> str:
        """``text`` with each container path under a copy's destination made local."""
        for dst, source in sorted(self.copies, key=lambda c: -len(c[0])):
            text = re.sub(rf"{re.escape(dst)}(?=/|$|:)", str(source), text)
        return text


def _engine_root(root: Path, kind: str) -> Path:
    """The bundle's ``engine/`` folder, holding both packages of the baseline engine."""
    if kind not in ("baseline", "custom"):
        raise UsageError(
            f"the process runner cannot run a {kind} engine: it runs podium's baseline engine "
            "from the bundle's code",
            hint=_HINT,
        )
    engine_root = root / "engine"
    if not (engine_root / "engines" / "baseline").is_dir():
        raise UsageError(
            "the process runner runs baseline engines only, and this bundle has no "
            "engine/engines/baseline",
            hint=_HINT,
        )
    for package in ("engines", "engines/baseline"):
        # a folder without __init__.py is only a namespace portion: Python goes on along
        # the path, and a regular ``engines`` package further on (podium's own, from a
        # checkout, an editable install or a wheel) would serve in the bundle's place
        if not (engine_root / package / "__init__.py").is_file():
            raise UsageError(
                f"the bundle's engine/{package}/ has no __init__.py: without it Python "
                "would import another engines package found later on the path, not the "
                "bundle's",
                hint=f"add engine/{package}/__init__.py (podium submission init writes it)",
            )
    return engine_root


def _image(text: str, paths: _Paths) -> tuple[dict[str, str], list[str] | None]:
    """The image's ``ENV`` and ``CMD``, its ``COPY`` lines read into ``paths``; any step
    a process cannot reproduce is refused by name."""
    env: dict[str, str] = {}
    cmd: list[str] | None = None
    froms = 0
    try:
        steps = [(step.name, step.args) for step in instructions(text)]
    except DockerfileError as exc:
        raise UsageError(f"the process runner cannot read the bundle's Dockerfile: {exc}") from None
    for name, args in steps:
        if name == "FROM":
            froms += 1
            if froms > 1:
                raise UsageError(
                    "the bundle's Dockerfile has more than one FROM stage, which the process "
                    "runner cannot reproduce",
                    hint=_HINT,
                )
        elif name == "COPY" or name == "ADD":
            paths.copy(args)
        elif name == "ENV":
            try:
                env.update(env_pairs(args, env))
            except DockerfileError as exc:
                raise UsageError(f"the bundle's Dockerfile: {exc}") from None
        elif name == "CMD":
            cmd = _exec_form(args, "CMD")
        elif name == "ENTRYPOINT":
            if _exec_form(args, "ENTRYPOINT"):
                raise UsageError(
                    f"the bundle's Dockerfile sets ENTRYPOINT {args}, which the process runner "
                    "does not run",
                    hint=_HINT,
                )
        elif name not in INERT:
            raise UsageError(
                f"the bundle's Dockerfile has a {name} step ({name} {args[:60]}), which the "
                "process runner cannot reproduce: it runs the bundle's engine code on this "
                "machine's Python, with no image",
                hint=_HINT,
            )
    return env, cmd


def bundle_process(root: Path, manifest: Manifest) -> BundleProcess:
    """How the bundle unpacked at ``root`` runs its engine, or a ``UsageError`` naming what
    a process cannot run as declared."""
    engine_root = _engine_root(root, manifest.engine.kind)
    dockerfile = root / manifest.engine.dockerfile
    try:
        text = dockerfile.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"cannot read the bundle's {manifest.engine.dockerfile}: {exc}") from exc
    paths = _Paths(root)
    env, cmd = _image(text, paths)
    if cmd is None or len(cmd) < 3 or PurePosixPath(cmd[0]).name not in ("python", "python3"):
        raise UsageError(
            f"the bundle's Dockerfile runs {cmd!r}, not python -m engines.baseline: the process "
            "runner runs only podium's baseline engine",
            hint=_HINT,
        )
    if tuple(cmd[1:3]) != _ENGINE_MODULE:
        raise UsageError(
            f"the bundle's Dockerfile runs {' '.join(cmd)}, not python -m engines.baseline",
            hint=_HINT,
        )
    declared = {k: paths.map(v) for k, v in env.items() if k not in RUNNER_SET}
    declared.update(manifest.engine.env or {})  # [engine.env], over the image's own
    for key in RUNNER_SET & set(manifest.engine.env or {}):
        declared.pop(key, None)
    return BundleProcess(
        engine_root=engine_root, env=declared, args=[paths.map(a) for a in cmd[3:]]
    )
