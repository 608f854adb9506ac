# SPDX-License-Identifier: MIT
"""``heapkit view``: one self-contained HTML page to explore a trace.

The page (vanilla JS on canvases, view.js and view.css beside this module,
inlined; nothing fetched) shows a zoomable timeline, the arena of each
chosen allocator at the cursor, who holds memory at the cursor and at the
peak, an icicle by task and caller, and the leaks.  The numbers come from
the rest of the lab: the trace's own live bytes (:mod:`heapkit.trace`),
the engine's replay of each allocator (:mod:`heapkit.engine`: its sampled
series and its heap-map snapshots, whose used blocks name the trace id
holding them) and the leak analysis (:mod:`heapkit.leaks`).

What the page embeds is bounded whatever the trace's length:

* the timeline: ``BUCKETS`` buckets of records; live requested bytes keep
  their minimum and maximum per bucket, each allocator's curves (footprint,
  largest free block, free blocks, external fragmentation) one engine
  sample at each bucket's end;
* the map: per allocator, engine snapshots at evenly spaced records (every
  record of a trace of at most ``SNAPSHOTS``), holding together at most
  ``BLOCK_BUDGET`` blocks: as many as fit whole at the trace's peak block
  count, between ``MIN_SNAPSHOTS`` and ``SNAPSHOTS`` (past the per-snapshot
  cap the engine merges runs of adjacent blocks in the same state, and the
  page says so); the cursor shows the latest snapshot at or before it;
* the blocks' owners: one row per trace id a snapshot names;
* the tables: the ``TOP`` largest groups.
"""

from __future__ import annotations

import html
import json
import os
from pathlib import Path

import numpy as np

from . import engine
from .annotations import Annotations, side_path
from .errors import HeapkitError
from .leaks import Symbolizer, _blocks, _where, resolve_checkpoint
from .trace import Trace, live_bytes, live_counts

BUCKETS = 2000
SNAPSHOTS = 1000
BLOCK_BUDGET = 300_000
MIN_SNAPSHOTS = 50
TOP = 200
ASSETS = Path(__file__).resolve().parent


def load(path: str | os.PathLike) -> tuple[Trace, Annotations]:
    """The trace at *path* (any format the importers read) and its side table (empty if none)."""
    from .importers import import_trace
    res = import_trace(path, "auto")
    ann = res.annotations
    if ann is None and os.path.exists(side_path(path)):
        ann = Annotations.load(side_path(path), len(res.trace))
    return res.trace, ann if ann is not None else Annotations()


def _buckets(n: int) -> np.ndarray:
    """Record index where each timeline bucket starts (the last ends at n)."""
    k = min(n, BUCKETS)
    return np.unique(np.linspace(0, n, k + 1)[:-1].astype(np.int64))


class _Names:
    """Callers as dense indexes into one list of names (function (file:line) with an ELF)."""

    def __init__(self, ann: Annotations, sym: Symbolizer | None):
        self.ann, self.sym = ann, sym
        self.index: dict[int, int] = {}
        self.names: list[str] = []

    def __call__(self, caller: int) -> int:
        if caller not in self.index:
            self.index[caller] = len(self.names)
            self.names.append(_where(caller, self.sym, self.ann.modules))
        return self.index[caller]


def _group(ids: np.ndarray, key: np.ndarray, sizes: np.ndarray) -> list[list[int]]:
    """[[key, bytes, blocks]] of *ids* grouped by key[id], largest first, at most TOP."""
    if not len(ids):
        return []
    keys, inv = np.unique(key[ids], return_inverse=True)
    nbytes = np.bincount(inv, weights=sizes[ids], minlength=len(keys)).astype(np.int64)
    count = np.bincount(inv, minlength=len(keys))
    order = np.lexsort((keys, -count, -nbytes))[:TOP]
    return [[int(keys[i]), int(nbytes[i]), int(count[i])] for i in order]


