# SPDX-License-Identifier: MIT
"""Convert allocation logs from other tools into heapkit traces.

Supported inputs (any of them may also be gzip-compressed):

``wee``
    wee_alloc test traces: one ``Alloc(<size>),`` or ``Free(<index>),`` per
    line.  ``Free(i)`` frees the allocation of the i-th ``Alloc`` line
    (0-based, counting Alloc lines only), so heapkit id i is that Alloc.
    The wee_alloc harness treats a Free of an index not allocated yet, or
    already freed, as a no-op; such Frees are dropped and counted.

``memory_replay``
    Android ``memory_replay`` dumps (text, or a .zip holding exactly one
    member): ``TID: malloc PTR SIZE``, ``calloc PTR NMEMB SIZE``,
    ``memalign PTR ALIGN SIZE``, ``realloc NEW OLD SIZE``, ``free PTR``,
    ``thread_done 0x0``, each optionally followed by two timestamps (ignored).
    ``realloc`` with OLD 0x0 is ``realloc(NULL, SIZE)``; ``free 0x0`` is a
    no-op (dropped, counted); thread_done lines are counted and ignored.
    Clean dumps are converted with numpy (AOSP surfaceflinger, 2.45M lines:
    about 2 s); others go through a line loop (about 5 s for the same).

``mtrace``
    glibc ``mtrace()`` output: ``= Start``, ``@ CALLER + 0xPTR 0xSIZE``,
    ``@ CALLER - 0xPTR``, a realloc as ``< 0xOLD`` followed by
    ``> 0xNEW 0xSIZE``, ``! 0xPTR 0xSIZE`` (failed realloc), ``= End``.
    CALLER is ``file:(sym+off)[0xADDR]`` or ``[0xADDR]``; a line may also
    lack the ``@ CALLER`` part.  No thread ids: every event gets tid 0.

``valgrind``
    ``valgrind --trace-malloc=yes`` output (other lines are ignored):
    ``--PID-- malloc(N) = 0xP``, ``calloc(N,S) = 0xP``,
    ``realloc(0xOLD,N) = 0xP`` and the older ``realloc(0x0,N)malloc(N) = 0xP``
    and ``realloc(0xP,0)free(0xP)`` forms, ``memalign(al A, size N) = 0xP``,
    ``aligned_alloc(al A, size N)``, ``posix_memalign(al A, size N)``,
    C++ ``operator new``/``delete`` (``_Znwm(N) = 0xP``, ``_ZdlPv(0xP)``,
    ``_ZnwmSt11align_val_t(size N, al A) = 0xP``), ``free(0xP)``.
    valgrind prints no result for posix_memalign (and for memalign and
    aligned_alloc off glibc): such a block gets an id at once, and the next
    free or realloc of a pointer the importer has never seen is taken to be
    the most recent such block (counted as ``bound unseen pointer``).
    With ``--trace-children=yes`` each process id gets its own pointer map,
    and the thread id of an event is the ordinal of its process (0 for the
    first pid seen, 1 for the next, ...): valgrind prints no thread ids.

``firmware``
    what the on-target recorder (ports/trace/) writes: the stream a sink
    received or a debugger's dump of its buffer (heapkit.fwtrace). The
    callers, stamps, task names and checkpoints come along as the trace's
    side table (heapkit.annotations), which ``heapkit import`` writes next
    to the output.

Rules shared by the pointer-based formats (all but wee):

* an allocation that returned NULL, and a failed realloc (NULL result for
  a non-zero size: the old block stays live), are dropped and counted;
* ``realloc(p, 0)`` that freed p becomes ``f p``; one that returned a new
  pointer becomes ``f p`` then ``m NEW 0`` (heapkit's realloc(p, 0) frees);
* a free of a pointer that is not live is dropped and counted;
* an allocation returning an address that is still live (a free was
  missed by the recorder) first frees the old block, counted;
* a realloc of a non-NULL pointer that is not live is imported as
  ``realloc(NULL, size)``, counted;
* an alignment that is not a power of two is rounded up to one, counted
  (glibc and valgrind do the same); sizes must fit in 32 bits, else the
  import stops with a TraceError naming the line.

Every importer returns an :class:`ImportResult`: the trace plus counters of
the source events (``events``), of the events left out (``dropped``), of
the events changed to fit the model (``adjusted``) and of the lines that are
not allocation events (``ignored``).
"""

from __future__ import annotations

import contextlib
import gzip
import os
import re
import zipfile
from collections import Counter
from dataclasses import dataclass, field
from typing import IO, Callable, Iterator

import numpy as np

from .annotations import Annotations
from .errors import HeapkitError, TraceError
from .fwtrace import is_firmware, read_firmware
from .trace import (GZIP_MAGIC, NULL_ID, OP_ALIGNED, OP_CALLOC, OP_FREE, OP_MALLOC, OP_REALLOC,
                    RECORD_DTYPE, U32_MAX, Trace, TraceBuilder, gzip_errors, open_source,
                    read_trace, sniff_form)

