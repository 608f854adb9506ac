#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The malloc replacement under real programs: each program of programs.sh
# runs once under glibc's malloc, then under LD_PRELOAD=libheapkit_malloc.so
# with each heapkit allocator (and buddy with HEAPKIT_RELEASE=1). Its stdout
# must be identical to glibc's, HEAPKIT_ABORT_ON_ERROR=1 turns any misuse
# report into a failure, and HEAPKIT_STATS must show that the library served
# the allocations of every process (git and gcc start several).
#
#   run_programs.sh LIB [ALLOCATOR...]    (default: every allocator)
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
[ $# -ge 1 ] || { echo "usage: run_programs.sh path/to/libheapkit_malloc.so [allocator...]" >&2; exit 2; }
[ -f "$1" ] || { echo "run_programs.sh: $1: no such file (build it: cmake --build build/gcc)" >&2; exit 2; }
lib=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
shift
allocators=("$@")
[ ${#allocators[@]} -gt 0 ] || allocators=(buddy buddy-lazy tlsf seqfit-first seqfit-next seqfit-best seqfit-worst buddy+release)

work=$(mktemp -d "${TMPDIR:-/tmp}/heapkit-programs.XXXXXX")
trap 'rm -rf "$work"' EXIT
"$here/programs.sh" prepare "$work/in"
failed=0

for prog in $("$here/programs.sh" list); do
  "$here/programs.sh" run "$prog" "$work/in" > "$work/$prog.glibc" 2> "$work/$prog.glibc.err" || {
    echo "FAIL $prog under glibc malloc:"; cat "$work/$prog.glibc.err"; exit 1; }
  line="$(printf '%-7s' "$prog")"
  for a in "${allocators[@]}"; do
    alloc=${a%+release}
    release=0; [ "$a" = "$alloc" ] || release=1
    stats="$work/$prog.$a.stats"
    start=$(date +%s%N)
    status=0
    env LD_PRELOAD="$lib" HEAPKIT_ALLOCATOR="$alloc" HEAPKIT_RELEASE=$release HEAPKIT_ABORT_ON_ERROR=1 \
        HEAPKIT_STATS="$stats" "$here/programs.sh" run "$prog" "$work/in" \
        > "$work/$prog.$a" 2> "$work/$prog.$a.err" || status=$?
    ms=$(( ($(date +%s%N) - start) / 1000000 ))
    why=""
    if [ $status -ne 0 ]; then
      why="exit status $status: $(tail -n 3 "$work/$prog.$a.err" | tr '\n' ' ')"
    elif ! cmp -s "$work/$prog.glibc" "$work/$prog.$a"; then
      why="output differs from glibc's: $(diff "$work/$prog.glibc" "$work/$prog.$a" | head -n 4 | tr '\n' ' ')"
    elif [ ! -s "$stats" ] || grep -qv " allocator=$alloc release=$release " "$stats"; then
      why="HEAPKIT_STATS shows no process served by heapkit $a"
    elif ! awk '{ for (i = 1; i <= NF; i++) if ($i ~ /^calls=/) { split($i, kv, "="); if (kv[2] + 0 == 0) bad = 1 } }
               END { exit bad }' "$stats"; then
      why="a process made no call to heapkit"
    fi
    if [ -n "$why" ]; then
      echo "FAIL $prog under heapkit $a: $why"
      failed=1
      line+=" $(printf '%-13s' "$a:FAIL")"
    else
      line+=" $(printf '%-13s' "$a:ok($(wc -l < "$stats")p)")"
    fi
    echo "$prog $a ${ms} ms, $(wc -l < "$stats" 2>/dev/null || echo 0) processes" >> "$work/times"
  done
  echo "$line"
done
echo "== wall time per run"
column -t "$work/times" 2>/dev/null || cat "$work/times"
if [ $failed -ne 0 ]; then
  echo "malloc-test: FAILED"
  exit 1
fi
echo "malloc-test: every program's output is identical to glibc's under every heapkit allocator"
