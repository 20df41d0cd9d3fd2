"""Print the machine's pip settings as uv flags, one per line, for scripts/venv.sh.

uv reads neither pip's configuration files nor its ``PIP_*`` variables. A machine that
keeps wheels on disk or behind an extra index (a pinned CPU build of torch, say) tells pip
so in ``pip.conf`` or the environment; handed the same settings, uv installs the same
versions from the same places. ``pip config list`` shows what pip itself would use, every
file and variable merged; pip's way of choosing among indexes (the best version anywhere)
is uv's ``unsafe-best-match``.
"""

from __future__ import annotations

import ast
import subprocess
import sys

FLAGS = {
    "find-links": "--find-links",
    "extra-index-url": "--extra-index-url",
    "index-url": "--index-url",
    "constraint": "--constraint",
}


def flags(listing: str) -> list[str]:
    """uv's flags for what ``pip config list`` printed."""
    files: dict[str, list[str]] = {}
    env: dict[str, list[str]] = {}
    for line in listing.splitlines():
        key, _, raw = line.partition("=")
        name = key.rpartition(".")[2]
        if name not in FLAGS or not raw:
            continue
        try:
            value = ast.literal_eval(raw)
        except (ValueError, SyntaxError):
            value = raw.strip("'\"")
        (env if key.startswith(":env:") else files)[name] = str(value).split()
    out = ["--index-strategy", "unsafe-best-match"]
    for name, values in (files | env).items():  # a PIP_* variable overrides the files
        for value in values:
            out += [FLAGS[name], value]
    return out


def main() -> int:
    listed = subprocess.run(
        [sys.executable, "-m", "pip", "config", "list"], capture_output=True, text=True
    )
    print("\n".join(flags(listed.stdout)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