FORMATS = ("wee", "memory_replay", "mtrace", "valgrind", "firmware")
# The text formats, read line by line: one in which no line is an allocation event is not that format.
LINE_FORMATS = FORMATS[:4]
ZIP_MAGIC = b"PK\x03\x04"


@dataclass
class ImportResult:
    trace: Trace
    format: str
    source: str
    events: Counter = field(default_factory=Counter)
    dropped: Counter = field(default_factory=Counter)
    adjusted: Counter = field(default_factory=Counter)
    ignored: Counter = field(default_factory=Counter)
    annotations: Annotations | None = None

    def summary_lines(self) -> list[str]:
        def fmt(c: Counter) -> str:
            return ", ".join(f"{k} {v}" for k, v in sorted(c.items())) or "none"
        return [
            f"format    {self.format}",
            f"source    {fmt(self.events)}",
            f"events    {len(self.trace)} ({self.trace.n_ids} ids)",
            f"dropped   {fmt(self.dropped)}",
            f"adjusted  {fmt(self.adjusted)}",
            f"ignored   {fmt(self.ignored)}",
        ]

    def as_dict(self) -> dict:
        return {"format": self.format, "source": self.source, "records": len(self.trace),
                "ids": self.trace.n_ids, "events": dict(self.events),
                "dropped": dict(self.dropped), "adjusted": dict(self.adjusted),
                "ignored": dict(self.ignored)}


# --------------------------------------------------------------------------
# Reading sources: streams, so memory does not follow the file's size

# Lines are read this many bytes at a time; none may be longer than MAX_LINE.
CHUNK = 4 << 20
MAX_LINE = 1 << 16


@contextlib.contextmanager
def _source(path: str | os.PathLike) -> Iterator[IO[bytes]]:
    """The file's bytes as a stream, gzip removed and a single-member zip unpacked."""
    source = str(path)
    with open_source(path) as f:
        stream: IO[bytes] = f
        with contextlib.ExitStack() as stack:
            if f.read(2) == GZIP_MAGIC:
                f.seek(0)
                stack.enter_context(gzip_errors(source))
                stream = stack.enter_context(gzip.GzipFile(fileobj=f))
            else:
                f.seek(0)
            if stream.peek(4)[:4] == ZIP_MAGIC:
                stream = stack.enter_context(_zip_member(stream, source))
            yield stream


@contextlib.contextmanager
def _zip_member(f: IO[bytes], source: str) -> Iterator[IO[bytes]]:
    try:
        with zipfile.ZipFile(f) as z:
            names = [i for i in z.infolist() if not i.is_dir()]
            if len(names) != 1:
                raise TraceError(source, f"zip must hold exactly one file, not {len(names)}")
            with z.open(names[0]) as member:
                yield member
    except zipfile.BadZipFile as e:
        raise TraceError(source, f"truncated or corrupt zip file ({e})") from None


def _stream_lines(stream: IO[bytes], source: str, head: bytes = b"") -> Iterator[str]:
    """The lines (without their line ends) of *head* then *stream*, decoded as UTF-8
    with errors replaced."""
    carry = head
    done = 0
    while True:
        block = stream.read(CHUNK)
        data = carry + block if carry else block
        if not block:
            lines = data.decode("utf-8", errors="replace").split("\n")
            if lines[-1] == "":
                lines.pop()
            yield from lines
            return
        cut = data.rfind(b"\n") + 1
        if len(data) - cut > MAX_LINE:
            raise TraceError(source, f"malformed line: longer than {MAX_LINE} bytes",
                             line=done + data.count(b"\n", 0, cut) + 1)
        lines = data[:cut].decode("utf-8", errors="replace").split("\n")
        lines.pop()
        done += len(lines)
        yield from lines
        carry = data[cut:]


def _lines(path: str | os.PathLike) -> Iterator[str]:
    with _source(path) as stream:
        yield from _stream_lines(stream, str(path))


# --------------------------------------------------------------------------
# Pointer bookkeeping shared by memory_replay, mtrace and valgrind

def _pow2_at_least(n: int) -> int:
    return 1 if n <= 1 else 1 << (n - 1).bit_length()


