"""``python -m bench [--quick] [--only PART,...]``: run the CPU benchmarks.

Writes ``bench/results/<part>.json`` (each with the machine, the date and the command)
and the plots ``docs/img/bench-*.png``. The GPU part is separate:
``python -m bench.gpu_e4b`` on the GPU machine (see ``docs/benchmarks.md``).
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench import anchor, fidelity, noise, plots, ppl_check, proxy_latency, views
from bench.common import RESULTS_DIR, machine, write_result

PARTS: dict[str, tuple[Callable[..., dict[str, Any]], Callable[..., Path] | None]] = {
    "fidelity": (fidelity.run, plots.fidelity),
    "anchor": (anchor.run, plots.anchor),
    "ppl": (ppl_check.run, None),
    "noise": (noise.run, plots.noise),
    "views": (views.run, None),
    "proxy": (proxy_latency.run, None),
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="fewer trials and rounds")
    parser.add_argument("--only", default=",".join(PARTS), help="comma-separated parts")
    parser.add_argument("--out", type=Path, default=RESULTS_DIR, help="folder for the JSON")
    parser.add_argument("--no-plots", action="store_true")
    args = parser.parse_args(argv)
    chosen = [p.strip() for p in args.only.split(",") if p.strip()]
    unknown = sorted(set(chosen) - set(PARTS))
    if unknown:
        parser.error(f"unknown part(s) {', '.join(unknown)}; choose from {', '.join(PARTS)}")
    command = "python -m bench " + " ".join(argv if argv is not None else sys.argv[1:])
    started = time.perf_counter()
    for name in chosen:
        run, plot = PARTS[name]
        print(f"== {name}", flush=True)
        t0 = time.perf_counter()
        before = machine()
        data = run(quick=args.quick)
        data = {
            "machine": before,
            "load_average_after": machine()["load_average"],
            "command": command.strip(),
            "quick": args.quick,
            "seconds": round(time.perf_counter() - t0, 1),
            **data,
        }
        path = write_result(name, data, args.out)
        print(f"   wrote {path} ({data['seconds']} s)", flush=True)
        if plot is not None and not args.no_plots:
            print(f"   plot {plot(data)}", flush=True)
    print(f"done in {time.perf_counter() - started:.0f} s", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
