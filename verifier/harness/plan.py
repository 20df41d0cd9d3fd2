"""Where the untimed requests go: a seeded plan that leaves the engine no phase to see.

The held-out PPL records, the same-path probes and the caching controls are not run in
stages of their own. Each is placed at a random position among the timed requests of a
random trial (``Plan.at``), drawn from a seed made fresh for every verification and
recorded in the report once the run is over. So the engine meets one stream from the
first timed request to the last, and cannot behave while it is being scored and cheat
once scoring is done, or the other way round. The fresh controls are placed by the
same seed (``Plan.fresh``), in every trial that may run, extra ones included, but they
are timed requests, not untimed ones: each takes the place of a held-out prompt in its
trial's first pass.

An untimed request sent at position ``p`` of a trial goes out after the timed request
``p - 1`` has been answered and before request ``p`` is sent; the trial's clock is
stopped meanwhile. At concurrency 1 that costs the measurement nothing. At concurrency
``c > 1`` the timed requests in flight must drain first, so the untimed requests of a
trial are gathered into at most ``MAX_PAUSES_CONCURRENT`` pauses.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

PPL = "ppl"
SAME_PATH = "same-path"
CONTROL = "control"
#: a fresh control (``verifier.harness.controls``): not an untimed request, but one of the
#: timed requests of a trial's first pass, its prompt made at run time
FRESH = "fresh"

MAX_PAUSES_CONCURRENT = 2


@dataclass(frozen=True)
class Item:
    kind: str  # ppl | same-path | control
    index: int  # the PPL record, the probe or the control prompt


@dataclass
class Plan:
    seed: int
    trials: int
    #: (trial, position) -> the untimed requests sent there, in order
    at: dict[tuple[int, int], list[Item]] = field(default_factory=dict)
    #: (trial, position) -> the fresh control sent as the timed request there (first pass)
    fresh: dict[tuple[int, int], int] = field(default_factory=dict)

    def fresh_in(self, trial: int) -> dict[int, int]:
        """Position in the trial's first pass -> the fresh control timed there."""
        return {p: i for (t, p), i in self.fresh.items() if t == trial}

    def items(self, trial: int, position: int) -> list[Item]:
        return self.at.get((trial, position), [])

    def count(self, kind: str) -> int:
        if kind == FRESH:
            return len(self.fresh)
        return sum(1 for items in self.at.values() for item in items if item.kind == kind)

    def to_dict(self) -> dict[str, object]:
        """Counts per kind and trial, for the report (positions are not needed to audit)."""
        per_trial = [
            {
                **{
                    kind: sum(
                        1
                        for (t, _), items in self.at.items()
                        if t == trial
                        for item in items
                        if item.kind == kind
                    )
                    for kind in (PPL, SAME_PATH, CONTROL)
                },
                FRESH: len(self.fresh_in(trial)),
            }
            for trial in range(self.trials)
        ]
        return {"seed": f"{self.seed:016x}", "per_trial": per_trial}


