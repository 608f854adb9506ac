# SPDX-License-Identifier: MIT
"""``heapkit leaks``: the blocks a trace leaves live, by caller and task.

Input: a heapkit trace and its side table (heapkit.annotations: callers,
task names, checkpoints). Output: the blocks live at the end grouped by
(caller, task) with their count and requested bytes; with a checkpoint,
those allocated after it and never freed (the leak suspects) apart from
those that were already live before it (long-lived blocks; a realloc keeps the birth of the block it moved); and per task
its allocation count and peak live bytes (a block counts for the task that
allocated it until it is freed, whoever frees it).

Callers become ``function (file:line)`` through the DWARF line table of an
ELF (pyelftools); without one they stay addresses. A Linux capture's side
table also lists the process's loaded objects: a caller in the ELF given is
moved back by its object's load bias first (position-independent programs
and libraries), one in another object reads ``object+offset``.
"""

from __future__ import annotations

import bisect
import os
from dataclasses import dataclass

import numpy as np

from .annotations import Annotations
from .errors import HeapkitError
from .trace import ALLOC_OPS, OP_CALLOC, OP_FREE, OP_REALLOC, NULL_ID, Trace


class Symbolizer:
    """Return address -> (function, file, line) from an ELF's symbols and DWARF lines."""

    def __init__(self, path: str | os.PathLike):
        try:
            from elftools.common.exceptions import ELFError
            from elftools.elf.elffile import ELFFile
        except ImportError:
            raise HeapkitError("--elf needs pyelftools (pip install pyelftools)") from None
        self.path = str(path)
        try:
            with open(path, "rb") as f:
                elf = ELFFile(f)
                # Arm: bit 0 of a code address is the Thumb state, not part of the address.
                self._code_mask = ~1 if elf["e_machine"] == "EM_ARM" else ~0
                self._funcs = self._functions(elf, self._code_mask)
                self._scopes = self._inlined(elf)
                self._rows = self._lines(elf)
        except FileNotFoundError:
            raise HeapkitError(f"{path}: no such file") from None
        except (ELFError, OSError, ValueError) as e:
            raise HeapkitError(f"{path}: cannot read the ELF ({e})") from None
        self._starts = [f[0] for f in self._funcs]
        self._row_addrs = [r[0] for r in self._rows]

    def describes(self, loaded: str) -> bool:
        """Is *loaded* (a process's object path) this ELF? The same file, or one of the same name."""
        return (os.path.realpath(loaded) == os.path.realpath(self.path)
                or os.path.basename(loaded) == os.path.basename(self.path))

    @staticmethod
    def _functions(elf, code_mask: int) -> list[tuple[int, int, str]]:
        out = []
        for sec in elf.iter_sections():
            if sec.header.sh_type != "SHT_SYMTAB":
                continue
            for sym in sec.iter_symbols():
                if sym["st_info"]["type"] == "STT_FUNC" and sym.name:
                    start = sym["st_value"] & code_mask
                    out.append((start, start + max(sym["st_size"], 1), sym.name))
        return sorted(out)

    @staticmethod
    def _inlined(elf) -> list[tuple[int, int, str]]:
        """(low, high, name) of every inlined call, so a leak in an inlined function gets its name."""
        if not elf.has_dwarf_info():
            return []
        dwarf = elf.get_dwarf_info()
        out = []
        for cu in dwarf.iter_CUs():
            for die in cu.iter_DIEs():
                if die.tag != "DW_TAG_inlined_subroutine" or "DW_AT_abstract_origin" not in die.attributes:
                    continue
                origin = die.get_DIE_from_attribute("DW_AT_abstract_origin")
                name = origin.attributes.get("DW_AT_name")
                if name is None:
                    continue
                for lo, hi in _die_ranges(dwarf, cu, die):
                    out.append((lo, hi, name.value.decode(errors="replace")))
        return out

    @staticmethod
    def _lines(elf) -> list[tuple[int, str, int, bool]]:
        if not elf.has_dwarf_info():
            return []
        dwarf = elf.get_dwarf_info()
        rows = []
        for cu in dwarf.iter_CUs():
            lp = dwarf.line_program_for_CU(cu)
            if lp is None:
                continue
            v5 = lp.header["version"] >= 5
            files = lp["file_entry"]
            dirs = lp["include_directory"]
            for entry in lp.get_entries():
                st = entry.state
                if st is None:
                    continue
                k = st.file if v5 else st.file - 1
                name = "?"
                if 0 <= k < len(files):
                    fe = files[k]
                    name = fe.name.decode(errors="replace")
                    d = fe.dir_index if v5 else fe.dir_index - 1
                    if not os.path.isabs(name) and 0 <= d < len(dirs) and fe.dir_index:
                        name = os.path.join(dirs[d].decode(errors="replace"), name)
                rows.append((st.address, name, st.line, st.end_sequence))
        rows.sort(key=lambda r: (r[0], not r[3]))
        return rows

    def lookup(self, address: int) -> tuple[str | None, str | None, int | None]:
        """(function, file, line) of the call that returns to *address*."""
        pc = (address & self._code_mask) - 1        # inside the call instruction, not after it
        fn = None
        i = bisect.bisect_right(self._starts, pc) - 1
        if i >= 0 and self._funcs[i][0] <= pc < self._funcs[i][1]:
            fn = self._funcs[i][2]
        # The innermost inlined call holding pc names the function the source line belongs to.
        inner = [s for s in self._scopes if s[0] <= pc < s[1]]
        if inner:
            fn = min(inner, key=lambda s: s[1] - s[0])[2]
        j = bisect.bisect_right(self._row_addrs, pc) - 1
        if j >= 0 and not self._rows[j][3]:
            return fn, self._rows[j][1], self._rows[j][2]
        return fn, None, None


