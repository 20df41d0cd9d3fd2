"""What several engine doubles share: replaying an answer, recording one, telling a chat
prompt from a PPL record, reading a number from the environment.

Standard library and ``engines.baseline`` only, as every module an engine container
imports (``ENGINE_CLASS=doubles.MODULE:NAME``).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from engines.baseline.generation import Generation, TokenStep
from engines.baseline.model import BaselineEngine

if TYPE_CHECKING:
    import torch


def env_float(name: str, default: float) -> float:
    return float(os.environ.get(name, str(default)))


def replay_steps(answer: list[int], n: int, before_last: Any = None) -> Iterator[TokenStep]:
    """``answer[:n]`` as generated steps, the last one finishing on length, computing
    nothing; ``before_last()`` runs before the last step (to pace a replay)."""
    for i, tok in enumerate(answer[:n]):
        if i + 1 == n and before_last is not None:
            before_last()
        yield TokenStep(tok, None, "length" if i + 1 == n else None)


def recorded(gen: Generation, done: Callable[[list[int]], None]) -> Generation:
    """``gen``, unchanged for its reader; ``done(ids)`` gets its answer once it is whole."""
    inner = gen.steps

    def steps() -> Iterator[TokenStep]:
        out: list[int] = []
        for step in inner:
            out.append(step.token_id)
            yield step
        done(out)

    gen.steps = steps()
    return gen


def is_chat(engine: BaselineEngine, prompt_ids: list[int]) -> bool:
    """A prompt rendered by the chat template carries its turn marker; PPL records do not."""
    marker = engine.tokenizer.convert_tokens_to_ids("<start_of_turn>")
    return isinstance(marker, int) and marker in prompt_ids


def second_best(logits: torch.Tensor) -> int:
    import torch

    return int(torch.topk(logits, 2).indices[1].item())
