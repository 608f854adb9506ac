# SPDX-License-Identifier: MIT
"""heapkit traces: the in-memory type, the three encodings, validation, stats.

A :class:`Trace` is a numpy structured array whose dtype is exactly the
16-byte record of the binary form (docs/trace-format.md)::

    op u1 | reserved u1 | tid u2 | id u4 | size u4 | aux u4     (little-endian)

so writing ``.hkb`` is one ``tobytes()`` and reading it is one
``frombuffer()``.  Text (``.hkt``, ``.hkt.gz``) is read as a stream, a few
MiB of whole lines at a time, so memory follows the events, not the
bytes (a gzip file of comment lines costs nothing).  Each piece in the
canonical layout (single spaces, LF line ends) is tokenised and converted by
numpy without a per-line Python loop (2.45M events in about 2 s); anything
else falls back to a line-by-line parser that also accepts tabs, repeated
spaces and CRLF, and names the line of any error.  Number ranges are
checked per piece; every rule that needs the whole trace (dense ids,
liveness of freed ids, power-of-two alignments) is vectorised and run once
over the finished array, then mapped back to the line or record that
broke it.  A text file must end with a line end: one that does not is
reported as truncated.

Thread ids are stored in 16 bits, as in the binary form: a larger ``tTID``
in a text trace is truncated, as the format allows.
"""

from __future__ import annotations

import contextlib
import gzip
import io
import os
import re
import struct
import zlib
from array import array
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Iterator

import numpy as np

from .errors import HeapkitError, TraceError

RECORD_DTYPE = np.dtype([
    ("op", "u1"), ("reserved", "u1"), ("tid", "<u2"),
    ("id", "<u4"), ("size", "<u4"), ("aux", "<u4"),
])
assert RECORD_DTYPE.itemsize == 16

OP_MALLOC = ord("m")
OP_CALLOC = ord("c")
OP_ALIGNED = ord("a")
OP_REALLOC = ord("r")
OP_FREE = ord("f")
ALLOC_OPS = (OP_MALLOC, OP_CALLOC, OP_ALIGNED, OP_REALLOC)
ALL_OPS = ALLOC_OPS + (OP_FREE,)
OP_NAMES = {OP_MALLOC: "malloc", OP_CALLOC: "calloc", OP_ALIGNED: "aligned",
            OP_REALLOC: "realloc", OP_FREE: "free"}

NULL_ID = 0xFFFFFFFF          # aux of a realloc(NULL, size)
U32_MAX = 0xFFFFFFFF

TEXT_HEADER = "heapkit-trace 1"
BIN_MAGIC = b"HKTRACE\0"
BIN_VERSION = 1
_BIN_HEADER = struct.Struct("<8sIIQII")
BIN_HEADER_SIZE = _BIN_HEADER.size
assert BIN_HEADER_SIZE == 32
GZIP_MAGIC = b"\x1f\x8b"

# One of the encodings, as chosen by a file name.
FORM_TEXT = "hkt"
FORM_GZ = "hkt.gz"
FORM_BINARY = "hkb"


def form_of_path(path: str | os.PathLike) -> str | None:
    """The encoding a file name asks for (``hkt``, ``hkt.gz``, ``hkb``), or None."""
    name = str(path).lower()
    if name.endswith(".hkb"):
        return FORM_BINARY
    if name.endswith(".hkt.gz"):
        return FORM_GZ
    if name.endswith(".hkt"):
        return FORM_TEXT
    return None


def sniff_form(head: bytes) -> str | None:
    """The heapkit encoding the first bytes of a file are in, or None."""
    if head.startswith(BIN_MAGIC):
        return FORM_BINARY
    if head.startswith(GZIP_MAGIC):
        try:
            inner = zlib.decompressobj(wbits=31).decompress(head)
        except zlib.error:
            return None
        return FORM_GZ if inner.startswith(TEXT_HEADER.encode()) else None
    if head.startswith(TEXT_HEADER.encode()):
        return FORM_TEXT
    return None


# --------------------------------------------------------------------------
# Stats

