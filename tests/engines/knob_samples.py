"""Knob values the launcher tests and the real-vLLM tests share.

``SAMPLES`` has one non-default value per schema knob (a knob added to the schema must be
added here); ``PUBLISHED`` is the published winning config of the Fast Gemma Challenge,
verbatim; ``NEEDS`` says which knobs only act together with another one.
"""

from __future__ import annotations

from typing import Any

PUBLISHED = {
    "SLIDING_WINDOW": 188,
    "CENTROID_TOP_K": 49,
    "WARMUP_BRIDGE": 1,
    "WARMUP_NUM_PROMPTS": 64,
    "PRECACHE_BENCH": 0,
    "SPECULATIVE_CONFIG": {"method": "mtp", "num_speculative_tokens": 7},
    "MAX_MODEL_LEN": 4096,
    "GPU_MEMORY_UTILIZATION": 0.90,
}

# One non-default value per schema knob; a knob added to the schema must be added here.
SAMPLES: dict[str, Any] = {
    "MODEL": "google/gemma-4-E4B-it",
    "SERVED_MODEL_NAME": "gemma",
    "SLIDING_WINDOW": 192,
    "CENTROID_TOP_K": 32,
    "WARMUP_BRIDGE": True,
    "WARMUP_NUM_PROMPTS": 3,
    "WARMUP_MAX_TOKENS": 7,
    "PRECACHE_BENCH": 1,
    "SPECULATIVE_CONFIG": {"method": "mtp", "num_speculative_tokens": 3},
    "MAX_MODEL_LEN": 4096,
    "GPU_MEMORY_UTILIZATION": 0.85,
    "MAX_NUM_BATCHED_TOKENS": 8192,
    "MAX_NUM_SEQS": 4,
    "HF_OVERRIDES": {"text_config": {"rope_theta": 10000}},
    "DTYPE": "bfloat16",
    "QUANTIZATION": "fp8",
    "KV_CACHE_DTYPE": "fp8",
    "ENFORCE_EAGER": True,
    "ENABLE_PREFIX_CACHING": False,
    "ENABLE_CHUNKED_PREFILL": True,
    "MAX_LOGPROBS": 5,
    "LOGPROBS_MODE": "raw_logprobs",
    "LIMIT_MM_PER_PROMPT": {"audio": 1, "image": 2},
    "LANGUAGE_MODEL_ONLY": True,
    "COMPILATION_CONFIG": {"cudagraph_capture_sizes": [1, 2]},
    "ATTENTION_BACKEND": "FLASH_ATTN",
    "SEED": 7,
    "DEVICE": "cuda",
}
# Knobs that only act together with another one.
NEEDS = {"CENTROID_TOP_K": {"SPECULATIVE_CONFIG": {"method": "mtp", "model": "/drafter"}}}
