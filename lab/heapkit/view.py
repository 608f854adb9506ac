# SPDX-License-Identifier: MIT
"""``heapkit view``: one self-contained HTML page to explore a trace.

The page (vanilla JS on canvases, view.js and view.css beside this module,
inlined; nothing fetched) shows a zoomable timeline, the arena of each
chosen allocator at the cursor, who holds memory at the cursor and at the
peak, an icicle by task and caller, and the leaks.  The numbers come from
the rest of the lab: the trace's own live bytes (:mod:`heapkit.trace`),
the engine's replay of each allocator (:mod:`heapkit.engine`: its sampled
series, its heap-map snapshots, whose used blocks name the trace id
holding them, and where it put each id's block) and the leak analysis
(:mod:`heapkit.leaks`).

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
  page says so);
* the map between snapshots, for a trace of at most ``EXACT_BUDGET`` records
  x allocators: per trace id its request, caller, task, birth, the record
  that creates it and the one that ends it (22 bytes), and per allocator
  where the block went (``hk-replay --placements``: payload offset and
  usable bytes, 8 bytes), as base64 typed arrays: (22 + 8 x allocators)
  x 4/3 bytes per id, so at most 200 MB of page (one allocator, 5 million
  ids). The page computes the map at the cursor's record from them: the
  used blocks are those live there, at their exact extents (the engine
  checked each walked block's ``gross`` relation); the free space is the
  rest, its blocks the cursor's snapshot's where unchanged, a freed block
  merged with its free neighbours. Past the budget (or for an allocator whose
  blocks' relation varies, or an arena of 2 GiB or more) the cursor shows
  the latest snapshot at or before it and the page says so;
* the blocks' owners: one row per trace id a snapshot names (all ids when
  the map is exact);
* the tables: the ``TOP`` largest groups.
"""

from __future__ import annotations

import base64
import html
import json
import os
import tempfile
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
EXACT_BUDGET = 5_000_000
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


def _typed(a: np.ndarray, dtype: str) -> dict:
    """*a* as a little-endian typed array the page decodes: {"t": dtype, "b": base64}."""
    return {"t": dtype, "b": base64.b64encode(np.ascontiguousarray(a, "<" + dtype).tobytes()).decode()}


def _sizes(sizes: np.ndarray) -> dict:
    """Request sizes as uint32, or float64 when one does not fit (a calloc's product can pass 4 GiB)."""
    return _typed(sizes, "u4" if not len(sizes) or sizes.max() < 2**32 else "f8")


def live_ids_at(blocks, record: int) -> np.ndarray:
    """The trace ids live just after *record*."""
    return np.flatnonzero((blocks.pos <= record) & (blocks.killed_at > record))