@dataclass
class TraceStats:
    """Summary of a trace.  Byte counts are requested bytes (calloc: nmemb*size)."""

    events: int
    by_op: dict[str, int]
    realloc_null: int
    ids: int
    live_at_end: int
    live_bytes_at_end: int
    peak_live_bytes: int
    peak_live_blocks: int
    max_size: int
    total_requested: int
    threads: int
    tids: list[int] = field(repr=False)

    def as_dict(self) -> dict:
        d = dict(self.__dict__)
        d["tids"] = list(self.tids)
        return d

    def lines(self) -> list[str]:
        ops = ", ".join(f"{k} {v}" for k, v in self.by_op.items())
        return [
            f"events            {self.events}  ({ops})",
            f"realloc(NULL)     {self.realloc_null}",
            f"ids               {self.ids}",
            f"peak live         {self.peak_live_bytes} bytes (requested)",
            f"most live blocks  {self.peak_live_blocks}",
            f"live at end       {self.live_at_end} blocks, {self.live_bytes_at_end} bytes",
            f"max size          {self.max_size}",
            f"total requested   {self.total_requested} bytes",
            f"threads           {self.threads}",
        ]


# --------------------------------------------------------------------------
# The trace type

class Trace:
    """A validated heapkit trace held as a structured array of records.

    ``Trace(records)`` validates; use :meth:`load` / :meth:`save` for files,
    :class:`TraceBuilder` to make one event by event.
    """

    __slots__ = ("records", "name")

    def __init__(self, records: np.ndarray, name: str = "<trace>", *,
                 validate: bool = True):
        records = np.ascontiguousarray(records)
        if records.dtype != RECORD_DTYPE:
            raise TypeError(f"records must have dtype {RECORD_DTYPE}, not {records.dtype}")
        self.records = records
        self.name = name
        if validate:
            validate_records(records, name)

    # -- basic access ------------------------------------------------------
    def __len__(self) -> int:
        return len(self.records)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Trace):
            return NotImplemented
        return np.array_equal(self.records, other.records)

    def __repr__(self) -> str:
        return f"Trace({self.name!r}, {len(self)} events, {self.n_ids} ids)"

    @property
    def n_ids(self) -> int:
        """Number of ids (one past the largest)."""
        return int(np.count_nonzero(np.isin(self.records["op"], ALLOC_OPS)))

    def stats(self) -> TraceStats:
        return trace_stats(self.records)

    # -- encodings ---------------------------------------------------------
    def to_bytes(self) -> bytes:
        """The binary (.hkb) encoding."""
        head = _BIN_HEADER.pack(BIN_MAGIC, BIN_VERSION, 0, len(self.records), self.n_ids, 0)
        return head + self.records.tobytes()

    def to_text(self) -> str:
        """The text (.hkt) encoding."""
        out = io.StringIO()
        write_text(self.records, out)
        return out.getvalue()

    @classmethod
    def from_bytes(cls, data: bytes, name: str = "<bytes>") -> "Trace":
        return cls(_parse_binary(data, name), name, validate=False)

    @classmethod
    def from_text(cls, text: str | bytes, name: str = "<text>") -> "Trace":
        return cls(_parse_text(text, name), name, validate=False)

    # -- files -------------------------------------------------------------
    @classmethod
    def load(cls, path: str | os.PathLike) -> "Trace":
        """Read a .hkt, .hkt.gz or .hkb file (the content decides, not the name)."""
        return read_trace(path)

    def save(self, path: str | os.PathLike, form: str | None = None) -> None:
        """Write to *path*; the encoding follows the name unless *form* is given."""
        write_trace(self, path, form)


# --------------------------------------------------------------------------
# Building traces event by event (generators and importers)

class TraceBuilder:
    """Appends events and hands out dense ids; :meth:`build` validates.

    Sizes must already fit in 32 bits (callers check and report with their
    own file and line); thread ids are truncated to 16 bits. More than
    *max_ids* allocations (at most what 32-bit ids allow) is a HeapkitError
    naming *what*.
    """

    def __init__(self, max_ids: int = NULL_ID, what: str = "trace") -> None:
        # Five u32 per event (op, tid, id, size, aux): one extend() per event
        # is the cheapest append CPython offers; build() reshapes it.
        self.flat = array("I")
        self.next_id = 0
        self.max_ids = min(max_ids, NULL_ID)
        self.what = what

    def __len__(self) -> int:
        return len(self.flat) // 5

    def _add(self, op: int, tid: int, ident: int, size: int, aux: int) -> None:
        self.flat.extend((op, tid & 0xFFFF, ident, size, aux))

    def _new(self, op: int, tid: int, size: int, aux: int) -> int:
        ident = self.next_id
        if ident >= self.max_ids:
            raise HeapkitError(f"{self.what}: more than {self.max_ids:,} allocations")
        self.next_id = ident + 1
        self._add(op, tid, ident, size, aux)
        return ident

    def malloc(self, size: int, tid: int = 0) -> int:
        return self._new(OP_MALLOC, tid, size, 0)

    def calloc(self, nmemb: int, size: int, tid: int = 0) -> int:
        return self._new(OP_CALLOC, tid, size, nmemb)

    def aligned(self, align: int, size: int, tid: int = 0) -> int:
        return self._new(OP_ALIGNED, tid, size, align)

    def realloc(self, old: int | None, size: int, tid: int = 0) -> int:
        return self._new(OP_REALLOC, tid, size, NULL_ID if old is None else old)

    def free(self, ident: int, tid: int = 0) -> None:
        self._add(OP_FREE, tid, ident, 0, 0)

    def records(self) -> np.ndarray:
        cols = np.frombuffer(self.flat, dtype=np.uint32).reshape(-1, 5)
        rec = np.zeros(len(cols), dtype=RECORD_DTYPE)
        for i, name in enumerate(("op", "tid", "id", "size", "aux")):
            rec[name] = cols[:, i]
        return rec

    def build(self, name: str = "<trace>") -> Trace:
        return Trace(self.records(), name)


