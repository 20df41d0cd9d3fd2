"""The tiny model's tokenizer: byte-level BPE, 2,048 tokens, Gemma-style specials and chat.

Byte-level BPE never needs ``<unk>`` (every byte has a token), so any text an engine is
sent can be encoded. The special tokens and the chat template copy Gemma's layout, so
code written for the tiny model reads the same as code written for the real one.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

VOCAB_SIZE = 2048
SPECIAL_TOKENS = ("<pad>", "<eos>", "<bos>", "<unk>", "<start_of_turn>", "<end_of_turn>")
PAD_ID, EOS_ID, BOS_ID, UNK_ID, START_OF_TURN_ID, END_OF_TURN_ID = range(len(SPECIAL_TOKENS))

# Renders <bos><start_of_turn>user\n{content}<end_of_turn>\n<start_of_turn>model\n
# A system message, as in Gemma, is folded into the first user turn.
CHAT_TEMPLATE = (
    "{{ bos_token }}"
    "{%- if messages and messages[0]['role'] == 'system' -%}"
    "{%- set system = messages[0]['content'] + '\n\n' -%}"
    "{%- set messages = messages[1:] -%}"
    "{%- else -%}{%- set system = '' -%}{%- endif -%}"
    "{%- for message in messages -%}"
    "{%- set role = 'model' if message['role'] == 'assistant' else message['role'] -%}"
    "{{ '<start_of_turn>' + role + '\n' }}"
    "{%- if loop.first %}{{ system }}{% endif -%}"
    "{{ message['content'] | trim }}{{ '<end_of_turn>\n' }}"
    "{%- endfor -%}"
    "{%- if add_generation_prompt %}{{ '<start_of_turn>model\n' }}{% endif -%}"
)


def train_tokenizer(texts: Iterable[str]) -> Any:
    """Train BPE on ``texts`` (training text only); return a ``tokenizers.Tokenizer``."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers

    tokenizer = Tokenizer(models.BPE(unk_token="<unk>"))
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=VOCAB_SIZE,
        special_tokens=list(SPECIAL_TOKENS),
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tokenizer.train_from_iterator(texts, trainer=trainer)
    # Like Gemma's tokenizer, plain encoding starts with <bos>.
    tokenizer.post_processor = processors.TemplateProcessing(
        single="<bos> $A", pair="<bos> $A $B", special_tokens=[("<bos>", BOS_ID)]
    )
    for token_id, token in enumerate(SPECIAL_TOKENS):
        if tokenizer.token_to_id(token) != token_id:
            raise RuntimeError(f"special token {token} did not get id {token_id}")
    return tokenizer


def save_pretrained(tokenizer: Any, out_dir: Path) -> Any:
    """Wrap as ``PreTrainedTokenizerFast`` with the chat template and save it to ``out_dir``."""
    from transformers import PreTrainedTokenizerFast

    fast = PreTrainedTokenizerFast(
        tokenizer_object=tokenizer,
        bos_token="<bos>",
        eos_token="<eos>",
        pad_token="<pad>",
        unk_token="<unk>",
        additional_special_tokens=["<start_of_turn>", "<end_of_turn>"],
        model_max_length=4096,
        padding_side="left",
    )
    fast.chat_template = CHAT_TEMPLATE
    fast.save_pretrained(str(out_dir))
    return fast
