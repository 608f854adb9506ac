#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The README's main job on a clone with nothing beside it, as a user has it:
# clones this repository's HEAD into an empty temporary folder (no ../shared,
# no sibling build, no cache of ours), runs `make demo DEMO_FLAGS=--quick`
# there, and checks (check_demo_advice.py) that the report opens with the
# advice for every real trace in data/traces, with the worst case on both
# emulated targets, and runs the lab's tests of a quick demo (marked demo) on it:
# lab-test leaves them to this one run.
#
#   tests/repo/check_bare_clone.sh            (make bare-clone-test)
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
git clone --quiet --no-hardlinks "$repo" "$tmp/heapkit"
clone=$tmp/heapkit
if [ "$(ls -A "$tmp")" != heapkit ]; then
  echo "bare clone: $tmp holds more than the clone" >&2
  exit 1
fi
echo "-- make demo DEMO_FLAGS=--quick in a bare clone ($(git -C "$clone" rev-parse --short HEAD))"
# HEAPKIT_CACHE and the like would point the clone at this checkout's files.
if ! env -u HEAPKIT_CACHE -u HEAPKIT_TARGET_BUILD -u HEAPKIT_REPLAY -u HEAPKIT_NETAPP \
    make -C "$clone" --no-print-directory demo DEMO_FLAGS=--quick >"$tmp/demo.log" 2>&1; then
  tail -40 "$tmp/demo.log"
  echo "bare clone: make demo failed (the log's tail above)" >&2
  exit 1
fi
grep -E "^advice for " "$tmp/demo.log" || true
"$clone/.venv/bin/python" "$clone/tests/repo/check_demo_advice.py" "$clone/build/demo" "$clone/data/traces"
# The report's own tests of a quick demo (lab/tests, marked demo), on this one.
HEAPKIT_DEMO_DIR="$clone/build/demo" "$clone/.venv/bin/python" -m pytest "$clone/lab/tests" -q -m demo -p no:cacheprovider
