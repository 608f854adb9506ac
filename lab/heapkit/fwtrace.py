# SPDX-License-Identifier: MIT
"""Firmware traces: what ports/trace/ (the on-target recorder) writes.

Two inputs carry the same records (docs/trace-format.md, "Firmware recorder"):

* the **stream** a sink received (``HKFWTRC`` header, then records), e.g. the
  file the semihosting sink wrote;
* the **buffer image** a debugger dumped (``HKFWBUF`` control block, then the
  ring): the bytes between its tail and head indexes are the stream's rest.

:func:`import_firmware` turns either into a heapkit trace (pointers become
dense ids, task handles small thread ids 1, 2, ... in order of appearance,
0 staying "no task") plus its :class:`~heapkit.annotations.Annotations`:
each record's caller and stamp, the task names, the checkpoints, the drops.
Bad input stops with one line naming the file and the record.
"""

from __future__ import annotations

import contextlib
import gzip
import os
import struct
from collections import Counter

import numpy as np

from .annotations import Annotations
from .errors import TraceError
from .trace import TraceBuilder, gzip_errors, open_source

STREAM_MAGIC = b"HKFWTRC\0"
IMAGE_MAGIC = b"HKFWBUF\0"
VERSION = 1
STREAM_HEADER = 16
# The image's fixed fields: magic, version u16, word u8, started u8, header_size,
# ring_size, head, tail, stamp_hz, dropped, pending_drops, records (u32 each).
_IMAGE = struct.Struct("<8sHBBIIIIIIII")

# op -> payload words ('m' and 'f' carry no aux word).
_WORDS = {ord("m"): 5, ord("c"): 6, ord("a"): 6, ord("r"): 6, ord("f"): 5,
          ord("T"): 2, ord("K"): 2, ord("D"): 2}


def is_firmware(head: bytes) -> bool:
    return head.startswith(STREAM_MAGIC) or head.startswith(IMAGE_MAGIC)


def _image_to_stream(data: bytes, source: str) -> tuple[bytes, int]:
    """The stream held by a buffer image, and the drop count it states."""
    if len(data) < _IMAGE.size:
        raise TraceError(source, "buffer image shorter than its control block")
    (_, version, word, _started, header_size, ring_size, head, tail, stamp_hz, dropped,
     _pending, _records) = _IMAGE.unpack_from(data)
    if version != VERSION:
        raise TraceError(source, f"unsupported recorder version {version}")
    if word not in (4, 8):
        raise TraceError(source, f"word size {word} (expected 4 or 8)")
    if ring_size == 0 or ring_size & (ring_size - 1) or header_size < _IMAGE.size:
        raise TraceError(source, f"bad ring size {ring_size} or control block size {header_size}")
    if len(data) < header_size + ring_size:
        raise TraceError(source, f"image holds {len(data)} bytes, the control block says "
                                 f"{header_size + ring_size}: dump the whole buffer")
    used = (head - tail) & 0xFFFFFFFF
    if used > ring_size:
        raise TraceError(source, f"head {head} and tail {tail} are {used} bytes apart, "
                                 f"more than the {ring_size}-byte ring")
    ring = data[header_size:header_size + ring_size]
    start = tail & (ring_size - 1)
    body = (ring + ring)[start:start + used]
    header = STREAM_MAGIC + struct.pack("<HBBI", VERSION, word, 0, stamp_hz)
    return header + body, dropped


class _Reader:
    """Pointer -> id bookkeeping over the records, in order."""

    def __init__(self, source: str):
        self.source = source
        self.builder = TraceBuilder()
        self.live: dict[int, int] = {}
        self.tids: dict[int, int] = {}
        self.callers: list[int] = []
        self.stamps: list[int] = []
        self.ann = Annotations()
        self.events: Counter = Counter()
        self.dropped: Counter = Counter()

    def tid(self, task: int) -> int:
        if task == 0:
            return 0
        t = self.tids.get(task)
        if t is None:
            t = self.tids[task] = len(self.tids) + 1
            if t > 0xFFFF:
                raise TraceError(self.source, "more than 65535 tasks")
        return t

    def check32(self, value: int, what: str, index: int) -> int:
        if value > 0xFFFFFFFF:
            raise TraceError(self.source, f"{what} {value} does not fit in 32 bits", record=index)
        return value

    def note(self, caller: int, stamp: int) -> None:
        self.callers.append(caller)
        self.stamps.append(stamp)

    def record(self, index: int, op: int, w: tuple[int, ...], text: str) -> None:
        b = self.builder
        name = chr(op)
        self.events[name] += 1
        if name == "T":
            tid = self.tids.get(w[0])
            # A handle named again with another name is a new task (the old one was deleted).
            if tid is None or self.ann.tasks.get(tid, text) != text:
                self.tids.pop(w[0], None)
                tid = self.tid(w[0])
            self.ann.tasks[tid] = text
            return
        if name == "K":
            self.ann.marks.append((len(b), text))
            return
        if name == "D":
            self.ann.drops.append((len(b), w[0]))
            self.dropped["recorder (ring full)"] += w[0]
            return
        caller, task, stamp = w[-3], w[-2], w[-1]
        tid = self.tid(task)
        if name == "f":
            ident = self.live.pop(w[0], None)
            if ident is None:
                self.dropped["free of unknown pointer"] += 1
                return
            b.free(ident, tid)
            self.note(caller, stamp)
            return
        size = self.check32(w[1], "size", index)
        old = None
        if name == "r" and w[2]:
            old = self.live.pop(w[2], None)
            if old is None:
                self.dropped["realloc of unknown pointer (imported as realloc(NULL))"] += 1
        if w[0] in self.live:
            # A free was lost (dropped record): the address is handed out again.
            b.free(self.live.pop(w[0]), tid)
            self.note(0, stamp)
            self.dropped["missed free (address reused)"] += 1
        if name == "m":
            ident = b.malloc(size, tid)
        elif name == "c":
            ident = b.calloc(self.check32(w[2], "count", index), size, tid)
        elif name == "a":
            align = w[2]
            if align == 0 or align & (align - 1):
                raise TraceError(self.source, f"alignment {align} is not a power of two", record=index)
            ident = b.aligned(self.check32(align, "alignment", index), size, tid)
        else:
            if size == 0:
                raise TraceError(self.source, "realloc record with size 0", record=index)
            ident = b.realloc(old, size, tid)
        self.live[w[0]] = ident
        self.note(caller, stamp)


