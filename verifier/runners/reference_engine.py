"""The verifier's own reference engine: podium's baseline engine on the pinned weights.

It serves the weights the pipeline hands it (never a participant's image or code), on
the spec's device and in its dtype, and, with the entry's ``DeclaredModel``, the model as
the entry declared it where the reference reproduces that exactly (window, dtype).

Two ways to run it, chosen from the spec's ``reference.device``:

- **cpu: in the verifier's own process** (``InProcessReference``). The verifier has
  already imported torch and transformers for its tokenizer, so loading the model costs a
  second or two, where a fresh interpreter costs five. The pipeline loads it *while the
  participant's engine boots* (stage ``reference-load``), before any timed request; it
  sits idle in memory through the timed work (it computes nothing, no port is open) and is
  served on a loopback port only once the participant's engine has stopped.
- **any other device: a process of its own** (``ProcessReference``), started
  after the participant's engine has stopped, so that the two never share a GPU, and
  killed after judging, so that the GPU's memory is free for the next run.

Either way the reference **proves itself before it judges**: as it loads, its attention
path is tested against eager attention on the device it runs on
(``engines.baseline.attention``), and a path that is wrong there is replaced by eager; a
reference with no correct path never serves (the run is FAILED at ``reference-load``, as
the organizer's fault). ``self_test()`` hands the pipeline what the test found, for the
report's ``reference.self-test``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from podium.errors import EngineError
from schemas.challenge import ChallengeSpec, ReferenceEngine
from verifier.declared import DeclaredModel
from verifier.runners.base import EngineHandle
from verifier.runners.process import ProcessRunner

if TYPE_CHECKING:
    from engines.baseline.api import Api
    from engines.baseline.model import BaselineEngine
    from engines.baseline.server import EngineServer

#: the name the reference serves its model under
SERVED_NAME = "reference"
#: the message of a reference whose every attention path failed its self-test
SELF_TEST_FAILED = (
    "the verifier's reference engine failed its self-test on this machine, so it cannot "
    "judge (the organizer's hardware or software, not the entry): {}"
)
#: how long cleanup waits for a cancelled request to give the engine back (it stops at
#: its next chunk or token: milliseconds)
CANCEL_WAIT_S = 30.0


class InProcessReference:
    """The baseline engine in the verifier's process, loaded ahead and served on demand.

    ``load`` builds the model (the slow part) and opens nothing; ``start`` serves it on a
    free loopback port from a thread (loading first if ``load`` was not called);
    ``cleanup`` cancels whatever request is still computing (one the client gave up on),
    waits for it to let go, stops the server and drops the model: no work of the
    reference outlives its phase, and its memory goes back before the next verification
    in the same process (a sweep, a worker). Nothing else holds the model once the handle
    ``start`` returned is gone (tests check both).
    """

    loads_ahead = True

    def __init__(self, *, device: str, dtype: str, engine_kwargs: dict[str, Any]) -> None:
        self.device, self.dtype, self.engine_kwargs = device, dtype, engine_kwargs
        self._engine: BaselineEngine | None = None
        self._model_dir: Path | None = None
        self._server: EngineServer | None = None
        self._api: Api | None = None

    @property
    def loaded(self) -> bool:
        return self._engine is not None

    def load(self, model_dir: Path) -> None:
        """Load the pinned weights (once); a failure is an ``EngineError`` naming it."""
        if self._engine is not None and self._model_dir == model_dir:
            return
        from engines.baseline.model import BaselineEngine
        from engines.baseline.self_test import AttentionError

        try:
            engine = BaselineEngine(
                model_dir,
                device=self.device,
                dtype=self.dtype,
                **{"self_test": True, **self.engine_kwargs},
            )
        except AttentionError as exc:
            raise EngineError(SELF_TEST_FAILED.format(exc)) from exc
        except Exception as exc:  # torch, transformers and the engine's own checks
            raise EngineError(
                f"the verifier's reference engine could not load {model_dir}: "
                f"{type(exc).__name__}: {exc}"
            ) from exc
        self._engine, self._model_dir = engine, model_dir

    def self_test(self) -> dict[str, Any] | None:
        """What the attention self-test found when the model loaded (None before)."""
        check = self._engine.attention_check if self._engine is not None else None
        return check.to_dict() if check is not None else None

    def start(
        self, spec: ChallengeSpec, *, model_dir: Path, gpu: bool, drafter_dir: Path | None = None
    ) -> EngineHandle:
        from engines.baseline.api import Api
        from engines.baseline.server import EngineServer

        self.load(model_dir)
        assert self._engine is not None
        if self._server is not None:
            self._server.stop()
        self._engine.resume()
        try:
            self._api = Api(self._engine, SERVED_NAME)
            server = EngineServer(self._api, "127.0.0.1", 0).start()
        except OSError as exc:
            raise EngineError(
                f"the verifier's reference engine could not listen on loopback: {exc}"
            ) from exc
        self._server = server

        def stop() -> None:
            if self._server is server:
                server.stop()
                self._server = None

        return EngineHandle(
            base_url=server.url,
            is_alive=lambda: self._server is server,
            logs=lambda n: "",
            stop=stop,
            describe=lambda: {"runner": "in-process", "device": self.device, "dtype": self.dtype},
        )

    def cleanup(self) -> None:
        if self._engine is not None:
            self._engine.cancel()  # a request still computing stops at its next step
        if self._server is not None:
            self._server.stop()
            self._server = None
        if self._api is not None:
            self._api.wait_idle(CANCEL_WAIT_S)  # nothing computes any more
        self._api = None
        self._engine = self._model_dir = None  # the model's last reference


class ProcessReference(ProcessRunner):
    """The reference as a process of its own (a GPU reference): podium's shipped engine,
    self-tested at start (``SELF_TEST=on``), its finding written where ``self_test``
    reads it."""

    loads_ahead = False

    def __init__(self, *, env: dict[str, str], device: str, dtype: str) -> None:
        super().__init__(
            engine_root=None, served_model_name=SERVED_NAME, device=device, dtype=dtype
        )
        self.report_path = self._logdir / "self-test.json"
        self.env = {**env, "SELF_TEST": "on", "SELF_TEST_REPORT": str(self.report_path)}

    def load(self, model_dir: Path) -> None:
        """Nothing ahead: the process loads ``model_dir`` as it starts (self-testing)."""

    def self_test(self) -> dict[str, Any] | None:
        """What the started reference's self-test found; None until it has written it."""
        try:
            document = json.loads(self.report_path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        return document if isinstance(document, dict) else None


def reference_runner(
    settings: ReferenceEngine, declared: DeclaredModel | None = None
) -> InProcessReference | ProcessReference:
    """The reference engine for ``settings`` (the spec's ``reference``) and the entry's
    declared model: in the verifier's process on a CPU, a process of its own elsewhere."""
    dtype = declared.dtype if declared is not None else settings.dtype
    if settings.device == "cpu":
        kwargs = declared.engine_kwargs() if declared is not None else {}
        if settings.logit_cells is not None:
            kwargs["logit_cells"] = settings.logit_cells
        return InProcessReference(device="cpu", dtype=dtype, engine_kwargs=kwargs)
    env = declared.engine_env() if declared is not None else {}
    if settings.logit_cells is not None:
        env["LOGIT_CELLS"] = str(settings.logit_cells)
    return ProcessReference(env=env, device=settings.device, dtype=dtype)
