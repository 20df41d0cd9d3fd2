"""How the fields of an engine's answer are read: the same for the harness and the checks.

A ``prompt_logprobs`` entry is a dict keyed by token id (as a string), each item holding
a ``logprob`` and perhaps a ``rank``. Order among the listed tokens comes from their
values; a ``rank`` is only ever compared with them (``rank_contradictions``), never read
for a result.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

#: a true log-probability is <= 0; float rounding cannot push one above this, a logit can
POSITIVE_TOLERANCE = 1e-6
#: two listed values closer than this may carry either order of ranks (float ties)
RANK_TOLERANCE = 1e-5


def is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def logprob_of(entry: Any, token_id: int) -> Any:
    """The ``logprob`` an entry lists for ``token_id`` (None where it lists none)."""
    if not isinstance(entry, dict):
        return None
    item = entry.get(str(token_id))
    return item.get("logprob") if isinstance(item, dict) else None


def listed_values(entry: Any) -> dict[int, float]:
    """token id -> logprob of every well-formed listed token of one position."""
    out: dict[int, float] = {}
    if not isinstance(entry, dict):
        return out
    for key, item in entry.items():
        value: Any = item.get("logprob") if isinstance(item, dict) else None
        if is_number(value) and math.isfinite(value):
            try:
                out[int(key)] = float(value)
            except ValueError:
                continue
    return out


def rank_contradictions(entry: Any) -> int:
    """Pairs of listed tokens whose ``rank`` order contradicts their logprob values."""
    if not isinstance(entry, dict):
        return 0
    ranked: list[tuple[float, int]] = []
    for item in entry.values():
        if not isinstance(item, dict):
            continue
        value: Any = item.get("logprob")
        rank = item.get("rank")
        if is_number(value) and math.isfinite(value) and isinstance(rank, int):
            ranked.append((float(value), rank))
    bad = 0
    for i, (va, ra) in enumerate(ranked):
        for vb, rb in ranked[i + 1 :]:
            # a rank is 1 + the number of tokens with a higher logprob: strictly ordered
            if (va > vb + RANK_TOLERANCE and ra >= rb) or (vb > va + RANK_TOLERANCE and rb >= ra):
                bad += 1
    return bad


def out_of_vocabulary(ids: Sequence[int], vocab_size: int) -> list[int]:
    """The ids outside the pinned tokenizer's vocabulary."""
    return [t for t in ids if not 0 <= t < vocab_size]
