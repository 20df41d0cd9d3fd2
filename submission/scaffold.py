"""``init``: write a working submission directory for one engine kind.

The engine sources the image needs are copied from the installed ``engines`` package
into ``engine/engines/`` at init time, so the directory (and so the bundle) is
self-contained: the verifier rebuilds the image from the bundle alone.
"""

from __future__ import annotations

import importlib.util
import json
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from podium.errors import UsageError
from schemas.challenge import ChallengeSpec
from submission import templates as t
from submission.config import NAME_PATTERN
from submission.defaults import (
    CONFIG_FILE,
    DOCKERFILE,
    ENGINE_BASE_IMAGE,
    ENGINE_CONFIG_FILE,
    IGNORED_DIRS,
    IGNORED_SUFFIXES,
    VLLM_BASE_IMAGE,
    VLLM_CPU_BASE_IMAGE,
)

#: The baseline engine reads its knobs from the frozen config the bundle carries.
BASELINE_CMD = ["python", "-m", "engines.baseline", "--config", "/submission/" + ENGINE_CONFIG_FILE]


@dataclass
class InitResult:
    directory: Path
    kind: str
    challenge: str
    files: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    #: True when no kind was named and ``init`` picked one the challenge allows
    kind_picked: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {
            "directory": str(self.directory),
            "kind": self.kind,
            "kind_picked": self.kind_picked,
            "challenge": self.challenge,
            "files": self.files,
            "notes": self.notes,
        }


def engines_source() -> Path:
    """The folder of the installed ``engines`` package."""
    found = importlib.util.find_spec("engines")
    if found is None or not found.submodule_search_locations:
        raise UsageError("the engines package is not installed", hint="pip install podium")
    return Path(next(iter(found.submodule_search_locations)))


def _copy_package(src_root: Path, sub: str, dest_root: Path) -> list[str]:
    """Copy ``engines/__init__.py`` and ``engines/<sub>/**`` into ``dest_root/engines``."""
    written = []
    targets = [(src_root / "__init__.py", dest_root / "engines" / "__init__.py")]
    for path in sorted((src_root / sub).rglob("*")):
        rel = path.relative_to(src_root)
        if path.is_dir() or set(rel.parts) & IGNORED_DIRS or path.name.endswith(IGNORED_SUFFIXES):
            continue
        targets.append((path, dest_root / "engines" / rel))
    for src, dst in targets:
        dst.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(src, dst)
        written.append(dst)
    return [p.relative_to(dest_root.parent).as_posix() for p in written]


def _default_config(kind: str, spec: ChallengeSpec) -> dict[str, Any]:
    """The knobs ``init`` writes: only those whose value differs from what the engine does
    when the knob is absent, so that knobs pasted in (the winner's) give exactly their config,
    with nothing of init's left behind that the pasted config never set."""
    if kind == "vllm" and spec.hardware.accelerator == "cpu":
        # vLLM's CPU build: the spec's dtype (it would downcast float32 to bfloat16), eager
        # start-up, one OpenMP thread (docs/benchmarks.md), the launcher's warm-up shorter
        # than its default (16 prompts of 128 tokens). No DEVICE: the image's build decides.
        config: dict[str, Any] = {
            "DTYPE": spec.model.dtype,
            "ENFORCE_EAGER": True,
            "WARMUP_BRIDGE": True,
            "WARMUP_NUM_PROMPTS": 4,
            "WARMUP_MAX_TOKENS": 8,
            "OMP_NUM_THREADS": 1,
        }
    elif kind == "vllm":
        config = {}  # vLLM's own defaults: the reference engine's configuration
    elif spec.hardware.accelerator == "cpu":
        config = {"DEVICE": "cpu", "DTYPE": spec.model.dtype}
    else:
        config = {"DEVICE": "cuda", "DTYPE": spec.model.dtype}
    allowed = spec.engine.allowed_knobs
    return {k: v for k, v in config.items() if allowed is None or k in allowed}


def _dockerfile(kind: str, base_image: str, port: int, *, on_vllm_image: bool = False) -> str:
    """``on_vllm_image``: a custom engine built on vLLM's image, which starts vLLM unless
    its entrypoint is cleared and has ``python3`` but no ``python``."""
    if kind == "vllm":
        return t.DOCKERFILE.format(
            kind=kind,
            protocol=t.PROTOCOL,
            base_image=base_image,
            port=port,
            copies=f"COPY engine/ /submission/engine/\nCOPY {ENGINE_CONFIG_FILE} /submission/",
            entrypoint="ENTRYPOINT []\n",
            cmd=t.cmd_json(
                ["python3", "-m", "engines.vllm_launcher", "/submission/" + ENGINE_CONFIG_FILE]
            ),
        )
    protocol = t.CUSTOM_PROTOCOL if kind == "custom" else t.PROTOCOL
    if kind == "custom":
        protocol += (
            "#\n# This skeleton starts podium's baseline engine (engine/engines/baseline);"
            "\n# replace engine/ and the CMD with your own server.\n"
        )
    cmd = ["python3", *BASELINE_CMD[1:]] if on_vllm_image else BASELINE_CMD
    return t.DOCKERFILE.format(
        kind=kind,
        protocol=protocol,
        base_image=base_image,
        port=port,
        copies=t.BASELINE_COPIES,
        entrypoint="ENTRYPOINT []\n" if on_vllm_image else "",
        cmd=t.cmd_json(cmd),
    )


