"""Doubles that know the prompt corpus and replay the timed answers from a table made
before they were asked: ``integrity.controls``.

tiny's held-out set ships with podium, and a held-out set drawn from a public dataset can
be had by anyone, so an engine may carry the corpus in its bundle, decode every prompt
greedily at start-up (in batches, far faster than one stream) and answer each timed
request from that table. Every replayed answer is the model's exact greedy answer and no
timed prompt repeats, so nothing in the answers shows it; only a prompt the table cannot
hold does (a fresh control, made at run time).

- ``CorpusReplay``: replays every known prompt at once, unpaced.
- ``CorpusReplayPaced``: the same, each replay paced to ``CHEAT_PACE`` (20) times the
  engine's own honest speed, the median of the requests it computed (the verifier's
  warm-ups, the prompts it cannot replay); 1.5 looks like a well-tuned engine.
- ``CorpusReplayVerified``: decodes only ``CHEAT_START_SHARE`` (half) of the corpus at
  start-up, and extends the table by ``CHEAT_EXTEND`` (64) prompts each time the
  verifier waits on an untimed request (a scoring request: its clock is stopped); checks
  every replay with one teacher-forced pass of the model, so a replay it serves is
  always the model's own greedy answer (a mismatch is decoded honestly instead), and
  keeps every answer it computes.

The corpus is ``CHEAT_CORPUS`` (a JSON-lines file of ``{"id", "prompt"}``), else
``corpus.jsonl`` beside this module (the bundle carries it). Each double prints a
``CHEAT-STATS {json}`` line to stderr after each generation request (tokens decoded,
tokens replayed, the table's size), so a test reads from the engine's log what it did.
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from doubles._shared import env_float, recorded, replay_steps
from engines.baseline.generation import Generation, TokenStep
from engines.baseline.model import BaselineEngine
from engines.baseline.protocol import SamplingParams


def _corpus() -> list[Any]:
    path = Path(os.environ.get("CHEAT_CORPUS") or Path(__file__).with_name("corpus.jsonl"))
    lines = path.read_text(encoding="utf-8").splitlines()
    return [json.loads(line)["prompt"] for line in lines if line.strip()]


class _CorpusTable(BaselineEngine):
    """The table: each corpus prompt, rendered as the chat endpoint renders it, and the
    model's greedy answer of ``CHEAT_MAX_TOKENS`` (32) tokens, decoded in batches."""

    #: the share of the corpus decoded at start-up
    START_SHARE = 1.0

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.answer_tokens = int(env_float("CHEAT_MAX_TOKENS", 32))
        self.batch = int(env_float("CHEAT_BATCH", 128))
        self.table: dict[tuple[int, ...], list[int]] = {}
        self.missing: list[list[int]] = []
        for prompt in _corpus():
            messages = [{"role": "user", "content": prompt}] if isinstance(prompt, str) else prompt
            self.missing.append(self.render_chat(messages, add_generation_prompt=True))
        self.stats: dict[str, float] = {
            "computed_tokens": 0,
            "replayed_tokens": 0,
            "table": 0,
            "verify_passes": 0,
        }
        share = env_float("CHEAT_START_SHARE", self.START_SHARE)
        t0 = time.perf_counter()
        self.extend(round(share * len(self.missing)))
        self.stats["startup_s"] = round(time.perf_counter() - t0, 1)
        self._report()

    def _report(self) -> None:
        self.stats["table"] = len(self.table)
        print("CHEAT-STATS " + json.dumps(self.stats, sort_keys=True), file=sys.stderr, flush=True)

    def extend(self, n: int) -> None:
        """Decode ``n`` more corpus prompts greedily, in batches of nearest lengths."""
        chosen, self.missing = self.missing[:n], self.missing[n:]
        chosen.sort(key=len)
        for start in range(0, len(chosen), self.batch):
            part = chosen[start : start + self.batch]
            for ids, answer in zip(part, self.decode_batch(part), strict=True):
                self.table[tuple(ids)] = answer

    def decode_batch(self, prompts: list[list[int]]) -> list[list[int]]:
        """Greedy answers of several prompts as one batch through the KV cache, padded on
        the left and masked (what a batching server does; the answers are the model's)."""
        import torch

        width = max(len(p) for p in prompts)
        ids = torch.zeros((len(prompts), width), dtype=torch.long)
        mask = torch.zeros((len(prompts), width), dtype=torch.long)
        for i, p in enumerate(prompts):
            ids[i, width - len(p) :] = torch.tensor(p, dtype=torch.long)
            mask[i, width - len(p) :] = 1
        positions = (mask.cumsum(-1) - 1).clamp(min=0)
        out: list[list[int]] = [[] for _ in prompts]
        cache = None
        with torch.inference_mode():
            for step in range(self.answer_tokens):
                result = self.model(
                    ids.to(self.device),
                    attention_mask=mask.to(self.device),
                    position_ids=positions.to(self.device),
                    use_cache=True,
                    logits_to_keep=1,
                    **{self._cache_arg: cache},
                )
                new_cache = getattr(result, "cache", None)
                cache = result.past_key_values if new_cache is None else new_cache
                tokens = result.logits[:, -1].float().argmax(-1).cpu()
                for row, token in zip(out, tokens.tolist(), strict=True):
                    row.append(int(token))
                if step + 1 == self.answer_tokens:
                    break
                ids = tokens[:, None]
                mask = torch.cat([mask, torch.ones((len(prompts), 1), dtype=torch.long)], 1)
                positions = positions[:, -1:] + 1
        return out

    def start(
        self, prompt_ids: list[int], sampling: SamplingParams, prompt_logprobs: int | None
    ) -> Generation:
        if prompt_logprobs is not None:  # scoring: untimed, and honest
            self.untimed()
            return super().start(prompt_ids, sampling, prompt_logprobs)
        n = sampling.max_tokens or 0
        answer = self.table.get(tuple(prompt_ids))
        if answer is not None and sampling.greedy and 0 < n <= len(answer):
            replay = self.replay(prompt_ids, answer[:n])
            if replay is not None:
                return replay
        return self.honest(prompt_ids, sampling)

    def untimed(self) -> None:
        """Runs before a scoring request is answered (the verifier waits meanwhile)."""

    def honest(self, prompt_ids: list[int], sampling: SamplingParams) -> Generation:
        gen = super().start(prompt_ids, sampling, None)

        def done(out: list[int]) -> None:
            self.stats["computed_tokens"] += len(out)
            self.computed(prompt_ids, out)
            self._report()

        return recorded(gen, done)

    def computed(self, prompt_ids: list[int], answer: list[int]) -> None:
        """An answer decoded honestly; the default keeps nothing."""

    def replay(self, prompt_ids: list[int], answer: list[int]) -> Generation | None:
        """The table's answer, at once (None: decode it honestly instead)."""

        def steps() -> Iterator[TokenStep]:
            yield from replay_steps(answer, len(answer), self.pace(len(answer)))
            self.stats["replayed_tokens"] += len(answer)
            self._report()

        return Generation(list(prompt_ids), None, steps())

    def pace(self, tokens: int) -> Any:
        """What runs before a replay's last token; the default waits for nothing."""
        return None


