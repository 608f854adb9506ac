#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""readme_tables.py: the README's measured tables, regenerated from one fresh run.

    .venv/bin/python tools/readme_tables.py --check    # exit 1 with a diff if the README is stale
    .venv/bin/python tools/readme_tables.py --write    # rewrite the generated blocks in place
    .venv/bin/python tools/readme_tables.py --save DIR # also keep the run's JSON
    .venv/bin/python tools/readme_tables.py --write --from DIR  # reuse a saved part, measure the rest

Every number in a README table comes from here, between the markers

    <!-- readme_tables: NAME -->
    ...
    <!-- /readme_tables -->

and `make readme-test` (part of `make test`) runs --check, so a change that
moves a figure fails until the README is regenerated. One run measures:

- instructions per call on the emulated Cortex-M3 and RV32 (tools/hotpath_table.py's
  workloads and directed worst cases, -O2, 256 KiB arena, HK_HARDENING 0 to 3), for
  the README's allocators and the peers beside them; every count is exact, so a
  fresh run reproduces it;
- the smallest arena on which each wee_alloc and AOSP trace in data/traces completes, over
  its peak live requested bytes (`heapkit size`, geometric mean), a deterministic
  search.

Blocks: ``summary`` (the worst cases at the default level and the heap ratio,
under "Which allocator should I use") and ``levels`` (p50 and max per level on
both targets, under "Hardening levels"). Exit status 0, 1 (stale), or 2 with
one line on stderr.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "lab"))
sys.path.insert(0, str(REPO / "tools"))

import hotpath_table  # noqa: E402
import readme_blocks  # noqa: E402
from heapkit import target  # noqa: E402
from heapkit.errors import HeapkitError  # noqa: E402

README = REPO / "README.md"
TRACES = REPO / "data" / "traces"
TARGETS = ("cortex-m3", "rv32")
LEVELS = (0, 1, 2, 3)
DEFAULT_LEVEL = 1
# The README's rows: heapkit's allocators a user picks between (tlsf-uniform: tlsf through
# hk_malloc/hk_free, the uniform layer's cost), then the peers beside them.
ALLOCS = ("tlsf", "tlsf-uniform", "pool", "lfpool", "poolset", "buddy", "buddy-lazy", "seqfit-best", "bump", "dmm-net")
PEERS = ("o1heap", "tlsf-conte", "freertos-heap4")
# `heapkit size` on the real traces: the README's allocators that can hold them (the pools
# serve one size, poolset nothing above 1 KiB; bump never reuses).
SIZE_ALLOCS = ("tlsf", "buddy", "buddy-lazy", "seqfit-best", "dmm-net", "o1heap", "tlsf-conte",
               "freertos-heap4")
BLOCK = readme_blocks.pattern("readme_tables")


def measure_costs(jobs: int) -> dict[str, dict]:
    """{target: heapkit-target document} over the hot-path workloads and worst cases."""
    with tempfile.TemporaryDirectory(prefix="readme-") as tmp:
        traces: list[tuple] = hotpath_table.workloads(1, Path(tmp))
    traces += target.worst_case_traces(hotpath_table.ARENA)
    docs = {}
    for t in TARGETS:
        print(f"readme_tables.py: {t}, levels {LEVELS} ...", file=sys.stderr)
        docs[t] = target.bench(traces, list(ALLOCS + PEERS), ["-O2"], jobs=jobs, progress=True,
                               target=t, arena=hotpath_table.ARENA, hardening=list(LEVELS))
    return docs


def real_traces() -> list[str]:
    found = sorted(str(p) for p in TRACES.glob("wee_alloc/*.trace.gz")) + \
        sorted(str(p) for p in TRACES.glob("aosp/*.zip"))
    if not found:
        raise HeapkitError(f"{TRACES}: no real traces there (the heap table needs them)")
    return found


