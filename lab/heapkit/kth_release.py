# SPDX-License-Identifier: MIT
"""buddy-kth Figure 2: heapkit's buddy returning free memory to the OS.

The buddy-kth seed's optimisation hands wholly free top-level blocks back to
the OS. libheapkit_malloc.so (ports/posix) does it with HEAPKIT_RELEASE=1: a
region (a set of top-level buddy blocks mapped with mmap) is munmapped as
soon as no used block is left in it. This module runs the seed's benchmark
process (``hk-kth-process``: exactly the lab's ``kth`` workload, calling
malloc/free) under LD_PRELOAD=libheapkit_malloc.so with HEAPKIT_ALLOCATOR=buddy,
without and with the option, at two region sizes, and under glibc for
reference; it records memory over time (bytes mapped from the OS, given to the
user, free inside the regions) and the per-call cost (medians over repeated,
interleaved runs): over the whole run, per tenth of the run (Figure 3's cost
over time) and, for :data:`LEVEL_CONFIGS`, per size level with every request
drawn from one level (Figure 4's cost per level).

    heapkit kth-release [--repeats N] [--allocs N] [--slots N] [--json FILE]

``heapkit demo`` runs it too (``extra.kth_release`` in results.json) and the
report draws Figure 2 from it; the --json file is a results document that
``heapkit report`` takes as well.
"""
from __future__ import annotations

import json
import statistics
from pathlib import Path
from typing import Any

from . import native
from . import progress as _progress
from .errors import HeapkitError
from .render import text_table
from .seeds.buddy_kth import KTH_RELEASE_HEAD, kth_release_rows

LIB_ENV, LIB_TARGET = "HEAPKIT_MALLOC_LIB", "heapkit_malloc"
DRIVER_ENV, DRIVER_TARGET = "HEAPKIT_KTH_PROCESS", "hk-kth-process"
# The paper's top-level blocks are 4 KiB pages; 8 KiB is the smallest region
# that holds a 4 KiB buddy block next to buddy's control data.
SMALL_REGION = 8192

CONFIGS = [
    ("glibc", "glibc malloc (mallinfo2)", None),
    ("buddy", "buddy, default regions (1 MiB, doubling)", {}),
    ("buddy+release", "buddy, default regions, HEAPKIT_RELEASE=1", {"HEAPKIT_RELEASE": "1"}),
    ("buddy-8k", "buddy, 8 KiB regions", {"HEAPKIT_REGION_MIN": str(SMALL_REGION),
                                          "HEAPKIT_REGION_MAX": str(SMALL_REGION)}),
    ("buddy-8k+release", "buddy, 8 KiB regions, HEAPKIT_RELEASE=1",
     {"HEAPKIT_REGION_MIN": str(SMALL_REGION), "HEAPKIT_REGION_MAX": str(SMALL_REGION),
      "HEAPKIT_RELEASE": "1"}),
]


# Figure 4's three lines: the system malloc, the paper's regular balloc (blocks from the OS,
# never given back) and its optimised one (top-level blocks given back).
LEVEL_CONFIGS = ("glibc", "buddy-8k", "buddy-8k+release")
LEVELS = 8


def _paths() -> tuple[Path, Path]:
    lib = native.find(LIB_ENV, LIB_TARGET)
    drv = native.find(DRIVER_ENV, DRIVER_TARGET)
    return lib, drv


def _run(driver: Path, lib: Path, extra: dict | None, allocs: int, slots: int, every: int,
         level: int | None = None) -> dict:
    argv = [str(driver), str(allocs), str(slots), "1", str(every)] + ([] if level is None else [str(level)])
    return native.run_json(argv, DRIVER_TARGET, None if extra is None else lib,
                           {"HEAPKIT_ALLOCATOR": "buddy", **(extra or {})})


