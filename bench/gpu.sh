#!/usr/bin/env bash
# The GPU-machine runs as tests, in one command, on a machine with a CUDA GPU:
#
#     bash bench/gpu.sh [pytest options]
#
# pytest and jsonschema are installed first from the wheels in .whl/gpu-py312 when the
# machine lacks them (`make gpu-wheels` fetches those on a machine that reaches PyPI;
# carry .whl/ along). Results (gpu_e4b.json) go to $OUT when it is set. Where git cannot
# name the commit (a copy without .git), set PODIUM_GIT_SHA and PODIUM_GIT_CLEAN=1|0.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
PY=${PYTHON:-python3}
missing=()
for module in pytest jsonschema h11; do
    "$PY" -c "import $module" 2>/dev/null || missing+=("$module")
done
if ((${#missing[@]})); then
    if [[ ! -d .whl/gpu-py312 ]]; then
        echo "this machine lacks ${missing[*]}; run \`make gpu-wheels\` where PyPI is reachable and carry .whl/" >&2
        exit 2
    fi
    "$PY" -m pip install --quiet --no-index --find-links .whl/gpu-py312 "${missing[@]}"
fi
exec "$PY" -m pytest -m gpu -p no:cacheprovider tests/bench/test_gpu_runs.py "$@"
