"""What a person sees while a sweep runs, and the answer it ends with.

On a terminal: a live table (one row per measurement: knobs, PPL, TPS with its 95 %
interval, TPS relative to the baselines beside it, verdict, failing check ids), a bar over
the measurements planned, the ETA, and the current run's stage. Elsewhere (a pipe, CI):
one plain line per measurement, nothing redrawn. With ``--json`` nothing at all.
"""

from __future__ import annotations

import statistics
import time
from pathlib import Path
from typing import Any, ClassVar

from rich import box
from rich.console import Console, Group
from rich.live import Live
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table
from rich.text import Text

from podium.cli.output import quoted
from podium.untrusted import markup, text
from submission.sweep import Measurement, Point, SweepEvents, SweepFile, SweepResult
from submission.sweep.answer import Answer, Candidate, relative

_STYLE = {
    "SELF-REPORTED": "green",
    "VERIFIED": "green",
    "UNOFFICIAL": "yellow",
    "REJECTED": "red",
    "FAILED": "magenta",
    "INVALID": "red",
}


def label_of(verdict: str, role: str) -> str:
    """Public runs are self-checks: SELF-REPORTED whatever they measured, if they passed."""
    if role != "heldout" and verdict in ("VERIFIED", "UNOFFICIAL"):
        return "SELF-REPORTED"
    return verdict


def fmt_ppl(v: float | None) -> str:
    return "-" if v is None else f"{v:.4f}"


def fmt_tps(tps: float | None, ci: list[float] | None) -> str:
    if tps is None:
        return "-"
    return f"{tps:.1f} [{ci[0]:.0f}, {ci[1]:.0f}]" if ci else f"{tps:.1f}"


def fmt_rel(rel: float | None, ci: list[float] | None = None) -> str:
    if rel is None:
        return "-"
    return f"{rel:.2f}x [{ci[0]:.2f}, {ci[1]:.2f}]" if ci else f"{rel:.2f}x"


def failing_cell(failing: list[str], verdict: str, reason: str) -> str:
    """The failing check ids, one a line; for a run that could not be evaluated, why."""
    if failing:
        return "\n".join(failing)
    if verdict == "FAILED" and reason:
        return f"failed at {reason.split(':', 1)[0]}"
    return reason[:60] if verdict == "INVALID" else ""


def measurement_row(m: Measurement, sweep: SweepFile) -> list[str]:
    rel, ci = relative(m, sweep.measurements) if m.role == "point" else (None, None)
    return [
        str(m.seq),
        m.role,
        Point.of(m.changes).label("\n"),
        fmt_ppl(m.ppl),
        fmt_tps(m.tps, m.tps_ci95),
        fmt_rel(rel, ci),
        label_of(m.verdict, m.role),
        failing_cell(m.failing, m.verdict, m.reason),
    ]


def _table(title: str, columns: list[str], rows: list[list[str]], styles: list[str]) -> Table:
    table = Table(
        title=title,
        title_justify="left",
        box=box.SIMPLE_HEAD,
        pad_edge=False,
        collapse_padding=True,
    )
    for col in columns:
        wide = col in ("knobs", "point")
        failing = col.startswith("failing")
        table.add_column(
            col,
            overflow="fold",
            no_wrap=not (wide or failing),
            min_width=22 if wide else 26 if failing else None,
            max_width=24 if wide else None,
        )
    for row, style in zip(rows, styles, strict=True):
        cells = [text(c, multiline=True) for c in row]
        cells[-2].stylize(style)
        table.add_row(*cells)
    return table


