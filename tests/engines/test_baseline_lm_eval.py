"""lm-eval's ``local-completions`` model runs against the baseline engine, as against vLLM.

A loglikelihood task in batches of four prompts per request and a generation task with
stop strings, over task files shipped beside this test (``lm_eval_tasks/``, read from
disk: nothing is downloaded). The scores must be what the checkpoint itself gives.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

TASKS = Path(__file__).resolve().parent / "lm_eval_tasks"

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def evaluation(
    engine_server: Any, tiny_model_dir: Path, served_name: str, tmp_path_factory: Any
) -> dict[str, Any]:
    lm_eval = pytest.importorskip("lm_eval")
    from lm_eval.tasks import TaskManager

    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(TASKS)  # the task files name their data file relative to here
        result: dict[str, Any] = lm_eval.simple_evaluate(
            model="local-completions",
            model_args=(
                f"base_url={engine_server.url}/v1/completions,model={served_name},"
                f"tokenizer={tiny_model_dir},tokenizer_backend=huggingface,batch_size=4,"
                "max_retries=1"
            ),
            tasks=["podium_verses_choice", "podium_verses_continue"],
            task_manager=TaskManager(include_path=str(TASKS)),
            log_samples=True,
        )
    return result


def _logprob(model: Any, context: list[int], continuation: list[int]) -> float:
    import torch

    ids = torch.tensor([context + continuation])
    with torch.inference_mode():
        logprobs = torch.log_softmax(model(ids).logits[0].float(), dim=-1)
    return float(sum(logprobs[len(context) + i - 1, t] for i, t in enumerate(continuation)).item())


def test_batched_loglikelihood_matches_the_checkpoint(
    evaluation: dict[str, Any], reference_model: Any, tokenizer: Any
) -> None:
    samples = evaluation["samples"]["podium_verses_choice"]
    assert len(samples) == 8
    for sample in samples:
        doc = sample["doc"]
        for choice, resp in zip(doc["choices"], sample["resps"], strict=True):
            context = tokenizer.encode(doc["context"], add_special_tokens=False)
            whole = tokenizer.encode(doc["context"] + choice, add_special_tokens=False)
            want = _logprob(reference_model, context, whole[len(context) :])
            assert resp[0][0] == pytest.approx(want, abs=1e-3)
    assert evaluation["results"]["podium_verses_choice"]["acc,none"] >= 0.5


def test_generation_with_stop_strings_is_greedy_decoding_cut_at_the_stop(
    evaluation: dict[str, Any], reference_model: Any, tokenizer: Any
) -> None:
    import torch

    samples = evaluation["samples"]["podium_verses_continue"]
    assert len(samples) == 8
    for sample in samples:
        context = tokenizer.encode(sample["doc"]["context"], add_special_tokens=False)
        with torch.inference_mode():
            out = reference_model.generate(
                torch.tensor([context]), max_new_tokens=16, do_sample=False
            )
        text = tokenizer.decode(out[0, len(context) :], skip_special_tokens=True)
        for stop in (".", "\n"):
            text = text.split(stop)[0]
        assert sample["resps"][0][0] == text
