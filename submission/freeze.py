"""``freeze``: resolve everything a submission depends on and write ``manifest.json``.

Freezing pins the base image to a digest (through the Docker engine, or
``base_digest`` when there is none; a digest no local image confirms is written as
``unchecked``: ``submission.base_pin``), records the challenge's model pin, the Python
dependencies, the frozen engine config and the sha256, size and mode of every file.
The image reads the config from ``engine-config.json``, which freeze generates from
``[engine.config]`` of ``podium.toml`` into the bundle only: ``podium.toml`` is the one
place a knob is set, and the directory holds no second copy to drift from it.

``created`` is ``SOURCE_DATE_EPOCH`` when set, otherwise the newest modification time of
the participant's files (generated files excluded): packaging the same directory twice
gives the same manifest, and so the same bundle bytes.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import podium
from podium.errors import UsageError
from podium.timestamps import iso_utc
from podium.version import toolkit_git_sha
from schemas.challenge import ChallengeSpec
from schemas.findings import Finding
from schemas.manifest import Dependency, Manifest
from schemas.validate import read_json
from submission.base_pin import resolve_base_image
from submission.config import SubmissionConfig, frozen_config
from submission.defaults import ENGINE_CONFIG_FILE, GENERATED_FILES, MANIFEST_FILE
from submission.files import LocalFile, scan_files
from submission.requirements import read_requirements
from submission.validate import validate_submission


@dataclass
class Frozen:
    """The outcome of freeze: a manifest, or the findings that stopped it."""

    directory: Path
    manifest: Manifest | None
    findings: list[Finding] = field(default_factory=list)
    files: list[LocalFile] = field(default_factory=list)
    base_pin: str | None = None  # what to pass as BASE_IMAGE to a build

    @property
    def ok(self) -> bool:
        return self.manifest is not None


def source_date_epoch() -> int | None:
    raw = os.environ.get("SOURCE_DATE_EPOCH")
    if raw is None or raw.strip() == "":
        return None
    if not raw.strip().isdigit():
        raise UsageError(f"SOURCE_DATE_EPOCH={raw!r} is not a whole number of seconds")
    return int(raw)


def rfc3339(epoch: float) -> str:
    return iso_utc(datetime.fromtimestamp(int(epoch), UTC))


def created_time(files: list[LocalFile]) -> str:
    epoch = source_date_epoch()
    if epoch is None:
        stamps = [f.mtime for f in files if f.path not in GENERATED_FILES]
        epoch = int(max(stamps)) if stamps else 0
    return rfc3339(epoch)


def engine_config_file(cfg: SubmissionConfig) -> LocalFile:
    """The bundle's ``engine-config.json``, generated from ``podium.toml``."""
    text = json.dumps(frozen_config(cfg), indent=2, sort_keys=True) + "\n"
    return LocalFile.generated(ENGINE_CONFIG_FILE, text.encode("utf-8"))


def _write_if_changed(path: Path, text: str) -> None:
    """Rewrite only on change, so an unchanged directory keeps its mtimes."""
    if path.is_file() and path.read_text(encoding="utf-8") == text:
        return
    path.write_text(text, encoding="utf-8")


def write_manifest(directory: Path, manifest: Manifest) -> None:
    """``DIR/manifest.json`` (rewritten only on change)."""
    _write_if_changed(directory / MANIFEST_FILE, manifest_text(manifest))


