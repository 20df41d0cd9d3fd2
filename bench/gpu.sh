#!/usr/bin/env bash
# The GPU-machine runs as tests, in one command, on a machine with a CUDA GPU:
#
#     bash bench/gpu.sh [pytest options]
#
# What podium needs beyond torch and CUDA (jsonschema, typer, cryptography, huggingface_hub,
# transformers 5.24 ...) comes from the wheels in .whl/gpu-py312 (`make gpu-wheels` fetches
# them on a machine that reaches PyPI; carry .whl/ along), installed into a folder of
# their own (/tmp/podium-site, on PYTHONPATH) when the machine lacks any of them. Results
# (gpu_verify.json, gpu_e4b.json) go to $OUT when it is set. Where git cannot name the
# commit (a copy without .git), set PODIUM_GIT_SHA and PODIUM_GIT_CLEAN=1|0.
#
#     bash bench/gpu.sh -k verifications     # the whole verifications alone (~20 min)
#     bash bench/gpu.sh -k jail              # the jail runner: a GPU jail's probe and CUDA
#                                            # in it, then honest rows VERIFIED and signed
#                                            # and cheats REJECTED through it
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
PY=${PYTHON:-python3}
missing=()
for module in pytest jsonschema h11 typer cryptography huggingface_hub httpx2 docker; do
    "$PY" -c "import $module" 2>/dev/null || missing+=("$module")
done
"$PY" -c 'import transformers, sys; sys.exit(tuple(map(int, transformers.__version__.split(".")[:2])) < (5, 24))' \
    2>/dev/null || missing+=(transformers)
if ((${#missing[@]})); then
    if [[ ! -d .whl/gpu-py312 ]]; then
        echo "this machine lacks ${missing[*]}; run \`make gpu-wheels\` where PyPI is reachable and carry .whl/" >&2
        exit 2
    fi
    SITE=/tmp/podium-site
    "$PY" -m pip install --quiet --no-index --no-deps --no-compile --upgrade --target "$SITE" \
        .whl/gpu-py312/*.whl
    export PYTHONPATH="$SITE${PYTHONPATH:+:$PYTHONPATH}"
fi
# The jail runner's bubblewrap: Debian's .deb carried in .whl/deb (`make gpu-wheels`),
# unpacked into a folder of its own where the machine has no bwrap.
if ! command -v bwrap >/dev/null && [[ -z "${PODIUM_BWRAP:-}" ]]; then
    debs=(.whl/deb/bubblewrap_*.deb)
    if [[ -f "${debs[0]}" ]]; then
        dpkg -x "${debs[0]}" /tmp/podium-bwrap
        export PODIUM_BWRAP=/tmp/podium-bwrap/usr/bin/bwrap
    fi
fi
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1
exec "$PY" -m pytest -m gpu -p no:cacheprovider tests/bench/test_gpu_runs.py \
    tests/calibration/test_gpu_verifications.py tests/verifier/test_jail.py "$@"
