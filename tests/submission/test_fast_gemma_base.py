"""A fast-gemma entry can be packaged, and a bundle that cannot be rebuilt never gets in.

- The winner's entry (``examples/fast-gemma-winning``) is packaged, image built, against a
  local stand-in for the vLLM base: podium's small ``podium/base`` image tagged in this
  test's own namespace, with a copy of the fast-gemma spec whose locked digest is that
  image's. ``inspect`` accepts it and shows the base as checked.
- Without the base image, ``package`` says to ``docker pull`` it (the exact digest where
  the spec locks one), never to run a script that does not build it.
- A digest given by hand that no local image confirms is written as ``unchecked``;
  ``inspect`` shows it and refuses it unless the spec confirms that digest; an all-zero
  digest is refused by ``inspect`` and by ``queue submit``, which stores nothing.
"""

from __future__ import annotations

import contextlib
import json
import shutil
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from podium import dockerx
from podium.cli.app import main
from podium.errors import DockerError
from schemas.challenge import ChallengeSpec, load_challenge
from submission.base_pin import ZERO_DIGEST, resolve_base_image
from submission.bundle import package
from verifier.scale.queue.stores import LocalQueue

pytestmark = pytest.mark.docker

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "fast-gemma-winning"
SHIPPED = REPO / "podium" / "data" / "challenges" / "fast-gemma.json"
STAND_IN = "podium/base:bookworm"  # small, local; never started here
OTHER_DIGEST = "sha256:" + "ab" * 32


