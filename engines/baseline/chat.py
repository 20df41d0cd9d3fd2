"""``/v1/chat/completions`` answers: a ``chat.completion`` body, or a stream of
``chat.completion.chunk`` events, in vLLM's shapes (logprobs content, token ids)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from engines.baseline.answer import Answer
from engines.baseline.generation import Generation, TokenStep
from engines.baseline.model import BaselineEngine
from engines.baseline.protocol import ChatRequest
from engines.baseline.responses import IncrementalText, chat_logprob_json
from engines.baseline.stops import StopStrings


class ChatAnswer(Answer):
    """The answer to one chat request."""

    def __init__(
        self, engine: BaselineEngine, served_model_name: str, request: ChatRequest
    ) -> None:
        super().__init__(engine, served_model_name)
        self.request = request

    def body(self, gen: Generation) -> dict[str, Any]:
        """Run ``gen`` to its end: the whole answer."""
        request = self.request
        content: list[dict[str, Any]] = []

        def each(step: TokenStep) -> None:
            if step.logprobs is not None:
                content.append(
                    chat_logprob_json(step.token_id, step.logprobs, self.engine.token_text)
                )

        text, last, hit = self.run(gen, request.sampling.stop, each)
        choice: dict[str, Any] = {
            "index": 0,
            "message": {"role": "assistant", "content": text},
            "logprobs": {"content": content} if request.sampling.logprobs is not None else None,
            **self.ending(last, hit),
        }
        if request.return_token_ids:
            choice["token_ids"] = gen.output_ids
        body: dict[str, Any] = {
            **self.head("chatcmpl", "chat.completion"),
            "choices": [choice],
            "usage": self.engine.report_usage(gen.prompt_ids, gen.output_ids),
        }
        if request.return_token_ids:
            body["prompt_token_ids"] = gen.prompt_ids
        return body

    def _opening(self, head: dict[str, Any], gen: Generation) -> dict[str, Any]:
        """A stream's first chunk: the assistant's role, before any token."""
        opening: dict[str, Any] = {
            "index": 0,
            "delta": {"role": "assistant", "content": ""},
            "logprobs": None,
            "finish_reason": None,
        }
        if self.request.return_token_ids:
            opening["token_ids"] = []
        first = {**head, "choices": [opening]}
        if self.request.return_token_ids:
            first["prompt_token_ids"] = gen.prompt_ids
        return first

    def events(self, gen: Generation) -> Iterator[dict[str, Any]]:
        """The stream of ``gen``: the opening chunk once a token is ready, then one chunk
        per token."""
        request = self.request
        head = self.head("chatcmpl", "chat.completion.chunk")
        first = self._opening(head, gen)
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
        yield from self.usage_event(request.include_usage, head, gen)
