"""The benchmarks' figures (matplotlib, Agg backend, PNG under ``docs/img/``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from bench.common import IMG_DIR


def _pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def fidelity(result: dict[str, Any], out: Path = IMG_DIR) -> Path:
    plt = _pyplot()
    cells = [c for c in result["cells"] if c["rate"] > 0]
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4))
    for conc, marker in ((1, "o"), (8, "s")):
        row = sorted((c for c in cells if c["concurrency"] == conc), key=lambda c: c["rate"])
        rates = [c["rate"] for c in row]
        left.plot(
            rates,
            [c["max_abs_error_vs_engine"] * 100 for c in row],
            marker=marker,
            label=f"vs engine clock, c={conc}",
        )
        left.plot(
            rates,
            [abs(c["median_error_vs_nominal"]) * 100 for c in row],
            marker=marker,
            linestyle="--",
            label=f"vs nominal c x R, c={conc}",
        )
        right.plot(
            rates,
            [c["client_share"] * 100 for c in row],
            marker=marker,
            label=f"engine waiting for the harness, c={conc}",
        )
        right.plot(
            rates,
            [c["harness_cpu_share"] * 100 for c in row],
            marker=marker,
            linestyle="--",
            label=f"harness CPU / wall, c={conc}",
        )
    left.axhline(0.5, color="grey", linewidth=0.8, linestyle=":")
    left.set(xscale="log", xlabel="paced rate R per stream (tokens/s)", ylabel="|TPS error| (%)")
    left.set_title("TPS error (max over trials; nominal: median)")
    left.legend(fontsize=7)
    right.set(xscale="log", xlabel="paced rate R per stream (tokens/s)", ylabel="% of trial time")
    right.set_title("harness's share of the loop")
    right.legend(fontsize=7)
    fig.tight_layout()
    return _save(fig, out / "bench-fidelity.png")


def anchor(result: dict[str, Any], out: Path = IMG_DIR) -> Path:
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(7, 4))
    rounds = result["rounds"]
    xs = [r["round"] + 1 for r in rounds]
    for tool, marker in (("podium", "o"), ("guidellm", "s"), ("openai", "^")):
        if all(tool in r for r in rounds):
            ax.plot(xs, [r[tool]["tps"] for r in rounds], marker=marker, label=tool)
    ax.set(xlabel="round (order rotates each round)", ylabel="tokens/s", ylim=(0, None))
    ax.set_title("same engine, same workload: TPS per tool and round")
    ax.legend()
    fig.tight_layout()
    return _save(fig, out / "bench-anchor.png")


def noise(result: dict[str, Any], out: Path = IMG_DIR) -> Path:
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(7, 4))
    for i, run in enumerate(result["runs"]):
        ax.scatter([i + 1] * len(run["trials"]), run["trials"], s=14, alpha=0.7)
        ax.plot([i + 0.75, i + 1.25], [run["median"]] * 2, color="black")
    ax.set(xlabel="run (fresh engine process)", ylabel="trial TPS (tokens/s)", ylim=(0, None))
    ax.set_title("trial TPS per run; bar: the run's median")
    fig.tight_layout()
    return _save(fig, out / "bench-noise.png")


def _save(fig: Any, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    _pyplot().close(fig)
    return path
