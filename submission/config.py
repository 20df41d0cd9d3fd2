"""``podium.toml``: what the participant writes about their submission.

The file is checked against an inline JSON Schema (its shape is a participant-side
convenience, not a contract that crosses a trust boundary: the frozen ``manifest.json``
is). Every problem becomes a ``Finding`` so ``validate`` can list them all at once.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator

from schemas.check_ids import (
    SUBMISSION_CONFIG_PARSE,
    SUBMISSION_CONFIG_SCHEMA,
    SUBMISSION_MISSING_CONFIG,
)
from schemas.engine_config import decode_json_knobs, known_knobs
from schemas.findings import Finding
from submission.defaults import CONFIG_FILE, DOCKERFILE
from submission.toml_parse import parse_salvaging

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
            config=decode_json_knobs(engine.get("config", {})),
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


@dataclass
class ConfigRead:
    """What reading ``podium.toml`` gave.

    ``config`` is set only when the file is valid. ``partial`` is built from whatever
    parts of a file that parsed are usable (a bad or missing value becomes empty), so
    validate can judge the rest of the entry in the same pass instead of stopping at
    the first schema error. ``lines`` maps dotted keys (``engine.port``) to their line.
    """

    config: SubmissionConfig | None
    partial: SubmissionConfig | None
    findings: list[Finding]
    lines: dict[str, int] = field(default_factory=dict)


_TABLE = re.compile(r"^\[\s*([A-Za-z0-9_.\s-]+?)\s*\]")
_KEY = re.compile(r"^([A-Za-z0-9_-]+|\"[^\"]*\")\s*=")


def toml_lines(text: str) -> dict[str, int]:
    """Dotted key -> the 1-based line that sets it (or opens its table); for messages only."""
    out: dict[str, int] = {}
    table = ""
    for number, line in enumerate(text.splitlines(), start=1):
        stripped = line.strip()
        if (m := _TABLE.match(stripped)) and not stripped.startswith("[["):
            table = re.sub(r"\s+", "", m[1])
            out.setdefault(table, number)
        elif m := _KEY.match(stripped):
            key = m[1].strip('"')
            out.setdefault(f"{table}.{key}" if table else key, number)
    return out


#: What to write for each required key, shown when it is missing.
_REQUIRED_EXAMPLE = {
    "challenge": 'challenge = "fast-gemma" (a shipped challenge, see `podium challenge list`)',
    "team": 'team = "my-team" (1 to 64 letters, digits, ".", "_" or "-")',
    "entry": 'entry = "mtp-7" (1 to 64 letters, digits, ".", "_" or "-")',
    "engine": "[engine] with kind, base_image and port (`podium submission init` writes one)",
    "kind": 'kind = "vllm" (or baseline, custom)',
    "base_image": 'base_image = "vllm/vllm-openai:v0.x.y" (the image to build FROM)',
    "port": "port = 8000 (the port the engine listens on)",
    "format": 'format = "fast-gemma-challenge"',
}


def _node_words(node: dict[str, Any]) -> str:
    """What a schema node accepts, in a few words."""
    kind = node.get("type", "value")
    words = {"integer": "an integer", "string": "a string", "number": "a number"}.get(
        kind, f"a {kind}"
    )
    lo, hi = node.get("minimum"), node.get("maximum")
    if lo is not None and hi is not None:
        words += f" from {lo} to {hi}"
    if node.get("pattern") == r"^\S+$":
        words += " without spaces"
    if node.get("minLength"):
        words += ", not empty"
    return words


def _place(parts: list[str]) -> str:
    return "[" + ".".join(parts) + "]" if parts else CONFIG_FILE


def _schema_findings(err: Any, lines: dict[str, int]) -> list[Finding]:
    """One ``ValidationError`` of ``podium.toml`` as findings a participant can act on."""
    parts = [str(p) for p in err.absolute_path]
    dotted = ".".join(parts)

    def where(key: str | None = None) -> str:
        path = ".".join([*parts, key]) if key else dotted
        line = lines.get(path) or lines.get(dotted)
        return (
            f"{CONFIG_FILE}:{line}" + (f" {path}" if path else "")
            if line
            else (f"{CONFIG_FILE} {path}".rstrip())
        )

    def finding(message: str, hint: str | None, at: str) -> Finding:
        return Finding(SUBMISSION_CONFIG_SCHEMA, "error", message, hint=hint, where=at)

    if err.validator == "required":
        m = re.match(r"'(.+)' is a required property", err.message)
        key = m[1] if m else "?"
        return [
            finding(
                f"{_place(parts)} has no {key}, which is required.",
                f"add {_REQUIRED_EXAMPLE.get(key, key)}",
                where(),
            )
        ]
    if err.validator == "additionalProperties" and isinstance(err.instance, dict):
        known = list(err.schema.get("properties", {}))
        out = []
        for key in err.instance:
            if key in known:
                continue
            close = difflib.get_close_matches(key, known, n=1, cutoff=0.6)
            accepted = f"accepted keys of {_place(parts)}: {', '.join(known)}"
            out.append(
                finding(
                    f"{key!r} is not a key of {_place(parts)}.",
                    f"did you mean {close[0]!r}? {accepted}" if close else accepted,
                    where(key),
                )
            )
        return out
    value = err.instance
    shown = repr(value) if not isinstance(value, (dict, list)) else type(value).__name__
    return [
        finding(
            f"{dotted} = {shown} is not accepted: {err.message}.",
            f"write {_node_words(err.schema)}" if "type" in err.schema else None,
            where(),
        )
    ]


def _get(doc: Any, key: str, kind: type | tuple[type, ...], default: Any) -> Any:
    value = doc.get(key, default) if isinstance(doc, dict) else default
    if isinstance(value, bool) and kind is int:
        return default
    return value if isinstance(value, kind) else default


def _partial(doc: dict[str, Any]) -> SubmissionConfig:
    """A config from the usable parts of ``doc``: a bad or missing value becomes empty."""
    engine = _get(doc, "engine", dict, {})
    env = _get(engine, "env", dict, {})
    return SubmissionConfig(
        challenge=_get(doc, "challenge", str, ""),
        team=_get(doc, "team", str, ""),
        entry=_get(doc, "entry", str, ""),
        kind=_get(engine, "kind", str, ""),
        base_image=_get(engine, "base_image", str, ""),
        port=_get(engine, "port", int, 0),
        dockerfile=_get(engine, "dockerfile", str, DOCKERFILE) or DOCKERFILE,
        served_model_name=_get(engine, "served_model_name", str, None),
        serve=_get(engine, "serve", list, None),
        config=decode_json_knobs(_get(engine, "config", dict, {})),
        env={k: v for k, v in env.items() if isinstance(v, str) and k not in known_knobs()},
        model=_get(doc, "model", dict, None),
        reported=_get(doc, "reported", dict, None),
        origin=_get(doc, "origin", dict, None),
    )


def _knobs_in_env(doc: dict[str, Any], lines: dict[str, int]) -> list[Finding]:
    """Known knobs under ``[engine.env]``: a knob set there is only an environment variable,
    which neither podium's launcher nor the verifier's reference reads as the knob (a key
    written at the end of the file, below ``[engine.env]``, lands there)."""
    env = _get(_get(doc, "engine", dict, {}), "env", dict, {})
    known = set(known_knobs())
    out = []
    for key, value in env.items():
        if key not in known:
            continue
        line = lines.get(f"engine.env.{key}")
        out.append(
            Finding(
                SUBMISSION_CONFIG_SCHEMA,
                "error",
                f"{key} is a knob, but it is set under [engine.env], where it would be only an "
                "environment variable: the engine and the verifier read knobs from "
                "[engine.config].",
                hint=f"move `{key} = {_literal(value)}` to [engine.config] (the keys after "
                "[engine.env] belong to it: put knobs above it)",
                where=f"{CONFIG_FILE}:{line} engine.env.{key}"
                if line
                else f"{CONFIG_FILE} engine.env.{key}",
            )
        )
    return out


def _literal(value: Any) -> str:
    """A TOML value as it is written (for hints)."""
    import json

    if isinstance(value, bool):
        return "true" if value else "false"
    return json.dumps(value) if not isinstance(value, dict) else "{ ... }"


def _is_knob_in_env(err: Any) -> bool:
    parts = [str(p) for p in err.absolute_path]
    return len(parts) == 3 and parts[:2] == ["engine", "env"] and parts[2] in known_knobs()


def read_config(directory: Path) -> ConfigRead:
    """Read ``DIR/podium.toml``: the config, its findings, and what parts are usable."""
    path = directory / CONFIG_FILE
    if not path.is_file():
        return ConfigRead(
            None,
            None,
            [
                Finding(
                    SUBMISSION_MISSING_CONFIG,
                    "error",
                    f"{CONFIG_FILE} is missing: it names the challenge, team, entry and engine.",
                    hint="podium submission init DIR writes one",
                    where=CONFIG_FILE,
                )
            ],
        )
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        finding = Finding(
            SUBMISSION_CONFIG_PARSE,
            "error",
            f"{CONFIG_FILE} is not UTF-8 text: {exc}",
            hint="save it as UTF-8",
            where=CONFIG_FILE,
        )
        return ConfigRead(None, _partial({}), [finding])
    lines = toml_lines(text)
    doc, parse_findings, dropped = parse_salvaging(text)
    if doc is None:  # nothing usable: the rest (the Dockerfile, the files) is still judged
        return ConfigRead(None, _partial({}), parse_findings, lines)
    errors = sorted(
        Draft202012Validator(TOML_SCHEMA).iter_errors(doc),
        key=lambda e: list(map(str, e.absolute_path)),
    )
    # a key that seems missing may sit on a broken line (or in a broken [table]): with lines
    # set aside, "required" is left to the next run, once the file parses
    findings = [
        f
        for e in errors
        if not _is_knob_in_env(e) and not (dropped and e.validator == "required")
        for f in _schema_findings(e, lines)
    ]
    findings = parse_findings + findings + _knobs_in_env(doc, lines)
    if findings:
        return ConfigRead(None, _partial(doc), findings, lines)
    cfg = SubmissionConfig.from_doc(doc)
    return ConfigRead(cfg, cfg, [], lines)


def load_config(directory: Path) -> tuple[SubmissionConfig | None, list[Finding]]:
    """Read ``DIR/podium.toml``; ``None`` and the findings when it cannot be used."""
    read = read_config(directory)
    return read.config, read.findings