def cli(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    with pytest.raises(SystemExit) as done:
        main(args)
    out = capsys.readouterr()
    return int(done.value.code or 0), out.out + out.err


def entry(tmp_path: Path, base_image: str | None = None) -> Path:
    """The winner's entry; ``base_image`` replaces its base reference."""
    directory = tmp_path / "entry"
    shutil.copytree(EXAMPLE, directory, ignore=shutil.ignore_patterns("manifest.json"))
    if base_image is not None:
        toml = directory / "podium.toml"
        text = toml.read_text()
        toml.write_text(text.replace('"vllm/vllm-openai:v0.32.0"', json.dumps(base_image), 1))
        docker = directory / "Dockerfile"
        docker.write_text(docker.read_text().replace("vllm/vllm-openai:v0.32.0", base_image))
    return directory


def spec_copy(tmp_path: Path, ref: str, digest: str) -> Path:
    """The fast-gemma spec with its GPU base locked to ``ref@digest`` (confirmed)."""
    doc = json.loads(SHIPPED.read_text())
    doc["engine"]["vllm"]["images"]["gpu"] = {
        "ref": f"{ref}@{digest}",
        "digest_confirmed": True,
        "source": "a local stand-in for the test",
    }
    path = tmp_path / "fast-gemma-locked.json"
    path.write_text(json.dumps(doc))
    return path


@pytest.fixture(scope="module")
def stand_in() -> Iterator[tuple[str, str]]:
    """``(ref, image id)``: podium/base tagged as this test's own vLLM base."""
    client = dockerx.connect()
    repo = f"podium-test-{uuid.uuid4().hex[:8]}/vllm-openai"
    client.images.get(STAND_IN).tag(repo, "v0.32.0")
    ref = f"{repo}:v0.32.0"
    try:
        yield ref, dockerx.image_info(client, ref)["id"]
    finally:
        with contextlib.suppress(Exception):
            client.images.remove(ref)
        client.close()


@pytest.mark.quiet("bundle.base-unchecked")
def test_the_winning_entry_packages_against_a_local_stand_in_and_inspects_clean(
    stand_in: tuple[str, str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ref, image_id = stand_in
    spec_file = spec_copy(tmp_path, ref, image_id)
    directory = entry(tmp_path, ref)
    made = package(directory, tmp_path / "dist", challenge=load_challenge(spec_file))
    assert made.ok and made.bundle is not None, [f.one_line() for f in made.findings]
    assert made.image is not None  # built FROM the stand-in, with no network
    base = json.loads((directory / "manifest.json").read_text())["engine"]["base_image"]
    assert base == {"ref": ref, "digest": image_id}  # checked: no "unchecked" member
    code, out = cli(
        ["submission", "inspect", str(made.bundle.path), "--challenge", str(spec_file), "--json"],
        capsys,
    )
    shown = json.loads(out)
    assert code == 0 and shown["ok"] and shown["findings"] == [], out
    assert shown["base_image"] == {"ref": ref, "digest": image_id}
    code, out = cli(
        ["submission", "inspect", str(made.bundle.path), "--challenge", str(spec_file)], capsys
    )
    assert code == 0 and "(checked)" in out and "within the fast-gemma challenge's rules" in out


def test_a_missing_base_says_docker_pull_with_the_locked_digest(
    stand_in: tuple[str, str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # as shipped: the spec locks no confirmed digest, so the tag is what to pull
    code, out = cli(["submission", "package", str(entry(tmp_path)), "-o", str(tmp_path)], capsys)
    assert code == 3 and "vllm/vllm-openai:v0.32.0 not found" in out, out
    assert "docker pull vllm/vllm-openai:v0.32.0" in out and "build-images.sh" not in out
    # an organizer's locked spec: the exact digest to pull
    locked = "sha256:" + "cd" * 32
    spec = load_challenge(spec_copy(tmp_path, "vllm/vllm-openai:v0.32.0", locked))
    with pytest.raises(DockerError) as info:
        resolve_base_image("vllm/vllm-openai:v0.32.0", None, spec)
    assert f"docker pull vllm/vllm-openai@{locked}" in (info.value.hint or "")
    # an image held under the locked digest pins by it, checked, though no tag names it
    ref, image_id = stand_in
    missing_tag = ref.replace(":v0.32.0", ":not-tagged")
    spec = load_challenge(spec_copy(tmp_path, missing_tag, image_id))
    assert resolve_base_image(missing_tag, None, spec) == (image_id, image_id, True)


def unchecked_bundle(tmp_path: Path, digest: str, capsys: pytest.CaptureFixture[str]) -> Path:
    dist = tmp_path / "dist"
    code, out = cli(
        ["submission", "package", str(entry(tmp_path)), "-o", str(dist), "--no-build",
         "--base-digest", digest],
        capsys,
    )  # fmt: skip
    assert code == 0 and "(unchecked: no local image holds it" in out, out
    return dist / "podium-fast-gemma-winning.tar.gz"


def finding_ids(out: str) -> list[str]:
    return [f["check_id"] for f in json.loads(out)["findings"]]


@pytest.mark.fires("bundle.base-unchecked")
def test_an_all_zero_digest_is_refused_by_inspect_and_queue_submit(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bundle = unchecked_bundle(tmp_path, ZERO_DIGEST, capsys)
    code, out = cli(["submission", "inspect", str(bundle), "--json"], capsys)
    assert code == 1 and finding_ids(out) == ["bundle.base-unchecked"], out
    assert json.loads(out)["base_image"]["unchecked"] is True
    queue = tmp_path / "queue"
    code, out = cli(["queue", "submit", str(bundle), "--queue", str(queue)], capsys)
    assert code == 1 and "all-zero digest" in out and "docker pull" in out, out
    assert not queue.exists() or LocalQueue(queue).list_requests() == []


@pytest.mark.fires("bundle.base-unchecked")
def test_an_unchecked_base_passes_only_where_the_spec_confirms_that_digest(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bundle = unchecked_bundle(tmp_path, OTHER_DIGEST, capsys)
    code, out = cli(["submission", "inspect", str(bundle)], capsys)  # the shipped spec
    assert code == 1 and "is unchecked" in out and "confirms none" in out, out
    ref = "vllm/vllm-openai:v0.32.0"
    other = spec_copy(tmp_path, ref, "sha256:" + "cd" * 32)
    code, out = cli(["submission", "inspect", str(bundle), "--challenge", str(other)], capsys)
    assert code == 1 and "confirms another digest" in out, out
    same = spec_copy(tmp_path, ref, OTHER_DIGEST)
    code, out = cli(["submission", "inspect", str(bundle), "--challenge", str(same)], capsys)
    assert code == 0 and "(unchecked)" in out, out


def test_the_verifier_refuses_an_unchecked_base_at_intake_before_a_rebuild(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from verifier.intake import intake

    bundle = unchecked_bundle(tmp_path, OTHER_DIGEST, capsys)
    spec: ChallengeSpec = load_challenge("fast-gemma")
    opened = intake(bundle, tmp_path / "work", spec)
    assert not opened.ok
    errors = {f.check_id for f in opened.findings if f.is_error}
    # the spec pins no vLLM image this base could be, so it is no vLLM entry either
    assert errors == {"bundle.base-unchecked", "engine.not-vllm"}
    # a runner that builds no image (process) never reads the base's pin
    unbuilt = intake(bundle, tmp_path / "work2", spec, rebuilds=False)
    assert "bundle.base-unchecked" not in {f.check_id for f in unbuilt.findings}


def test_the_rebuild_finds_a_base_held_under_its_digest_or_says_which_to_pull(
    stand_in: tuple[str, str],
) -> None:
    from verifier.rebuild import held_base

    ref, image_id = stand_in
    client = dockerx.connect()
    try:
        untagged = ref.replace(":v0.32.0", ":not-tagged")
        assert held_base(client, untagged, image_id)["id"] == image_id
        with pytest.raises(DockerError) as info:
            held_base(client, "vllm/vllm-openai:v0.32.0", OTHER_DIGEST)
        assert info.value.hint == f"docker pull vllm/vllm-openai@{OTHER_DIGEST}"
    finally:
        client.close()
