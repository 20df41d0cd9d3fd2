"""The runner interface: everything the pipeline asks of a runner, and nothing more.

A runner starts an engine somewhere and hands the harness its URL. The pipeline calls,
in order: ``environment()`` (facts for the fingerprint, e.g. the Docker version),
``prepare(intake, ...)`` once (build what must exist before start, from intake's
result: the runner never re-reads the bundle), ``start(...)`` (with ``gpu`` decided by
the pipeline from the spec and the fingerprint), ``isolation(...)`` while the engine
runs (it gathers what the runner can see of the sandbox; ``verifier.checks.isolation``
judges it), and ``cleanup()`` in every case. A new runner is written from this file alone.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from schemas.challenge import ChallengeSpec
from verifier.evidence import IsolationEvidence

if TYPE_CHECKING:
    from verifier.intake import Intake


#: the first line of every run on a runner that is not ``sandboxed``
UNSANDBOXED = (
    "the {name} runner has no sandbox: the engine runs as this user and could read "
    "whatever this user can, so it runs on the public set (never the held-out one) and "
    "its result is never signed"
)


@dataclass(frozen=True)
class RunnerInfo:
    name: str
    #: can a result from this runner ever be VERIFIED?
    can_verify: bool
    #: does it keep the engine away from the verifier's files (the held-out set, the
    #: signing key)? A runner that cannot runs on the public set and is never signed.
    sandboxed: bool
    #: why a runner that is a sandbox elsewhere is none here (the jail: the primitive the
    #: kernel refused and the setting that would allow it)
    reason: str | None = None
    #: does it build the bundle's image from the pinned base? (intake then refuses a base
    #: the spec does not confirm)
    rebuilds: bool = True

    def unsandboxed(self) -> str | None:
        """What a run on this runner is denied, said once, first; None for a sandbox."""
        if self.sandboxed:
            return None
        said = UNSANDBOXED.format(name=self.name)
        return said if self.reason is None else f"{said} ({self.reason})"


@dataclass
class EngineHandle:
    """A started engine: its URL plus what the pipeline needs to watch and stop it."""

    base_url: str
    is_alive: Callable[[], bool]
    logs: Callable[[int], str]
    stop: Callable[[], None]
    #: isolation evidence (container config, probes); empty for runners without a sandbox
    describe: Callable[[], dict[str, Any]] = field(default=lambda: {})


@dataclass(frozen=True)
class ImageFacts:
    """What ``prepare`` built, for the report: all absent for runners that build nothing."""

    id: str | None = None
    base_image: str | None = None
    size_bytes: int | None = None
    build_seconds: float | None = None

    def to_dict(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if v is not None}

    @classmethod
    def of(cls, image: dict[str, Any]) -> ImageFacts:
        """From an image builder's record (``verifier.rebuild.rebuild_image``,
        ``verifier.scale.dispatch.dispatcher.build_engine_image``)."""
        return cls(
            id=image.get("id"),
            base_image=image.get("base_image"),
            size_bytes=image.get("size_bytes"),
            build_seconds=image.get("build_seconds"),
        )


class Runner(Protocol):
    info: RunnerInfo

    def environment(self) -> dict[str, Any]:
        """Facts about where engines run, for the fingerprint (``docker``: version info)."""
        ...

    def prepare(
        self, intake: Intake, spec: ChallengeSpec, *, on_log: Callable[[str], None]
    ) -> ImageFacts:
        """Build whatever must exist before start (an image) from intake's result."""
        ...

    def start(
        self, spec: ChallengeSpec, *, model_dir: Path, gpu: bool, drafter_dir: Path | None = None
    ) -> EngineHandle:
        """Start the engine with the verifier's pinned weights (and the challenge's pinned
        drafter, when it has one: read-only, its path in ``DRAFTER_PATH``); return once it
        is spawned."""
        ...

    def isolation(self, handle: EngineHandle, *, forbidden_paths: list[Path]) -> IsolationEvidence:
        """What this runner sees of the engine's sandbox: Docker's account of it and the
        probe's, or that it has none (``integrity.isolation`` judges it)."""
        ...

    def cleanup(self) -> None:
        """Remove everything the runner created (containers, networks, processes)."""
        ...


class ReferenceRunner(Protocol):
    """What the pipeline asks of the verifier's own reference engine
    (``verifier.runners.reference_engine``): load it, start it on the pinned weights, clean up
    after it. One that ``loads_ahead`` is loaded (``load(model_dir)``) while the
    participant's engine boots, before any timed request; one that does not loads as it
    starts, and the pipeline waits for it to serve. ``self_test()`` is what its attention
    self-test found once loaded (None before)."""

    #: does ``load`` load the model (in the verifier's process), ahead of ``start``?
    loads_ahead: bool

    def load(self, model_dir: Path) -> None:
        """Load the pinned weights ahead of ``start`` where the reference can; a failure
        is an ``EngineError`` naming it."""
        ...

    def start(
        self, spec: ChallengeSpec, *, model_dir: Path, gpu: bool, drafter_dir: Path | None = None
    ) -> EngineHandle: ...

    def self_test(self) -> dict[str, Any] | None: ...

    def cleanup(self) -> None: ...