class LiveSweep(SweepEvents):
    COLUMNS: ClassVar[list[str]] = [
        "#",
        "run",
        "knobs",
        "PPL",
        "TPS [95 %]",
        "vs baseline",
        "verdict",
        "failing",
    ]

    def __init__(self, console: Console) -> None:
        self.console = console
        self.live_mode = console.is_terminal
        self.sweep: SweepFile | None = None
        self.rows: list[Measurement] = []
        self.seconds: list[float] = []
        self.current = ""
        self.stage_name = ""
        self.t0 = time.monotonic()
        self.bar = Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            TextColumn("{task.fields[eta]}"),
            console=console,
        )
        self.task = self.bar.add_task("measurements", total=None, eta="")
        self.live: Live | None = None

    def __enter__(self) -> LiveSweep:
        if self.live_mode:
            self.live = Live(console=self.console, get_renderable=self.render, refresh_per_second=4)
            self.live.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self.live is not None:
            self.live.stop()

    def render(self) -> Any:
        table = self._rows_table()
        now = Text.assemble(("now: ", "dim"), text(self.current), ("  " + self.stage_name, "dim"))
        return Group(table, self.bar, now) if self.current else Group(table, self.bar)

    def _rows_table(self) -> Table:
        sweep = self.sweep
        rows = [measurement_row(m, sweep) for m in self.rows] if sweep else []
        styles = [_STYLE.get(label_of(m.verdict, m.role), "") for m in self.rows]
        return _table("sweep", self.COLUMNS, rows, styles)

    def _eta(self, remaining: int) -> str:
        if not self.seconds or remaining <= 0:
            return ""
        left = statistics.fmean(self.seconds) * remaining
        return f"ETA {int(left // 60)} min {int(left % 60):02d} s"

    def plan(self, total: int, done: int) -> None:
        task = self.bar.tasks[0]
        self.bar.update(self.task, total=(task.total or 0) + total, completed=task.completed)
        if done:
            self.console.print(f"resuming: {done} point(s) already measured", highlight=False)
        if not self.live_mode:
            self.console.print(f"sweep: {total} measurement(s) to run", highlight=False)

    def begin(self, point: Point, role: str) -> None:
        self.current = f"{role} {point.label()}"
        self.stage_name = ""

    def end(self, m: Measurement, sweep: SweepFile) -> None:
        self.sweep = sweep
        self.rows.append(m)
        self.seconds.append(m.seconds)
        self.current = ""
        task = self.bar.tasks[0]
        self.bar.advance(self.task)
        remaining = int((task.total or 0) - task.completed)
        self.bar.update(self.task, eta=self._eta(remaining))
        if not self.live_mode:
            row = measurement_row(m, sweep)
            eta = self._eta(remaining)
            self.console.print(
                text(
                    f"  #{row[0]} {row[1]:<8} {Point.of(m.changes).label()}: PPL {row[3]}, "
                    f"TPS {row[4]}, "
                    f"{row[6]}{' ' + row[7].replace(chr(10), ' ') if row[7] else ''} "
                    f"({m.seconds:.0f} s)" + (f"; {eta}" if eta else "")
                ),
                highlight=False,
            )

    def stage(self, name: str, status: str, note: str = "") -> None:
        self.stage_name = f"{name} {status}"


def candidate_row(c: Candidate, answer: Answer) -> list[str]:
    marks = []
    if c.point in answer.front:
        marks.append("front")
    if c.point == answer.recommended:
        marks.append("recommended")
    held = "-" if c.heldout_ppl is None else f"{c.heldout_ppl:.4f}"
    return [
        Point.of(c.changes).label("\n"),
        fmt_ppl(c.ppl),
        held,
        fmt_tps(c.tps, None),
        fmt_rel(c.rel, c.rel_ci95),
        label_of(c.verdict, "point"),
        failing_cell(c.failing, c.verdict, c.reason) or ", ".join(marks),
    ]


def answer_table(answer: Answer) -> Table:
    columns = [
        "point",
        "PPL",
        "held-out",
        "TPS",
        "vs baseline",
        "verdict",
        "failing / mark",
    ]
    ranked = sorted(answer.candidates, key=lambda c: (not c.passed, -(c.rel or 0.0)))
    rows = [candidate_row(c, answer) for c in ranked]
    styles = [_STYLE.get(label_of(c.verdict, "point"), "") for c in ranked]
    return _table("the points, fastest passing first", columns, rows, styles)


def print_result(con: Console, result: SweepResult, directory: Path) -> None:
    """The sweep's answer: the points' table, the baseline's drift, the podium.toml change
    it recommends, and the next step."""
    a = result.answer
    con.print(answer_table(a))
    d = a.drift
    if d.get("baseline_tps"):
        con.print(
            f"baseline TPS over the sweep: {d['min']:.1f} .. {d['max']:.1f} "
            f"(spread {d['spread']:.1%} of the median, {len(d['baseline_tps'])} runs)"
        )
    for line in a.lines:
        con.print(text(line))
    if result.diff is not None:
        diff = result.diff.read_text(encoding="utf-8")
        con.print(f"the podium.toml change ({markup(result.diff)}):")
        con.print(
            text(diff.rstrip() or "  (none: keep the config you have)", "dim", multiline=True)
        )
    for note in result.notes:
        con.print(text(f"note: {note}"))
    if result.plot is not None:
        con.print(f"plot: {markup(result.plot)}")
    if result.recommendation is not None:
        con.print(
            f"next: cp {markup(quoted(result.recommendation))} "
            f"{markup(quoted(directory / 'podium.toml'))}, "
            f"then `podium submission package {markup(quoted(directory))}`"
        )
    else:
        con.print("next: widen the knobs' values, or fix the failing checks above")
