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
rm -rf "$work"
mkdir -p "$work"
work=$(cd "$work" && pwd)
fetch=$root/tools/fetch_peers.sh
passed=0
failed=0

result() { # NAME STATUS
    if [ "$2" -eq 0 ]; then echo "ok      $1"; passed=$((passed + 1)); else echo "FAILED  $1"; failed=$((failed + 1)); fi
}

command -v cargo >/dev/null 2>&1 || { echo "check_fetch_peers.sh: cargo not found (make deps installs it)" >&2; exit 1; }

# 1. A fresh cargo cache.
export CARGO_HOME=$work/cargo-home
mkdir -p "$CARGO_HOME"
start=$(date +%s)
status=0
sh "$fetch" "$work/dest" >"$work/first.out" 2>"$work/first.err" || status=$?
echo "fetch from an empty CARGO_HOME: $(( $(date +%s) - start )) s, exit $status"
[ "$status" -eq 0 ] || sed 's/^/    /' "$work/first.err"
result "fetch_peers.sh with an empty cargo cache" "$status"

src=$work/dest/src
missing=0
for f in freertos-next-0.12.0/FreeRTOS-Kernel/portable/MemMang/heap_4.c \
         freertos-next-0.12.0/FreeRTOS-Kernel/LICENSE.md \
         o1heap-0.0.2/o1heap/o1heap/o1heap.c o1heap-0.0.2/o1heap/LICENSE \
         umm-malloc-sys-0.3.2/umm_malloc/src/umm_malloc.c umm-malloc-sys-0.3.2/umm_malloc/LICENSE \
         lvgl-sys-0.6.2/vendor/lvgl/src/misc/lv_tlsf.c lvgl-sys-0.6.2/vendor/lvgl/LICENCE.txt; do
    [ -s "$src/$f" ] || { echo "    missing: $f"; missing=1; }
done
result "the peers' sources and licence files arrived" "$missing"

crates=$(find "$CARGO_HOME/registry/cache" -name '*.crate' 2>/dev/null | wc -l)
echo "crates in the fresh cache: $crates"
[ "$crates" -ge 4 ]
result "the crates came through the fresh cache" $?

# 2. Idempotent: everything present, cargo is not run (an unusable CARGO_HOME would fail it).
status=0
CARGO_HOME=/nonexistent/cargo-home sh "$fetch" "$work/dest" >"$work/second.out" 2>&1 || status=$?
[ "$status" -eq 0 ] && cmp -s "$work/first.out" "$work/second.out"
result "a second run finds the sources without cargo" $?

# 3. No cargo on PATH: one line on stderr, exit 1. PATH holds only the tools the script uses.
mkdir -p "$work/bin"
for tool in sh mkdir cat grep tar rm mv rmdir; do
    ln -s "$(command -v "$tool")" "$work/bin/$tool"
done
status=0
PATH=$work/bin sh "$fetch" "$work/nocargo" >/dev/null 2>"$work/nocargo.err" || status=$?
[ "$status" -eq 1 ] && [ "$(wc -l <"$work/nocargo.err")" -eq 1 ] && grep -q 'cargo not found' "$work/nocargo.err"
result "without cargo: exit 1 and one line ($(cat "$work/nocargo.err"))" $?

echo "fetch-peers: $passed passed, $failed failed"
[ "$failed" -eq 0 ] || exit 1
rm -rf "$work"
