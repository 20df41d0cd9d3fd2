"""How OpenMP threads and runtime change vLLM's CPU speed and its trial-to-trial spread.

``python -m bench.vllm_threads`` (about 5 minutes on 2 cores). Four sandboxed vLLM servers
(bench/vllm_sandbox.py: the top-level Dockerfile on podium/vllm-cpu, the verifier's
sandbox with 2 CPUs), one after the other, each timed on the tiny challenge's workload
shape (the first 8 held-out prompts, chat endpoint, 32 greedy tokens each with
``ignore_eos``, single stream), 1 untimed pass then 6 timed ones:

- ``2 threads``: torch's default of one OpenMP thread per core;
- ``1 thread``: ``OMP_NUM_THREADS=1`` (what examples/tiny-vllm sets);
- ``ngram, GNU OpenMP``: ngram speculative decoding, one thread, ``LD_PRELOAD`` emptied so
  torch's own libgomp runs;
- ``ngram, Intel OpenMP``: the same with the image's default, Intel's libiomp5 preloaded.

Per server: TPS per pass, the median and the coefficient of variation (the quantity the
verifier's ``tps.unstable`` bounds). ``--hog N`` runs N busy-looping processes during the
timed passes, a shared machine on purpose (results in ``vllm_threads_hogN.json``);
``--only NAME,...`` picks set-ups.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from bench.common import machine, write_result
from bench.vllm_sandbox import BASE_CONFIG, REPO, SERVED, SandboxedEngine, engine_image, request

NGRAM = {"method": "ngram", "num_speculative_tokens": 3, "prompt_lookup_max": 3}
SETUPS: dict[str, dict[str, Any]] = {
    "2 threads": {k: v for k, v in BASE_CONFIG.items() if k != "OMP_NUM_THREADS"},
    "1 thread": dict(BASE_CONFIG),
    "ngram, GNU OpenMP": {**BASE_CONFIG, "SPECULATIVE_CONFIG": NGRAM, "LD_PRELOAD": ""},
    "ngram, Intel OpenMP": {**BASE_CONFIG, "SPECULATIVE_CONFIG": NGRAM},
}


def one_pass(url: str, prompts: list[str]) -> float:
    start, tokens = time.perf_counter(), 0
    for text in prompts:
        body = {
            "model": SERVED,
            "messages": [{"role": "user", "content": text}],
            "max_tokens": 32,
            "temperature": 0.0,
            "top_p": 1.0,
            "top_k": -1,
            "ignore_eos": True,
            "return_token_ids": True,
        }
        status, reply = request(url, "POST", "/v1/chat/completions", body)
        assert status == 200, reply
        tokens += len(reply["choices"][0]["token_ids"])
    return tokens / (time.perf_counter() - start)


@contextlib.contextmanager
def hogs(count: int) -> Iterator[None]:
    """``count`` processes that spin on a core each, for as long as the block runs."""
    procs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(count)]
    try:
        yield
    finally:
        for proc in procs:
            proc.kill()
            proc.wait()


def run(passes: int = 6, *, hog: int = 0, only: list[str] | None = None) -> dict[str, Any]:
    import docker

    client = docker.from_env()
    heldout = REPO / "podium" / "data" / "tiny" / "heldout-prompts.jsonl"
    prompts = [json.loads(line)["prompt"] for line in heldout.read_text().splitlines()][:8]
    results = {}
    with tempfile.TemporaryDirectory(prefix="bench-vllm-threads-") as tmp:
        for name, config in SETUPS.items():
            if only and name not in only:
                continue
            engine = SandboxedEngine(client, engine_image(client, config, Path(tmp)))
            try:
                engine.start()
                one_pass(engine.base_url, prompts)
                with hogs(hog):
                    tps = [one_pass(engine.base_url, prompts) for _ in range(passes)]
            finally:
                engine.remove()
            results[name] = {
                "config": config,
                "tps": tps,
                "median": statistics.median(tps),
                "cv": statistics.stdev(tps) / statistics.mean(tps),
                "load_average": machine()["load_average"],
            }
            print(
                f"{name}: median {results[name]['median']:.1f} tok/s, "
                f"CV {results[name]['cv']:.3f}, passes {[round(x, 1) for x in tps]}",
                flush=True,
            )
    client.close()
    return {"hog": hog, "setups": results}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.vllm_threads", description=__doc__)
    parser.add_argument("--hog", type=int, default=0, help="busy processes while timing")
    parser.add_argument("--only", default="", help="comma-separated set-up names")
    args = parser.parse_args(argv)
    only = [x.strip() for x in args.only.split(",") if x.strip()] or None
    unknown = sorted(set(only or []) - set(SETUPS))
    if unknown:
        parser.error(f"unknown set-up(s) {unknown}; choose from {list(SETUPS)}")
    before = machine()
    started = time.perf_counter()
    data = run(hog=args.hog, only=only)
    result = {
        "machine": before,
        "command": "python -m bench.vllm_threads " + " ".join(argv or sys.argv[1:]),
        "seconds": round(time.perf_counter() - started, 1),
        **data,
    }
    name = "vllm_threads" + (f"_hog{args.hog}" if args.hog else "")
    print(write_result(name, result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