def live_ids_at(blocks, record: int) -> np.ndarray:
    """The trace ids live just after *record*."""
    return np.flatnonzero((blocks.pos <= record) & (blocks.killed_at > record))


def _replay(trace: Trace, alloc: str, arena: int | None, snapshots: int, cap: int) -> dict:
    return engine.replay(trace, alloc, arena=arena, series=min(len(trace), BUCKETS), heapmap=snapshots,
                         heapmap_cap=cap, heapmap_owners=True, timing=False)


def _allocator(trace: Trace, alloc: str, arena: int | None, ids: set[int], peak_blocks: int) -> dict:
    n = len(trace)
    # A walk sees about a free block per used one: as many snapshots as fit whole in the budget
    # at the trace's peak, within [MIN_SNAPSHOTS, SNAPSHOTS]; past its cap a snapshot merges runs.
    snaps = min(n, SNAPSHOTS, max(MIN_SNAPSHOTS, BLOCK_BUDGET // (2 * peak_blocks + 16)))
    cap = max(64, BLOCK_BUDGET // snaps)
    res = _replay(trace, alloc, arena, snaps, cap)
    r = res["replay"]
    if r.get("heapmap") is None:
        raise HeapkitError(f"{alloc}: does not live in an arena, so it has no map to show "
                           "(choose an arena allocator: heapkit size --list)")
    s = r["series"]
    largest, free = np.array(s["largest_free"], float), np.array(s["free_bytes"], float)
    frag = np.where(free > 0, 1 - largest / np.maximum(free, 1), 0.0)
    out_snaps = []
    for snap in r["heapmap"]["snapshots"]:
        flat = []
        for (off, size, used), owner in zip(snap["blocks"], snap["owners"]):
            flat += [off, size, -1 if not used else (-2 if owner is None else owner)]
            if owner is not None:
                ids.add(owner)
        out_snaps.append({"record": snap["record"], "walked": snap["walked_blocks"],
                          "merged": snap["merged"], "truncated": snap["truncated"], "blocks": flat})
    fails, mem = r["failures"], r["memory"]
    return {"name": alloc, "arena": res["arena"]["size"], "control": res["arena"]["control_bytes"],
            "peak_end": mem["peak_end"],
            "peak_footprint": mem["peak_footprint"], "peak_footprint_record": mem["peak_footprint_record"],
            "failures": fails["total"], "first_failure": fails["first_failure_record"],
            "series": {"record": s["record"], "footprint": s["footprint"], "largest_free": s["largest_free"],
                       "free_blocks": s["free_blocks"], "frag": [round(float(x), 4) for x in frag]},
            "snapshot_cap": cap, "snapshots": out_snaps}


def build(trace: Trace, ann: Annotations, allocs: list[str], *, arena: int | None = None,
          sym: Symbolizer | None = None, checkpoint: str | None = None) -> dict:
    """Everything the page shows, as one JSON-able dict of bounded size."""
    n = len(trace)
    if n == 0:
        raise HeapkitError(f"{trace.name}: no records to view")
    rec = trace.records
    blocks = _blocks(trace, ann)
    live = live_bytes(rec).astype(np.int64)
    starts = _buckets(n)
    peak_rec = int(np.argmax(live))
    ids: set[int] = set()
    peak_blocks = int(live_counts(rec).max())
    allocators = [_allocator(trace, a, arena, ids, peak_blocks) for a in allocs]

    names = _Names(ann, sym)
    caller_idx = np.array([names(int(c)) for c in blocks.callers.tolist()], np.int64) if len(blocks.callers) \
        else np.zeros(0, np.int64)
    sizes = blocks.sizes.astype(np.int64)

    at_peak = live_ids_at(blocks, peak_rec)
    cp_pos, cp_label = (None, None)
    if checkpoint is not None:
        cp_pos, cp_label = resolve_checkpoint(checkpoint, ann, n)
    since = cp_pos if cp_pos is not None else 0
    # Leaks: blocks allocated since the checkpoint (the start without one), by caller and task;
    # "remaining" ones are still live at the end (a realloc keeps the birth of the block it moved).
    after = np.flatnonzero(blocks.born >= since)
    leak_key = caller_idx * 65536 + blocks.tids
    allocated = {k: (b, c) for k, b, c in _group(after, leak_key, sizes)}
    remaining = {k: (b, c) for k, b, c in _group(after[blocks.killed_at[after] == n], leak_key, sizes)}
    leak_rows = [[k // 65536, k % 65536, c, b, *remaining.get(k, (0, 0))[::-1]]
                 for k, (b, c) in allocated.items()]
    leak_rows.sort(key=lambda r: (-r[5], -r[3]))

    id_list = np.array(sorted(ids), np.int64)
    stamps = ann.stamps if len(ann.stamps) == n else None
    hz = ann.meta.get("stamp_hz")
    tids = sorted(set(blocks.tids.tolist()))
    return {
        "name": trace.name, "records": n,
        "bounds": {"buckets": BUCKETS, "snapshots": SNAPSHOTS, "block_budget": BLOCK_BUDGET, "top": TOP},
        "buckets": {"start": starts.tolist(),
                    "live_min": np.minimum.reduceat(live, starts).tolist(),
                    "live_max": np.maximum.reduceat(live, starts).tolist(),
                    "stamp": stamps[starts].tolist() if stamps is not None else None},
        "stamp_hz": float(hz) if hz else None,
        "peak": {"record": peak_rec, "bytes": int(live[peak_rec])},
        "callers": names.names, "has_callers": bool(len(ann.callers) == n),
        "tasks": {str(t): ann.tasks.get(t, "(no task)" if t == 0 else f"t{t}") for t in tids},
        "ids": {"id": id_list.tolist(), "size": sizes[id_list].tolist(),
                "birth": blocks.born[id_list].tolist(), "caller": caller_idx[id_list].tolist(),
                "tid": blocks.tids[id_list].tolist()},
        "at_peak": {"by_caller": _group(at_peak, caller_idx, sizes),
                    "by_task": _group(at_peak, blocks.tids.astype(np.int64), sizes)},
        "leaks": {"since": since, "label": cp_label or "the start", "rows": leak_rows[:TOP],
                  "marks": [[int(p), str(l)] for p, l in ann.marks]},
        "allocators": allocators,
    }


def render(data: dict, title: str) -> str:
    """The page: the data as one JSON script element, the viewer's CSS and JS inlined."""
    js = (ASSETS / "view.js").read_text(encoding="utf-8")
    css = (ASSETS / "view.css").read_text(encoding="utf-8")
    blob = json.dumps(data, separators=(",", ":")).replace("</", "<\\/")
    return (f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">\n'
            f'<meta http-equiv="Content-Security-Policy" content="default-src \'none\'; '
            f'script-src \'unsafe-inline\'; style-src \'unsafe-inline\'; img-src data:">\n'
            f'<title>{html.escape(title)}</title>\n<style>{css}</style></head>\n'
            f'<body>\n<h1>{html.escape(title)}</h1>\n'
            f'<script id="hk-data" type="application/json">{blob}</script>\n'
            f'<div id="app"></div>\n<script>{js}</script>\n</body></html>\n')


def write(trace_path: str, allocs: list[str], out: str, *, arena: int | None = None,
          elf: str | None = None, checkpoint: str | None = None) -> int:
    """Build the page for *trace_path* and write it to *out*; returns its size in bytes."""
    trace, ann = load(trace_path)
    sym = Symbolizer(elf) if elf else None
    data = build(trace, ann, allocs, arena=arena, sym=sym, checkpoint=checkpoint)
    page = render(data, f"heapkit view: {Path(trace_path).name}")
    try:
        Path(out).write_text(page, encoding="utf-8")
    except OSError as e:
        raise HeapkitError(f"{out}: cannot write: {e.strerror or e}") from None
    return len(page.encode())
