#!/usr/bin/env bash
# The Debian packages the test suite needs, in one apt transaction, then the Docker engine
# started: docker.io and debootstrap (scripts/setup-docker.sh says why), Chromium and its
# driver for the browser tests, bubblewrap for the jail runner, postgresql for the competition
# server's tests (they start a cluster of their own). Installs only what is missing;
# runs as root.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
missing=()
command -v dockerd >/dev/null || missing+=(docker.io)
command -v debootstrap >/dev/null || missing+=(debootstrap)
command -v bwrap >/dev/null || missing+=(bubblewrap)
command -v chromium >/dev/null || missing+=(chromium chromium-driver fonts-dejavu-core)
ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || missing+=(postgresql)
if ((${#missing[@]} > 0)); then
    [[ $(id -u) == 0 ]] || { echo "installing ${missing[*]} needs root" >&2; exit 1; }
    export DEBIAN_FRONTEND=noninteractive NEEDRESTART_MODE=a NEEDRESTART_SUSPEND=1
    echo "[setup-packages] apt-get install ${missing[*]}" >&2
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
exec bash "$ROOT/scripts/setup-docker.sh" --no-images
