# SPDX-License-Identifier: MIT
"""``heapkit demo``: every allocator on every workload and real trace, then the report.

Steps (``collect`` then ``run``):

1. Traces: every workload of :mod:`heapkit.workloads` (seed 1, default
   parameters; ``--quick`` shrinks them), every real trace of the repository's
   data/traces (:data:`REAL_SETS`: the wee_alloc traces, the AOSP ``memory_replay``
   zips and heapkit's own embedded-style recordings; ``--traces DIR`` overrides), plus the extra traces the
   report's paper sections need: the cse3320 test as one fixed-order round,
   the kth process once per size level, prefixes of the kth trace, and a
   one-malloc-one-free trace (the "fresh heap" of the merge check).
   Preparation (Python) runs in a process pool.
2. Runs: ``hk-replay`` for every allocator of ``engine.list_allocators()``
   on every trace (series and heap-map snapshots on), a size search on
   every real trace, a size search of itc followed by a replay of itc at each
   allocator's smallest failure-free arena (the fctma-pools tables), and the
   extra runs; at most ``--jobs`` engine processes
   at once (default 2), longest first, behind a tqdm progress bar. An
   allocation failure is a result; a run the engine refuses becomes an
   ``error`` entry (n/a in the report) instead of stopping the demo.
   Then buddy-kth Figure 2 (:mod:`heapkit.kth_release`: the kth process
   under libheapkit_malloc.so with and without HEAPKIT_RELEASE, 3 runs each,
   1 with ``--quick``), stored as ``extra.kth_release`` or, when it cannot
   run, as the reason; fits-cse3320 as the seed measured it
   (:mod:`heapkit.fits`: its counters at the seed's 24-byte header, its test
   process's peak RSS against glibc, Cortex-M3 instruction counts), stored
   as ``extra.cse3320``. Then fctma-pools Tables I-II in Cortex-M3 instructions
   (``extra.fctma_target``: itc at -O0 and -O2 for pool, heap_4, sdma, poolset and the
   general-purpose allocators :data:`FCTMA_RIVALS` and, on the prefix its arena holds, bump) and the ITC application on the real
   kernel (``extra.itc_kernel``, :mod:`heapkit.itc_kernel`), each where the
   cross toolchain and QEMU are installed, else the reason. Then custom-dmm-network
   (:mod:`heapkit.dmm_network`): the three network applications' traces explored on
   a reduced space (``extra.explore``, a heapkit-explore document) with the size
   histograms, usage shapes and Cortex-M3 costs (``extra.dmm_network``). Then the
   buddy seeds' exact instruction counts on the emulated RV32 core (:func:`buddy_target`:
   buddy-freertos Tables 5-6 on the paper's 20 calls, DELAY-2 on the seed workloads,
   buddy-kth Figure 4 per size level), stored as ``extra.buddy_target`` or, without the
   cross toolchain and QEMU, as the reason.
3. Advice (:func:`heapkit.advise.from_results`) on every real trace from the
   size searches and replays above, with the misuse matrices and, where QEMU
   is installed, Cortex-M3 and RV32 instruction counts on the records the size
   search replayed, stored as ``advice``: the report opens with it.
4. Output: the summary table and one line of advice per real trace on stdout,
   ``OUTDIR/results.json`` (the report's input, ``kind: heapkit-demo``) and
   ``OUTDIR/report.html``.

The AOSP size searches replay a prefix of each trace (the first
:data:`AOSP_SIZE_PREFIX` records): a full size search of systemui takes
about a minute for seqfit-next and several for seqfit-worst, which would
not fit the 10-minute budget; their bench replays use the whole traces.
Measured on the shared 2-core lab machine: the full demo takes about
150-180 s wall and 230-240 s CPU (engine processes included), ``--quick``
about 40 s.
"""

from __future__ import annotations

import concurrent.futures as cf
import datetime
import json
import os
import resource
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from . import progress as _progress
from . import render, report as rep
from .errors import HeapkitError
from .seeds import buddy_freertos, buddy_kth, fctma_pools

SEED = 1
SERIES = 200
HEAPMAP_SNAPSHOTS = 64
HEAPMAP_CAP = 16384
AOSP_SIZE_PREFIX = 200_000        # records of each AOSP trace the size search replays
QUICK_AOSP_PREFIX = 20_000        # --quick: bench and size search on this prefix
KTH_WINDOWS = 10
MERGE_PROBE = 16                  # the fresh-heap reference: malloc(16), free

