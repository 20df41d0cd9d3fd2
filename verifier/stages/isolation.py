"""Stage ``isolation``: the sandbox probe, started in a thread right after the engine.

The probe mostly waits out its connection timeouts, so it runs while the tokenizer and
the reference load beside it. ``finish`` is the stage: the wait for it, then the check
(``verifier.checks.isolation``) judged on what the runner saw, and recorded; ``settle``
waits for it, bounded, after a stage before ``finish`` failed, so that the probe is done
with the sandbox before the sandbox is stopped.
"""

from __future__ import annotations

import contextlib
import dataclasses
import time
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout

from podium.errors import EngineError
from verifier.checks import registry
from verifier.checks.base import CheckContext, CheckOutcome
from verifier.evidence import IsolationEvidence
from verifier.runners.base import EngineHandle, Runner
from verifier.stages.run import Run

#: how long the pipeline waits for the isolation probe (it takes one of its 2 s timeouts
#: when the sandbox holds; it runs the image's own python3, which may never return)
ISOLATION_WAIT_S = 60.0


class IsolationProbe:
    """The probe of one run's sandbox; see the module."""

    def __init__(self, run: Run, runner: Runner, handle: EngineHandle) -> None:
        self.run = run
        self.done = not run.spec.check("isolation").get("enabled")
        if self.done:
            return
        assert run.sets is not None
        forbidden = [run.sets.prompts.path, run.sets.ppl.path]

        def probe() -> IsolationEvidence:
            t0 = time.perf_counter()
            evidence = runner.isolation(handle, forbidden_paths=forbidden)
            return dataclasses.replace(evidence, seconds=time.perf_counter() - t0)

        pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="isolation-probe")
        self.future = pool.submit(probe)
        pool.shutdown(wait=False)

    def _judged(self) -> CheckOutcome:
        try:
            evidence = self.future.result(timeout=ISOLATION_WAIT_S)
        except FutureTimeout:
            raise EngineError(
                f"the isolation probe did not finish within {ISOLATION_WAIT_S:.0f} s "
                "(it runs the image's python3)"
            ) from None
        (outcome,) = registry.judge(
            registry.ISOLATION, CheckContext(self.run.spec, isolation=evidence)
        )
        return outcome

    def finish(self) -> None:
        if self.done:
            return
        self.done = True
        outcome: CheckOutcome = self.run.timed("isolation", self._judged)
        assert outcome.result is not None
        self.run.record.checks.append(outcome.result)
        if outcome.result.status == "fail":  # our sandbox, not the participant: cannot evaluate
            self.run.fail("isolation", "; ".join(f.message for f in outcome.findings))

    def settle(self) -> None:
        if self.done:
            return
        self.done = True
        with contextlib.suppress(Exception):  # the run has failed already, on its own count
            self.future.result(timeout=ISOLATION_WAIT_S)
