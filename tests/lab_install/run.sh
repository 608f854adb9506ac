#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The lab as a user installs it: `pip install CHECKOUT/lab` into a fresh venv
# outside the checkout, then the heapkit command in another directory with no
# checkout left (the copy it was installed from is deleted first): gen,
# bench, size and report on a generated trace and on an external-format one,
# the other installed tools (trace, netapp), and the one-line answers when a
# tool cannot be there (--target without QEMU or a cross compiler).
#
#   tests/lab_install/run.sh        (make lab-install-test; PYTHON picks the interpreter)
#
# The wheel build compiles the engine and the tools (CMAKE_BUILD_PARALLEL_LEVEL
# jobs) and, when cargo is there, fetches the peers into it.
set -euo pipefail

repo=$(cd "$(dirname "$0")/../.." && pwd)
python=${PYTHON:-python3}
work=$(mktemp -d "${TMPDIR:-/tmp}/heapkit-lab-install.XXXXXX")
trap 'rm -rf "$work"' EXIT
passed=0

fail() {
  echo "lab-install: FAILED: $*" >&2
  exit 1
}
ok() {
  passed=$((passed + 1))
  echo "ok $passed - $*"
}

# The checkout's files (tracked and new, not ignored: no build tree) to a copy.
mkdir "$work/src"
git -C "$repo" ls-files -z --cached --others --exclude-standard |
  (cd "$repo" && tar --null --ignore-failed-read -T - -cf -) | tar -xf - -C "$work/src"
cp "$repo/lab/tests/data/wee_sample.trace" "$work/"

"$python" -m venv "$work/venv"
"$work/venv/bin/pip" install --quiet --disable-pip-version-check "$work/src/lab" >"$work/pip.log" 2>&1 ||
  { tail -30 "$work/pip.log" >&2; fail "pip install lab"; }
rm -rf "$work/src"
ok "pip install lab (scikit-build-core, the repository's CMake)"

mkdir "$work/run"
cd "$work/run"
mv "$work/wee_sample.trace" .
hk="$work/venv/bin/heapkit"
py="$work/venv/bin/python"

# Every native tool comes from the package.
"$py" - "$work/venv" <<'EOF' || fail "the installed package's tools"
import sys
from pathlib import Path
from heapkit import capture, engine, explore, kth_release, native, netapps
venv = Path(sys.argv[1]).resolve()
assert native.INSTALLED and native.CHECKOUT is None, "the package thinks it runs from a checkout"
for tool in (engine.find_binary(), capture.find_library(), netapps.find_binary(), explore.binary(),
             *kth_release._paths()):
    assert venv in tool.parents, f"{tool} is not in the venv"
assert (native.SOURCE_ROOT / "src" / "tlsf.c").is_file(), "the C sources are not installed"
EOF
ok "hk-replay, libhkcapture.so, hk-netapp, hk-explore and the malloc port are the package's"

"$hk" gen ramp -p events=4000 -o ramp.hkb -q
"$hk" info --json ramp.hkb >ramp.json
"$hk" info --json wee_sample.trace >wee.json
ok "heapkit gen and info"

"$hk" bench --trace ramp.hkb wee_sample.trace --alloc tlsf,buddy,seqfit-first --json bench.json >bench.txt ||
  fail "heapkit bench"
"$py" - <<'EOF' || fail "heapkit bench results"
import json
bench = json.load(open("bench.json"))
events = {"ramp": json.load(open("ramp.json"))["events"], "wee_sample": json.load(open("wee.json"))["events"]}
runs = bench["runs"]
assert bench["kind"] == "heapkit-bench" and len(runs) == 6, (bench["kind"], len(runs))
for r in runs:
    rep = r["result"]["replay"]
    assert rep["completed_records"] == events[r["trace"]], (r["allocator"], r["trace"], rep["completed_records"])
    assert rep["failures"]["total"] == 0, (r["allocator"], r["trace"], rep["failures"])
    assert rep["memory"]["peak_footprint"] > 0
table = open("bench.txt").read().splitlines()
assert sum(1 for ln in table if ln.split()[:1] in (["tlsf"], ["buddy"], ["seqfit-first"])) == 6, table
EOF
ok "heapkit bench: 3 allocators x 2 traces, every record replayed, no failure"

"$hk" size --trace ramp.hkb wee_sample.trace --alloc tlsf,buddy --json size.json >size.txt || fail "heapkit size"
"$py" - <<'EOF' || fail "heapkit size results"
import json
size = json.load(open("size.json"))
assert size["kind"] == "heapkit-size" and len(size["runs"]) == 4
for r in size["runs"]:
    s = r["result"]["search"]
    assert 0 < s["peak_live_requested"] <= s["min_arena"], (r["allocator"], r["trace"], s)
    assert r["ratio"] >= 1.0
assert set(size["geomean_ratio"]) == {"tlsf", "buddy"}
EOF
ok "heapkit size: the smallest arena holds the peak live bytes"

"$hk" report bench.json size.json -o report.html >report.txt 2>&1 || { cat report.txt >&2; fail "heapkit report"; }
grep -q '<html' report.html && grep -q 'data:image/png;base64' report.html &&
  grep -q 'seqfit-first' report.html && grep -q 'wee_sample' report.html || fail "report.html lacks its tables or plots"
ok "heapkit report: one HTML page with the runs and embedded plots"

"$hk" trace -o cap.hkb -- "$py" -c 'x = [bytes(i) for i in range(1000)]' 2>trace.txt || fail "heapkit trace"
"$hk" bench --trace cap.hkb --alloc tlsf >/dev/null || fail "bench of the captured trace"
ok "heapkit trace with the installed libhkcapture.so; its trace replays"

"$hk" netapp drr --synthetic plateau,packets=2000 --allocator tlsf --emit-trace drr.hkb >netapp.txt ||
  fail "heapkit netapp"
"$hk" size --trace drr.hkb --alloc tlsf >/dev/null || fail "size of the netapp trace"
ok "heapkit netapp with the installed hk-netapp; its trace sizes"

# A tool that cannot be there: one line naming what to install, status 2.
set +e
PATH=/nonexistent "$hk" bench --target cortex-m3 --no-host --trace ramp.hkb >/dev/null 2>target.err
status=$?
set -e
[ "$status" -eq 2 ] && [ "$(wc -l <target.err)" -eq 1 ] && grep -q 'apt-get install .*qemu-system-arm' target.err ||
  { cat target.err >&2; fail "--target without QEMU: status $status"; }
ok "--target without the cross tools: $(cat target.err)"

# The peers are in the engine when cargo fetched them at build time; otherwise
# asking for one says how to get them.
set +e
"$hk" bench --trace ramp.hkb --alloc o1heap >/dev/null 2>peer.err
status=$?
set -e
if [ "$status" -eq 0 ]; then
  ok "peers fetched at build time: o1heap replays"
else
  [ "$status" -eq 2 ] && [ "$(wc -l <peer.err)" -eq 1 ] && grep -q 'install cargo' peer.err ||
    { cat peer.err >&2; fail "a missing peer: status $status"; }
  ok "no peers in this build: $(cat peer.err)"
fi

echo "lab install: $passed passed, 0 failed"