# --quick: smaller workloads (same generators, same seed).
QUICK_PARAMS: dict[str, dict[str, int]] = {
    "itc": {"duration": 600},
    "kth": {"allocs": 4000, "slots": 512},
    "cse3320": {"rounds": 20},
    "buddy-paper": {"rounds": 6},
    "ramp": {"events": 4000},
    "peak": {"events": 4000},
    "plateau": {"events": 4000, "level": 300},
    "robson": {"M": 16384},
}
KTH_LEVEL_ALLOCS = 50_000
QUICK_KTH_LEVEL_ALLOCS = 2_000
# The buddy seeds' exact costs (RV32, :func:`buddy_target`): the buddy-freertos paper timed
# 20 allocations and their frees; buddy-kth's per-level traces on the target hold fewer
# slots than the host's (4096), so that level 7's arena fits the RV32 board.
BUDDY_PAPER_CALLS = 20
BUDDY_TARGET = "rv32"
BUDDY_TARGET_OPT = "-O2"
TARGET_KTH_SLOTS = 512
QUICK_TARGET_KTH_SLOTS = 128

WORKLOAD_PAPERS = {
    "itc": "fctma-pools' inter-task communication benchmark.",
    "kth": "buddy-kth's benchmark (8 size levels, random slots).",
    "cse3320": "fits-cse3320's five-step fragmentation test, repeated.",
    "buddy-paper": "buddy-freertos' 20 timed allocations and fragment/free-all rounds.",
    "ramp": "Wilson et al. ramp pattern.",
    "peak": "Wilson et al. peaks pattern.",
    "plateau": "Wilson et al. plateau pattern.",
    "robson": "Oblivious Robson-style adversary.",
}


# The real traces, by folder of the traces directory (data/traces in the repository).
REAL_SETS = {
    "wee_alloc": "wee_alloc trace {file} (rustwasm/wee_alloc test/traces, valgrind-recorded programs).",
    "aosp": "AOSP memory_replay trace {file} (Android system/extras, threads replayed in file order "
            "on one thread).",
    "embedded": "Embedded-style trace {file}, recorded with heapkit's own tools "
                "(data/traces/embedded/README.md).",
}
NOT_TRACES = {".md", ".txt"}      # provenance and licence files beside the traces


def default_traces_dir() -> Path | None:
    """data/traces of the checkout; an installed lab has no default (--traces DIR)."""
    from .native import CHECKOUT
    return None if CHECKOUT is None else CHECKOUT / "data" / "traces"


def real_traces(traces_dir: Path | None) -> list[tuple[str, Path]]:
    """(set, file) for every real trace under *traces_dir*, set by set, files sorted."""
    if traces_dir is None:
        return []
    return [(kind, p) for kind in REAL_SETS for p in sorted((traces_dir / kind).glob("*"))
            if p.is_file() and p.suffix not in NOT_TRACES and p.name not in ("LICENSE", "NOTICE", "README",
                                                                                "TRACES")]


# --------------------------------------------------------------------------
# Trace preparation (runs in worker processes: plain arguments, plain results)

def kth_level_trace(level: int, seed: int = SEED, allocs: int = KTH_LEVEL_ALLOCS,
                    slots: int = 4096, header: int = 24):
    """The kth process with every request drawn from one size level.

    Same slot buffer and replacement rule as :func:`heapkit.workloads.kth`
    (a random slot; a block already there is freed first), sizes uniform in
    the level's range; the buddy-kth paper measured its cost per level this way.
    """
    from .trace import TraceBuilder
    from .workloads import Rng, kth_level_bounds
    lo, hi = kth_level_bounds(header)[level]
    rng = Rng(seed)
    b = TraceBuilder()
    buf: list[int | None] = [None] * slots
    for _ in range(allocs):
        size = rng.between(lo, hi)
        slot = rng.below(slots)
        if buf[slot] is not None:
            b.free(buf[slot])
        buf[slot] = b.malloc(size)
    return b.build(f"kth-level{level}(seed={seed})")