def measure(repeats: int = 3, allocs: int = 50000, slots: int = 4096,
            progress: bool = True) -> dict:
    """Every configuration *repeats* times, interleaved; series from the first run, medians
    of the timings. *progress*: a bar on stderr (on a terminal)."""
    if repeats < 1 or allocs < 1 or slots < 1:
        raise HeapkitError("kth-release: repeats, allocs and slots must be >= 1")
    lib, driver = _paths()
    every = max(1, allocs // 200)
    runs: dict[str, list[dict]] = {name: [] for name, _, _ in CONFIGS}
    level_runs: dict[tuple[str, int], list[dict]] = {}
    by_name = {name: extra for name, _, extra in CONFIGS}
    with _progress.bar(total=repeats * (len(CONFIGS) + LEVELS * len(LEVEL_CONFIGS)),
                       desc="kth-release", unit="run", show=progress) as bar:
        for r in range(repeats):
            order = CONFIGS[r % len(CONFIGS):] + CONFIGS[:r % len(CONFIGS)]
            for name, _, extra in order:
                runs[name].append(_run(driver, lib, extra, allocs, slots, every))
                bar.update()
            for level in range(LEVELS):
                for name in LEVEL_CONFIGS:
                    level_runs.setdefault((name, level), []).append(
                        _run(driver, lib, by_name[name], allocs, slots, allocs, level))
                    bar.update()
    out = []
    for name, label, extra in CONFIGS:
        rs = runs[name]
        first = rs[0]
        s = first["series"]
        entry: dict[str, Any] = {
            "name": name, "label": label, "env": extra,
            "series": {k: s[k] for k in ("op", "mapped", "used", "free", "regions")},
            "peak_mapped": max(s["mapped"]), "final_mapped": s["mapped"][-1],
            "final_used": s["used"][-1],
            "wall_ms": statistics.median(x["wall_ns"] for x in rs) / 1e6,
            "malloc_p50": statistics.median(x["timing"]["malloc"]["p50"] for x in rs),
            "malloc_mean": statistics.median(x["timing"]["malloc"]["mean"] for x in rs),
            "free_p50": statistics.median(x["timing"]["free"]["p50"] for x in rs),
            "free_mean": statistics.median(x["timing"]["free"]["mean"] for x in rs),
            "windows": [{"p50": statistics.median(x["malloc_windows"][w]["p50"] for x in rs),
                         "mean": statistics.median(x["malloc_windows"][w]["mean"] for x in rs),
                         "calls": first["malloc_windows"][w]["calls"]}
                        for w in range(len(first["malloc_windows"]))],
        }
        if name in LEVEL_CONFIGS:
            entry["levels"] = [
                {"level": k, **{f"malloc_{q}": statistics.median(x["timing"]["malloc"][q]
                                                                 for x in level_runs[name, k])
                                for q in ("p50", "mean")}}
                for k in range(LEVELS)]
        if "heapkit" in first:
            entry.update(region_maps=first["heapkit"]["region_maps"],
                         region_unmaps=first["heapkit"]["region_unmaps"])
        out.append(entry)
    return {"allocs": allocs, "slots": slots, "repeats": repeats, "every": every,
            "command": f"heapkit kth-release --repeats {repeats} --allocs {allocs} --slots {slots}",
            "configs": out}


def run(args) -> int:
    """``heapkit kth-release``: measure and print the table (and the JSON with --json)."""
    data = measure(repeats=args.repeats, allocs=args.allocs, slots=args.slots)
    print(f"kth process ({data['allocs']} allocs, {data['slots']} slots) on buddy under "
          f"LD_PRELOAD=libheapkit_malloc.so; medians of {data['repeats']} interleaved runs")
    print(text_table(KTH_RELEASE_HEAD, kth_release_rows(data)))
    if args.json:
        # A results document 'heapkit report' takes, alone or next to a demo's results.json.
        doc = {"kind": "heapkit-demo", "version": 1, "meta": {}, "runs": [], "size_runs": [],
               "traces": {}, "extra": {"kth_release": data}}
        try:
            Path(args.json).write_text(json.dumps(doc) + "\n")
        except OSError as e:
            raise HeapkitError(f"{args.json}: cannot write: {e.strerror or e}") from None
    return 0
