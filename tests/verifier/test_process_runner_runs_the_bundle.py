"""The process runner serves the bundle's code and nothing else, in an environment of its own.

The test bundle announces itself: its copy of ``engines/baseline`` is modified (every
``usage`` it reports says ``"copy": "bundle"``) and its ``[engine.env]`` names an
``ENGINE_CLASS`` of its own module, which adds to the ``usage`` the engine's whole
environment and working directory. The engine is started through ``ProcessRunner``
while the verifier runs in a podium checkout (the working directory that once shadowed
the bundle's ``engines``) with a marker, a signing key, a Hub token and the operator's
own engine knobs in its environment; and again from an installed wheel of podium, where
the reference (``ProcessReference``, as a GPU reference runs) must serve the installed
copy, not the checkout's, with none of the operator's knobs as its defaults.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import urllib.request
import zipfile
from pathlib import Path
from typing import Any

import pytest
from entry_bundle import REPO, entry_source, packaged

from schemas.challenge import load_challenge
from verifier.harness.client import wait_ready
from verifier.intake import intake
from verifier.runners.process import ProcessRunner, engine_command, engine_environment

MODEL = REPO / "podium" / "data" / "tiny" / "model"
SPEC = load_challenge("tiny")

#: appended to a copy of engines/baseline/model.py: every usage says which copy it is
MARK = """

_unmarked_usage = BaselineEngine.report_usage


def _marked_usage(self, prompt_ids, output_ids):
    return {{**_unmarked_usage(self, prompt_ids, output_ids), "copy": "{copy}"}}


BaselineEngine.report_usage = _marked_usage
"""

ANNOUNCING = '''"""The bundle's own engine class: it reports where it runs and what it was given."""

import os

from engines.baseline.model import BaselineEngine


class Announcing(BaselineEngine):
    def report_usage(self, prompt_ids, output_ids):
        usage = super().report_usage(prompt_ids, output_ids)
        return {**usage, "engine_class": "announce:Announcing", "environ": dict(os.environ),
                "cwd": os.getcwd(), "device": str(self.device)}
