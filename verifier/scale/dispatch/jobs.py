"""The jobs interface the dispatcher speaks, whatever runs the jobs.

Two backends implement it: ``hf`` (Hugging Face Jobs through ``huggingface_hub``) and
``local`` (the same job specs as Docker containers on one machine, for rehearsals).
A job spec says what a Jobs API can say: image, command, flavour, environment, secrets,
labels, read-only volumes, a network group with aliases. Labels tie each job to its
request (``podium.request``) and role (``podium.role``), so a restarted dispatcher finds
the jobs it already launched instead of launching them again.

The harness job hands its signed report back through its log: ``report_lines`` cuts
the report into ``PODIUM-REPORT i/n <base64>`` lines and ``report_from_logs`` joins
them; the dispatcher then checks the signature before it believes a word of it.
"""

from __future__ import annotations

import base64
import gzip
import json
import re
from dataclasses import dataclass, field
from typing import Any, Protocol

TERMINAL = frozenset({"COMPLETED", "CANCELED", "ERROR", "DELETED"})
LABEL_REQUEST = "podium.request"
LABEL_ROLE = "podium.role"
LABEL_ATTEMPT = "podium.attempt"
REPORT_MARK = "PODIUM-REPORT"
#: the organizer's evidence behind the report travels the same way, under its own mark
EVIDENCE_MARK = "PODIUM-EVIDENCE"
_CHUNK = 3000


def _line(mark: str) -> re.Pattern[str]:
    return re.compile(rf"{mark} (\d+)/(\d+) ([A-Za-z0-9+/=]+)")


@dataclass(frozen=True)
class VolumeSpec:
    """``kind``: dataset, model or bucket (a Hub repo), or local (a host folder)."""

    kind: str
    source: str
    mount_path: str
    revision: str | None = None
    read_only: bool = True


@dataclass(frozen=True)
class JobSpec:
    image: str
    command: list[str]
    flavor: str
    env: dict[str, str] = field(default_factory=dict)
    secrets: dict[str, str] = field(default_factory=dict)
    labels: dict[str, str] = field(default_factory=dict)
    volumes: list[VolumeSpec] = field(default_factory=list)
    network_group: str | None = None
    network_aliases: list[str] = field(default_factory=list)
    timeout_s: int | None = None


@dataclass(frozen=True)
class JobState:
    id: str
    stage: str
    labels: dict[str, str] = field(default_factory=dict)
    message: str | None = None

    @property
    def done(self) -> bool:
        return self.stage in TERMINAL


class JobsBackend(Protocol):
    name: str
    #: can a ``local`` volume (a host folder) be mounted?
    local_volumes: bool

    def publish_image(self, image_id: str, name: str) -> str:
        """Make a locally built image pullable by the jobs; return the reference to run."""
        ...

    def run(self, spec: JobSpec) -> str: ...

    def inspect(self, job_id: str) -> JobState: ...

    def find(self, labels: dict[str, str]) -> list[JobState]: ...

    def cancel(self, job_id: str) -> None: ...

    def logs(self, job_id: str) -> list[str]: ...

    def cleanup(self, network_group: str) -> None:
        """Remove what the backend keeps for a finished group (containers, networks)."""
        ...


def report_lines(doc: dict[str, Any], mark: str = REPORT_MARK) -> list[str]:
    """The report (or, under ``EVIDENCE_MARK``, its evidence) as log lines (gzip + base64,
    cut to a size every log pipeline keeps)."""
    packed = base64.b64encode(gzip.compress(json.dumps(doc, sort_keys=True).encode())).decode()
    chunks = [packed[i : i + _CHUNK] for i in range(0, len(packed), _CHUNK)] or [""]
    return [f"{mark} {i + 1}/{len(chunks)} {c}" for i, c in enumerate(chunks)]


def report_from_logs(lines: list[str], mark: str = REPORT_MARK) -> dict[str, Any] | None:
    """The last complete report (or evidence, under ``mark``) in ``lines``, or None."""
    parts: dict[int, str] = {}
    total = 0
    found: dict[str, Any] | None = None
    pattern = _line(mark)
    for line in lines:
        m = pattern.search(line)
        if not m:
            continue
        i, n = int(m.group(1)), int(m.group(2))
        if i == 1:
            parts, total = {}, n
        parts[i] = m.group(3)
        if total and len(parts) == total:
            try:
                data = gzip.decompress(
                    base64.b64decode("".join(parts[k] for k in range(1, total + 1)))
                )
                doc = json.loads(data)
            except (ValueError, KeyError, OSError):
                continue
            if isinstance(doc, dict):
                found = doc
    return found
