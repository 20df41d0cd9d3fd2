"""What the answers of both generating endpoints share: the head of a response (id,
object, time, model), running a generation to its end or to a stop string, how it ended,
and a stream's closing usage chunk."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any

from engines.baseline.generation import Generation, TokenStep
from engines.baseline.model import BaselineEngine


class Answer:
    """The answer to one request, built from the engine's results."""

    def __init__(self, engine: BaselineEngine, served_model_name: str) -> None:
        self.engine = engine
        self.served_model_name = served_model_name

    def head(self, prefix: str, kind: str) -> dict[str, Any]:
        """The fields every body and every chunk of a stream start with."""
        return {
            "id": f"{prefix}-{uuid.uuid4().hex}",
            "object": kind,
            "created": int(time.time()),
            "model": self.served_model_name,
        }

    def run(
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

    @staticmethod
    def ending(last: TokenStep | None, hit: str | None) -> dict[str, Any]:
        """A finished choice's ``finish_reason`` and ``stop_reason``."""
        return {
            "finish_reason": "stop" if hit else (last.finish_reason if last else "length"),
            "stop_reason": hit if hit else (last.stop_reason if last is not None else None),
        }

    def usage_event(
        self, include: bool, head: dict[str, Any], gen: Generation
    ) -> Iterator[dict[str, Any]]:
        """A stream's last chunk: the usage, when the request's stream_options ask for it."""
        if include:
            usage = self.engine.report_usage(gen.prompt_ids, gen.output_ids)
            yield {**head, "choices": [], "usage": usage}
