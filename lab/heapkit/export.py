# SPDX-License-Identifier: MIT
"""``heapkit export``: a trace in the formats of the free heap viewers.

* ``massif``: a massif.out file (valgrind's format) for ms_print and
  massif-visualizer: ``SNAPSHOTS`` snapshots at evenly spaced records plus
  the peak (the first record where live requested bytes are highest), every
  ``DETAILED``-th one and the peak with a tree by caller.  Time is the
  record number (``time_unit: i``).
* ``heaptrack``: heaptrack's data file (file format version 2, the text
  heaptrack_interpret writes; read by heaptrack_print and heaptrack_gui),
  one allocation and free line per record, each block's trace its caller:
  peak, leaks and temporary allocations come out by caller.  A realloc is a
  free of the old block and an allocation of the new.
* ``perfetto``: a Perfetto trace (protobuf TracePackets, written here: the
  format is a few fields of perfetto_trace.proto) with counter tracks: the
  trace's live requested bytes, each task's live bytes (heapkit.leaks'
  task series), and for each allocator replayed by the engine its
  footprint, largest free block and free-block count.  Timestamps are the
  recorder's stamps in ns when the trace has them, else 1 us per record.

Callers come from the trace's side table (the firmware recorder, ``heapkit
trace``), named from an ELF with ``--elf``; a trace without them has one
caller, "(unknown caller)".
"""

from __future__ import annotations

import gzip
from pathlib import Path

import numpy as np

from . import engine
from .annotations import Annotations
from .errors import HeapkitError
from .leaks import Symbolizer, _blocks, _where, task_series
from .trace import NULL_ID, OP_FREE, OP_REALLOC, Trace, live_bytes
from .view import BUCKETS, load

FORMATS = ("massif", "heaptrack", "perfetto")
SNAPSHOTS = 100
DETAILED = 10


def _caller_names(callers: np.ndarray, ann: Annotations, sym: Symbolizer | None) -> dict[int, str]:
    return {int(c): _where(int(c), sym, ann.modules) for c in np.unique(callers).tolist()}


# --------------------------------------------------------------------------
# massif

def massif(trace: Trace, ann: Annotations, sym: Symbolizer | None, cmd: str) -> str:
    n = len(trace)
    b = _blocks(trace, ann)
    live = live_bytes(trace.records).astype(np.int64)
    names = _caller_names(b.callers, ann, sym)
    peak = int(np.argmax(live))
    times = sorted(set(np.linspace(0, n - 1, min(n, SNAPSHOTS)).astype(np.int64).tolist()) | {peak})
    out = ["desc: heapkit export (live requested bytes of the trace; time is the record number)",
           f"cmd: {cmd}", "time_unit: i"]
    for k, t in enumerate(times):
        kind = "peak" if t == peak else ("detailed" if k % DETAILED == 0 else "empty")
        out += ["#-----------", f"snapshot={k}", "#-----------", f"time={t}", f"mem_heap_B={int(live[t])}",
                "mem_heap_extra_B=0", "mem_stacks_B=0", f"heap_tree={kind}"]
        if kind == "empty":
            continue
        ids = np.flatnonzero((b.pos <= t) & (b.killed_at > t))
        keys, inv = np.unique(b.callers[ids], return_inverse=True)
        by = np.bincount(inv, weights=b.sizes[ids], minlength=len(keys)).astype(np.int64)
        order = np.lexsort((keys, -by))
        out.append(f"n{len(keys)}: {int(live[t])} (heap allocation functions) malloc/new/new[], --alloc-fns, etc.")
        for i in order.tolist():
            out.append(f" n0: {int(by[i])} 0x{int(keys[i]):X}: {names[int(keys[i])]}")
    return "\n".join(out) + "\n"


# --------------------------------------------------------------------------
# heaptrack