def default_entry(directory: Path) -> str:
    """The directory's name as an entry name (``my entry!`` -> ``my-entry``)."""
    import re

    name = re.sub(r"[^A-Za-z0-9._-]+", "-", directory.resolve().name).strip("-._")[:64]
    return name or "entry-1"


#: The engine kind ``init`` picks when none is named: the first of these the challenge allows
#: (the baseline runs anywhere; vLLM is the reference engine; a custom engine is a skeleton).
KIND_PREFERENCE = ("baseline", "vllm", "custom")


def default_kind(spec: ChallengeSpec) -> str:
    """The engine kind ``init`` writes for ``spec`` when none is named."""
    for kind in KIND_PREFERENCE:
        if kind in spec.engine.kinds:
            return kind
    raise UsageError(
        f"the {spec.id} challenge allows no engine kind podium can write "
        f"({', '.join(spec.engine.kinds) or 'none'})",
        hint=f"podium writes {', '.join(KIND_PREFERENCE)}",
    )


def _check_kind(kind: str, spec: ChallengeSpec) -> None:
    """Refuse an engine kind podium cannot write or the challenge does not allow."""
    if kind not in ("baseline", "vllm", "custom"):
        raise UsageError(f"unknown engine kind {kind!r}", hint="choose baseline, vllm or custom")
    if kind not in spec.engine.kinds:
        raise UsageError(
            f"the {spec.id} challenge does not allow the {kind} engine",
            hint=f"allowed kinds: {', '.join(spec.engine.kinds)}",
        )


def _check_names(**names: str) -> None:
    """Refuse a team or entry name that ``NAME_PATTERN`` does not match."""
    import re

    for key, value in names.items():
        if not re.fullmatch(NAME_PATTERN, value):
            raise UsageError(
                f"--{key} {value!r} is not a valid name",
                hint="1-64 letters, digits, '.', '_' or '-', starting with a letter or digit",
            )


def init_submission(
    directory: Path,
    spec: ChallengeSpec,
    *,
    kind: str | None = None,
    team: str = "my-team",
    entry: str | None = None,
    base_image: str | None = None,
    force: bool = False,
) -> InitResult:
    """Write podium.toml, Dockerfile, README.md and the engine sources.

    ``kind`` defaults to the first of ``KIND_PREFERENCE`` the challenge allows (the result
    says it was picked). ``entry`` defaults to the directory's name, so two entries made
    with the defaults do not package to the same bundle name.
    """
    picked = kind is None
    kind = default_kind(spec) if kind is None else kind
    _check_kind(kind, spec)
    entry = entry or default_entry(directory)
    _check_names(team=team, entry=entry)
    if directory.exists() and not directory.is_dir():
        raise UsageError(f"{directory} exists and is not a directory")
    if directory.is_dir() and any(directory.iterdir()) and not force:
        raise UsageError(
            f"{directory} is not empty", hint="choose an empty directory or pass --force"
        )
    directory.mkdir(parents=True, exist_ok=True)
    vllm_base = VLLM_CPU_BASE_IMAGE if spec.hardware.accelerator == "cpu" else VLLM_BASE_IMAGE
    # podium's engine base carries CPU torch: on a GPU challenge a custom engine starts from
    # the pinned vLLM image, which carries CUDA torch and transformers (as imported entries do)
    gpu_custom = kind == "custom" and spec.hardware.accelerator == "gpu"
    base = base_image or (vllm_base if kind == "vllm" or gpu_custom else ENGINE_BASE_IMAGE)
    port = spec.engine.port
    config = _default_config(kind, spec)
    result = InitResult(directory=directory, kind=kind, challenge=spec.id, kind_picked=picked)

    texts = {
        CONFIG_FILE: t.TOML.format(
            challenge=json.dumps(spec.id),
            team=json.dumps(team),
            entry=json.dumps(entry),
            kind=json.dumps(kind),
            base_image=json.dumps(base),
            port=port,
            served_model_name=json.dumps(spec.model.repo_id),
            config=t.toml_table(config) if config else t.NO_KNOBS,
        ),
        DOCKERFILE: _dockerfile(kind, base, port, on_vllm_image=gpu_custom and base == vllm_base),
        "README.md": t.README.format(team=team, entry=entry, challenge=spec.id, kind=kind),
    }
    for name, text in texts.items():
        (directory / name).write_text(text, encoding="utf-8")
        result.files.append(name)

    src = engines_source()
    sub = "vllm_launcher" if kind == "vllm" else "baseline"
    if (src / sub).is_dir():
        result.files += _copy_package(src, sub, directory / "engine")
    else:
        result.notes.append(
            f"engines/{sub} is not installed here: copy it into "
            f"engine/engines/{sub}/ before building the image"
        )
    if kind == "vllm":
        result.notes.append(
            f"the vLLM base image {base} must be present in the local Docker "
            "engine (or pass --base-digest) to freeze"
        )
    result.files.sort()
    return result
