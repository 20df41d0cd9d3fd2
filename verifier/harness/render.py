"""The verifier's own rendering of every prompt it sends: its ids, never the engine's.

The harness knows the pinned model, so it applies the pinned tokenizer and chat template
itself, exactly as vLLM does (the template renders its own special tokens, so the text
is encoded without adding any; a plain-text completions prompt gets BOS when the request
says ``add_special_tokens``). Every check and the reference stage use these ids; the ids
an engine reports are compared with them (``tps.prompt-mismatch``) and never believed.

``Renderer`` is the interface; ``TokenizerRenderer`` is the one built on the pinned
model's tokenizer (transformers), loaded once per verification.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Protocol

from podium.errors import UsageError
from podium.extras import require


class Renderer(Protocol):
    #: every id in [0, vocab_size) is a token of the pinned vocabulary
    vocab_size: int

    def chat(self, messages: list[dict[str, Any]]) -> list[int]:
        """Ids of the chat template applied to ``messages``, generation prompt added."""
        ...

    def text(self, text: str, *, add_special_tokens: bool) -> list[int]:
        """Ids of a plain-text prompt (with BOS when ``add_special_tokens``)."""
        ...


def render_prompt(
    renderer: Renderer, prompt: Any, *, endpoint: str, add_special_tokens: bool = True
) -> list[int]:
    """The ids the engine must see for one workload prompt at ``endpoint``."""
    if isinstance(prompt, list) and prompt and all(isinstance(t, int) for t in prompt):
        return [int(t) for t in prompt]  # token ids go through unchanged
    if endpoint.endswith("/chat/completions"):
        messages = [{"role": "user", "content": prompt}] if isinstance(prompt, str) else prompt
        return renderer.chat(list(messages))
    if isinstance(prompt, str):
        return renderer.text(prompt, add_special_tokens=add_special_tokens)
    raise UsageError("a completions prompt must be text or token ids, not messages")


class TokenizerRenderer:
    """The pinned model's tokenizer and chat template (``transformers.AutoTokenizer``)."""

    def __init__(self, model_dir: Path) -> None:
        transformers = require("transformers", extra="engine")
        try:
            self.tokenizer = transformers.AutoTokenizer.from_pretrained(str(model_dir))
        except (OSError, ValueError) as exc:
            raise UsageError(
                f"cannot load the pinned tokenizer from {model_dir}: {exc}",
                hint="the pinned model folder must hold its tokenizer files",
                where=str(model_dir),
            ) from exc
        size = len(self.tokenizer)
        try:
            config = transformers.AutoConfig.from_pretrained(str(model_dir))
            text = config.get_text_config() if hasattr(config, "get_text_config") else config
            size = max(size, int(getattr(text, "vocab_size", 0) or 0))
        except (OSError, ValueError):
            pass  # a tokenizer without a model config: its own size is the vocabulary
        self.vocab_size = size

    def chat(self, messages: list[dict[str, Any]]) -> list[int]:
        text = self.tokenizer.apply_chat_template(
            messages, tokenize=False, add_generation_prompt=True
        )
        return list(self.tokenizer.encode(str(text), add_special_tokens=False))

    def text(self, text: str, *, add_special_tokens: bool) -> list[int]:
        ids = list(self.tokenizer.encode(text, add_special_tokens=False))
        bos = self.tokenizer.bos_token_id
        if add_special_tokens and bos is not None:
            ids = [int(bos), *ids]
        return ids
