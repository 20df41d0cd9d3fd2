"""A Fast Gemma Challenge folder imports without losing a field or a byte."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from schemas.challenge import load_challenge
from submission.bundle import package
from submission.importer import import_submission
from submission.validate import validate_submission

FAKE_DIGEST = "sha256:" + "cd" * 32

ORIGINAL = {
    "name": "gemma-mtp-sw188",
    "dependencies": ["vllm==0.11.0", "numpy>=1.26"],
    "model_id": "google/gemma-4-E4B-it",
    "served_model_name": "gemma",
    "port": 8000,
    "serve": ["python3", "serve.py"],
    "env": {
        "SLIDING_WINDOW": "188",
        "CENTROID_TOP_K": "49",
        "WARMUP_BRIDGE": "1",
        "WARMUP_NUM_PROMPTS": "64",
        "PRECACHE_BENCH": "0",
        "SPECULATIVE_CONFIG": '{"method":"mtp","num_speculative_tokens":7}',
        "MAX_MODEL_LEN": "4096",
        "GPU_MEMORY_UTILIZATION": "0.90",
        "VLLM_USE_V1": "1",
        "MY_NOTE": 'say "hi" $HOME',
    },
    "leaderboard_note": "an extra field the original harness ignored",
}


@pytest.fixture
def original(tmp_path: Path) -> Path:
    src = tmp_path / "fgc"
    (src / "lib").mkdir(parents=True)
    (src / "manifest.json").write_text(json.dumps(ORIGINAL, indent=4))
    (src / "serve.py").write_text("import os\nprint(os.environ['SLIDING_WINDOW'])\n")
    (src / "lib" / "patch.py").write_bytes(b"# \xc3\xa9 bytes kept\r\n")
    (src / "serve.py").chmod(0o755)
    return src


def test_import_round_trip_keeps_every_field(original: Path, tmp_path: Path) -> None:
    dest = tmp_path / "podium-entry"
    result = import_submission(original, dest, load_challenge("fast-gemma"))
    assert validate_submission(dest).findings == []
    packaged = package(dest, tmp_path / "out", base_digest=FAKE_DIGEST, build=False)
    assert packaged.ok, packaged.findings
    manifest = json.loads((dest / "manifest.json").read_text())

    # the whole original manifest, byte for byte on disk and as data in origin.manifest
    assert (dest / "origin-manifest.json").read_bytes() == (original / "manifest.json").read_bytes()
    assert manifest["origin"]["format"] == "fast-gemma-challenge"
    assert manifest["origin"]["manifest"] == ORIGINAL
    assert any("leaderboard_note" in n for n in manifest["origin"]["notes"])
    # every file verbatim, modes included
    for rel in ("serve.py", "lib/patch.py"):
        assert (dest / rel).read_bytes() == (original / rel).read_bytes()
    assert (dest / "serve.py").stat().st_mode & 0o111
    listed = {f["path"]: f for f in manifest["files"]}
    assert listed["serve.py"]["executable"] is True

    engine = manifest["engine"]
    assert engine["kind"] == "custom"
    assert engine["port"] == ORIGINAL["port"]
    assert engine["served_model_name"] == ORIGINAL["served_model_name"]
    assert engine["serve"] == ORIGINAL["serve"]
    assert [d["spec"] for d in engine["dependencies"]] == ORIGINAL["dependencies"]
    assert engine["config"]["MODEL"] == ORIGINAL["model_id"]
    # each env key is a decoded knob or a verbatim env string, never dropped
    env = ORIGINAL["env"]
    assert engine["env"] == {"MY_NOTE": env["MY_NOTE"], "VLLM_USE_V1": "1"}
    for key in set(env) - set(engine["env"]):
        assert engine["config"][key] == json.loads(env[key])
    assert engine["config"]["SPECULATIVE_CONFIG"] == {"method": "mtp", "num_speculative_tokens": 7}
    assert result.team == result.entry == "gemma-mtp-sw188"
    # the image runs the original command with the original env strings
    dockerfile = (dest / "Dockerfile").read_text()
    assert 'CMD ["python3", "serve.py"]' in dockerfile
    assert (
        'SPECULATIVE_CONFIG="{\\"method\\":\\"mtp\\",\\"num_speculative_tokens\\":7}"' in dockerfile
    )
    assert 'MY_NOTE="say \\"hi\\" \\$HOME"' in dockerfile


def test_imported_precache_is_caught(original: Path, tmp_path: Path) -> None:
    doc = dict(ORIGINAL, env={**ORIGINAL["env"], "PRECACHE_BENCH": "1"}, model_id="other/model")
    (original / "manifest.json").write_text(json.dumps(doc))
    dest = tmp_path / "entry"
    import_submission(original, dest, load_challenge("fast-gemma"), team="acme", entry="x")
    ids = sorted(f.check_id for f in validate_submission(dest).findings)
    assert ids == ["engine.model", "engine.precache"]
