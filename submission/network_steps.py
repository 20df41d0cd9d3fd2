"""``submission.network-step``: a ``RUN`` step that would fetch, found before any build.

Builds have no network (``podium.dockerx``), ``package``'s and the verifier's alike, so
such a step stops the build. The build is the judge (``image.network``); this reads the
participant's own Dockerfile as text and warns at ``validate``, which also reaches an
entry packaged ``--no-build``. It names the step's line and what to vendor instead. A
step that only looks like one (a URL in a comment string) costs a warning, never a
refusal, and a fetch it cannot see still fails the build.
"""

from __future__ import annotations

import re

from podium.dockerx import vendor_hint
from schemas.check_ids import SUBMISSION_NETWORK_STEP
from schemas.findings import Finding
from submission.dockerfile import DockerfileError, instructions

#: what a step that fetches looks like: an installer without its offline switch, a
#: downloader, a fetching git command, a package index, a URL
_FETCHES = tuple(
    re.compile(pattern, re.S)
    for pattern in (
        r"\b(?:pip3?|uv\s+pip)\s+(?:install|download)\b(?!.*--no-index)(?!.*--offline)",
        r"\b(?:curl|wget)\b",
        r"\bgit\s+(?:clone|fetch|pull|submodule)\b",
        r"\bapt(?:-get)?\s+(?:update|upgrade|dist-upgrade)\b",
        r"\bapt(?:-get)?\s+install\b(?!.*\.deb\b)",
        r"\bapk\s+(?:add|update)\b(?!.*--no-network)",
        r"\b(?:npm\s+(?:install|ci)|conda\s+install|mamba\s+install)\b",
        r"\b(?:https?|ftp)://",
    )
)
_URL = re.compile(r"\b(?:https?|ftp|git)://[^\s'\"\\)]+")


def network_step_findings(text: str, *, file: str = "Dockerfile") -> list[Finding]:
    """A warning for each ``RUN`` step of ``text`` that would reach for the network."""
    try:
        steps = instructions(text)
    except DockerfileError:
        return []  # an unreadable Dockerfile is reported where its knobs are read
    out: list[Finding] = []
    for step in steps:
        if step.name != "RUN" or not any(p.search(step.args) for p in _FETCHES):
            continue
        shown = " ".join(step.args.split())
        shown = shown if len(shown) <= 80 else shown[:77] + "..."
        urls = tuple(dict.fromkeys(_URL.findall(step.args)))
        out.append(
            Finding(
                SUBMISSION_NETWORK_STEP,
                "warning",
                f"{file}:{step.line} RUN {shown}: this step fetches from the network, and "
                "builds have none (package's and the verifier's alike): it would stop the "
                "build",
                hint=vendor_hint(step.args, urls),
                where=f"{file}:{step.line}",
            )
        )
    return out
