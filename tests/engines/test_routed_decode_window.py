"""``doubles.decode:RoutedDecodeWindow``: a double spender that needs no memory to pass
self-consistency, so a restarted engine asked to score its answers would pass it too.

On the tiny model, in process: with ``CHEAT_WINDOW=12`` and ``CHEAT_SCORE_WINDOW=24`` it
decodes a chat prompt as a window of 12 does, scores that answer (a probe) as a window of
12 does, so every generated token is its own top, and scores a PPL record as a window of
24 does: the double spending its self-consistency cannot show.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from doubles.decode import RoutedDecodeWindow

from engines.baseline.generation import PositionLogprobs
from engines.baseline.model import BaselineEngine
from engines.baseline.protocol import SamplingParams

MODEL = Path(__file__).resolve().parents[2] / "podium" / "data" / "tiny" / "model"
ANSWER = 24
#: one model, one code, one CPU: the same scores to float32 rounding
SAME = 1e-4

QUESTION = (
    "Describe, in a few careful sentences, how a lighthouse keeper of the last century "
    "would prepare the lamp for a long winter night, which tools would be laid out, what "
    "would be checked twice, and what the keeper would write in the log before dawn."
)
RECORD = (
    "The river rose slowly through the night, and by morning the lower fields were under "
    "water. Farmers moved their animals to the high ground near the church, where the old "
    "stone wall had kept the floods out for three hundred years, and waited for the rain "
    "to stop. Nobody in the village could remember a spring so wet."
)


def _greedy(tokens: int) -> SamplingParams:
    return SamplingParams(
        max_tokens=tokens,
        temperature=0.0,
        top_p=1.0,
        top_k=0,
        seed=None,
        ignore_eos=True,
        min_tokens=0,
        stop_token_ids=(),
        logprobs=None,
    )


def _answer(engine: BaselineEngine, ids: list[int]) -> list[int]:
    return [s.token_id for s in engine.start(ids, _greedy(ANSWER), None).steps]


def _scored(engine: BaselineEngine, ids: list[int]) -> list[PositionLogprobs | None]:
    gen = engine.start(ids, _greedy(1), 1)
    list(gen.steps)
    assert gen.prompt_logprobs is not None
    return gen.prompt_logprobs


def _chosen(entries: list[PositionLogprobs | None]) -> list[float]:
    return [e.chosen.logprob for e in entries if e is not None]


def _close(a: list[float], b: list[float]) -> bool:
    return len(a) == len(b) and max(abs(x - y) for x, y in zip(a, b, strict=True)) < SAME


@pytest.fixture(scope="module")
def engines() -> Iterator[dict[str, BaselineEngine]]:
    """The double, with its windows set for the module's tests (it reads them per request),
    and plain engines of either window."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("CHEAT_WINDOW", "12")
        mp.setenv("CHEAT_SCORE_WINDOW", "24")
        yield {
            "routed": RoutedDecodeWindow(MODEL),
            "w12": BaselineEngine(MODEL, sliding_window=12),
            "w24": BaselineEngine(MODEL, sliding_window=24),
        }


def test_it_decodes_and_scores_its_own_answers_with_the_harsher_window(
    engines: dict[str, BaselineEngine],
) -> None:
    routed, w12, w24 = engines["routed"], engines["w12"], engines["w24"]
    chat = routed.render_chat([{"role": "user", "content": QUESTION}], True)
    answer = _answer(routed, chat)
    assert answer == _answer(w12, chat)
    probe = _scored(routed, chat + answer)
    assert _close(_chosen(probe), _chosen(_scored(w12, chat + answer)))
    assert not _close(_chosen(probe), _chosen(_scored(w24, chat + answer)))
    # self-consistency holds at every generated position: the token is its own top
    for i, token in enumerate(answer):
        entry = probe[len(chat) + i]
        assert entry is not None
        best = max(t.logprob for t in entry.top)
        assert entry.chosen.token_id == token and entry.chosen.logprob >= best - SAME


def test_it_scores_a_ppl_record_with_the_milder_window(engines: dict[str, BaselineEngine]) -> None:
    routed, w12, w24 = engines["routed"], engines["w12"], engines["w24"]
    record = routed.encode_text(RECORD, add_special_tokens=True)
    assert len(record) > 24  # long enough for the windows to differ
    scored = _chosen(_scored(routed, record))
    assert _close(scored, _chosen(_scored(w24, record)))
    assert not _close(scored, _chosen(_scored(w12, record)))
    # and a lossier model behind it: the window of 12 scores the record worse
    assert sum(_chosen(_scored(w12, record))) < sum(scored)