class _Recorder:
    """Maps recorded pointers to ids while building a trace."""

    def __init__(self, source: str):
        self.source = source
        self.b = TraceBuilder()
        self.live: dict = {}
        self.events: Counter = Counter()
        self.dropped: Counter = Counter()
        self.adjusted: Counter = Counter()
        self.ignored: Counter = Counter()

    def check32(self, value: int, what: str, line: int) -> int:
        if value < 0 or value > U32_MAX:
            raise TraceError(self.source, f"{what} {value} does not fit in 32 bits", line=line)
        return value

    def _claim(self, key, tid: int) -> None:
        old = self.live.pop(key, None)
        if old is not None:
            self.b.free(old, tid)
            self.adjusted["free inserted (address returned again while live)"] += 1

    def alloc(self, key, op: str, size: int, aux: int, tid: int, line: int) -> int | None:
        """Record an allocation; *key* None means the call returned NULL."""
        if key is None:
            self.dropped["failed allocation (NULL result)"] += 1
            return None
        self.check32(size, "size", line)
        if op == "c":
            self.check32(aux, "nmemb", line)
        elif op == "a":
            self.check32(aux, "alignment", line)
            if aux & (aux - 1) or aux == 0:
                aux = _pow2_at_least(aux)
                self.adjusted["alignment rounded up to a power of two"] += 1
        self._claim(key, tid)
        if op == "m":
            ident = self.b.malloc(size, tid)
        elif op == "c":
            ident = self.b.calloc(aux, size, tid)
        else:
            ident = self.b.aligned(aux, size, tid)
        self.live[key] = ident
        return ident

    def free(self, key, tid: int) -> None:
        """Record free(key); key None is free(NULL)."""
        if key is None:
            self.dropped["free(NULL)"] += 1
            return
        ident = self.live.pop(key, None)
        if ident is None:
            ident = self.unseen(key)
            if ident is None:
                self.dropped["free of a pointer that is not live"] += 1
                return
        self.b.free(ident, tid)

    def unseen(self, key) -> int | None:
        """Id for a pointer never seen allocated (valgrind binds pending blocks)."""
        return None

    def realloc(self, new, old, size: int, tid: int, line: int) -> None:
        """Record realloc(old, size) -> new; None stands for NULL."""
        if old is None:
            if new is None:
                self.dropped["failed allocation (NULL result)"] += 1
                return
            self.check32(size, "size", line)
            self._claim(new, tid)
            self.live[new] = self.b.realloc(None, size, tid)
            return
        if new is None:
            if size == 0:
                self.adjusted["realloc(p, 0) written as free"] += 1
                self.free(old, tid)
            else:
                self.dropped["failed realloc (NULL result, old block kept)"] += 1
            return
        self.check32(size, "size", line)
        ident = self.live.pop(old, None)
        if ident is None:
            ident = self.unseen(old)
        if size == 0:
            # heapkit's realloc(p, 0) frees; this one handed out a new block.
            self.adjusted["realloc(p, 0) returning a block written as free + malloc(0)"] += 1
            if ident is None:
                self.dropped["free of a pointer that is not live"] += 1
            else:
                self.b.free(ident, tid)
            self._claim(new, tid)
            self.live[new] = self.b.malloc(0, tid)
            return
        if ident is None:
            self.adjusted["realloc of a pointer that is not live imported as realloc(NULL)"] += 1
        self._claim(new, tid)
        self.live[new] = self.b.realloc(ident, size, tid)

    def result(self, fmt: str) -> ImportResult:
        return ImportResult(self.b.build(self.source), fmt, self.source, self.events,
                            self.dropped, self.adjusted, self.ignored)


# --------------------------------------------------------------------------
# wee_alloc

_WEE = re.compile(r"(Alloc|Free)\((\d+)\),?", re.ASCII)


def import_wee(path: str | os.PathLike) -> ImportResult:
    source = str(path)
    rec = _Recorder(source)
    b = rec.b
    freed = bytearray()          # per Alloc index: 1 once freed
    n_alloc = 0
    for ln, line in enumerate(_lines(path), 1):
        line = line.strip()
        if not line:
            rec.ignored["blank line"] += 1
            continue
        m = _WEE.fullmatch(line)
        if not m:
            raise TraceError(source, "malformed line: expected 'Alloc(<size>),' or "
                                     "'Free(<index>),'", line=ln)
        n = int(m.group(2))
        if m.group(1) == "Alloc":
            rec.events["Alloc"] += 1
            b.malloc(rec.check32(n, "size", ln))
            freed.append(0)
            n_alloc += 1
        else:
            rec.events["Free"] += 1
            if n >= n_alloc:
                rec.dropped["Free of an index not allocated yet"] += 1
            elif freed[n]:
                rec.dropped["Free of an index already freed"] += 1
            else:
                freed[n] = 1
                b.free(n)
    return rec.result("wee")


# --------------------------------------------------------------------------
# Android memory_replay

_MR_ARGS = {"malloc": 2, "calloc": 3, "memalign": 3, "realloc": 3, "free": 1}
# The vectorised import holds the whole dump and about 16 times its size in arrays
# (the AOSP surfaceflinger dump, 58 MB: 1 GB); larger dumps are read line by line.
MR_VECTORISED_MAX = 64 << 20


