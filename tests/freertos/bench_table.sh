#!/bin/sh
# SPDX-License-Identifier: MIT
# bench_table.sh BENCH_BINARY...: run each FreeRTOS heap's bench binary
# (app_bench.c) REPS times, interleaved so that every heap sees the same
# machine, and print the buddy-freertos seed's comparison tables side by side:
# fragmentation and merge statistics (deterministic: one run's figures) and
# alloc/free times in ns (per figure, the median over the REPS runs; ratio =
# this heap's median / heap_4's median). Exit status 1 if a binary fails.
set -eu
REPS=${REPS:-5}
[ $# -ge 1 ] || { echo "usage: bench_table.sh BENCH_BINARY..." >&2; exit 1; }
out=$(mktemp)
trap 'rm -f "$out"' EXIT
r=1
while [ "$r" -le "$REPS" ]; do
    for bin in "$@"; do
        line=$("$bin" single | grep '^heap=') || { echo "bench_table.sh: $bin failed" >&2; exit 1; }
        echo "rep=$r $line" >>"$out"
    done
    r=$((r + 1))
done
awk -v reps="$REPS" '
function med(key,   n, i, j, t, a) {
    n = cnt[key]
    for (i = 1; i <= n; i++) a[i] = vals[key, i]
    for (i = 2; i <= n; i++) { t = a[i]; for (j = i - 1; j >= 1 && a[j] > t; j--) a[j + 1] = a[j]; a[j + 1] = t }
    return a[int((n + 1) / 2)]
}
{
    for (i = 1; i <= NF; i++) { split($i, kv, "="); f[kv[1]] = kv[2] }
    h = f["heap"]
    if (!(h in seen)) { seen[h] = 1; order[++nh] = h }
    for (k in f) { key = h SUBSEP k; vals[key, ++cnt[key]] = f[k] }
    delete f
}
function v(h, k) { return med(h SUBSEP k) }
END {
    printf "FreeRTOS heaps, 1 MiB, %d random blocks of 16 B..4 KiB, every other one freed (buddy-freertos seed, table 3)\n", 128
    printf "%-8s %12s %12s %12s %12s\n", "heap", "free bytes", "largest", "smallest", "free blocks"
    for (i = 1; i <= nh; i++) { h = order[i]
        printf "%-8s %12d %12d %12d %12d\n", h, v(h, "frag_free"), v(h, "frag_largest"), v(h, "frag_smallest"), v(h, "frag_blocks") }
    printf "\nAfter freeing everything (seed, table 4); start = the fresh heap\n"
    printf "%-8s %12s %12s %12s %12s %14s\n", "heap", "free bytes", "largest", "smallest", "free blocks", "back to start"
    for (i = 1; i <= nh; i++) { h = order[i]
        back = (v(h, "merge_free") == v(h, "start_free") && v(h, "merge_blocks") == v(h, "start_blocks") && v(h, "merge_largest") == v(h, "start_largest")) ? "yes" : "no"
        printf "%-8s %12d %12d %12d %12d %14s\n", h, v(h, "merge_free"), v(h, "merge_largest"), v(h, "merge_smallest"), v(h, "merge_blocks"), back }
    for (p = 1; p <= 2; p++) {
        op = (p == 1) ? "alloc" : "free"
        printf "\n%s time, ns per call on the fragmented heap, 40000 calls (seed, table %d); median of %d runs per figure\n", (p == 1) ? "pvPortMalloc" : "vPortFree", (p == 1) ? 5 : 6, reps
        printf "%-8s %8s %8s %8s %8s %10s %16s\n", "heap", "min", "median", "avg", "p99", "max", "median/heap_4"
        base = ("heap_4" in seen) ? v("heap_4", op "_med") : 0
        for (i = 1; i <= nh; i++) { h = order[i]
            ratio = base > 0 ? sprintf("%.2f", v(h, op "_med") / base) : "-"
            printf "%-8s %8d %8d %8d %8d %10d %16s\n", h, v(h, op "_min"), v(h, op "_med"), v(h, op "_avg"), v(h, op "_p99"), v(h, op "_max"), ratio }
    }
    printf "\nIncluded in every figure above: vTaskSuspendAll + xTaskResumeAll, median %d ns (POSIX port, scheduler not started)\n", v(order[1], "lock_med")
}' "$out"
