"""Runners start an engine somewhere and hand the harness its URL.

The harness never knows which runner it has. ``local-docker`` is the strict sandbox
(the only runner that can give VERIFIED on a machine the organizer controls);
``process`` runs the engine as a plain local process (self-checks; never VERIFIED).
"""

from verifier.runners.base import EngineHandle, Runner, RunnerInfo

__all__ = ["EngineHandle", "Runner", "RunnerInfo"]
