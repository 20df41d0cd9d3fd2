"""The attention path an engine computes with, proven on the hardware it runs on.

transformers' default attention (``sdpa``: torch's fused scaled-dot-product kernels)
picks a kernel per device, dtype and shape. On CUDA, in float32, it was found wrong at
some lengths: a forward pass of exactly 65, 129 or 193 tokens of the tiny model (window
64) gave last-position logits 4 to 8.5 away from the plain computation, while every other
length agreed within 1e-3. A reference built on such a kernel would judge every entry
against a broken model, and an honest engine would pick wrong tokens.

``self_test`` checks the path the engine is about to serve with against ``eager``
attention, transformers' plain-math definition (matmul, mask, softmax, matmul, with no
kernel choice), on the same device and dtype, over the lengths that matter for the
model's sliding window and the kernels' tiles (``test_lengths``): on CUDA prefills of
1 to 3 tokens, of kT - 1 .. kT + 1 for the 64-token tile and k up to 3 (the fault's own
lengths), of kW - 1 .. kW + 1 for k up to ``MULTIPLES``, and of each power of two and its
neighbours up to two windows (27 lengths at the E4B's window of 512; docs/benchmarks.md,
section 8, has what they cost on an H200 beside the former set of 44); on the CPU,
whose kernels agreed with eager at every length measured, a smoke set around W + 1 and
2W + 1. Longer passes (a long prompt's prefill, a scoring chunk after a cache) are not
tested.
Both halves of the work are covered: a prefill of L - 1 tokens (its last positions) and
one cached decode step after it (position L), each against eager's logits at the same
positions. Every tested length is a prefix of one sequence of token ids drawn from a fixed
seed (two runs test the same inputs), so one eager pass over the longest prefix gives the
exact logits for every length at once: attention is causal (and windowed), so position i
of a longer pass sees exactly the tokens a pass of i + 1 tokens sees.

Only the first layers that hold every kind of attention layer run (``test_depth``: 6 of
the E4B's 42), read through the model's own final norm, head and soft-cap: every layer
of a kind meets the same kernels, and the deeper layers would only carry honest rounding
further (docs/benchmarks.md, section 8).

A path that disagrees by more than ``TOLERANCE[dtype]`` (the largest absolute difference
of log-probabilities at any compared position) fails; ``verify_attention`` then switches
the model to eager and says so. The tolerance sits between honest numerics and the
fault, at the depth tested (H200): float32 kernels agree within 1e-5 on trained weights
(0.0024 on random E4B weights through 6 layers) and the fault is 3.8 to 4.6 nats;
bfloat16 kernels differ by up to 0.14 on trained weights through 4 layers (0.19 through
42), a fault of 0.5 in the attention output by 2.4 or more.
"""

from __future__ import annotations

import inspect
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import torch

#: the exact path every other is measured against
EXACT = "eager"
#: the largest |difference of log-probabilities| an honest kernel shows, per dtype
TOLERANCE = {"float32": 0.01, "bfloat16": 1.0, "float16": 1.0}
#: the kernel tile the float32 fault followed: wrong at a prefill of kT + 1 tokens
TILE = 64
#: the tile multiples tested on CUDA: prefills of kT - 1 .. kT + 1 for k up to this
TILES = 3
#: the window multiples tested: prefills of kW - 1 .. kW + 1 for k up to this, the
#: longest tested prefill being MULTIPLES windows and one token
MULTIPLES = 2
#: the last prefill positions compared per length
POSITIONS = 4


