# SPDX-License-Identifier: MIT
"""fits-cse3320 as the seed measured it: the runs behind the report's section.

Three measurements the demo's ordinary replays do not make (``heapkit demo``
stores them in ``extra.cse3320``):

- ``header``: the seed's five steps (one round of the ``cse3320`` workload in
  its fixed order) replayed on the four fits with the seed's 24-byte block
  header. heapkit's tag is smaller (8 bytes on a 64-bit host), so the engine
  pads every request by the difference (``hk-replay --pad``); with the
  workload's sizes, all multiples of 8, each block then has exactly the
  seed's size. The per-block overhead is measured, not assumed: the max heap
  of one malloc of :data:`PROBE_SIZE` bytes minus the request.
- ``rss``: the seed's comparison of resident size with the system malloc:
  ``hk-fits-process`` (ports/posix/fits_process.c) makes the timing test's
  requests (:data:`TIMING_ROUNDS` rounds) with glibc's malloc and under
  LD_PRELOAD=libheapkit_malloc.so with HEAPKIT_ALLOCATOR=seqfit-first,
  -next, -best, -worst, and reports its peak RSS (VmHWM) and mean ns per call.
- ``icount``: the timing test's calls on the emulated Cortex-M3 (QEMU
  mps2-an385, -O2, :func:`heapkit.target.bench`), exact instructions per
  malloc and free for the four fits and the toolchain's C library (newlib),
  and each fit's malloc on the same allocations without their frees (no
  free-list search: the seed's "75 % shorter search" is judged on the rest).

    heapkit fits-cse3320 [--repeats N] [--json FILE]

prints the tables and the verdicts; the --json file is a results document
that ``heapkit report`` takes next to a demo's results.json (its
``extra.cse3320`` replaces the demo's).
"""
from __future__ import annotations

import json
import statistics
from pathlib import Path
from typing import Any

from . import engine, native, target, workloads
from .errors import HeapkitError
from .render import text_table
from .seeds.fits_cse3320 import (CSE_RSS_HEAD, CSE_TIMING_HEAD, CSE_PAPER_RANK, claims_cse3320,
                                 cse3320_counter_rows, cse3320_ranking, cse3320_rss_rows,
                                 cse3320_timing_rows, ranking_text)
from .trace import OP_FREE, OP_MALLOC, TraceBuilder

PAPER_HEADER = 24             # the seed's struct _block: size, next, free, padding (64-bit)
PROBE_SIZE = 64
TIMING_ROUNDS = 100           # the seed averaged its timing test over 100 iterations
FITS = ("seqfit-first", "seqfit-next", "seqfit-best", "seqfit-worst")
TARGET_LIBC = "newlib"        # the C library's malloc on the Cortex-M3 target
LIB_ENV, LIB_TARGET = "HEAPKIT_MALLOC_LIB", "heapkit_malloc"
PROCESS_ENV, PROCESS_TARGET = "HEAPKIT_FITS_PROCESS", "hk-fits-process"


def block_overhead(alloc: str = FITS[0]) -> int:
    """Bytes a seqfit block costs beyond its request, measured with the engine."""
    b = TraceBuilder(what="probe")
    b.malloc(PROBE_SIZE)
    res = engine.replay(b.build("overhead-probe"), alloc, series=0, timing=False)
    return int(res["replay"]["counters"]["max_heap"]) - PROBE_SIZE


def header_runs(header: int = PAPER_HEADER) -> dict[str, Any]:
    """One fixed-order round on the four fits, with heapkit's own header and with *header*."""
    overhead = block_overhead()
    if overhead > header:
        raise HeapkitError(f"seqfit's blocks cost {overhead} bytes, more than a {header}-byte header")
    trace = workloads.generate("cse3320", rounds=1, shuffle=0)
    runs = []
    for pad in (0, header - overhead):
        for a in FITS:
            res = engine.replay(trace, a, series=0, timing=False, pad=pad)
            runs.append({"allocator": a, "pad": pad, "header": overhead + pad,
                         "counters": res["replay"]["counters"]})
    return {"own_header": overhead, "paper_header": header, "runs": runs}


def requests_text(rounds: int = TIMING_ROUNDS) -> str:
    """The timing test's requests in hk-fits-process's input form."""
    rec = workloads.generate("cse3320", rounds=rounds, shuffle=0).records
    lines = [f"m {r['id']} {r['size']}" if r["op"] == OP_MALLOC else f"f {r['id']}"
             for r in rec if r["op"] in (OP_MALLOC, OP_FREE)]
    return "\n".join(lines) + "\n"


def _process(process, lib, alloc: str | None, requests: str) -> dict:
    return native.run_json([str(process)], f"{PROCESS_TARGET} ({alloc or 'glibc'})",
                           None if alloc is None else lib, {"HEAPKIT_ALLOCATOR": alloc or ""}, requests)


