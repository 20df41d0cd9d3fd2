"""The ``hf-jobs`` runner: the engine runs in a server job the dispatcher started.

The harness job (podium's own image, on a CPU flavour, with the held-out set and the
signing key) runs the ordinary pipeline with this runner; the participant's engine runs
in a separate server job (their image, rebuilt by the dispatcher from the bundle, on the
GPU flavour, with no secrets) in the same private network group, reached at
``server_url``. So the harness still only has a URL.

What this runner cannot do, it says: it did not build the image here (the dispatcher
did, and passes the facts along), it cannot stop the server (the dispatcher cancels it
when the harness job ends), and it cannot close the server's outbound network (Jobs has
no egress switch), so it reports no sandbox and the isolation check is a ``skip`` that
names what is left open: a challenge that enables ``integrity.isolation`` gets
UNOFFICIAL from Jobs, never VERIFIED (docs/scale.md, threat models).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from schemas.challenge import ChallengeSpec
from verifier.evidence import IsolationEvidence
from verifier.intake import Intake
from verifier.runners.base import EngineHandle, ImageFacts, RunnerInfo

OPEN_EGRESS = (
    "HF Jobs has no egress switch: the server job can reach the internet, so held-out "
    "prompts it receives could leave and answers could come from elsewhere"
)


class HfJobsRunner:
    info = RunnerInfo(name="hf-jobs", can_verify=True, sandboxed=True)

    def __init__(self, server_url: str, *, facts: dict[str, Any] | None = None):
        self.server_url = server_url.rstrip("/")
        self.facts = dict(facts or {})

    def environment(self) -> dict[str, Any]:
        return {}  # the server job's machine is fingerprinted by the dispatcher's facts

    def prepare(
        self, intake: Intake, spec: ChallengeSpec, *, on_log: Callable[[str], None]
    ) -> ImageFacts:
        on_log(f"hf-jobs runner: the engine runs in server job {self.facts.get('server_job')}")
        return ImageFacts.of(self.facts.get("image") or {})

    def start(
        self, spec: ChallengeSpec, *, model_dir: Path, gpu: bool, drafter_dir: Path | None = None
    ) -> EngineHandle:
        return EngineHandle(
            base_url=self.server_url,
            is_alive=lambda: True,  # the server job's stage is the dispatcher's to watch
            logs=lambda n: "",  # its log is fetched by the dispatcher from the Jobs API
            stop=lambda: None,  # the dispatcher cancels the server job
            describe=lambda: {"runner": "hf-jobs", **self.facts},
        )

    def isolation(self, handle: EngineHandle, *, forbidden_paths: list[Path]) -> IsolationEvidence:
        facts = {
            "runner": "hf-jobs",
            "server_job": self.facts.get("server_job"),
            "flavor": self.facts.get("flavor"),
            "network_group": self.facts.get("network_group"),
            "closed": [
                "no held-out data, signing key or token in the server job (none is passed)",
                "weights mounted read-only from the pinned revision",
            ],
            "open": [OPEN_EGRESS],
        }
        return IsolationEvidence(no_sandbox=OPEN_EGRESS, facts=facts)

    def cleanup(self) -> None:
        """Nothing here: the jobs belong to the dispatcher."""
