#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Is the allocator core freestanding? Fails (exit 1) with the offending symbol if not.
#   tools/check_freestanding.sh [host libheapkit.a (build/gcc/libheapkit.a)]
# 1. Every undefined symbol of every object in the host library is memcpy,
#    memset or memmove (the lock-free pool may also call atomic helpers).
# 2. The host objects use no floating-point instructions.
# 3. Compiled for Cortex-M0+ and RV32IMAC (soft float: any float operation
#    becomes a libgcc call), the objects need nothing beyond those and the
#    integer helpers libgcc provides (division, shifts, bit counts): no float
#    helper, no libc.
# 4. src/ and include/ include no header beyond stddef.h, stdint.h, string.h,
#    limits.h, stdbool.h, stdatomic.h (lock-free pool) and assert.h (hk_internal.h,
#    HK_DEBUG only).
set -euo pipefail
cd "$(dirname "$0")/.."

lib=${1:-build/gcc/libheapkit.a}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
status=0
allowed_libc='^(memcpy|memset|memmove)$'
allowed_atomic='^(__atomic_[a-z_0-9]+|__sync_[a-z_0-9]+)$'
allowed_libgcc='^(__gnu_thumb1_case_[a-z0-9]+|__aeabi_(uidiv|uidivmod|idiv|idivmod|ldivmod|uldivmod|llsl|llsr|lasr|lmul|lcmp|ulcmp)|__(u?(div|mod)[sd]i3|mul[sd]i3|ash[lr]di3|lshrdi3|clz[sd]i2|ctz[sd]i2|popcount[sd]i2|ffs[sd]i2|bswap[sd]i2))$'

# Symbols the library's own objects define (set by defined_in).
declare -A defined
defined_in() {
    local sym
    defined=()
    while read -r sym; do
        defined[$sym]=1
    done < <(nm --defined-only "$@" 2>/dev/null | awk 'NF == 3 {print $3}')
}

# Undefined symbols of one object that are neither the library's own nor allowed for it.
check_symbols() {
    local obj=$1 what=$2 extra=$3 sym
    while read -r sym; do
        [[ -z $sym || -n ${defined[$sym]:-} ]] && continue
        if [[ $sym =~ $allowed_libc ]] || [[ -n $extra && $sym =~ $extra ]]; then
            continue
        fi
        if [[ $what == *pool_lockfree* && $sym =~ $allowed_atomic ]]; then
            continue
        fi
        echo "check_freestanding: $what needs '$sym'" >&2
        status=1
    done < <(nm -u "$obj" 2>/dev/null | awk '{print $NF}' | grep -v ':$' || true)
}

# 1 and 2: the host library
if [[ ! -f $lib ]]; then
    echo "check_freestanding: $lib not found (build first: make build)" >&2
    exit 1
fi
lib=$(realpath "$lib")
(cd "$work" && ar x "$lib")
defined_in "$work"/*.o
for obj in "$work"/*.o; do
    name=$(basename "$obj")
    check_symbols "$obj" "host $name" ""
    if objdump -d --no-show-raw-insn "$obj" |
        grep -Eq $'\t''(cvt[a-z0-9]*|(add|sub|mul|div|sqrt|min|max)s[sd]|v?u?comis[sd]|fld|fst|fadd|fmul|fdiv)[[:space:]]'; then
        echo "check_freestanding: host $name uses floating-point instructions" >&2
        status=1
    fi
done

# 3: soft-float embedded targets
newlib_headers() {
    # compiling needs <string.h>; libnewlib-dev's headers serve when the target has no C library installed
    echo '#include <string.h>' | "$@" -x c -fsyntax-only - 2>/dev/null || echo "-idirafter /usr/include/newlib"
}
for target in "arm-none-eabi-gcc -mcpu=cortex-m0plus -mthumb" "riscv64-unknown-elf-gcc -march=rv32imac -mabi=ilp32"; do
    read -r -a cc <<<"$target"
    read -r -a inc <<<"$(newlib_headers "${cc[@]}" | grep -- -idirafter || true)"
    objs=()
    for src in src/*.c; do
        name=$(basename "$src" .c)
        grep -q "placeholder until the allocator lands" "$src" && continue
        std=-std=c99
        [[ $name == pool_lockfree ]] && std=-std=c11
        obj="$work/$name.${cc[1]#-m*=}.o"
        "${cc[@]}" "${inc[@]}" $std -Os -ffreestanding -Werror -Wall -Wextra -Iinclude -Isrc -c "$src" -o "$obj"
        objs+=("$obj")
    done
    defined_in "${objs[@]}"
    for obj in "${objs[@]}"; do
        check_symbols "$obj" "$(basename "$obj" .o) (${cc[0]} ${cc[1]})" "$allowed_libgcc"
    done
done

# 4: headers
while read -r line; do
    file=${line%%:*}
    header=$(sed -E 's/.*#include <([^>]+)>.*/\1/' <<<"$line")
    case "$header" in
    stddef.h | stdint.h | string.h | limits.h | stdbool.h) ;;
    stdatomic.h) [[ $file == src/pool_lockfree.c ]] || { echo "check_freestanding: $file includes <$header>" >&2; status=1; } ;;
    assert.h) [[ $file == src/hk_internal.h ]] || { echo "check_freestanding: $file includes <$header>" >&2; status=1; } ;;
    *) echo "check_freestanding: $file includes <$header>" >&2; status=1 ;;
    esac
done < <(grep -HE '^[[:space:]]*#[[:space:]]*include[[:space:]]*<' src/*.c src/*.h include/heapkit/*.h || true)

if [[ $status -eq 0 ]]; then
    echo "check_freestanding: ok (host objects need only memcpy/memset/memmove$([[ -f src/pool_lockfree.c ]] && echo ' and atomics'), no floating point, M0+/RV32 objects only integer libgcc helpers)"
fi
exit $status
