"""The OpenAI-compatible endpoints, independent of HTTP: JSON in, JSON (or events) out.

``Api`` tokenises and checks the prompt against the model (vocabulary, context length),
runs the engine under one lock (the reference serves one generation at a time) and
has the endpoint's answer (``engines.baseline.completions``, ``engines.baseline.chat``)
shape what it computes. A streaming answer is an iterator of event objects; the lock is held
until the server closes the reply, so a dropped client frees the engine.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from typing import Any

from engines.baseline.chat import ChatAnswer
from engines.baseline.completions import CompletionAnswer, batchable
from engines.baseline.errors import ApiError, bad_request
from engines.baseline.generation import Generation
from engines.baseline.model import BaselineEngine
from engines.baseline.protocol import (
    DEFAULT_MAX_LOGPROBS,
    SamplingParams,
    parse_chat,
    parse_completion,
)


@dataclass
class Reply:
    """A JSON body (``body``) or a stream of SSE event objects (``events``).

    Whoever sends a stream must call ``close()`` when done, sent or not: it frees the engine.
    """

    body: dict[str, Any] | None = None
    events: Iterator[dict[str, Any]] | None = None
    close: Callable[[], None] = lambda: None


class _Hold:
    """The engine lock, released exactly once whichever path finishes first."""

    def __init__(self, lock: threading.Lock) -> None:
        self._lock = lock
        self._held = True

    def release(self) -> None:
        if self._held:
            self._held = False
            self._lock.release()


class Api:
    """The endpoints of one served model."""

    def __init__(
        self,
        engine: BaselineEngine,
        served_model_name: str,
        max_logprobs: int = DEFAULT_MAX_LOGPROBS,
    ) -> None:
        self.engine = engine
        self.served_model_name = served_model_name
        self.max_logprobs = max_logprobs
        self.lock = threading.Lock()
        self.created = int(time.time())

    def wait_idle(self, timeout_s: float) -> bool:
        """Wait up to ``timeout_s`` until no request computes; whether none does."""
        if not self.lock.acquire(timeout=timeout_s):
            return False
        self.lock.release()
        return True

    # -- simple endpoints ---------------------------------------------------------------

    def models(self) -> dict[str, Any]:
        return {
            "object": "list",
            "data": [
                {
                    "id": self.served_model_name,
                    "object": "model",
                    "created": self.created,
                    "owned_by": "podium",
                    "root": self.served_model_name,
                    "parent": None,
                    "max_model_len": self.engine.max_model_len,
                }
            ],
        }

    # -- shared checks ------------------------------------------------------------------

    def _check_model(self, model: str | None) -> None:
        if model is not None and model != self.served_model_name:
            raise ApiError(404, f"The model `{model}` does not exist.", param="model")

    def _check_ids(self, ids: list[int], param: str) -> None:
        vocab = self.engine.vocab_size
        bad = [i for i in ids if not 0 <= i < vocab]
        if bad:
            raise bad_request(f"token id {bad[0]} is outside the vocabulary [0, {vocab})", param)

    def _resolve_length(self, prompt_ids: list[int], sampling: SamplingParams) -> SamplingParams:
        limit = self.engine.max_model_len
        if sampling.max_tokens is None:
            if len(prompt_ids) >= limit:
                raise bad_request(
                    f"This model's maximum context length is {limit} tokens; the prompt has "
                    f"{len(prompt_ids)} tokens.",
                    "messages",
                )
            return replace(sampling, max_tokens=limit - len(prompt_ids))
        if len(prompt_ids) + sampling.max_tokens > limit:
            raise bad_request(
                f"This model's maximum context length is {limit} tokens. However, you requested "
                f"{len(prompt_ids) + sampling.max_tokens} tokens ({len(prompt_ids)} in the prompt, "
                f"{sampling.max_tokens} in the completion).",
                "max_tokens",
            )
        return sampling

    def _start(
        self, prompt_ids: list[int], sampling: SamplingParams, prompt_logprobs: int | None
    ) -> tuple[Generation, _Hold]:
        self.lock.acquire()
        hold = _Hold(self.lock)
        try:
            return self.engine.start(prompt_ids, sampling, prompt_logprobs), hold
        except Exception:
            hold.release()
            raise

    @staticmethod
    def _reply(
        stream: bool,
        hold: _Hold,
        body: Callable[[], dict[str, Any]],
        events: Callable[[], Iterator[dict[str, Any]]],
    ) -> Reply:
        if stream:
            return Reply(events=events(), close=hold.release)
        try:
            return Reply(body=body())
        finally:
            hold.release()

    # -- /v1/completions ----------------------------------------------------------------

    def completions(self, body: Any) -> Reply:
        request = parse_completion(body, self.engine.sampling_defaults, self.max_logprobs)
        self._check_model(request.model)
        self._check_ids(list(request.sampling.stop_token_ids), "stop_token_ids")
        prepared = []  # every prompt is checked before any of them runs
        for prompt in request.prompts:
            if isinstance(prompt, str):
                prompt_ids = self.engine.encode_text(prompt, request.add_special_tokens)
            else:
                prompt_ids = list(prompt)
                self._check_ids(prompt_ids, "prompt")
            prepared.append((prompt_ids, self._resolve_length(prompt_ids, request.sampling)))
        scored = request.prompt_logprobs
        if request.echo and request.sampling.logprobs is not None:
            scored = max(scored or 0, request.sampling.logprobs)
        answer = CompletionAnswer(self.engine, self.served_model_name, request)
        if request.stream:
            gen, hold = self._start(*prepared[0], scored)
            return Reply(events=answer.events(gen), close=hold.release)
        choices, usages = [], []
        if batchable(type(self.engine), request, prepared, scored):
            assert scored is not None
            with self.lock:  # one padded batch: the scoring requests of the reference
                gens = self.engine.start_batch([ids for ids, _ in prepared], prepared[0][1], scored)
                for index, gen in enumerate(gens):
                    choices.append(answer.choice(gen, index))
                    usages.append(self.engine.report_usage(gen.prompt_ids, gen.output_ids))
        for index, (prompt_ids, sampling) in enumerate(prepared if not choices else []):
            gen, hold = self._start(prompt_ids, sampling, scored)
            try:
                choices.append(answer.choice(gen, index))
            finally:
                hold.release()
            usages.append(self.engine.report_usage(gen.prompt_ids, gen.output_ids))
        return Reply(body=answer.body(choices, usages))

    # -- /v1/chat/completions -----------------------------------------------------------

    def chat(self, body: Any) -> Reply:
        request = parse_chat(body, self.engine.sampling_defaults, self.max_logprobs)
        self._check_model(request.model)
        try:
            prompt_ids = self.engine.render_chat(
                list(request.messages), request.add_generation_prompt
            )
        except Exception as exc:  # template errors (role order, missing content) are the caller's
            raise bad_request(
                f"the chat template rejected the messages: {exc}", "messages"
            ) from exc
        if not prompt_ids:
            raise bad_request("the rendered chat prompt is empty", "messages")
        self._check_ids(list(request.sampling.stop_token_ids), "stop_token_ids")
        sampling = self._resolve_length(prompt_ids, request.sampling)
        gen, hold = self._start(prompt_ids, sampling, None)
        answer = ChatAnswer(self.engine, self.served_model_name, request)
        return self._reply(
            request.stream, hold, lambda: answer.body(gen), lambda: answer.events(gen)
        )
