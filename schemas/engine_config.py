"""The engine config: the knobs a participant tunes.

It is written as JSON, TOML or an env file (``KEY=VALUE`` lines, ``#`` comments, the
form the real challenge's configs were published in). Env values are decoded as JSON
when they parse as JSON (``188`` is an int, ``{"method": "mtp"}`` an object) and kept as
strings otherwise. Validation is the JSON Schema (types and bounds) plus the
challenge's rules (forbidden settings, allowed knobs), each broken rule one ``Finding``
whose message is one sentence naming the key.
"""

from __future__ import annotations

import difflib
import json
import re
import tomllib
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from podium.errors import SchemaError, UsageError
from schemas.challenge import ChallengeSpec, Rule
from schemas.check_ids import (
    CONFIG_KNOB_NAME,
    CONFIG_KNOB_NOT_ALLOWED,
    CONFIG_NO_SUCH_KNOB,
    CONFIG_SCHEMA,
    CONFIG_UNKNOWN_KNOB,
)
from schemas.findings import Finding
from schemas.knob_members import member_findings
from schemas.validate import validation_errors

KNOWN_KNOBS_SCHEMA_KIND = "engine-config"
#: What the schema's ``propertyNames`` allows.
KNOB_NAME = re.compile(r"^[A-Z][A-Z0-9_]*$")


def _decode_env_value(raw: str) -> Any:
    raw = raw.strip()
    if len(raw) >= 2 and raw[0] == raw[-1] and raw[0] in "'\"":
        inner = raw[1:-1]
        try:
            value = json.loads(inner)
            return value if isinstance(value, (dict, list)) else inner
        except json.JSONDecodeError:
            return inner
    try:
        return json.loads(raw)
    except json.JSONDecodeError:
        return raw


def parse_env_text(text: str, *, source: str = "<env>") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for lineno, line in enumerate(text.splitlines(), start=1):
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        if stripped.startswith("export "):
            stripped = stripped[len("export ") :]
        if "=" not in stripped:
            raise SchemaError(
                f"line {lineno} is not KEY=VALUE: {stripped[:60]!r}",
                file=source,
                json_path=f"line {lineno}",
                expected="KEY=VALUE",
            )
        key, _, value = stripped.partition("=")
        key = key.strip()
        if key in out:
            raise SchemaError(
                f"{key} is set twice (line {lineno})", file=source, json_path=f"$.{key}"
            )
        out[key] = _decode_env_value(value)
    return out


def object_knobs() -> list[str]:
    """The known knobs whose value is a JSON object (``SPECULATIVE_CONFIG``, ``HF_OVERRIDES``)."""
    return [k for k in _known_knobs() if knob_schema(k).get("type") == "object"]


def decode_json_knobs(config: dict[str, Any]) -> dict[str, Any]:
    """``config`` with each object knob given as JSON text decoded into its object.

    The real challenge published ``SPECULATIVE_CONFIG={"method":"mtp",...}`` as env text;
    in a TOML file the same value is an inline table, or that text pasted in quotes. Both
    mean the one object, so both are accepted; text that is no JSON object is left as it
    is, for the schema to name."""
    out = dict(config)
    for key in object_knobs():
        value = out.get(key)
        if isinstance(value, str):
            try:
                decoded = json.loads(value)
            except json.JSONDecodeError:
                continue
            if isinstance(decoded, dict):
                out[key] = decoded
    return out


def _toml_inline(value: Any) -> str:
    """``value`` as a TOML literal (JSON's scalars are TOML's too), for hints."""
    if isinstance(value, dict):
        inner = ", ".join(f"{k} = {_toml_inline(v)}" for k, v in value.items())
        return "{ " + inner + " }"
    if isinstance(value, list):
        return "[" + ", ".join(_toml_inline(v) for v in value) + "]"
    return json.dumps(value)


def object_knob_hint(knob: str) -> str:
    """How to write an object knob, in both forms a config file may use."""
    examples = knob_schema(knob).get("examples") or [{"key": "value"}]
    example = examples[0]
    return (
        f"write an object: in podium.toml an inline table, {knob} = {_toml_inline(example)}, "
        f"or its JSON text in single quotes, {knob} = '{json.dumps(example)}'"
    )


def _object_text_problem(value: Any) -> str:
    """Why a knob's text is not a JSON object."""
    try:
        decoded = json.loads(value)
    except json.JSONDecodeError as exc:
        return f"its text is not JSON ({exc.msg} at column {exc.colno})"
    return f"its text is JSON, but a {type(decoded).__name__}, not an object"


