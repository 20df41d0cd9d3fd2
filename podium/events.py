"""What a display hears while podium works: the one progress-events protocol.

The library never draws. A long run (a verification, a sweep's measurements) tells an
``Events`` what it is doing, and the CLI's displays (``podium.cli.progress``,
``podium.cli.sweep_live``) draw it; with ``--json`` nobody listens. Every method is a
no-op here, so ``Events()`` is the listener that hears nothing and a display subclasses
it, overriding only what it shows. A caller with more to say extends it (the sweep's
``submission.sweep.SweepEvents`` adds its plan and each measurement).

    stage(name, status, note)      a stage of the run: ``running``, then ``ok`` or ``failed``
    progress(stage, done, total)   a counted part of a stage (PPL records, TPS requests)
    log(line)                      one line of a build or an engine's output
"""

from __future__ import annotations


class Events:
    """What a display hears about a run; the default hears nothing."""

    def stage(self, name: str, status: str, note: str = "") -> None: ...
    def progress(self, stage: str, done: int, total: int) -> None: ...
    def log(self, line: str) -> None: ...
