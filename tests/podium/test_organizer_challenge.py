"""The organizer's own challenge: one resolver, a locked spec, a held-out set checked."""

from __future__ import annotations

import functools
import json
import shutil
import threading
from collections.abc import Iterator
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from hubserver import FakeHub, allow_hub_requests

from podium.cli.app import main
from podium.errors import HubError, SchemaError
from podium.signing import KeyPair, write_keypair
from schemas.challenge import load_challenge
from verifier.lock import UnlockedSpecError, image_pin, lock_document, require_locked

REPO = Path(__file__).resolve().parents[2]
TINY = REPO / "podium" / "data" / "tiny"


def cli(capsys: pytest.CaptureFixture[str], *args: str, stdout: bool = False) -> tuple[int, str]:
    """The whole command line; what it printed (``stdout``: that alone, for --json)."""
    with pytest.raises(SystemExit) as done:
        main(list(args))
    out = capsys.readouterr()
    return int(done.value.code or 0), out.out if stdout else out.out + out.err


class _Quiet(SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def http_dir(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    root = tmp_path / "www"
    root.mkdir()
    server = ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_Quiet, directory=root))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}", root
    server.shutdown()
    server.server_close()


def test_a_spec_by_url(http_dir: tuple[str, Path]) -> None:
    url, root = http_dir
    shutil.copy(REPO / "podium/data/challenges/tiny.json", root / "spec.json")
    spec = load_challenge(f"{url}/spec.json")
    assert spec.id == "tiny" and spec.source == f"{url}/spec.json"
    assert spec.sha256 == load_challenge("tiny").sha256
    with pytest.raises(HubError, match="HTTP 404"):
        load_challenge(f"{url}/missing.json")
    (root / "bad.json").write_text('{"id": "x"}')
    with pytest.raises(SchemaError):
        load_challenge(f"{url}/bad.json")


def test_a_spec_on_the_hub(monkeypatch: pytest.MonkeyPatch) -> None:
    from huggingface_hub import HfApi

    allow_hub_requests(monkeypatch)
    with FakeHub() as hub:
        monkeypatch.setenv("HF_ENDPOINT", hub.endpoint)
        HfApi(endpoint=hub.endpoint).create_repo("org/challenges", repo_type="dataset")
        doc = (REPO / "podium/data/challenges/tiny.json").read_bytes()
        hub.put_file("org/challenges", "challenge.json", doc)
        hub.put_file("org/challenges", "v2/tiny.json", doc)
        assert load_challenge("hf://datasets/org/challenges").id == "tiny"
        spec = load_challenge("hf://datasets/org/challenges/v2/tiny.json")
        assert spec.source == "hf://datasets/org/challenges/v2/tiny.json"
        with pytest.raises(HubError):
            load_challenge("hf://datasets/org/challenges/nothing.json")


@pytest.fixture
def standin(tmp_path: Path) -> Path:
    """A local stand-in for fast-gemma's weights: small fake files in a snapshot layout."""
    root = tmp_path / "gemma"
    root.mkdir()
    (root / "config.json").write_text('{"model_type": "gemma4"}')
    (root / "model-00001-of-00002.safetensors").write_bytes(b"\x01" * 3_000_000)
    (root / "model-00002-of-00002.safetensors").write_bytes(b"\x02" * 1000)
    (root / ".cache").mkdir()
    (root / ".cache" / "lock").write_text("x")
    return root


