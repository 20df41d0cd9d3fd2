"""A jail weakened on purpose: the jail runner with its network left open and a key mounted.

``WeakJail`` is podium's jail runner whose plan leaves the engine in the verifier's network
namespace (no ``--unshare-net``) and binds a planted key file into the jail at
``/organizer.pem``, as a mistake in the runner might. The jail's own probe must catch it
(``integrity.isolation`` fails, the run is never VERIFIED): the test of the probe's
teeth, in ``tests/verifier/test_jail_verifies.py``.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from schemas.challenge import ChallengeSpec
from verifier.runners.jail import JailRunner
from verifier.runners.jail_plan import JailPlan
from verifier.runners.process import free_port


class WeakJail(JailRunner):
    def __init__(self, key_file: Path) -> None:
        super().__init__()
        self.key_file = key_file
        self.port = free_port()  # it shares this host's loopback: a port no one holds

    def plan(
        self, spec: ChallengeSpec, *, bundle: Path, model: Path, drafter: Path | None, gpu: bool
    ) -> JailPlan:
        plan = super().plan(spec, bundle=bundle, model=model, drafter=drafter, gpu=gpu)
        return dataclasses.replace(
            plan,
            namespaces=tuple(n for n in plan.namespaces if n != "--unshare-net"),
            extra=["--ro-bind", str(self.key_file), "/organizer.pem"],
        )