@dataclass(frozen=True)
class AttentionCheck:
    """What the self-test found, and the implementation the engine serves with."""

    tested: str
    serving: str
    dtype: str
    device: str
    tolerance: float
    lengths: int
    longest: int
    worst_diff: float
    worst_length: int
    failing_lengths: list[int] = field(default_factory=list)
    seconds: float = 0.0
    #: the first layers the test ran (``test_depth``), of the model's
    layers: int = 0
    of_layers: int = 0
    #: eager's own test (its cached decode step against its full pass), run only after
    #: the tested path failed and the engine switched to eager
    fallback: AttentionCheck | None = None

    @property
    def passed(self) -> bool:
        """The tested path agreed with eager everywhere."""
        return not self.failing_lengths

    @property
    def ok(self) -> bool:
        """The path the engine serves with is proven: the tested one, or eager after it."""
        return self.passed or (self.fallback is not None and self.fallback.passed)

    @property
    def switched(self) -> bool:
        return self.serving != self.tested

    def summary(self) -> str:
        where = f"{self.device} {self.dtype}"
        if self.layers < self.of_layers:
            where += f" through the first {self.layers} of {self.of_layers} layers"
        if self.passed:
            return (
                f"{self.tested} attention agrees with {EXACT} on {where} over {self.lengths} "
                f"lengths up to {self.longest} (worst {self.worst_diff:.2g} <= "
                f"{self.tolerance:g}, {self.seconds:.1f} s)"
            )
        shown = ", ".join(str(n) for n in self.failing_lengths[:8])
        more = " ..." if len(self.failing_lengths) > 8 else ""
        then = (
            f"serving with {self.serving} attention, which agrees with itself"
            if self.ok
            else f"and {self.serving} attention fails its own test: the engine cannot be trusted"
        )
        return (
            f"{self.tested} attention is wrong on {where} at {len(self.failing_lengths)} of "
            f"{self.lengths} lengths ({shown}{more}; worst {self.worst_diff:.3g} at length "
            f"{self.worst_length}); {then}"
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "summary": self.summary(),
            "tested": self.tested,
            "serving": self.serving,
            "passed": self.passed,
            "ok": self.ok,
            "dtype": self.dtype,
            "device": self.device,
            "tolerance": self.tolerance,
            "lengths": self.lengths,
            "longest": self.longest,
            "worst_diff": round(self.worst_diff, 6),
            "worst_length": self.worst_length,
            "failing_lengths": self.failing_lengths,
            "seconds": round(self.seconds, 3),
            "layers": self.layers,
            "of_layers": self.of_layers,
            "fallback": self.fallback.to_dict() if self.fallback is not None else None,
        }


def test_lengths(window: int, max_len: int, *, dense: bool = True) -> list[int]:
    """The pass lengths tested for a model whose sliding window is ``window`` (0: none).

    A pass of L tokens tests a prefill of L - 1 tokens and the decode step after it.
    ``dense`` (on CUDA, where kernels were seen wrong): prefills of 1 to 3 tokens, of
    kT - 1 .. kT + 1 for the kernel tile T = ``TILE`` and k up to ``TILES`` (the float32
    fault: 65, 129 and 193), of kW - 1 .. kW + 1 for k up to ``MULTIPLES``, and of each
    power of two from 16 and its neighbours up to ``MULTIPLES`` windows and one token.
    Otherwise a smoke set: passes of 2 to 4, W - 1 .. W + 2, 2W - 1 .. 2W + 2 and 3W + 1.
    Lengths over ``max_len`` are left out.
    """
    w = window if window > 0 else TILE
    if not dense:
        smoke = {2, 3, 4, 3 * w + 1} | {k * w + d for k in (1, 2) for d in (-1, 0, 1, 2)}
        return sorted(n for n in smoke if n <= max_len)
    longest = MULTIPLES * w + 1
    prefills = {1, 2, 3}
    prefills |= {k * TILE + d for k in range(1, TILES + 1) for d in (-1, 0, 1)}
    prefills |= {k * w + d for k in range(1, MULTIPLES + 1) for d in (-1, 0, 1)}
    power = 16
    while power <= longest:
        prefills |= {power - 1, power, power + 1}
        power *= 2
    return sorted(p + 1 for p in prefills if p + 1 <= max_len)


