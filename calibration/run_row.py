"""Running one calibration row: its bundle (the example with the row's knobs), packaged
and verified by ``verifier.pipeline.verify`` with a process runner that reports itself as
a verifying sandbox (``tests/doubles/sandbox.py``) or, for a vLLM row, the Docker sandbox.
"""

from __future__ import annotations

import json
import os
import shutil
import tarfile
import time
from pathlib import Path
from typing import Any

from bench.common import REPO_ROOT
from calibration.rows import Row, doubles


def _toml_value(value: Any) -> str:
    return json.dumps(value) if isinstance(value, str) else str(value)


def make_source(row: Row, where: Path) -> Path:
    """The row's example with the row's knobs in its config; ``tiny-baseline`` also gets
    podium's baseline engine and the test doubles (the cheats among them)."""
    src = where / "src"
    shutil.copytree(
        REPO_ROOT / "examples" / row.example,
        src,
        ignore=shutil.ignore_patterns("manifest.json", "engine-config.json"),
    )
    if not row.vllm:
        doubles.carry(src / "engine")
    toml = (src / "podium.toml").read_text(encoding="utf-8")
    if row.engine_kind is not None:
        toml = toml.replace('kind = "baseline"', f'kind = "{row.engine_kind}"', 1)
    config = dict(row.config)
    if "DTYPE" in config:
        toml = toml.replace('DTYPE = "float32"\n', "")
    lines = "".join(f"{k} = {_toml_value(v)}\n" for k, v in config.items())
    toml = toml.replace("[engine.config]\n", "[engine.config]\n" + lines, 1)
    (src / "podium.toml").write_text(toml, encoding="utf-8")
    return src


def verify_row(row: Row, where: Path) -> dict[str, Any]:
    """Package the row's bundle and verify it; the report and the wall time."""
    from doubles.sandbox import VerifyingSandbox

    from schemas.challenge import load_challenge
    from submission.bundle import package
    from verifier.pipeline import VerifyRequest, verify
    from verifier.runners.reference_engine import reference_runner

    src = make_source(row, where)
    # a machine without Docker (a GPU host) names the base image's digest itself
    digest = os.environ.get("PODIUM_BASE_DIGEST") or None
    packaged = package(src, where / "dist", build=False, base_digest=digest)
    if packaged.bundle is None:
        raise RuntimeError(f"{row.name}: {[f.one_line() for f in packaged.findings]}")
    frozen = where / "engine-config.json"
    frozen.write_bytes(bundle_member(packaged.bundle.path, "engine-config.json"))
    env = {
        "ENGINE_CLASS": row.engine,
        "ENGINE_CONFIG": str(frozen),  # the engine reads the frozen config, as in its image
        "OMP_NUM_THREADS": "1",
        **row.env,
    }
    from verifier.runners.local_docker import LocalDockerRunner

    runner: Any = LocalDockerRunner() if row.vllm else VerifyingSandbox(env=env)
    t0 = time.perf_counter()
    outcome = verify(
        VerifyRequest(
            packaged.bundle.path,
            load_challenge("tiny"),
            runner,
            where / "out",
            reference=reference_runner,
        )
    )
    wall_s = time.perf_counter() - t0
    log = where / "out" / "engine.log"
    text = log.read_text(encoding="utf-8", errors="replace") if log.is_file() else ""
    # the organizer's evidence: every check's details at full precision (the report has none)
    report = outcome.evidence or outcome.report
    return {"report": report, "wall_s": wall_s, "stats": cheat_stats(text), "log": text}


def cheat_stats(log: str) -> dict[str, int] | None:
    """The last ``CHEAT-STATS`` line of an engine log: what a replaying cheat really did."""
    lines = [x for x in log.splitlines() if x.startswith("CHEAT-STATS ")]
    if not lines:
        return None
    stats: dict[str, int] = json.loads(lines[-1].split(" ", 1)[1])
    return stats


def bundle_member(bundle: Path, name: str) -> bytes:
    """A file of the bundle, as the verifier's intake unpacks it."""
    with tarfile.open(bundle) as tar:
        for member in tar.getmembers():
            if member.isfile() and Path(member.name).name == name:
                fh = tar.extractfile(member)
                if fh is not None:
                    return fh.read()
    raise RuntimeError(f"{bundle} carries no {name}")
