"""The shipped tiny model and its data sets are intact, well formed, and score as recorded.

Every PPL number in podium's tests and demos rests on these files, so the perplexity is
recomputed here by the direct method (float32, CPU, context + target ids as they are)
rather than trusted from MANIFEST.json.
"""

from __future__ import annotations

import hashlib
import json
import math
from pathlib import Path
from typing import Any

import pytest

TINY = Path(__file__).resolve().parents[2] / "podium" / "data" / "tiny"
MODEL = TINY / "model"
VOCAB_SIZE = 2048
BOS_ID = 2


def manifest() -> dict[str, Any]:
    data: dict[str, Any] = json.loads((TINY / "MANIFEST.json").read_text())
    return data


def read_jsonl(name: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (TINY / name).read_text().splitlines() if line.strip()]


def test_every_shipped_file_matches_its_manifest_digest() -> None:
    files = manifest()["files"]
    on_disk = {
        f"{folder.name}/{p.name}"
        for folder in (MODEL, TINY / "drafter")
        for p in folder.iterdir()
        if p.is_file() and p.name != "README.md"
    }
    assert on_disk <= set(files), f"model files missing from MANIFEST.json: {on_disk - set(files)}"
    for rel, entry in files.items():
        data = (TINY / rel).read_bytes()
        assert len(data) == entry["size"], rel
        assert hashlib.sha256(data).hexdigest() == entry["sha256"], rel


def test_tiny_directory_stays_small() -> None:
    total = sum(p.stat().st_size for p in TINY.rglob("*") if p.is_file())
    assert total < 25 * 1024 * 1024


@pytest.mark.parametrize(
    ("name", "count"), [("public-prompts.jsonl", 1024), ("heldout-prompts.jsonl", 1024)]
)
def test_prompt_files_are_well_formed(name: str, count: int) -> None:
    """1,024 prompts each: no verification of tiny needs to repeat one (1,024 at most:
    8 prompts a pass, 8 passes of a 2 s trial at 2,000 tok/s, 16 trials)."""
    rows = read_jsonl(name)
    assert len(rows) == count
    assert all(set(r) == {"id", "prompt"} for r in rows)
    assert len({r["id"] for r in rows}) == len(rows)
    assert all(isinstance(r["prompt"], str) and 10 <= len(r["prompt"]) <= 400 for r in rows)
    assert len({r["prompt"] for r in rows}) == len(rows)


def test_public_and_heldout_prompts_are_disjoint() -> None:
    public = read_jsonl("public-prompts.jsonl")
    heldout = read_jsonl("heldout-prompts.jsonl")
    assert not {r["prompt"] for r in public} & {r["prompt"] for r in heldout}
    assert not {r["id"] for r in public} & {r["id"] for r in heldout}


@pytest.mark.parametrize("name", ["ppl-public.jsonl", "ppl-heldout.jsonl"])
def test_ppl_files_are_well_formed(name: str) -> None:
    rows = read_jsonl(name)
    assert len(rows) == 16
    assert len({r["id"] for r in rows}) == len(rows)
    for r in rows:
        assert set(r) == {"id", "context_token_ids", "target_token_ids"}
        ctx, tgt = r["context_token_ids"], r["target_token_ids"]
        assert 48 <= len(ctx) <= 160, r["id"]
        assert 48 <= len(tgt) <= 128, r["id"]
        assert ctx[0] == BOS_ID, r["id"]
        assert all(isinstance(t, int) and 0 <= t < VOCAB_SIZE for t in ctx + tgt), r["id"]


def test_public_and_heldout_ppl_records_do_not_share_targets() -> None:
    public = {tuple(r["target_token_ids"]) for r in read_jsonl("ppl-public.jsonl")}
    heldout = {tuple(r["target_token_ids"]) for r in read_jsonl("ppl-heldout.jsonl")}
    assert not public & heldout


def direct_perplexity(records: list[dict[str, Any]]) -> float:
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    model = transformers.AutoModelForCausalLM.from_pretrained(str(MODEL), dtype=torch.float32)
    model.eval()
    nll, count = 0.0, 0
    with torch.no_grad():
        for r in records:
            ctx, tgt = r["context_token_ids"], r["target_token_ids"]
            logits = model(input_ids=torch.tensor([ctx + tgt])).logits[0].float()
            logprobs = torch.log_softmax(logits[len(ctx) - 1 : -1], dim=-1)
            nll -= float(logprobs[torch.arange(len(tgt)), torch.tensor(tgt)].sum())
            count += len(tgt)
    return math.exp(nll / count)


def test_heldout_perplexity_matches_manifest_and_is_far_below_vocabulary() -> None:
    recorded = manifest()["heldout_ppl"]
    measured = direct_perplexity(read_jsonl("ppl-heldout.jsonl"))
    assert measured < 100, "the tiny model should be far better than uniform over 2,048 tokens"
    assert measured == pytest.approx(recorded, rel=0.01)


def test_recorded_degradations_exceed_the_verifier_margin() -> None:
    degraded = manifest()["degraded"]
    honest = degraded["heldout_ppl_honest"]
    worse = [v for k, v in degraded.items() if k != "heldout_ppl_honest"]
    assert any(v > 1.05 * honest for v in worse)


def test_tokenizer_loads_offline_with_gemma_style_chat_template() -> None:
    transformers = pytest.importorskip("transformers")
    tok = transformers.AutoTokenizer.from_pretrained(str(MODEL))
    assert (tok.pad_token_id, tok.eos_token_id, tok.bos_token_id) == (0, 1, 2)
    assert len(tok) == VOCAB_SIZE
    text = tok.apply_chat_template(
        [{"role": "user", "content": "Tell me of the flood."}],
        add_generation_prompt=True,
        tokenize=False,
    )
    assert text == (
        "<bos><start_of_turn>user\nTell me of the flood.<end_of_turn>\n<start_of_turn>model\n"
    )
    ids = tok(text, add_special_tokens=False)["input_ids"]
    assert ids[:2] == [2, tok.convert_tokens_to_ids("<start_of_turn>")]
