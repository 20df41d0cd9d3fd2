"""The attention self-test (``engines.baseline.attention``) on the tiny model, on the CPU.

The CPU's own sdpa kernels are right, so the fault that float32 sdpa showed on CUDA (wrong
at a pass of kW + 1 tokens) is simulated by a registered path that is wrong exactly there
(``tests/doubles/attention.py``). The test must catch it at the lengths whose prefill is
kW + 1 tokens, switch the engine to eager and leave it computing what eager computes; and
an engine with no path that passes must refuse to exist.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from doubles.attention import register

from engines.baseline import attention
from engines.baseline.attention import test_lengths as lengths_for
from engines.baseline.model import AttentionError, BaselineEngine

SHIPPED_MODEL = Path(__file__).resolve().parents[2] / "podium" / "data" / "tiny" / "model"
WINDOW = 64  # the tiny model's sliding window
MAX_LEN = 4096


def last_logprobs(engine: BaselineEngine, length: int, implementation: str | None = None) -> Any:
    """The last position's log-probabilities of one full pass over ``length`` seeded ids."""
    import torch

    ids = torch.randint(
        3, engine.vocab_size, (1, length), generator=torch.Generator().manual_seed(7)
    )
    if implementation is not None:
        engine.model.set_attn_implementation(implementation)
    with torch.inference_mode():
        logits = engine.model(ids, use_cache=False).logits[0, -1]
    return torch.log_softmax(logits.float(), dim=-1)


def test_the_smoke_set_covers_each_window_multiple_and_its_neighbours() -> None:
    smoke = lengths_for(WINDOW, MAX_LEN, dense=False)
    assert {63, 64, 65, 66, 127, 128, 129, 130, 193} <= set(smoke)
    assert {2, 3, 4} <= set(smoke)
    assert lengths_for(WINDOW, 100, dense=False) == [2, 3, 4, 63, 64, 65, 66]


def test_the_dense_set_covers_every_length_up_to_three_windows_and_eight() -> None:
    dense = lengths_for(WINDOW, MAX_LEN, dense=True)
    assert set(range(2, 3 * WINDOW + 9)) <= set(dense)
    # kW - 1 .. kW + 2 up to four windows, the longest tested pass
    assert {255, 256, 257, 258} <= set(dense)
    assert max(dense) == 4 * WINDOW + 2
    assert lengths_for(WINDOW, 100, dense=True) == list(range(2, 101))


@pytest.mark.slow
def test_the_cpus_sdpa_passes_its_self_test() -> None:
    engine = BaselineEngine(SHIPPED_MODEL, self_test=True)
    check = engine.attention_check
    assert check is not None
    assert check.passed and check.ok and not check.switched, check.summary()
    assert check.tested == check.serving == "sdpa"
    assert check.lengths == len(lengths_for(WINDOW, MAX_LEN, dense=False))
    assert check.worst_diff <= attention.TOLERANCE["float32"]


@pytest.mark.slow
def test_a_path_wrong_at_window_multiples_plus_one_is_caught_and_replaced_by_eager() -> None:
    broken = register()
    engine = BaselineEngine(SHIPPED_MODEL, attention=broken, self_test=True)
    check = engine.attention_check
    assert check is not None
    # a pass of L tests a prefill of L - 1 tokens: the broken prefills are 65 and 129
    assert check.failing_lengths == [66, 130], check.summary()
    assert check.tested == broken and check.serving == "eager"
    assert check.fallback is not None and check.fallback.passed
    assert check.ok and not check.passed
    assert engine.model.config._attn_implementation == "eager"
    # the engine now computes the broken length as eager (and the CPU's sdpa) does
    served = last_logprobs(engine, 65)
    exact = last_logprobs(BaselineEngine(SHIPPED_MODEL), 65)
    assert float((served - exact).abs().max()) < 1e-3
    wrong = last_logprobs(engine, 65, implementation=broken)
    assert float((wrong - exact).abs().max()) > 0.1  # the length was really broken


@pytest.mark.slow
def test_an_engine_whose_eager_fallback_also_fails_refuses_to_load(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(attention.TOLERANCE, "float32", -1.0)  # nothing can pass
    with pytest.raises(AttentionError, match="eager attention fails its own test"):
        BaselineEngine(SHIPPED_MODEL, self_test=True)
