"""Engines that try to carry the held-out text out through what podium writes down.

The sandbox has no network, so an engine that wants the organizers' private prompts can
only hope that something it writes or answers reaches a document the participant reads
(``docs/measurement.md``, "What leaves the sandbox"). Each engine here is a
``BaselineEngine`` subclass that serves honestly until its ``ADVERSARY_AFTER``-th
generation request (default 3), then makes the run fail while carrying every prompt it
was sent (timed prompts and PPL records, decoded) out in one of the ways a hostile
participant would try:

- ``PrintAndDie``: prints each prompt to stderr as it comes, then exits.
- ``EchoErrors``: answers with an HTTP 500 whose error message holds the prompts verbatim,
  every other word, base64-encoded and reversed.
- ``SmuggleHeaders``: puts the prompts into its ``/v1/models`` listing and into headers of
  every answer, then sends an answer that is not HTTP, whose bad header line is a prompt.

Every engine also logs each prompt as ``SEEN <json>``: the organizer's log must keep the
whole story, and the tests take from it what must not appear anywhere else.

They are test fixtures, not part of podium: a test copies this file into a bundle's
``engine/`` folder and selects a class with ``ENGINE_CLASS=hostile_engines:NAME``.
"""

from __future__ import annotations

import base64
import json
import os
import sys
import threading
from typing import Any

from engines.baseline import server as baseline_server
from engines.baseline.api import Api
from engines.baseline.generation import Generation
from engines.baseline.model import BaselineEngine
from engines.baseline.protocol import SamplingParams


def encodings(text: str) -> dict[str, str]:
    """The forms a hostile engine hides a prompt in (a scrubber by n-grams misses most)."""
    words = text.split()
    return {
        "verbatim": text,
        "every_other_word": " ".join(words[::2]),
        "base64": base64.b64encode(text.encode()).decode(),
        "reversed": text[::-1],
    }


def _after() -> int:
    return int(os.environ.get("ADVERSARY_AFTER", "3"))


class _Hostile(BaselineEngine):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.seen: list[str] = []
        self._generations = 0
        self._lock = threading.Lock()

    def start(
        self, prompt_ids: list[int], sampling: SamplingParams, prompt_logprobs: int | None
    ) -> Generation:
        text = str(self.tokenizer.decode(prompt_ids, skip_special_tokens=True))
        with self._lock:
            self.seen.append(text)
            if prompt_logprobs is None:
                self._generations += 1
            n = self._generations
        print("SEEN " + json.dumps(text), file=sys.stderr, flush=True)
        if prompt_logprobs is None and n > _after():
            self.act()
        return super().start(prompt_ids, sampling, prompt_logprobs)

    def payload(self) -> str:
        return " | ".join(" | ".join(encodings(t).values()) for t in self.seen)

    def act(self) -> None:
        raise NotImplementedError


class PrintAndDie(_Hostile):
    def act(self) -> None:
        for text in self.seen:
            print(f"PROMPT {text}", file=sys.stderr, flush=True)
        os._exit(17)


class EchoErrors(_Hostile):
    def act(self) -> None:  # the server answers 500 with this message in its JSON body
        raise ValueError("ECHO " + self.payload())


class SmuggleHeaders(_Hostile):
    """Prompts in ``/v1/models`` and in headers; then an answer h11 must refuse."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.broken = False
        engine = self
        plain_models = Api.models

        def models(api: Api) -> dict[str, Any]:
            doc = plain_models(api)
            doc["data"][0]["owned_by"] = engine.payload()
            doc["data"].append({"id": engine.payload(), "object": "model"})
            return doc

        plain_send = baseline_server._Handler._send_json

        def send_json(
            handler: Any, status: int, body: Any, headers: dict[str, str] | None = None
        ) -> None:
            carried = base64.b64encode(engine.payload().encode()).decode()
            if engine.broken:  # a bad header line h11 quotes when it refuses the answer
                line = " ".join(engine.payload().split()).encode("utf-8", "replace")
                handler.close_connection = True
                handler.wfile.write(b"HTTP/1.1 200 OK\r\nX-Prompts: " + carried.encode())
                handler.wfile.write(b"\r\n" + line + b"\r\n\r\n")
                return
            plain_send(handler, status, body, {**(headers or {}), "X-Prompts": carried})

        Api.models = models  # type: ignore[method-assign]
        baseline_server._Handler._send_json = send_json  # type: ignore[method-assign]

    def act(self) -> None:
        self.broken = True
        raise ValueError("the answer after this one is not HTTP")
