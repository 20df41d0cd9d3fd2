"""A lever widens a bound only when the verifier itself makes it true.

``verifier.vllm_image`` reads what the verifier holds of a ``kind = "vllm"`` entry (the
bundle intake opened, the spec's pinned vLLM images, its own copy of podium's launcher, its
own rebuild's base) and ``verifier.checks.vllm_image`` judges it: ``engine.not-vllm`` for
an image that cannot be the pinned vLLM, and which KV-cache levers podium made true. The
engine's log never counts: a forged ``non-default args:`` line confirms nothing.
"""

from __future__ import annotations

import dataclasses
import shutil
from pathlib import Path

import pytest

from schemas.challenge import load_challenge
from submission.bundle import package
from verifier.checks.vllm_image import confirmed_levers, not_vllm, unconfirmed_because
from verifier.declared import declared_model
from verifier.evidence import VllmImage
from verifier.intake import Intake, intake
from verifier.vllm_image import inspect, rebuilt_from_pin

REPO = Path(__file__).resolve().parents[2]
SPEC = load_challenge("tiny")
#: a local base's image id, as ``submission package --base-digest`` pins it
BASE_ID = "sha256:" + "a" * 64
KV = '\nKV_CACHE_DTYPE = "fp8"\n'


def _bundle(
    where: Path,
    example: str = "tiny-vllm",
    *,
    toml: tuple[tuple[str, str], ...] = (),
    dockerfile: tuple[tuple[str, str], ...] = (),
    launcher: str | None = None,
) -> Intake:
    """The example with text replaced in podium.toml and the Dockerfile (and podium's
    launcher's ``__main__`` replaced by ``launcher``), packaged and opened by intake."""
    src = where / "src"
    shutil.copytree(
        REPO / "examples" / example,
        src,
        ignore=shutil.ignore_patterns("manifest.json", "engine-config.json"),
    )
    for name, edits in (("podium.toml", toml), ("Dockerfile", dockerfile)):
        text = (src / name).read_text(encoding="utf-8")
        for old, new in edits:
            assert old in text, (name, old)
            text = text.replace(old, new, 1)
        (src / name).write_text(text, encoding="utf-8")
    if launcher is not None:
        target = src / "engine" / "engines" / "vllm_launcher"
        shutil.copytree(REPO / "engines" / "vllm_launcher", target)
        shutil.copy(REPO / "engines" / "__init__.py", target.parent / "__init__.py")
        (target / "__main__.py").write_text(launcher, encoding="utf-8")
    packaged = package(src, where / "dist", build=False, base_digest=BASE_ID)
    assert packaged.bundle is not None, [f.one_line() for f in packaged.findings]
    return intake(packaged.bundle.path, where / "work", SPEC)


def _evidence(opened: Intake, rebuilt: str | None) -> VllmImage:
    assert opened.root is not None and opened.manifest is not None
    ev = inspect(opened.root, opened.manifest, SPEC)
    pinned = ev.pinned
    return dataclasses.replace(
        ev, rebuilt_from_pin=rebuilt_from_pin(opened.manifest, pinned, rebuilt)
    )


def _ids(opened: Intake) -> set[str]:
    return {f.check_id for f in opened.findings if f.is_error}


@pytest.fixture(scope="module")
def honest(tmp_path_factory: pytest.TempPathFactory) -> Intake:
    """examples/tiny-vllm declaring an fp8 KV cache: podium's launcher on the pinned vLLM."""
    return _bundle(
        tmp_path_factory.mktemp("honest"), toml=(("[engine.config]\n", "[engine.config]" + KV),)
    )


@pytest.mark.quiet("engine.not-vllm")
def test_podiums_launcher_on_the_pinned_vllm_rebuilt_by_the_verifier_confirms_the_kv_cache(
    honest: Intake,
) -> None:
    assert "engine.not-vllm" not in _ids(honest)
    ev = _evidence(honest, rebuilt=BASE_ID)
    assert ev.base_is_pinned and ev.starts_vllm and ev.foreign == (), ev.foreign
    assert ev.serve_args is not None and "--kv-cache-dtype" in ev.serve_args
    assert honest.manifest is not None
    confirmed, unconfirmed = confirmed_levers(ev, honest.manifest.engine.config)
    assert confirmed == {"KV_CACHE_DTYPE": "fp8"} and unconfirmed == {}


def test_without_the_verifiers_own_rebuild_from_the_pin_nothing_is_confirmed(
    honest: Intake,
) -> None:
    """A runner that builds nothing (a process), or a rebuild from another image: the
    same bundle buys nothing, whatever the engine would log."""
    assert honest.manifest is not None
    config = honest.manifest.engine.config
    for rebuilt in (None, "sha256:" + "b" * 64):
        confirmed, unconfirmed = confirmed_levers(_evidence(honest, rebuilt), config)
        assert confirmed == {}
        assert "did not rebuild" in unconfirmed["KV_CACHE_DTYPE"]