def _die_ranges(dwarf, cu, die) -> list[tuple[int, int]]:
    attrs = die.attributes
    if "DW_AT_low_pc" in attrs and "DW_AT_high_pc" in attrs:
        lo = attrs["DW_AT_low_pc"].value
        hi = attrs["DW_AT_high_pc"]
        return [(lo, hi.value if hi.form == "DW_FORM_addr" else lo + hi.value)]
    if "DW_AT_ranges" in attrs:
        lists = dwarf.range_lists()
        if lists is None:
            return []
        base = cu.get_top_DIE().attributes.get("DW_AT_low_pc")
        base = base.value if base is not None else 0
        out = []
        for r in lists.get_range_list_at_offset(attrs["DW_AT_ranges"].value, cu=cu):
            if hasattr(r, "begin_offset"):
                if getattr(r, "is_absolute", False):
                    out.append((r.begin_offset, r.end_offset))
                else:
                    out.append((base + r.begin_offset, base + r.end_offset))
            elif hasattr(r, "base_address"):
                base = r.base_address
        return out
    return []


@dataclass
class Group:
    caller: int
    tid: int
    count: int
    bytes: int
    where: str = ""

    def as_dict(self, tasks: dict[int, str]) -> dict:
        return {"caller": f"0x{self.caller:x}", "where": self.where, "tid": self.tid,
                "task": tasks.get(self.tid, ""), "count": self.count, "bytes": self.bytes}


def resolve_checkpoint(spec: str, ann: Annotations, records: int) -> tuple[int, str]:
    """(record position, label) of --checkpoint N|LABEL."""
    for pos, label in ann.marks:
        if label == spec:
            return pos, label
    try:
        pos = int(spec, 0)
    except ValueError:
        labels = ", ".join(sorted({m[1] for m in ann.marks})) or "none in this trace"
        raise HeapkitError(f"--checkpoint {spec!r}: no such label (labels: {labels})") from None
    if not 0 <= pos <= records:
        raise HeapkitError(f"--checkpoint {pos}: outside the trace's {records} records")
    return pos, f"record {pos}"


def _group(ids: np.ndarray, callers: np.ndarray, tids: np.ndarray, sizes: np.ndarray) -> list[Group]:
    acc: dict[tuple[int, int], list[int]] = {}
    for c, t, s in zip(callers[ids].tolist(), tids[ids].tolist(), sizes[ids].tolist()):
        g = acc.setdefault((c, t), [0, 0])
        g[0] += 1
        g[1] += s
    out = [Group(c, t, n, b) for (c, t), (n, b) in acc.items()]
    return sorted(out, key=lambda g: (-g.bytes, -g.count, g.caller, g.tid))


@dataclass
class _Blocks:
    """Every block (trace id) of a trace, by id."""
    pos: np.ndarray         # the record that allocated it
    killed_at: np.ndarray   # the record that freed it or moved it (realloc); len(trace): live at the end
    born: np.ndarray        # where it was first allocated, through any reallocs that moved it
    sizes: np.ndarray       # requested bytes (calloc: count x size)
    tids: np.ndarray
    callers: np.ndarray


def _blocks(trace: Trace, ann: Annotations) -> _Blocks:
    rec = trace.records
    n = len(rec)
    op = rec["op"]
    pos = np.flatnonzero(np.isin(op, ALLOC_OPS))        # id -> its record
    sizes = rec["size"][pos].astype(np.int64)
    calloc = op[pos] == OP_CALLOC
    sizes[calloc] *= rec["aux"][pos][calloc].astype(np.int64)
    killed_at = np.full(len(pos), n, np.int64)
    frees = np.flatnonzero(op == OP_FREE)
    killed_at[rec["id"][frees]] = frees
    moves = np.flatnonzero((op == OP_REALLOC) & (rec["aux"] != NULL_ID))
    killed_at[rec["aux"][moves]] = moves
    born = pos.copy()
    for old, new in zip(rec["aux"][moves].tolist(), rec["id"][moves].tolist()):
        born[new] = born[old]
    callers = ann.callers[pos] if len(ann.callers) == n else np.zeros(len(pos), np.uint64)
    return _Blocks(pos, killed_at, born, sizes, rec["tid"][pos].astype(np.int64), callers)