def make_plan(
    *,
    seed: int,
    trials: int,
    requests_per_trial: int,
    distinct_prompts: int,
    concurrency: int,
    ppl_records: int,
    same_path_probes: int,
    controls_per_trial: int,
    fresh_per_trial: int = 0,
    fresh_trials: int | None = None,
) -> Plan:
    """Place every untimed request; see the module docstring.

    Same-path probes score an answer the engine has already given, so none goes before the
    first timed request. Caching controls go only into trials whose first pass repeats
    prompts (the held-out set, ``distinct_prompts``, has run out by then): every pass
    draws prompts no earlier request carried, so with a set large enough for the planned
    trials there is no replay to look for, and none is placed. Fresh controls go into
    every trial that may run (``fresh_trials``: the spec's ``max_trials``, extra trials
    included, else the planned ones), ``fresh_per_trial`` distinct positions of its first
    pass (at most all but one; at concurrency ``c > 1`` one block of whole waves of ``c``:
    ``fresh_positions``), drawn from a stream of the seed of their own, so the rest of the
    plan is what it would be without them.
    """
    rng = random.Random(seed)
    plan = Plan(seed=seed, trials=trials)
    slots = [(t, p) for t in range(trials) for p in range(requests_per_trial)]
    placed: list[tuple[tuple[int, int], Item]] = []
    for i in range(ppl_records):
        placed.append((rng.choice(slots), Item(PPL, i)))
    after_first = [s for s in slots if s != (0, 0)] or slots
    for i in range(same_path_probes):
        placed.append((rng.choice(after_first), Item(SAME_PATH, i)))
    # the first passes draw prompts in stream order: request p of trial t is the
    # (t * requests_per_trial + p)-th, and repeats a prompt once the set has run out
    n = 0
    for trial in range(trials):
        positions = [
            p
            for p in range(requests_per_trial)
            if trial * requests_per_trial + p >= distinct_prompts
        ]
        for _ in range(controls_per_trial if positions else 0):
            placed.append(((trial, rng.choice(positions)), Item(CONTROL, n)))
            n += 1
    if concurrency > 1:
        placed = _gather(placed, rng, trials)
    for slot, item in placed:
        plan.at.setdefault(slot, []).append(item)
    for items in plan.at.values():
        rng.shuffle(items)
    fresh = random.Random(f"{seed}:fresh-positions")
    n = 0
    for trial in range(trials if fresh_trials is None else max(trials, fresh_trials)):
        for position in fresh_positions(fresh, fresh_per_trial, requests_per_trial, concurrency):
            plan.fresh[(trial, position)] = n
            n += 1
        if concurrency > 1:
            _out_of_the_block(plan, trial)
    return plan


def fresh_block(per_trial: int, requests: int, concurrency: int) -> int:
    """How many fresh controls a trial times: ``per_trial``, at most all but one of its
    requests; at concurrency ``c > 1``, whole waves of ``c`` (``per_trial`` rounded up to a
    multiple of ``c``, down where the trial is too short), so that the engine computes ``c``
    controls at once, as many as it computes of anything else."""
    if per_trial <= 0:
        return 0
    if concurrency <= 1:
        return min(per_trial, requests - 1)
    waves = min(-(-per_trial // concurrency), (requests - 1) // concurrency)
    return max(0, waves * concurrency)


def fresh_positions(
    rng: random.Random, per_trial: int, requests: int, concurrency: int
) -> list[int]:
    """A trial's fresh positions: scattered at random at concurrency 1; one block of whole
    waves at a random place at concurrency ``c > 1`` (``fresh_block``), which the harness
    times as a segment of its own (``verifier.harness.tps``), so the engine cannot serve
    its controls alone while other answers come from elsewhere."""
    k = fresh_block(per_trial, requests, concurrency)
    if k <= 0:
        return []
    if concurrency <= 1:
        return sorted(rng.sample(range(requests), k))
    start = rng.randrange(requests - k + 1)
    return list(range(start, start + k))


def _out_of_the_block(plan: Plan, trial: int) -> None:
    """Untimed requests placed inside a trial's block of fresh controls move to its start,
    so the block is timed whole."""
    block = sorted(plan.fresh_in(trial))
    if not block:
        return
    first, last = block[0], block[-1]
    for position in [p for (t, p) in plan.at if t == trial and first < p <= last]:
        plan.at.setdefault((trial, first), []).extend(plan.at.pop((trial, position)))


def _gather(
    placed: list[tuple[tuple[int, int], Item]], rng: random.Random, trials: int
) -> list[tuple[tuple[int, int], Item]]:
    """At concurrency > 1, move each trial's untimed requests onto a few of its positions."""
    out: list[tuple[tuple[int, int], Item]] = []
    for trial in range(trials):
        mine = [(slot, item) for slot, item in placed if slot[0] == trial]
        if not mine:
            continue
        chosen = sorted({p for (_, p), _ in mine})
        keep = sorted(rng.sample(chosen, min(MAX_PAUSES_CONCURRENT, len(chosen))))
        for (_, p), item in mine:
            # each request moves to the nearest kept position at or before it (or the first)
            earlier = [k for k in keep if k <= p]
            out.append(((trial, earlier[-1] if earlier else keep[0]), item))
    return out
