"""How many torch threads should the tiny engine use on a small shared CPU?

    python -m bench.threads --rounds 3            # quiet machine, then with a busy neighbour

The baseline engine serves the shipped tiny model as a process with ``OMP_NUM_THREADS``
1 and 2, in turns, and the harness measures it with the tiny challenge's workload (its
real spec: trials, extra trials while unstable). Each setting runs once quiet and once
beside one busy process that switches on and off every 4 s (a neighbour on the
machine). Reported per setting and condition: the trials' TPS, the median and the CV.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path
from typing import Any

from bench.common import DATA, RESULTS_DIR, busy_neighbours, machine


def measure(threads: int, busy: bool) -> dict[str, Any]:
    from schemas.challenge import load_challenge
    from verifier.datasets import evaluation_sets
    from verifier.evaluation import run_harness
    from verifier.harness.render import TokenizerRenderer
    from verifier.runners.process import ProcessRunner

    spec = load_challenge("tiny")
    sets = evaluation_sets(spec, heldout=None, public=False)
    model = DATA / "tiny" / "model"
    runner = ProcessRunner(env={"OMP_NUM_THREADS": str(threads)})
    handle = runner.start(spec, model_dir=model, gpu=False)
    try:
        with busy_neighbours(1 if busy else 0, 4.0):
            result = run_harness(
                handle.base_url,
                spec,
                public_prompts=sets.warmup_prompts.rows,
                heldout_prompts=sets.prompts.rows,
                ppl_records=sets.ppl.rows,
                renderer=TokenizerRenderer(model),
                ready_timeout_s=120,
            )
    finally:
        handle.stop()
        runner.cleanup()
    assert result.tps is not None, result.failure
    trials = [t.tps for t in result.tps.trials]
    return {
        "threads": threads,
        "busy_neighbour": busy,
        "trials": trials,
        "median": statistics.median(trials),
        "cv": result.tps.summary.cv,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.threads", description=__doc__)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--out", type=Path, default=RESULTS_DIR / "threads.json")
    args = parser.parse_args(argv)
    rows = []
    for _ in range(args.rounds):
        for busy in (False, True):
            for threads in (1, 2):
                rows.append(measure(threads, busy))
                print(json.dumps(rows[-1]), flush=True)
    summary = {}
    for busy in (False, True):
        for threads in (1, 2):
            mine = [r for r in rows if r["threads"] == threads and r["busy_neighbour"] == busy]
            summary[f"threads={threads} {'busy' if busy else 'quiet'}"] = {
                "median_tps": statistics.median(r["median"] for r in mine),
                "worst_cv": max(r["cv"] for r in mine),
            }
    out = {"machine": machine(), "rounds": args.rounds, "summary": summary, "runs": rows}
    args.out.write_text(json.dumps(out, indent=2) + "\n")
    print(json.dumps(summary, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
