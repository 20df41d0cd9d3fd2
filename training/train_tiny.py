"""Train podium's tiny Gemma 4 model on the King James Version, on the CPU.

The model exists so that tests and demos measure a perplexity that means something:
a few million parameters, trained for minutes, writing recognisable English.

Usage (from the repository root; about 12 minutes on two idle CPU cores):

    nice -n 10 python training/train_tiny.py --out podium/data/tiny/model

Everything is seeded (``--seed``, default 1234): the same command on the same
torch/transformers versions gives the same weights. Held-out chapters (see
``kjv_corpus.py``) never reach the tokenizer or the model here.
"""

from __future__ import annotations

import argparse
import json
import math
import random
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import kjv_corpus
import tiny_tokenizer

SEQ_LEN = 256
# Written into config.json beside ``per_layer_config`` so that a loader which derives the
# full-attention head size from ``global_head_dim`` (default 512) gets 32 too.
GLOBAL_HEAD_DIM = 32


def model_config() -> Any:
    """Gemma 4 text: 4 layers, hidden 128, vocabulary 2,048; about 3.7 M parameters."""
    from transformers import Gemma4TextConfig

    # Not a declared field (the config turns it into ``per_layer_config``), hence the dict.
    extra: dict[str, Any] = {"global_head_dim": GLOBAL_HEAD_DIM}
    return Gemma4TextConfig(
        vocab_size=tiny_tokenizer.VOCAB_SIZE,
        vocab_size_per_layer_input=tiny_tokenizer.VOCAB_SIZE,
        hidden_size=128,
        intermediate_size=512,
        num_hidden_layers=4,
        num_attention_heads=4,
        num_key_value_heads=1,
        head_dim=32,
        sliding_window=64,
        layer_types=["sliding_attention"] * 3 + ["full_attention"],
        max_position_embeddings=4096,
        pad_token_id=tiny_tokenizer.PAD_ID,
        bos_token_id=tiny_tokenizer.BOS_ID,
        eos_token_id=tiny_tokenizer.EOS_ID,
        tie_word_embeddings=True,
        **extra,
    )


def token_stream(tokenizer: Any, chapters: list[kjv_corpus.Chapter]) -> list[list[int]]:
    """Every training document as token ids: chapters, plus a share of chat-formatted pairs."""
    bos, eos = tiny_tokenizer.BOS_ID, tiny_tokenizer.EOS_ID
    docs = [[bos, *tokenizer.encode(c.text(), add_special_tokens=False).ids, eos] for c in chapters]
    sot, eot, nl = tiny_tokenizer.START_OF_TURN_ID, tiny_tokenizer.END_OF_TURN_ID, "\n"

    def enc(text: str) -> list[int]:
        return list(tokenizer.encode(text, add_special_tokens=False).ids)

    for user, reply in kjv_corpus.chat_examples(chapters):
        user_turn = [sot, *enc("user" + nl + user), eot, *enc(nl)]
        model_turn = [sot, *enc("model" + nl + reply), eot, *enc(nl)]
        docs.append([bos, *user_turn, *model_turn, eos])
    return docs


def batches(docs: list[list[int]], batch_size: int, seed: int, epoch: int) -> list[list[list[int]]]:
    """Shuffle documents (seeded per epoch), pack them end to end, cut SEQ_LEN+1 windows."""
    order = list(range(len(docs)))
    random.Random(seed * 1000 + epoch).shuffle(order)
    flat: list[int] = [t for i in order for t in docs[i]]
    windows = [flat[i : i + SEQ_LEN + 1] for i in range(0, len(flat) - SEQ_LEN, SEQ_LEN)]
    return [
        windows[i : i + batch_size] for i in range(0, len(windows) - batch_size + 1, batch_size)
    ]


def heldout_loss(model: Any, tokenizer: Any, chapters: list[kjv_corpus.Chapter]) -> float:
    """Mean NLL per token over held-out chapters, SEQ_LEN windows from each chapter start."""
    import torch

    total, count = 0.0, 0
    model.eval()
    with torch.no_grad():
        for c in chapters:
            ids = [tiny_tokenizer.BOS_ID, *tokenizer.encode(c.text(), add_special_tokens=False).ids]
            ids = ids[: SEQ_LEN + 1]
            x = torch.tensor([ids])
            logits = model(input_ids=x).logits[0, :-1].float()
            nll = torch.nn.functional.cross_entropy(logits, x[0, 1:], reduction="sum")
            total += float(nll)
            count += len(ids) - 1
    model.train()
    return total / count


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--out", type=Path, required=True, help="output model directory")
    parser.add_argument("--seed", type=int, default=1234)
    parser.add_argument("--steps", type=int, default=2000)
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--lr", type=float, default=3e-3)
    parser.add_argument("--warmup", type=int, default=50)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--log-every", type=int, default=50)
    return parser


