#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Wall time, CPU time and peak RSS of real programs under each malloc.

The programs are those of tests/posix/programs.sh (python3, sqlite3, git,
gcc; python-malloc, Python with PYTHONMALLOC=malloc, on request). Each runs under glibc's malloc, Debian's mimalloc and jemalloc
(LD_PRELOAD, found like the lab finds them) and libheapkit_malloc.so with
each heapkit allocator. Runs are interleaved: every round runs every
(allocator, program) pair once, the allocators in a rotated order, so a
change in the machine's load spreads over all of them. The table gives the
median over the rounds and the ratio to glibc's median. CPU time (user +
system of the program and its children) is far less disturbed by other jobs
on the machine than wall time. Peak RSS is the
largest resident set of the program's processes (wait4's ru_maxrss, which
covers the waited-for children: cc1 and as under gcc, git's helpers), as
GNU time (Debian package time) reports it.

    python3 tools/bench_programs.py --lib build/gcc/ports/posix/libheapkit_malloc.so
        [--repeats 5] [--programs python,sqlite] [--allocators glibc,tlsf,buddy+release]
        [--markdown] [--json out.json]

An allocator "NAME+release" is heapkit's NAME with HEAPKIT_RELEASE=1.
"""
from __future__ import annotations

import argparse
import ctypes.util
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PROGRAMS_SH = ROOT / "tests" / "posix" / "programs.sh"
HEAPKIT = ["buddy", "buddy-lazy", "tlsf", "seqfit-first", "seqfit-next", "seqfit-best",
           "seqfit-worst"]
PEERS = {"mimalloc": "mimalloc", "jemalloc": "jemalloc"}


def fail(msg: str) -> None:
    print(f"bench_programs: {msg}", file=sys.stderr)
    sys.exit(2)


def environment(alloc: str, lib: Path | None) -> dict[str, str]:
    env = dict(os.environ)
    for k in [k for k in env if k.startswith("HEAPKIT_")] + ["LD_PRELOAD"]:
        env.pop(k, None)
    if alloc == "glibc":
        return env
    if alloc in PEERS:
        so = ctypes.util.find_library(PEERS[alloc])
        if so is None:
            fail(f"{alloc}: lib{PEERS[alloc]} is not installed (apt-get install the Debian package)")
        env["LD_PRELOAD"] = so
        return env
    name, _, release = alloc.partition("+")
    if name not in HEAPKIT or release not in ("", "release"):
        fail(f"--allocators: {alloc}: unknown (glibc, mimalloc, jemalloc, or one of "
             f"{', '.join(HEAPKIT)}, optionally with +release)")
    if lib is None:
        fail("--lib is required for heapkit allocators")
    env["LD_PRELOAD"] = str(lib)
    env["HEAPKIT_ALLOCATOR"] = name
    env["HEAPKIT_RELEASE"] = "1" if release else "0"
    return env


# GNU time measures peak RSS: a child forked from this (larger) Python process
# would report Python's RSS as its own maximum (Linux carries the high-water
# mark over fork and exec), GNU time's small process does not distort it.
GNU_TIME = "/usr/bin/time"


def run_once(program: str, work: Path, env: dict[str, str]) -> tuple[float, float, int, str]:
    """(wall seconds, CPU seconds, peak RSS in KiB, stdout) of one run; RuntimeError when it fails."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err, \
            tempfile.NamedTemporaryFile() as rss:
        start = time.perf_counter()
        proc = subprocess.run([GNU_TIME, "-q", "-f", "%M %U %S", "-o", rss.name, str(PROGRAMS_SH), "run", program,
                               str(work)], env=env, stdout=out, stderr=err)
        wall = time.perf_counter() - start
        out.seek(0)
        err.seek(0)
        if proc.returncode != 0:
            last = err.read().decode(errors="replace").strip().splitlines()[-1:]
            raise RuntimeError(last[0] if last else f"exit status {proc.returncode}")
        kib, user, system = Path(rss.name).read_text().split()[-3:]
        return wall, float(user) + float(system), int(kib), out.read().decode(errors="replace")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lib", type=Path, help="libheapkit_malloc.so")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--programs", default=None, help="comma-separated (default: all)")
    ap.add_argument("--allocators", default=None,
                    help="comma-separated (default: glibc, mimalloc, jemalloc, every heapkit allocator, "
                         "buddy+release)")
    ap.add_argument("--markdown", action="store_true", help="print a Markdown table")
    ap.add_argument("--json", type=Path, help="write every sample here")
    args = ap.parse_args()

    if args.repeats < 1:
        fail(f"--repeats: {args.repeats}: must be >= 1")
    if not Path(GNU_TIME).is_file():
        fail(f"{GNU_TIME}: not found (apt-get install time)")
    if args.lib is not None and not args.lib.is_file():
        fail(f"--lib: {args.lib}: no such file (build it: make build)")
    lib = args.lib.resolve() if args.lib else None
    known = subprocess.run([str(PROGRAMS_SH), "list-all"], capture_output=True, text=True,
                           check=True).stdout.split()
    programs = (args.programs.split(",") if args.programs
                else subprocess.run([str(PROGRAMS_SH), "list"], capture_output=True, text=True,
                                    check=True).stdout.split())
    for p in programs:
        if p not in known:
            fail(f"--programs: {p}: unknown (one of {', '.join(known)})")
    allocs = (args.allocators.split(",") if args.allocators
              else ["glibc", "mimalloc", "jemalloc"] + HEAPKIT + ["buddy+release"])
    if "glibc" not in allocs:
        allocs.insert(0, "glibc")
    envs = {a: environment(a, lib) for a in allocs}

    samples: dict[tuple[str, str], list[tuple[float, float, int]]] = {(a, p): [] for a in allocs for p in programs}
    failures: dict[tuple[str, str], str] = {}
    reference: dict[str, str] = {}
    with tempfile.TemporaryDirectory(prefix="heapkit-bench-") as tmp:
        work = Path(tmp)
        subprocess.run([str(PROGRAMS_SH), "prepare", str(work)], check=True)
        for r in range(args.repeats):
            order = allocs[r % len(allocs):] + allocs[:r % len(allocs)]
            for a in order:
                for p in programs:
                    if (a, p) in failures:
                        continue
                    try:
                        wall, cpu, rss, out = run_once(p, work, envs[a])
                    except RuntimeError as e:
                        failures[(a, p)] = str(e)
                        continue
                    if a == "glibc":
                        reference.setdefault(p, out)
                    if a != "glibc" and p in reference and out != reference[p]:
                        failures[(a, p)] = "output differs from glibc's"
                        continue
                    samples[(a, p)].append((wall, cpu, rss))
            print(f"round {r + 1}/{args.repeats} done", file=sys.stderr)

    rows = []
    for p in programs:
        base = samples[("glibc", p)]
        bw = statistics.median(s[0] for s in base) if base else None
        bc = statistics.median(s[1] for s in base) if base else None
        br = statistics.median(s[2] for s in base) if base else None
        for a in allocs:
            s = samples[(a, p)]
            if (a, p) in failures or not s:
                rows.append((p, a, None, None, None, None, None, None, failures.get((a, p), "no sample")))
                continue
            w = statistics.median(x[0] for x in s)
            c = statistics.median(x[1] for x in s)
            m = statistics.median(x[2] for x in s)
            rows.append((p, a, w, w / bw if bw else None, c, c / bc if bc else None, m / 1024,
                         m / br if br else None, ""))

    head = ("program", "malloc", "wall s", "x glibc", "CPU s", "x glibc", "peak RSS MiB", "x glibc")
    text = []
    for p, a, w, wr, c, cr, m, mr, why in rows:
        if w is None:
            text.append((p, a, "FAILED: " + why, "", "", "", "", ""))
        else:
            text.append((p, a, f"{w:.3f}", f"{wr:.2f}" if wr else "", f"{c:.2f}", f"{cr:.2f}" if cr else "",
                         f"{m:.1f}", f"{mr:.2f}" if mr else ""))
    print(f"# {args.repeats} interleaved rounds, medians; CPU = user + system of all the program's "
          "processes; peak RSS = the largest one's")
    if args.markdown:
        print("| " + " | ".join(head) + " |")
        print("|" + "---|" * len(head))
        for t in text:
            print("| " + " | ".join(t) + " |")
    else:
        widths = [max(len(str(r[i])) for r in [head] + text) for i in range(len(head))]
        for t in [head] + text:
            print("  ".join(str(c).ljust(w) for c, w in zip(t, widths)).rstrip())
    if args.json:
        args.json.write_text(json.dumps({"repeats": args.repeats, "samples": {
            f"{a}/{p}": s for (a, p), s in samples.items()}, "failures": {
            f"{a}/{p}": f for (a, p), f in failures.items()}}, indent=1))
    if failures:
        sys.exit(1)


if __name__ == "__main__":
    main()
