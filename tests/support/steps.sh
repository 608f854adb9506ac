# SPDX-License-Identifier: MIT
# Sourced by the shell test drivers (tests/consumer/run.sh, tests/package/run.sh,
# tests/repo/check_fetch_peers.sh), after they set $work:
#   step NAME FUNCTION [ARGS...]  run one check in a subshell, its output in
#                                 $work/<n>-<function>.log; print ok or FAILED
#                                 and, on failure, the log's tail
#   steps_summary LABEL           the time taken and the closing
#                                 "N passed, N failed" line; fails if any failed
steps_passed=0
steps_failed=0
steps_start=$(date +%s)

step() {
    local name=$1 log
    shift
    log=$work/$((steps_passed + steps_failed + 1))-$1.log
    if ("$@") >"$log" 2>&1; then
        echo "ok      $name"
        steps_passed=$((steps_passed + 1))
    else
        echo "FAILED  $name (log: $log)"
        tail -n 25 "$log" | sed 's/^/    /'
        steps_failed=$((steps_failed + 1))
    fi
}

steps_summary() {
    echo "$1: $(( $(date +%s) - steps_start )) s"
    echo "$1: $steps_passed passed, $steps_failed failed"
    [ "$steps_failed" -eq 0 ]
}
