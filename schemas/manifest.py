"""The submission manifest: the frozen, hashed description of a bundle."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from schemas.contract import Contract
from schemas.validate import validate


@dataclass(frozen=True)
class BaseImage(Contract):
    ref: str
    digest: str
    #: True when no local image confirmed ``digest`` at freeze (``--base-digest`` given by
    #: hand); absent when one did
    unchecked: bool | None = None


@dataclass(frozen=True)
class Dependency(Contract):
    name: str
    version: str | None = None
    hashes: list[str] | None = None
    spec: str | None = None


@dataclass(frozen=True)
class EngineSection(Contract):
    kind: str
    config: dict[str, Any]
    base_image: BaseImage
    dockerfile: str
    port: int
    env: dict[str, str] | None = None
    served_model_name: str | None = None
    serve: list[str] | None = None
    dependencies: list[Dependency] | None = None


@dataclass(frozen=True)
class DerivedWeights(Contract):
    role: str
    repo_id: str | None = None
    revision: str | None = None
    path: str | None = None
    sha256: str | None = None


@dataclass(frozen=True)
class ModelSection(Contract):
    repo_id: str
    revision: str
    derived: list[DerivedWeights] | None = None


@dataclass(frozen=True)
class FileEntry(Contract):
    path: str
    sha256: str
    size: int
    executable: bool | None = None


@dataclass(frozen=True)
class ChallengeRef(Contract):
    id: str
    version: str


@dataclass(frozen=True)
class Toolkit(Contract):
    _keep_none: ClassVar[frozenset[str]] = frozenset({"git_sha"})

    name: str
    version: str
    git_sha: str | None = None


@dataclass(frozen=True)
class Reported(Contract):
    _keep_none: ClassVar[frozenset[str]] = frozenset({"tps", "ppl", "hardware"})

    tps: float | None = None
    ppl: float | None = None
    hardware: str | None = None


@dataclass(frozen=True)
class Origin(Contract):
    format: str
    manifest: dict[str, Any] | None = None
    notes: list[str] | None = None


@dataclass(frozen=True)
class Manifest(Contract):
    schema_version: int
    kind: str
    challenge: ChallengeRef
    team: str
    entry: str
    engine: EngineSection
    model: ModelSection
    files: list[FileEntry]
    toolkit: Toolkit
    created: str
    reported: Reported | None = None
    origin: Origin | None = None

    @classmethod
    def parse(cls, doc: dict[str, Any], *, file: str | None = None) -> Manifest:
        validate("manifest", doc, file=file)
        return cls.from_dict(doc)
