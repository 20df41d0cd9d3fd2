"""The harness: drives an engine over HTTP (PPL, TPS, integrity) and never knows how it runs.

``run_harness`` / ``judge_with_reference`` (in ``verifier.harness.run``) are the
synchronous entry points for the pipeline; ``client``, ``render``, ``plan``, ``ppl``,
``tps``, ``probes`` and ``stats`` are the async parts they are made of. The facade is
imported lazily because the checks import the harness's parts.
"""

from __future__ import annotations

from typing import Any

__all__ = ["HarnessResult", "judge_with_reference", "run_harness"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from verifier.harness import run

        return getattr(run, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