def import_memory_replay(path: str | os.PathLike, *, vectorised: bool = True) -> ImportResult:
    """Import an Android memory_replay dump (text, gzip or single-member zip).

    A clean dump (canonical spacing, no NULL results, every free naming a
    live pointer, ...) of at most :data:`MR_VECTORISED_MAX` bytes is
    converted by :func:`_memory_replay_numpy` without a per-line Python
    loop; anything else, and ``vectorised=False``, goes
    through the line-by-line importer, which applies every rule in the
    module docstring and names the line of any error.  Both give the same
    result on clean input.
    """
    source = str(path)
    with _source(path) as stream:
        head = stream.read(MR_VECTORISED_MAX + 1) if vectorised else b""
        if vectorised and len(head) <= MR_VECTORISED_MAX:
            res = _memory_replay_numpy(head, source)
            if res is not None:
                return res
        return _memory_replay_lines(_stream_lines(stream, source, head), source)


def _memory_replay_lines(lines: Iterator[str], source: str) -> ImportResult:
    rec = _Recorder(source)
    events = rec.events
    alloc, free, realloc = rec.alloc, rec.free, rec.realloc
    # The common cases (malloc of a fresh address, free of a live one) are
    # inlined; everything else goes through the shared _Recorder rules.
    live = rec.live
    b = rec.b
    emit = b.flat.extend
    M, F = OP_MALLOC, OP_FREE
    fast_malloc = fast_free = 0
    ln = 0
    try:
        for ln, line in enumerate(lines, 1):
            parts = line.split()
            if len(parts) == 4 and parts[1] == "malloc":
                ptr = int(parts[2], 16)
                size = int(parts[3])
                if ptr and ptr not in live and 0 <= size <= U32_MAX:
                    t = parts[0]
                    if t[-1] == ":":
                        ident = b.next_id
                        b.next_id = ident + 1
                        emit((M, int(t[:-1]) & 0xFFFF, ident, size, 0))
                        live[ptr] = ident
                        fast_malloc += 1
                        continue
            elif len(parts) == 3 and parts[1] == "free":
                ptr = int(parts[2], 16)
                t = parts[0]
                if ptr in live and t[-1] == ":":
                    emit((F, int(t[:-1]) & 0xFFFF, live.pop(ptr), 0, 0))
                    fast_free += 1
                    continue
            if not parts:
                rec.ignored["blank line"] += 1
                continue
            t = parts[0]
            if t[-1] == ":" and len(parts) > 1:
                tid = int(t[:-1])
                op = parts[1]
                args = parts[2:]
            else:
                tid_s, colon, op = t.partition(":")
                if not colon or not op:
                    raise TraceError(source, "malformed line: expected 'TID: ACTION PTR ...'",
                                     line=ln)
                tid = int(tid_s)
                args = parts[1:]
            n = len(args)
            want = _MR_ARGS.get(op)
            if want is None:
                if op == "thread_done":
                    events[op] += 1
                    rec.ignored["thread_done"] += 1
                    continue
                raise TraceError(source, f"malformed line: unknown action {op!r}", line=ln)
            if n != want and n != want + 2:
                raise TraceError(source, f"malformed line: {op} takes {want} values "
                                         "(plus optional start and end timestamps)", line=ln)
            if n != want:
                int(args[-1]), int(args[-2])
                rec.ignored["timestamps"] += 1
            events[op] += 1
            ptr = int(args[0], 16) or None
            if op == "malloc":
                alloc(ptr, "m", int(args[1]), 0, tid, ln)
            elif op == "free":
                free(ptr, tid)
            elif op == "realloc":
                realloc(ptr, int(args[1], 16) or None, int(args[2]), tid, ln)
            elif op == "calloc":
                alloc(ptr, "c", int(args[2]), int(args[1]), tid, ln)
            else:
                alloc(ptr, "a", int(args[2]), int(args[1]), tid, ln)
    except ValueError:
        raise TraceError(source, "malformed line: bad number", line=ln) from None
    events["malloc"] += fast_malloc
    events["free"] += fast_free
    return rec.result("memory_replay")


# Token counts of each memory_replay action without / with timestamps.
_MR_OPS = {"malloc": 4, "calloc": 5, "memalign": 5, "realloc": 5, "free": 3, "thread_done": 3}


def _parse_tokens(buf: np.ndarray, start: np.ndarray, length: np.ndarray, base: int,
                  skip: int = 0) -> np.ndarray | None:
    """Numbers written in *base* (10 or 16) at the given tokens, after *skip*
    prefix bytes; None if a token holds anything else or is too long."""
    st, ln = start + skip, length - skip
    if len(st) == 0:
        return np.zeros(0, np.uint64)
    if ln.min() < 1 or ln.max() > (16 if base == 16 else 18):
        return None
    lut = np.full(256, 255, np.uint8)
    lut[48:58] = np.arange(10)
    if base == 16:
        lut[97:103] = np.arange(10, 16)
        lut[65:71] = np.arange(10, 16)
    v = np.zeros(len(st), np.uint64)
    for k in range(int(ln.max())):
        m = ln > k
        d = lut[buf[st[m] + k]]
        if (d == 255).any():
            return None
        v[m] = v[m] * np.uint64(base) + d.astype(np.uint64)
    return v


