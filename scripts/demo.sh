#!/usr/bin/env bash
# The main job end to end on the embedded default (the `tiny` challenge, on the CPU):
# package the sample submission, verify it blind in the Docker sandbox, publish the signed
# result to the local leaderboard, show the leaderboard. `make demo` runs the set-up first.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
PODIUM=${PODIUM:-.venv/bin/podium}
OUT=${OUT:-out/demo}
STORE=${STORE:-./leaderboard-data}
KEY="$OUT/keys/organizer.pem"

mkdir -p "$OUT"
echo "== 1. participant: validate and package examples/tiny-baseline"
"$PODIUM" submission validate examples/tiny-baseline
"$PODIUM" submission package examples/tiny-baseline -o "$OUT/dist"

echo "== 2. organizer: a signing key (kept in $OUT/keys)"
if [[ ! -f "$KEY" ]]; then "$PODIUM" keys generate "$KEY"; fi

echo "== 3. organizer: verify blind and publish to $STORE"
set +e
"$PODIUM" verify "$OUT/dist/podium-tiny-baseline.tar.gz" --challenge tiny \
    --key "$KEY" --publish "$STORE" -o "$OUT/verify"
verdict=$?
set -e

echo "== 4. viewer: the leaderboard"
"$PODIUM" leaderboard show --store "$STORE"
"$PODIUM" leaderboard verify --store "$STORE" --pubkey "$KEY.pub"
exit "$verdict"