def rss(repeats: int = 3, rounds: int = TIMING_ROUNDS) -> dict[str, Any]:
    """Peak RSS and ns per call of the seed's test process, per malloc: medians of
    *repeats* interleaved runs."""
    if repeats < 1:
        raise HeapkitError("cse3320 rss: repeats must be >= 1")
    lib = native.find(LIB_ENV, LIB_TARGET)
    process = native.find(PROCESS_ENV, PROCESS_TARGET)
    requests = requests_text(rounds)
    configs: list[str | None] = [None, *FITS]
    got: dict[str, list[dict]] = {a or "glibc": [] for a in configs}
    for r in range(repeats):
        for a in configs[r % len(configs):] + configs[:r % len(configs)]:
            got[a or "glibc"].append(_process(process, lib, a, requests))
    out = []
    for name, rs in got.items():
        out.append({"allocator": name,
                    **{k: statistics.median(x[k] for x in rs)
                       for k in ("rss_start_kb", "rss_peak_kb", "malloc_mean_ns", "free_mean_ns")},
                    "mallocs": rs[0]["mallocs"], "frees": rs[0]["frees"]})
    return {"rounds": rounds, "repeats": repeats, "configs": out}


def grow_only(trace):
    """*trace*'s allocations without its frees: every malloc finds an empty free list and
    grows the heap, so what a fit's malloc costs there is its path without a search."""
    b = TraceBuilder(what="cse3320 allocations only")
    for r in trace.records:
        if r["op"] == OP_MALLOC:
            b.malloc(int(r["size"]))
    return b.build("cse3320-grow")


def icount(rounds: int = TIMING_ROUNDS, jobs: int = 2, progress: bool = False) -> dict[str, Any]:
    """Exact Cortex-M3 instructions per malloc and free on the timing test's calls (-O2)
    ("runs"), and per malloc of the four fits on the same allocations without the frees
    ("grow": the malloc path without a free-list search, :func:`grow_only`)."""
    if missing := target.missing_tools():
        raise HeapkitError("the Cortex-M3 counts need " + ", ".join(missing))
    trace = workloads.generate("cse3320", rounds=rounds, shuffle=0)
    doc = target.bench([("cse3320", trace), ("cse3320-grow", grow_only(trace))],
                       allocs=[*FITS, TARGET_LIBC], opts=("-O2",), jobs=jobs, progress=progress)
    out, grow = [], []
    for r in doc["runs"]:
        if r.get("result") is None:
            if r["trace"] == "cse3320":
                out.append({"allocator": r["allocator"], "skipped": r.get("skipped", "skipped")})
            continue
        stats = {kind: {k: r["stats"][kind][k] for k in ("count", "mean", "p50", "max")}
                 for kind in ("malloc", "free") if r["stats"][kind]["count"]}
        if r["trace"] == "cse3320":
            out.append({"allocator": r["allocator"], **stats})
        elif r["allocator"] in FITS:
            grow.append({"allocator": r["allocator"], "malloc": stats["malloc"]})
    return {"target": doc["target"], "machine": doc["machine"], "opt": "-O2", "rounds": rounds,
            "runs": out, "grow": grow}


def collect(repeats: int = 3, jobs: int = 2, progress: bool = False) -> dict[str, Any]:
    """All three (*repeats* runs per malloc for the RSS), each replaced by {"error": why}
    when it cannot run here."""
    out: dict[str, Any] = {}
    parts = (("header", header_runs, {}), ("rss", rss, {"repeats": repeats}),
             ("icount", icount, {"jobs": jobs, "progress": progress}))
    for key, func, kw in parts:
        try:
            out[key] = func(**kw)
        except HeapkitError as e:
            out[key] = {"error": str(e)}
    return out


def run(args) -> int:
    """``heapkit fits-cse3320``: measure, print the tables, the ranking and the verdicts."""
    got = collect(repeats=args.repeats, jobs=args.jobs, progress=True)
    doc = {"kind": "heapkit-demo", "version": 1, "meta": {}, "runs": [], "size_runs": [],
           "traces": {}, "extra": {"cse3320": got}}
    for key in ("header", "rss", "icount"):
        if "error" in got[key]:
            print(f"{key}: not measured: {got[key]['error']}")
    if "error" not in got["header"]:
        head, rows, _ = cse3320_counter_rows(doc)
        print(f"Counters, one fixed-order round; {got['header']['own_header']}-B header: "
              f"heapkit's own, {got['header']['paper_header']}-B: the seed's (hk-replay --pad)")
        print(text_table(head, rows, right=range(1, len(head))) + "\n")
    print("Malloc test, Cortex-M3 instructions per call (-O2); System: newlib")
    print(text_table(CSE_TIMING_HEAD[:7], [r[:7] for r in cse3320_timing_rows(doc)],
                     right=range(1, 7)) + "\n")
    if "error" not in got["rss"]:
        print(f"The test process ({got['rss']['rounds']} rounds), medians of "
              f"{got['rss']['repeats']} runs")
        print(text_table(CSE_RSS_HEAD, cse3320_rss_rows(doc), right=range(1, 5)) + "\n")
    places = cse3320_ranking(doc)
    print(f"Ranking: measured {ranking_text(places) if places else 'n/a'}; "
          f"the paper's {ranking_text(CSE_PAPER_RANK)}\n")
    for c in claims_cse3320(doc):
        print(f"- {c.claim}: {c.verdict}. {c.reason}")
    if args.json:
        try:
            Path(args.json).write_text(json.dumps(doc) + "\n")
        except OSError as e:
            raise HeapkitError(f"{args.json}: cannot write: {e.strerror or e}") from None
    return 0
