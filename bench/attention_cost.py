"""The reference's attention self-test at the real model's size: its cost and its margins.

    python -m bench.attention_cost --out "$OUT"        # on the GPU machine (cuda)
    python -m bench.attention_cost --tiny --out /tmp/a  # the same steps on the CPU, small

``engines.baseline.attention.self_test`` (the lengths the reference tests on CUDA) run
on four kinds of model, each length's difference from eager and time recorded:

- **e4b**: the E4B text shape (``bench.gpu_e4b.E4B``: 42 layers, window 512, 262,144
  tokens) with random weights, in bfloat16 (the reference's dtype on fast-gemma) and
  then float32; first cold (the first GPU work after the build, as in the reference),
  then warm. The test runs the first 6 layers (``test_depth``: five sliding and one
  full); the former whole-depth test is in bench/results/attention_cost.json's
  ``former`` runs (the first device run of this script, at 9dce903).
- **tiny**: the shipped trained tiny model (4 layers, window 64), float32 and bfloat16:
  where the fused float32 kernel was found wrong at prefills of 65, 129 and 193.
- **grown**: the trained tiny model grown to 42 layers by repeating its trained layers
  in order (``grown``): trained weights at the real model's depth, tested through its
  first 4 layers (as the reference does) and through all 42.
- **broken**: a path wrong exactly at prefills of 64k + 1 tokens (``tests/doubles``'
  ``BROKEN``: half a unit added to the attention output), on each model above: what the
  test still catches at that depth and dtype.

The result goes to ``OUT/attention_cost.json`` after every step. Each self-test's time
is its whole ``self_test`` call (the eager pass included); ``a10g_estimate_s`` is the
H200's time times ``A10G_FACTOR``, an estimate, not a measurement.
"""

from __future__ import annotations

import argparse
import gc
import inspect
import json
import os
import re
import sys
import time
from pathlib import Path
from typing import Any

from bench.common import import_doubles, machine

#: the A10G's time for this work over the H200's (memory bandwidth 600 against 4,800
#: GB/s, bf16 dense peak 125 against about 790 TFLOP/s): an estimate
A10G_FACTOR = 8.0
MAX_LEN = 4096
TINY_MODEL = Path(__file__).resolve().parents[1] / "podium" / "data" / "tiny" / "model"


def cache_arg(model: Any) -> str:
    params = inspect.signature(model.forward).parameters
    return "cache" if "cache" in params else "past_key_values"


def grown(layers: int, device: str, dtype: str) -> Any:
    """The trained tiny model grown to ``layers`` layers: layer j is a copy of trained
    layer j mod 4 (so the sliding and full layers keep their order), and the per-layer
    input tables are grown the same way."""
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM

    trained = AutoModelForCausalLM.from_pretrained(str(TINY_MODEL), dtype=torch.float32)
    source = trained.state_dict()
    config = AutoConfig.from_pretrained(str(TINY_MODEL))
    base = int(config.num_hidden_layers)
    order = [j % base for j in range(layers)]
    config.num_hidden_layers = layers
    config.layer_types = [config.layer_types[i] for i in order]
    model = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    per = int(config.hidden_size_per_layer_input)
    index = torch.tensor(order)
    state = {}
    for name, tensor in model.state_dict().items():
        match = re.match(r"model\.layers\.(\d+)\.(.*)", name)
        if match:
            state[name] = source[f"model.layers.{order[int(match[1])]}.{match[2]}"]
            continue
        given = source[name]
        if given.shape == tensor.shape:
            state[name] = given
            continue
        dim = next(
            i for i, (a, b) in enumerate(zip(tensor.shape, given.shape, strict=True)) if a != b
        )
        blocks = given.unflatten(dim, (base, per)).index_select(dim, index)
        state[name] = blocks.flatten(dim, dim + 1)
    model.load_state_dict(state)
    return model.to(device=device, dtype=getattr(torch, dtype)).eval()


def shipped(device: str, dtype: str) -> Any:
    import torch
    from transformers import AutoModelForCausalLM

    model: Any = AutoModelForCausalLM.from_pretrained(str(TINY_MODEL), dtype=getattr(torch, dtype))
    return model.to(device).eval()


