#!/usr/bin/env bash
# `make test` (what CI runs): set up what the suite needs on a fresh machine, then run it.
#
#   1. packages   the Debian packages (Docker engine, debootstrap, Chromium, bubblewrap) in
#                 one apt transaction, and the Docker engine started
#   2. venv       the project's venv (pip, CPU torch from the machine's wheel store), and
#      images     beside it podium's local base images (scripts/build-images.sh)
#   3. parallel   the suite file by file on TEST_WORKERS processes (pytest-xdist; a file stays
#                 on one worker, so its module-scoped verifications are shared); beside it
#      lint       ruff and mypy, and
#      lowest     the core tests on the lowest allowed dependencies
#   4. serial     the tests that measure the machine's own timing, alone
#
# Every step's wall time and exit code go to test-artifacts/steps.jsonl (what
# `python -m bench.suite_cost` reports); each pytest pass writes its JUnit file there.
# The run fails on any step's failure, on a failed test and on a pytest pass that ran no
# test (pytest's exit code 5).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
MAKE=${MAKE:-make}
ART=${ARTIFACTS:-test-artifacts}
WORKERS=${TEST_WORKERS:-2}
PY=.venv/bin/python
export PODIUM_REQUIRE_DOCKER=1 PODIUM_REQUIRE_BROWSER=1 PODIUM_REQUIRE_JAIL=1
mkdir -p "$ART/logs"
STEPS=$ART/steps.jsonl
: >"$STEPS"
T0=$(date +%s.%N)

elapsed() { awk -v a="$1" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }'; }
record() { printf '{"step": "%s", "s": %s, "rc": %d}\n' "$1" "$2" "$3" >>"$STEPS"; }
say() { printf '[test %7ss] %s\n' "$(elapsed "$T0")" "$*" >&2; }

# step NAME CMD...: run CMD in the foreground, its output shown, its time recorded
step() {
    local name=$1 t rc=0
    shift
    t=$(date +%s.%N)
    say "$name: $*"
    "$@" || rc=$?
    record "$name" "$(elapsed "$t")" "$rc"
    say "$name: exit $rc after $(elapsed "$t") s"
    return "$rc"
}

# bg NAME CMD...: the same in the background, its output in $ART/logs/NAME.log; wait_bg NAME
# waits for it, records it and shows the log's tail when it failed
declare -A PIDS STARTS
bg() {
    local name=$1
    shift
    say "$name (in the background, log $ART/logs/$name.log): $*"
    STARTS[$name]=$(date +%s.%N)
    ("$@") >"$ART/logs/$name.log" 2>&1 </dev/null &
    PIDS[$name]=$!
}
wait_bg() {
    local name=$1 rc=0 took
    wait "${PIDS[$name]}" || rc=$?
    took=$(elapsed "${STARTS[$name]}")
    record "$name" "$took" "$rc"
    say "$name: exit $rc after $took s"
    if ((rc != 0)); then
        tail -n 60 "$ART/logs/$name.log" >&2
    fi
    return "$rc"
}

# pytest_pass NAME ARGS...: one pytest pass with its JUnit file; exit 5 ("no tests ran") fails
pytest_pass() {
    local name=$1 suffix=$2 rc=0
    shift 2
    step "$name" .venv/bin/pytest -p no:cacheprovider --junitxml="$ART/junit$suffix.xml" "$@" || rc=$?
    if ((rc == 5)); then
        say "$name: no test ran"
    fi
    return "$rc"
}

step packages bash scripts/setup-packages.sh
# the image builds download with the machine's pip, not the venv's that is being made beside
PODIUM_PIP="python3 -m pip" bg images bash scripts/build-images.sh
bg venv "$MAKE" --no-print-directory venv
failed=0
wait_bg venv || failed=1
wait_bg images || failed=1
((failed == 0)) || exit 1

bg lint "$MAKE" --no-print-directory lint
bg lowest "$MAKE" --no-print-directory lowest
rc=0
pytest_pass parallel "" -m "not gpu and not serial" -n "$WORKERS" --dist loadfile || rc=$?
wait_bg lint || failed=1
wait_bg lowest || failed=1
((rc == 0 && failed == 0)) || exit 1
pytest_pass serial -serial -m "serial and not gpu"
say "all steps passed"
