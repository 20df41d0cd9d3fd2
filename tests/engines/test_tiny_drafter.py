"""The shipped MTP drafter for the tiny model (podium/data/tiny/drafter): fast, no vLLM.

It loads with transformers as vLLM expects it (``gemma4_assistant``, no centroids, tied
output head, no ``lm_head.weight``); the batched training path equals a hand-written
single-query step 0 (training/tiny_drafter.py's check (a), the vLLM conventions of
gemma4_mtp.py); and the offline replay of vLLM's greedy draft/verify loop on the tps
prompts accepts well above chance (the README records what real vLLM measured).
"""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]
DRAFTER = REPO / "podium" / "data" / "tiny" / "drafter"
# measured 120/133 = 0.90 at K=1 offline (and K=3: 0.852 offline = real vLLM); a wide margin
STEP0_FLOOR = 0.6


def tiny_drafter() -> ModuleType:
    """training/tiny_drafter.py of this checkout (training is not an installed package)."""
    name = "podium_training_tiny_drafter"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, REPO / "training" / "tiny_drafter.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def models() -> tuple[Any, Any, Any]:
    pytest.importorskip("torch")
    from transformers import AutoTokenizer, Gemma4AssistantForCausalLM

    td = tiny_drafter()
    target = td.load_target()
    drafter = Gemma4AssistantForCausalLM.from_pretrained(DRAFTER, attn_implementation="sdpa")
    return target, drafter.eval(), AutoTokenizer.from_pretrained(td.TINY)


def test_checkpoint_is_what_vllm_loads(models: tuple[Any, Any, Any]) -> None:
    from safetensors import safe_open

    _, drafter, _ = models
    config = json.loads((DRAFTER / "config.json").read_text())
    assert config["model_type"] == "gemma4_assistant"
    assert config["use_ordered_embeddings"] is False
    assert config["tie_word_embeddings"] is True
    assert config["backbone_hidden_size"] == 128
    with safe_open(str(DRAFTER / "model.safetensors"), "pt") as fh:
        keys = set(fh.keys())
    assert "lm_head.weight" not in keys and "model.embed_tokens.weight" in keys
    assert not any("k_proj" in k or "v_proj" in k for k in keys)
    assert drafter.lm_head.weight.data_ptr() == drafter.model.embed_tokens.weight.data_ptr()
    generation = json.loads((DRAFTER / "generation_config.json").read_text())
    assert "suppress_tokens" not in generation
    assert sum(p.stat().st_size for p in DRAFTER.iterdir()) < 4 * 1024 * 1024


def test_batched_step0_equals_single_query_reference(models: tuple[Any, Any, Any]) -> None:
    target, drafter, tokenizer = models
    td = tiny_drafter()
    (plen, ids), *_ = td.public_sequences(target, tokenizer, new=60, count=1)
    anchors = [0, plen - 1, 40, 63, 64, 70, len(ids) - 2]
    assert len(ids) > 70
    assert td.check_a(target, drafter, ids, anchors) < 1e-4


def test_greedy_continuations_are_the_targets_generate(models: tuple[Any, Any, Any]) -> None:
    import torch

    target, _, tokenizer = models
    td = tiny_drafter()
    (plen, ids), *_ = td.public_sequences(target, tokenizer, new=20, count=1)
    out = target.generate(
        torch.tensor([ids[:plen]]), max_new_tokens=20, do_sample=False, eos_token_id=None
    )
    assert out[0].tolist() == ids


def test_offline_acceptance_on_the_tps_prompts(models: tuple[Any, Any, Any]) -> None:
    target, drafter, tokenizer = models
    td = tiny_drafter()
    seqs = td.public_sequences(target, tokenizer, new=32 + 3 + 1)
    result = td.simulate(target, drafter, seqs, max_k=3)
    accepted, drafted = result[1]
    assert drafted > 100
    assert accepted / drafted > STEP0_FLOOR, result
    # more draft tokens accept more tokens in all (never fewer than K=1)
    assert result[3][0] >= accepted
