"""``python -m bench [--quick] [--only PART,...] [--list]``: run the benchmarks under ``bench/``.

Every study module of ``bench/`` is a part (``--list`` names them and what each needs).
``suite_cost`` (the whole test suite in a fresh clone) runs only when ``--only`` names it.
The CPU parts write ``bench/results/<part>.json`` (each with the machine, the date and
the command) and the plots ``docs/img/bench-*.png``. Parts that need what a machine may
lack (Docker for whole verifications, a CUDA GPU) are skipped there with the reason, and
run where it is present; ``--only`` picks parts, and fails when one it names cannot run.
The calibration of the verifier's checks is not here: ``calibration/``
(``python -m calibration.calibrate``, docs/benchmarks.md). The numbers of docs/benchmarks.md
and docs/measurement.md are rendered from both folders' results by ``python -m bench.docs
--write``, and ``--check`` (run by the test suite) fails where they disagree.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.common import RESULTS_DIR, machine, write_result


def docker_missing() -> str | None:
    """Why no Docker engine can be used here, or None."""
    if shutil.which("docker") is None:
        return "no docker command on this machine"
    try:
        done = subprocess.run(["docker", "info"], capture_output=True, timeout=20, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"docker info failed: {exc}"
    return None if done.returncode == 0 else "no Docker engine running (docker info failed)"


def _pg() -> bool:
    from bench.pgcluster import binaries

    return binaries() is not None


def cuda_missing() -> str | None:
    """Why no CUDA GPU can be used here, or None."""
    if importlib.util.find_spec("torch") is None:
        return "torch is not installed"
    import torch

    return None if torch.cuda.is_available() else "no CUDA GPU on this machine"


@dataclass(frozen=True)
class Part:
    """One benchmark: ``bench.<module>``. A measured part's ``run(quick=...)`` returns its
    numbers, which ``main`` writes as ``<name>.json`` (and plots with ``plots.<plot>``); a
    script part is the module's own ``main(argv)``, which writes its result itself."""

    name: str
    module: str
    needs: str = "CPU"
    missing: Callable[[], str | None] | None = None
    plot: str | None = None
    #: a script part's arguments: ``(out, quick) -> argv``; None for a measured part
    argv: Callable[[Path, bool], list[str]] | None = None
    #: run only when ``--only`` names it (it runs something as large as the test suite)
    explicit: bool = False


PARTS: dict[str, Part] = {
    p.name: p
    for p in (
        Part("fidelity", "fidelity", plot="fidelity"),
        Part("anchor", "anchor", "CPU (guidellm, the bench extra, for its column)", plot="anchor"),
        Part("ppl", "ppl_check"),
        Part("noise", "noise", plot="noise"),
        Part("views", "views", "CPU (headless Chromium for the page: make browser)"),
        Part("proxy", "proxy_latency"),
        Part(
            "vllm_tiny",
            "vllm_tiny",
            "Docker and the local images (scripts/build-images.sh)",
            docker_missing,
            argv=lambda out, quick: ["--out", str(out)] + (["--rounds", "1"] if quick else []),
        ),
        Part(
            "sweep_cost",
            "sweep_cost",
            "Docker, podium/vllm-cpu and the sweep extra",
            docker_missing,
            argv=lambda out, quick: ["--out", str(out)] + (["--grid", "small"] if quick else []),
        ),
        Part(
            "verify_cost",
            "verify_cost",
            "CPU and git (a worktree of the commit compared)",
            argv=lambda out, quick: ["--out", str(out)] + (["--pairs", "1"] if quick else []),
        ),
        Part(
            "jail_cost",
            "jail_cost",
            "bubblewrap, and Docker with the local images (the side by side with local-docker)",
            docker_missing,
            argv=lambda out, quick: (
                ["--out", str(out)]
                + (["--pairs", "1", "--starts", "3", "--trials", "2"] if quick else [])
            ),
        ),
        Part(
            "install_cost",
            "install_cost",
            "uv and a few minutes (one fresh venv per role, installed cold)",
            explicit=True,
            argv=lambda out, quick: ["--out", str(out)] + (["--roles", "core"] if quick else []),
        ),
        Part(
            "suite_cost",
            "suite_cost",
            "root, git and about half an hour (a fresh clone's .ci/run: the whole suite)",
            explicit=True,
            argv=lambda out, quick: ["--out", str(out)],
        ),
        Part(
            "door_queue",
            "door_queue",
            "PostgreSQL (apt-get install postgresql) and the server and postgres extras",
            lambda: None if _pg() else "PostgreSQL is not installed (apt-get install postgresql)",
            argv=lambda out, quick: ["--out", str(out)] + (["--requests", "200"] if quick else []),
        ),
        Part(
            "gpu_e4b",
            "gpu_e4b",
            "a CUDA GPU (on the GPU machine: bash bench/gpu.sh)",
            cuda_missing,
            argv=lambda out, quick: ["--out", str(out)],
        ),
        Part(
            "attention_cost",
            "attention_cost",
            "a CUDA GPU (on the GPU machine: bash bench/gpu.sh)",
            cuda_missing,
            argv=lambda out, quick: ["--out", str(out)],
        ),
    )
}

