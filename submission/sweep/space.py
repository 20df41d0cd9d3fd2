"""What a sweep measures: the knobs it varies and the points they make.

``--knob NAME=V1,V2,...`` gives a knob its values; each value is JSON (``16``, ``true``,
``{"method": "mtp", "num_speculative_tokens": 3}``), a bare word (a string), or ``none``
(the knob is removed: the engine's own default). ``LO..HI`` is an integer (or float)
range: for ``--search`` a range to draw from, for a grid the integers from LO to HI, or
``LO..HI:STEP``. A point is the directory's own ``[engine.config]`` with some knobs
changed; its key is the canonical JSON of the changes, so the same point is always found
again under the same key.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field
from typing import Any

from podium.errors import UsageError

#: the value of a knob that the point removes from the config
UNSET = "none"
_NAME = re.compile(r"^[A-Z][A-Z0-9_]*$")
_RANGE = re.compile(r"^(-?[0-9.]+)\.\.(-?[0-9.]+)(?::([0-9.]+))?$")


@dataclass(frozen=True)
class Range:
    """A numeric range for ``--search`` (``step`` set: also a grid)."""

    low: float
    high: float
    step: float | None = None

    @property
    def is_int(self) -> bool:
        return all(float(v).is_integer() for v in (self.low, self.high, self.step or 1))

    def values(self) -> list[Any]:
        step = self.step or 1
        out: list[Any] = []
        v = self.low
        while v <= self.high + 1e-9:
            out.append(int(v) if self.is_int else round(v, 10))
            v += step
        return out


@dataclass(frozen=True)
class Knob:
    name: str
    choices: tuple[Any, ...] = ()
    range: Range | None = None

    def values(self) -> list[Any]:
        return list(self.choices) if self.range is None else self.range.values()

    def to_dict(self) -> dict[str, Any]:
        if self.range is not None:
            return {"range": [self.range.low, self.range.high, self.range.step]}
        return {"choices": list(self.choices)}


def _split(text: str) -> list[str]:
    """Split on the commas outside brackets and quotes (JSON objects keep theirs)."""
    parts, depth, quoted, cur = [], 0, False, ""
    for ch in text:
        if ch == '"':
            quoted = not quoted
        elif not quoted and ch in "{[":
            depth += 1
        elif not quoted and ch in "}]":
            depth -= 1
        if ch == "," and depth == 0 and not quoted:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    parts.append(cur)
    return [p.strip() for p in parts]


def _value(raw: str, knob: str) -> Any:
    if raw == "":
        raise UsageError(f"--knob {knob}: an empty value", hint="write none to unset the knob")
    if raw.lower() == UNSET:
        return None
    try:
        return json.loads(raw)
    except ValueError:
        if raw[:1] in "{[":
            raise UsageError(
                f"--knob {knob}: {raw!r} is not JSON",
                hint='quote the whole option: --knob \'K={"method": "mtp"}\'',
            ) from None
        return raw


def parse_knob(option: str) -> Knob:
    """``NAME=V1,V2,...`` or ``NAME=LO..HI[:STEP]``."""
    name, sep, rest = option.partition("=")
    name = name.strip()
    if not sep or not _NAME.match(name):
        raise UsageError(
            f"--knob {option!r} is not NAME=V1,V2,...",
            hint="e.g. --knob SLIDING_WINDOW=16,32,none or --knob SLIDING_WINDOW=8..64:8",
        )
    if m := _RANGE.match(rest.strip()):
        low, high = float(m[1]), float(m[2])
        if high < low:
            raise UsageError(f"--knob {name}: the range {rest} is empty")
        return Knob(name, range=Range(low, high, float(m[3]) if m[3] else None))
    values = [_value(v, name) for v in _split(rest)]
    unique = list({canonical(v): v for v in values}.values())
    return Knob(name, choices=tuple(unique))


def short(value: Any, *, keys: bool = True) -> str:
    """A knob's value for people: ``none``, ``16``, ``{method=mtp,num_speculative_tokens=3}``;
    without ``keys``, an object's values only (``mtp/3``), where room is short (the plot)."""
    if value is None:
        return UNSET
    if isinstance(value, dict):
        if not keys:
            return "/".join(short(v, keys=False) for v in value.values())
        return "{" + ",".join(f"{k}={short(v)}" for k, v in value.items()) + "}"
    return value if isinstance(value, str) else canonical(value)


def canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


@dataclass(frozen=True)
class Point:
    """Changes to the directory's ``[engine.config]``: a value, or None to remove it."""

    changes: dict[str, Any] = field(default_factory=dict)

    @property
    def key(self) -> str:
        return canonical(self.changes)

    @property
    def id(self) -> str:
        return "p" + hashlib.sha256(self.key.encode()).hexdigest()[:8]

    def config(self, base: dict[str, Any]) -> dict[str, Any]:
        merged = dict(base)
        for name, value in self.changes.items():
            if value is None:
                merged.pop(name, None)
            else:
                merged[name] = value
        return merged

    def label(self, sep: str = " ", *, keys: bool = True) -> str:
        if not self.changes:
            return "(the directory's config)"
        return sep.join(f"{k}={short(v, keys=keys)}" for k, v in self.changes.items())

    @classmethod
    def of(cls, changes: dict[str, Any]) -> Point:
        return cls(dict(sorted(changes.items())))


#: the baseline: the directory's own config, no changes
BASELINE = Point()
