"""What a rendered region of a document is, and the number formats its renderers share.

A region is a marked stretch of ``docs/benchmarks.md`` or ``docs/measurement.md`` whose
text is a pure function of the results files its start marker names::

    <!-- results: NAME (from calibration/results/X.json) -->
    ... the text ``render`` makes from the files, in the order named ...
    <!-- /results -->

``bench.docs`` finds the regions, renders them and compares or rewrites them.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

START = "<!-- results: "
END = "<!-- /results -->"


@dataclass(frozen=True)
class Region:
    """One region: its name (unique over every document), the document it lives in
    (``benchmarks`` or ``measurement``), the files it is rendered from (relative to the
    repository root) and the function that renders it from them, loaded, in that order."""

    name: str
    doc: str
    sources: tuple[str, ...]
    render: Callable[..., str]

    def start(self) -> str:
        return f"{START}{self.name} (from {', '.join(self.sources)}) -->"

    def block(self, text: str) -> str:
        """The whole marked block: start marker, the text, end marker, a line each (a
        comment ends its own HTML block and may interrupt a paragraph, a list or a table)."""
        return f"{self.start()}\n{text.strip(chr(10))}\n{END}"


def num(value: Any, spec: str = ".2f") -> str:
    """A number in ``spec``, or ``–`` where there is none."""
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "–"
    return format(value, spec)


def pct(value: Any, digits: int = 1, sign: bool = False) -> str:
    """A share as a percentage: ``0.0123`` is ``1.2 %``."""
    if value is None:
        return "–"
    return f"{100 * value:{'+' if sign else ''}.{digits}f} %".replace("-", "−")


def span(values: Sequence[float], spec: str = ".2f", unit: str = "") -> str:
    """``low to high`` of some values (one value alone when they agree at that precision)."""
    low, high = format(min(values), spec), format(max(values), spec)
    return f"{low}{unit}" if low == high else f"{low} to {high}{unit}"


def commas(value: float, digits: int = 0) -> str:
    """A number with thousands separators: ``15871.7`` is ``15,871.7`` at one digit."""
    return f"{value:,.{digits}f}"


def sha(value: Any) -> str:
    """A commit as the docs name it: its first seven hex digits."""
    return str(value or "?")[:7]


def machine_line(machine: dict[str, Any], after: Sequence[float] | None = None) -> str:
    """Where and when a results file was measured: date, commit, cores, load average."""
    load = machine.get("load_average") or []
    text = (
        f"{str(machine.get('date', '?'))[:10]}, commit {sha(machine.get('git_sha'))}"
        f"{'' if machine.get('git_clean', True) else ' (a tree with edits)'}, "
        f"{machine.get('cores', '?')} cores ({machine.get('cpu', '?')})"
    )
    if load:
        text += f", load average {load[0]:.1f}"
        if after:
            text += f" before and {after[0]:.1f} after"
    return text