#: modules of ``bench/`` that are not benchmarks: what the parts share or start
HELPERS = {
    "__init__": "the package",
    "__main__": "this runner",
    "common": "engine processes, the machine's description, result files",
    "plots": "the figures under docs/img/",
    "paced_engine": "an engine with an exact token rate (fidelity, anchor, proxy)",
    "vllm_sandbox": "sandboxed real vLLM (tests/engines import it too)",
    "docs": "python -m bench.docs: the docs' numbers rendered from the results, --check/--write",
    "docs_region": "what a rendered region of a document is, and the number formats",
    "docs_bench": "the regions of docs/benchmarks.md from bench/results/ (sections 1 to 8)",
    "docs_runs": "the regions of docs/benchmarks.md from whole runs (sections 10 to 14)",
    "docs_calibration": "the regions of docs/benchmarks.md from calibration/results/",
    "docs_missed": "the region of docs/benchmarks.md where a goal is missed",
    "docs_measurement": "the regions of docs/measurement.md",
    "pgcluster": "a throwaway PostgreSQL cluster (door_queue; tests/competition import it too)",
}


def run_part(part: Part, quick: bool, out: Path, plots: bool, command: str) -> None:
    module = importlib.import_module(f"bench.{part.module}")
    t0 = time.perf_counter()
    if part.argv is not None:
        code = module.main(part.argv(out, quick))
        if code:
            raise SystemExit(f"{part.name} exited with {code}")
        print(f"   done ({time.perf_counter() - t0:.1f} s)", flush=True)
        return
    before = machine()
    data: dict[str, Any] = module.run(quick=quick)
    data = {
        "machine": before,
        "load_average_after": machine()["load_average"],
        "command": command,
        "quick": quick,
        "seconds": round(time.perf_counter() - t0, 1),
        **data,
    }
    path = write_result(part.name, data, out)
    print(f"   wrote {path} ({data['seconds']} s)", flush=True)
    if part.plot is not None and plots:
        from bench import plots as figures

        print(f"   plot {getattr(figures, part.plot)(data)}", flush=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="fewer trials and rounds")
    parser.add_argument("--only", default="", help="comma-separated parts (default: all)")
    parser.add_argument("--out", type=Path, default=RESULTS_DIR, help="folder for the JSON")
    parser.add_argument("--no-plots", action="store_true")
    parser.add_argument("--list", action="store_true", help="the parts and what each needs")
    args = parser.parse_args(argv)
    if args.list:
        width = max(map(len, PARTS))
        for part in PARTS.values():
            only = "  [only with --only]" if part.explicit else ""
            print(f"{part.name:<{width}}  needs {part.needs}  (bench/{part.module}.py){only}")
        return 0
    chosen = [p.strip() for p in args.only.split(",") if p.strip()] or [
        name for name, part in PARTS.items() if not part.explicit
    ]
    unknown = sorted(set(chosen) - set(PARTS))
    if unknown:
        parser.error(f"unknown part(s) {', '.join(unknown)}; choose from {', '.join(PARTS)}")
    command = "python -m bench " + " ".join(argv if argv is not None else sys.argv[1:])
    started = time.perf_counter()
    skipped = []
    for name in chosen:
        part = PARTS[name]
        reason = part.missing() if part.missing is not None else None
        if reason is not None:
            print(f"== {name}: skipped, needs {part.needs}: {reason}", flush=True)
            skipped.append(name)
            continue
        print(f"== {name}", flush=True)
        run_part(part, args.quick, args.out, not args.no_plots, command.strip())
    print(f"done in {time.perf_counter() - started:.0f} s", flush=True)
    if args.only and skipped:
        print(f"not run: {', '.join(skipped)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