def measure_heap(out: Path) -> dict:
    """`heapkit size`'s document over the real traces."""
    cmd = [sys.executable, "-m", "heapkit", "size", "--alloc", ",".join(SIZE_ALLOCS),
           "--json", str(out), "--trace", *real_traces()]
    print("readme_tables.py: heapkit size over the real traces ...", file=sys.stderr)
    done = subprocess.run(cmd, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if done.returncode != 0:
        raise HeapkitError(f"heapkit size failed: {done.stderr.strip().splitlines()[-1:]}")
    return json.loads(out.read_text())


def _worst(r: dict | None) -> str:
    """Max malloc / free over the workloads and the directed worst cases."""
    if r is None:
        return "-"
    m = [v for v in (r["malloc_max"], r["worst_malloc"]) if v is not None]
    f = [v for v in (r["free_max"], r["worst_free"]) if v is not None]
    return f"{max(m):,} / {max(f):,}" if m and f else "-"


def _p50(r: dict | None) -> str:
    return "-" if r is None else f"{r['malloc_p50']:,} / {r['free_p50']:,}"


def _level(alloc: str, level: int) -> str:
    return "-" if alloc in PEERS else str(level)


def heap_ratios(size_doc: dict) -> dict[str, tuple[float | None, int, int]]:
    """allocator -> (geometric mean of min arena / peak live, traces completed, traces)."""
    per: dict[str, list[float]] = {}
    traces = set()
    for r in size_doc["runs"]:
        traces.add(r["trace"])
        ratio = r.get("ratio")
        per.setdefault(r["allocator"], [])
        if ratio:
            per[r["allocator"]].append(ratio)
    return {a: (math.exp(sum(map(math.log, xs)) / len(xs)) if xs else None, len(xs), len(traces))
            for a, xs in per.items()}


def summary_block(docs: dict[str, dict], size_doc: dict) -> str:
    rows = {t: hotpath_table.rows_of(d) for t, d in docs.items()}
    ratios = heap_ratios(size_doc)
    head = ["allocator", "Cortex-M3 worst malloc / free", "RV32 worst malloc / free",
            "Cortex-M3 p50 malloc / free", "smallest heap / peak live (real traces)"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for a in ALLOCS + PEERS:
        key = (a, _level(a, DEFAULT_LEVEL))
        gm = ratios.get(a)
        heap = "n/a" if gm is None else ("none" if gm[0] is None else f"{gm[0]:.3f}") + \
            ("" if gm is None or gm[1] == gm[2] else f" ({gm[1]} of {gm[2]})")
        name = f"{a} (peer)" if a in PEERS else f"**{a}**"
        lines.append("| " + " | ".join([name, _worst(rows["cortex-m3"].get(key)),
                                        _worst(rows["rv32"].get(key)),
                                        _p50(rows["cortex-m3"].get(key)), heap]) + " |")
    return "\n".join(lines) + "\n"


def levels_block(docs: dict[str, dict]) -> str:
    rows = {t: hotpath_table.rows_of(d) for t, d in docs.items()}
    head = ["allocator", "level"] + [f"{target.get_target(t).title} {k} malloc / free"
                                     for t in TARGETS for k in ("p50", "max")]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for a in ALLOCS + PEERS:
        for level in ([None] if a in PEERS else LEVELS):
            key = (a, "-" if level is None else str(level))
            cells = [a, "-" if level is None else str(level)]
            for t in TARGETS:
                r = rows[t].get(key)
                cells += [_p50(r), _worst(r)]
            lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="Regenerate or check the README's measured tables.")
    mode = ap.add_mutually_exclusive_group()
    mode.add_argument("--check", action="store_true", help="compare with a fresh run (the default)")
    mode.add_argument("--write", action="store_true", help="rewrite README.md's generated blocks")
    ap.add_argument("--save", metavar="DIR", help="keep the run's JSON (target.json, size.json) in DIR")
    ap.add_argument("--from", dest="saved", metavar="DIR",
                    help="reuse target.json and/or size.json saved by --save in DIR instead of measuring them")
    ap.add_argument("--jobs", type=int, default=2, metavar="N", help="QEMU runs at once (default 2)")
    args = ap.parse_args(argv)
    try:
        saved = Path(args.saved) if args.saved else None
        if saved and (saved / "size.json").is_file():
            size_doc = json.loads((saved / "size.json").read_text())
        else:
            with tempfile.TemporaryDirectory(prefix="readme-size-") as tmp:
                size_doc = measure_heap(Path(tmp) / "size.json")
        if saved and (saved / "target.json").is_file():
            docs = json.loads((saved / "target.json").read_text())
        else:
            docs = measure_costs(args.jobs)
        text = README.read_text(encoding="utf-8")   # read after the long run: edits meanwhile stay
        new = readme_blocks.render(text, "readme_tables", {"summary": summary_block(docs, size_doc), "levels": levels_block(docs)})
        if args.save:
            out = Path(args.save)
            out.mkdir(parents=True, exist_ok=True)
            (out / "target.json").write_text(json.dumps(docs) + "\n")
            (out / "size.json").write_text(json.dumps(size_doc) + "\n")
    except (HeapkitError, readme_blocks.BlockError, OSError, ValueError) as e:
        print(f"readme_tables.py: {e}", file=sys.stderr)
        return 2
    return readme_blocks.finish(README, text, new, args.write, "readme_tables.py", "tables", "a fresh run")


if __name__ == "__main__":
    sys.exit(main())
