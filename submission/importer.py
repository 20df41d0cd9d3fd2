"""``import``: a Fast Gemma Challenge submission directory becomes a podium submission.

The original format is a ``manifest.json`` (``name``, ``dependencies``, ``model_id``,
``served_model_name``, ``port``, ``serve``, ``env``) plus ``serve.py`` and any files, run
inside a fixed vLLM image. It imports as engine kind ``custom`` (the participant's own
``serve`` command runs, not podium's vLLM launcher) on the vLLM base image. Nothing is
lost: every file is copied verbatim, the original manifest is kept byte for byte as
``origin-manifest.json`` (and frozen into the podium manifest's ``origin.manifest``),
and docs/import-mapping.md says where each field goes.
"""

from __future__ import annotations

import json
import re
import shutil
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from podium.errors import SchemaError, UsageError
from schemas.challenge import ChallengeSpec, list_challenges, load_challenge
from schemas.validate import load_schema, read_json
from submission.defaults import (
    CONFIG_FILE,
    DOCKERFILE,
    MANIFEST_FILE,
    ORIGIN_MANIFEST_FILE,
    REQUIREMENTS_FILE,
    VLLM_BASE_IMAGE,
)
from submission.templates import cmd_json, toml_table, toml_value

ORIGIN_FORMAT = "fast-gemma-challenge"
ORIGINAL_FIELDS = ("name", "dependencies", "model_id", "served_model_name", "port", "serve", "env")
_GENERATED = (CONFIG_FILE, DOCKERFILE, ORIGIN_MANIFEST_FILE)


@dataclass
class Imported:
    directory: Path
    team: str
    entry: str
    config: dict[str, Any] = field(default_factory=dict)
    env: dict[str, str] = field(default_factory=dict)
    files: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "directory": str(self.directory),
            "team": self.team,
            "entry": self.entry,
            "config": self.config,
            "env": self.env,
            "files": self.files,
            "notes": self.notes,
        }


def _slug(text: str) -> str:
    slug = re.sub(r"[^A-Za-z0-9._-]+", "-", text).strip("-._")[:64]
    return slug or "imported"


def decode_env_value(raw: str) -> Any:
    """An env string as a knob value: JSON when it parses as JSON, else the string."""
    try:
        return json.loads(raw)
    except json.JSONDecodeError:
        return raw


def _check_original(doc: Any, src: Path) -> dict[str, Any]:
    where = str(src / MANIFEST_FILE)
    if not isinstance(doc, dict):
        raise SchemaError("the original manifest is not a JSON object", file=where)
    kinds = {
        "name": str,
        "dependencies": list,
        "model_id": str,
        "served_model_name": str,
        "port": int,
        "serve": list,
        "env": dict,
    }
    for key, kind in kinds.items():
        if key in doc and not isinstance(doc[key], kind):
            raise SchemaError(f"{key} must be a {kind.__name__}", file=where, json_path=f"$.{key}")
    for key in ("serve", "dependencies"):
        if not all(isinstance(v, str) for v in doc.get(key, [])):
            raise SchemaError(f"{key} must be a list of strings", file=where, json_path=f"$.{key}")
    if not all(isinstance(v, str) for v in doc.get("env", {}).values()):
        raise SchemaError("env values must be strings", file=where, json_path="$.env")
    if not doc.get("serve"):
        raise SchemaError("serve (the start command) is missing", file=where, json_path="$.serve")
    return doc


def split_env(env: dict[str, str]) -> tuple[dict[str, Any], dict[str, str]]:
    """Known knobs (decoded) go to the engine config; everything else stays env."""
    known = set(load_schema("engine-config")["properties"])
    config = {k: decode_env_value(v) for k, v in env.items() if k in known}
    rest = {k: v for k, v in env.items() if k not in known}
    return config, rest


def _docker_env(value: str) -> str:
    return (
        '"'
        + value.replace("\\", "\\\\").replace('"', '\\"').replace("$", "\\$").replace("\n", "\\n")
        + '"'
    )


def _dockerfile(doc: dict[str, Any], base_image: str, port: int, has_reqs: bool) -> str:
    lines = [
        "# Imported from a Fast Gemma Challenge submission: the original serve command runs in",
        "# the vLLM image with the original env (kept verbatim below). podium.toml mirrors the",
        "# env's known knobs in [engine.config]: change a knob in both places.",
        "ARG BASE_IMAGE=" + base_image,
        "FROM ${BASE_IMAGE}",
        "WORKDIR /submission",
        "COPY . /submission/",
    ]
    if has_reqs:
        lines += [
            "# The build has no network: keep the wheels of requirements.txt in wheels/",
            "# (pip download --only-binary=:all: -d wheels/ -r requirements.txt, with the",
            "# base image's --platform and --python-version) and install them from there.",
            "RUN python3 -m pip install --no-cache-dir --no-index --find-links wheels/ "
            f"-r {REQUIREMENTS_FILE}",
        ]
    env = dict(doc.get("env", {}))
    env.setdefault("PORT", str(port))
    lines.append("ENV " + " \\\n    ".join(f"{k}={_docker_env(v)}" for k, v in env.items()))
    lines += [f"EXPOSE {port}", "ENTRYPOINT []", "CMD " + cmd_json(list(doc["serve"])), ""]
    return "\n".join(lines)


