"""The sample submission packages, builds, and its engine serves the official client in a container.

The image is the one ``podium submission package`` builds from ``examples/tiny-baseline``;
the container runs the way the verifier runs it (internal network, read-only root, no
capabilities, the shipped model mounted read-only at /model).
"""

from __future__ import annotations

import math
import shutil
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from podium import dockerx
from submission.bundle import package

pytestmark = [pytest.mark.docker, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[2]
MODEL = REPO / "podium" / "data" / "tiny" / "model"
NAME = "podium/tiny-gemma4"  # served_model_name in the example's podium.toml


@pytest.fixture(scope="module")
def engine_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    tmp = tmp_path_factory.mktemp("container")
    src = tmp / "entry"
    shutil.copytree(
        REPO / "examples" / "tiny-baseline",
        src,
        ignore=shutil.ignore_patterns("manifest.json", "engine-config.json"),
    )
    result = package(src, tmp / "dist")
    assert result.ok and result.image is not None, [f.one_line() for f in result.findings]
    client = dockerx.connect()
    net = client.networks.create(f"podium-test-{time.time_ns()}", internal=True)
    container: Any = None
    try:
        container = client.containers.create(
            result.image["image_id"],
            network=net.name,
            read_only=True,
            cap_drop=["ALL"],
            security_opt=["no-new-privileges"],
            tmpfs={"/tmp": "rw,size=256m"},
            volumes={str(MODEL): {"bind": "/model", "mode": "ro"}},
            detach=True,
        )
        container.start()
        container.reload()
        url = f"http://{container.attrs['NetworkSettings']['Networks'][net.name]['IPAddress']}:8000"
        deadline = time.monotonic() + 120
        while True:
            try:
                if httpx.get(f"{url}/health", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            container.reload()
            assert container.status == "running", container.logs()[-2000:]
            assert time.monotonic() < deadline, "the engine did not answer /health in 120 s"
            time.sleep(0.5)
        yield url
    finally:
        if container is not None:
            container.remove(force=True)
        net.remove()
        client.images.remove(result.image["image_id"], force=True)


def test_image_answers_health_and_models(engine_url: str) -> None:
    assert httpx.get(f"{engine_url}/health").status_code == 200
    models = httpx.get(f"{engine_url}/v1/models").json()
    assert [m["id"] for m in models["data"]] == [NAME]


def test_official_openai_client_completes_text_and_chat(engine_url: str) -> None:
    from openai import OpenAI

    client = OpenAI(base_url=f"{engine_url}/v1", api_key="unused", max_retries=0)
    text = client.completions.create(
        model=NAME, prompt="In the beginning", max_tokens=8, temperature=0
    )
    assert text.choices[0].text and text.usage and text.usage.completion_tokens == 8
    chat = client.chat.completions.create(
        model=NAME,
        messages=[{"role": "user", "content": "Who made the heaven?"}],
        max_tokens=8,
        temperature=0,
        extra_body={"ignore_eos": True},
    )
    assert chat.choices[0].message.content is not None
    assert chat.usage and chat.usage.completion_tokens == 8


def test_prompt_logprobs_match_a_direct_forward_pass(engine_url: str) -> None:
    import torch
    from openai import OpenAI
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(str(MODEL))
    ids = tok.encode("And God said, Let there be light: and there was light.")
    client = OpenAI(base_url=f"{engine_url}/v1", api_key="unused", max_retries=0)
    reply = client.completions.create(
        model=NAME,
        prompt=ids,
        max_tokens=1,
        temperature=0,
        extra_body={"prompt_logprobs": 1, "add_special_tokens": False},
    )
    extra = reply.choices[0].model_extra or {}
    served = extra["prompt_logprobs"]
    model = AutoModelForCausalLM.from_pretrained(str(MODEL), dtype=torch.float32).eval()
    with torch.inference_mode():
        logp = torch.log_softmax(model(torch.tensor([ids])).logits[0].float(), dim=-1)
    assert served[0] is None and len(served) == len(ids)
    for pos in range(1, len(ids)):
        want = float(logp[pos - 1, ids[pos]])
        got = served[pos][str(ids[pos])]["logprob"]
        assert math.isclose(got, want, abs_tol=1e-4), (pos, got, want)
