"""The OpenAI-compatible endpoints, independent of HTTP: JSON in, JSON (or events) out.

``Api`` tokenises and checks the prompt against the model (vocabulary, context length),
runs the engine under one lock (the reference serves one generation at a time) and
shapes the answer. A streaming answer is an iterator of event objects; the lock is held
until the server closes the reply, so a dropped client frees the engine.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from typing import Any

from engines.baseline.errors import ApiError, bad_request
from engines.baseline.generation import Generation, TokenStep
from engines.baseline.model import BaselineEngine
from engines.baseline.protocol import (
    DEFAULT_MAX_LOGPROBS,
    ChatRequest,
    CompletionRequest,
    Prompt,
    SamplingParams,
    parse_chat,
    parse_completion,
)
from engines.baseline.responses import (
    IncrementalText,
    LegacyLogprobs,
    chat_logprob_json,
    prompt_logprobs_json,
)
from engines.baseline.stops import StopStrings


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
        if request.stream:
            gen, hold = self._start(*prepared[0], scored)
            return Reply(events=self._completion_events(request, gen), close=hold.release)
        choices, usages = [], []
        if self._batchable(request, prepared, scored):
            assert scored is not None
            with self.lock:  # one padded batch: the scoring requests of the reference
                gens = self.engine.start_batch([ids for ids, _ in prepared], prepared[0][1], scored)
                for index, gen in enumerate(gens):
                    choices.append(self._completion_choice(request, gen, index))
                    usages.append(self.engine.report_usage(gen.prompt_ids, gen.output_ids))
        for index, (prompt_ids, sampling) in enumerate(prepared if not choices else []):
            gen, hold = self._start(prompt_ids, sampling, scored)
            try:
                choices.append(self._completion_choice(request, gen, index))
            finally:
                hold.release()
            usages.append(self.engine.report_usage(gen.prompt_ids, gen.output_ids))
        return Reply(
            body={
                "id": f"cmpl-{uuid.uuid4().hex}",
                "object": "text_completion",
                "created": int(time.time()),
                "model": self.served_model_name,
                "choices": choices,
                "usage": {k: sum(u.get(k, 0) for u in usages) for k in usages[0]},
            }
        )

    def _batchable(
        self,
        request: CompletionRequest,
        prepared: list[tuple[list[int], SamplingParams]],
        scored: int | None,
    ) -> bool:
        """Several scoring requests of one token each, for the plain engine (what the
        verifier's reference is asked): they run as one padded batch."""
        sampling = request.sampling
        return (
            len(prepared) > 1
            and scored is not None
            and not request.echo
            and sampling.logprobs is None
            and not sampling.stop
            and all(s.max_tokens == 1 for _, s in prepared)
            and type(self.engine).batches_scoring()
        )

    def _legacy(self, request: CompletionRequest, generation: Generation) -> LegacyLogprobs | None:
        if request.sampling.logprobs is None:
            return None
        logprobs = LegacyLogprobs(self.engine.token_text, request.return_tokens_as_token_ids)
        if request.echo:
            entries = generation.prompt_logprobs or [None] * len(generation.prompt_ids)
            k = request.sampling.logprobs
            for token_id, entry in zip(generation.prompt_ids, entries, strict=True):
                if entry is not None:
                    entry = replace(entry, top=entry.top[:k])
                logprobs.add(token_id, entry)
        return logprobs

    def _echo(self, prompt: Prompt, gen: Generation) -> str:
        """The echoed prompt, as vLLM gives it: the text sent, or the ids decoded with
        their special tokens."""
        return prompt if isinstance(prompt, str) else self.engine.token_texts(gen.prompt_ids)

    def _run(
        self, gen: Generation, stop: tuple[str, ...], each: Callable[[TokenStep], None]
    ) -> tuple[str, TokenStep | None, str | None]:
        """Run ``gen`` to its end or to a stop string: (text, last step, stop string hit)."""
        last = None
        for step in gen:
            each(step)
            last = step
            if stop:
                text = self.engine.decode(gen.output_ids)
                hits = [(i, s) for s in stop if (i := text.find(s)) >= 0]
                if hits:
                    index, hit = min(hits)
                    return text[:index], last, hit
        return self.engine.decode(gen.output_ids), last, None

    def _completion_choice(
        self, request: CompletionRequest, gen: Generation, index: int
    ) -> dict[str, Any]:
        legacy = self._legacy(request, gen)

        def each(step: TokenStep) -> None:
            if legacy is not None:
                legacy.add(step.token_id, step.logprobs)

        text, last, hit = self._run(gen, request.sampling.stop, each)
        if request.echo:
            text = self._echo(request.prompts[index], gen) + text
        choice: dict[str, Any] = {
            "index": index,
            "text": text,
            "logprobs": legacy.to_json() if legacy is not None else None,
            "finish_reason": "stop" if hit else (last.finish_reason if last else "length"),
            "stop_reason": hit if hit else (last.stop_reason if last is not None else None),
            "prompt_logprobs": (
                prompt_logprobs_json(gen.prompt_logprobs, self.engine.token_text)
                if request.prompt_logprobs is not None and gen.prompt_logprobs is not None
                else None
            ),
        }
        if request.return_token_ids:
            choice["prompt_token_ids"] = gen.prompt_ids
            choice["token_ids"] = gen.output_ids
        return choice

    def _usage_event(
        self, include: bool, head: dict[str, Any], gen: Generation
    ) -> Iterator[dict[str, Any]]:
        """A stream's last chunk: the usage, when the request's stream_options ask for it."""
        if include:
            usage = self.engine.report_usage(gen.prompt_ids, gen.output_ids)
            yield {**head, "choices": [], "usage": usage}

    def _completion_events(
        self, request: CompletionRequest, gen: Generation
    ) -> Iterator[dict[str, Any]]:
        head = {
            "id": f"cmpl-{uuid.uuid4().hex}",
            "object": "text_completion",
            "created": int(time.time()),
            "model": self.served_model_name,
        }
        text = IncrementalText(self.engine.decode)
        stops = StopStrings(request.sampling.stop)
        first = True
        for step in gen:
            piece = stops.feed(text.add(step.token_id))
            if stops.hit is None and step.finish_reason is not None:
                piece += stops.flush()
            choice: dict[str, Any] = {
                "index": 0,
                "text": piece,
                "logprobs": None,
                "finish_reason": "stop" if stops.hit else step.finish_reason,
                "stop_reason": stops.hit or step.stop_reason,
            }
            if request.echo and first:
                choice["text"] = self._echo(request.prompts[0], gen) + choice["text"]
            if request.sampling.logprobs is not None:
                legacy = LegacyLogprobs(self.engine.token_text, request.return_tokens_as_token_ids)
                legacy.add(step.token_id, step.logprobs)
                choice["logprobs"] = legacy.to_json()
            if request.return_token_ids:
                choice["token_ids"] = [step.token_id]
                if first:
                    choice["prompt_token_ids"] = gen.prompt_ids
            first = False
            yield {**head, "choices": [choice]}
            if stops.hit:
                break
        yield from self._usage_event(request.include_usage, head, gen)

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
        return self._reply(
            request.stream,
            hold,
            lambda: self._chat_body(request, gen),
            lambda: self._chat_events(request, gen),
        )

    def _chat_body(self, request: ChatRequest, gen: Generation) -> dict[str, Any]:
        content: list[dict[str, Any]] = []

        def each(step: TokenStep) -> None:
            if step.logprobs is not None:
                content.append(
                    chat_logprob_json(step.token_id, step.logprobs, self.engine.token_text)
                )

        text, last, hit = self._run(gen, request.sampling.stop, each)
        choice: dict[str, Any] = {
            "index": 0,
            "message": {"role": "assistant", "content": text},
            "logprobs": {"content": content} if request.sampling.logprobs is not None else None,
            "finish_reason": "stop" if hit else (last.finish_reason if last else "length"),
            "stop_reason": hit if hit else (last.stop_reason if last is not None else None),
        }
        if request.return_token_ids:
            choice["token_ids"] = gen.output_ids
        body: dict[str, Any] = {
            "id": f"chatcmpl-{uuid.uuid4().hex}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": self.served_model_name,
            "choices": [choice],
            "usage": self.engine.report_usage(gen.prompt_ids, gen.output_ids),
        }
        if request.return_token_ids:
            body["prompt_token_ids"] = gen.prompt_ids
        return body

    def _chat_events(self, request: ChatRequest, gen: Generation) -> Iterator[dict[str, Any]]:
        head = {
            "id": f"chatcmpl-{uuid.uuid4().hex}",
            "object": "chat.completion.chunk",
            "created": int(time.time()),
            "model": self.served_model_name,
        }
        opening: dict[str, Any] = {
            "index": 0,
            "delta": {"role": "assistant", "content": ""},
            "logprobs": None,
            "finish_reason": None,
        }
        if request.return_token_ids:
            opening["token_ids"] = []
        first = {**head, "choices": [opening]}
        if request.return_token_ids:
            first["prompt_token_ids"] = gen.prompt_ids
        text = IncrementalText(self.engine.decode)
        stops = StopStrings(request.sampling.stop)
        started = False
        for step in gen:
            if not started:
                yield first
                started = True
            piece = stops.feed(text.add(step.token_id))
            if stops.hit is None and step.finish_reason is not None:
                piece += stops.flush()
            choice: dict[str, Any] = {
                "index": 0,
                "delta": {"content": piece},
                "logprobs": None,
                "finish_reason": "stop" if stops.hit else step.finish_reason,
                "stop_reason": stops.hit or step.stop_reason,
            }
            if step.logprobs is not None:
                entry = chat_logprob_json(step.token_id, step.logprobs, self.engine.token_text)
                choice["logprobs"] = {"content": [entry]}
            if request.return_token_ids:
                choice["token_ids"] = [step.token_id]
            yield {**head, "choices": [choice]}
            if stops.hit:
                break
        yield from self._usage_event(request.include_usage, head, gen)
