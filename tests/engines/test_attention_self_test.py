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
from engines.baseline.model import BaselineEngine
from engines.baseline.self_test import AttentionError

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


def test_the_dense_set_holds_the_fault_lengths_the_tiles_windows_and_powers_of_two() -> None:
    """A pass of L tests a prefill of L - 1: the float32 fault's prefills 65, 129 and 193
    are passes of 66, 130 and 194."""
    dense = lengths_for(WINDOW, MAX_LEN, dense=True)
    assert {66, 130, 194} <= set(dense)  # the fault: prefills of 64k + 1
    assert {64, 65, 128, 129, 192, 193} <= set(dense)  # and the tile's other neighbours
    assert {2, 3, 4, 16, 17, 18, 32, 33, 34} <= set(dense)
    assert len(dense) == 18 and max(dense) == 3 * 64 + 2
    e4b = lengths_for(512, MAX_LEN, dense=True)  # the real model's window
    assert {66, 130, 194, 512, 513, 514, 1024, 1025, 1026, 257, 258} <= set(e4b)
    assert len(e4b) == 27 and max(e4b) == 2 * 512 + 2
    assert lengths_for(512, 200, dense=True)[-1] == 194  # nothing past the model's limit


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