def test_a_plain_vllm_entry_declares_nothing_to_confirm(tmp_path: Path) -> None:
    opened = _bundle(tmp_path)
    assert opened.manifest is not None
    assert confirmed_levers(_evidence(opened, BASE_ID), opened.manifest.engine.config) == ({}, {})


@pytest.mark.fires("engine.not-vllm")
def test_a_vllm_entry_running_the_baseline_engine_is_rejected_at_intake(tmp_path: Path) -> None:
    """The forged entry: kind = "vllm" on podium's engine base, starting the baseline."""
    opened = _bundle(
        tmp_path,
        "tiny-baseline",
        toml=(
            ('kind = "baseline"', 'kind = "vllm"'),
            ("[engine.config]\n", "[engine.config]" + KV),
        ),
    )
    found = [f for f in opened.findings if f.check_id == "engine.not-vllm"]
    assert len(found) == 2, [f.one_line() for f in opened.findings]
    assert "podium/engine-base:bookworm" in found[0].message
    assert "engines.baseline" in found[1].message
    assert not opened.ok


def test_a_launcher_that_is_not_podiums_confirms_nothing_though_it_looks_like_vllm(
    tmp_path: Path,
) -> None:
    """The same name, another program: ``engines.vllm_launcher`` whose ``__main__`` starts
    the baseline engine. Nothing the verifier can see says it is not vLLM, so no finding;
    but the launcher is not podium's byte for byte, so no lever is confirmed."""
    forged = "import runpy\nrunpy.run_module('engines.baseline', run_name='__main__')\n"
    opened = _bundle(
        tmp_path, toml=(("[engine.config]\n", "[engine.config]" + KV),), launcher=forged
    )
    assert "engine.not-vllm" not in _ids(opened)
    ev = _evidence(opened, BASE_ID)
    assert any("__main__.py: differs from podium's" in f for f in ev.foreign), ev.foreign
    assert opened.manifest is not None
    confirmed, unconfirmed = confirmed_levers(ev, opened.manifest.engine.config)
    assert confirmed == {} and "not podium's launcher alone" in unconfirmed["KV_CACHE_DTYPE"]


@pytest.mark.parametrize(
    ("dockerfile", "toml", "named"),
    [
        ((("EXPOSE 8000", "RUN pip install vllm-patched\nEXPOSE 8000"),), (), "RUN"),
        ((("ENV PYTHONPATH=/submission/engine", "ENV PYTHONPATH=/tmp"),), (), "PYTHONPATH"),
        ((), (("[engine.env]\n", '[engine.env]\nLD_PRELOAD = "/tmp/x.so"\n'),), "LD_PRELOAD"),
        (
            (("COPY engine-config.json", "COPY README.md /x\nCOPY engine-config.json"),),
            (),
            "README",
        ),
        (
            (("COPY engine-config.json /submission/", "COPY engine-config.json /opt/venv/x.pth"),),
            (),
            "outside /submission",
        ),
        (
            (
                (
                    '"/submission/engine-config.json"]',
                    '"/submission/engine-config.json", "--vllm", "sh"]',
                ),
            ),
            (),
            "not python3 -m engines.vllm_launcher CONFIG alone",
        ),
    ],
)
def test_anything_added_to_the_pinned_image_confirms_nothing(
    tmp_path: Path,
    dockerfile: tuple[tuple[str, str], ...],
    toml: tuple[tuple[str, str], ...],
    named: str,
) -> None:
    opened = _bundle(
        tmp_path, toml=(*toml, ("[engine.config]\n", "[engine.config]" + KV)), dockerfile=dockerfile
    )
    ev = _evidence(opened, BASE_ID)
    assert any(named in f for f in ev.foreign), ev.foreign
    assert unconfirmed_because(ev) is not None
    assert opened.manifest is not None
    assert confirmed_levers(ev, opened.manifest.engine.config)[0] == {}


def test_a_base_that_is_not_the_pinned_vllm_is_a_finding_whatever_it_holds() -> None:
    ev = VllmImage(
        base_ref="vllm/vllm-openai:v0.33.0",
        pinned=("podium/vllm-cpu:0.32.0",),
        base_is_pinned=False,
        command=("python3", "-m", "engines.vllm_launcher", "/submission/engine-config.json"),
        starts_vllm=True,
    )
    (finding,) = not_vllm(ev)
    assert "none of the challenge's pinned vLLM images" in finding.message
    assert confirmed_levers(ev, {"KV_CACHE_DTYPE": "fp8"})[0] == {}


def test_the_declared_model_records_why_a_lever_bought_nothing(honest: Intake) -> None:
    assert honest.manifest is not None
    config = honest.manifest.engine.config
    confirmed, unconfirmed = confirmed_levers(_evidence(honest, None), config)
    model = dataclasses.replace(
        declared_model(config, "float32", "budget", "vllm"),
        in_effect=confirmed,
        unconfirmed=unconfirmed,
    )
    assert not model.kv_cache_in_effect()
    assert set(model.to_dict()["unconfirmed"]) == {"KV_CACHE_DTYPE"}