def _prepare(spec: dict) -> dict:
    """Write the .hkb for one trace spec; returns {name: path, ...} entries."""
    from .importers import import_trace
    from .trace import Trace, TraceBuilder, write_trace
    from .workloads import get as get_workload
    out = Path(spec["out"])
    kind = spec["kind"]
    made: dict[str, Any] = {}
    if kind == "workload":
        trace = get_workload(spec["workload"]).generate(SEED, **spec["params"])
    elif kind == "import":
        trace = import_trace(spec["source"]).trace
    elif kind == "kth_level":
        trace = kth_level_trace(spec["level"], allocs=spec["allocs"], slots=spec["slots"])
    elif kind == "probe":
        b = TraceBuilder()
        b.free(b.malloc(MERGE_PROBE))
        trace = b.build("fresh-heap probe")
    else:
        raise ValueError(kind)
    recs = trace.records
    full_prefix = spec.get("prefix")
    if full_prefix and len(recs) > full_prefix:
        recs = recs[:full_prefix]
        trace = Trace(recs, trace.name, validate=False)
    write_trace(trace, out)
    made["path"] = str(out)
    made["records"] = len(recs)
    made["peak_live"] = int(trace.stats().peak_live_bytes)
    for n, p in spec.get("prefixes", {}).items():   # extra prefix files of the same trace
        if len(recs) > int(n):
            write_trace(Trace(recs[:int(n)], trace.name, validate=False), p)
            made.setdefault("prefix_paths", {})[n] = p
    for n in spec.get("windows", []):               # kth windows: prefixes by share
        k = max(1, len(recs) * n // KTH_WINDOWS)
        p = str(out) + f".w{n}.hkb"
        write_trace(Trace(recs[:k], trace.name, validate=False), p)
        made.setdefault("window_paths", {})[n] = p
    return made


def trace_specs(tmp: Path, traces_dir: Path | None, quick: bool) -> tuple[list[dict], dict[str, dict]]:
    """(specs to prepare, trace info for the report) for the demo's traces."""
    from .workloads import WORKLOADS, kth_level_bounds
    specs: list[dict] = []
    info: dict[str, dict] = {}
    for name, w in WORKLOADS.items():
        params = dict(QUICK_PARAMS.get(name, {})) if quick else {}
        spec = {"name": name, "kind": "workload", "workload": name, "params": params,
                "out": str(tmp / f"{name}.hkb"), "role": "bench"}
        if name == "kth":
            spec["windows"] = list(range(1, KTH_WINDOWS + 1))
        specs.append(spec)
        all_params = {**w.params(), **params}
        info[name] = {"kind": "workload", "label": f"Workload '{name}' (seed {SEED}): "
                      f"{WORKLOAD_PAPERS.get(name, w.summary)}",
                      "params": all_params,
                      "note": ("Parameters: " + ", ".join(f"{k}={v}" for k, v in params.items())
                               + " (--quick).") if params else ""}
    for kind, p in real_traces(traces_dir):
        name = p.name.split(".")[0]
        spec = {"name": name, "kind": "import", "source": str(p),
                "out": str(tmp / f"{kind}-{name}.hkb"), "role": "real"}
        note = ""
        if kind == "aosp" and quick:
            spec["prefix"] = QUICK_AOSP_PREFIX
            note = f"--quick: first {QUICK_AOSP_PREFIX:,} records only (bench, size search and counts)."
        elif kind == "aosp":
            spec["prefixes"] = {str(AOSP_SIZE_PREFIX): str(tmp / f"aosp-{name}.size.hkb")}
            note = (f"Bench replays the whole trace; the size search and the advice's counts "
                    f"replay its first {AOSP_SIZE_PREFIX:,} records (time budget).")
        specs.append(spec)
        info[name] = {"kind": "real", "label": REAL_SETS[kind].format(file=p.name), "note": note}
    bounds = kth_level_bounds()
    for level in range(len(bounds)):
        specs.append({"name": f"kth-level{level}", "kind": "kth_level", "level": level,
                      "allocs": QUICK_KTH_LEVEL_ALLOCS if quick else KTH_LEVEL_ALLOCS,
                      "slots": 512 if quick else 4096,
                      "out": str(tmp / f"kth-level{level}.hkb"), "role": "kth_level"})
    specs.append({"name": "cse3320-single", "kind": "workload", "workload": "cse3320",
                  "params": {"rounds": 1, "shuffle": 0}, "out": str(tmp / "cse3320-single.hkb"),
                  "role": "cse_single"})
    specs.append({"name": "probe", "kind": "probe", "out": str(tmp / "probe.hkb"),
                  "role": "probe"})
    specs.append({"name": "buddy-paper-20", "kind": "workload", "workload": "buddy-paper",
                  "params": dict(QUICK_PARAMS["buddy-paper"]) if quick else {},
                  "prefix": 2 * BUDDY_PAPER_CALLS, "out": str(tmp / "buddy-paper-20.hkb"),
                  "role": "buddy_paper_calls"})
    return specs, info


# --------------------------------------------------------------------------
# Engine runs (threads: each waits on an hk-replay process)

# Relative cost of an allocator per record, to start the longest runs first.
_COST = {"seqfit-worst": 12.0, "seqfit-next": 3.0, "freertos-heap2": 4.0}


def _slim(result: dict) -> dict:
    r = result.get("replay")
    if isinstance(r, dict):
        r.pop("heapmap", None)
    return result


def _bench_task(path: str, alloc: str, **kw) -> dict:
    from . import engine
    try:
        res = engine.replay(path, alloc, series=SERIES, heapmap=HEAPMAP_SNAPSHOTS,
                            heapmap_cap=HEAPMAP_CAP, **kw)
    except engine.EngineError as e:
        return {"error": str(e)}
    snaps = render.get(res, "replay.heapmap.snapshots")
    out: dict[str, Any] = {}
    if snaps:
        out["heapmap_stats"] = render.heapmap_stats(snaps)
        out["heapmap_raster"] = render.pack_heapmap(res)
        res["replay"]["heapmap"]["snapshots"] = []
        res["replay"]["heapmap"]["rasterized"] = True
    out["result"] = res
    return out


def _replay_task(path: str, alloc: str, heapmap: int = 0, **kw) -> dict:
    from . import engine
    try:
        res = engine.replay(path, alloc, series=0, heapmap=heapmap, **kw)
    except engine.EngineError as e:
        return {"error": str(e)}
    out: dict[str, Any] = {}
    snaps = render.get(res, "replay.heapmap.snapshots")
    if snaps:
        out["heapmap_stats"] = render.heapmap_stats(snaps)
    out["result"] = _slim(res)
    return out


def _size_task(path: str, alloc: str) -> dict:
    from . import engine
    try:
        return {"result": engine.size_search(path, alloc)}
    except engine.EngineError as e:
        return {"error": str(e)}


def default_arena(peak_live: int) -> int:
    """The engine's default arena rule (docs/metrics.md)."""
    return (max(64 * 1024, 4 * peak_live) + 63) // 64 * 64


def _kth_release(quick: bool, progress: bool) -> dict:
    """buddy-kth Figure 2 (heapkit/kth_release.py), or why it is missing."""
    from . import kth_release
    try:
        return kth_release.measure(repeats=1 if quick else 3, progress=progress)
    except HeapkitError as e:
        return {"error": str(e)}


def _cse3320(quick: bool, jobs: int, progress: bool) -> dict:
    """fits-cse3320 at the seed's header, its RSS comparison and Cortex-M3 counts (heapkit/fits.py)."""
    from . import fits
    return fits.collect(repeats=1 if quick else 3, jobs=jobs, progress=progress)


def _dmm_network(workdir: Path, quick: bool, jobs: int, progress: bool) -> dict:
    """custom-dmm-network (heapkit/dmm_network.py): the exploration as ``explore`` (a list of
    one heapkit-explore document) and the rest as ``dmm_network``, or why it is missing."""
    from . import dmm_network
    try:
        got = dmm_network.collect(workdir, quick=quick, jobs=jobs, progress=progress)
    except HeapkitError as e:
        return {"dmm_network": {"error": str(e).splitlines()[0]}}
    return {"explore": [got["explore"]], "dmm_network": got["dmm_network"]}


def buddy_target(made: dict, quick: bool, jobs: int, progress: bool) -> dict:
    """The buddy seeds' exact costs on the emulated RV32 core (:mod:`heapkit.target`), or
    ``{"error": why}`` where its tools are missing:

    - ``paper``: buddy-freertos Tables 5-6, the paper's 20 timed allocations and their
      frees (the first records of buddy-paper) and the whole buddy-paper trace, for
      :data:`heapkit.seeds.buddy_freertos.BUDDY_FOCUS` at buddy-paper's default arena;
    - ``delay2``: buddy and buddy-lazy (DELAY-2), and Table 1's Fibonacci and weighted
      buddies (:data:`heapkit.seeds.buddy_freertos.TABLE1`), on every seed workload
      (:data:`heapkit.seeds.buddy_freertos.SEED_WORKLOADS`);
    - ``kth_levels``: buddy-kth Figure 4, one trace per size level with
      :data:`TARGET_KTH_SLOTS` slots, for the buddy-kth focus allocators and the C
      library's malloc (picolibc), the target's system malloc.

    The last two share one arena: the largest the workloads and levels need."""
    from . import target as tgt
    from .boards import get_target
    from .trace import read_trace
    from .workloads import kth_level_bounds
    t = get_target(BUDDY_TARGET)
    if tgt.missing_tools(t):
        return {"error": f"missing {', '.join(tgt.missing_tools(t))}: install them "
                         f"(apt-get install {t.packages}; make test does)"}
    traces = {n: read_trace(made[n]["path"]) for n in buddy_freertos.SEED_WORKLOADS + ("buddy-paper-20",)
              if "path" in made.get(n, {})}
    if "buddy-paper" not in traces or "buddy-paper-20" not in traces:
        return {"error": "the buddy-paper trace could not be prepared"}
    slots = QUICK_TARGET_KTH_SLOTS if quick else TARGET_KTH_SLOTS
    level_allocs = QUICK_KTH_LEVEL_ALLOCS if quick else KTH_LEVEL_ALLOCS
    levels = [(f"kth-level{k}", kth_level_trace(k, allocs=level_allocs, slots=slots))
              for k in range(len(kth_level_bounds()))]

    def arena_for(peak: int) -> int:
        return min(t.max_arena, max(tgt.MIN_ARENA, (peak + 7) // 8 * 8))

    paper_arena = arena_for(default_arena(traces["buddy-paper"].stats().peak_live_bytes))
    big_arena = arena_for(max([default_arena(tr.stats().peak_live_bytes) for tr in traces.values()]
                              + [4 * slots * (32 << (len(levels) - 1))]))
    kth_allocs = [a for a in buddy_kth.KTH_FOCUS if a != "system"] + [t.libc]

    def bench(items, allocs, arena):
        doc = tgt.bench(items, allocs=allocs, opts=[BUDDY_TARGET_OPT], jobs=jobs, progress=progress,
                        target=t, arena=arena)
        runs = [{"trace": r["trace"], "allocator": r["allocator"], "stats": r["stats"]}
                for r in doc["runs"] if r.get("stats")]
        skipped = {f"{r['trace']}/{r['allocator']}": r["skipped"] for r in doc["runs"]
                   if r.get("skipped")}
        skipped.update(doc["skipped_traces"])
        return {"arena": arena, "runs": runs, "skipped": skipped}

    try:
        out = {"target": t.name, "title": t.title, "machine": t.machine, "opt": BUDDY_TARGET_OPT,
               "libc": t.libc, "paper_calls": BUDDY_PAPER_CALLS}
        out["paper"] = bench([(n, traces[n]) for n in ("buddy-paper-20", "buddy-paper")],
                             list(buddy_freertos.BUDDY_FOCUS), paper_arena)
        out["delay2"] = bench([(n, traces[n]) for n in buddy_freertos.SEED_WORKLOADS if n in traces],
                              list(dict.fromkeys(["buddy", "buddy-lazy"] + [a for a, *_ in
                                                                            buddy_freertos.TABLE1])),
                              big_arena)
        out["kth_levels"] = bench(levels, kth_allocs, big_arena)
        out["kth_levels"].update(slots=slots, allocs=level_allocs, bounds=kth_level_bounds())
        return out
    except HeapkitError as e:
        return {"error": str(e).splitlines()[0]}


def collect(quick: bool = False, jobs: int = 2, traces_dir: str | os.PathLike | None = None,
            progress: bool = True, workdir: str | os.PathLike | None = None) -> dict:
    """Prepare the traces, run everything, return the report's input (``heapkit-demo``)."""
    from . import engine
    t0, cpu0 = time.perf_counter(), _cpu()
    traces_dir = Path(traces_dir) if traces_dir else default_traces_dir()
    binary = _engine_binary(progress)
    allocs = engine.list_allocators(binary=binary)
    if not allocs:
        raise HeapkitError("the engine lists no allocators")
    own_tmp = workdir is None
    tmp = Path(tempfile.mkdtemp(prefix="heapkit-demo-")) if own_tmp else Path(workdir)
    tmp.mkdir(parents=True, exist_ok=True)
    try:
        specs, info = trace_specs(tmp, traces_dir, quick)
        made: dict[str, dict] = {}
        with _progress.bar(total=len(specs), desc="traces", unit="trace", show=progress) as bar, \
                cf.ProcessPoolExecutor(max_workers=max(1, jobs)) as pool:
            futs = {pool.submit(_prepare, s): s for s in
                    sorted(specs, key=lambda s: s["kind"] != "import")}
            for fut in cf.as_completed(futs):
                s = futs[fut]
                try:
                    made[s["name"]] = {**fut.result(), "spec": s}
                except Exception as e:   # a broken input trace: report it, keep going
                    if s["role"] in ("bench", "real"):
                        info.pop(s["name"], None)
                    made[s["name"]] = {"error": f"{type(e).__name__}: {e}", "spec": s}
                bar.update()
        t_prep = time.perf_counter() - t0
        tasks = _tasks(made, allocs, quick)
        data = _execute(tasks, made, allocs, info, jobs, progress)
        data["advice"] = _advice(data, made, info, jobs, progress)
        data["extra"]["kth_release"] = _kth_release(quick, progress)
        data["extra"]["cse3320"] = _cse3320(quick, jobs, progress)
        data["extra"]["fctma_target"] = _fctma_target(made, jobs, progress)
        data["extra"]["itc_kernel"] = _itc_kernel(jobs)
        data["extra"].update(_dmm_network(tmp / "dmm-network", quick, jobs, progress))
        data["extra"]["buddy_target"] = buddy_target(made, quick, jobs, progress)
    finally:
        if own_tmp:
            shutil.rmtree(tmp, ignore_errors=True)
    wall, cpu = time.perf_counter() - t0, _cpu() - cpu0
    data["meta"].update({
        "generated": datetime.datetime.now().isoformat(timespec="seconds"),
        "machine": engine.machine(), "quick": quick, "allocators": allocs,
        "engine_binary": str(binary),
        "timing": {"wall_s": wall, "cpu_s": cpu, "prepare_wall_s": t_prep, "jobs": jobs,
                   "load_avg_at_end": list(os.getloadavg())},
        "size_prefix_note": ("AOSP traces: " + (
            f"first {QUICK_AOSP_PREFIX:,} records (--quick)." if quick else
            f"the size search replays the first {AOSP_SIZE_PREFIX:,} records of each "
            "(a full search of systemui takes minutes for seqfit-next/-worst); the "
            "bench replays use the whole traces.")),
        "notes": _notes(quick, made),
    })
    return data


# The general-purpose allocators the driver runs by default, heapkit's and the peers', that
# fctma-pools' "faster than any conventional allocator" is judged against on itc; newlib is
# left out: its prebuilt libc.a is not rebuilt at -O0 with the others.
FCTMA_RIVALS = ("seqfit-first", "seqfit-best", "buddy", "tlsf", "dmm-lea", "freertos-heap5", "o1heap",
                "umm", "tlsf-conte")


def bump_prefix(trace, arena: int):
    """The longest prefix of *trace* whose allocations all fit a bump allocator's *arena*
    (the bump never reuses a block), with room for a 16-byte header per block."""
    from .trace import OP_FREE, Trace
    rec = trace.records
    gross = np.where(rec["op"] == OP_FREE, 0, rec["size"].astype(np.int64) + 16)
    n = int(np.searchsorted(np.cumsum(gross), arena * 9 // 10, side="right"))
    return Trace(rec[:n], f"{trace.name} (first {n} records)", validate=False)


def _fctma_target(made: dict, jobs: int, progress: bool) -> dict:
    """fctma-pools Tables I-II: exact Cortex-M3 counts of itc at -O0 (as the paper compiled)
    and -O2 for the pool (FCTMA), heap_4, SDMA, poolset and :data:`FCTMA_RIVALS` (the
    allocators "faster than any" is judged on), and for the bump (SimpleDMA) on the prefix
    of itc its arena holds; or why they are missing."""
    from . import target
    if "path" not in made.get("itc", {}):
        return {"missing": "the itc trace could not be prepared"}
    if target.missing_tools():
        return {"missing": f"{', '.join(target.missing_tools())} not installed (apt-get install "
                           f"{target.CORTEX_M3.packages}); CI has them"}
    from .trace import read_trace
    itc = read_trace(made["itc"]["path"])
    traces = [("itc", itc, ["pool", "freertos-heap4", "sdma", "poolset", *FCTMA_RIVALS]),
              ("itc-bump", bump_prefix(itc, target.ARENA_SIZE), ["bump"])]
    try:
        return target.bench(traces, opts=fctma_pools.FCTMA_LEVELS, jobs=jobs, progress=progress)
    except HeapkitError as e:
        return {"error": str(e).splitlines()[0]}


def _itc_kernel(jobs: int) -> dict:
    """The ITC application on FreeRTOS in QEMU, each call counted (heapkit.itc_kernel), or why not."""
    from . import itc_kernel
    why = itc_kernel.missing()
    if why:
        return {"missing": why}
    try:
        return itc_kernel.measure(jobs=jobs)
    except HeapkitError as e:
        return {"error": str(e).splitlines()[0]}


def _advice(data: dict, made: dict, info: dict, jobs: int, progress: bool) -> dict:
    """heapkit advise on the real traces, from the size searches and replays just run, with
    the Cortex-M3 and RV32 counts where QEMU is installed, on the same records as the size
    search."""
    from . import advise
    traces = {}
    for name in info:
        m = made.get(name) or {}
        if m.get("spec", {}).get("role") != "real" or "path" not in m:
            continue
        size_path = m.get("prefix_paths", {}).get(str(AOSP_SIZE_PREFIX))
        cut = size_path is not None or m["spec"].get("prefix")
        traces[name] = {"path": size_path or m["path"],
                        "records": AOSP_SIZE_PREFIX if size_path else m["records"],
                        "note": "its first records only (time budget)" if cut else ""}
    return advise.from_results(data, traces, targets=advise.available_targets(), jobs=jobs,
                               progress=progress)


def _engine_binary(progress: bool) -> Path:
    """$HEAPKIT_REPLAY, else the build tree's hk-replay brought up to date with
    CMake (a no-op when it is); a failing rebuild falls back to the old binary."""
    from . import engine
    if os.environ.get(engine.ENV_BINARY):
        return engine.find_binary()
    try:
        return engine.build()
    except engine.EngineError as e:
        if not engine.binary_path().exists():
            raise
        if progress:
            print(f"heapkit demo: rebuilding hk-replay failed, using the existing binary "
                  f"({str(e).splitlines()[0]})", file=sys.stderr)
        return engine.binary_path()


def _cpu() -> float:
    s = resource.getrusage(resource.RUSAGE_SELF)
    c = resource.getrusage(resource.RUSAGE_CHILDREN)
    return s.ru_utime + s.ru_stime + c.ru_utime + c.ru_stime


def _notes(quick: bool, made: dict) -> list[str]:
    notes = []
    bad = [f"{n}: {m['error']}" for n, m in made.items() if "error" in m]
    if bad:
        notes.append("Traces that could not be prepared: " + "; ".join(bad))
    if quick:
        notes.append("--quick: workloads shrunk (see each trace's note), AOSP traces cut to "
                     f"their first {QUICK_AOSP_PREFIX:,} records.")
    else:
        notes.append(f"AOSP size searches replay the first {AOSP_SIZE_PREFIX:,} records of each "
                     "trace; everything else uses the whole traces.")
    notes.append("AOSP traces are multi-threaded; the engine replays their records in file "
                 "order on one thread.")
    return notes


def _tasks(made: dict, allocs: list[str], quick: bool) -> list[tuple]:
    """(cost, group, key, func, args, kwargs) for every engine run."""
    tasks = []

    def add(cost, group, key, func, *args, **kw):
        tasks.append((cost, group, key, func, args, kw))

    for name, m in made.items():
        if "error" in m:
            continue
        role, n = m["spec"]["role"], m["records"]
        if role in ("bench", "real"):
            for a in allocs:
                add(n * _COST.get(a, 1.0), "runs", (name, a), _bench_task, m["path"], a)
        if role == "real":
            size_path = m.get("prefix_paths", {}).get(str(AOSP_SIZE_PREFIX), m["path"])
            sn = min(n, AOSP_SIZE_PREFIX) if size_path != m["path"] else n
            for a in allocs:
                add(12 * sn * _COST.get(a, 1.0), "size_runs", (name, a), _size_task, size_path, a)
        if role == "kth_level":
            # Room for every slot's block even where the minimum block is far larger
            # than the request (level 0 asks 1-8 bytes): 4 x slots x the buddy block.
            spec = m["spec"]
            arena = max(default_arena(m["peak_live"]), 4 * spec["slots"] * (32 << spec["level"]))
            for a in [x for x in buddy_kth.KTH_FOCUS if x in allocs]:
                add(n * _COST.get(a, 1.0), "kth_levels", (spec["level"], a), _replay_task,
                    m["path"], a, arena=arena)
        if role == "cse_single":
            for a in allocs:
                add(1, "cse3320_single", (None, a), _replay_task, m["path"], a)
        if name == "itc":
            for a in allocs:
                add(n * _COST.get(a, 1.0), "itc_size", (None, a), _size_task, m["path"], a)
        if name == "kth":
            for w, p in m.get("window_paths", {}).items():
                for a in [x for x in buddy_kth.KTH_FOCUS if x in allocs]:
                    add(n * w / KTH_WINDOWS * _COST.get(a, 1.0), "kth_windows", (w, a),
                        _replay_task, p, a)
    probe = made.get("probe", {})
    bp = made.get("buddy-paper", {})
    calls = made.get("buddy-paper-20", {})
    if "path" in bp:
        from .trace import read_trace
        bp_arena = default_arena(read_trace(bp["path"]).stats().peak_live_bytes)
    if "path" in calls and "path" in bp:
        for a in [x for x in buddy_freertos.BUDDY_FOCUS if x in allocs]:
            add(1, "buddy_paper_calls", (None, a), _replay_task, calls["path"], a, arena=bp_arena)
    if "path" in probe and "path" in bp:
        for a in allocs:
            add(1, "merge_reference", (None, a), _replay_task, probe["path"], a, heapmap=1,
                arena=bp_arena)
    if "path" in probe and "path" in bp and "freertos-heap5" in allocs:
        # heap_5 over the BL602's two regions: buddy-paper's end and a fresh heap's
        for name, path in (("buddy-paper", bp["path"]), ("probe", probe["path"])):
            add(1, "heap5_regions", (name, "freertos-heap5"), _replay_task, path, "freertos-heap5",
                heapmap=1, arena=bp_arena, second_region=buddy_freertos.BL602_HEAP_WIFI)
    tasks.sort(key=lambda t: -t[0])
    return tasks


def _followups(gk: tuple, result: dict, made: dict) -> list[tuple]:
    """Runs that need an earlier result: itc replayed at each allocator's smallest
    failure-free arena (the fctma-pools tables compare runs without failures)."""
    group, (sub, alloc) = gk
    if group != "itc_size":
        return []
    arena = render.get(result.get("result") or {}, "search.min_arena")
    if not arena:
        return []
    return [("itc_min", (arena, alloc), _replay_task, (made["itc"]["path"], alloc),
             {"arena": arena})]


def _execute(tasks: list[tuple], made: dict, allocs: list[str], info: dict, jobs: int,
             progress: bool) -> dict:
    data = {"kind": "heapkit-demo", "version": 1, "meta": {}, "runs": [], "size_runs": [],
            "traces": info, "extra": {"kth_levels": [], "kth_windows": [], "cse3320_single": [],
                                      "merge_reference": [], "itc_size": [], "itc_min": [],
                                      "buddy_paper_calls": [], "heap5_regions": []}}
    results: dict[tuple, dict] = {}
    with _progress.bar(total=len(tasks), desc="runs", unit="run", show=progress) as bar, \
            cf.ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        pending = {pool.submit(func, *args, **kw): (group, key)
                   for _, group, key, func, args, kw in tasks}
        while pending:
            done, _ = cf.wait(pending, return_when=cf.FIRST_COMPLETED)
            for fut in done:
                gk = pending.pop(fut)
                results[gk] = fut.result()
                bar.update()
                for group, key, func, args, kw in _followups(gk, results[gk], made):
                    pending[pool.submit(func, *args, **kw)] = (group, key)
                    bar.total += 1
                    bar.refresh()
    # Assemble in a stable order: traces as prepared, allocators in table order.
    order = [n for n in info if n in made and "error" not in made[n]]
    for name in order:
        for a in allocs:
            r = results.get(("runs", (name, a)))
            if r is not None:
                data["runs"].append({"allocator": a, "trace": name, **r})
    for name in order:
        for a in allocs:
            r = results.get(("size_runs", (name, a)))
            if r is not None:
                data["size_runs"].append({"allocator": a, "trace": name, **r})
    from .workloads import kth_level_bounds
    bounds = kth_level_bounds()
    for (group, key), r in sorted(results.items(), key=lambda kv: (kv[0][0], str(kv[0][1]))):
        if group in ("runs", "size_runs"):
            continue
        sub, a = key
        entry = {"allocator": a, **r}
        if group == "kth_levels":
            spec = made[f"kth-level{sub}"]["spec"]
            entry.update(level=sub, lo=bounds[sub][0], hi=bounds[sub][1],
                         allocs=spec["allocs"], slots=spec["slots"],
                         arena=render.get(r.get("result") or {}, "arena.size"))
        elif group == "kth_windows":
            entry["window"] = sub
        elif group == "itc_min":
            entry["arena"] = sub
        elif group == "heap5_regions":
            entry["trace"] = sub
        data["extra"][group].append(entry)
    return data


# --------------------------------------------------------------------------
# Output

def summary_lines(data: dict) -> list[str]:
    rows = []
    for r in data["runs"]:
        s = rep.summary_row(r)
        if s["error"]:
            rows.append([s["trace"], s["allocator"], "n/a: " + s["error"]] + [""] * 9)
            continue
        rows.append([s["trace"], s["allocator"], render.fmt_int(s["failures"]),
                     *[render.fmt_ns(s[k], s["step"]) for k in
                       ("malloc_p50", "malloc_p99", "malloc_max", "free_p50", "free_p99", "free_max")],
                     render.fmt_pct(s["jw4"]), render.fmt_bytes(s["peak_footprint"]),
                     str(s["bugs"])])
    out = [render.text_table(["trace", "allocator", "failures", "malloc p50", "malloc p99",
                              "malloc max", "free p50", "free p99", "free max", "J&W #4",
                              "peak footprint", "errors"], rows)]
    if data["size_runs"]:
        allocs, traces, cell, gm = rep.size_summary(data)
        srows = [[a, render.fmt_f(gm[a][0], 3), f"{gm[a][1]}/{len(traces)}"] for a in allocs]
        out += ["", "min arena / peak live requested, geometric mean over the real traces:",
                render.text_table(["allocator", "", "geomean", "traces"],
                                  [[r[0], ""] + r[1:] for r in srows])]
    return out


def run(args) -> int:
    """``heapkit demo [-o OUTDIR] [--quick] [--jobs N] [--traces DIR]``."""
    outdir = Path(args.output)
    try:
        outdir.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise HeapkitError(f"{outdir}: cannot create: {e.strerror or e}") from None
    traces_dir = Path(args.traces) if args.traces else default_traces_dir()
    if traces_dir is None:
        print("heapkit demo: no --traces DIR given; workloads only", file=sys.stderr)
    elif not traces_dir.is_dir():
        print(f"heapkit demo: {traces_dir}: no real traces there; workloads only",
              file=sys.stderr)
    t0, cpu0 = time.perf_counter(), _cpu()
    data = collect(quick=args.quick, jobs=args.jobs, traces_dir=traces_dir)
    print("\n".join(summary_lines(data)))
    for t in (data.get("advice") or {}).get("traces", []):
        print(f"advice for {t['trace']}: " + (t.get("reason") or "none: " + t.get("why_none", "")))
    res_path = outdir / "results.json"
    with open(res_path, "w", encoding="utf-8") as f:
        json.dump(data, f, separators=(",", ":"), default=_json_default)
        f.write("\n")
    t1 = time.perf_counter()
    page = rep.write_report(data, outdir / "report.html", "heapkit demo report",
                            workers=args.jobs, progress=True)
    (outdir / "claims.md").write_text(rep.claims_markdown(data), encoding="utf-8")
    t_report = time.perf_counter() - t1
    wall, cpu = time.perf_counter() - t0, _cpu() - cpu0
    tm = data["meta"]["timing"]
    print(f"\nwrote {res_path} ({res_path.stat().st_size / 1e6:.1f} MB), {outdir / 'claims.md'} and {page} "
          f"({page.stat().st_size / 1e6:.1f} MB)")
    print(f"time: {wall:.1f} s wall, {cpu:.1f} s CPU (runs: {tm['wall_s']:.1f} s wall, "
          f"{tm['cpu_s']:.1f} s CPU; report: {t_report:.1f} s); "
          f"load average now {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs")
    return 0


def _json_default(o: Any):
    if isinstance(o, np.generic):
        return o.item()
    if isinstance(o, np.ndarray):
        return o.tolist()
    raise TypeError(f"not JSON serialisable: {type(o).__name__}")
