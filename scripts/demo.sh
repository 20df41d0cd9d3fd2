#!/usr/bin/env bash
# `make demo`: the main job end to end on the embedded default (the `tiny` challenge, on
# the CPU), from a fresh machine: set up what it runs (the venv, the Docker engine, the
# Debian base image and the engine base image; not the vLLM image, which `make docker`
# builds), package the sample submission, verify it blind in the Docker sandbox, publish
# the signed result to the local leaderboard, show the leaderboard.
#
# One line per set-up step, with the time since the start and the step's own; the package
# managers' output (pip, apt, debootstrap, docker build) goes to a log per step under
# $OUT/logs/, whose tail is shown only when a step fails. podium's own output (validate,
# package, verify, leaderboard) is shown.
# PODIUM_IMAGE_PREFIX and PODIUM_CACHE are handed to scripts/build-images.sh; with another
# prefix than podium's, the demo packages a copy of the example that names those images
# (how a cold run is measured beside images others are using).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
PODIUM=${PODIUM:-.venv/bin/podium}
OUT=${OUT:-out/demo}
STORE=${STORE:-./leaderboard-data}
KEY="$OUT/keys/organizer.pem"
PREFIX=${PODIUM_IMAGE_PREFIX:-podium}

LOGS="$OUT/logs"

mkdir -p "$LOGS"
T0=$(date +%s.%N)

elapsed() { awk -v a="$1" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }'; }
stamp() { printf '[%6ss]' "$(elapsed "$T0")"; }
log_of() { echo "$LOGS/${1// /-}.log"; }

# done_line NAME RC T [T_END]: the step's one line, or its log's tail and exit 1
done_line() {
    local name=$1 rc=$2 t=$3 took dots=......................
    took=$(awk -v a="$t" -v b="${4:-$(date +%s.%N)}" 'BEGIN { printf "%.1f", b - a }')
    if ((rc != 0)); then
        printf '%s %s FAILED (exit %d); the end of %s:\n' "$(stamp)" "$name" "$rc" "$(log_of "$name")"
        tail -n 30 "$(log_of "$name")" | sed 's/^/    /'
        exit 1
    fi
    printf '%s %s %s ok %6s s\n' "$(stamp)" "$name" "${dots:0:$((22 - ${#name}))}" "$took"
}

# step NAME CMD...: run CMD with its output in its own log under $LOGS
step() {
    local name=$1 t rc=0
    shift
    t=$(date +%s.%N)
    "$@" >"$(log_of "$name")" 2>&1 </dev/null || rc=$?
    done_line "$name" "$rc" "$t"
}

# step_start NAME CMD...: the same in the background, in a process group of its own (so a
# failure elsewhere ends it whole); step_end NAME waits for it and prints its line, with
# the time the step itself took
BG_PID="" BG_T=""
step_start() {
    local name=$1
    shift
    BG_T=$(date +%s.%N)
    rm -f "$LOGS/.bg-done"
    setsid bash -c '"$@"; rc=$?; date +%s.%N >"$0"; exit "$rc"' "$LOGS/.bg-done" "$@" \
        >"$(log_of "$name")" 2>&1 </dev/null &
    BG_PID=$!
}
step_end() {
    local rc=0
    wait "$BG_PID" || rc=$?
    BG_PID=""
    done_line "$1" "$rc" "$BG_T" "$(cat "$LOGS/.bg-done" 2>/dev/null || date +%s.%N)"
}
trap '[[ -z $BG_PID ]] || kill -- "-$BG_PID" 2>/dev/null || true' EXIT

# heading TEXT: a podium step, whose own output follows
heading() { printf '%s == %s\n' "$(stamp)" "$*"; }

echo "podium demo: the set-up steps log to $LOGS/"
# The venv installs beside the images (both mostly wait on downloads and disks); the
# engine base's wheels are fetched by this machine's own pip when it has one, else by the
# venv's once it is ready.
step_start "venv" "${MAKE:-make}" --no-print-directory demo-venv
step "docker engine" bash scripts/setup-docker.sh --no-images
step "Debian base image" bash scripts/build-images.sh base
if [[ -z ${PODIUM_PIP:-} ]]; then
    if python3 -m pip --version >/dev/null 2>&1; then
        export PODIUM_PIP="python3 -m pip"
    else
        step_end "venv"
    fi
fi
step "engine base image" bash scripts/build-images.sh engine-base
[[ -z $BG_PID ]] || step_end "venv"

EXAMPLE=examples/tiny-baseline
if [[ $PREFIX != podium ]]; then # a second set of images: a copy of the example names it
    rm -rf "$OUT/src" "$OUT/dist" && mkdir -p "$OUT/src" && cp -r "$EXAMPLE" "$OUT/src/"
    EXAMPLE="$OUT/src/tiny-baseline"
    sed -i "s#\"podium/engine-base:#\"$PREFIX/engine-base:#" "$EXAMPLE/podium.toml"
fi
heading "1. participant: validate and package $EXAMPLE"
"$PODIUM" submission validate "$EXAMPLE"
"$PODIUM" submission package "$EXAMPLE" -o "$OUT/dist"

heading "2. organizer: a signing key (kept in $OUT/keys)"
if [[ ! -f "$KEY" ]]; then "$PODIUM" keys generate "$KEY"; else echo "reusing $KEY"; fi

heading "3. organizer: verify blind and publish to $STORE"
rm -f "$OUT/verify/report.json"
set +e
"$PODIUM" verify "$OUT/dist/podium-tiny-baseline.tar.gz" --challenge tiny \
    --key "$KEY" --publish "$STORE" --no-hold -o "$OUT/verify"
verdict=$?
set -e

heading "4. viewer: the leaderboard"
if [[ $STORE == *://* || -d $STORE ]]; then
    # the demo's key is made on this machine (step 2), so no spec can pin it: the viewer
    # names it, as a viewer of any ad-hoc store does (docs/leaderboard.md). The viewer's
    # memory of the heads it saw is the demo's own ($OUT/viewer): a demo made anew where an
    # earlier one stood (a new key, a new store at the same path) is a new board to it, while
    # a viewer who remembers the old one would rightly call its history rewritten
    export XDG_CACHE_HOME="$OUT/viewer"
    "$PODIUM" leaderboard show --store "$STORE" --pubkey "$KEY.pub"
    "$PODIUM" leaderboard verify --store "$STORE" --pubkey "$KEY.pub"
else
    echo "no leaderboard at $STORE yet: nothing was published"
fi
result=$(.venv/bin/python -c 'import json, sys; print(json.load(open(sys.argv[1]))["verdict"])' \
    "$OUT/verify/report.json" 2>/dev/null || echo "no report")
printf '%s done: %s; set-up logs in %s/\n' "$(stamp)" "$result" "$LOGS"
exit "$verdict"
