"""The sweep's picture: TPS against PPL, in the leaderboard page's scatter style.

PPL on x (lower is better), TPS on y; the cap as the page's dashed red line, the
``cap - margin`` limit beside it, the Pareto front as the page's green step line, points
coloured as the page colours verdicts (a passing self-check as UNOFFICIAL, ochre), each
rejected or failed point labelled with its failing check ids, the recommendation ringed.
TPS is drift-corrected: each point's TPS relative to the baselines measured beside it,
times the median of all baseline runs (what the front is judged on, in TPS units).
"""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
from matplotlib.axes import Axes

from submission.sweep.answer import Answer, Candidate
from submission.sweep.space import Point

#: leaderboard/views/static/app.js COLORS and style.css
COLORS = {
    "VERIFIED": "#2f855a",
    "UNOFFICIAL": "#b7791f",
    "REJECTED": "#c53030",
    "FAILED": "#553c9a",
    "INVALID": "#c53030",
}
FG, MUTED, GRID = "#1d232b", "#66707c", "#eef1f4"


def _color(c: Candidate) -> str:
    return COLORS["UNOFFICIAL"] if c.passed else COLORS.get(c.verdict, MUTED)


def _corrected(answer: Answer) -> dict[str, float]:
    base = next((c for c in answer.candidates if c.is_baseline and c.tps), None)
    out = {}
    for c in answer.candidates:
        if c.rel is not None and base is not None and base.tps:
            out[c.point] = c.rel * base.tps
        elif c.tps is not None:
            out[c.point] = c.tps
    return out


def _style(ax: Axes) -> None:
    """The page's frame: white ground, light grid below the data, no top or right spine."""
    ax.set_facecolor("#ffffff")
    ax.grid(color=GRID, linewidth=1)
    ax.set_axisbelow(True)
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)
    for side in ("left", "bottom"):
        ax.spines[side].set_color("#9aa5b1")
    ax.tick_params(colors=MUTED, labelsize=9)


def _draw_cap(ax: Axes, answer: Answer) -> None:
    """The cap as a dashed red line and, left of it, the ``cap - margin`` limit."""
    if answer.cap is not None:
        ax.axvline(answer.cap, color="#c53030", linestyle=(0, (5, 4)), linewidth=1.2)
        ax.annotate(
            f"cap {answer.cap:.3f}",
            (answer.cap, 0),
            xytext=(-4, 6),
            textcoords="offset points",
            xycoords=("data", "axes fraction"),
            ha="right",
            color=MUTED,
            fontsize=9,
        )
    if answer.limit is not None and answer.cap is not None and answer.limit < answer.cap:
        ax.axvline(answer.limit, color="#c53030", linestyle=":", linewidth=1, alpha=0.7)
        ax.annotate(
            f"cap - margin {answer.limit:.3f}",
            (answer.limit, 1),
            xytext=(-4, -12),
            textcoords="offset points",
            xycoords=("data", "axes fraction"),
            ha="right",
            color=MUTED,
            fontsize=9,
        )


def _draw_front(ax: Axes, answer: Answer, pts: list[Candidate], tps: dict[str, float]) -> None:
    """The Pareto front as the page's green step line, in PPL order."""
    front = [c for c in pts if c.point in answer.front]
    front.sort(key=lambda c: float(c.ppl or 0))
    if front:
        xs, ys = [float(front[0].ppl or 0)], [tps[front[0].point]]
        for c in front[1:]:  # the page's step: across at the old TPS, then up
            xs += [float(c.ppl or 0), float(c.ppl or 0)]
            ys += [ys[-1], tps[c.point]]
        ax.plot(xs, ys, color=COLORS["VERIFIED"], linewidth=1.5, label="Pareto front", zorder=2)


