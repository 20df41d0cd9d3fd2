"""``examples/fast-gemma-winning``: the published winner's levers, as a fast-gemma entry.

It validates against every rule of the real challenge, carries exactly the published
values (the .env form of the winner, read the way ``podium submission import`` reads it),
freezes without Docker (``--base-digest``), and the launcher turns it into vLLM's own
arguments: MTP with 7 draft tokens on the mounted drafter (its centroid top-k 49) and the
188-token window among them.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from engines.vllm_launcher.args import build_serve_args, drafter_copy
from schemas.engine_config import parse_env_text
from submission.config import read_config
from submission.freeze import freeze
from submission.validate import validate_submission

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "fast-gemma-winning"
FAKE_DIGEST = "sha256:" + "ab" * 32

#: The winner's published config, as it was published (docs: the product's record).
WINNER_ENV = """\
SLIDING_WINDOW=188
CENTROID_TOP_K=49
WARMUP_BRIDGE=1
WARMUP_NUM_PROMPTS=64
PRECACHE_BENCH=0
SPECULATIVE_CONFIG={"method":"mtp","num_speculative_tokens":7}
MAX_MODEL_LEN=4096
GPU_MEMORY_UTILIZATION=0.90
"""


def test_the_winning_example_is_a_valid_fast_gemma_entry() -> None:
    result = validate_submission(EXAMPLE)
    assert result.challenge is not None and result.challenge.id == "fast-gemma"
    assert result.ok and result.findings == [], [f.to_dict() for f in result.findings]
    assert result.config is not None and result.config.kind == "vllm"


def test_the_winning_example_carries_the_published_values_exactly() -> None:
    read = read_config(EXAMPLE)
    assert read.config is not None
    assert read.config.config == parse_env_text(WINNER_ENV)


def test_the_winning_example_freezes_and_the_launcher_serves_its_levers(tmp_path: Path) -> None:
    entry = tmp_path / "entry"
    shutil.copytree(EXAMPLE, entry)
    frozen = freeze(entry, base_digest=FAKE_DIGEST)
    config = frozen.manifest.engine.config
    assert config["SPECULATIVE_CONFIG"] == {"method": "mtp", "num_speculative_tokens": 7}
    assert config["SLIDING_WINDOW"] == 188 and config["PRECACHE_BENCH"] == 0
    # with the challenge's drafter mounted at /drafter, as the verifier mounts a pinned one
    where = {"drafter": "/drafter", "drafter_dir": "/tmp/podium-drafter"}
    args = build_serve_args(config, model_path="/model", port=8000, host="0.0.0.0", **where)
    spec = json.loads(args[args.index("--speculative-config") + 1])
    assert spec == {"method": "mtp", "model": "/tmp/podium-drafter", "num_speculative_tokens": 7}
    copy = drafter_copy(config, **where)
    assert copy is not None and copy.config == {"centroid_intermediate_top_k": 49}
    assert args[args.index("--max-model-len") + 1] == "4096"
    overrides = json.loads(args[args.index("--hf-overrides") + 1])
    assert overrides["text_config"]["sliding_window"] == 188