def _logprobs(logits: torch.Tensor) -> torch.Tensor:
    import torch

    return torch.log_softmax(logits.float(), dim=-1)


class _Stop(Exception):
    """Raised after the last tested layer: the pass ends there."""


def test_depth(model: Any) -> int:
    """The layers a test runs: the shortest first layers that hold every kind of attention
    layer the model has (its ``layer_types``; all layers where it names none, or where its
    decoder has no ``layers`` and ``norm`` to stop at). A kernel is chosen per call by
    device, dtype and shape, and every layer of a kind calls it with the same shapes, so
    the first layer of each kind meets every kernel the model serves with; the layers
    after them only carry an honest kernel's rounding further (at the E4B's 42 random
    layers, eager's own cached decode differs from its full pass by 5 nats in bfloat16:
    docs/benchmarks.md)."""
    config = model.config.get_text_config()
    decoder = model.get_decoder()
    layers = getattr(decoder, "layers", None)
    total = len(layers) if layers is not None else int(config.num_hidden_layers)
    types = list(getattr(config, "layer_types", None) or [])[:total]
    if not types or layers is None or not hasattr(decoder, "norm"):
        return total
    seen: set[str] = set()
    for index, kind in enumerate(types):
        seen.add(kind)
        if seen == set(types):
            return index + 1
    return total


def _forward(
    model: Any,
    ids: torch.Tensor,
    *,
    depth: int,
    keep: int | torch.Tensor,
    cache_arg: str,
    cache: Any = None,
    use_cache: bool = True,
) -> tuple[torch.Tensor, Any]:
    """Logits at ``keep`` (the last N positions, or these positions) of a pass over ``ids``
    through the first ``depth`` layers, then the model's final norm, head and logit
    soft-cap; and the cache it filled. All layers: the model's own forward."""
    import torch

    decoder = model.get_decoder()
    if depth >= len(decoder.layers):
        given = {cache_arg: cache} if cache is not None else {}
        out = model(ids, use_cache=use_cache, logits_to_keep=keep, **given)
        filled = (getattr(out, "cache", None) or out.past_key_values) if use_cache else None
        return out.logits[0], filled
    if use_cache and cache is None:
        from transformers import DynamicCache

        cache = DynamicCache(config=model.config)
    seen: dict[str, torch.Tensor] = {}

    def stop(module: Any, args: Any, output: Any) -> None:
        seen["hidden"] = output[0] if isinstance(output, tuple) else output
        raise _Stop

    hook = decoder.layers[depth - 1].register_forward_hook(stop)
    params = inspect.signature(decoder.forward).parameters
    given = {} if cache is None else {"cache" if "cache" in params else "past_key_values": cache}
    try:
        decoder(input_ids=ids, use_cache=use_cache, **given)
    except _Stop:
        pass
    finally:
        hook.remove()
    hidden = seen["hidden"][0]
    hidden = hidden[-keep:] if isinstance(keep, int) else hidden[keep]
    logits = model.get_output_embeddings()(decoder.norm(hidden))
    cap = getattr(model.config.get_text_config(), "final_logit_softcapping", None)
    if cap:
        logits = torch.tanh(logits / cap) * cap
    return logits, cache


def _fast(
    model: Any, cache_arg: str, ids: torch.Tensor, depth: int
) -> tuple[torch.Tensor, torch.Tensor]:
    """The served path: a prefill of all but the last token (its last positions' logits),
    then one cached decode step of the last token."""
    import torch

    with torch.inference_mode():
        prefill, cache = _forward(
            model, ids[:, :-1], depth=depth, keep=POSITIONS, cache_arg=cache_arg
        )
        step, _ = _forward(
            model, ids[:, -1:], depth=depth, keep=1, cache_arg=cache_arg, cache=cache
        )
    return _logprobs(prefill), _logprobs(step)


