"""Start the engine with the frozen knobs of engine-config.json as environment variables.

Usage: python launch.py CONFIG.json -- COMMAND [ARGS...]. Scalar knobs become strings
(true -> 1, false -> 0), objects and lists compact JSON; a knob overrides the image's
environment, so the frozen config is what runs.
"""

import json
import os
import sys


def main() -> None:
    if len(sys.argv) < 4 or sys.argv[2] != "--":
        raise SystemExit("usage: python launch.py CONFIG.json -- COMMAND [ARGS...]")
    with open(sys.argv[1], encoding="utf-8") as fh:
        config = json.load(fh)
    for key, value in config.items():
        if isinstance(value, bool):
            value = int(value)
        if isinstance(value, (dict, list)):
            os.environ[key] = json.dumps(value, sort_keys=True, separators=(",", ":"))
        else:
            os.environ[key] = str(value)
    command = sys.argv[3:]
    os.execvp(command[0], command)


if __name__ == "__main__":
    main()