'''

#: what the operator's shell holds, none of which may reach the engine
OPERATOR = {
    "PODIUM_TEST_MARKER": "operator-marker-7f3a",
    "PODIUM_SIGNING_KEY": "-----BEGIN PRIVATE KEY-----\nnot-a-real-key\n",
    "HF_TOKEN": "hf_operator_token_7f3a",
    "QUANTIZATION": "int4",
    "ATTENTION": "no-such-attention",
    "MAX_MODEL_LEN": "98765",
    "ENGINE_CLASS": "nowhere:Nothing",
}


def announcing_bundle(tmp_path: Path, device: str = "cpu") -> Path:
    src = entry_source(
        tmp_path,
        env={"ENGINE_CLASS": "announce:Announcing"},
        files={"engine/announce.py": ANNOUNCING},
    )
    toml = (src / "podium.toml").read_text(encoding="utf-8")
    (src / "podium.toml").write_text(toml.replace('DEVICE = "cpu"', f'DEVICE = "{device}"'))
    model = src / "engine" / "engines" / "baseline" / "model.py"
    model.write_text(model.read_text(encoding="utf-8") + MARK.format(copy="bundle"))
    return packaged(src)


def usage_at(url: str) -> dict[str, Any]:
    body = json.dumps(
        {
            "messages": [{"role": "user", "content": "Hello"}],
            "max_tokens": 1,
            "temperature": 0,
        }
    ).encode()
    request = urllib.request.Request(
        f"{url}/v1/chat/completions", body, {"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=120) as response:
        usage: dict[str, Any] = json.loads(response.read())["usage"]
    return usage


def served_usage(runner: ProcessRunner, *, gpu: bool = False) -> dict[str, Any]:
    handle = runner.start(SPEC, model_dir=MODEL, gpu=gpu)
    try:
        try:
            asyncio.run(wait_ready(handle.base_url, 120.0, handle.is_alive))
        except Exception as exc:
            raise AssertionError(f"the engine did not start: {handle.logs(3000)}") from exc
        return usage_at(handle.base_url)
    finally:
        handle.stop()
        runner.cleanup()


def check_announced(usage: dict[str, Any]) -> None:
    """The bundle's modified baseline and its own class served, with none of the operator's
    environment and in a directory that is not where the verifier runs."""
    assert usage["copy"] == "bundle", usage
    assert usage["engine_class"] == "announce:Announcing", usage
    environ: dict[str, str] = usage["environ"]
    for name, value in OPERATOR.items():
        if name != "ENGINE_CLASS":  # the bundle declares its own
            assert name not in environ, (name, environ)
        assert value not in json.dumps(environ), (name, environ)
    assert "PODIUM_CHALLENGE" not in environ and "USER" not in environ, environ
    assert environ["ENGINE_CLASS"] == "announce:Announcing"
    assert environ["OMP_NUM_THREADS"] == "1"  # the bundle's declared [engine.env]
    assert Path(usage["cwd"]).resolve() != REPO.resolve()
    assert Path(environ["HOME"]).resolve() == Path(usage["cwd"]).resolve()


def test_the_engines_environment_is_an_allowlist(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name, value in OPERATOR.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(["relative/dir", "/opt/libs"]))
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "1")
    code = tmp_path / "engine"
    env = engine_environment(
        {"ENGINE_CLASS": "announce:Announcing", "HOME": "/root", "PATH": "/evil"},
        code=code,
        home=tmp_path / "home",
    )
    assert env["PYTHONPATH"] == os.pathsep.join([str(code), "/opt/libs"])
    assert env["HOME"] == str(tmp_path / "home") and (tmp_path / "home" / "tmp").is_dir()
    assert env["PATH"].split(os.pathsep)[0] == str(Path(sys.executable).parent)
    assert env["ENGINE_CLASS"] == "announce:Announcing" and env["CUDA_VISIBLE_DEVICES"] == "1"
    assert not {"PODIUM_TEST_MARKER", "PODIUM_SIGNING_KEY", "HF_TOKEN", "QUANTIZATION"} & set(env)
    assert engine_command()[1:] == ["-P", "-m", "engines.baseline"]


@pytest.mark.slow
def test_from_a_podium_checkout_the_bundles_own_code_serves_with_none_of_the_operators_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bundle = announcing_bundle(tmp_path)
    for name, value in OPERATOR.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("PYTHONPATH", str(REPO))
    monkeypatch.chdir(REPO)  # a checkout of podium, its own engines/ right here
    taken = intake(bundle, tmp_path / "work", SPEC)
    runner = ProcessRunner()
    runner.prepare(taken, SPEC, on_log=lambda line: None)
    check_announced(served_usage(runner))


WHEEL_SCRIPT = """
import json, sys
from pathlib import Path

import verifier
from schemas.challenge import load_challenge
from verifier.intake import intake
from verifier.runners.process import ProcessRunner
from verifier.runners.reference_engine import ProcessReference

sys.path.insert(0, sys.argv[3])
from test_process_runner_runs_the_bundle import served_usage

spec = load_challenge("tiny")
bundled = ProcessRunner()
bundled.prepare(intake(Path(sys.argv[1]), Path(sys.argv[2]), spec), spec, on_log=print)
reference = ProcessReference(env={}, device="cpu", dtype="float32")  # as a GPU one runs
print(json.dumps({"verifier": verifier.__file__, "bundle": served_usage(bundled),
                  "reference": served_usage(reference)}))
"""


@pytest.mark.slow
def test_from_an_installed_wheel_the_bundle_serves_its_code_and_the_reference_the_installed_copy(
    tmp_path: Path,
) -> None:
    from uv import find_uv_bin

    bundle = announcing_bundle(tmp_path)
    build = [find_uv_bin(), "build", "--wheel", "--out-dir", str(tmp_path / "dist"), str(REPO)]
    done = subprocess.run(build, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    (wheel,) = (tmp_path / "dist").glob("podium-*.whl")
    site = tmp_path / "site"  # the wheel installed (a pure wheel: its files, unpacked)
    zipfile.ZipFile(wheel).extractall(site)
    installed = site / "engines" / "baseline" / "model.py"
    installed.write_text(installed.read_text(encoding="utf-8") + MARK.format(copy="installed"))
    env = {**os.environ, **OPERATOR, "PYTHONPATH": str(site)}
    script = [sys.executable, "-P", "-c", WHEEL_SCRIPT, str(bundle), str(tmp_path / "work")]
    script.append(str(Path(__file__).parent))
    done = subprocess.run(
        script, cwd=REPO, env=env, capture_output=True, text=True, timeout=600, check=False
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    found = json.loads(done.stdout.splitlines()[-1])
    assert Path(found["verifier"]).is_relative_to(site), found["verifier"]
    check_announced(found["bundle"])
    # the reference ran podium's installed copy, and none of the operator's knobs
    # (QUANTIZATION=int4, ATTENTION=no-such-attention, ENGINE_CLASS=nowhere:Nothing ...)
    # became its defaults: it would not have started with them
    assert found["reference"]["copy"] == "installed", found["reference"]


@pytest.mark.gpu
def test_on_the_gpu_the_bundles_own_engine_serves_from_a_checkout(
    cuda: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, gpu_out: Path
) -> None:
    """The GPU row: the same bundle, its frozen DEVICE cuda, started from the checkout."""
    bundle = announcing_bundle(tmp_path, device="cuda")
    for name, value in OPERATOR.items():
        monkeypatch.setenv(name, value)
    monkeypatch.chdir(REPO)
    taken = intake(bundle, tmp_path / "work", SPEC)
    runner = ProcessRunner()
    runner.prepare(taken, SPEC, on_log=lambda line: None)
    usage = served_usage(runner, gpu=True)
    row = {k: v for k, v in usage.items() if k != "environ"}
    row["environ_names"] = sorted(usage["environ"])
    row["gpu"] = cuda.cuda.get_device_name(0)
    (gpu_out / "gpu_bundle_row.json").write_text(json.dumps(row, indent=1) + "\n")
    check_announced(usage)
    assert usage["device"].startswith("cuda"), usage["device"]
