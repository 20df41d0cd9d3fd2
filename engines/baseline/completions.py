"""``/v1/completions`` answers: a body with one choice per prompt, or a stream of
``text_completion`` chunks, in vLLM's shapes (echo, legacy logprobs, prompt logprobs,
token ids)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from typing import Any

from engines.baseline.answer import Answer
from engines.baseline.generation import Generation, TokenStep
from engines.baseline.model import BaselineEngine
from engines.baseline.protocol import CompletionRequest, SamplingParams
from engines.baseline.responses import IncrementalText, LegacyLogprobs, prompt_logprobs_json
from engines.baseline.stops import StopStrings


def batchable(
    engine: type[BaselineEngine],
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
        and engine.batches_scoring()
    )


class CompletionAnswer(Answer):
    """The answer to one completions request."""

    def __init__(
        self, engine: BaselineEngine, served_model_name: str, request: CompletionRequest
    ) -> None:
        super().__init__(engine, served_model_name)
        self.request = request

    def body(self, choices: list[dict[str, Any]], usages: list[dict[str, int]]) -> dict[str, Any]:
        """The whole answer: the choices, and the usage summed over them."""
        return {
            **self.head("cmpl", "text_completion"),
            "choices": choices,
            "usage": {k: sum(u.get(k, 0) for u in usages) for k in usages[0]},
        }

    def _legacy(self, generation: Generation) -> LegacyLogprobs | None:
        request = self.request
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

    def _echo(self, index: int, gen: Generation) -> str:
        """The echoed prompt, as vLLM gives it: the text sent, or the ids decoded with
        their special tokens."""
        prompt = self.request.prompts[index]
        return prompt if isinstance(prompt, str) else self.engine.token_texts(gen.prompt_ids)

    def choice(self, gen: Generation, index: int) -> dict[str, Any]:
        """Run ``gen`` (the prompt at ``index``) to its end: its choice of the body."""
        request = self.request
        legacy = self._legacy(gen)

        def each(step: TokenStep) -> None:
            if legacy is not None:
                legacy.add(step.token_id, step.logprobs)

        text, last, hit = self.run(gen, request.sampling.stop, each)
        if request.echo:
            text = self._echo(index, gen) + text
        choice: dict[str, Any] = {
            "index": index,
            "text": text,
            "logprobs": legacy.to_json() if legacy is not None else None,
            **self.ending(last, hit),
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

    def events(self, gen: Generation) -> Iterator[dict[str, Any]]:
        """The stream of ``gen`` (the first prompt), one chunk per token."""
        request = self.request
        head = self.head("cmpl", "text_completion")
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
                choice["text"] = self._echo(0, gen) + choice["text"]
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
        yield from self.usage_event(request.include_usage, head, gen)