def parse_firmware(data: bytes, source: str, *, partial: bool = False):
    """(trace, annotations, events, dropped) from a stream or a buffer image.

    partial: *data* is a stream still being written (``heapkit view --follow``): a record cut
    at the end is left for later instead of being an error.
    """
    image_drops = None
    if data.startswith(IMAGE_MAGIC):
        data, image_drops = _image_to_stream(data, source)
    if not data.startswith(STREAM_MAGIC):
        raise TraceError(source, "not a firmware trace (expected the HKFWTRC or HKFWBUF magic)")
    if len(data) < STREAM_HEADER:
        raise TraceError(source, "stream shorter than its 16-byte header")
    version, word, _, stamp_hz = struct.unpack_from("<HBBI", data, 8)
    if version != VERSION:
        raise TraceError(source, f"unsupported recorder version {version}")
    if word not in (4, 8):
        raise TraceError(source, f"word size {word} (expected 4 or 8)")
    fmt = "<" + ("I" if word == 4 else "Q") * 6
    r = _Reader(source)
    pos = STREAM_HEADER
    index = 0
    n = len(data)
    while pos < n:
        if pos + 4 > n:
            if partial:
                break
            raise TraceError(source, "truncated record head at the end", record=index)
        op, nwords, slen, zero = data[pos], data[pos + 1], data[pos + 2], data[pos + 3]
        want = _WORDS.get(op)
        if want is None or zero != 0:
            raise TraceError(source, f"unknown record op 0x{op:02x}", record=index)
        if nwords != want or (slen and chr(op) not in "TK"):
            raise TraceError(source, f"'{chr(op)}' record with {nwords} words and a "
                                     f"{slen}-byte string (expected {want}, no string)", record=index)
        end = pos + 4 + nwords * word + ((slen + 3) & ~3)
        if end > n:
            if partial:
                break
            raise TraceError(source, "truncated record at the end", record=index)
        words = struct.unpack_from(fmt[:nwords + 1], data, pos + 4)
        text = data[pos + 4 + nwords * word:pos + 4 + nwords * word + slen].decode(
            "utf-8", errors="replace")
        r.record(index, op, words, text)
        pos = end
        index += 1
    trace = r.builder.build(source)
    ann = r.ann
    ann.callers = np.array(r.callers, dtype=np.uint64)
    ann.stamps = np.array(r.stamps, dtype=np.uint64)
    ann.meta = {"source": "firmware", "word": str(word), "stamp_hz": str(stamp_hz),
                "sizes": "as the heap reported them (FreeRTOS hooks: gross block sizes)",
                "tasks": " ".join(f"{tid}=0x{h:x}" for h, tid in r.tids.items())}
    if image_drops is not None:
        # The image counts every drop, also those whose 'D' record is still pending.
        r.dropped["recorder (ring full)"] = image_drops
    ann.meta["dropped"] = str(r.dropped["recorder (ring full)"])
    return trace, ann, r.events, r.dropped


MAX_STREAM = 256 << 20   # bytes of a recorder stream read, gzip removed (some 11 million records)


def read_firmware(path: str | os.PathLike):
    """Parse a recorder stream, plain or gzip-compressed; one larger than :data:`MAX_STREAM`
    is refused before it is all read (a gzip bomb cannot take the memory)."""
    source = str(path)
    with open_source(path) as f:
        stream = f
        with contextlib.ExitStack() as stack:
            if f.peek(2)[:2] == b"\x1f\x8b":
                stack.enter_context(gzip_errors(source))
                stream = stack.enter_context(gzip.GzipFile(fileobj=f))
            data = stream.read(MAX_STREAM + 1)
    if len(data) > MAX_STREAM:
        raise TraceError(source, f"more than {MAX_STREAM:,} bytes of recorder stream: refused")
    return parse_firmware(data, source)
