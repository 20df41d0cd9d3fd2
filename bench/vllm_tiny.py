"""The tiny challenge on podium's baseline engine and on real vLLM, side by side, in one run.

``python -m bench.vllm_tiny [--rounds N]`` (about 4 minutes a round on 2 cores). Each round
packages ``examples/tiny-baseline``, ``examples/tiny-vllm``, ``examples/tiny-vllm-mtp``
(the same with MTP drafting by the challenge's pinned drafter) and ``examples/tiny-winning``
(MTP, the warm-up and a sliding window of 16 inside the PPL cap: the champion's levers;
``--engines`` picks a subset) and verifies each, one
after the other, exactly as ``podium verify`` does (rebuild without cache, the strict
sandbox, held-out PPL and TPS, the integrity checks, the reference engine). Per
verification: the verdict, TPS (median of its trials), PPL, start-up time (container
started until the engine's readiness answered: the ``ready`` stage) and the wall time of
the whole verification; for MTP, vLLM's acceptance rate. Rounds alternate the order, so a
busy moment of the shared machine does not always fall on the same engine.

The vLLM entry is plain vLLM with the tiny challenge's default config (float32, eager,
the launcher's warm-up), so its median TPS is the tiny challenge's baseline for
speed-ups (``tps.baselines`` in podium/data/challenges/tiny.json). Needs Docker and the
local images (scripts/build-images.sh).
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.common import REPO_ROOT, RESULTS_DIR, machine, write_result

ENGINES = {
    "baseline": "tiny-baseline",
    "vllm": "tiny-vllm",
    "vllm-mtp": "tiny-vllm-mtp",
    "winning": "tiny-winning",
}


def verify_once(engine: str, workdir: Path) -> dict[str, Any]:
    from schemas.challenge import load_challenge
    from submission.bundle import package
    from verifier.pipeline import VerifyRequest, verify
    from verifier.runners.local_docker import LocalDockerRunner
    from verifier.runners.reference_engine import reference_runner

    example = REPO_ROOT / "examples" / ENGINES[engine]
    packaged = package(example, workdir / "dist", build=False)
    assert packaged.bundle is not None, [f.one_line() for f in packaged.findings]
    req = VerifyRequest(
        bundle=packaged.bundle.path,
        spec=load_challenge("tiny"),
        runner=LocalDockerRunner(),
        out_dir=workdir / "out",
        reference=reference_runner,
    )
    started = time.perf_counter()
    done = verify(req)
    report = done.evidence or done.report  # the organizer's evidence: every value in full
    wall = time.perf_counter() - started
    stages = {s["name"]: s["seconds"] for s in report["stages"]}
    tps = report["metrics"].get("tps") or {}
    ppl = report["metrics"].get("ppl") or {}
    return {
        "engine": engine,
        "verdict": report["verdict"],
        "tps": tps.get("median"),
        "tps_trials": [t["tps"] for t in tps.get("trials", [])],
        "ppl": ppl.get("value"),
        # from the container's start to ready: the verifier's tokenizer, its reference's load
        # and the isolation probe run while the engine boots, so the ready stage alone is
        # only the wait left after them
        "startup_s": round(
            sum(stages.get(k, 0.0) for k in ("tokenizer", "reference-load", "isolation", "ready")),
            3,
        ),
        "wall_s": round(wall, 1),
        "stages": stages,
        "findings": [f["check_id"] for f in report["findings"]],
        "acceptance_rate": (report.get("runtime") or {}).get("speculative_acceptance_rate"),
    }


def summary(runs: list[dict[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for engine in [e for e in ENGINES if any(r["engine"] == e for r in runs)]:
        mine = [r for r in runs if r["engine"] == engine]
        out[engine] = {
            key: statistics.median(r[key] for r in mine if r[key] is not None)
            for key in ("tps", "ppl", "startup_s", "wall_s")
        }
        out[engine]["verdicts"] = [r["verdict"] for r in mine]
        rates = [r["acceptance_rate"] for r in mine if r.get("acceptance_rate") is not None]
        if rates:
            out[engine]["acceptance_rate"] = statistics.median(rates)
    base, vllm = out["baseline"], out["vllm"]
    out["ratios_vllm_over_baseline"] = {
        key: vllm[key] / base[key] for key in ("tps", "startup_s", "wall_s") if base[key]
    }
    out["ppl_relative_difference"] = abs(vllm["ppl"] / base["ppl"] - 1)
    for name in ("vllm-mtp", "winning"):
        if name in out:
            mine = out[name]
            out[f"ratios_{name.replace('vllm-', '')}_over_vllm"] = {
                key: mine[key] / vllm[key] for key in ("tps", "startup_s", "wall_s") if vllm[key]
            }
    return out


def run(rounds: int = 2, engines: list[str] | None = None) -> dict[str, Any]:
    runs = []
    chosen = engines or list(ENGINES)
    for i in range(rounds):
        order = chosen if i % 2 == 0 else list(reversed(chosen))
        for engine in order:
            with tempfile.TemporaryDirectory(prefix=f"bench-{engine}-") as tmp:
                result = verify_once(engine, Path(tmp))
            print(
                f"round {i} {engine}: {result['verdict']} TPS {result['tps']:.1f} "
                f"PPL {result['ppl']:.6f} start-up {result['startup_s']:.1f} s "
                f"wall {result['wall_s']:.1f} s",
                flush=True,
            )
            runs.append({"round": i, **result})
    return {"runs": runs, "summary": summary(runs)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.vllm_tiny", description=__doc__)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument(
        "--engines",
        default=",".join(ENGINES),
        help=f"comma-separated subset of {', '.join(ENGINES)} (baseline and vllm always run)",
    )
    parser.add_argument("--out", type=Path, default=RESULTS_DIR, help="folder for the JSON")
    args = parser.parse_args(argv)
    engines = [e for e in ENGINES if e in {"baseline", "vllm", *args.engines.split(",")}]
    before = machine()
    started = time.perf_counter()
    data = run(args.rounds, engines)
    result = {
        "machine": before,
        "load_average_after": machine()["load_average"],
        "command": f"python -m bench.vllm_tiny --rounds {args.rounds} --engines "
        + ",".join(engines),
        "seconds": round(time.perf_counter() - started, 1),
        **data,
    }
    print(write_result("vllm_tiny", result, args.out))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
