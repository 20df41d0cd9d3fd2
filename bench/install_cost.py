"""What each role's install costs: its size and its time into a fresh venv, and whether it runs.

``python -m bench.install_cost [--roles core,participant,...] [--find-links DIR]`` makes one
fresh venv per role (``uv venv``), installs this checkout with the role's line from the
README into it (``uv pip install '.[organizer]'``, cold: a cache of its own that starts
empty), and then runs the role's own commands with that venv's Python, outside the
checkout (so the checkout's source cannot stand in for what the venv lacks). Roles that
carry torch get the CPU build pinned (``--torch``): on a CPU challenge a role needs nothing
else, and the wheel comes from ``--find-links`` (default ``$PIP_FIND_LINKS``) when a
local folder holds it. Each role's result: seconds to install, the venv's size on disk,
the number of distributions, whether torch came with it, and each smoke command's exit code.

The smoke commands are each role's import path, the lazy imports included: the participant
validates and packages an entry with no Docker build; the organizer imports every module
of ``verifier`` and asks a closed port for an engine's ``/version`` (the runtime stage's
HTTP client, loaded only then); the viewer imports the Parquet export.
Writes ``bench/results/install_cost.json``.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.common import REPO_ROOT, RESULTS_DIR, machine, write_result

#: each role: the extras of its README line, and whether its line pins the CPU torch
ROLES: dict[str, tuple[str, bool]] = {
    "core": ("", False),
    "participant": ("participant", False),
    "selfcheck": ("participant,engine", True),
    "organizer": ("organizer", True),
    "viewer": ("viewer", False),
}

ENTRY = REPO_ROOT / "examples" / "tiny-baseline"
ZERO = "sha256:" + "a" * 64
ORGANIZER_IMPORTS = (
    "import importlib, pkgutil, verifier\n"
    "for m in pkgutil.walk_packages(verifier.__path__, 'verifier.'):\n"
    "    importlib.import_module(m.name)\n"
    "from verifier.harness.engine_runtime import observe\n"
    "o = observe('http://127.0.0.1:9', '', timeout_s=2)\n"
    "assert o.version is None and o.errors, o\n"
    "print('organizer imports ok:', sorted(o.errors))\n"
)


def smoke(role: str, python: Path, work: Path) -> list[list[str]]:
    """The commands that prove a role's install runs its role's path."""
    podium = [str(python), "-m", "podium.cli.app"]
    base = [[*podium, "--version"], [*podium, "submission", "validate", str(ENTRY)]]
    if role in ("participant", "selfcheck"):
        base.append(
            [*podium, "submission", "package", str(ENTRY), "-o", str(work / "dist"),
             "--no-build", "--base-digest", ZERO, "--force"]
        )  # fmt: skip
    if role == "selfcheck":
        base.append([str(python), "-c", "import torch, transformers; print(torch.__version__)"])
    if role == "organizer":
        base.append([str(python), "-c", ORGANIZER_IMPORTS])
    if role == "viewer":
        base.append([str(python), "-c", "import pyarrow.parquet, leaderboard.views.export"])
    return base


def _size(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file() and not p.is_symlink())


def _uv() -> str:
    found = shutil.which("uv") or str(Path(sys.executable).with_name("uv"))
    if not Path(found).exists():
        raise SystemExit("bench.install_cost needs uv (the dev extra installs it)")
    return found


def install(role: str, work: Path, torch: str, find_links: str | None) -> dict[str, Any]:
    extras, pins_torch = ROLES[role]
    venv, cache = work / "venv", work / "cache"
    uv = _uv()
    env = {**os.environ, "UV_CACHE_DIR": str(cache)}
    env.setdefault("SSL_CERT_FILE", "/etc/ssl/certs/ca-certificates.crt")
    subprocess.run([uv, "venv", "-q", "-p", sys.executable, str(venv)], check=True, env=env)
    python = venv / "bin" / "python"
    target = f"{REPO_ROOT}[{extras}]" if extras else str(REPO_ROOT)
    cmd = [uv, "pip", "install", "-q", "--python", str(python), target]
    if pins_torch:
        cmd.append(torch)
    if find_links:
        cmd += ["--find-links", find_links]
    start = time.monotonic()
    done = subprocess.run(cmd, capture_output=True, text=True, env=env, check=False)
    seconds = round(time.monotonic() - start, 1)
    result: dict[str, Any] = {
        "line": f"pip install '.[{extras}]'" if extras else "pip install .",
        "torch_pin": torch if pins_torch else None,
        "install_s": seconds,
        "exit": done.returncode,
    }
    if done.returncode != 0:
        result["error"] = done.stderr.strip().splitlines()[-3:]
        return result
    frozen = subprocess.run(
        [uv, "pip", "freeze", "--python", str(python)], capture_output=True, text=True, env=env
    ).stdout.splitlines()
    result.update(
        size_mb=round(_size(venv) / 1e6, 1),
        distributions=len(frozen),
        torch=next((x for x in frozen if x.lower().startswith("torch==")), None),
        nvidia_wheels=sum(x.lower().startswith("nvidia-") for x in frozen),
    )
    runs = []
    for command in smoke(role, python, work):
        ran = subprocess.run(
            command, cwd=work, capture_output=True, text=True, env=env, check=False, timeout=300
        )
        runs.append(
            {
                "command": " ".join(Path(command[0]).name if i == 0 else a
                                    for i, a in enumerate(command))[:160],
                "exit": ran.returncode,
                "tail": (ran.stdout + ran.stderr).strip().splitlines()[-1:],
            }
        )  # fmt: skip
    result["smoke"] = runs
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.install_cost", description=__doc__)
    parser.add_argument("--roles", default=",".join(ROLES), help="comma-separated, of: "
                        + ", ".join(ROLES))  # fmt: skip
    parser.add_argument("--torch", default="torch==2.13.0+cpu", help="the torch pin")
    parser.add_argument("--find-links", default=os.environ.get("PIP_FIND_LINKS") or None)
    parser.add_argument("--out", type=Path, default=RESULTS_DIR)
    args = parser.parse_args(argv)
    roles = [r for r in args.roles.split(",") if r]
    unknown = [r for r in roles if r not in ROLES]
    if unknown:
        parser.error(f"unknown role(s) {unknown}; known: {list(ROLES)}")
    where = machine()  # before the installs: the commit and tree they install
    results: dict[str, Any] = {}
    for role in roles:
        with tempfile.TemporaryDirectory(prefix=f"podium-install-{role}-") as tmp:
            results[role] = install(role, Path(tmp), args.torch, args.find_links)
        print(role, {k: v for k, v in results[role].items() if k != "smoke"}, flush=True)
        for run in results[role].get("smoke", []):
            print("   ", run["exit"], run["command"], flush=True)
    data = {
        "machine": where,
        "command": "python -m bench.install_cost " + " ".join(argv or sys.argv[1:]),
        "installer": "uv pip install (cold cache, a fresh venv each role)",
        "roles": results,
    }
    path = write_result("install_cost", data, args.out)
    print(f"wrote {path}")
    failed = [
        r for r, x in results.items()
        if x["exit"] != 0 or any(s["exit"] != 0 for s in x.get("smoke", []))
    ]  # fmt: skip
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
