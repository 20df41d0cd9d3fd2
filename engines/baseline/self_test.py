"""The engine's self-test as it loads: its attention path proven on this device, reported.

``prove`` runs ``engines.baseline.attention.verify_attention`` on a loaded model (which
switches the model to eager where the serving path is wrong) and raises
``AttentionError`` when no path holds; ``report`` tells the operator what it found.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import torch

    from engines.baseline.attention import AttentionCheck


class AttentionError(ValueError):
    """No attention path of this model computes correctly on this device and dtype."""


def prove(
    model: Any,
    *,
    cache_arg: str,
    window: int,
    max_len: int,
    vocab_size: int,
    device: torch.device,
) -> AttentionCheck:
    """Test the attention path ``model`` serves with against eager on ``device`` (switching
    to eager where it is wrong); ``AttentionError`` when even eager fails its own test."""
    from engines.baseline.attention import verify_attention

    serving = str(getattr(model.config, "_attn_implementation", None) or "sdpa")
    check = verify_attention(
        model,
        implementation=serving,
        cache_arg=cache_arg,
        window=window,
        max_len=max_len,
        vocab_size=vocab_size,
        dtype=str(next(model.parameters()).dtype).removeprefix("torch."),
        device=device,
        dense=device.type == "cuda",  # where kernels were seen wrong; cheap there
    )
    if not check.ok:
        raise AttentionError(check.summary())
    return check


def report(check: AttentionCheck | None, path: str | Path | None) -> None:
    """What the self-test found (None: it did not run): a line on stderr, and as JSON to
    ``path`` when one is given."""
    if check is not None:
        print(f"attention self-test: {check.summary()}", file=sys.stderr, flush=True)
    if path is not None:
        document = check.to_dict() if check is not None else None
        Path(path).write_text(json.dumps(document), encoding="utf-8")