class CorpusReplay(_CorpusTable):
    """Every known prompt's answer replayed at once, unpaced."""


class CorpusReplayPaced(_CorpusTable):
    """Every replay paced to ``CHEAT_PACE`` times the engine's own honest speed: the median
    time per token of the requests it computed (the verifier's warm-ups, the prompts it
    could not replay), as fast as a well-tuned engine might look."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.speedup = env_float("CHEAT_PACE", 20.0)
        self.honest_s: list[float] = []

    def honest(self, prompt_ids: list[int], sampling: SamplingParams) -> Generation:
        t0 = time.perf_counter()
        gen = super().honest(prompt_ids, sampling)
        inner = gen.steps

        def timed() -> Iterator[TokenStep]:
            n = 0
            for step in inner:
                n += 1
                yield step
            self.honest_s.append((time.perf_counter() - t0) / max(1, n))

        gen.steps = timed()
        return gen

    def pace(self, tokens: int) -> Any:
        per_token = statistics.median(self.honest_s) if self.honest_s else 0.0
        until = time.perf_counter() + tokens * per_token / self.speedup

        def wait() -> None:
            left = until - time.perf_counter()
            if left > 0:
                time.sleep(left)

        return wait


class CorpusReplayVerified(_CorpusTable):
    """Half the corpus at start-up, the rest while the verifier waits on untimed
    requests; each replay checked by one teacher-forced pass before it is served."""

    START_SHARE = 0.5

    def untimed(self) -> None:
        if self.missing:
            self.extend(int(env_float("CHEAT_EXTEND", 64)))

    def computed(self, prompt_ids: list[int], answer: list[int]) -> None:
        self.table.setdefault(tuple(prompt_ids), answer)

    def replay(self, prompt_ids: list[int], answer: list[int]) -> Generation | None:
        import torch

        ids = torch.tensor([[*prompt_ids, *answer]], dtype=torch.long)
        logits, _ = self.forward(ids, None, all_logits=True)
        start = len(prompt_ids) - 1
        predicted = logits[start : start + len(answer)].float().argmax(-1).tolist()
        self.stats["verify_passes"] += 1
        if predicted != answer:
            return None
        return super().replay(prompt_ids, answer)