def random_e4b(layers: int, device: str, dtype: str, tiny: bool) -> Any:
    import torch
    from transformers import Gemma4ForCausalLM

    from bench.gpu_e4b import E4B, TINY, text_config

    shape = dict(TINY if tiny else E4B)
    if layers != shape["num_hidden_layers"]:
        shape.update(num_hidden_layers=layers, num_kv_shared_layers=layers // 3)
        shape.pop("layer_types", None)
    config, _ = text_config(shape)
    torch.manual_seed(0)
    torch.set_default_dtype(getattr(torch, dtype))
    with torch.device(device):
        model = Gemma4ForCausalLM(config)
    torch.set_default_dtype(torch.float32)
    return model.eval()


def former_lengths(window: int, max_len: int) -> list[int]:
    """The lengths the CUDA self-test tested before (every length from 2 to 17 when 3W + 8
    is over 256, kW - 1 .. kW + 2 for k up to 4, the powers of two and their neighbours up
    to 4W + 2): 44 at the E4B's window, for the cost it had on the same machine."""
    top = min(max_len, max(4 * window + 2, 256))
    lengths = set(range(2, 3 * window + 9 if 3 * window + 8 <= 256 else 18))
    lengths |= {k * window + d for k in range(1, 5) for d in (-1, 0, 1, 2)}
    power = 16
    while power <= top:
        lengths |= {power - 1, power, power + 1}
        power *= 2
    return sorted(n for n in lengths if 2 <= n <= top)


def window_of(model: Any) -> int:
    return int(getattr(model.config.get_text_config(), "sliding_window", 0) or 0)


def measure(
    model: Any,
    implementation: str,
    dtype: str,
    device: str,
    lengths: list[int] | None = None,
    depth: int | None = None,
) -> dict[str, Any]:
    """One ``self_test`` of ``implementation`` on ``model``: its verdict and each length."""
    import torch

    from engines.baseline.attention import self_test

    per: list[dict[str, Any]] = []

    def heard(length: int, diff: float, seconds: float) -> None:
        per.append({"length": length, "diff": round(diff, 6), "s": round(seconds, 4)})

    if device == "cuda":
        torch.cuda.synchronize()
    t0 = time.perf_counter()
    check = self_test(
        model,
        implementation=implementation,
        cache_arg=cache_arg(model),
        window=window_of(model),
        max_len=MAX_LEN,
        vocab_size=int(model.config.get_text_config().vocab_size),
        dtype=dtype,
        device=torch.device(device),
        dense=True,
        lengths=lengths,
        depth=depth,
        on_length=heard,
    )
    seconds = time.perf_counter() - t0
    honest = [p["diff"] for p in per if (p["length"] - 1) % 64 != 1 or p["length"] < 64]
    at_fault = [p["diff"] for p in per if (p["length"] - 1) % 64 == 1 and p["length"] > 64]
    return {
        "implementation": implementation,
        "seconds": round(seconds, 3),
        "lengths": check.lengths,
        "longest": check.longest,
        "layers": check.layers,
        "of_layers": check.of_layers,
        "worst_diff": round(check.worst_diff, 6),
        "worst_length": check.worst_length,
        "failing_at_shipped_tolerance": check.failing_lengths,
        "max_diff_off_the_fault_lengths": max(honest, default=None),
        "min_diff_at_the_fault_lengths": min(at_fault, default=None),
        "per_length": per,
    }


def main(argv: list[str] | None = None) -> int:
    import torch

    parser = argparse.ArgumentParser(prog="python -m bench.attention_cost", description=__doc__)
    parser.add_argument("--out", type=Path, default=Path(os.environ.get("OUT", "bench-out")))
    parser.add_argument("--tiny", action="store_true", help="small shapes on the CPU (a dry run)")
    args = parser.parse_args(argv)
    device = "cpu" if args.tiny else "cuda"
    args.out.mkdir(parents=True, exist_ok=True)
    import_doubles()
    from doubles.attention import register

    broken = register()
    result: dict[str, Any] = {
        "machine": machine(),
        "device": device,
        "torch": torch.__version__,
        "gpu": torch.cuda.get_device_name(0) if device == "cuda" else None,
        "a10g_factor": A10G_FACTOR,
        "command": "python -m bench.attention_cost " + " ".join(argv or sys.argv[1:]),
        "runs": [],
    }

    def save() -> None:
        (args.out / "attention_cost.json").write_text(json.dumps(result, indent=1) + "\n")

    def run(
        name: str,
        model: Any,
        dtype: str,
        *,
        paths: tuple[str, ...],
        lengths: list[int] | None = None,
        depth: int | None = None,
        **facts: Any,
    ) -> None:
        for path in paths:
            found = measure(model, path, dtype, device, lengths, depth)
            row = {"model": name, "dtype": dtype, **facts, **found}
            row["a10g_estimate_s"] = round(row["seconds"] * A10G_FACTOR, 2)
            result["runs"].append(row)
            save()
            fault = row["min_diff_at_the_fault_lengths"]
            print(
                f"{name} {dtype} {path}: {row['seconds']:.2f} s, {row['lengths']} lengths, "
                f"honest max {row['max_diff_off_the_fault_lengths']}, at 64k+1 {fault}",
                flush=True,
            )

    def free(model: Any) -> None:
        del model
        gc.collect()
        if device == "cuda":
            torch.cuda.empty_cache()

    e4b_layers = 6 if args.tiny else 42
    # the real size first, cold: the reference's own first GPU work after its load
    model = random_e4b(e4b_layers, device, "bfloat16", args.tiny)
    run("e4b-random", model, "bfloat16", paths=("sdpa",), state="cold")
    run("e4b-random", model, "bfloat16", paths=("sdpa", "eager", broken))
    model = model.float()
    run("e4b-random", model, "float32", paths=("sdpa", broken))
    free(model)
    for dtype in ("float32", "bfloat16"):
        model = shipped(device, dtype)
        run("tiny-trained", model, dtype, paths=("sdpa", broken))
        free(model)
        model = grown(42, device, dtype)
        run("tiny-grown", model, dtype, paths=("sdpa", broken))  # its first 4 layers
        run("tiny-grown", model, dtype, paths=("sdpa", broken), depth=42, state="every layer")
        free(model)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
