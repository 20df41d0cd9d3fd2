"""A test double of the runner protocol: podium's process runner posing as a sandbox.

``VerifyingSandbox`` runs the engine of a bundle as a plain process (as the ``process``
runner does) but reports itself as a runner whose results can be VERIFIED, with the
evidence of a closed sandbox (``closed_sandbox``: what the Docker engine and the
in-container probe report of one), so the isolation check passes and the pipeline's
VERIFIED path runs without Docker. It is
for tests of the verdict's logic and of cheating engines; the real sandbox is tested in
``tests/verifier/test_verify_e2e.py``.

``DisguisedVllmSandbox`` stands for the image of a ``kind = "vllm"`` entry whose launcher
(``engine/engines/vllm_launcher``, same name, other code) starts podium's baseline engine
from ``engine/engines/baseline`` instead of vLLM: it runs that engine on the bundle's frozen
config, as such an image would, and builds nothing (its ``ImageFacts`` name no base), as
the process runner builds nothing.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from schemas.challenge import ChallengeSpec
from verifier.evidence import IsolationEvidence
from verifier.intake import Intake
from verifier.runners.base import EngineHandle, ImageFacts, RunnerInfo
from verifier.runners.bundle_process import BundleProcess
from verifier.runners.process import ProcessRunner

#: a closed sandbox as the Docker engine reports it (the members the isolation check reads)
CLOSED: dict[str, Any] = {
    "container": {
        "HostConfig": {
            "ReadonlyRootfs": True,
            "CapDrop": ["ALL"],
            "SecurityOpt": ["no-new-privileges"],
            "PortBindings": {},
            "Privileged": False,
        },
        "NetworkSettings": {"Networks": {"podium-sbx-test": {}}},
        "Mounts": [{"Type": "bind", "Source": "/srv/model", "Destination": "/model", "RW": False}],
    },
    "network": {"Name": "podium-sbx-test", "Internal": True},
}


def closed_sandbox(forbidden_paths: list[Path]) -> IsolationEvidence:
    """The evidence of a closed sandbox: Docker's account of one, and a probe that got
    nowhere and saw none of ``forbidden_paths``."""
    probe = {
        "egress": {"1.1.1.1:53": "TimeoutError: timed out"},
        "dns": "gaierror",
        "paths": {str(p): False for p in forbidden_paths},
        "root_writable": False,
    }
    return IsolationEvidence(configuration=CLOSED, probe=probe)


class VerifyingSandbox(ProcessRunner):
    info = RunnerInfo(name="test-sandbox", can_verify=True, sandboxed=True, rebuilds=False)

    def __init__(self, *, image_bytes: int | None = None, env: dict[str, str] | None = None):
        super().__init__(env=env)
        self.image_bytes = image_bytes
        self.started = False

    def prepare(
        self, intake: Intake, spec: ChallengeSpec, *, on_log: Callable[[str], None]
    ) -> ImageFacts:
        super().prepare(intake, spec, on_log=on_log)
        return ImageFacts(id="sha256:" + "1" * 64, size_bytes=self.image_bytes or 1)

    def start(
        self, spec: ChallengeSpec, *, model_dir: Path, gpu: bool, drafter_dir: Path | None = None
    ) -> EngineHandle:
        self.started = True
        return super().start(spec, model_dir=model_dir, gpu=gpu, drafter_dir=drafter_dir)

    def isolation(self, handle: EngineHandle, *, forbidden_paths: list[Path]) -> IsolationEvidence:
        return closed_sandbox(forbidden_paths)


class DisguisedVllmSandbox(VerifyingSandbox):
    def prepare(
        self, intake: Intake, spec: ChallengeSpec, *, on_log: Callable[[str], None]
    ) -> ImageFacts:
        assert intake.root is not None and intake.manifest is not None, "intake failed"
        root = intake.root
        self.bundle = BundleProcess(
            engine_root=root / "engine",
            env=dict(intake.manifest.engine.env or {}),
            args=["--config", str(root / "engine-config.json")],
        )
        self.engine_root = self.bundle.engine_root
        self.served_model_name = intake.manifest.engine.served_model_name or "model"
        on_log(f"disguised vLLM: the baseline engine from {self.engine_root}")
        return ImageFacts(id="sha256:" + "1" * 64, size_bytes=self.image_bytes or 1)
