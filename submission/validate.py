"""``validate``: every problem of a submission directory, listed at once.

A broken rule is a ``Finding`` with a stable id (docs/submission.md lists them); an
exception only means the directory could not be examined at all. The same function runs
before ``freeze`` and ``package``, so nothing is frozen that validate would refuse.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, field
from pathlib import Path

from podium.errors import UsageError
from schemas.challenge import ChallengeSpec, load_challenge
from schemas.check_ids import (
    ENGINE_KIND_NOT_ALLOWED,
    ENGINE_KNOB_IGNORED,
    SUBMISSION_CONFIG_EDITED,
    SUBMISSION_DOCKERFILE_BASE,
    SUBMISSION_GENERATED_FILE,
    SUBMISSION_MISSING_DOCKERFILE,
    SUBMISSION_MODEL_PIN,
    SUBMISSION_NAME,
    SUBMISSION_ORIGIN_MISSING,
    SUBMISSION_SERVED_MODEL_NAME,
    SUBMISSION_TOO_LARGE,
    SUBMISSION_TOO_MANY_FILES,
    SUBMISSION_UNKNOWN_CHALLENGE,
)
from schemas.engine_config import ENGINE_KINDS, check_engine_config, known_knobs
from schemas.findings import Finding, errors_in
from submission.config import NAME_PATTERN, SubmissionConfig, frozen_config, read_config
from submission.defaults import CONFIG_FILE, ENGINE_CONFIG_FILE
from submission.files import LocalFile, scan_files
from submission.image_knobs import image_knob_findings
from submission.network_steps import network_step_findings
from submission.requirements import read_requirements

_ARG_BASE = re.compile(r"^\s*ARG\s+BASE_IMAGE(\s*=.*)?\s*$", re.IGNORECASE | re.MULTILINE)
_FROM_BASE = re.compile(
    r"^\s*FROM\s+(--platform=\S+\s+)?\$\{?BASE_IMAGE\}?(\s|$)", re.IGNORECASE | re.MULTILINE
)
_FROM = re.compile(r"^\s*FROM\s", re.IGNORECASE | re.MULTILINE)


@dataclass
class Validation:
    """What validate found, plus what it loaded on the way (for freeze to reuse)."""

    directory: Path
    config: SubmissionConfig | None = None
    challenge: ChallengeSpec | None = None
    files: list[LocalFile] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not errors_in(self.findings)

    def to_dict(self) -> dict[str, object]:
        return {
            "directory": str(self.directory),
            "valid": self.ok,
            "challenge": self.challenge.id if self.challenge else None,
            "files": len(self.files),
            "bytes": sum(f.size for f in self.files),
            "findings": [f.to_dict() for f in self.findings],
        }


def _check_dockerfile(directory: Path, cfg: SubmissionConfig) -> list[Finding]:
    rel = cfg.dockerfile
    path = directory / rel
    if Path(rel).is_absolute() or ".." in Path(rel).parts or not path.is_file():
        return [
            Finding(
                SUBMISSION_MISSING_DOCKERFILE,
                "error",
                f"{rel} is missing: the verifier rebuilds the image from it.",
                hint="podium submission init writes one; engine.dockerfile names another file",
                where=rel,
            )
        ]
    text = path.read_text(encoding="utf-8", errors="replace")
    first_from = _FROM.search(text)
    arg = _ARG_BASE.search(text)
    if (
        arg is None
        or first_from is None
        or arg.start() > first_from.start()
        or not _FROM_BASE.search(text)
    ):
        return [
            Finding(
                SUBMISSION_DOCKERFILE_BASE,
                "error",
                f"{rel} must declare ARG BASE_IMAGE before its first FROM and build FROM "
                "${BASE_IMAGE}, so the verifier can pin the base image by digest.",
                hint="start the Dockerfile with: ARG BASE_IMAGE / FROM ${BASE_IMAGE}",
                where=rel,
            )
        ]
    return []


def _at(key: str, lines: dict[str, int]) -> str:
    """``podium.toml:LINE KEY`` where the line is known, else the key."""
    line = lines.get(key)
    return f"{CONFIG_FILE}:{line} {key}" if line else key


def _check_names(cfg: SubmissionConfig, lines: dict[str, int]) -> list[Finding]:
    out = []
    for key, value in (("team", cfg.team), ("entry", cfg.entry)):
        if value and not re.fullmatch(NAME_PATTERN, value):
            out.append(
                Finding(
                    SUBMISSION_NAME,
                    "error",
                    f"{key} {value!r} is not a valid name: 1 to 64 letters, digits, '.', '_' or "
                    "'-', starting with a letter or digit.",
                    hint=f"rename {key}, e.g. {key} = {_suggest_name(value)!r}",
                    where=_at(key, lines),
                )
            )
    return out


def _suggest_name(value: str) -> str:
    """``value`` made into a valid name (for a hint): bad characters become '-'."""
    fixed = re.sub(r"[^A-Za-z0-9._-]+", "-", value).strip("-._")[:64]
    return fixed or "my-team"


def _check_knobs(
    cfg: SubmissionConfig, spec: ChallengeSpec | None, lines: dict[str, int]
) -> list[Finding]:
    """``[engine.config]`` against the schema, the engine kind and (given) the rules."""
    knob_lines = {
        key.removeprefix("engine.config."): n
        for key, n in lines.items()
        if key.startswith("engine.config.")
    }
    kind = cfg.kind if cfg.kind in ENGINE_KINDS else None
    return check_engine_config(cfg.config, spec, file=CONFIG_FILE, kind=kind, lines=knob_lines)


def _check_engine(
    cfg: SubmissionConfig, spec: ChallengeSpec, lines: dict[str, int] | None = None
) -> list[Finding]:
    lines = lines or {}
    out = []
    if cfg.kind and (cfg.kind not in ENGINE_KINDS or cfg.kind not in spec.engine.kinds):
        allowed = [k for k in spec.engine.kinds if k in ENGINE_KINDS]
        close = difflib.get_close_matches(cfg.kind, allowed, n=1, cutoff=0.6)
        out.append(
            Finding(
                ENGINE_KIND_NOT_ALLOWED,
                "error",
                f"engine.kind {cfg.kind!r} is not allowed by the {spec.id} challenge.",
                hint=(f"did you mean {close[0]!r}? " if close else "")
                + f"allowed kinds: {', '.join(allowed)}",
                where=_at("engine.kind", lines),
            )
        )
    out += _check_knobs(cfg, spec, lines)
    named = cfg.config.get("SERVED_MODEL_NAME")
    if named is not None and cfg.served_model_name is not None and named != cfg.served_model_name:
        out.append(
            Finding(
                SUBMISSION_SERVED_MODEL_NAME,
                "error",
                f"engine.config.SERVED_MODEL_NAME {named!r} differs from engine.served_model_name "
                f"{cfg.served_model_name!r}.",
                hint="set one of them only",
                where="engine.config",
            )
        )
    return out


def _check_ignored_knobs(cfg: SubmissionConfig) -> list[Finding]:
    """Knobs the chosen engine never reads: a warning, so nobody tunes a dead setting.

    On vllm, the knobs the launcher only records (``DEVICE``: the image's own vLLM build
    decides the device), as ``podium submission knobs`` lists them; a custom engine reads
    what it likes."""
    if cfg.kind == "vllm":
        return _check_recorded_vllm_knobs(cfg)
    if cfg.kind != "baseline":
        return []
    from engines.baseline.config import KNOBS

    known = set(known_knobs())  # an unknown key is config.no-such-knob, not this
    ignored = [key for key in cfg.config if key not in KNOBS and key in known]
    if not ignored:
        return []
    return [
        Finding(
            ENGINE_KNOB_IGNORED,
            "warning",
            f"the baseline engine ignores {', '.join(ignored)}: it reads only {', '.join(KNOBS)}.",
            hint="remove them from [engine.config], or use engine kind vllm, which acts on them",
            where="engine.config",
        )
    ]


def _check_recorded_vllm_knobs(cfg: SubmissionConfig) -> list[Finding]:
    from engines.vllm_launcher.args import KNOBS

    ignored = [key for key in cfg.config if KNOBS.get(key, ("",))[0] == "recorded"]
    if not ignored:
        return []
    return [
        Finding(
            ENGINE_KNOB_IGNORED,
            "warning",
            f"the vllm engine ignores {', '.join(ignored)}: the image's own vLLM build "
            "decides the device (a DEVICE naming another build is refused at start-up).",
            hint="remove them from [engine.config]",
            where="engine.config",
        )
    ]


def _check_generated_config(directory: Path, cfg: SubmissionConfig) -> list[Finding]:
    """``engine-config.json`` is generated into the bundle; a copy here is never used."""
    import json

    path = directory / ENGINE_CONFIG_FILE
    if not path.is_file():
        return []
    try:
        copy = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        copy = None
    want = frozen_config(cfg)
    if copy == want:
        return [
            Finding(
                SUBMISSION_GENERATED_FILE,
                "warning",
                f"{ENGINE_CONFIG_FILE} is generated from [engine.config] of {CONFIG_FILE} when "
                "the bundle is made; this copy matches it and is not used.",
                hint=f"delete {ENGINE_CONFIG_FILE}",
                where=ENGINE_CONFIG_FILE,
            )
        ]
    differ = sorted(
        k
        for k in set(want) | set(copy if isinstance(copy, dict) else {})
        if not isinstance(copy, dict) or copy.get(k) != want.get(k)
    )
    return [
        Finding(
            SUBMISSION_CONFIG_EDITED,
            "error",
            f"{ENGINE_CONFIG_FILE} differs from [engine.config] of {CONFIG_FILE}"
            + (f" ({', '.join(differ)})" if differ else "")
            + f": the bundle's copy is generated from {CONFIG_FILE}, so edits to this file "
            "would be lost.",
            hint=f"move the change into [engine.config] of {CONFIG_FILE}, then delete "
            f"{ENGINE_CONFIG_FILE}",
            where=ENGINE_CONFIG_FILE,
        )
    ]


def _check_model(cfg: SubmissionConfig, spec: ChallengeSpec) -> list[Finding]:
    out = []
    for key, want in (("repo_id", spec.model.repo_id), ("revision", spec.model.revision)):
        got = (cfg.model or {}).get(key)
        if got is not None and got != want:
            out.append(
                Finding(
                    SUBMISSION_MODEL_PIN,
                    "error",
                    f"model.{key} {got!r} is not the {spec.id} challenge's {want!r}: the challenge "
                    "pins the model.",
                    hint=f"remove model.{key} or set it to {want}",
                    where=f"model.{key}",
                )
            )
    return out


def _check_limits(files: list[LocalFile], spec: ChallengeSpec) -> list[Finding]:
    out = []
    lim = spec.limits
    if len(files) + 1 > lim.bundle_files:  # + manifest.json
        out.append(
            Finding(
                SUBMISSION_TOO_MANY_FILES,
                "error",
                f"{len(files)} files (with manifest.json {len(files) + 1}) exceed the {spec.id} "
                f"challenge's limit of {lim.bundle_files}.",
                hint="remove files the engine does not need",
            )
        )
    total = sum(f.size for f in files)
    if total > lim.unpacked_bytes:
        out.append(
            Finding(
                SUBMISSION_TOO_LARGE,
                "error",
                f"the files hold {total} bytes, more than the {spec.id} challenge's limit of "
                f"{lim.unpacked_bytes} bytes unpacked.",
                hint="model weights are mounted by the verifier; do not bundle them",
            )
        )
    return out


def _refuse_non_directory(directory: Path) -> None:
    """Raise when ``directory`` is a file or missing: there is nothing to examine."""
    if not directory.is_dir():
        if directory.is_file():
            raise UsageError(
                f"{directory} is a file, but a submission directory is expected here (the "
                f"folder that holds {CONFIG_FILE})",
                hint=f"pass its folder: {directory.parent}",
                where=str(directory),
            )
        raise UsageError(
            f"no such directory: {directory}",
            hint="podium submission init DIR writes a new submission directory",
            where=str(directory),
        )


def _load_named_challenge(
    name: str, lines: dict[str, int]
) -> tuple[ChallengeSpec | None, list[Finding]]:
    """The challenge ``podium.toml`` names, or None and the finding that it is unknown."""
    try:
        return load_challenge(name), []
    except UsageError as exc:
        line = lines.get("challenge")
        return None, [
            Finding(
                SUBMISSION_UNKNOWN_CHALLENGE,
                "error",
                f"challenge {name!r} is not a challenge podium knows.",
                hint=exc.hint,
                where=f"{CONFIG_FILE}:{line} challenge" if line else "challenge",
            )
        ]


def _check_origin(directory: Path, cfg: SubmissionConfig) -> list[Finding]:
    """An imported entry's ``origin.manifest`` must still be in the directory."""
    if (
        cfg.origin
        and isinstance(cfg.origin.get("manifest"), str)
        and not (directory / cfg.origin["manifest"]).is_file()
    ):
        return [
            Finding(
                SUBMISSION_ORIGIN_MISSING,
                "error",
                f"origin.manifest names {cfg.origin['manifest']!r}, which is missing.",
                hint="restore the original manifest or drop origin.manifest",
                where="origin.manifest",
            )
        ]
    return []