def heaptrack(trace: Trace, ann: Annotations, sym: Symbolizer | None, cmd: str) -> str:
    rec = trace.records
    n = len(rec)
    b = _blocks(trace, ann)
    strings: dict[str, int] = {}
    lines: list[str] = ["v 10600 2", f"X {cmd}"]

    def string(s: str) -> int:
        if s not in strings:
            strings[s] = len(strings) + 1
            lines.append(f"s {s}")
        return strings[s]

    module = string(Path(trace.name).name or "trace")
    trace_of: dict[int, int] = {}   # caller -> trace index (1-based), one frame each
    for c in np.unique(b.callers).tolist():
        if sym is not None and c and not ann.modules:
            fn, path, line = sym.lookup(int(c))
            frame = f"{string(fn or _where(c, None, ann.modules))} {string(path or '??')} {line or 0:x}"
        else:
            frame = f"{string(_where(c, sym, ann.modules))} {string('??')} 0"
        lines.append(f"i {c:x} {module:x} {frame}")
        lines.append(f"t {len(trace_of) + 1:x} 0")
        trace_of[c] = len(trace_of) + 1
    infos: dict[tuple[int, int], int] = {}
    info_of = np.empty(len(b.pos), np.int64)    # trace id -> its allocation info index
    for i, (size, caller) in enumerate(zip(b.sizes.tolist(), b.callers.tolist())):
        key = (size, trace_of[caller])
        if key not in infos:
            infos[key] = len(infos)
            lines.append(f"a {size:x} {key[1]:x}")
        info_of[i] = infos[key]
    # heaptrack's clock ('c', ms): one tick per 1/BUCKETS of the trace, so its time axis has the
    # timeline's resolution whatever the trace's length.
    step = max(1, n // BUCKETS)
    op, ident, aux = rec["op"].tolist(), rec["id"].tolist(), rec["aux"].tolist()
    for i in range(n):
        if i % step == 0:
            lines.append(f"c {i // step:x}")
        if op[i] == OP_FREE:
            lines.append(f"- {info_of[ident[i]]:x}")
            continue
        if op[i] == OP_REALLOC and aux[i] != NULL_ID:
            lines.append(f"- {info_of[aux[i]]:x}")
        lines.append(f"+ {info_of[ident[i]]:x}")
    return "\n".join(lines) + "\n"


# --------------------------------------------------------------------------
# perfetto

def _varint(v: int) -> bytes:
    v &= (1 << 64) - 1
    out = bytearray()
    while True:
        byte = v & 0x7F
        v >>= 7
        if v:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _field(num: int, value: int | bytes) -> bytes:
    if isinstance(value, bytes):
        return _varint(num << 3 | 2) + _varint(len(value)) + value
    return _varint(num << 3) + _varint(value)


# perfetto_trace.proto field numbers (Trace.packet, TracePacket.*, TrackDescriptor.*, TrackEvent.*).
_PACKET, _TIMESTAMP, _SEQ_ID, _SEQ_FLAGS, _TRACK_DESC, _TRACK_EVENT = 1, 8, 10, 13, 60, 11
_UUID, _NAME, _COUNTER, _UNIT = 1, 2, 8, 3
_TYPE, _TRACK_UUID, _COUNTER_VALUE = 9, 11, 30
_TYPE_COUNTER, _SEQ_CLEARED, _UNIT_COUNT, _UNIT_BYTES = 4, 1, 2, 3


def perfetto(trace: Trace, ann: Annotations, allocs: list[str], arena: int | None) -> bytes:
    n = len(trace)
    hz = float(ann.meta.get("stamp_hz") or 0)
    stamped = len(ann.stamps) == n and hz > 0

    def ns(records: np.ndarray) -> list[int]:
        if stamped:
            return (ann.stamps[records].astype(np.float64) * (1e9 / hz)).astype(np.int64).tolist()
        return (np.asarray(records, np.int64) * 1000).tolist()

    tracks: list[tuple[str, int, list[int], list[int]]] = []  # name, unit, timestamps, values
    live = live_bytes(trace.records).astype(np.int64)
    # Per bucket, the records of its minimum and maximum (in order): the peak survives exactly.
    starts = np.unique(np.linspace(0, n, min(n, BUCKETS) + 1)[:-1].astype(np.int64))
    picks = set()
    for s, e in zip(starts.tolist(), starts[1:].tolist() + [n]):
        seg = live[s:e]
        picks.update((s + int(np.argmin(seg)), s + int(np.argmax(seg))))
    at = np.array(sorted(picks), np.int64)
    tracks.append(("live requested bytes (trace)", _UNIT_BYTES, ns(at), live[at].tolist()))
    ts = task_series(trace, ann, points=BUCKETS)
    if ts["tasks"]:
        x = np.array(ts["x"], np.float64)   # seconds (from the stamps) or record numbers
        times = np.round(x * (1e9 if ts["axis"] == "seconds" else 1000)).astype(np.int64).tolist()
        for t in ts["tasks"]:
            tracks.append((f"task {t['task'] or t['tid']}: live bytes", _UNIT_BYTES, times,
                           [int(v) for v in t["y"]]))
    for a in allocs:
        r = engine.replay(trace, a, arena=arena, series=min(n, BUCKETS), timing=False)["replay"]
        s = r["series"]
        t_ns = ns(np.array(s["record"], np.int64))
        tracks += [(f"{a}: footprint", _UNIT_BYTES, t_ns, s["footprint"]),
                   (f"{a}: largest free block", _UNIT_BYTES, t_ns, s["largest_free"]),
                   (f"{a}: free blocks", _UNIT_COUNT, t_ns, s["free_blocks"])]
    out = bytearray()
    first = True
    for k, (name, unit, _, _) in enumerate(tracks):
        desc = _field(_UUID, k + 1) + _field(_NAME, name.encode()) + _field(_COUNTER, _field(_UNIT, unit))
        pkt = _field(_SEQ_ID, 1) + _field(_TRACK_DESC, desc)
        if first:
            pkt += _field(_SEQ_FLAGS, _SEQ_CLEARED)
            first = False
        out += _field(_PACKET, pkt)
    events = sorted((t, k, v) for k, (_, _, times, values) in enumerate(tracks) for t, v in zip(times, values))
    for t, k, v in events:
        ev = _field(_TYPE, _TYPE_COUNTER) + _field(_TRACK_UUID, k + 1) + _field(_COUNTER_VALUE, int(v))
        out += _field(_PACKET, _field(_TIMESTAMP, int(t)) + _field(_SEQ_ID, 1) + _field(_TRACK_EVENT, ev))
    return bytes(out)


def write(trace_path: str, fmt: str, out: str, *, allocs: list[str], arena: int | None = None,
          elf: str | None = None) -> None:
    if fmt not in FORMATS:
        raise HeapkitError(f"--format {fmt}: choose from {', '.join(FORMATS)}")
    trace, ann = load(trace_path)
    if len(trace) == 0:
        raise HeapkitError(f"{trace_path}: no records to export")
    sym = Symbolizer(elf) if elf else None
    cmd = f"heapkit export {Path(trace_path).name} --format {fmt}"
    if fmt == "massif":
        data = massif(trace, ann, sym, cmd).encode()
    elif fmt == "heaptrack":
        data = heaptrack(trace, ann, sym, cmd).encode()
        if out.endswith(".gz"):
            data = gzip.compress(data, 6)
    else:
        data = perfetto(trace, ann, allocs, arena)
    try:
        Path(out).write_bytes(data)
    except OSError as e:
        raise HeapkitError(f"{out}: cannot write: {e.strerror or e}") from None