def _memory_replay_numpy(data: bytes, source: str) -> ImportResult | None:
    """Vectorised import of a clean memory_replay dump, or None to fall back.

    Pointers are matched to ids by sorting every create (malloc, calloc,
    memalign, realloc's new pointer) and kill (free, realloc's old pointer)
    by (pointer, line): in a clean dump each pointer's events alternate
    create, kill, create, ... and a kill belongs to the create just before
    it.  Anything irregular returns None.
    """
    if not data:
        return None
    if not data.endswith(b"\n"):
        data += b"\n"
    buf = np.frombuffer(data, dtype=np.uint8)
    sep = np.flatnonzero((buf == 32) | (buf == 10))
    tstart = np.concatenate(([0], sep[:-1] + 1))
    tlen = sep - tstart
    if not tlen.all():
        return None
    is_nl = buf[sep] == 10
    first = np.flatnonzero(np.concatenate(([True], is_nl[:-1])))
    ntok = np.diff(np.append(first, len(sep)))
    n = len(first)
    # "TID:" then the action name
    if (buf[tstart[first] + tlen[first] - 1] != ord(":")).any() or (ntok < 3).any():
        return None
    tid = _parse_tokens(buf, tstart[first], tlen[first] - 1, 10)
    if tid is None:
        return None
    act = first + 1
    kind = np.full(n, -1, np.int64)
    names = list(_MR_OPS)
    a_start, a_len = tstart[act], tlen[act]
    column = [buf[np.minimum(a_start + i, len(buf) - 1)] for i in range(max(map(len, names)))]
    for code, name in enumerate(names):
        m = a_len == len(name)
        for i, ch in enumerate(name.encode()):
            m &= column[i] == ch
        kind[m] = code
    if (kind < 0).any():
        return None
    want = np.array([_MR_OPS[x] for x in names])[kind]
    stamped = ntok == want + 2
    if not ((ntok == want) | (stamped & (kind != names.index("thread_done")))).all():
        return None
    MAL, CAL, MEM, REA, FRE, TDN = range(6)
    ptr = _parse_tokens(buf, tstart[act + 1], tlen[act + 1], 16, skip=2)
    if ptr is None or (buf[tstart[act + 1]] != ord("0")).any() \
            or (buf[tstart[act + 1] + 1] != ord("x")).any():
        return None
    # Second and third arguments, where the action has them.
    has2 = (kind == MAL) | (kind == CAL) | (kind == MEM) | (kind == REA)
    has3 = has2 & (kind != MAL)
    a2_tok, a3_tok = act[has2] + 2, act[has3] + 3
    is_rea2 = kind[has2] == REA
    arg2 = np.zeros(n, np.uint64)
    arg3 = np.zeros(n, np.uint64)
    dec2 = _parse_tokens(buf, tstart[a2_tok[~is_rea2]], tlen[a2_tok[~is_rea2]], 10)
    hex2 = _parse_tokens(buf, tstart[a2_tok[is_rea2]], tlen[a2_tok[is_rea2]], 16, skip=2)
    dec3 = _parse_tokens(buf, tstart[a3_tok], tlen[a3_tok], 10)
    if dec2 is None or hex2 is None or dec3 is None:
        return None
    idx2 = np.flatnonzero(has2)
    arg2[idx2[~is_rea2]] = dec2
    arg2[idx2[is_rea2]] = hex2
    arg3[has3] = dec3
    stamp_toks = np.concatenate([first[stamped] + ntok[stamped] - 2,
                                 first[stamped] + ntok[stamped] - 1])
    if _parse_tokens(buf, tstart[stamp_toks], tlen[stamp_toks], 10) is None:
        return None

    size = np.where(kind == MAL, arg2, arg3)
    aux = np.where((kind == CAL) | (kind == MEM), arg2, 0)
    creates = has2
    if (ptr[creates] == 0).any() or (size[creates] > U32_MAX).any() \
            or (aux > U32_MAX).any() or ((kind == REA) & (size == 0)).any():
        return None
    al = aux[kind == MEM].astype(np.int64)
    if ((al == 0) | ((al & (al - 1)) != 0)).any():
        return None
    kills = ((kind == FRE) & (ptr != 0)) | ((kind == REA) & (arg2 != 0))
    kill_ptr = np.where(kind == FRE, ptr, arg2)[kills]
    kill_line = np.flatnonzero(kills)
    create_line = np.flatnonzero(creates)
    create_ptr = ptr[creates]
    keys = np.concatenate([kill_ptr, create_ptr])
    lines = np.concatenate([kill_line, create_line])
    is_create = np.concatenate([np.zeros(len(kill_line), np.int8),
                                np.ones(len(create_line), np.int8)])
    order = np.lexsort((is_create, lines, keys))
    k_s, c_s = keys[order], is_create[order]
    new_group = np.concatenate(([True], k_s[1:] != k_s[:-1]))
    alternates = np.concatenate(([True], c_s[1:] != c_s[:-1]))
    if not (c_s[new_group] == 1).all() or not (alternates | new_group).all():
        return None
    # The create just before each kill, as an id (creates are numbered in line order).
    create_id = np.empty(len(order), np.int64)
    pos = order - len(kill_line)             # index into create arrays, for creates
    create_id[c_s == 1] = pos[c_s == 1]
    kill_sorted = np.flatnonzero(c_s == 0)
    killed_id = np.empty(len(kill_line), np.int64)
    killed_id[order[kill_sorted]] = create_id[kill_sorted - 1]
    killed_by_line = np.full(n, -1, np.int64)
    killed_by_line[kill_line] = killed_id
    ids_by_line = np.full(n, -1, np.int64)
    ids_by_line[create_line] = np.arange(len(create_line))

    keep = creates | ((kind == FRE) & (ptr != 0))
    op_byte = np.array([OP_MALLOC, OP_CALLOC, OP_ALIGNED, OP_REALLOC, OP_FREE, 0])[kind]
    rec = np.zeros(int(keep.sum()), dtype=RECORD_DTYPE)
    rec["op"] = op_byte[keep]
    rec["tid"] = (tid[keep] & np.uint64(0xFFFF))
    rec["id"] = np.where(kind == FRE, killed_by_line, ids_by_line)[keep]
    rec["size"] = np.where(kind == FRE, np.uint64(0), size)[keep]
    rea_aux = np.where(arg2 == 0, NULL_ID, killed_by_line)
    rec["aux"] = np.where(kind == REA, rea_aux, aux.astype(np.int64))[keep]
    events = Counter({name: int(np.count_nonzero(kind == c)) for c, name in enumerate(names)})
    events = +events
    dropped = +Counter({"free(NULL)": int(np.count_nonzero((kind == FRE) & (ptr == 0)))})
    ignored = +Counter({"thread_done": int(np.count_nonzero(kind == TDN)),
                        "timestamps": int(np.count_nonzero(stamped))})
    trace = Trace(rec, source)
    return ImportResult(trace, "memory_replay", source, events, dropped, Counter(), ignored)