def load_engine_config(path: Path) -> dict[str, Any]:
    """Read an engine config file (``.json``, ``.toml`` or env) into a dict."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise UsageError(f"no such file: {path}") from None
    if path.suffix == ".json":
        try:
            doc = json.loads(text)
        except json.JSONDecodeError as exc:
            raise SchemaError(
                f"not valid JSON: {exc.msg} at line {exc.lineno}", file=str(path)
            ) from None
    elif path.suffix == ".toml":
        try:
            doc = tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            raise SchemaError(f"not valid TOML: {exc}", file=str(path)) from None
    else:
        doc = parse_env_text(text, source=str(path))
    if not isinstance(doc, dict):
        raise SchemaError("an engine config must be an object of KEY: value", file=str(path))
    return decode_json_knobs(doc)


def _lookup(config: dict[str, Any], dotted: str) -> tuple[bool, Any]:
    head, *rest = dotted.split(".")
    if head not in config:
        return False, None
    value: Any = config[head]
    for part in rest:
        if not isinstance(value, dict) or part not in value:
            return False, None
        value = value[part]
    return True, value


def _truthy(value: Any) -> bool:
    if isinstance(value, str):
        return value.strip().lower() not in ("", "0", "false", "no", "off")
    return bool(value)


def rule_fires(rule: Rule, config: dict[str, Any]) -> bool:
    """True when ``config`` does what ``rule`` forbids. An absent key never fires."""
    present, value = _lookup(config, rule.key)
    if not present:
        return False
    if rule.op == "truthy":
        return _truthy(value)
    if rule.op == "equals":
        return bool(value == rule.value)
    if rule.op == "not_equals":
        return bool(value != rule.value)
    if rule.op == "any_value_equals":
        return isinstance(value, dict) and any(v == rule.value for v in value.values())
    raise SchemaError(f"unknown rule op {rule.op!r}", json_path=f"$.engine.forbidden[{rule.id}]")


def _closest_knob(key: str) -> str | None:
    """The known knob a misspelt key most likely meant (``dtype`` -> ``DTYPE``)."""
    known = _known_knobs()
    upper = re.sub(r"[^A-Z0-9_]", "_", key.upper())
    if upper in known:
        return upper
    close = difflib.get_close_matches(upper, known, n=1, cutoff=0.75)
    return close[0] if close else None


#: The engine kinds a submission can name.
ENGINE_KINDS = ("vllm", "baseline", "custom")
#: Engine kinds on which a key one typo away from a known knob is an error: the vllm
#: launcher passes a key that is no knob to the server as an environment variable (so a
#: misspelt knob would silently do nothing), the baseline reads known knobs only.
STRICT_KINDS = ("vllm", "baseline")


def key_lines(text: str, keys: Iterable[str]) -> dict[str, int]:
    """Each key's first line in an env, TOML or JSON config text (for messages only)."""
    out: dict[str, int] = {}
    rows = text.splitlines()
    for key in keys:
        pattern = re.compile(rf'^\s*(export\s+)?"?{re.escape(key)}"?\s*[=:]')
        for number, row in enumerate(rows, start=1):
            if pattern.match(row):
                out[key] = number
                break
    return out


def _where(key: str, file: str | None, lines: Mapping[str, int] | None) -> str:
    """``FILE:LINE KEY`` where the line is known, else ``FILE:KEY`` (or the key alone)."""
    line = (lines or {}).get(key)
    if file and line:
        return f"{file}:{line} {key}"
    return f"{file}:{key}" if file else key


def _free_key(key: str, kind: str | None, meant: str | None) -> bool:
    """True for a key the engine kind takes as it is: an environment variable of a vLLM
    server (not a near miss of a knob), anything on a custom engine or an unknown kind."""
    if kind == "vllm":
        return meant is None
    return kind not in STRICT_KINDS


def _name_findings(
    config: dict[str, Any],
    file: str | None,
    kind: str | None,
    lines: Mapping[str, int] | None,
) -> list[Finding]:
    """Keys that are not knob names, and UPPER_CASE keys podium does not know.

    On the baseline an unknown key is an error (it reads known knobs only); on vllm a key
    one typo away from a known knob is (other keys are the server's environment
    variables). Elsewhere (a custom engine, or a config judged without its kind) a near
    miss is a warning.
    """
    known = set(_known_knobs())
    out = []
    for key in config:
        where = _where(key, file, lines)
        meant = _closest_knob(key)
        if not KNOB_NAME.fullmatch(key):
            out.append(
                Finding(
                    check_id=CONFIG_KNOB_NAME,
                    severity="error",
                    message=f"{key!r} is not a knob name: knob names are UPPER_CASE letters, "
                    "digits and '_'.",
                    hint=f"did you mean {meant}?" if meant else "write the name in UPPER_CASE",
                    where=where,
                )
            )
        elif key in known:
            continue
        elif not _free_key(key, kind, meant):
            accepted = (
                "the knobs: `podium submission knobs DIR`; environment variables go in "
                "[engine.env]; a custom engine takes free-form knobs"
            )
            out.append(
                Finding(
                    check_id=CONFIG_NO_SUCH_KNOB,
                    severity="error",
                    message=f"{key} is not a knob the {kind} engine reads, so it would do nothing.",
                    hint=f"did you mean {meant}? ({accepted})" if meant else accepted,
                    where=where,
                )
            )
        elif meant is not None:
            out.append(
                Finding(
                    check_id=CONFIG_UNKNOWN_KNOB,
                    severity="warning",
                    message=f"{key} is not a knob podium knows; it is passed to the engine "
                    "as it is.",
                    hint=f"did you mean {meant}?",
                    where=where,
                )
            )
    return out