def _events(b: _Blocks, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every allocation and free (a realloc's move counts as the old block's free), unordered:
    (record position, change of live bytes, allocating task)."""
    freed = b.killed_at < n
    return (np.concatenate((b.pos, b.killed_at[freed])), np.concatenate((b.sizes, -b.sizes[freed])),
            np.concatenate((b.tids, b.tids[freed])))


def _lives(b: _Blocks, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Every task's allocations and frees in trace order, tasks one after the other (at one
    position, frees first): (the tasks' ids, where each task's events start, the events'
    record positions, the task's live bytes just after each). A block counts for the task
    that allocated it. One sort, whatever the number of tasks."""
    ev_pos, ev_delta, ev_tid = _events(b, n)
    order = np.lexsort((ev_delta, ev_pos, ev_tid))
    pos, delta, tid = ev_pos[order], ev_delta[order], ev_tid[order]
    starts = np.flatnonzero(np.diff(tid, prepend=-1))
    total = np.cumsum(delta)
    before = total[starts] - delta[starts]               # the running sum as each task begins
    live = total - np.repeat(before, np.diff(np.append(starts, len(total))))
    return tid[starts], starts, pos, live


def _task_name(ann: Annotations, tid: int) -> str:
    return ann.tasks.get(tid, "" if tid else "(no task)")


def analyse(trace: Trace, ann: Annotations, checkpoint: str | None = None,
            symbolizer: Symbolizer | None = None) -> dict:
    n = len(trace)
    b = _blocks(trace, ann)
    live_end = b.killed_at == n

    cp_pos, cp_label = (None, None)
    if checkpoint is not None:
        cp_pos, cp_label = resolve_checkpoint(checkpoint, ann, n)
    sections = []
    if cp_pos is None:
        sections.append(("live at the end", np.flatnonzero(live_end)))
    else:
        after = live_end & (b.born >= cp_pos)
        before = live_end & (b.born < cp_pos)
        sections.append((f"allocated after the checkpoint ({cp_label}) and never freed",
                         np.flatnonzero(after)))
        sections.append((f"long-lived: allocated before the checkpoint ({cp_label}), still live",
                         np.flatnonzero(before)))
    out_sections = []
    for title, ids in sections:
        groups = _group(ids, b.callers, b.tids, b.sizes)
        for g in groups:
            g.where = _where(g.caller, symbolizer, ann.modules)
        out_sections.append({"title": title, "blocks": int(len(ids)),
                             "bytes": int(b.sizes[ids].sum()) if len(ids) else 0,
                             "groups": [g.as_dict(ann.tasks) for g in groups]})

    # Per task: allocations, peak live bytes (charged to the allocating task).
    tasks = []
    if len(b.pos):
        tids, starts, _, live = _lives(b, n)
        peaks = np.maximum.reduceat(live, starts)
        allocs = np.unique(b.tids, return_counts=True)[1]           # the same sorted tids
        end_blocks = dict(zip(*np.unique(b.tids[live_end], return_counts=True)))
        end_bytes = np.zeros(len(tids), np.int64)
        np.add.at(end_bytes, np.searchsorted(tids, b.tids[live_end]), b.sizes[live_end])
        for k, tid in enumerate(tids.tolist()):
            tasks.append({"tid": tid, "task": _task_name(ann, tid), "allocations": int(allocs[k]),
                          "peak_live_bytes": int(peaks[k]),
                          "live_blocks_at_end": int(end_blocks.get(tid, 0)),
                          "live_bytes_at_end": int(end_bytes[k])})
    return {"trace": trace.name, "records": n, "ids": len(b.pos),
            "callers": bool(len(ann.callers) == n and n),
            "dropped": int(ann.meta.get("dropped", "0") or 0),
            "checkpoint": None if cp_pos is None else {"record": cp_pos, "label": cp_label},
            "sections": out_sections, "tasks": tasks}


def task_series(trace: Trace, ann: Annotations, points: int = 600, top: int = 10) -> dict:
    """Live bytes per task over the trace, for a usage-over-time plot.

    One x axis for every task: the records where a block was allocated or
    freed, the stamp of the record in seconds when the trace has stamps and
    their rate (the firmware recorder), else the record number. With more
    such records than *points*, each 1/*points* of the trace keeps the one
    where the tasks together held the most (the peaks survive the thinning,
    and the tasks' values still add up to the total). The *top* tasks with
    the highest peaks get a series each, the rest one together ("other
    tasks"), so that neither memory nor the legend grows with the number of
    threads. Returns {"axis": "seconds" or "record", "records", "points",
    "x", "tasks": [{"tid", "task", "y"}]} (tid None for the others).
    """
    n = len(trace)
    b = _blocks(trace, ann)
    out = {"axis": "record", "records": n, "points": points, "x": [], "tasks": []}
    if not len(b.pos):
        return out
    tids, starts, pos, live = _lives(b, n)
    ends = np.append(starts[1:], len(pos))
    # The whole heap in trace order; at each record, the value after its last event.
    ev_pos, ev_delta, _ = _events(b, n)
    order = np.lexsort((ev_delta, ev_pos))
    epos, total = ev_pos[order], np.cumsum(ev_delta[order])
    last = np.flatnonzero(np.diff(epos, append=epos[-1] + 1))
    grid = np.concatenate(([0], epos[last]))
    total = np.concatenate(([0], total[last]))
    if len(grid) > points:
        bucket = grid * points // max(n, 1)
        first = np.flatnonzero(np.diff(bucket, prepend=-1))
        keep = [f + int(np.argmax(t)) for f, t in zip(first, np.split(total, first[1:]))]
        grid, total = grid[keep], total[keep]
    peaks = np.maximum.reduceat(live, starts)
    chosen = sorted(np.argsort(-peaks, kind="stable")[:top].tolist())
    series, shown = [], np.zeros(len(grid), np.int64)
    for k in chosen:
        x, y = pos[starts[k]:ends[k]], live[starts[k]:ends[k]]
        at = np.searchsorted(x, grid, side="right") - 1     # the task's last event at or before
        values = np.where(at >= 0, y[np.maximum(at, 0)], 0)
        shown += values
        tid = int(tids[k])
        series.append({"tid": tid, "task": _task_name(ann, tid) or f"t{tid}", "y": values.tolist()})
    if len(tids) > len(chosen):
        series.append({"tid": None, "task": f"other tasks ({len(tids) - len(chosen)})",
                       "y": (total - shown).tolist()})
    hz = int(ann.meta.get("stamp_hz", "0") or 0)
    seconds = hz > 0 and len(ann.stamps) == n and n > 0
    out.update(axis="seconds" if seconds else "record", tasks=series,
               x=(ann.stamps[np.minimum(grid, n - 1)] / hz if seconds else grid).tolist())
    return out


def _where(caller: int, symbolizer: Symbolizer | None,
           modules: list[tuple[int, int, int, str]]) -> str:
    """``function (file:line)`` of a caller; in a process's other objects ``object+offset``."""
    if caller == 0:
        return "(unknown caller)"
    address = caller
    if modules:
        # A Linux process: the caller is a run-time address in one of its loaded objects.
        m = next((m for m in modules if m[0] <= caller < m[1]), None)
        if m is None:
            return f"0x{caller:x}"
        address = caller - m[2]
        if symbolizer is None or not symbolizer.describes(m[3]):
            return f"{os.path.basename(m[3])}+0x{address:x}"
    elif symbolizer is None:
        return f"0x{caller:x}"
    fn, path, line = symbolizer.lookup(address)
    place = f"{os.path.basename(path)}:{line}" if path else "?"
    return f"{fn or '?'} ({place})"


def render(report: dict) -> list[str]:
    lines = [f"{report['trace']}: {report['records']} records, {report['ids']} blocks"
             + ("" if report["callers"] else " (no callers recorded)")]
    if report["dropped"]:
        lines.append(f"  WARNING: the recorder dropped {report['dropped']} records: "
                     "frees may be missing")
    for sec in report["sections"]:
        lines.append("")
        lines.append(f"{sec['title']}: {sec['blocks']} blocks, {sec['bytes']} bytes")
        if sec["groups"]:
            lines.append(f"  {'count':>6} {'bytes':>9}  {'task':<16} caller")
        for g in sec["groups"]:
            task = g["task"] or (f"t{g['tid']}" if g["tid"] else "-")
            lines.append(f"  {g['count']:>6} {g['bytes']:>9}  {task:<16} {g['where']}")
    lines.append("")
    lines.append("per task:")
    lines.append(f"  {'task':<16} {'allocations':>11} {'peak live bytes':>15} {'live at end':>18}")
    for t in report["tasks"]:
        name = t["task"] or f"t{t['tid']}"
        end = f"{t['live_blocks_at_end']} / {t['live_bytes_at_end']} B"
        lines.append(f"  {name:<16} {t['allocations']:>11} {t['peak_live_bytes']:>15} {end:>18}")
    return lines
