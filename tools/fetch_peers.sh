#!/bin/sh
# SPDX-License-Identifier: MIT
# fetch_peers.sh DEST: obtain the C sources of the lab's peer allocators from
# crates.io, unpacked under DEST/src/<crate>-<version>/. Nothing is vendored in
# the heapkit repository and nothing here is compiled: the crates' build
# scripts (which may want cross compilers) never run; lab/engine/peers/
# compiles only the C files it names.
#
#   crate            version  licence               C sources used
#   freertos-next    0.12.0   MIT (FreeRTOS-Kernel)  FreeRTOS-Kernel/ (V11.2.0, CRLF line endings):
#                                                    portable/MemMang/heap_2.c heap_4.c heap_5.c
#   o1heap           0.0.2    MIT (o1heap)           o1heap/o1heap/o1heap.c o1heap.h
#   umm-malloc-sys   0.3.2    MIT (umm_malloc)       umm_malloc/src/umm_malloc.c and its headers
#   lvgl-sys         0.6.2    MIT (LVGL), with       vendor/lvgl/src/misc/lv_tlsf.c lv_tlsf.h:
#                             BSD-3-Clause (Conte's  Matthew Conte's TLSF 3.1 as LVGL 8 bundles
#                             TLSF 3.1)              it; nothing else of LVGL is compiled
#
# Licences: the four crates are MIT (their Cargo.toml), and so are the C
# libraries the first three bundle: FreeRTOS-Kernel (Amazon.com, Inc.;
# LICENSE.md), o1heap (Pavel Kirienko; o1heap/LICENSE), umm_malloc (Ralph
# Hempel; umm_malloc/LICENSE). lvgl-sys bundles LVGL, MIT ("Copyright (c)
# 2021 LVGL Kft", vendor/lvgl/LICENCE.txt); its lv_tlsf.h carries Conte's
# own notice, the three-clause BSD licence ("Copyright (c) 2006-2016,
# Matthew Conte. All rights reserved." with the redistribution conditions
# and the no-endorsement clause), which covers lv_tlsf.c too (that file has
# no notice of its own). The licence files stay next to the sources in DEST.
#
# Method: a throwaway crate in DEST/fetch depending on the four exact
# versions, `cargo fetch` (downloads the .crate files into
# $CARGO_HOME/registry/cache/<index>/), then each .crate (a gzip tarball) is
# extracted into DEST/src/. Idempotent: crates already unpacked are skipped,
# and when all are present cargo is not even run.
#
# Exit status: 0 with the source locations printed (one "name=path" line
# each), 1 with one line on stderr when cargo or the network is missing or a
# crate cannot be unpacked.
set -eu

die() {
    echo "fetch_peers.sh: $*" >&2
    exit 1
}

[ $# -eq 1 ] || die "usage: fetch_peers.sh DEST"
DEST=$1
CRATES="freertos-next:0.12.0 o1heap:0.0.2 umm-malloc-sys:0.3.2 lvgl-sys:0.6.2"

mkdir -p "$DEST/src" || die "cannot create $DEST/src"
DEST=$(cd "$DEST" && pwd)

missing=""
for c in $CRATES; do
    name=${c%%:*}
    ver=${c#*:}
    [ -f "$DEST/src/$name-$ver/Cargo.toml" ] || missing="$missing $c"
done

if [ -n "$missing" ]; then
    command -v cargo >/dev/null 2>&1 || die "cargo not found on PATH (needed to fetch the peers from crates.io)"
    mkdir -p "$DEST/fetch/src"
    cat >"$DEST/fetch/Cargo.toml" <<'EOF'
[package]
name = "heapkit-peer-fetch"
version = "0.0.0"
edition = "2021"
publish = false

[lib]
path = "src/lib.rs"

[dependencies]
freertos-next = "=0.12.0"
o1heap = "=0.0.2"
umm-malloc-sys = "=0.3.2"
lvgl-sys = "=0.6.2"

[workspace]
EOF
    : >"$DEST/fetch/src/lib.rs"
    if ! (cd "$DEST/fetch" && cargo fetch --quiet) >"$DEST/fetch/cargo-fetch.log" 2>&1; then
        why=$(grep -m1 '^error' "$DEST/fetch/cargo-fetch.log" || true)
        die "cargo fetch failed (network or crates.io unreachable?): ${why:-no error line}; log: $DEST/fetch/cargo-fetch.log"
    fi
    cache_root=${CARGO_HOME:-$HOME/.cargo}/registry/cache
    for c in $missing; do
        name=${c%%:*}
        ver=${c#*:}
        crate=""
        for f in "$cache_root"/*/"$name-$ver.crate"; do
            [ -f "$f" ] && crate=$f && break
        done
        [ -n "$crate" ] || die "$name-$ver.crate not found under $cache_root/*/ after cargo fetch"
        rm -rf "$DEST/src/$name-$ver.part"
        mkdir -p "$DEST/src/$name-$ver.part"
        tar -xzf "$crate" -C "$DEST/src/$name-$ver.part" || die "cannot unpack $crate"
        [ -f "$DEST/src/$name-$ver.part/$name-$ver/Cargo.toml" ] || die "$crate does not hold $name-$ver/"
        rm -rf "$DEST/src/$name-$ver"
        mv "$DEST/src/$name-$ver.part/$name-$ver" "$DEST/src/$name-$ver"
        rmdir "$DEST/src/$name-$ver.part"
    done
fi

freertos=$DEST/src/freertos-next-0.12.0/FreeRTOS-Kernel
o1heap=$DEST/src/o1heap-0.0.2/o1heap/o1heap
umm=$DEST/src/umm-malloc-sys-0.3.2/umm_malloc/src
tlsf_conte=$DEST/src/lvgl-sys-0.6.2/vendor/lvgl/src/misc
for f in "$freertos/portable/MemMang/heap_4.c" "$o1heap/o1heap.c" "$umm/umm_malloc.c" "$tlsf_conte/lv_tlsf.c"; do
    [ -f "$f" ] || die "expected source missing: $f"
done
echo "freertos_kernel=$freertos  (V11.2.0, CRLF line endings; heaps in portable/MemMang/)"
echo "o1heap=$o1heap  (o1heap.c, o1heap.h)"
echo "umm_malloc=$umm  (umm_malloc.c includes umm_info.c, umm_integrity.c, umm_poison.c)"
echo "tlsf_conte=$tlsf_conte  (lv_tlsf.c, lv_tlsf.h: Conte's TLSF 3.1)"
