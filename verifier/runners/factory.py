"""The runners by name: what ``--runner`` picks, and the verifier's reference engine.

Each runner is imported only when it is made (``local-docker`` needs the docker extra,
the reference engine torch), so naming one costs nothing.
"""

from __future__ import annotations

import os
from typing import Any

from podium.errors import UsageError
from schemas.challenge import ReferenceEngine
from verifier.declared import DeclaredModel
from verifier.runners.base import ReferenceRunner, Runner, RunnerInfo

#: every runner's name, as ``--runner`` spells it
RUNNER_NAMES = ("local-docker", "jail", "process", "hf-jobs")


def runner_info(name: str) -> RunnerInfo:
    """What the runner named ``name`` is (``RunnerInfo``), without making one: whether it
    can verify, whether it is a sandbox (a command refuses a key for one that is not)."""
    return _runner_class(name).info


def _runner_class(name: str) -> Any:
    if name not in RUNNER_NAMES:
        raise ValueError(f"{name!r} is not a runner (one of {', '.join(RUNNER_NAMES)})")
    if name == "local-docker":
        from verifier.runners.local_docker import LocalDockerRunner

        return LocalDockerRunner
    if name == "jail":
        from verifier.runners.jail import JailRunner

        return JailRunner
    if name == "process":
        from verifier.runners.process import ProcessRunner

        return ProcessRunner
    from verifier.runners.hf_jobs import HfJobsRunner

    return HfJobsRunner


def make_runner(name: str) -> Runner:
    """A fresh runner named ``name`` (one of ``RUNNER_NAMES``).

    ``jail`` is made once this host showed it can make one (else it is unsandboxed,
    saying why); ``hf-jobs`` drives an engine that a server job already serves, at
    ``$PODIUM_SERVER_URL`` (``$VARS`` in it expanded).
    """
    cls = _runner_class(name)
    if name == "jail":  # tries the kernel's primitives once: unsandboxed where refused
        jail: Runner = cls.made()
        return jail
    if name != "hf-jobs":
        runner: Runner = cls()
        return runner
    server = os.environ.get("PODIUM_SERVER_URL")
    if not server:
        raise UsageError(
            "the hf-jobs runner drives an engine that a server job already serves",
            hint="run `podium dispatch` (it starts the jobs), or set PODIUM_SERVER_URL",
        )
    jobs: Runner = cls(os.path.expandvars(server))
    return jobs


def reference_runner(
    settings: ReferenceEngine, declared: DeclaredModel | None = None
) -> ReferenceRunner:
    """The verifier's reference engine, as the challenge spec and the entry's declared
    model say (imported lazily)."""
    from verifier.runners import reference_engine as reference

    return reference.reference_runner(settings, declared)
