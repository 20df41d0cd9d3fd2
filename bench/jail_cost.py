"""What the jail runner costs: its start-up, its timer error, a tiny verification's wall time.

    python -m bench.jail_cost --pairs 2          # bench/results/jail_cost.json

- **start-up**: from ``Jail.open`` to the jail's probe reporting (bwrap makes the
  namespaces and mounts, the verifier's probe runs inside), for a program that does
  nothing, against the same interpreter started as a plain process; the median of
  ``--starts`` of each, alternately.
- **timer error**: the TPS fidelity cell (``bench.fidelity.run_cell``: the paced engine,
  the harness's real client, 512-token answers) with the paced engine inside a jail,
  reached as the harness reaches a jailed engine (its sockets made in the jail's network
  namespace), beside the same cell with the engine as a plain process on the host's
  loopback; the error is against the engine's own clock (goal 0.1 %).
- **verification**: ``podium verify`` of the tiny baseline entry with ``--runner jail``
  and ``--runner local-docker`` (which rebuilds its image without cache), alternately in
  fresh processes, ``--pairs`` times; the figure is the median of the per-pair ratios.

The machine is shared and noisy: absolute times are this machine's only.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.common import REPO_ROOT, RESULTS_DIR, machine, paced_engine, write_result
from bench.fidelity import run_cell
from schemas.challenge import load_challenge
from verifier.harness import netns
from verifier.runners.jail import PORT, Jail
from verifier.runners.jail_plan import JailPlan, jail_environment, jail_limits, plan_jail

SPEC = load_challenge("tiny")
#: the fidelity cells measured through the jail (tokens/s per stream, concurrency)
CELLS = ((200, 1), (1000, 8))
#: where the jail sees the paced engine's package
BENCH_CODE = "/bench-code"


def _plan(tmp: Path, *, bench_code: bool = False) -> JailPlan:
    (tmp / "bundle" / "engine").mkdir(parents=True, exist_ok=True)
    (tmp / "model").mkdir(exist_ok=True)
    plan = plan_jail(SPEC, bundle=tmp / "bundle", model=tmp / "model", drafter=None, gpu=False)
    if bench_code:  # the paced engine's module, read-only, as the bundle's code would be
        extra = ["--ro-bind", str(REPO_ROOT / "bench"), f"{BENCH_CODE}/bench"]
        plan = dataclasses.replace(plan, extra=extra)
    return plan


def startup(starts: int) -> dict[str, Any]:
    jailed, plain = [], []
    with tempfile.TemporaryDirectory(prefix="podium-jail-bench-") as tmp:
        plan = _plan(Path(tmp))
        env = jail_environment({}, code=Path("/bundle/engine"))
        for i in range(starts):
            t0 = time.perf_counter()
            subprocess.run([sys.executable, "-P", "-c", "pass"], check=True)
            plain.append(time.perf_counter() - t0)
            jail = Jail(plan, env, [sys.executable, "-c", "pass"], Path(tmp) / f"{i}.log")
            t0 = time.perf_counter()
            jail.open(limits=jail_limits(SPEC, gpu=False))
            jailed.append(time.perf_counter() - t0)
            jail.close()
    return {
        "starts": starts,
        "jail_open_s_median": statistics.median(jailed),
        "plain_python_s_median": statistics.median(plain),
        "jail_open_s": jailed,
        "plain_python_s": plain,
    }


def _jailed_cell(rate: float, concurrency: int, trials: int, trial_s: float) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="podium-jail-bench-") as tmp:
        plan = _plan(Path(tmp), bench_code=True)
        env = jail_environment({}, code=Path(BENCH_CODE))
        cmd = [sys.executable, "-P", "-m", "bench.paced_engine", "--rate", str(rate)]
        jail = Jail(plan, env, [*cmd, "--port", str(PORT)], Path(tmp) / "engine.log")
        jail.open(limits=jail_limits(SPEC, gpu=False))
        try:
            inside = f"http://127.0.0.1:{PORT}"
            ns = f"/proc/{jail.pid}/ns/net"

            def cell() -> dict[str, Any]:
                _wait_health(inside)
                # the harness's client dials the jail's route from here, as a verifier does
                return run_cell(
                    f"http://{jail.host}:{PORT}",
                    rate,
                    concurrency,
                    trials,
                    trial_s,
                    stats_url=inside,
                )

            netns.route(jail.host, ns)
            return netns.call_in(ns, cell)
        finally:
            jail.close()


def _wait_health(url: str) -> None:
    import httpx

    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            if httpx.get(url + "/health", timeout=2.0, trust_env=False).is_success:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    raise RuntimeError("the jailed paced engine never answered /health")


def timer(trials: int, trial_s: float) -> list[dict[str, Any]]:
    rows = []
    for rate, concurrency in CELLS:
        with paced_engine(rate) as engine:
            plain = run_cell(engine.url, rate, concurrency, trials, trial_s)
        jailed = _jailed_cell(rate, concurrency, trials, trial_s)
        rows.append(
            {
                "rate": rate,
                "concurrency": concurrency,
                "plain": _summary(plain),
                "jail": _summary(jailed),
            }
        )
    return rows


def _summary(cell: dict[str, Any]) -> dict[str, Any]:
    errors = [abs(t["error_vs_engine"]) for t in cell["trials"]]
    return {
        "harness_tps_median": cell["harness"]["median"],
        "engine_tps_median": cell["engine_tps_median"],
        "error_vs_engine_median": statistics.median(errors),
        "error_vs_engine_worst": max(errors),
        "client_us_per_request": cell["client_us_per_request"],
    }


def _bundle(tmp: Path) -> Path:
    sys.path.insert(0, str(REPO_ROOT / "tests" / "verifier"))
    from entry_bundle import entry_source

    from submission.bundle import package

    made = package(entry_source(tmp), tmp / "dist", build=False)  # pins the base's digest
    assert made.bundle is not None, [f.one_line() for f in made.findings]
    return made.bundle.path


def _verify(bundle: Path, runner: str, key: Path, out: Path) -> dict[str, Any]:
    argv = [sys.executable, "-m", "podium.cli.app", "verify", str(bundle), "--runner", runner]
    argv += ["--challenge", "tiny", "--key", str(key), "-o", str(out), "--json"]
    t0 = time.perf_counter()
    done = subprocess.run(argv, capture_output=True, text=True, cwd=REPO_ROOT, check=False)
    wall = time.perf_counter() - t0
    report = json.loads((out / "report.json").read_text())
    stages: dict[str, float] = {}
    for s in report["stages"]:
        stages[s["name"]] = stages.get(s["name"], 0.0) + (s.get("seconds") or 0.0)
    failure = report.get("failure") or {}
    return {
        "wall_s": wall,
        "exit": done.returncode,
        "verdict": report["verdict"],
        "failure": failure.get("message"),
        "stages": stages,
    }


def verification(pairs: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="podium-jail-bench-") as name:
        tmp = Path(name)
        bundle = _bundle(tmp)
        key = tmp / "organizer.pem"
        subprocess.run(
            [sys.executable, "-m", "podium.cli.app", "keys", "generate", str(key)],
            check=True,
            capture_output=True,
        )
        runs = []
        for i in range(pairs):
            jail = _verify(bundle, "jail", key, tmp / f"jail-{i}")
            docker = _verify(bundle, "local-docker", key, tmp / f"docker-{i}")
            runs.append({"jail": jail, "local_docker": docker})
    ratios = [r["jail"]["wall_s"] / r["local_docker"]["wall_s"] for r in runs]
    return {
        "pairs": pairs,
        "ratio_median": statistics.median(ratios),
        "jail_wall_s_median": statistics.median(r["jail"]["wall_s"] for r in runs),
        "docker_wall_s_median": statistics.median(r["local_docker"]["wall_s"] for r in runs),
        "runs": runs,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.jail_cost", description=__doc__)
    parser.add_argument("--pairs", type=int, default=2, help="verifications of each runner")
    parser.add_argument("--starts", type=int, default=10)
    parser.add_argument("--trials", type=int, default=5)
    parser.add_argument("--trial-s", type=float, default=3.0)
    parser.add_argument(
        "--parts",
        default="startup,timer,verify",
        help="which parts to measure; the others are kept from the results file in --out",
    )
    parser.add_argument("--out", type=Path, default=RESULTS_DIR)
    args = parser.parse_args(argv)
    parts = set(args.parts.split(","))
    kept: dict[str, Any] = {}
    if parts != {"startup", "timer", "verify"} and (args.out / "jail_cost.json").is_file():
        kept = json.loads((args.out / "jail_cost.json").read_text(encoding="utf-8"))
    data: dict[str, Any] = {
        "machine": machine(),
        "command": " ".join(["python -m bench.jail_cost", *(argv or sys.argv[1:])]),
    }
    data.update(
        {
            k: v
            for k, v in kept.items()
            if k in ("startup", "timer", "timer_command", "verification")
        }
    )
    if "startup" in parts:
        data["startup"] = {**startup(args.starts), "command": data["command"]}
        write_result("jail_cost", data, args.out)  # each part kept as soon as it is measured
    if "timer" in parts:
        data["timer"] = timer(args.trials, args.trial_s)
        data["timer_command"] = data["command"]
        write_result("jail_cost", data, args.out)
    if "verify" in parts:
        data["verification"] = {**verification(args.pairs), "command": data["command"]}
    data["machine_after"] = machine()
    path = write_result("jail_cost", data, args.out)
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    sys.exit(main())
