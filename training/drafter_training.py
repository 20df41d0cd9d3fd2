"""Training the tiny model's MTP drafter (``python -m training.tiny_drafter train OUT``).

Teacher forcing on the target's own greedy continuations of chat-templated training verses
(no held-out chapter, no public prompt), ``steps`` unrolled draft steps in vLLM 0.32.0's
conventions (``training.tiny_drafter``: the comment above ``chat_ids``), the drafter's tied
head started from the target's embedding table projected on its top singular vectors.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from training.tiny_drafter import (
    PUBLIC,
    TINY,
    build,
    chat_ids,
    draft_step,
    greedy,
    load_target,
    masks,
    teacher,
)


def training_prompts(limit: int, seed: int) -> list[str]:
    """Verses of the training chapters only (never a held-out chapter)."""
    import random

    from training.kjv_corpus import load_chapters

    public = {json.loads(line)["prompt"] for line in PUBLIC.read_text().splitlines() if line}
    verses = [v for c in load_chapters() if not c.heldout for v in c.verses if v not in public]
    rng = random.Random(seed)
    rng.shuffle(verses)
    return verses[:limit]


def svd_head(target: Any, width: int) -> Any:
    """E V_w: the target table projected on its top-w right singular vectors (2048 x w)."""
    import torch

    e = target.model.embed_tokens.weight.detach().double()
    _, _, vh = torch.linalg.svd(e, full_matrices=False)
    return (e @ vh[:width].T).float()


def train(
    out: Path,
    *,
    minutes: float = 10.0,
    iters: int = 400,
    steps: int = 3,
    prompts: int = 3000,
    new: int = 48,
    batch: int = 32,
    lr: float = 2e-3,
    seed: int = 0,
    threads: int = 2,
    log: Any = print,
) -> Path:
    """Teacher-forced training on the target's own greedy continuations of chat-templated
    training verses; ``steps`` unrolled draft steps (loss weight 0.7**k); stops after ``iters``
    updates or ``minutes`` of wall time, whichever first. Writes a transformers checkpoint."""
    import random
    import time

    import torch

    torch.set_num_threads(threads)
    torch.manual_seed(seed)
    start = time.monotonic()
    drafter, target, tokenizer = _start()
    texts = training_prompts(prompts, seed)
    chats = [chat_ids(tokenizer, t) for t in texts]
    seqs = greedy(target, chats, new)
    log(
        f"data: {len(seqs)} sequences, {sum(map(len, seqs))} tokens, "
        f"{time.monotonic() - start:.0f}s"
    )
    cached = _teacher_batches(target, seqs, [len(c) for c in chats], batch)
    log(f"teacher: {len(cached)} batches, {time.monotonic() - start:.0f}s")

    opt, sched = _optimiser(drafter, lr, iters)
    rng = random.Random(seed)
    w = drafter.config.get_text_config().sliding_window
    done = 0
    deadline = start + minutes * 60
    while done < iters and time.monotonic() < deadline:
        loss, accs = _loss(drafter, cached[rng.randrange(len(cached))], steps, w)
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(drafter.parameters(), 1.0)
        opt.step()
        sched.step()
        done += 1
        if done % 10 == 0 or done == 1:
            acc = " ".join(f"{a:.3f}" for a in accs)
            log(f"iter {done} loss {loss.item():.3f} acc {acc} {time.monotonic() - start:.0f}s")
    drafter.eval()
    drafter.save_pretrained(out)
    log(f"trained {done} iters in {(time.monotonic() - start) / 60:.1f} min -> {out}")
    return out


def _start() -> tuple[Any, Any, Any]:
    """A fresh drafter (``build``'s, in training mode, its tied head the target's table on
    its top singular vectors), the target and its tokenizer."""
    import tempfile

    import torch
    from transformers import AutoTokenizer, Gemma4AssistantForCausalLM

    with tempfile.TemporaryDirectory() as tmp:
        build(Path(tmp))
        drafter = Gemma4AssistantForCausalLM.from_pretrained(tmp, attn_implementation="sdpa")
    drafter.train()
    target = load_target()
    tokenizer = AutoTokenizer.from_pretrained(TINY)
    with torch.no_grad():
        drafter.model.embed_tokens.weight.copy_(
            svd_head(target, drafter.config.get_text_config().hidden_size)
        )
    assert drafter.lm_head.weight.data_ptr() == drafter.model.embed_tokens.weight.data_ptr()
    return drafter, target, tokenizer


def _teacher_batches(
    target: Any, seqs: list[list[int]], gen_start: list[int], batch: int
) -> list[tuple[Any, ...]]:
    """The teacher once per batch of sequences (the corpus is reused over epochs): ids, the
    valid positions, which tokens are the target's own greedy ones, and ``teacher``'s."""
    import torch

    order = sorted(range(len(seqs)), key=lambda i: len(seqs[i]))
    cached = []
    for s in range(0, len(order), batch):
        idx = order[s : s + batch]
        length = max(len(seqs[i]) for i in idx)
        ids = torch.zeros(len(idx), length, dtype=torch.long)
        valid = torch.zeros(len(idx), length, dtype=torch.bool)
        for j, i in enumerate(idx):
            ids[j, : len(seqs[i])] = torch.tensor(seqs[i])
            valid[j, : len(seqs[i])] = True
        h, kv, g, emb = teacher(target, ids)
        # greedy[j, i]: token i is the target's own greedy token (generated part, no drift)
        greedy_tok = torch.zeros_like(valid)
        greedy_tok[:, 1:] = ids[:, 1:] == g[:, :-1]
        for j, i in enumerate(idx):
            greedy_tok[j, : gen_start[i]] = False
        cached.append((ids, valid, greedy_tok, h, kv, g, emb))
    return cached


def _optimiser(drafter: Any, lr: float, iters: int) -> tuple[Any, Any]:
    """AdamW with a linear warm-up over a twentieth of ``iters``, then a cosine decay."""
    import math

    import torch

    opt = torch.optim.AdamW(drafter.parameters(), lr=lr, betas=(0.9, 0.98), weight_decay=0.0)
    warm = max(1, iters // 20)
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt,
        lambda i: min(1.0, (i + 1) / warm) * 0.5 * (1 + math.cos(math.pi * min(i, iters) / iters)),
    )
    return opt, sched


def _loss(drafter: Any, batch: tuple[Any, ...], steps: int, w: int) -> tuple[Any, list[float]]:
    """One batch's loss over ``steps`` unrolled draft steps (weight 0.7**k) and each step's
    accuracy."""
    import torch
    import torch.nn.functional as F

    ids, valid, greedy_tok, h, kv, g, emb = batch
    b, length = ids.shape
    pos = torch.arange(length)[None].expand(b, length)
    m = masks(length, w)
    t = torch.arange(length)[None]
    prev, loss, accs = h, torch.zeros(()), []
    for k in range(steps):
        tok = torch.roll(emb, -(1 + k), 1)
        lab = torch.roll(g, -(1 + k), 1)
        logits, prev = draft_step(drafter, tok, prev, pos, kv, m)
        # row t valid: label g[t+1+k] exists and is real; for k >= 1 the inputs
        # x_{t+2..t+1+k} must be greedy tokens (what a draft that counts would be)
        ok = (t <= length - 2 - k) & torch.roll(valid, -(1 + k), 1)
        for j in range(1, k + 1):
            ok = ok & torch.roll(greedy_tok, -(1 + j), 1)
        loss = loss + 0.7**k * F.cross_entropy(logits[ok], lab[ok])
        accs.append((logits[ok].argmax(-1) == lab[ok]).float().mean().item())
    return loss, accs