def check_engine_config(
    config: dict[str, Any],
    challenge: ChallengeSpec | None = None,
    *,
    file: str | None = None,
    kind: str | None = None,
    lines: Mapping[str, int] | None = None,
) -> list[Finding]:
    """Every problem of ``config`` at once: names, schema errors, then the challenge's rules.

    ``kind`` is the engine kind the config is for (None: not known, as for a bare
    config file); ``lines`` maps keys to their line in ``file``, for messages.
    """
    findings = _name_findings(config, file, kind, lines)
    named = {k: v for k, v in config.items() if KNOB_NAME.fullmatch(k)}
    objects = set(object_knobs())
    for err in validation_errors(KNOWN_KNOBS_SCHEMA_KIND, named, file=file):
        place = err.json_path.removeprefix("$.")
        top = place.split(".")[0].split("[")[0]
        accepted = allowed_values(top) if top in known_knobs() else None
        message = err.message if place == "$" else f"{place}: {err.message}"
        hint = (
            f"accepted: {accepted}"
            if accepted
            else (f"expected {err.expected}" if err.expected else None)
        )
        if place == top and top in objects and isinstance(named.get(top), str):
            message = f"{top} must be an object: {_object_text_problem(named[top])}"
            hint = object_knob_hint(top)
        findings.append(
            Finding(
                check_id=CONFIG_SCHEMA,
                severity="error",
                message=message,
                hint=hint,
                where=_where(top, file, lines) if place != "$" else (file or place),
            )
        )
    if kind in (None, "vllm"):
        findings += member_findings(
            named,
            vllm=(challenge.engine.vllm or {}).get("version") if challenge else None,
            open_knobs=frozenset(challenge.engine.open_members or ()) if challenge else frozenset(),
            where=lambda knob: _where(knob, file, lines),
        )
    if challenge is None:
        return findings
    allowed = challenge.engine.allowed_knobs
    if allowed is not None:
        schema_known = set(_known_knobs())
        for key in config:
            if key in schema_known and key not in allowed:
                findings.append(
                    Finding(
                        check_id=CONFIG_KNOB_NOT_ALLOWED,
                        severity="error",
                        message=f"{key} is not a knob the {challenge.id} challenge allows.",
                        hint=f"allowed knobs: {', '.join(allowed)}",
                        where=_where(key, file, lines),
                    )
                )
    for rule in challenge.engine.forbidden:
        if rule_fires(rule, config):
            findings.append(
                Finding(
                    check_id=rule.id,
                    severity="error",
                    message=rule.message,
                    hint=rule.hint,
                    where=_where(rule.key.split(".")[0], file, lines) if file else rule.key,
                )
            )
    return findings


def _known_knobs() -> list[str]:
    from schemas.validate import load_schema

    return list(load_schema(KNOWN_KNOBS_SCHEMA_KIND)["properties"])


def known_knobs() -> list[str]:
    """Every knob the engine-config schema types, in the schema's order."""
    return _known_knobs()


def knob_schema(knob: str) -> dict[str, Any]:
    """The schema of one known knob, with ``$ref`` resolved."""
    from schemas.validate import load_schema

    schema = load_schema(KNOWN_KNOBS_SCHEMA_KIND)
    node: dict[str, Any] = dict(schema["properties"][knob])
    ref = node.pop("$ref", None)
    if isinstance(ref, str) and ref.startswith("#/$defs/"):
        node = {**schema["$defs"][ref.removeprefix("#/$defs/")], **node}
    return node


def _bounds(node: dict[str, Any]) -> str:
    lo, hi = node.get("minimum"), node.get("maximum")
    xlo = node.get("exclusiveMinimum")
    if xlo is not None and hi is not None:
        return f" > {xlo} and <= {hi}"
    if lo is not None and hi is not None:
        return f" {lo}..{hi}"
    if lo is not None:
        return f" >= {lo}"
    if xlo is not None:
        return f" > {xlo}"
    return ""


def allowed_values(knob: str) -> str:
    """The values the schema accepts for ``knob``, in a few words (``integer 16..1048576``)."""
    node = knob_schema(knob)
    if "oneOf" in node:  # the flag: a boolean or 0/1
        return "true/false or 1/0"
    if "enum" in node:
        return "one of " + ", ".join(str(v) for v in node["enum"])
    kind = node.get("type")
    if kind == "integer":
        return "integer" + _bounds(node)
    if kind == "number":
        return "number" + _bounds(node)
    if kind == "object":
        members = node.get("properties")
        return "JSON object" + (f" ({', '.join(members)})" if members else "")
    if kind == "string":
        return "text"
    return str(kind or "any value")


def knob_description(knob: str) -> str:
    """What a known knob does, from the schema (empty when it says nothing)."""
    return str(knob_schema(knob).get("description") or "")
