"""Doubles that break instead of cheating: the sandbox (``integrity.isolation``) and a run
that cannot finish (verdict FAILED, no check id).

- ``Escape``: tries to reach the network and read held-out files; the sandbox stops it and
  the verdict is unaffected (``integrity.isolation``).
- ``Crash``: exits mid-run (verdict FAILED).
- ``Hang``: stops answering mid-run (verdict FAILED).

``ADVERSARY_AFTER`` says how many generation requests ``Crash`` and ``Hang`` serve
honestly before misbehaving; ``ADVERSARY_PATHS`` adds places for ``Escape`` to look.
"""

from __future__ import annotations

import json
import os
import socket
import sys
import threading
import time
from pathlib import Path
from typing import Any

from engines.baseline.generation import Generation
from engines.baseline.model import BaselineEngine
from engines.baseline.protocol import SamplingParams


def _after() -> int:
    return int(os.environ.get("ADVERSARY_AFTER", "8"))


def _attempts() -> dict[str, Any]:
    """Try to get out and to find held-out data; report every outcome."""
    out: dict[str, Any] = {"connect": {}, "dns": None, "files": {}}
    for host, port in (("1.1.1.1", 53), ("8.8.8.8", 443), ("172.17.0.1", 80)):
        s = socket.socket()
        s.settimeout(2)
        try:
            s.connect((host, port))
            out["connect"][f"{host}:{port}"] = "connected"
        except OSError as exc:
            out["connect"][f"{host}:{port}"] = f"{type(exc).__name__}: {exc}"[:120]
        finally:
            s.close()
    try:
        socket.getaddrinfo("huggingface.co", 443)
        out["dns"] = "resolved"
    except OSError as exc:
        out["dns"] = f"{type(exc).__name__}"
    candidates = [
        Path("/heldout"),
        Path("/data"),
        Path("/root"),
        Path("/home"),
        Path("/mnt"),
        Path("/srv"),
        Path("/host"),
    ]
    for extra in os.environ.get("ADVERSARY_PATHS", "").split(":"):
        if extra:
            candidates.append(Path(extra))
    found = []
    for base in candidates:
        if base.exists():
            found += [str(p) for p in base.rglob("*.jsonl")][:20]
        out["files"][str(base)] = base.exists()
    out["jsonl_found"] = found
    return out


class Escape(BaselineEngine):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        print("PODIUM-ATTEMPTS " + json.dumps(_attempts(), sort_keys=True), flush=True)


class _Countdown(BaselineEngine):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._served = 0
        self._lock = threading.Lock()

    def start(
        self, prompt_ids: list[int], sampling: SamplingParams, prompt_logprobs: int | None
    ) -> Generation:
        with self._lock:
            self._served += 1
            n = self._served
        if prompt_logprobs is None and n > _after():
            self.misbehave()
        return super().start(prompt_ids, sampling, prompt_logprobs)

    def misbehave(self) -> None:
        raise NotImplementedError


class Crash(_Countdown):
    def misbehave(self) -> None:
        print("adversary: crashing now", file=sys.stderr, flush=True)
        os._exit(17)


class Hang(_Countdown):
    def misbehave(self) -> None:
        print("adversary: hanging now", file=sys.stderr, flush=True)
        while True:
            time.sleep(3600)