def _draw_points(ax: Axes, pts: list[Candidate], tps: dict[str, float]) -> None:
    """Each point in its verdict's colour, labelled (a failing one with its check ids)."""
    for c in pts:
        ax.scatter(
            [float(c.ppl or 0)],
            [tps[c.point]],
            s=49,
            color=_color(c),
            zorder=3,
            marker="s" if c.is_baseline else "o",
            edgecolors="none",
        )
        note = "baseline" if c.is_baseline else Point.of(c.changes).label(keys=False)
        if not c.passed:
            note += "\n" + (", ".join(c.failing) or c.verdict)
        ax.annotate(
            note,
            (c.ppl, tps[c.point]),
            xytext=(6, 4),
            textcoords="offset points",
            fontsize=7,
            color=FG if c.passed else COLORS.get(c.verdict, MUTED),
        )


def _draw_heldout(ax: Axes, pts: list[Candidate], tps: dict[str, float]) -> bool:
    """Each point's held-out PPL as a ring at the same TPS; whether any point has one."""
    held = [c for c in pts if c.heldout_ppl is not None]
    for c in held:  # the same point on the held-out set: the rise the margin is made of
        y = tps[c.point]
        ax.plot(
            [float(c.ppl or 0), float(c.heldout_ppl or 0)],
            [y, y],
            color=MUTED,
            linestyle=":",
            linewidth=1,
        )
        ax.scatter([float(c.heldout_ppl or 0)], [y], s=49, facecolors="none", zorder=3,
                   edgecolors=COLORS.get(c.heldout_verdict or "", MUTED))  # fmt: skip
    return bool(held)


def _ring_recommended(ax: Axes, answer: Answer, tps: dict[str, float]) -> None:
    """A dark ring around the recommended point, if it was plotted."""
    best = answer.candidate(answer.recommended)
    if best is not None and best.ppl is not None and best.point in tps:
        ax.scatter(
            [best.ppl],
            [tps[best.point]],
            s=190,
            facecolors="none",
            edgecolors=FG,
            linewidths=1.6,
            zorder=4,
            label="recommended",
        )


def _legend(ax: Axes, *, held: bool) -> None:
    """The verdict colours' key, then the labelled artists (the front, the ring)."""
    handles = [
        plt.Line2D(
            [],
            [],
            marker="o",
            linestyle="",
            color=COLORS["UNOFFICIAL"],
            label="passes every check (self-reported)",
        ),
        plt.Line2D(
            [],
            [],
            marker="o",
            linestyle="",
            color=COLORS["REJECTED"],
            label="rejected (failing check ids)",
        ),
        plt.Line2D([], [], marker="o", linestyle="", color=COLORS["FAILED"], label="failed"),
        plt.Line2D([], [], marker="s", linestyle="", color=MUTED, label="baseline config"),
    ]
    if held:
        handles.append(
            plt.Line2D([], [], marker="o", linestyle=":", color=MUTED, markerfacecolor="none",
                       label="its held-out PPL (blind run; colour: its verdict)")
        )  # fmt: skip
    ax.legend(
        handles=handles + ax.get_legend_handles_labels()[0],
        fontsize=7,
        frameon=False,
        loc="lower left",
    )


def plot(answer: Answer, path: Path, *, title: str = "") -> Path:
    tps = _corrected(answer)
    pts = [c for c in answer.candidates if c.ppl is not None and c.point in tps]
    fig, ax = plt.subplots(figsize=(7.2, 4.9), dpi=110)
    _style(ax)
    _draw_cap(ax, answer)
    _draw_front(ax, answer, pts, tps)
    _draw_points(ax, pts, tps)
    held = _draw_heldout(ax, pts, tps)
    _ring_recommended(ax, answer, tps)
    _legend(ax, held=held)
    ax.set_xlabel("PPL (lower is better)", color=MUTED)
    ax.set_ylabel("TPS (drift-corrected)", color=MUTED)
    if pts:
        ax.set_ylim(0, max(tps[c.point] for c in pts) * 1.12)
    if title:
        ax.set_title(title, color=FG, fontsize=10, loc="left")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    plt.close(fig)
    return path