def _allocator(trace: Trace, alloc: str, arena: int | None, ids: set[int], peak_blocks: int,
               exact: bool) -> dict:
    n = len(trace)
    # A walk sees about a free block per used one: as many snapshots as fit whole in the budget
    # at the trace's peak, within [MIN_SNAPSHOTS, SNAPSHOTS]; past its cap a snapshot merges runs.
    snaps = min(n, SNAPSHOTS, max(MIN_SNAPSHOTS, BLOCK_BUDGET // (2 * peak_blocks + 16)))
    cap = max(64, BLOCK_BUDGET // snaps)
    with tempfile.TemporaryDirectory(prefix="heapkit-view-") as tmp:
        where = Path(tmp) / "placements" if exact else None
        res = engine.replay(trace, alloc, arena=arena, series=min(n, BUCKETS), heapmap=snaps, heapmap_cap=cap,
                            heapmap_owners=True, placements=where, timing=False)
        place = np.fromfile(where, "<i8").reshape(-1, 2) if exact else None
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
    # The map between snapshots: where each id's block went, and how far its header and tail reach.
    gross = r["heapmap"]["gross"]
    if not exact:
        between = f"the trace's {n:,} records x allocators pass the page's bound ({EXACT_BUDGET:,})"
    elif gross is None:
        between = "its walks saw no used block, or blocks reaching differently around their payloads"
    elif res["arena"]["size"] >= 2**31:
        between = "its arena is 2 GiB or more"
    else:
        between = {"head": gross["head"], "tail": gross["tail"],
                   "offset": _typed(place[:, 0], "i4"), "usable": _typed(place[:, 1], "i4")}
    return {"name": alloc, "arena": res["arena"]["size"], "control": res["arena"]["control_bytes"],
            "peak_end": mem["peak_end"],
            "peak_footprint": mem["peak_footprint"], "peak_footprint_record": mem["peak_footprint_record"],
            "failures": fails["total"], "first_failure": fails["first_failure_record"],
            "series": {"record": s["record"], "footprint": s["footprint"], "largest_free": s["largest_free"],
                       "free_blocks": s["free_blocks"], "failures": s["failures"],
                       "frag": [round(float(x), 4) for x in frag]},
            "snapshot_cap": cap, "snapshots": out_snaps, "between": between}


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
    exact = n * len(allocs) <= EXACT_BUDGET
    allocators = [_allocator(trace, a, arena, ids, peak_blocks, exact) for a in allocs]

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

    # Every id when the map is exact (it may show any), else those the snapshots name.
    id_list = np.arange(len(sizes)) if exact else np.array(sorted(ids), np.int64)
    id_cols = {"size": _sizes(sizes[id_list]), "birth": _typed(blocks.born[id_list], "i4"),
               "caller": _typed(caller_idx[id_list], "i4"), "tid": _typed(blocks.tids[id_list], "u2")}
    if exact:
        id_cols.update(pos=_typed(blocks.pos, "i4"), end=_typed(blocks.killed_at, "i4"))
    else:
        id_cols["id"] = _typed(id_list, "i4")
    stamps = ann.stamps if len(ann.stamps) == n else None
    hz = ann.meta.get("stamp_hz")
    tids = sorted(set(blocks.tids.tolist()))
    return {
        "name": trace.name, "records": n,
        "bounds": {"buckets": BUCKETS, "snapshots": SNAPSHOTS, "block_budget": BLOCK_BUDGET, "top": TOP,
                   "exact_budget": EXACT_BUDGET},
        "buckets": {"start": starts.tolist(),
                    "live_min": np.minimum.reduceat(live, starts).tolist(),
                    "live_max": np.maximum.reduceat(live, starts).tolist(),
                    "stamp": stamps[starts].tolist() if stamps is not None else None},
        "stamp_hz": float(hz) if hz else None,
        "peak": {"record": peak_rec, "bytes": int(live[peak_rec])},
        "callers": names.names, "has_callers": bool(len(ann.callers) == n),
        "tasks": {str(t): ann.tasks.get(t, "(no task)" if t == 0 else f"t{t}") for t in tids},
        "ids": id_cols,
        "at_peak": {"by_caller": _group(at_peak, caller_idx, sizes),
                    "by_task": _group(at_peak, blocks.tids.astype(np.int64), sizes)},
        "leaks": {"since": since, "label": cp_label or "the start", "rows": leak_rows[:TOP],
                  "marks": [[int(p), str(l)] for p, l in ann.marks]},
        "allocators": allocators,
    }


def render(data: dict, title: str, *, live: bool = False) -> str:
    """The page: the data as one JSON script element, the viewer's CSS and JS inlined.

    live: the --follow page, which may fetch /data from the server that sent it (and only there).
    """
    js = (ASSETS / "view.js").read_text(encoding="utf-8")
    css = (ASSETS / "view.css").read_text(encoding="utf-8")
    blob = json.dumps(data, separators=(",", ":")).replace("</", "<\\/")
    return (f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">\n'
            f'<meta http-equiv="Content-Security-Policy" content="default-src \'none\'; '
            f'script-src \'unsafe-inline\'; style-src \'unsafe-inline\'; img-src data:'
            f'{"; connect-src &apos;self&apos;" if live else ""}">\n'
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


# --------------------------------------------------------------------------
# --follow: the page served on 127.0.0.1 while a firmware writes its stream

POLL_S = 1.0


class _Live:
    """The data of a growing recorder stream, rebuilt when records were added."""

    def __init__(self, stream: str, allocs: list[str], arena: int | None, sym: Symbolizer | None,
                 checkpoint: str | None):
        self.stream, self.allocs, self.arena, self.sym, self.checkpoint = stream, allocs, arena, sym, checkpoint
        self.size = -1
        self.data: dict | None = None
        self.version = 0
        self.done = False

    def refresh(self) -> None:
        from .fwtrace import STREAM_HEADER, parse_firmware
        try:
            raw = Path(self.stream).read_bytes()
        except FileNotFoundError:
            return
        except OSError as e:
            raise HeapkitError(f"{self.stream}: cannot read: {e.strerror or e}") from None
        if len(raw) == self.size or len(raw) <= STREAM_HEADER:
            return
        trace, ann, _, _ = parse_firmware(raw, self.stream, partial=True)
        self.size = len(raw)
        if len(trace) == 0:
            return
        # A checkpoint the firmware has not marked yet counts from the start meanwhile.
        cp = self.checkpoint if self.checkpoint is None or self.done or any(
            label == self.checkpoint for _, label in ann.marks) else None
        self.data = build(trace, ann, self.allocs, arena=self.arena, sym=self.sym, checkpoint=cp)
        self.version += 1

    def payload(self) -> dict:
        d = dict(self.data or {})
        d["follow"] = {"version": self.version, "done": self.done, "poll_ms": int(POLL_S * 1000)}
        return d


def follow(stream: str, allocs: list[str], out: str, command: list[str], *, port: int = 0,
           arena: int | None = None, elf: str | None = None, checkpoint: str | None = None,
           announce=print) -> int:
    """Serve the live page of *stream* on 127.0.0.1 while *command* (the firmware) writes it.

    Without a command, follows the file until Ctrl-C. When the command ends, the page gets
    the last records, the server stops and *out* receives the static page; returns the
    command's exit status (0 without one).
    """
    import subprocess
    import threading
    import time
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    live = _Live(stream, allocs, arena, Symbolizer(elf) if elf else None, checkpoint)
    title = f"heapkit view --follow: {Path(stream).name}"
    lock = threading.Lock()
    served_done = threading.Event()
    polled = threading.Event()

    class Handler(BaseHTTPRequestHandler):
        def _send(self, body: bytes, ctype: str) -> None:
            self.send_response(200)
            self.send_header("Content-Type", ctype)
            self.send_header("Cache-Control", "no-store")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self):  # noqa: N802 (http.server's name)
            with lock:
                payload = live.payload()
            if self.path == "/":
                self._send(render(payload, title, live=True).encode(), "text/html; charset=utf-8")
            elif self.path == "/data":
                self._send(json.dumps(payload, separators=(",", ":")).encode(), "application/json")
                polled.set()
                if payload["follow"]["done"]:
                    served_done.set()
            else:
                self.send_error(404)

        def log_message(self, *args):
            pass

    try:
        server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    except OSError as e:
        raise HeapkitError(f"--port {port}: cannot listen on 127.0.0.1: {e.strerror or e}") from None
    threading.Thread(target=server.serve_forever, daemon=True).start()
    announce(f"serving http://127.0.0.1:{server.server_port}/ (following {stream}; Ctrl-C stops)")
    proc = None
    try:
        if command:
            try:
                proc = subprocess.Popen(command, stdin=subprocess.DEVNULL)
            except OSError as e:
                raise HeapkitError(f"{command[0]}: cannot run: {e.strerror or e}") from None
        while proc is None or proc.poll() is None:
            with lock:
                live.refresh()
            time.sleep(POLL_S / 2)
        with lock:
            live.done = True
            live.size = -1
            live.refresh()
        # Let an open page fetch the last records (a few polls at most), then stop.
        if polled.is_set():
            served_done.wait(3 * POLL_S)
    finally:
        if proc is not None and proc.poll() is None:
            proc.terminate()
            proc.wait()
        server.shutdown()
        server.server_close()
    if live.data is None:
        raise HeapkitError(f"{stream}: no records arrived")
    page = render(live.data, title.replace(" --follow", ""))
    try:
        Path(out).write_text(page, encoding="utf-8")
    except OSError as e:
        raise HeapkitError(f"{out}: cannot write: {e.strerror or e}") from None
    return proc.returncode if proc is not None else 0
