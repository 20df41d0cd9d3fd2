"""``podium.toml``: what the participant writes about their submission.

The file is checked against an inline JSON Schema (its shape is a participant-side
convenience, not a contract that crosses a trust boundary: the frozen ``manifest.json``
is). Every problem becomes a ``Finding`` so ``validate`` can list them all at once.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator

from schemas.findings import Finding
from schemas.validate import json_path
from submission.defaults import CONFIG_FILE, DOCKERFILE

NAME_PATTERN = "^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$"

TOML_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["challenge", "team", "entry", "engine"],
    "additionalProperties": False,
    "properties": {
        "challenge": {"type": "string", "minLength": 1},
        "team": {"type": "string"},
        "entry": {"type": "string"},
        "engine": {
            "type": "object",
            "required": ["kind", "base_image", "port"],
            "additionalProperties": False,
            "properties": {
                "kind": {"type": "string"},
                "base_image": {"type": "string", "minLength": 1, "pattern": r"^\S+$"},
                "dockerfile": {"type": "string", "minLength": 1},
                "port": {"type": "integer", "minimum": 1, "maximum": 65535},
                "served_model_name": {"type": "string", "minLength": 1},
                "serve": {"type": "array", "items": {"type": "string"}, "minItems": 1},
                "config": {"type": "object"},
                "env": {"type": "object", "additionalProperties": {"type": "string"}},
            },
        },
        "model": {
            "type": "object",
            "additionalProperties": False,
            "properties": {"repo_id": {"type": "string"}, "revision": {"type": "string"}},
        },
        "reported": {
            "type": "object",
            "additionalProperties": False,
            "properties": {
                "tps": {"type": "number", "exclusiveMinimum": 0},
                "ppl": {"type": "number", "exclusiveMinimum": 0},
                "hardware": {"type": "string"},
            },
        },
        "origin": {
            "type": "object",
            "required": ["format"],
            "additionalProperties": False,
            "properties": {
                "format": {"type": "string", "minLength": 1},
                "manifest": {"type": "string", "minLength": 1},
                "notes": {"type": "array", "items": {"type": "string"}},
            },
        },
    },
}


@dataclass(frozen=True)
class SubmissionConfig:
    """The parsed ``podium.toml`` (only built from a document that passed ``TOML_SCHEMA``)."""

    challenge: str
    team: str
    entry: str
    kind: str
    base_image: str
    port: int
    dockerfile: str = DOCKERFILE
    served_model_name: str | None = None
    serve: list[str] | None = None
    config: dict[str, Any] = field(default_factory=dict)
    env: dict[str, str] = field(default_factory=dict)
    model: dict[str, str] | None = None
    reported: dict[str, Any] | None = None
    origin: dict[str, Any] | None = None

    @property
    def name(self) -> str:
        """``TEAM-ENTRY``: the stem of the bundle's file names."""
        return f"{self.team}-{self.entry}"

    @classmethod
    def from_doc(cls, doc: dict[str, Any]) -> SubmissionConfig:
        engine = doc["engine"]
        return cls(
            challenge=doc["challenge"],
            team=doc["team"],
            entry=doc["entry"],
            kind=engine["kind"],
            base_image=engine["base_image"],
            port=engine["port"],
            dockerfile=engine.get("dockerfile", DOCKERFILE),
            served_model_name=engine.get("served_model_name"),
            serve=engine.get("serve"),
            config=dict(engine.get("config", {})),
            env=dict(engine.get("env", {})),
            model=doc.get("model"),
            reported=doc.get("reported"),
            origin=doc.get("origin"),
        )


def frozen_config(cfg: SubmissionConfig) -> dict[str, Any]:
    """``[engine.config]`` plus ``SERVED_MODEL_NAME`` from ``engine.served_model_name``."""
    config = dict(cfg.config)
    if cfg.served_model_name and "SERVED_MODEL_NAME" not in config:
        config["SERVED_MODEL_NAME"] = cfg.served_model_name
    return config


def load_config(directory: Path) -> tuple[SubmissionConfig | None, list[Finding]]:
    """Read ``DIR/podium.toml``; ``None`` and the findings when it cannot be used."""
    path = directory / CONFIG_FILE
    if not path.is_file():
        return None, [
            Finding(
                "submission.missing-config",
                "error",
                f"{CONFIG_FILE} is missing: it names the challenge, team, entry and engine.",
                hint="podium submission init DIR writes one",
                where=CONFIG_FILE,
            )
        ]
    try:
        doc = tomllib.loads(path.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        return None, [
            Finding(
                "submission.config-parse",
                "error",
                f"{CONFIG_FILE} is not valid TOML: {exc}",
                where=CONFIG_FILE,
            )
        ]
    errors = sorted(
        Draft202012Validator(TOML_SCHEMA).iter_errors(doc),
        key=lambda e: list(map(str, e.absolute_path)),
    )
    if errors:
        return None, [
            Finding(
                "submission.config-schema",
                "error",
                f"{json_path(e.absolute_path).removeprefix('$.')}: {e.message}",
                hint=f"see the comments in {CONFIG_FILE} or docs/submission.md",
                where=f"{CONFIG_FILE}:{json_path(e.absolute_path)}",
            )
            for e in errors
        ]
    return SubmissionConfig.from_doc(doc), []
