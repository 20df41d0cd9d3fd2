"""The toolkit's version and the commit it runs from, for manifests and reports."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import podium


def toolkit_git_sha() -> str | None:
    """The toolkit's commit: ``PODIUM_GIT_SHA``, else the checkout podium runs from."""
    if os.environ.get("PODIUM_GIT_SHA"):
        return os.environ["PODIUM_GIT_SHA"]
    root = Path(podium.__file__).resolve().parent.parent
    if not (root / ".git").exists():
        return None
    try:
        out = subprocess.run(
            ["git", "-C", str(root), "rev-parse", "HEAD"],
            capture_output=True,
            text=True,
            timeout=10,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    sha = out.stdout.strip()
    return sha if out.returncode == 0 and re.fullmatch(r"[0-9a-f]{40}", sha) else None
