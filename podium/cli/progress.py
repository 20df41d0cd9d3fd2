"""Live displays for humans (silent with ``--json``): a verification, an image build.

On a terminal ``RichEvents`` shows a spinner per running stage and a bar for PPL records
and TPS requests; elsewhere (CI logs, pipes) it prints one plain line per stage change.
``BuildProgress`` shows one status line while ``podium submission package`` builds.
"""

from __future__ import annotations

import re
import time
from typing import Any

from rich.console import Console
from rich.progress import (
    BarColumn,
    Progress,
    ProgressColumn,
    SpinnerColumn,
    Task,
    TextColumn,
    TimeElapsedColumn,
)
from rich.table import Column
from rich.text import Text

from podium.events import Events
from podium.untrusted import markup, text

_MARK = {"ok": "[green]ok[/]", "failed": "[red]FAILED[/]", "skipped": "[yellow]skipped[/]"}
#: the label column: the longest stage name a verification has (``reference-engine``); a
#: longer label is cut to it, so the marks and bars after it keep their column
LABEL_WIDTH = 16


def label(name: str) -> str:
    """``name`` padded or cut to the label column (cut with a trailing ``~``)."""
    return name.ljust(LABEL_WIDTH) if len(name) <= LABEL_WIDTH else name[: LABEL_WIDTH - 1] + "~"


class CountColumn(ProgressColumn):
    """``done/total`` for a task that has a total; nothing for one that has none (a stage
    whose length nobody knows shows its spinner and its time, never ``0/?``)."""

    def render(self, task: Task) -> Text:
        if task.total is None:
            return Text("")
        return Text(f"{int(task.completed)}/{int(task.total)}", style="progress.download")


class RichEvents(Events):
    def __init__(self, console: Console, *, show_logs: bool = False):
        self.console = console
        self.show_logs = show_logs
        self.live = console.is_terminal
        self._t0: dict[str, float] = {}
        self._tasks: dict[str, Any] = {}
        self._bar = (
            Progress(
                SpinnerColumn(),
                TextColumn("{task.description}", table_column=Column(no_wrap=True)),
                BarColumn(bar_width=20),
                CountColumn(),
                TimeElapsedColumn(),
                console=console,
                transient=True,
            )
            if self.live
            else None
        )

    def __enter__(self) -> RichEvents:
        if self._bar:
            self._bar.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._bar:
            self._bar.stop()

    def stage(self, name: str, status: str, note: str = "") -> None:
        if status == "running":
            self._t0[name] = time.monotonic()
            if self._bar and name not in self._tasks:
                self._tasks[name] = self._bar.add_task(markup(label(name)), total=None)
            elif not self.live:
                self.console.print(f"  {markup(label(name))} ...", highlight=False)
            return
        seconds = time.monotonic() - self._t0.get(name, time.monotonic())
        if self._bar and name in self._tasks:
            self._bar.remove_task(self._tasks.pop(name))
        line = f"  {markup(label(name))} {_MARK.get(status, markup(status))}"
        if seconds >= 0.05:
            line += f" [dim]{seconds:.1f} s[/]"
        if note:
            line += f"  {markup(note)}"
        self.console.print(line, highlight=False)

    def progress(self, stage: str, done: int, total: int) -> None:
        if not self._bar:
            return
        task = self._tasks.get(stage)
        if task is None:
            task = self._tasks[stage] = self._bar.add_task(markup(label(stage)), total=total)
        self._bar.update(task, completed=done, total=total)

    def log(self, line: str) -> None:
        if self.show_logs:
            self.console.print(text(line.rstrip(), "dim"))


class BuildProgress:
    """One status line while the image builds (``Step 3/9 : RUN ...``); the log goes to
    a file, and to the screen only with ``--logs``."""

    STEP = re.compile(r"^Step (\d+/\d+) : (.*)$")

    def __init__(self, con: Console, *, show_logs: bool) -> None:
        self.con, self.show_logs = con, show_logs
        self.status: Any = None

    def __enter__(self) -> BuildProgress:
        if self.con.is_terminal and not self.show_logs:
            self.status = self.con.status("packaging ...")
            self.status.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self.status is not None:
            self.status.stop()

    def line(self, line: str) -> None:
        if self.show_logs:
            self.con.print(text(line, "dim"))
        elif self.status is not None and (m := self.STEP.match(line.strip())):
            self.status.update(Text(f"building the image: step {m[1]}: {m[2][:60]}"))
