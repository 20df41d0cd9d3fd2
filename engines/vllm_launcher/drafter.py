"""The launcher's copy of an MTP drafter checkpoint, for settings vLLM reads from its config.

vLLM's Gemma 4 MTP drafter takes ``centroid_intermediate_top_k`` from the drafter's own
config.json (``getattr(config, "centroid_intermediate_top_k", 32)`` in
``vllm/model_executor/models/gemma4_mtp.py``); ``--speculative-config`` refuses unknown
fields, and dict ``--hf-overrides`` reach only the target model. The verifier mounts the
pinned drafter read-only, so the launcher serves a copy in a writable folder: every file
a symbolic link to the pinned one, config.json rewritten with the settings. The weights
are the pinned bytes; only the config differs, and the launcher logs the difference.

Standard library only (it runs inside the vLLM image).
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

from engines.vllm_launcher.args import ConfigError, DrafterCopy

CONFIG = "config.json"


def write_drafter_copy(copy: DrafterCopy) -> dict[str, object]:
    """Write ``copy.dest`` and return the config keys it changed ({key: [old, new]})."""
    source, dest = Path(copy.source), Path(copy.dest)
    try:
        original = json.loads((source / CONFIG).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ConfigError("CENTROID_TOP_K", f"cannot read the drafter's {CONFIG}: {exc}") from exc
    if not isinstance(original, dict):
        raise ConfigError("CENTROID_TOP_K", f"the drafter's {CONFIG} is not a JSON object")
    if dest.exists():
        shutil.rmtree(dest)
    dest.mkdir(parents=True)
    for entry in sorted(source.iterdir()):
        if entry.name != CONFIG:
            os.symlink(entry.resolve(), dest / entry.name)
    changed: dict[str, object] = {
        k: [original.get(k), v] for k, v in copy.config.items() if original.get(k) != v
    }
    (dest / CONFIG).write_text(
        json.dumps({**original, **copy.config}, indent=2, sort_keys=True) + "\n", encoding="utf-8"
    )
    return changed
