"""A failed check is data: a ``Finding`` with a stable check id.

Check ids are dotted and stable (``bundle.digest``, ``ppl.cap``, ``tps.token-count``);
tests and users match on them, so an id never changes meaning once released.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from schemas.contract import Contract

SEVERITIES = ("error", "warning", "info")


@dataclass(frozen=True)
class Finding(Contract):
    _keep_none: ClassVar[frozenset[str]] = frozenset({"hint", "where"})

    check_id: str
    severity: str
    message: str
    hint: str | None = None
    where: str | None = None

    def __post_init__(self) -> None:
        if self.severity not in SEVERITIES:
            raise ValueError(f"severity must be one of {SEVERITIES}, not {self.severity!r}")

    @property
    def is_error(self) -> bool:
        return self.severity == "error"

    def one_line(self) -> str:
        return f"[{self.check_id}] {self.message}"


def errors_in(findings: list[Finding]) -> list[Finding]:
    return [f for f in findings if f.is_error]
