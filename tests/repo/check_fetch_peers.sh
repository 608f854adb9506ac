#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# check_fetch_peers.sh [WORK]: tools/fetch_peers.sh as on a fresh machine
# (make peers-test). With an empty CARGO_HOME, so cargo's cache holds nothing,
# it must download the four crates and unpack the peers' sources and licence
# files into WORK/dest; a second run must find them and not run cargo; with no
# cargo on PATH it must stop with one line saying so. WORK is removed when all
# holds (the fresh cache is some 200 MB).
set -euo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
work=${1:-$root/build/fetch-peers-test}
fetch=$root/tools/fetch_peers.sh
command -v cargo >/dev/null 2>&1 || { echo "check_fetch_peers.sh: cargo not found (make deps installs it)" >&2; exit 1; }
rm -rf "$work"
mkdir -p "$work"
work=$(cd "$work" && pwd)
# shellcheck source=../support/steps.sh
. "$root/tests/support/steps.sh"

fresh_cache() {
    mkdir -p "$work/cargo-home"
    CARGO_HOME=$work/cargo-home sh "$fetch" "$work/dest" | tee "$work/first.out" &&
        find "$work/cargo-home/registry/cache" -name '*.crate' | wc -l | grep -qv '^0$'
}

sources_arrived() {
    local f missing=0
    for f in freertos-next-0.12.0/FreeRTOS-Kernel/portable/MemMang/heap_4.c \
             freertos-next-0.12.0/FreeRTOS-Kernel/LICENSE.md \
             o1heap-0.0.2/o1heap/o1heap/o1heap.c o1heap-0.0.2/o1heap/LICENSE \
             umm-malloc-sys-0.3.2/umm_malloc/src/umm_malloc.c umm-malloc-sys-0.3.2/umm_malloc/LICENSE \
             lvgl-sys-0.6.2/vendor/lvgl/src/misc/lv_tlsf.c lvgl-sys-0.6.2/vendor/lvgl/LICENCE.txt; do
        [ -s "$work/dest/src/$f" ] || { echo "missing: $f"; missing=1; }
    done
    return "$missing"
}

# Everything present: cargo is not run, so an unusable CARGO_HOME does not matter.
second_run() {
    CARGO_HOME=/nonexistent/cargo-home sh "$fetch" "$work/dest" >"$work/second.out" &&
        cmp "$work/first.out" "$work/second.out"
}

# PATH holds only the tools the script uses, not cargo.
without_cargo() {
    local tool status=0
    mkdir -p "$work/bin"
    for tool in sh mkdir cat grep tar rm mv rmdir; do
        ln -s "$(command -v "$tool")" "$work/bin/$tool"
    done
    PATH=$work/bin sh "$fetch" "$work/nocargo" 2>"$work/nocargo.err" || status=$?
    cat "$work/nocargo.err"
    [ "$status" -eq 1 ] && [ "$(wc -l <"$work/nocargo.err")" -eq 1 ] && grep -q 'cargo not found' "$work/nocargo.err"
}

step "fetch_peers.sh with an empty cargo cache (CARGO_HOME)" fresh_cache
step "the peers' sources and licence files arrived" sources_arrived
step "a second run finds them without cargo" second_run
step "without cargo: exit 1 and one line on stderr" without_cargo
steps_summary fetch-peers
rm -rf "$work"