# --------------------------------------------------------------------------
# glibc mtrace

_MT_CALLER = re.compile(r"@ (?:[^\[]*?)\[(?:0x[0-9a-fA-F]+|\(nil\))\] ")
_MT_PTR = r"(0x[0-9a-fA-F]+|\(nil\))"
_MT_SIZE = r"(0x[0-9a-fA-F]+|[0-9]+)"
_MT_OPS = {
    "+": re.compile(rf"\+ {_MT_PTR} {_MT_SIZE}"),
    "-": re.compile(rf"- {_MT_PTR}"),
    "<": re.compile(rf"< {_MT_PTR}"),
    ">": re.compile(rf"> {_MT_PTR} {_MT_SIZE}"),
    "!": re.compile(rf"! {_MT_PTR} {_MT_SIZE}"),
}


def _mt_ptr(s: str) -> int | None:
    return None if s == "(nil)" else (int(s, 16) or None)


def import_mtrace(path: str | os.PathLike) -> ImportResult:
    source = str(path)
    rec = _Recorder(source)
    pending_old: tuple[int | None, int] | None = None   # (old ptr, line of '<')
    for ln, raw in enumerate(_lines(path), 1):
        line = raw.rstrip("\r")
        if not line.strip():
            rec.ignored["blank line"] += 1
            continue
        if line.startswith("= "):
            if pending_old is not None:
                raise TraceError(source, f"'<' on line {pending_old[1]} is not followed by '>'",
                                 line=ln)
            if line in ("= Start", "= End"):
                rec.ignored[line] += 1
                continue
            raise TraceError(source, f"malformed line: unknown marker {line!r}", line=ln)
        body = line
        if line.startswith("@ "):
            m = _MT_CALLER.match(line)
            if not m:
                raise TraceError(source, "malformed line: bad '@ CALLER' part", line=ln)
            body = line[m.end():]
        kind = body[:1]
        pat = _MT_OPS.get(kind)
        m = pat.fullmatch(body.rstrip()) if pat else None
        if not m:
            raise TraceError(source, "malformed line: expected '+ PTR SIZE', '- PTR', "
                                     "'< PTR', '> PTR SIZE' or '! PTR SIZE'", line=ln)
        if pending_old is not None and kind != ">":
            raise TraceError(source, f"'<' on line {pending_old[1]} is not followed by '>'",
                             line=ln)
        if kind == "+":
            rec.events["alloc"] += 1
            rec.alloc(_mt_ptr(m.group(1)), "m", int(m.group(2), 16), 0, 0, ln)
        elif kind == "-":
            rec.events["free"] += 1
            rec.free(_mt_ptr(m.group(1)), 0)
        elif kind == "<":
            pending_old = (_mt_ptr(m.group(1)), ln)
        elif kind == ">":
            if pending_old is None:
                raise TraceError(source, "'>' without a preceding '<'", line=ln)
            rec.events["realloc"] += 1
            rec.realloc(_mt_ptr(m.group(1)), pending_old[0], int(m.group(2), 16), 0, ln)
            pending_old = None
        else:
            rec.events["failed realloc"] += 1
            rec.dropped["failed realloc (NULL result, old block kept)"] += 1
    if pending_old is not None:
        raise TraceError(source, "'<' is not followed by '>'", line=pending_old[1])
    return rec.result("mtrace")