# --------------------------------------------------------------------------
# Validation

def _request_bytes(rec: np.ndarray) -> np.ndarray:
    """Requested bytes of each event as uint64 (0 for frees; a calloc's can pass 2**63)."""
    op = rec["op"]
    size = rec["size"].astype(np.uint64)
    out = np.where(op == OP_FREE, np.uint64(0), size)
    calloc = op == OP_CALLOC
    out[calloc] = size[calloc] * rec["aux"][calloc].astype(np.uint64)
    return out


def _exact_sum(x: np.ndarray) -> int:
    """The sum of uint64 values as a Python int: their 32-bit halves are summed apart."""
    return (int((x >> np.uint64(32)).sum(dtype=np.uint64)) << 32) + \
        int((x & np.uint64(0xFFFFFFFF)).sum(dtype=np.uint64))


def _wide_running_sum(plus: np.ndarray, minus: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Running sum of plus - minus (uint64 each) without overflow, as (high, low) int64 halves
    of the value: value = high * 2**32 + low with 0 <= low < 2**32, compared lexicographically."""
    mask = np.uint64(0xFFFFFFFF)
    hi = np.cumsum((plus >> np.uint64(32)).astype(np.int64) - (minus >> np.uint64(32)).astype(np.int64))
    lo = np.cumsum((plus & mask).astype(np.int64) - (minus & mask).astype(np.int64))
    return hi + (lo >> 32), lo & 0xFFFFFFFF


def _wide_max(hi: np.ndarray, lo: np.ndarray) -> int:
    top = hi.max()
    return (int(top) << 32) + int(lo[hi == top].max())


def _kills(rec: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(positions, ids) of the events that end an id: frees and non-NULL reallocs."""
    op = rec["op"]
    is_free = op == OP_FREE
    is_rmove = (op == OP_REALLOC) & (rec["aux"] != NULL_ID)
    pos = np.flatnonzero(is_free | is_rmove)
    killed = np.where(is_free[pos], rec["id"][pos], rec["aux"][pos]).astype(np.int64)
    return pos, killed


def _freed_bytes(rec: np.ndarray, req: np.ndarray, is_alloc: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(positions of the kills, requested bytes each event frees): ids are allocated once."""
    by_id = np.zeros(int(np.count_nonzero(is_alloc)), dtype=np.uint64)
    by_id[rec["id"][is_alloc]] = req[is_alloc]
    kpos, killed = _kills(rec)
    freed = np.zeros(len(rec), dtype=np.uint64)
    freed[kpos] = by_id[killed]        # one kill per event: no repeated positions
    return kpos, freed


def _not_live(op: int, ident: int) -> str:
    return f"{'free' if op == OP_FREE else 'realloc'} of id {ident} which is not live"


def first_error(rec: np.ndarray, *, binary: bool = False) -> tuple[int, str] | None:
    """The first (position, reason) at which *rec* breaks the trace rules, or None.

    *binary* adds the checks only a binary file can fail (reserved bytes,
    fields that must be 0 for the op).
    """
    n = len(rec)
    if n == 0:
        return None
    errors: list[tuple[int, str]] = []
    op = rec["op"]

    def first(mask: np.ndarray) -> int | None:
        idx = np.flatnonzero(mask)
        return int(idx[0]) if len(idx) else None

    bad = first(~np.isin(op, ALL_OPS))
    if bad is not None:
        errors.append((bad, f"unknown op byte 0x{int(op[bad]):02x}"))
    if binary:
        bad = first(rec["reserved"] != 0)
        if bad is not None:
            errors.append((bad, "reserved byte is not 0"))
        bad = first((op == OP_FREE) & ((rec["size"] != 0) | (rec["aux"] != 0)))
        if bad is not None:
            errors.append((bad, "free record with non-zero size or aux"))
        bad = first((op == OP_MALLOC) & (rec["aux"] != 0))
        if bad is not None:
            errors.append((bad, "malloc record with non-zero aux"))

    # Dense ids in order.
    is_alloc = np.isin(op, ALLOC_OPS)
    alloc_pos = np.flatnonzero(is_alloc)
    ids = rec["id"][alloc_pos].astype(np.int64)
    wrong = np.flatnonzero(ids != np.arange(len(ids), dtype=np.int64))
    dense_upto = n
    if len(wrong):
        k = int(wrong[0])
        dense_upto = int(alloc_pos[k])
        errors.append((dense_upto,
                       f"id {int(ids[k])} out of order: expected {k} "
                       "(ids must be dense and in order)"))

    # realloc(p, 0) frees p: the format writes it as a free.
    bad = first((op == OP_REALLOC) & (rec["aux"] != NULL_ID) & (rec["size"] == 0))
    if bad is not None:
        errors.append((bad, "realloc to size 0: write it as a free of the old id"))

    # Alignments.
    al = rec["aux"].astype(np.int64)
    bad = first((op == OP_ALIGNED) & ((al == 0) | ((al & (al - 1)) != 0)))
    if bad is not None:
        errors.append((bad, f"alignment {int(al[bad])} is not a power of two"))

    # Frees and reallocs name live ids: created earlier and not ended yet.
    # Only the prefix with dense ids can be judged (ids index alloc_pos).
    kpos, killed = _kills(rec[:dense_upto])
    if len(kpos):
        n_alloc = int(np.count_nonzero(is_alloc[:dense_upto]))
        created = np.full(len(killed), n, dtype=np.int64)
        known = killed < n_alloc
        created[known] = alloc_pos[killed[known]]
        k = first(created >= kpos)
        if k is not None:
            errors.append((int(kpos[k]), _not_live(int(op[kpos[k]]), int(killed[k]))))
        order = np.lexsort((kpos, killed))
        ks, ps = killed[order], kpos[order]
        again = np.flatnonzero(ks[1:] == ks[:-1]) + 1
        if len(again):
            j = again[np.argmin(ps[again])]
            errors.append((int(ps[j]), _not_live(int(op[ps[j]]), int(ks[j]))))
    if not errors:
        return None
    return min(errors, key=lambda e: e[0])


def validate_records(rec: np.ndarray, source: str, *, lines: np.ndarray | None = None,
                     binary: bool = False) -> None:
    """Raise TraceError at the first broken rule (file:line for text, record for binary)."""
    err = first_error(rec, binary=binary)
    if err is None:
        return
    pos, reason = err
    if lines is not None:
        raise TraceError(source, reason, line=int(lines[pos]))
    raise TraceError(source, reason, record=pos)


def trace_stats(rec: np.ndarray) -> TraceStats:
    """Byte figures are exact Python ints: a calloc can ask for almost 2**64 bytes."""
    op = rec["op"]
    n = len(rec)
    by_op = {OP_NAMES[o]: int(np.count_nonzero(op == o)) for o in ALL_OPS}
    realloc_null = int(np.count_nonzero((op == OP_REALLOC) & (rec["aux"] == NULL_ID)))
    req = _request_bytes(rec)
    is_alloc = np.isin(op, ALLOC_OPS)
    n_ids = int(np.count_nonzero(is_alloc))
    kpos, freed = _freed_bytes(rec, req, is_alloc)
    dblocks = is_alloc.astype(np.int64)
    dblocks[kpos] -= 1
    live_hi, live_lo = _wide_running_sum(req, freed)
    live_blocks = np.cumsum(dblocks)
    tids = np.unique(rec["tid"]).tolist() if n else []
    return TraceStats(
        events=n,
        by_op=by_op,
        realloc_null=realloc_null,
        ids=n_ids,
        live_at_end=int(live_blocks[-1]) if n else 0,
        live_bytes_at_end=(int(live_hi[-1]) << 32) + int(live_lo[-1]) if n else 0,
        peak_live_bytes=_wide_max(live_hi, live_lo) if n else 0,
        peak_live_blocks=int(max(live_blocks.max(), 0)) if n else 0,
        max_size=int(req.max()) if n else 0,
        total_requested=_exact_sum(req),
        threads=len(tids),
        tids=tids,
    )


def live_bytes(rec: np.ndarray) -> np.ndarray:
    """Live requested bytes after each event, as float64 (exact up to 2**53 bytes)."""
    req = _request_bytes(rec)
    _, freed = _freed_bytes(rec, req, np.isin(rec["op"], ALLOC_OPS))
    hi, lo = _wide_running_sum(req, freed)
    return hi.astype(np.float64) * 2.0 ** 32 + lo.astype(np.float64)


def live_counts(rec: np.ndarray) -> np.ndarray:
    """Number of live blocks after each event."""
    is_alloc = np.isin(rec["op"], ALLOC_OPS).astype(np.int64)
    kpos, _ = _kills(rec)
    is_alloc[kpos] -= 1
    return np.cumsum(is_alloc)


# --------------------------------------------------------------------------
# Binary form

def _parse_binary(data: bytes | bytearray, source: str) -> np.ndarray:
    if not data:
        raise TraceError(source, "empty file")
    if len(data) < BIN_HEADER_SIZE:
        raise TraceError(source, f"truncated: {len(data)} bytes, shorter than the "
                                 f"{BIN_HEADER_SIZE}-byte header")
    magic, version, flags, count, n_ids, reserved = _BIN_HEADER.unpack_from(data)
    if magic != BIN_MAGIC:
        raise TraceError(source, "not a heapkit binary trace (bad magic)")
    if version != BIN_VERSION:
        raise TraceError(source, f"unsupported binary trace version {version}")
    if flags != 0 or reserved != 0:
        raise TraceError(source, "header flags/reserved fields are not 0")
    whole, part = divmod(len(data) - BIN_HEADER_SIZE, RECORD_DTYPE.itemsize)
    if count > whole:
        raise TraceError(source, f"truncated: the header says {count} records but the file "
                                 f"holds {whole}" + (" and part of another" if part else ""))
    if count < whole or part:
        raise TraceError(source, f"{len(data) - BIN_HEADER_SIZE - count * RECORD_DTYPE.itemsize} "
                                 f"bytes after the header's {count} records")
    rec = np.frombuffer(data, dtype=RECORD_DTYPE, count=count, offset=BIN_HEADER_SIZE)
    if not rec.flags.writeable:
        rec = rec.copy()
    validate_records(rec, source, binary=True)
    actual = int(np.count_nonzero(np.isin(rec["op"], ALLOC_OPS)))
    if actual != n_ids:
        raise TraceError(source, f"header says {n_ids} ids but the records create {actual}")
    return rec


# --------------------------------------------------------------------------
# Text form

_OPCODE = {"m": OP_MALLOC, "c": OP_CALLOC, "a": OP_ALIGNED, "r": OP_REALLOC, "f": OP_FREE}
_FIELDS = {"m": 3, "c": 4, "a": 4, "r": 4, "f": 2}
_USAGE = {"m": "m ID SIZE", "c": "c ID NMEMB SIZE", "a": "a ID ALIGN SIZE",
          "r": "r ID OLD SIZE", "f": "f ID"}
# Characters int() accepts that the format does not: signs and digit separators.
_BAD_NUMBER = re.compile(r"^[^#\n]*(?:[+_]|-\d)", re.M)
_NON_ASCII = re.compile(r"^[^#\n]*[^\x00-\x7f]", re.M)


def _line_of_offset(text: str, offset: int) -> int:
    return text.count("\n", 0, offset) + 1


_NO_TOKEN = -2          # column value for a field the op does not have
_NULL_OLD = -1          # realloc(NULL) while parsing


def _fast_columns(body: bytes, first_line: int) -> tuple[np.ndarray, np.ndarray] | None:
    """Vectorised parse of whole lines of canonical .hkt events into (cols, line numbers),
    *first_line* being the number of the first.

    cols has one row per event: op, tid, id, size, aux (int64; aux -1 for
    realloc(NULL)).  Returns None as soon as anything is not canonical
    (extra spaces, CR, odd characters, a malformed line...): the line-by-line
    parser then either accepts it or reports the exact line.
    """
    if not body:
        return np.zeros((0, 5), np.int64), np.zeros(0, np.int64)
    buf = np.frombuffer(body, dtype=np.uint8)
    nl = np.flatnonzero(buf == 10)
    starts = np.concatenate(([0], nl[:-1] + 1))
    lens = nl - starts
    first = buf[starts]                      # '\n' for an empty line
    event = (lens > 0) & (first != ord("#"))
    line_no = np.flatnonzero(event) + first_line
    if not event.all():
        buf = buf[np.repeat(event, lens + 1)]
    if len(line_no) == 0:
        return np.zeros((0, 5), np.int64), line_no

    sep_pos = np.flatnonzero((buf == 32) | (buf == 10))
    tok_start = np.concatenate(([0], sep_pos[:-1] + 1))
    tok_len = sep_pos - tok_start
    if not tok_len.all():
        return None                          # leading, trailing or double space
    is_nl = buf[sep_pos] == 10
    first_tok = np.flatnonzero(np.concatenate(([True], is_nl[:-1])))
    ntok = np.diff(np.append(first_tok, len(sep_pos)))
    last_tok = first_tok + ntok - 1
    if (tok_len[first_tok] != 1).any():
        return None
    op = buf[tok_start[first_tok]].astype(np.int64)
    has_tid = (ntok > 1) & (buf[tok_start[last_tok]] == ord("t"))
    want = np.full(256, -1, np.int64)
    want[[OP_MALLOC, OP_FREE, OP_CALLOC, OP_ALIGNED, OP_REALLOC]] = [2, 1, 3, 3, 3]
    if (ntok - 1 - has_tid != want[op]).any():
        return None

    start = tok_start.copy()
    length = tok_len.copy()
    tid_tok = last_tok[has_tid]
    start[tid_tok] += 1
    length[tid_tok] -= 1
    numeric = np.ones(len(start), dtype=bool)
    numeric[first_tok] = False
    old_tok = first_tok[op == OP_REALLOC] + 2
    dash = old_tok[(length[old_tok] == 1) & (buf[start[old_tok]] == ord("-"))]
    numeric[dash] = False
    idx = np.flatnonzero(numeric)
    st, ln = start[idx], length[idx]
    if len(idx) and (ln.min() < 1 or ln.max() > 18):   # 18 digits cannot overflow int64
        return None
    v = np.zeros(len(idx), np.int64)
    for k in range(int(ln.max()) if len(idx) else 0):
        m = ln > k
        d = buf[st[m] + k].astype(np.int64) - 48
        if ((d < 0) | (d > 9)).any():
            return None
        v[m] = v[m] * 10 + d
    val = np.full(len(start), _NO_TOKEN, np.int64)
    val[idx] = v
    val[dash] = _NULL_OLD

    n = len(first_tok)
    top = len(val) - 1
    f1 = val[first_tok + 1]
    f2 = val[np.minimum(first_tok + 2, top)]
    f3 = val[np.minimum(first_tok + 3, top)]
    three = want[op] == 3
    cols = np.zeros((n, 5), np.int64)
    cols[:, 0] = op
    cols[:, 1] = np.where(has_tid, val[last_tok], 0)
    cols[:, 2] = f1
    cols[:, 3] = np.where(three, f3, np.where(op == OP_MALLOC, f2, 0))
    cols[:, 4] = np.where(three, f2, 0)
    return cols, line_no


def _slow_columns(text: str, source: str, first_line: int) -> tuple[np.ndarray, np.ndarray]:
    """Line-by-line parse of whole lines of events, the first numbered *first_line*;
    lenient about whitespace, exact about errors."""
    if "+" in text or "_" in text or "-" in text:
        m = _BAD_NUMBER.search(text)
        if m:
            raise TraceError(source, "malformed line: numbers are plain decimal",
                             line=first_line - 1 + _line_of_offset(text, m.start()))
    if not text.isascii():
        m = _NON_ASCII.search(text)
        if m:
            raise TraceError(source, "malformed line: non-ASCII character",
                             line=first_line - 1 + _line_of_offset(text, m.start()))
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()

    recs: list[tuple[int, int, int, int, int, int]] = []
    ap = recs.append
    M, C, A, R, F = OP_MALLOC, OP_CALLOC, OP_ALIGNED, OP_REALLOC, OP_FREE
    NULL = _NULL_OLD
    ln = first_line
    try:
        for ln, line in enumerate(lines, first_line):
            parts = line.split()
            if not parts or parts[0][0] == "#":
                continue
            tid = 0
            last = parts[-1]
            if last[0] == "t":
                tid = int(last[1:])
                parts.pop()
            n = len(parts)
            o = parts[0]
            if o == "m" and n == 3:
                ap((M, tid, int(parts[1]), int(parts[2]), 0, ln))
            elif o == "f" and n == 2:
                ap((F, tid, int(parts[1]), 0, 0, ln))
            elif o == "r" and n == 4:
                old = parts[2]
                ap((R, tid, int(parts[1]), int(parts[3]), NULL if old == "-" else int(old), ln))
            elif o == "c" and n == 4:
                ap((C, tid, int(parts[1]), int(parts[3]), int(parts[2]), ln))
            elif o == "a" and n == 4:
                ap((A, tid, int(parts[1]), int(parts[3]), int(parts[2]), ln))
            elif o in _FIELDS:
                raise TraceError(source, f"malformed line: expected '{_USAGE[o]} [tTID]'", line=ln)
            else:
                raise TraceError(source, f"malformed line: unknown event {o!r}", line=ln)
    except ValueError:
        raise TraceError(source, "malformed line: expected decimal numbers", line=ln) from None
    if not recs:
        return np.zeros((0, 5), np.int64), np.zeros(0, np.int64)
    try:
        cols = np.array(recs, dtype=np.int64)
    except OverflowError:
        ln = next(rec[5] for rec in recs if any(abs(v) >= 1 << 63 for v in rec[:5]))
        raise TraceError(source, "malformed line: number too large", line=ln) from None
    return cols[:, :5], cols[:, 5]


# Text is parsed this many bytes of whole lines at a time; no line may be longer than MAX_LINE.
TEXT_CHUNK = 4 << 20
MAX_LINE = 4096


def _parse_chunk(data: bytes, source: str, first_line: int) -> tuple[np.ndarray, np.ndarray]:
    """Records and their line numbers from whole lines of events, range-checked (the
    rules that need the whole trace are checked later, by validate_records)."""
    fast = _fast_columns(data, first_line)
    if fast is None:
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as e:
            raise TraceError(source, "not UTF-8 text",
                             line=first_line + data.count(b"\n", 0, e.start)) from None
        fast = _slow_columns(text, source, first_line)
    cols, line_no = fast
    if len(cols) == 0:
        return np.zeros(0, dtype=RECORD_DTYPE), line_no
    op = cols[:, 0]
    # Range checks, earliest first.
    problems: list[tuple[int, str]] = []
    for col, what in ((2, "id"), (3, "size")):
        bad = np.flatnonzero((cols[:, col] > U32_MAX) | (cols[:, col] < 0))
        if len(bad):
            value = int(cols[bad[0], col])
            problems.append((int(bad[0]), f"{what} {value} does not fit in 32 bits"))
    aux = cols[:, 4]
    bad = np.flatnonzero((aux > U32_MAX) | ((op == OP_REALLOC) & (aux == U32_MAX))
                         | ((aux < 0) & ((op != OP_REALLOC) | (aux != _NULL_OLD))))
    if len(bad):
        i = int(bad[0])
        what = {OP_CALLOC: "nmemb", OP_ALIGNED: "alignment", OP_REALLOC: "old id"}.get(
            int(op[i]), "value")
        problems.append((i, f"{what} {int(aux[i])} does not fit in 32 bits"))
    if problems:
        i, reason = min(problems)
        raise TraceError(source, reason, line=int(line_no[i]))
    rec = np.zeros(len(cols), dtype=RECORD_DTYPE)
    rec["op"] = op
    rec["tid"] = cols[:, 1] & 0xFFFF
    rec["id"] = cols[:, 2]
    rec["size"] = cols[:, 3]
    rec["aux"] = np.where((op == OP_REALLOC) & (aux == _NULL_OLD), NULL_ID, aux)
    return rec, line_no


def _check_header(line: bytes, source: str) -> None:
    if line.rstrip(b"\r") == TEXT_HEADER.encode():
        return
    if line.startswith(b"heapkit-trace "):
        version = line[14:].decode("utf-8", "replace").strip()
        raise TraceError(source, f"unsupported trace version {version!r}", line=1)
    raise TraceError(source, f"expected the header line {TEXT_HEADER!r}", line=1)


def _parse_text_stream(f: IO[bytes], source: str) -> np.ndarray:
    """Parse and validate .hkt text read from *f*, TEXT_CHUNK bytes at a time."""
    parts: list[np.ndarray] = []
    lines: list[np.ndarray] = []
    carry = b""
    line = 1                     # number of the first line in carry
    header = True
    while True:
        block = f.read(TEXT_CHUNK)
        data = carry + block if carry else block
        if not block:
            if not data and header:
                raise TraceError(source, "empty file")
            if data:
                raise TraceError(source, "truncated: the last line has no line end", line=line)
            break
        cut = data.rfind(b"\n") + 1
        if len(data) - cut > MAX_LINE:
            raise TraceError(source, f"malformed line: longer than {MAX_LINE} bytes",
                             line=line + data.count(b"\n", 0, cut))
        chunk, carry = data[:cut], data[cut:]
        if not chunk:
            continue
        if header:
            end = chunk.index(b"\n")
            _check_header(chunk[:end], source)
            chunk, line, header = chunk[end + 1:], 2, False
        rec, ln = _parse_chunk(chunk, source, line)
        parts.append(rec)
        lines.append(ln)
        line += chunk.count(b"\n")
    rec = np.concatenate(parts) if parts else np.zeros(0, dtype=RECORD_DTYPE)
    validate_records(rec, source, lines=np.concatenate(lines) if lines else None)
    return rec


def _parse_text(data: bytes | str, source: str) -> np.ndarray:
    if isinstance(data, str):
        data = data.encode("utf-8")
    return _parse_text_stream(io.BytesIO(data), source)


def write_text(rec: np.ndarray, out: IO[str]) -> None:
    """Write records as .hkt text to a text stream."""
    out.write(TEXT_HEADER + "\n")
    lines: list[str] = []
    put = lines.append
    for o, t, i, s, a in zip(rec["op"].tolist(), rec["tid"].tolist(), rec["id"].tolist(),
                             rec["size"].tolist(), rec["aux"].tolist()):
        if o == OP_MALLOC:
            line = f"m {i} {s}"
        elif o == OP_FREE:
            line = f"f {i}"
        elif o == OP_REALLOC:
            line = f"r {i} {'-' if a == NULL_ID else a} {s}"
        elif o == OP_CALLOC:
            line = f"c {i} {a} {s}"
        else:
            line = f"a {i} {a} {s}"
        put(f"{line} t{t}\n" if t else line + "\n")
        if len(lines) >= 65536:
            out.write("".join(lines))
            lines.clear()
    out.write("".join(lines))


# --------------------------------------------------------------------------
# Files

def open_source(path: str | os.PathLike) -> IO[bytes]:
    """*path* opened for reading bytes, or a HeapkitError naming it."""
    try:
        return open(path, "rb")
    except FileNotFoundError:
        raise HeapkitError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise HeapkitError(f"{path}: is a directory") from None
    except OSError as e:
        raise HeapkitError(f"{path}: {e.strerror or e}") from None


@contextlib.contextmanager
def gzip_errors(source: str) -> Iterator[None]:
    """Reading a gzip stream of *source*: its errors as TraceErrors naming it."""
    try:
        yield
    except EOFError:
        raise TraceError(source, "truncated: the gzip data ends early") from None
    except (gzip.BadGzipFile, zlib.error) as e:
        raise TraceError(source, f"corrupt gzip data ({e})") from None


def read_trace(path: str | os.PathLike) -> Trace:
    """Read a heapkit trace in any of its encodings, decided by content."""
    source = str(path)
    with open_source(path) as f:
        head = f.read(1024)
        form = sniff_form(head)
        if form == FORM_BINARY:
            data = bytearray(head)
            data += f.read()
            return Trace(_parse_binary(data, source), source, validate=False)
        if form is None:
            if not head:
                raise TraceError(source, "empty file")
            raise TraceError(source, "not a heapkit trace (expected 'heapkit-trace 1' "
                                     "or the HKTRACE binary header)")
        f.seek(0)
        if form == FORM_GZ:
            with gzip_errors(source), gzip.GzipFile(fileobj=f) as z:
                return Trace(_parse_text_stream(z, source), source, validate=False)
        return Trace(_parse_text_stream(f, source), source, validate=False)


def write_trace(trace: Trace, path: str | os.PathLike, form: str | None = None) -> None:
    """Write *trace*; the encoding follows the file name (.hkt, .hkt.gz, .hkb)."""
    form = form or form_of_path(path)
    if form is None:
        raise HeapkitError(f"{path}: output name must end in .hkt, .hkt.gz or .hkb")
    try:
        if form == FORM_BINARY:
            Path(path).write_bytes(trace.to_bytes())
        elif form == FORM_TEXT:
            with open(path, "w", encoding="utf-8", newline="\n") as f:
                write_text(trace.records, f)
        else:
            # mtime=0 and no file name keep the bytes a function of the trace.
            Path(path).write_bytes(gzip.compress(trace.to_text().encode("utf-8"),
                                                 compresslevel=3, mtime=0))
    except OSError as e:
        raise HeapkitError(f"{path}: cannot write: {e.strerror or e}") from None
