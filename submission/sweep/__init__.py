"""``podium submission sweep``: the participant's tuning loop, measured as the organizers measure.

Each point is the directory with some ``[engine.config]`` knobs changed, packaged like
``selfcheck`` packages it and run through the organizers' pipeline on the public prompts
(``measure``: the CLI hands in ``verifier.pipeline.verify``, since ``submission`` never
imports the verifier). The results are SELF-REPORTED.

The points run in a seeded random order, with the directory's own config (the baseline)
measured before the first, after every ``baseline_every`` points and at the end, so that a
machine whose speed drifts shows it, and each point is also read against the baselines
beside it. Each measurement is appended to ``OUT/sweep.jsonl`` as it ends; a sweep run
again measures only the points that file lacks (``remeasure`` measures them all again).
Then the front's points are measured once on the held-out set, which gives the margin
(``answer``), and the recommendation is written as a ``podium.toml``.

One module per concept, each importing only those above it:

    space       the knobs, the points they make (``Point``, ``BASELINE``)
    directory   a point as a submission directory: its ``podium.toml``, its diff
    journal     the sweep's JSON Lines file (``Measurement``, ``SweepFile``)
    answer      the front, the margin and the recommendation, pure functions
    strategy    the protocol a strategy measures through (``Strategy``, ``Measurements``)
    grid        the strategy that measures every combination
    search      the strategy of ``--search``: optuna within a ``Budget``
    runner      the sweeper (measures one point, records it) and ``run_sweep``
    plot        the picture (matplotlib, the ``sweep`` extra)

What a person sees while it runs is drawn by the CLI (``podium.cli.sweep_live``) from
the ``SweepEvents`` the sweeper emits.
"""

from submission.sweep.journal import Measurement, SweepFile
from submission.sweep.runner import (
    SweepEvents,
    SweepRequest,
    SweepResult,
    require_extras,
    run_sweep,
)
from submission.sweep.search import Budget
from submission.sweep.space import BASELINE, Knob, Point, parse_knob

__all__ = [
    "BASELINE",
    "Budget",
    "Knob",
    "Measurement",
    "Point",
    "SweepEvents",
    "SweepFile",
    "SweepRequest",
    "SweepResult",
    "parse_knob",
    "require_extras",
    "run_sweep",
]
