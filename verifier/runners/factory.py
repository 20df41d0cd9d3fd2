"""The runners by name: what ``--runner`` picks, and the verifier's reference engine.

Each runner is imported only when it is made (``local-docker`` needs the docker extra,
the reference engine torch), so naming one costs nothing.
"""

from __future__ import annotations

import os

from podium.errors import UsageError
from schemas.challenge import ReferenceEngine
from verifier.declared import DeclaredModel
from verifier.runners.base import ReferenceRunner, Runner

#: every runner's name, as ``--runner`` spells it
RUNNER_NAMES = ("local-docker", "process", "hf-jobs")


def make_runner(name: str) -> Runner:
    """A fresh runner named ``name`` (one of ``RUNNER_NAMES``).

    ``hf-jobs`` drives an engine that a server job already serves, at
    ``$PODIUM_SERVER_URL`` (``$VARS`` in it expanded).
    """
    if name not in RUNNER_NAMES:
        raise ValueError(f"{name!r} is not a runner (one of {', '.join(RUNNER_NAMES)})")
    if name == "local-docker":
        from verifier.runners.local_docker import LocalDockerRunner

        return LocalDockerRunner()
    if name == "process":
        from verifier.runners.process import ProcessRunner

        return ProcessRunner()
    server = os.environ.get("PODIUM_SERVER_URL")
    if not server:
        raise UsageError(
            "the hf-jobs runner drives an engine that a server job already serves",
            hint="run `podium dispatch` (it starts the jobs), or set PODIUM_SERVER_URL",
        )
    from verifier.runners.hf_jobs import HfJobsRunner

    return HfJobsRunner(os.path.expandvars(server))


def reference_runner(
    settings: ReferenceEngine, declared: DeclaredModel | None = None
) -> ReferenceRunner:
    """The verifier's reference engine, as the challenge spec and the entry's declared
    model say (imported lazily)."""
    from verifier.runners import reference

    return reference.reference_runner(settings, declared)