# --------------------------------------------------------------------------
# valgrind --trace-malloc=yes

_VG_LINE = re.compile(r"--(\d+)-- (.*)")
_VG_CALL = re.compile(r"([A-Za-z_]\w*)\(([^()]*)\)")
_VG_RESULT = re.compile(r"\s*=\s*(0x[0-9a-fA-F]+|\(nil\)|0|NULL)\s*")
_VG_ALIGNED = re.compile(r"(?:al|alignment) (\d+), size (\d+)")
_VG_SIZED_AL = re.compile(r"size (\d+), al (\d+)")

_VG_NEW_PREFIXES = ("_Znw", "_Zna", "__builtin_new", "__builtin_vec_new")
_VG_DELETE_PREFIXES = ("_Zdl", "_Zda", "__builtin_delete", "__builtin_vec_delete")
_VG_ALIGNED_FNS = ("memalign", "aligned_alloc", "posix_memalign")


def _vg_kind(name: str) -> str | None:
    if name in ("malloc", "calloc", "realloc", "reallocf", "reallocarray", "free", "cfree"):
        return name
    if name in _VG_ALIGNED_FNS:
        return "memalign"
    if name.startswith(_VG_NEW_PREFIXES):
        return "new"
    if name.startswith(_VG_DELETE_PREFIXES):
        return "delete"
    if name in ("malloc_zone_malloc", "malloc_zone_calloc", "zone_calloc", "malloc_zone_free",
                "zone_realloc", "zone_memalign", "malloc_zone_memalign"):
        return "zone"
    return None


class _ValgrindRecorder(_Recorder):
    def __init__(self, source: str):
        super().__init__(source)
        self.pending: dict[int, list[int]] = {}   # pid ordinal -> ids with unknown address
        self.pid = 0

    def unseen(self, key) -> int | None:
        stack = self.pending.get(key[0])
        if stack:
            self.adjusted["bound unseen pointer to a block valgrind printed no address for"] += 1
            return stack.pop()
        return None


def _vg_ptr(s: str) -> int | None:
    s = s.strip()
    if s in ("(nil)", "NULL"):
        return None
    return int(s, 16) or None


def import_valgrind(path: str | os.PathLike) -> ImportResult:
    source = str(path)
    rec = _ValgrindRecorder(source)
    pids: dict[str, int] = {}
    ln = 0
    for ln, raw in enumerate(_lines(path), 1):
        m = _VG_LINE.match(raw.rstrip("\r"))
        if not m:
            rec.ignored["other lines"] += 1
            continue
        pid = pids.setdefault(m.group(1), len(pids))
        body = m.group(2)
        calls = []
        pos = 0
        while True:
            c = _VG_CALL.match(body, pos)
            if not c:
                break
            calls.append((c.group(1), c.group(2)))
            pos = c.end()
        if not calls or _vg_kind(calls[0][0]) is None:
            rec.ignored["other valgrind lines"] += 1
            continue
        rest = body[pos:]
        result: int | None = None
        has_result = False
        if rest.strip():
            r = _VG_RESULT.fullmatch(rest)
            if not r:
                raise TraceError(source, "malformed line: expected ' = 0xADDRESS' after the call",
                                 line=ln)
            has_result = True
            result = _vg_ptr(r.group(1))
        try:
            _vg_event(rec, pid, calls, has_result, result, ln)
        except (ValueError, IndexError):
            raise TraceError(source, f"malformed line: bad arguments to {calls[0][0]}",
                             line=ln) from None
    return rec.result("valgrind")


