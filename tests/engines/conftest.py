"""Fixtures for engine tests: a tiny model and a baseline server on a free local port.

The model is the one shipped in ``podium/data/tiny/model`` when it is there; otherwise a
random Gemma 4 model of the same family, with a byte-level BPE tokenizer trained here
and a Gemma-style chat template, is written to a temporary folder once per session.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
SHIPPED_MODEL = REPO_ROOT / "podium" / "data" / "tiny" / "model"
SERVED_NAME = "tiny-test"

CHAT_TEMPLATE = (
    "{{ bos_token }}{% for message in messages %}<start_of_turn>"
    "{{ 'model' if message['role'] == 'assistant' else message['role'] }}\n"
    "{{ message['content'] }}<end_of_turn>\n{% endfor %}"
    "{% if add_generation_prompt %}<start_of_turn>model\n{% endif %}"
)
SPECIALS = ["<pad>", "<eos>", "<bos>", "<unk>", "<start_of_turn>", "<end_of_turn>"]


def _corpus() -> list[str]:
    """Made-up words over many syllables, so byte-level BPE fills most of its vocabulary."""
    syllables = [
        "ka",
        "to",
        "mi",
        "ren",
        "su",
        "la",
        "bo",
        "dev",
        "qua",
        "zen",
        "fir",
        "ol",
        "ut",
        "pex",
        "sha",
        "ny",
        "gri",
        "mo",
        "ta",
        "ve",
    ]
    lines = []
    for i in range(2000):
        words = [
            syllables[(i * 7 + j * 3) % 20] + syllables[(i * 11 + j * 5) % 20] + syllables[j % 20]
            for j in range(10)
        ]
        lines.append(" ".join(words) + (". " if i % 3 else "? ") + f"Ünïcödé ✓ {i}.")
    return lines


def _write_random_model(folder: Path) -> Path:
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import (
        Gemma4ForCausalLM,
        Gemma4TextConfig,
        GenerationConfig,
        PreTrainedTokenizerFast,
    )

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=2048,
        special_tokens=SPECIALS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    )
    tok.train_from_iterator(_corpus(), trainer)
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok,
        bos_token="<bos>",
        eos_token="<eos>",
        pad_token="<pad>",
        unk_token="<unk>",
        additional_special_tokens=["<start_of_turn>", "<end_of_turn>"],
    )
    fast.chat_template = CHAT_TEMPLATE
    fast.save_pretrained(folder)
    end_of_turn = fast.convert_tokens_to_ids("<end_of_turn>")
    config = Gemma4TextConfig(
        vocab_size=2048,
        vocab_size_per_layer_input=2048,
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=2,
        num_key_value_heads=1,
        head_dim=32,
        sliding_window=32,
        max_position_embeddings=1024,
        pad_token_id=0,
        eos_token_id=1,
        bos_token_id=2,
        layer_types=["sliding_attention", "full_attention"],
    )
    torch.manual_seed(1234)
    model = Gemma4ForCausalLM(config)
    model.generation_config = GenerationConfig(
        bos_token_id=2, eos_token_id=[1, end_of_turn], pad_token_id=0
    )
    model.save_pretrained(folder)
    return folder


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if (SHIPPED_MODEL / "config.json").is_file():
        return SHIPPED_MODEL
    return _write_random_model(tmp_path_factory.mktemp("tiny-model"))


@pytest.fixture(scope="session")
def served_name() -> str:
    return SERVED_NAME


@pytest.fixture(scope="session")
def engine_server(tiny_model_dir: Path) -> Iterator[Any]:
    """One baseline server for the session; prompt logprobs scored in chunks of 16."""
    from engines.baseline import start_server

    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("HF_HUB_OFFLINE", "1")
        server = start_server(
            tiny_model_dir,
            served_model_name=SERVED_NAME,
            max_model_len=512,
            engine_kwargs={"logprob_chunk_tokens": 16},
        )
    yield server
    server.stop()


@pytest.fixture(scope="session")
def reference_model(tiny_model_dir: Path) -> Any:
    """The same checkpoint loaded directly with transformers, to compare against."""
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(str(tiny_model_dir))
    model.eval()
    return model


@pytest.fixture(scope="session")
def tokenizer(tiny_model_dir: Path) -> Any:
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(str(tiny_model_dir))
