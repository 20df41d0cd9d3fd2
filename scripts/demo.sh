#!/usr/bin/env bash
# `make demo`: the main job end to end on the embedded default (the `tiny` challenge, on
# the CPU), from a fresh machine: set up what it runs (the venv, the Docker engine, the
# Debian base image and the engine base image; not the vLLM image, which `make docker`
# builds), package the sample submission, verify it blind in the Docker sandbox, publish
# the signed result to the local leaderboard, show the leaderboard.
#
# One line per set-up step, with the time since the start; the package managers' output
# (pip, apt, debootstrap, docker build) goes to $OUT/setup.log, and its tail is shown only
# when a step fails. podium's own output (validate, package, verify, leaderboard) is shown.
# PODIUM_IMAGE_PREFIX and PODIUM_CACHE are handed to scripts/build-images.sh.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
PODIUM=${PODIUM:-.venv/bin/podium}
OUT=${OUT:-out/demo}
STORE=${STORE:-./leaderboard-data}
KEY="$OUT/keys/organizer.pem"
LOG="$OUT/setup.log"
PREFIX=${PODIUM_IMAGE_PREFIX:-podium}

mkdir -p "$OUT"
: >"$LOG"
T0=$(date +%s.%N)

elapsed() { awk -v a="$1" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }'; }
stamp() { printf '[%6ss]' "$(elapsed "$T0")"; }

# step NAME CMD...: run CMD with its output in $LOG; one line when it is done, the log's
# tail and exit 1 when it fails.
step() {
    local name=$1 t rc=0
    shift
    t=$(date +%s.%N)
    printf '\n== %s: %s\n' "$name" "$*" >>"$LOG"
    "$@" >>"$LOG" 2>&1 </dev/null || rc=$?
    if ((rc != 0)); then
        printf '%s %s FAILED (exit %d); the end of %s:\n' "$(stamp)" "$name" "$rc" "$LOG"
        tail -n 30 "$LOG" | sed 's/^/    /'
        exit 1
    fi
    local dots=......................
    printf '%s %s %s ok %6s s\n' "$(stamp)" "$name" "${dots:0:$((22 - ${#name}))}" "$(elapsed "$t")"
}

# heading TEXT: a podium step, whose own output follows
heading() { printf '%s == %s\n' "$(stamp)" "$*"; }

echo "podium demo: set-up steps log to $LOG"
step "venv" "${MAKE:-make}" --no-print-directory venv
step "docker engine" bash scripts/setup-docker.sh --no-images
step "Debian base image" bash scripts/build-images.sh base
step "engine base image" bash scripts/build-images.sh engine-base
# the engine base image just checked or built, pinned by its id (what package would find)
BASE_ID=$(docker image inspect --format '{{.Id}}' "$PREFIX/engine-base:bookworm")

heading "1. participant: validate and package examples/tiny-baseline"
"$PODIUM" submission validate examples/tiny-baseline
"$PODIUM" submission package examples/tiny-baseline -o "$OUT/dist" --base-digest "$BASE_ID"

heading "2. organizer: a signing key (kept in $OUT/keys)"
if [[ ! -f "$KEY" ]]; then "$PODIUM" keys generate "$KEY"; else echo "reusing $KEY"; fi

heading "3. organizer: verify blind and publish to $STORE"
set +e
"$PODIUM" verify "$OUT/dist/podium-tiny-baseline.tar.gz" --challenge tiny \
    --key "$KEY" --publish "$STORE" -o "$OUT/verify"
verdict=$?
set -e

heading "4. viewer: the leaderboard"
"$PODIUM" leaderboard show --store "$STORE"
"$PODIUM" leaderboard verify --store "$STORE" --pubkey "$KEY.pub"
printf '%s done (verify exit %d: 0 is VERIFIED); the set-up log is %s\n' "$(stamp)" "$verdict" "$LOG"
exit "$verdict"