def _vg_event(rec: _ValgrindRecorder, pid: int, calls: list[tuple[str, str]],
              has_result: bool, result: int | None, ln: int) -> None:
    name, args = calls[0]
    kind = _vg_kind(name)
    def key(p: int | None):
        return None if p is None else (pid, p)

    res = key(result)

    def alloc(op: str, size: int, aux: int) -> None:
        if has_result:
            rec.alloc(res, op, size, aux, pid, ln)
        else:
            # No address printed: give it an id now and bind it to the next
            # unseen pointer this process frees.
            rec.adjusted["allocation with no printed address"] += 1
            ident = rec.alloc(("pending", pid, ln), op, size, aux, pid, ln)
            del rec.live[("pending", pid, ln)]
            rec.pending.setdefault(pid, []).append(ident)

    rec.events[name] += 1
    if kind in ("malloc", "new"):
        sized = _VG_SIZED_AL.fullmatch(args)
        if sized:
            alloc("a", int(sized.group(1)), int(sized.group(2)))
        else:
            alloc("m", int(args), 0)
    elif kind == "calloc":
        n, s = (int(x) for x in args.split(","))
        alloc("c", s, n)
    elif kind == "memalign":
        m = _VG_ALIGNED.fullmatch(args)
        if not m:
            raise ValueError(args)
        alloc("a", int(m.group(2)), int(m.group(1)))
    elif kind in ("free", "cfree", "delete"):
        rec.free(key(_vg_ptr(args.split(",")[0])), pid)
    elif kind in ("realloc", "reallocf", "reallocarray"):
        a = args.split(",")
        old = key(_vg_ptr(a[0]))
        size = int(a[1]) * (int(a[2]) if kind == "reallocarray" else 1)
        if len(calls) > 1:
            inner = _vg_kind(calls[1][0])
            if inner == "malloc" and old is None:
                # realloc(0x0,N)malloc(N) = 0xP: older valgrinds route through malloc.
                rec.realloc(res if has_result else None, None, size, pid, ln)
                return
            if inner in ("free", "cfree") and size == 0:
                # realloc(0xP,0)free(0xP): older valgrinds free and return NULL.
                rec.adjusted["realloc(p, 0) written as free"] += 1
                rec.free(old, pid)
                return
            raise ValueError(calls)
        if not has_result:
            raise ValueError(args)
        rec.realloc(res, old, size, pid, ln)
    else:
        rec.ignored["zone allocator calls"] += 1


# --------------------------------------------------------------------------
# Detection and dispatch

_DETECT = {
    "wee": re.compile(r"(Alloc|Free)\(\d+\),?\s*"),
    "memory_replay": re.compile(r"\d+:\s*(malloc|calloc|memalign|realloc|free|thread_done)\s.*"),
    "mtrace": re.compile(r"(= Start|= End|(@ .*\] )?[-+<>!] (0x[0-9a-fA-F]+|\(nil\)).*)\s*"),
    "valgrind": re.compile(r"--\d+-- ([A-Za-z_]\w*)\(.*"),
}

def import_firmware(path: str | os.PathLike) -> ImportResult:
    trace, ann, events, dropped = read_firmware(path)
    return ImportResult(trace, "firmware", str(path), events, dropped, annotations=ann)


IMPORTERS: dict[str, Callable[[str | os.PathLike], ImportResult]] = {
    "firmware": import_firmware,
    "wee": import_wee,
    "memory_replay": import_memory_replay,
    "mtrace": import_mtrace,
    "valgrind": import_valgrind,
}


def detect_format(path: str | os.PathLike) -> str:
    """``heapkit`` for heapkit traces, else one of :data:`FORMATS`, judged by content."""
    with open_source(path) as f:
        raw = f.read(1024)
    if not raw:
        raise TraceError(str(path), "empty file")
    if sniff_form(raw):
        return "heapkit"
    if is_firmware(raw[:16]):
        return "firmware"
    with _source(path) as stream:
        data = stream.read(256 * 1024)
    if sniff_form(data[:1024]):
        return "heapkit"
    if is_firmware(data[:16]):          # a compressed recorder stream
        return "firmware"
    head = data.decode("utf-8", errors="replace").split("\n")[:2000]
    scores = Counter()
    for line in head:
        line = line.rstrip("\r")
        for fmt, pat in _DETECT.items():
            if pat.fullmatch(line):
                if fmt == "valgrind" and _vg_kind(pat.fullmatch(line).group(1)) is None:
                    continue
                scores[fmt] += 1
    if not scores:
        raise HeapkitError(f"{path}: cannot tell the format; pass --format "
                           f"({', '.join(FORMATS)})")
    return scores.most_common(1)[0][0]


def import_trace(path: str | os.PathLike, fmt: str = "auto") -> ImportResult:
    """Import *path* in format *fmt* (``auto`` detects; heapkit traces load as they are)."""
    if fmt == "auto":
        fmt = detect_format(path)
    if fmt == "heapkit":
        t = read_trace(path)
        return ImportResult(t, "heapkit", str(path), Counter(t.stats().by_op))
    try:
        importer = IMPORTERS[fmt]
    except KeyError:
        raise HeapkitError(f"unknown format {fmt!r} (choose from auto, {', '.join(FORMATS)})") \
            from None
    res = importer(path)
    if fmt in LINE_FORMATS and not res.events:
        lines = sum(res.ignored.values())
        if not lines:
            raise TraceError(str(path), "empty file")
        raise TraceError(str(path), f"no {fmt} allocation events in its {lines} line(s): "
                                    "is that its format?")
    return res