def _exact(
    model: Any, ids: torch.Tensor, positions: list[int], cache_arg: str, depth: int
) -> dict[int, torch.Tensor]:
    """Eager's log-probabilities at ``positions`` of one pass over ``ids``."""
    import torch

    keep = torch.tensor(positions, device=ids.device)
    with torch.inference_mode():
        logits, _ = _forward(
            model, ids, depth=depth, keep=keep, cache_arg=cache_arg, use_cache=False
        )
    rows = _logprobs(logits)
    return dict(zip(positions, rows, strict=True))


def _compared(lengths: list[int]) -> list[int]:
    """The positions whose logits a test of ``lengths`` compares: the last ``POSITIONS``
    of each prefill (L - 1 tokens) and the decode step's (position L - 1)."""
    return sorted({p for n in lengths for p in range(max(0, n - 1 - POSITIONS), n)})


def self_test(
    model: Any,
    *,
    implementation: str,
    cache_arg: str,
    window: int,
    max_len: int,
    vocab_size: int,
    dtype: str,
    device: torch.device,
    dense: bool = True,
    seed: int = 0,
    lengths: list[int] | None = None,
    depth: int | None = None,
    on_length: Callable[[int, float, float], None] | None = None,
) -> AttentionCheck:
    """Measure ``implementation`` against eager on ``model``; leaves ``model`` serving with
    ``implementation``. See the module docstring for what is compared. ``lengths``
    replaces ``test_lengths``'s, ``depth`` the layers ``test_depth`` chose;
    ``on_length(length, diff, seconds)`` hears each length's result as it is measured (a
    calibration's evidence)."""
    import torch

    t0 = time.perf_counter()
    lengths = sorted(lengths) if lengths is not None else test_lengths(window, max_len, dense=dense)
    total = len(model.get_decoder().layers)
    depth = min(depth, total) if depth is not None else test_depth(model)
    tolerance = TOLERANCE.get(dtype, TOLERANCE["bfloat16"])
    generator = torch.Generator().manual_seed(seed)
    low = min(3, vocab_size - 1)  # past the usual pad/bos/eos ids
    worst, worst_length, failing = 0.0, 0, []
    if lengths:
        sequence = torch.randint(low, vocab_size, (1, lengths[-1]), generator=generator)
        sequence = sequence.to(device)
        model.set_attn_implementation(EXACT)
        exact = _exact(model, sequence, _compared(lengths), cache_arg, depth)
        model.set_attn_implementation(implementation)
    for length in lengths:
        started = time.perf_counter()
        prefill, step = _fast(model, cache_arg, sequence[:, :length], depth)
        n = min(len(prefill), length - 1)
        want = torch.stack([exact[p] for p in range(length - 1 - n, length - 1)])
        diff = max(
            float((prefill[-n:] - want).abs().max()),
            float((step[-1] - exact[length - 1]).abs().max()),
        )
        if on_length is not None:
            on_length(length, diff, time.perf_counter() - started)
        if diff > worst:
            worst, worst_length = diff, length
        if not diff <= tolerance:  # NaN fails too
            failing.append(length)
    model.set_attn_implementation(implementation)
    return AttentionCheck(
        tested=implementation,
        serving=implementation,
        dtype=dtype,
        device=str(device),
        tolerance=tolerance,
        lengths=len(lengths),
        longest=lengths[-1] if lengths else 0,
        worst_diff=worst,
        worst_length=worst_length,
        failing_lengths=failing,
        seconds=time.perf_counter() - t0,
        layers=depth,
        of_layers=total,
    )


def verify_attention(model: Any, *, implementation: str, **kwargs: Any) -> AttentionCheck:
    """``self_test``; where the tested path failed, switch to eager and test eager's own
    cached decode against its full pass (``ok`` says whether that held)."""
    check = self_test(model, implementation=implementation, **kwargs)
    if check.passed or implementation == EXACT:
        return check
    fallback = self_test(model, implementation=EXACT, **kwargs)
    return replace(check, serving=EXACT, fallback=fallback)