def manifest_text(manifest: Manifest) -> str:
    return json.dumps(manifest.to_dict(), indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def build_manifest(
    cfg: SubmissionConfig,
    spec: ChallengeSpec,
    files: list[LocalFile],
    *,
    directory: Path,
    base_digest: str,
    vendored: bool = False,
    base_checked: bool = True,
) -> Manifest:
    deps, _ = read_requirements(directory)
    if vendored:  # the engine code is podium's own, pinned by podium's version
        deps = [
            *deps,
            Dependency(
                name=f"podium-{VENDORED[cfg.kind].replace('_', '-')}",
                version=podium.__version__,
                spec="vendored into engine/engines",
            ),
        ]
    engine: dict[str, Any] = {
        "kind": cfg.kind,
        "config": frozen_config(cfg),
        "base_image": {"ref": cfg.base_image, "digest": base_digest}
        | ({} if base_checked else {"unchecked": True}),
        "dockerfile": cfg.dockerfile,
        "port": cfg.port,
    }
    if cfg.env:
        engine["env"] = dict(sorted(cfg.env.items()))
    if cfg.served_model_name:
        engine["served_model_name"] = cfg.served_model_name
    if cfg.serve:
        engine["serve"] = list(cfg.serve)
    if deps:
        engine["dependencies"] = [d.to_dict() for d in deps]
    doc: dict[str, Any] = {
        "schema_version": 1,
        "kind": "podium.manifest",
        "challenge": {"id": spec.id, "version": spec.version},
        "team": cfg.team,
        "entry": cfg.entry,
        "engine": engine,
        "model": {"repo_id": spec.model.repo_id, "revision": spec.model.revision},
        "files": [
            {"path": f.path, "sha256": f.sha256(), "size": f.size, "executable": f.executable}
            for f in files
        ],
        "toolkit": {"name": "podium", "version": podium.__version__, "git_sha": toolkit_git_sha()},
        "created": created_time(files),
    }
    if cfg.reported:
        doc["reported"] = dict(cfg.reported)
    if cfg.origin:
        origin: dict[str, Any] = {"format": cfg.origin["format"]}
        if cfg.origin.get("manifest"):
            origin["manifest"] = read_json(directory / cfg.origin["manifest"])
        if cfg.origin.get("notes"):
            origin["notes"] = list(cfg.origin["notes"])
        doc["origin"] = origin
    return Manifest.parse(doc, file=MANIFEST_FILE)


#: The podium engine package freeze adds, per engine kind, when a submission carries none.
VENDORED = {"baseline": "baseline", "vllm": "vllm_launcher"}


def vendored_engine(kind: str, files: list[LocalFile]) -> list[LocalFile]:
    """podium's engine code (the baseline engine, or the vLLM launcher) for a submission
    that does not carry its own.

    A participant who changes the engine keeps a copy under ``engine/engines/`` (``podium
    submission init`` writes one); one who only tunes knobs lets freeze add the shipped
    code, hashed in the manifest like every other file.
    """
    if kind not in VENDORED or any(f.path.startswith("engine/engines/") for f in files):
        return []
    from submission.scaffold import engines_source

    src = engines_source()
    out = []
    for path in [src / "__init__.py", *sorted((src / VENDORED[kind]).rglob("*.py"))]:
        st = path.stat()
        rel = path.relative_to(src).as_posix()
        out.append(LocalFile(f"engine/engines/{rel}", path, st.st_size, st.st_mtime, False))
    return out


def freeze(
    directory: Path,
    *,
    challenge: ChallengeSpec | None = None,
    base_digest: str | None = None,
    exclude: tuple[Path, ...] = (),
    write: bool = True,
) -> Frozen:
    """Validate, pin and hash ``directory``; write ``manifest.json`` unless ``write`` is off."""
    checked = validate_submission(directory, challenge=challenge, exclude=exclude)
    if not checked.ok or checked.config is None or checked.challenge is None:
        return Frozen(directory, None, checked.findings)
    cfg, spec = checked.config, checked.challenge
    digest, pin, base_checked = resolve_base_image(cfg.base_image, base_digest, spec)
    files, problems = scan_files(directory, exclude=exclude)
    if problems:  # the directory changed since validation
        return Frozen(directory, None, checked.findings + problems)
    files = [f for f in files if f.path != ENGINE_CONFIG_FILE]  # validate vouched it matches
    vendored = vendored_engine(cfg.kind, files)
    files = sorted([*files, *vendored, engine_config_file(cfg)], key=lambda f: f.path)
    manifest = build_manifest(
        cfg,
        spec,
        files,
        directory=directory,
        base_digest=digest,
        vendored=bool(vendored),
        base_checked=base_checked,
    )
    if write:
        write_manifest(directory, manifest)
    return Frozen(directory, manifest, checked.findings, files, pin)
