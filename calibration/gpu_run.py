"""One GPU calibration run: the row's bundle packaged as a participant without Docker
packages it, then ``podium verify BUNDLE --runner process`` (or ``--runner jail --key K``)
on the GPU variant of tiny in a process of its own, summarised in
``calibration.summary``'s row format and judged (``run_ok``)."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from bench.common import REPO_ROOT
from calibration import tiny_spec
from calibration.rows import Row
from calibration.run_row import cheat_stats, make_source
from calibration.summary import summarise

ZERO_DIGEST = "sha256:" + "0" * 64


def gpu_spec(where: Path) -> Path:
    """The tiny spec with this machine's GPU as its hardware and the reference on cuda."""
    import torch

    spec = tiny_spec()
    spec["title"] = "Tiny Gemma (GPU variant, calibration.gpu_verify)"
    spec["hardware"] = {
        "accelerator": "gpu",
        "gpu_name": torch.cuda.get_device_name(0),
        "gpu_count": 1,
    }
    spec["reference"] = {**spec["reference"], "device": "cuda", "dtype": "float32"}
    path = where / "tiny-gpu.json"
    path.write_text(json.dumps(spec, indent=1), encoding="utf-8")
    return path


def _podium(*args: str, timeout: float) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "podium.cli.app", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=REPO_ROOT,
    )


def package_row(row: Row, spec: Path, where: Path) -> Path:
    """The row's bundle, packaged as a participant would on a machine with no Docker."""
    src = make_source(row, where)
    toml = (src / "podium.toml").read_text(encoding="utf-8")
    toml = toml.replace('DEVICE = "cpu"', 'DEVICE = "cuda"')
    env = {"ENGINE_CLASS": row.engine, **row.env}
    lines = "".join(f"{k} = {json.dumps(v)}\n" for k, v in env.items())
    toml = toml.replace("[engine.env]\n", "[engine.env]\n" + lines, 1)
    (src / "podium.toml").write_text(toml, encoding="utf-8")
    dist = where / "dist"
    done = _podium(
        "submission",
        "package",
        str(src),
        "-o",
        str(dist),
        "--challenge",
        str(spec),
        "--base-digest",
        ZERO_DIGEST,
        "--no-build",
        "--force",
        "--json",
        timeout=300,
    )
    bundles = sorted(dist.glob("*.tar.gz"))
    if done.returncode != 0 or not bundles:
        said = done.stdout[-800:] + done.stderr[-800:]
        raise RuntimeError(f"{row.name}: packaging failed: {said}")
    return bundles[0]


def verify_once(
    row: Row, run: int, spec: Path, where: Path, *, runner: str = "process", key: Path | None = None
) -> dict[str, Any]:
    """One ``podium verify --runner RUNNER`` of the row (``jail``: signed with ``key``, on
    the held-out set); its summary and its stages."""
    bundle = package_row(row, spec, where)
    out = where / "out"
    t0 = time.perf_counter()
    signing = ["--key", str(key)] if key is not None else []
    done = _podium(
        "verify",
        str(bundle),
        "--runner",
        runner,
        *signing,
        "--challenge",
        str(spec),
        "-o",
        str(out),
        "--json",
        timeout=900,
    )
    wall_s = time.perf_counter() - t0
    report_path = out / "report.json"
    if not report_path.is_file():
        raise RuntimeError(f"{row.name}: no report (exit {done.returncode}): {done.stderr[-800:]}")
    from verifier.report import full_document

    report = full_document(report_path)  # the organizer's evidence: every value in full
    log = out / "engine.log"
    text = log.read_text(encoding="utf-8", errors="replace") if log.is_file() else ""
    quality = json.loads(spec.read_text())["quality"]
    model_ppl = float(quality["reference_ppl"])
    cap = model_ppl * float(quality["max_ratio"])
    summary = summarise(
        row, report, model_ppl=model_ppl, cap=cap, stats=cheat_stats(text), log=text
    )
    failing = [
        {"id": c["id"], "status": c["status"], "summary": c["summary"]}
        for c in report.get("checks", [])
        if c.get("status") in ("fail", "error")
    ]
    self_test = next(
        (c for c in report.get("checks", []) if c.get("id") == "reference.self-test"), None
    )
    attention = [line for line in text.splitlines() if line.startswith("attention self-test")]
    result = {
        **summary,
        "run": run,
        "exit_code": done.returncode,
        "podium_verify_s": round(wall_s, 2),
        "stages": {s["name"]: s["seconds"] for s in report.get("stages", [])},
        "failing_checks": failing,
        "reference_self_test": (self_test or {}).get("details"),
        "engine_attention": attention[-1] if attention else None,
        "runner": runner,
        "signed": bool(report.get("signature")),
    }
    return {**result, "ok": run_ok(result, cap)}


def run_ok(result: dict[str, Any], cap: float) -> bool:
    """A cheat is REJECTED; an honest run has no failing check and no failure, except an
    honest approximation whose PPL is over the cap, which ``ppl.cap`` alone must reject. A
    replaying cheat on a stream that never repeats a prompt had nothing to replay: it
    computed every token, so it is judged as an honest engine
    (``calibration.summary.expectation``). Judged on a run's stored summary, so that
    ``--merge`` judges runs of earlier calls by the same rule."""
    failing = [f["id"] for f in result.get("failing_checks") or []]
    if result["kind"] == "cheat" and not (result.get("replays") and result.get("no_repeat")):
        return bool(result["verdict"] == "REJECTED")
    if result.get("runner") == "jail" and result["kind"] == "honest":
        # a sandbox on the spec's GPU: an honest entry within the cap is VERIFIED and signed
        within = result.get("ppl") is None or result["ppl"] <= cap
        if within:
            return result["verdict"] == "VERIFIED" and bool(result.get("signed")) and not failing
    if result.get("ppl") is not None and result["ppl"] > cap:
        return result["verdict"] == "REJECTED" and failing == ["ppl.cap"]
    if (result.get("decode_ratio") or 0.0) > float(tiny_spec()["quality"]["max_ratio"]):
        # a model over the cap, judged on the public set (the process runner never times the
        # held-out one), whose PPL the spec's held-out cap does not reach: its decode is
        # still the reference's to reject
        over = {"ppl.cap", "integrity.reference-decode"}
        return result["verdict"] == "REJECTED" and bool(failing) and set(failing) <= over
    return result.get("failure") is None and not failing and result["verdict"] != "REJECTED"


def tiny_cap() -> float:
    quality = tiny_spec()["quality"]
    return float(quality["reference_ppl"]) * float(quality["max_ratio"])