def lr_at(step: int, args: argparse.Namespace) -> float:
    """A linear warm-up over ``--warmup`` steps, then a cosine decay to a tenth of ``--lr``."""
    if step < args.warmup:
        return float(args.lr * (step + 1) / args.warmup)
    progress = (step - args.warmup) / max(1, args.steps - args.warmup)
    return float(args.lr * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * progress))))


def optimiser(model: Any, lr: float) -> Any:
    """AdamW, weight decay on the matrices only."""
    import torch

    decay = [p for n, p in model.named_parameters() if p.dim() >= 2]
    no_decay = [p for n, p in model.named_parameters() if p.dim() < 2]
    return torch.optim.AdamW(
        [{"params": decay, "weight_decay": 0.1}, {"params": no_decay, "weight_decay": 0.0}],
        lr=lr,
        betas=(0.9, 0.95),
    )


def train(model: Any, optim: Any, docs: list[list[int]], args: argparse.Namespace) -> int:
    """``--steps`` updates over the packed documents, epoch after epoch; the epochs started."""
    import torch

    start = time.monotonic()
    step, epoch, running = 0, 0, 0.0
    while step < args.steps:
        for batch in batches(docs, args.batch_size, args.seed, epoch):
            if step >= args.steps:
                break
            x = torch.tensor(batch)
            for group in optim.param_groups:
                group["lr"] = lr_at(step, args)
            logits = model(input_ids=x[:, :-1]).logits
            loss = torch.nn.functional.cross_entropy(
                logits.reshape(-1, logits.shape[-1]).float(), x[:, 1:].reshape(-1)
            )
            optim.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optim.step()
            running += loss.item()
            step += 1
            if step % args.log_every == 0:
                elapsed = time.monotonic() - start
                print(
                    f"step {step} epoch {epoch} loss {running / args.log_every:.3f} "
                    f"lr {lr_at(step, args):.2e} elapsed {elapsed:.0f}s",
                    flush=True,
                )
                running = 0.0
        epoch += 1
    return epoch


def save(model: Any, tokenizer: Any, out: Path) -> None:
    """The model, its config (``global_head_dim`` added), generation config and tokenizer."""
    from transformers import GenerationConfig

    out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(str(out))
    config_path = out / "config.json"
    saved = json.loads(config_path.read_text())
    saved["global_head_dim"] = GLOBAL_HEAD_DIM
    config_path.write_text(json.dumps(saved, indent=2, sort_keys=True) + "\n")
    GenerationConfig(
        bos_token_id=tiny_tokenizer.BOS_ID,
        eos_token_id=[tiny_tokenizer.EOS_ID, tiny_tokenizer.END_OF_TURN_ID],
        pad_token_id=tiny_tokenizer.PAD_ID,
        do_sample=False,
    ).save_pretrained(str(out))
    tiny_tokenizer.save_pretrained(tokenizer, out)


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)

    import torch
    from transformers import Gemma4ForCausalLM

    random.seed(args.seed)
    torch.manual_seed(args.seed)
    torch.set_num_threads(args.threads)
    torch.use_deterministic_algorithms(True)

    train_chapters, heldout_chapters = kjv_corpus.split(kjv_corpus.load_chapters())
    tokenizer = tiny_tokenizer.train_tokenizer(c.text() for c in train_chapters)
    docs = token_stream(tokenizer, train_chapters)
    print(f"training documents: {len(docs)}, tokens: {sum(map(len, docs))}", flush=True)

    config = model_config()
    model = Gemma4ForCausalLM(config)
    model.train()
    n_params = sum(p.numel() for p in model.parameters())
    print(f"parameters: {n_params}", flush=True)

    optim = optimiser(model, args.lr)
    start = time.monotonic()
    epoch = train(model, optim, docs, args)
    train_seconds = time.monotonic() - start

    ho = heldout_loss(model, tokenizer, heldout_chapters)
    print(f"held-out loss {ho:.4f} ppl {math.exp(ho):.2f}; {train_seconds:.0f}s", flush=True)
    save(model, tokenizer, args.out)
    summary = {
        "seed": args.seed,
        "steps": args.steps,
        "batch_size": args.batch_size,
        "seq_len": SEQ_LEN,
        "lr": args.lr,
        "epochs_started": epoch,
        "train_seconds": round(train_seconds, 1),
        "parameters": n_params,
        "heldout_window_ppl": round(math.exp(ho), 3),
        "torch": torch.__version__,
    }
    print(json.dumps(summary), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
