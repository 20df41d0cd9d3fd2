#!/usr/bin/env bash
# Make this machine able to run podium's Docker tests, from nothing: install the Docker
# engine and debootstrap from Debian when absent, start dockerd when no engine answers,
# then build the local base images (scripts/build-images.sh; nothing can be pulled).
#
# Usage: setup-docker.sh [--no-images]: with --no-images it stops once the engine answers
# (scripts/demo.sh builds the images it needs itself, one step at a time).
#
# Idempotent: a second run finds everything in place and only checks. Runs as root.
# dockerd listens on its Unix socket only (no TCP port); its log goes to
# ${PODIUM_CACHE:-/var/cache/podium}/dockerd.log.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
CACHE=${PODIUM_CACHE:-/var/cache/podium}
WAIT_S=${PODIUM_DOCKERD_WAIT_S:-60}

log() { printf '[setup-docker] %s\n' "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }
now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f s", b - a }'; }

install_packages() {
    local missing=() t0
    command -v dockerd >/dev/null || missing+=(docker.io)
    command -v docker >/dev/null || [[ " ${missing[*]-} " == *" docker.io "* ]] || missing+=(docker.io)
    command -v debootstrap >/dev/null || missing+=(debootstrap)
    # the jail runner's sandbox (tests/verifier/test_jail*.py make real jails with it)
    command -v bwrap >/dev/null || missing+=(bubblewrap)
    if ((${#missing[@]} == 0)); then
        log "dockerd, debootstrap and bwrap are installed"
        return
    fi
    [[ $(id -u) == 0 ]] || die "installing ${missing[*]} needs root"
    t0=$(now)
    log "installing ${missing[*]} with apt-get"
    # needrestart (when installed) would otherwise ask, or list every service it restarts
    export DEBIAN_FRONTEND=noninteractive NEEDRESTART_MODE=a NEEDRESTART_SUSPEND=1
    apt-get update -qq >&2
    apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
    log "step apt-get install took $(since "$t0")"
}

start_dockerd() {
    local t0 i
    if docker info >/dev/null 2>&1; then
        log "a Docker engine is running ($(docker version --format '{{.Server.Version}}' 2>/dev/null))"
        return
    fi
    t0=$(now)
    mkdir -p "$CACHE"
    if pgrep -x dockerd >/dev/null; then
        log "dockerd is starting; waiting for it"
    else
        log "starting dockerd (log: $CACHE/dockerd.log)"
        # setsid: the daemon must outlive this script and the make that called it.
        setsid dockerd >>"$CACHE/dockerd.log" 2>&1 </dev/null &
    fi
    for ((i = 0; i < WAIT_S; i++)); do
        if docker info >/dev/null 2>&1; then
            log "step start dockerd took $(since "$t0")"
            return
        fi
        sleep 1
    done
    tail -n 30 "$CACHE/dockerd.log" >&2 || true
    die "dockerd did not answer within ${WAIT_S} s (log: $CACHE/dockerd.log)"
}

main() {
    local t0 id
    t0=$(now)
    install_packages
    start_dockerd
    if [[ ${1:-} == --no-images ]]; then
        log "total took $(since "$t0")"
        return
    fi
    id=$(bash "$ROOT/scripts/build-images.sh")
    log "base images ready; engine base image id $id"
    log "total took $(since "$t0")"
}

main "$@"
