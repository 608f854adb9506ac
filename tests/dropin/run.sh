#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tests/dropin/run.sh [WORK]: the drop-ins (dropin/heapkit_<name>.c and .h) as a
# firmware takes them. Fails (exit 1) on the first problem.
#  1. tools/dropin.py --check: every committed drop-in is what the sources give now.
#  2. Each drop-in's .c alone, beside its .h in an empty directory, compiled by
#     gcc, clang, arm-none-eabi-gcc (Cortex-M3) and riscv64-unknown-elf-gcc
#     (RV32IMAC) at HK_HARDENING 0, 1 and 2, warnings as errors.
#  3. Its Cortex-M3 and RV32 objects need nothing but memcpy, memset and
#     memmove, integer helpers of libgcc and (the lock-free pool) atomics,
#     as tools/check_freestanding.sh allows the library.
#  4. Every drop-in in one program (all but bump, which the pool drop-in
#     holds, and bump with tlsf in another), each but tlsf with
#     HK_DROPIN_UNIFORM=0, linked with and without --gc-sections and run.
# The unit tests against the drop-ins are ctest's dropin_* (tests/dropin/CMakeLists.txt).
set -euo pipefail
cd "$(dirname "$0")/../.."

work=${1:-build/dropin-test}
rm -rf "$work"
mkdir -p "$work"
work=$(realpath "$work")

# Stale drop-ins fail the run at its end, after the rest has shown whether they still build.
current=1
python3 tools/dropin.py --check || current=0

names=$(cd dropin && ls heapkit_*.c | sed -E 's/^heapkit_(.*)\.c$/\1/')
[[ -n $names ]] || { echo "run.sh: no drop-ins in dropin/" >&2; exit 1; }

flags=(-Wall -Wextra -Wpedantic -Wshadow -Wconversion -Werror -ffreestanding -O2)
compilers=("gcc" "clang" "arm-none-eabi-gcc -mcpu=cortex-m3 -mthumb" "riscv64-unknown-elf-gcc -march=rv32imac -mabi=ilp32")
allowed='^(memcpy|memset|memmove|__gnu_thumb1_case_[a-z0-9]+|__aeabi_(uidiv|uidivmod|idiv|idivmod|ldivmod|uldivmod|llsl|llsr|lasr|lmul|lcmp|ulcmp)|__(u?(div|mod)[sd]i3|mul[sd]i3|ash[lr]di3|lshrdi3|clz[sd]i2|ctz[sd]i2|popcount[sd]i2|ffs[sd]i2|bswap[sd]i2))$'
allowed_atomic='^(__atomic_[a-z_0-9]+|__sync_[a-z_0-9]+)$'

std_of() { [[ $1 == lfpool ]] && echo -std=c11 || echo -std=c99; }

# 2 and 3 for one drop-in, in WORK/alone-NAME; the drop-ins run side by side.
alone() {
    local name=$1 dir=$work/alone-$1 compiler cc level obj sym
    mkdir -p "$dir"
    cp "dropin/heapkit_$name.c" "dropin/heapkit_$name.h" "$dir/"
    for compiler in "${compilers[@]}"; do
        read -r -a cc <<<"$compiler"
        for level in 0 1 2; do
            obj=$dir/${cc[0]}-l$level.o
            (cd "$dir" && "${cc[@]}" "$(std_of "$name")" "${flags[@]}" -DHK_HARDENING=$level -c "heapkit_$name.c" -o "$obj")
            [[ ${cc[0]} == *-elf-gcc || ${cc[0]} == *-eabi-gcc ]] || continue
            while read -r sym; do
                [[ $sym =~ $allowed ]] && continue
                [[ $name == lfpool && $sym =~ $allowed_atomic ]] && continue
                echo "run.sh: heapkit_$name.c (${cc[*]}, HK_HARDENING=$level) needs '$sym'" >&2
                return 1
            done < <(nm -u "$obj" | awk '{print $NF}')
        done
    done
    echo "run.sh: heapkit_$name.c alone: gcc, clang, Cortex-M3, RV32 at levels 0-2, nothing but memcpy/memset and helpers"
}
pids=()
for name in $names; do
    alone "$name" >"$work/alone-$name.log" 2>&1 &
    pids+=($!)
done
failed=0
for pid in "${pids[@]}"; do
    wait "$pid" || failed=1
done
cat "$work"/alone-*.log
[[ $failed -eq 0 ]] || exit 1

# 4: together.c calls each allocator directly and through the one uniform layer.
together() {
    local prog=$1 gc=$2 uniform=$3 define=$4
    shift 4
    local dir=$work/$prog$gc objs=() name off
    mkdir -p "$dir"
    for name in "$@"; do
        cp "dropin/heapkit_$name.c" "dropin/heapkit_$name.h" "$dir/"
        off=-DHK_DROPIN_UNIFORM=0
        [[ $name == "$uniform" ]] && off=-DHK_DROPIN_UNIFORM=1
        (cd "$dir" && gcc "$(std_of "$name")" "${flags[@]}" "$off" ${gc:+-ffunction-sections -fdata-sections} \
            -c "heapkit_$name.c" -o "$name.o")
        objs+=("$name.o")
    done
    cp tests/dropin/together.c "$dir/"
    (cd "$dir" && gcc -std=c99 "${flags[@]}" ${define:+"$define"} -c together.c -o together.o &&
        gcc together.o "${objs[@]}" ${gc:+-Wl,--gc-sections} -o together && ./together)
}
for gc in "" "-gc"; do
    together all "$gc" tlsf "" tlsf pool lfpool buddy seqfit dmm
    together bump "$gc" bump -DWITH_BUMP tlsf bump
done
echo "run.sh: drop-ins together (the uniform layer from one, HK_DROPIN_UNIFORM=0 in the rest) link and run, with and without --gc-sections"
if [[ $current -eq 0 ]]; then
    echo "run.sh: dropin/ differs from what tools/dropin.py makes of the sources (above)" >&2
    exit 1
fi