def validate_submission(
    directory: Path, *, challenge: ChallengeSpec | None = None, exclude: tuple[Path, ...] = ()
) -> Validation:
    """Check ``directory``; ``challenge`` overrides the one ``podium.toml`` names.

    Every problem is found in one pass: a ``podium.toml`` that breaks its schema still
    has its usable parts judged (names, challenge, knobs, Dockerfile), so fixing one
    problem never reveals another that was there all along.
    """
    _refuse_non_directory(directory)
    result = Validation(directory=directory)
    read = read_config(directory)
    result.findings += read.findings
    files, problems = scan_files(directory, exclude=exclude)
    result.files = files
    result.findings += problems
    _deps, problems = read_requirements(directory)
    result.findings += problems
    cfg = read.partial
    if cfg is None:
        return result
    result.config = read.config
    spec = challenge
    if spec is None and cfg.challenge:
        spec, problems = _load_named_challenge(cfg.challenge, read.lines)
        result.findings += problems
    result.challenge = spec
    result.findings += _check_names(cfg, read.lines)
    dockerfile = _check_dockerfile(directory, cfg)
    result.findings += dockerfile
    if not dockerfile:
        text = (directory / cfg.dockerfile).read_text(encoding="utf-8", errors="replace")
        result.findings += network_step_findings(text, file=cfg.dockerfile)
        result.findings += image_knob_findings(
            text,
            cfg.config,
            spec,
            file=cfg.dockerfile,
            config_where=lambda key: (
                _at(f"engine.config.{key}", read.lines)
                if f"engine.config.{key}" in read.lines
                else f"{CONFIG_FILE} [engine.config] {key}"
            ),
        )
    if read.config is not None:
        result.findings += _check_generated_config(directory, cfg)
    result.findings += _check_origin(directory, cfg)
    if spec is None:  # no rules to apply, but the knobs' names and types still count
        result.findings += _check_knobs(cfg, None, read.lines)
    else:
        result.findings += _check_engine(cfg, spec, read.lines)
        result.findings += _check_ignored_knobs(cfg)
        result.findings += _check_model(cfg, spec)
        result.findings += _check_limits(files, spec)
    return result
