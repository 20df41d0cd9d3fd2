#!/usr/bin/env bash
# make venv: VENV with PACKAGE... installed (the project, editable, and its pins).
#
# uv installs them (seconds where pip takes minutes), handed the machine's pip settings
# (scripts/uv-flags.py: a wheel store, extra indexes, a constraints file) so that both take
# the same versions from the same places. Where uv cannot (no uv wheel for this machine, a
# resolution it refuses), pip installs them as before.
#
#   bash scripts/venv.sh .venv -e '.[dev,engine]' 'torch==2.13.0'
set -euo pipefail
venv=$1
shift
py=$venv/bin/python
test -x "$py" || python3 -m venv "$venv"
if "$py" -m pip install --quiet uv 2>/dev/null; then
    mapfile -t flags < <("$py" "$(dirname "${BASH_SOURCE[0]}")/uv-flags.py")
    if "$venv/bin/uv" pip install --quiet --python "$py" "${flags[@]}" "$@"; then
        exit 0
    fi
    echo "venv: uv could not install; pip will" >&2
fi
"$py" -m pip install --quiet "$@"