def test_lock_fast_gemma_with_stand_in_weights(
    tmp_path: Path, standin: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    public = write_keypair(KeyPair.generate(), tmp_path / "k.pem")
    out = tmp_path / "fast-gemma.locked.json"
    args = ["challenge", "lock", "fast-gemma", "--weights", str(standin), "--pubkey", str(public)]
    code, text = cli(capsys, *args, "--no-image", "-o", str(out), "--json")
    assert code == 1, text  # the base image is left unlocked, and named
    result = json.loads(text)
    assert [p["part"] for p in result["unlocked"]] == ["engine.vllm.images.gpu"]
    files = json.loads(out.read_text())["model"]["files"]
    assert [f["path"] for f in files] == [
        "config.json",
        "model-00001-of-00002.safetensors",
        "model-00002-of-00002.safetensors",
    ]
    assert files[1]["size"] == 3_000_000
    import hashlib

    assert files[1]["sha256"] == hashlib.sha256(b"\x01" * 3_000_000).hexdigest()
    # the image, pinned from what the engine says about it (here: a stand-in answer)
    spec = load_challenge(out)
    info = {"id": "sha256:" + "ab" * 32, "repo_digests": [f"vllm/vllm-openai@sha256:{'cd' * 32}"]}
    doc, pinned = lock_document(
        spec, weights=None, image="vllm/vllm-openai:v0.32.0", inspect=lambda ref: info
    )
    assert pinned == {"engine.vllm.images.gpu": f"vllm/vllm-openai:v0.32.0@sha256:{'cd' * 32}"}
    gpu = doc["engine"]["vllm"]["images"]["gpu"]
    assert gpu["ref"] == f"vllm/vllm-openai:v0.32.0@sha256:{'cd' * 32}"
    assert gpu["digest_confirmed"] is True
    (tmp_path / "full.json").write_text(json.dumps(doc))
    require_locked(load_challenge(tmp_path / "full.json"))  # nothing left to lock
    code, text = cli(capsys, "challenge", "show", str(tmp_path / "full.json"), "--json")
    assert code == 0 and json.loads(text)["computed"]["unlocked"] == []
    code, text = cli(capsys, "challenge", "show", str(tmp_path / "full.json"))
    assert "locked     yes" in text
    with pytest.raises(UnlockedSpecError, match=r"model\.files"):
        require_locked(load_challenge("fast-gemma"))
    # an existing file is not overwritten, a snapshot of another revision is refused
    code, text = cli(capsys, *args, "--no-image", "-o", str(out))
    assert code == 2 and "exists" in text
    other = tmp_path / "snapshots" / ("f" * 40)
    shutil.copytree(standin, other)
    code, text = cli(capsys, "challenge", "lock", "fast-gemma", "--weights", str(other),
                     "--no-image", "-o", str(tmp_path / "x.json"))  # fmt: skip
    assert code == 2 and "the spec pins the model at 83df0a889143" in text


def test_an_image_with_no_registry_digest_is_pinned_by_its_id() -> None:
    ref, how = image_pin("podium/vllm-cpu:0.32.0", {"id": "sha256:" + "9" * 64, "repo_digests": []})
    assert ref == "podium/vllm-cpu:0.32.0@sha256:" + "9" * 64 and "image id" in how


@pytest.mark.docker
def test_lock_reads_the_digest_from_the_local_docker_engine() -> None:
    from podium.dockerx import connect, image_info
    from podium.errors import DockerError

    try:
        client = connect()
    except DockerError as exc:
        pytest.skip(f"no Docker engine: {exc.message}")
    ref = "podium/base:bookworm"  # podium's own base image, built by make docker
    try:
        info = image_info(client, ref)
    except DockerError:
        pytest.skip(f"{ref} is missing (scripts/build-images.sh builds it)")
    doc, pinned = lock_document(load_challenge("fast-gemma"), weights=None, image=ref)
    gpu = doc["engine"]["vllm"]["images"]["gpu"]
    assert gpu["digest_confirmed"] is True and gpu["ref"] == pinned["engine.vllm.images.gpu"]
    digests = {info["id"], *(d.split("@")[1] for d in info["repo_digests"])}
    assert gpu["ref"].startswith(f"{ref}@") and gpu["ref"].split("@")[1] in digests


# -- the held-out set ---------------------------------------------------------------


def _set(root: Path, prompts: list[dict], ppl: list[dict]) -> Path:
    root.mkdir(parents=True)
    (root / "prompts.jsonl").write_text("".join(json.dumps(r) + "\n" for r in prompts))
    (root / "ppl.jsonl").write_text("".join(json.dumps(r) + "\n" for r in ppl))
    return root


def _rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


@pytest.fixture(scope="module")
def tiny_set(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("heldout") / "good"
    return _set(root, _rows(TINY / "heldout-prompts.jsonl"), _rows(TINY / "ppl-heldout.jsonl"))


def test_tinys_held_out_set_serves_tiny(tiny_set: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, text = cli(capsys, "heldout", "check", str(tiny_set), "-c", "tiny", "--json", stdout=True)
    assert code == 0, text
    doc = json.loads(text)
    assert doc["counts"]["prompts"] == 1024 and doc["counts"]["prompts_needed"] == 8 * 4 * 16
    assert {q["name"]: q["status"] for q in doc["questions"]} == {
        "records": "ok",
        "count": "ok",
        "duplicates": "ok",
        "public-overlap": "ok",
        "prompt-length": "ok",
        "ppl-length": "ok",
    }


def test_a_set_that_cannot_serve_tiny_says_why(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    public = _rows(TINY / "public-prompts.jsonl")
    prompts = _rows(TINY / "heldout-prompts.jsonl")[:100]
    prompts += [dict(prompts[0], id="again"), dict(public[3], id="leak"), {"id": "empty"}]
    prompts.append({"id": "long", "prompt": "word " * 6000})
    ppl = _rows(TINY / "ppl-heldout.jsonl")
    ppl.append(dict(ppl[0], id="huge", context_token_ids=[1] * 5000))
    ppl.append(dict(ppl[1], id="oov", target_token_ids=[10**7]))
    root = _set(tmp_path / "bad", prompts, ppl)
    code, text = cli(capsys, "heldout", "check", str(root), "-c", "tiny", "--json", stdout=True)
    assert code == 1, text
    by = {q["name"]: q for q in json.loads(text)["questions"]}
    assert by["records"]["ids"] == ["prompts.jsonl:empty"]
    assert by["count"]["status"] == "failed" and "408 prompts short" in by["count"]["detail"]
    assert by["duplicates"]["ids"] == ["again"]
    assert by["public-overlap"]["ids"] == ["leak"]
    assert by["prompt-length"]["ids"] == ["long"]
    assert by["ppl-length"]["ids"] == ["huge", "oov"]
    assert "word word" not in text  # problems name records by id, never by their text


def test_fast_gemma_with_no_tokenizer_skips_lengths_and_says_how(
    tmp_path: Path, standin: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    prompts = [{"id": f"p{i}", "prompt": f"question number {i}"} for i in range(768)]
    ppl = [{"id": "r0", "context_token_ids": [2, 5], "target_token_ids": [7, 9]}]
    root = _set(tmp_path / "gemma-set", prompts, ppl)
    public = _set(tmp_path / "public", [{"prompt": "question number 3"}], [])
    args = ["heldout", "check", str(root), "-c", "fast-gemma", "--weights", str(standin)]
    code, text = cli(capsys, *args, "--public", str(public), "--json", stdout=True)
    by = {q["name"]: q for q in json.loads(text)["questions"]}
    assert by["prompt-length"]["status"] == "skipped"
    assert "--weights DIR" in by["prompt-length"]["detail"]
    assert by["count"]["status"] == "ok" and "768 prompts for 768 needed" in by["count"]["detail"]
    assert code == 1 and by["public-overlap"]["ids"] == ["p3"]
    # sized for an engine twice the frontier: two passes a trial, the set is short
    code, text = cli(capsys, *args, "--public", str(public), "--tps", "1100", "--json", stdout=True)
    assert code == 1 and "768 prompts short" in json.loads(text)["questions"][1]["detail"]


def test_the_record_schemas_are_listed_and_validate_a_set_line_by_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, text = cli(capsys, "schema", "list", "--json")
    kinds = {d["kind"] for d in json.loads(text)}
    assert code == 0 and {"heldout-prompt", "heldout-ppl"} <= kinds
    shipped = str(TINY / "ppl-heldout.jsonl")
    assert cli(capsys, "schema", "validate", "heldout-ppl", shipped)[0] == 0
    bad = tmp_path / "prompts.jsonl"
    bad.write_text('{"id": "a", "prompt": "hi"}\n{"id": "b"}\nnot json\n')
    code, text = cli(capsys, "schema", "validate", "heldout-prompt", str(bad), "--json")
    where = [p["where"] for p in json.loads(text)["problems"]]
    assert code == 1 and where == ["line 2: $", "line 3"]


def test_a_held_out_set_on_the_hub(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from huggingface_hub import HfApi

    allow_hub_requests(monkeypatch)
    with FakeHub() as hub:
        monkeypatch.setenv("HF_ENDPOINT", hub.endpoint)
        HfApi(endpoint=hub.endpoint).create_repo("org/heldout", repo_type="dataset")
        hub.put_file("org/heldout", "prompts.jsonl", (TINY / "heldout-prompts.jsonl").read_bytes())
        hub.put_file("org/heldout", "ppl.jsonl", (TINY / "ppl-heldout.jsonl").read_bytes())
        args = ["heldout", "check", "hf://datasets/org/heldout", "-c", "tiny", "--json"]
        code, text = cli(capsys, *args, stdout=True)
        assert code == 0, text
        assert json.loads(text)["counts"]["prompts"] == 1024
