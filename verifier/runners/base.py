"""The runner interface."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from schemas.challenge import ChallengeSpec
from schemas.findings import Finding


@dataclass(frozen=True)
class RunnerInfo:
    name: str
    #: can a result from this runner ever be VERIFIED?
    can_verify: bool


@dataclass
class EngineHandle:
    """A started engine: its URL plus what the pipeline needs to watch and stop it."""

    base_url: str
    is_alive: Callable[[], bool]
    logs: Callable[[int], str]
    stop: Callable[[], None]
    #: isolation evidence (container config, probes); empty for runners without a sandbox
    describe: Callable[[], dict[str, Any]] = field(default=lambda: {})


class Runner(Protocol):
    info: RunnerInfo

    def prepare(
        self, bundle_root: Path, spec: ChallengeSpec, *, on_log: Callable[[str], None]
    ) -> dict[str, Any]:
        """Build whatever must exist before start (an image); return facts for the report."""
        ...

    def start(self, spec: ChallengeSpec, *, model_dir: Path) -> EngineHandle:
        """Start the engine with the verifier's pinned weights; return once it is spawned."""
        ...

    def isolation(
        self, handle: EngineHandle, *, forbidden_paths: list[Path]
    ) -> tuple[str, str, dict[str, Any], list[Finding]]:
        """(status, summary, details, findings) of the isolation check for this runner."""
        ...

    def cleanup(self) -> None:
        """Remove everything the runner created (containers, networks, processes)."""
        ...
