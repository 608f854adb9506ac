# SPDX-License-Identifier: MIT
"""Helpers shared by the engine and peer tests (test_engine.py, test_peers.py):
.hkb images written with struct.pack, and (op, id, size, aux) record tuples.
"""

from __future__ import annotations

import struct
from pathlib import Path

HEADER = struct.Struct("<8sIIQII")
RECORD = struct.Struct("<BBHIII")
NULL = 0xFFFFFFFF


def hkb_bytes(recs, *, ids=None, magic=b"HKTRACE\0", version=1, count=None):
    """A .hkb image: recs are (op, id, size, aux) with op a letter."""
    n_ids = sum(1 for r in recs if r[0] != "f") if ids is None else ids
    body = b"".join(RECORD.pack(ord(op), 0, 0, ident, size, aux) for op, ident, size, aux in recs)
    return HEADER.pack(magic, version, 0, len(recs) if count is None else count, n_ids, 0) + body


def write_hkb(path, recs, **kw):
    Path(path).write_bytes(hkb_bytes(recs, **kw))
    return Path(path)


def m(i, size):
    return ("m", i, size, 0)


def c(i, nmemb, size):
    return ("c", i, size, nmemb)


def a(i, align, size):
    return ("a", i, size, align)


def r(i, old, size):
    return ("r", i, size, NULL if old is None else old)


def f(i):
    return ("f", i, 0, 0)
