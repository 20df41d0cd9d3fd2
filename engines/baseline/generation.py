"""What a generation yields: token steps, their log-probabilities, the state after a prompt.

These are the values the engine hands its callers (the API, test doubles): token ids,
floats and ``TokenLogprob``, never a tensor, except the logits a ``Prefill`` keeps for
the first generated token.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import torch


@dataclass(frozen=True)
class TokenLogprob:
    """One token's log-probability; ``rank`` 1 is the most likely token."""

    token_id: int
    logprob: float
    rank: int


@dataclass(frozen=True)
class PositionLogprobs:
    """Log-probabilities at one position: the actual (or chosen) token and the top-k."""

    chosen: TokenLogprob
    top: tuple[TokenLogprob, ...]


@dataclass(frozen=True)
class TokenStep:
    """One generated token; ``finish_reason`` is set on the last one."""

    token_id: int
    logprobs: PositionLogprobs | None
    finish_reason: str | None
    stop_reason: int | None = None


@dataclass
class Prefill:
    """The state after running the prompt."""

    cache: Any
    last_logits: torch.Tensor
    prompt_logprobs: list[PositionLogprobs | None] | None = None


@dataclass
class Generation:
    """A started generation: prompt logprobs are ready; iterate to produce tokens."""

    prompt_ids: list[int]
    prompt_logprobs: list[PositionLogprobs | None] | None
    steps: Iterator[TokenStep]
    output_ids: list[int] = field(default_factory=list)
    finish_reason: str | None = None

    def __iter__(self) -> Iterator[TokenStep]:
        for step in self.steps:
            self.output_ids.append(step.token_id)
            self.finish_reason = step.finish_reason
            yield step
