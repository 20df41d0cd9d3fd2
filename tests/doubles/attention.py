"""A wrong attention path for the self-test to catch, registered with transformers.

``BROKEN`` is sdpa attention with half a unit added to its output whenever a pass
processes exactly kW + 1 query tokens of the tiny model's window (W = 64): wrong at a
prefill of 65, 129 or 193 tokens and right everywhere else, decode steps included, as
float32 sdpa was on CUDA (``engines.baseline.attention``). A CPU cannot produce the fault,
so the tests simulate it with this path. Its masks are sdpa's (a custom path given no mask
function gets none, and then attends past the sliding window at every longer pass).
"""

from __future__ import annotations

from typing import Any

BROKEN = "podium-test-broken"
WINDOW = 64


def broken(module: Any, query: Any, key: Any, value: Any, attention_mask: Any, **kw: Any) -> Any:
    from transformers.integrations.sdpa_attention import sdpa_attention_forward

    out, weights = sdpa_attention_forward(module, query, key, value, attention_mask, **kw)
    if query.shape[2] > 1 and query.shape[2] % WINDOW == 1:
        out = out + 0.5
    return out, weights


def register() -> str:
    """Register ``BROKEN`` (once is enough; again is harmless); its name."""
    from transformers import AttentionInterface
    from transformers.masking_utils import AttentionMaskInterface, sdpa_mask

    AttentionInterface.register(BROKEN, broken)
    AttentionMaskInterface.register(BROKEN, sdpa_mask)
    return BROKEN
