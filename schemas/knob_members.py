"""The members of the object knobs (``SPECULATIVE_CONFIG``, ``HF_OVERRIDES``, ...), checked.

The engine-config schema types each knob; an object knob's members are typed here, from
``schemas/json/knob-members.json``, which ``scripts/knob_members.py`` generates from the
config classes of the vLLM release the challenges pin (and, for ``HF_OVERRIDES``, from the
Gemma 4 config classes of the transformers release that vLLM release requires). The file
names both versions; a challenge that pins another vLLM release gets a warning instead of
member checks, since its members may differ.

- A member the class does not have is an error: vLLM's config classes forbid unknown fields
  (the server would refuse to start), and a near miss (``num_speculative_token``) names the
  member it most likely meant.
- A knob marked ``open`` (``HF_OVERRIDES``: a Hugging Face config takes any attribute, and
  one the model does not read does nothing) passes an unknown member that is no near miss
  only where the challenge lists the knob in ``engine.open_members``.
- A member's value is checked against its generated type, except where the engine-config
  schema already types that member (its own, tighter bounds speak there).
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Callable, Iterator, Mapping
from functools import cache
from importlib import resources
from typing import Any

from jsonschema import Draft202012Validator

from schemas.check_ids import CONFIG_MEMBER, CONFIG_MEMBERS_UNPINNED
from schemas.findings import Finding


@cache
def members_data() -> dict[str, Any]:
    """The generated member table (``knob-members.json``)."""
    text = resources.files("schemas").joinpath("json", "knob-members.json").read_text("utf-8")
    data: dict[str, Any] = json.loads(text)
    return data


def pinned_vllm() -> str:
    """The vLLM release the member table was generated from."""
    return str(members_data()["vllm"])


def _curated(knob: str) -> set[str]:
    """The members the engine-config schema types itself."""
    from schemas.validate import load_schema

    node = load_schema("engine-config")["properties"].get(knob, {})
    if isinstance(node.get("additionalProperties"), dict):  # one type for every member
        return set(members_data()["knobs"][knob]["members"])
    return set(node.get("properties") or {})


def _object_members(schema: Mapping[str, Any]) -> dict[str, Any] | None:
    """The members of a member that is itself an object of known members, else None."""
    for part in schema.get("anyOf", [schema]):
        if "members" in part:
            found: dict[str, Any] = part["members"]
            return found
    return None


def _plain(schema: Mapping[str, Any]) -> dict[str, Any]:
    """``schema`` as JSON Schema: a ``members`` table becomes an object type."""
    if "anyOf" in schema:
        return {"anyOf": [_plain(p) for p in schema["anyOf"]]}
    return {k: v for k, v in schema.items() if k != "members"}


def _type_problem(value: Any, schema: Mapping[str, Any]) -> str | None:
    errors = sorted(Draft202012Validator(_plain(schema)).iter_errors(value), key=str)
    return errors[0].message if errors else None


def _walk(
    value: Mapping[str, Any], table: Mapping[str, Any], path: str, skip_types: set[str]
) -> Iterator[tuple[str, str, list[str], Any]]:
    """``(path, member, known, problem)`` for each member that is unknown or mistyped."""
    for member, sub in value.items():
        where = f"{path}.{member}"
        schema = table.get(member)
        if schema is None:
            yield where, member, sorted(table), None
            continue
        nested = _object_members(schema)
        if nested is not None and isinstance(sub, Mapping):
            yield from _walk(sub, nested, where, set())
            continue
        if member in skip_types:
            continue
        problem = _type_problem(sub, schema)
        if problem is not None:
            yield where, member, [], problem


def member_findings(
    config: Mapping[str, Any],
    *,
    vllm: str | None = None,
    open_knobs: frozenset[str] = frozenset(),
    where: Callable[[str], str] | None = None,
) -> list[Finding]:
    """The findings of ``config``'s object knobs, member by member.

    ``vllm`` is the challenge's pinned vLLM release (None: unknown, the table's is assumed);
    ``open_knobs`` the knobs whose unknown members the challenge allows; ``where(knob)``
    places a finding (``FILE:LINE KNOB``).
    """
    data = members_data()
    place = where or (lambda knob: knob)
    present = [k for k in data["knobs"] if isinstance(config.get(k), Mapping)]
    if vllm is not None and vllm != data["vllm"] and present:
        return [
            Finding(
                check_id=CONFIG_MEMBERS_UNPINNED,
                severity="warning",
                message=f"the members of {', '.join(present)} are typed for vLLM "
                f"{data['vllm']}, and the challenge pins vLLM {vllm}: they are not checked.",
                hint="regenerate schemas/json/knob-members.json with scripts/knob_members.py",
                where=place(present[0]),
            )
        ]
    out: list[Finding] = []
    for knob in present:
        entry = data["knobs"][knob]
        source = entry["source"]
        for path, member, known, problem in _walk(
            config[knob], entry["members"], knob, _curated(knob)
        ):
            if problem is not None:
                out.append(_finding(place(knob), f"{path}: {problem}", f"the type in {source}"))
                continue
            meant = difflib.get_close_matches(member, known, n=1, cutoff=0.75)
            if not meant and entry["open"] and knob in open_knobs:
                continue
            if meant:
                hint = f"did you mean {meant[0]}?"
            elif entry["open"]:
                hint = (
                    f"the model's config has no such member, so it would do nothing; the "
                    f"challenge allows only known members of {knob} (engine.open_members)"
                )
            else:
                hint = f"known members: {', '.join(known)}"
            out.append(_finding(place(knob), f"{path} is not a member of {source}.", hint))
    return out


def _finding(where: str, message: str, hint: str) -> Finding:
    return Finding(
        check_id=CONFIG_MEMBER, severity="error", message=message, hint=hint, where=where
    )
