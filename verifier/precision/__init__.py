"""What a public report may say about what the engine did, and how many bits that is.

An engine that has seen held-out text can try to carry it out in anything it influences:
the low bits of a log-probability, the time it takes, which check it makes fail. The
signed report is read by participants and the public, so it says each engine-made number
only at the precision its meaning needs, and nothing per record, per answer, per probe or
per trial; the organizer's evidence beside it (``organizer/evidence.json``) keeps every
value and every check's own words.

``public_report`` (``project``) is that projection of the full document (the one
``verifier.report`` builds), and ``engine_bits`` (``account``) its accounting: an upper
bound of the bits an engine can choose in a public report, read from the report's own
fields and the grids they are on (``grids``) and what its words may be (``words``). Two
sums, because they are of two kinds:

- **numbers** (``NUMBER_BITS`` at most, checked on every report before it is signed):
  the PPL, the TPS, its interval, the time the run finished (and the grid point its
  publication is held to, ``verifier.scale.queue.hold``), and any number left in a
  failure's message. Each costs log2 of the number of values its grid allows over its
  range, however the engine picks among them;
- **outcome**: the verdict, each judged check's status, which findings were raised, the
  stage a run failed at. A reader needs them all; they are counted, not rounded away.

What the engine could not have influenced with held-out knowledge costs nothing: the
participant's own bundle and claims, the machine's fingerprint, everything measured before
the engine got its first held-out request (the stages up to ``ready``), the spec, the
seeds and the held-out set's digests. Numbers derived from public values alone (the
speed-up, the interval's ends) cost nothing either: the accountant recomputes them.
"""

from verifier.precision.account import Bits, engine_bits
from verifier.precision.grids import (
    CI_GRID,
    FAILURE_NUMBER_BITS,
    FINISHED_GRID_S,
    NUMBER_BITS,
    TPS_VALUES,
    count_significant,
    finished_public,
    finished_values,
    ppl_public,
    ppl_values,
    significant,
    tps_public,
)
from verifier.precision.project import public_report
from verifier.precision.words import BLIND_STAGES, blind, blind_finding, public_text

__all__ = [
    "BLIND_STAGES",
    "CI_GRID",
    "FAILURE_NUMBER_BITS",
    "FINISHED_GRID_S",
    "NUMBER_BITS",
    "TPS_VALUES",
    "Bits",
    "blind",
    "blind_finding",
    "count_significant",
    "engine_bits",
    "finished_public",
    "finished_values",
    "ppl_public",
    "ppl_values",
    "public_report",
    "public_text",
    "significant",
    "tps_public",
]
