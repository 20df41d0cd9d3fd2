"""Measure a drafter in real vLLM: acceptance, tokens/s, greedy outputs vs no speculation.

``python -m training.drafter_vllm OUT.json [--drafter DIR --tokens N --port P]`` starts
``podium/vllm-cpu:0.32.0`` in docker (the tiny model at /model and DIR at /drafter, both
read-only; float32, eager, 2 CPUs), sends the 8 tps prompts as tiny.json's tps does
(``/v1/chat/completions``, temperature 0, max_tokens 32, ``ignore_eos``, one at a time):
2 warm-up requests, then 3 trials; writes tokens/s per trial, the ``vllm:spec_decode_*``
counter deltas from ``/metrics`` over the trials, and the last trial's outputs (token ids).
Without ``--drafter`` it measures plain vLLM with the same settings.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
MODEL = REPO / "podium" / "data" / "tiny" / "model"
PUBLIC = REPO / "podium" / "data" / "tiny" / "public-prompts.jsonl"
IMAGE = "podium/vllm-cpu:0.32.0"


def call(base: str, path: str, body: dict[str, Any] | None = None) -> str:
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(
        base + path, data=data, headers={"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(req, timeout=120) as fh:
        return str(fh.read().decode())


def counters(base: str) -> dict[str, float]:
    out: dict[str, float] = {}
    for line in call(base, "/metrics").splitlines():
        if line.startswith("vllm:spec_decode") and "_total" in line:
            name, value = line.rsplit(" ", 1)
            out[name] = out.get(name, 0.0) + float(value)
    return out


def measure(base: str, trials: int = 3) -> dict[str, Any]:
    lines = [line for line in PUBLIC.read_text().splitlines() if line.strip()][:8]
    prompts = [json.loads(line)["prompt"] for line in lines]

    def one(prompt: str, max_tokens: int = 32) -> dict[str, Any]:
        body = {
            "model": "m",
            "messages": [{"role": "user", "content": prompt}],
            "temperature": 0.0,
            "top_p": 1.0,
            "top_k": -1,
            "max_tokens": max_tokens,
            "ignore_eos": True,
            "return_token_ids": True,
        }
        reply: dict[str, Any] = json.loads(call(base, "/v1/chat/completions", body))
        return reply

    for prompt in prompts[:2]:
        one(prompt, 8)
    before = counters(base)
    result: dict[str, Any] = {"trials": []}
    for _ in range(trials):
        start, tokens, outputs = time.perf_counter(), 0, []
        for prompt in prompts:
            reply = one(prompt)
            tokens += reply["usage"]["completion_tokens"]
            outputs.append(reply["choices"][0].get("token_ids"))
        seconds = time.perf_counter() - start
        result["trials"].append({"tps": tokens / seconds, "tokens": tokens, "seconds": seconds})
        result["outputs"] = outputs
    after = counters(base)
    result["spec_decode"] = {k: v - before.get(k, 0.0) for k, v in after.items()}
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m training.drafter_vllm", description=__doc__)
    parser.add_argument("out", type=Path)
    parser.add_argument("--drafter", type=Path, default=None)
    parser.add_argument("--tokens", type=int, default=3, help="num_speculative_tokens")
    parser.add_argument("--port", type=int, default=18100)
    args = parser.parse_args(argv)
    name = f"podium-drafter-vllm-{args.port}"
    cmd = ["docker", "run", "-d", "--name", name, "--cpus", "2", "--shm-size", "1g"]
    cmd += ["-p", f"127.0.0.1:{args.port}:8000", "-v", f"{MODEL}:/model:ro"]
    serve = ["--model", "/model", "--served-model-name", "m", "--dtype", "float32"]
    serve += ["--enforce-eager", "--host", "0.0.0.0", "--port", "8000"]
    if args.drafter is not None:
        cmd += ["-v", f"{args.drafter.resolve()}:/drafter:ro"]
        spec = {"method": "mtp", "model": "/drafter", "num_speculative_tokens": args.tokens}
        serve += ["--speculative-config", json.dumps(spec)]
    for env in (
        "VLLM_CPU_KVCACHE_SPACE=1",
        "VLLM_CPU_OMP_THREADS_BIND=nobind",
        "OMP_NUM_THREADS=1",
    ):
        cmd += ["-e", env]
    cmd += ["--entrypoint", "python", IMAGE, "-m", "vllm.entrypoints.openai.api_server", *serve]
    subprocess.run(cmd, check=True, capture_output=True)
    base = f"http://127.0.0.1:{args.port}"
    try:
        for _ in range(400):
            try:
                call(base, "/health")
                break
            except OSError:
                state = subprocess.run(
                    ["docker", "inspect", "-f", "{{.State.Running}}", name],
                    capture_output=True,
                    text=True,
                ).stdout.strip()
                if state != "true":
                    logs = subprocess.run(["docker", "logs", name], capture_output=True, text=True)
                    sys.stderr.write(logs.stderr[-4000:])
                    return 1
                time.sleep(1)
        result = measure(base)
    finally:
        subprocess.run(["docker", "rm", "-f", name], capture_output=True)
    args.out.write_text(json.dumps(result, indent=1))
    print(json.dumps({"tps": [t["tps"] for t in result["trials"]], **result["spec_decode"]}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