def _toml(
    team: str,
    entry: str,
    spec: ChallengeSpec,
    doc: dict[str, Any],
    base_image: str,
    port: int,
    config: dict[str, Any],
    env: dict[str, str],
    notes: list[str],
) -> str:
    head = [
        f"# Imported from a Fast Gemma Challenge submission (original: {ORIGIN_MANIFEST_FILE}).",
        f"challenge = {toml_value(spec.id)}",
        f"team = {toml_value(team)}",
        f"entry = {toml_value(entry)}",
        "",
        "[engine]",
        'kind = "custom"',
        f"base_image = {toml_value(base_image)}",
        f"port = {port}",
    ]
    if doc.get("served_model_name"):
        head.append(f"served_model_name = {toml_value(doc['served_model_name'])}")
    head.append(f"serve = {toml_value(list(doc['serve']))}")
    body = "\n".join(head) + "\n\n[engine.config]\n" + toml_table(config)
    body += "\n[engine.env]\n" + toml_table(env)
    body += f"\n[origin]\nformat = {toml_value(ORIGIN_FORMAT)}\n"
    body += f"manifest = {toml_value(ORIGIN_MANIFEST_FILE)}\n"
    if notes:
        body += f"notes = {toml_value(notes)}\n"
    return body


def import_submission(
    src: Path,
    dest: Path,
    spec: ChallengeSpec,
    *,
    team: str | None = None,
    entry: str | None = None,
    base_image: str = VLLM_BASE_IMAGE,
    force: bool = False,
) -> Imported:
    """Copy ``src`` into ``dest`` as a podium submission directory."""
    if not (src / MANIFEST_FILE).is_file():
        raise UsageError(
            f"{src} has no {MANIFEST_FILE}", hint="point at a Fast Gemma submission folder"
        )
    if dest.is_dir() and any(dest.iterdir()) and not force:
        raise UsageError(f"{dest} is not empty", hint="choose an empty directory or pass --force")
    doc = _check_original(read_json(src / MANIFEST_FILE), src)
    name = doc.get("name") or src.resolve().name
    team, entry = team or _slug(name), entry or _slug(name)
    clashes = [
        n
        for n in (*_GENERATED, REQUIREMENTS_FILE if doc.get("dependencies") else "")
        if n and (src / n).exists()
    ]
    if clashes:
        raise UsageError(
            f"{src} already has {', '.join(clashes)}, which import writes",
            hint="rename those files in the original folder first",
        )
    config, env = split_env(doc.get("env", {}))
    if doc.get("model_id"):
        config["MODEL"] = doc["model_id"]
    port = int(doc.get("port") or spec.engine.port)
    notes = [
        f"field {k!r} has no podium equivalent; it is kept in origin.manifest"
        for k in doc
        if k not in ORIGINAL_FIELDS
    ]
    result = Imported(dest, team, entry, config, env, notes=notes)

    dest.mkdir(parents=True, exist_ok=True)
    for path in sorted(src.rglob("*")):
        rel = path.relative_to(src)
        if rel.as_posix() == MANIFEST_FILE or path.is_dir():
            continue
        if path.is_symlink() or not stat.S_ISREG(path.lstat().st_mode):
            raise UsageError(
                f"{rel} in {src} is a link or special file", hint="replace it with a copy"
            )
        (dest / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(path, dest / rel)  # bytes, mode and mtime
        result.files.append(rel.as_posix())
    shutil.copy2(src / MANIFEST_FILE, dest / ORIGIN_MANIFEST_FILE)
    has_reqs = bool(doc.get("dependencies"))
    if has_reqs:
        (dest / REQUIREMENTS_FILE).write_text(
            "".join(f"{d}\n" for d in doc["dependencies"]), encoding="utf-8"
        )
    (dest / DOCKERFILE).write_text(_dockerfile(doc, base_image, port, has_reqs), encoding="utf-8")
    (dest / CONFIG_FILE).write_text(
        _toml(team, entry, spec, doc, base_image, port, config, env, notes), encoding="utf-8"
    )
    result.files += [ORIGIN_MANIFEST_FILE, DOCKERFILE, CONFIG_FILE] + (
        [REQUIREMENTS_FILE] if has_reqs else []
    )
    result.files.sort()
    return result


def challenge_of_original(src: Path) -> str | None:
    """The shipped challenge whose pinned model is the original manifest's ``model_id``
    (None when the manifest cannot be read, or when none or several match)."""
    try:
        model = read_json(src / "manifest.json").get("model_id")
    except (AttributeError, UsageError):
        return None
    matches = [n for n in list_challenges() if load_challenge(n).model.repo_id == model]
    return matches[0] if len(matches) == 1 else None
