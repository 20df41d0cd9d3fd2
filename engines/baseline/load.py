"""Loading a checkpoint: the tokenizer, the weights, and what the engine reads from them.

``load_checkpoint`` resolves the device and dtype, applies the lossy levers the rules
allow at load (a shorter sliding window, weights rounded to integers), moves the model
to its device and reads what decoding needs from the config: the vocabulary, the
context length, the end-of-sequence ids and vLLM's default sampling.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from engines.baseline.protocol import SamplingDefaults

if TYPE_CHECKING:
    import torch

DEVICES = ("auto", "cpu", "cuda")
DTYPES = ("auto", "float32", "bfloat16", "float16")
#: weight rounding at load: name -> bits (signed integers, one scale per tensor)
QUANTIZATIONS = {"int8": 8, "int4": 4}


def resolve_device(device: str) -> str:
    """``auto`` is ``cuda`` when torch sees a GPU, else ``cpu``; other names pass through."""
    import torch

    if device not in DEVICES:
        raise ValueError(f"device must be one of {', '.join(DEVICES)}, not {device!r}")
    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    return device


def _torch_dtype(dtype: str) -> Any:
    """The torch dtype of a name in ``DTYPES`` (``auto`` is left to transformers)."""
    import torch

    if dtype not in DTYPES[1:]:
        raise ValueError(f"dtype must be one of {', '.join(DTYPES)}, not {dtype!r}")
    return getattr(torch, dtype)


def _as_id_set(value: Any) -> set[int]:
    if value is None:
        return set()
    if isinstance(value, int):
        return {value}
    return {int(v) for v in value}


def round_per_tensor(model: Any, bits: int) -> None:
    """Round every weight matrix and embedding table to signed ``bits``-bit integers.

    One scale per tensor: q = 2**(bits-1) - 1 (127 for int8, 7 for int4),
    scale = max|w| / q, w <- round(w / scale) * scale. Norm weights (1-d) are kept.
    """
    import torch

    levels = 2 ** (bits - 1) - 1
    with torch.no_grad():
        for param in model.parameters():
            if param.dim() >= 2:
                scale = param.abs().max() / levels
                param.copy_(torch.round(param / scale) * scale)


@dataclass
class Checkpoint:
    """A loaded model on its device, and what the engine reads from its configs."""

    device: torch.device
    tokenizer: Any
    model: Any
    #: the local attention window served (0: the model has none)
    sliding_window: int
    #: the keyword the model's forward, and its decoder's, take the KV cache by
    cache_arg: str
    decoder_cache_arg: str
    vocab_size: int
    max_model_len: int
    bos_token_id: int | None
    eos_token_ids: set[int]
    sampling_defaults: SamplingDefaults


def _cache_arg(forward: Any) -> str:
    """transformers renamed ``past_key_values`` to ``cache`` (5.2x); take what is there."""
    return "cache" if "cache" in inspect.signature(forward).parameters else "past_key_values"


def _load_model(
    path: Path, dtype: str, sliding_window: int | None, quantization: str | None
) -> tuple[Any, Any]:
    """The model (on the CPU) and its loaded config, with the load-time levers applied."""
    from transformers import AutoConfig, AutoModelForCausalLM

    loaded = AutoConfig.from_pretrained(str(path))
    if sliding_window is not None:
        if sliding_window < 1:
            raise ValueError(f"sliding_window must be at least 1, not {sliding_window}")
        loaded.get_text_config().sliding_window = sliding_window
    if quantization is not None and quantization not in QUANTIZATIONS:
        raise ValueError(
            f"quantization must be one of {', '.join(QUANTIZATIONS)}, not {quantization!r}"
        )
    model = AutoModelForCausalLM.from_pretrained(
        str(path), config=loaded, dtype="auto" if dtype == "auto" else _torch_dtype(dtype)
    )
    if quantization is not None:
        round_per_tensor(model, QUANTIZATIONS[quantization])
    return model, loaded


def load_checkpoint(
    path: Path,
    *,
    device: str,
    dtype: str,
    max_model_len: int | None,
    sliding_window: int | None,
    quantization: str | None,
    attention: str | None,
) -> Checkpoint:
    """Load ``path`` for serving (see ``BaselineEngine`` for the arguments)."""
    import torch
    from transformers import AutoTokenizer

    on = torch.device(resolve_device(device))
    tokenizer = AutoTokenizer.from_pretrained(str(path))
    model, loaded = _load_model(path, dtype, sliding_window, quantization)
    window = int(getattr(loaded.get_text_config(), "sliding_window", 0) or 0)
    model = model.to(on)
    model.eval()
    cache_arg = _cache_arg(model.forward)
    decoder_cache_arg = _cache_arg(model.get_decoder().forward)
    config = model.config.get_text_config()
    limit = int(getattr(config, "max_position_embeddings", 0) or 0) or None
    length = max_model_len or limit or 4096
    if limit is not None and length > limit:
        raise ValueError(f"max_model_len {length} exceeds the model's {limit}")
    gen = model.generation_config
    eos = (
        _as_id_set(tokenizer.eos_token_id)
        | _as_id_set(gen.eos_token_id)
        | _as_id_set(config.eos_token_id)
    )
    # vLLM takes default sampling from the model's generation_config.
    defaults = SamplingDefaults(
        temperature=float(gen.temperature) if gen.do_sample and gen.temperature else 1.0,
        top_p=float(gen.top_p) if gen.do_sample and gen.top_p else 1.0,
        top_k=int(gen.top_k) if gen.do_sample and gen.top_k else 0,
    )
    if attention is not None:
        model.set_attn_implementation(attention)
    return Checkpoint(
        device=on,
        tokenizer=tokenizer,
        model=model,
        sliding_window=window,
        cache_arg=cache_arg,
        decoder_cache_arg=decoder_cache_arg,
        vocab_size=int(config.vocab_size),
        max_model_len=length,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_ids=eos,
        sampling_defaults=defaults,
    )
