#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Run every fuzz_<entry> target of a HEAPKIT_FUZZ build for a bounded time.
#   tests/fuzz/run_fuzzers.sh <build-dir> [seconds per fuzzer (10)] [parallel jobs (2)]
# Each fuzzer starts from the generated seed corpus (tests/fuzz/corpus-<name>
# when the build made one for it, else tests/fuzz/corpus) plus what earlier
# runs in the same build dir found (<build-dir>/fuzz-work/<name>/), stops after the
# given time or 2,000,000 inputs, and leaves any crashing input in
# <build-dir>/fuzz-work/crash-<entry>-*. Exits nonzero if any fuzzer failed.
set -euo pipefail

build=${1:?usage: run_fuzzers.sh <build-dir> [seconds] [jobs]}
seconds=${2:-10}
jobs=${3:-2}
fuzzdir="$build/tests/fuzz"
work="$build/fuzz-work"
mkdir -p "$work"

shopt -s nullglob
fuzzers=("$fuzzdir"/fuzz_*)
targets=()
for f in "${fuzzers[@]}"; do
    [[ -x $f && $(basename "$f") != fuzz_seed_corpus ]] && targets+=("$f")
done
if [[ ${#targets[@]} -eq 0 ]]; then
    echo "run_fuzzers: no fuzz targets in $fuzzdir (configure with -DHEAPKIT_FUZZ=ON, build target 'fuzzers')" >&2
    exit 1
fi

run_one() {
    local bin=$1 name
    name=$(basename "$bin")
    name=${name#fuzz_}
    mkdir -p "$work/$name"
    rm -f "$work/$name.failed"
    local seeds="$fuzzdir/corpus"
    [[ -d $fuzzdir/corpus-$name ]] && seeds="$fuzzdir/corpus-$name"
    cp -n "$seeds"/* "$work/$name/" 2>/dev/null || true
    if "$bin" -max_total_time="$seconds" -runs=2000000 -max_len=4096 -timeout=30 -rss_limit_mb=2048 \
        -print_final_stats=1 -artifact_prefix="$work/crash-$name-" "$work/$name" >"$work/$name.log" 2>&1; then
        local runs
        runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$work/$name.log")
        echo "fuzz $name: ok, ${runs:-?} inputs in ${seconds}s"
    else
        echo "fuzz $name: FAILED (log: $work/$name.log)"
        grep -E "SHADOW FAILURE|ERROR: |SUMMARY|runtime error" "$work/$name.log" | head -5 | sed 's/^/    /'
        for a in "$work"/crash-"$name"-*; do
            echo "    reproduce: $bin $a"
        done
        touch "$work/$name.failed"
    fi
}

for bin in "${targets[@]}"; do
    while [[ $(jobs -rp | wc -l) -ge $jobs ]]; do
        sleep 0.2
    done
    run_one "$bin" &
done
wait
failed=("$work"/*.failed)
if [[ ${#failed[@]} -ne 0 ]]; then
    echo "fuzz: ${#failed[@]} of ${#targets[@]} fuzzers FAILED" >&2
    exit 1
fi
echo "fuzz: all ${#targets[@]} fuzzers ran ${seconds}s without a failure"
