# SPDX-License-Identifier: MIT
"""Trace type, encodings, validation and stats (docs/trace-format.md)."""

import gzip
import struct
from pathlib import Path

import numpy as np
import pytest

from heapkit.errors import HeapkitError, TraceError
from heapkit.trace import (NULL_ID, RECORD_DTYPE, Trace, TraceBuilder, form_of_path,
                           live_counts, read_trace, write_trace)

DATA = Path(__file__).parent / "data"

SPEC_EXAMPLE = """heapkit-trace 1
m 0 552
m 1 120 t2
r 2 1 4000 t2
a 3 64 100
f 0
f 2 t2
"""


def rows(trace):
    return [tuple(r) for r in trace.records.tolist()]


# -- the in-memory layout ----------------------------------------------------

def test_record_dtype_matches_binary_layout():
    assert RECORD_DTYPE.itemsize == 16
    offsets = {name: RECORD_DTYPE.fields[name][1] for name in RECORD_DTYPE.names}
    assert offsets == {"op": 0, "reserved": 1, "tid": 2, "id": 4, "size": 8, "aux": 12}
    assert RECORD_DTYPE["tid"].str == "<u2" and RECORD_DTYPE["aux"].str == "<u4"


def test_spec_example_parses_to_expected_records():
    t = Trace.from_text(SPEC_EXAMPLE, "ex.hkt")
    # (op, reserved, tid, id, size, aux)
    assert rows(t) == [
        (ord("m"), 0, 0, 0, 552, 0),
        (ord("m"), 0, 2, 1, 120, 0),
        (ord("r"), 0, 2, 2, 4000, 1),
        (ord("a"), 0, 0, 3, 100, 64),
        (ord("f"), 0, 0, 0, 0, 0),
        (ord("f"), 0, 2, 2, 0, 0),
    ]
    assert t.n_ids == 4
    assert t.to_text() == SPEC_EXAMPLE


def test_sample_file_with_comments_blank_lines_and_all_ops():
    t = Trace.load(DATA / "sample.hkt")
    assert rows(t)[4] == (ord("c"), 0, 65535, 4, 12, 10)        # calloc: size=elem, aux=nmemb
    assert rows(t)[5] == (ord("r"), 0, 7, 5, 33, NULL_ID)       # realloc(NULL, 33)
    assert len(t) == 8


def test_stats_of_spec_example():
    st = Trace.from_text(SPEC_EXAMPLE).stats()
    assert st.events == 6
    assert st.by_op == {"malloc": 2, "calloc": 0, "aligned": 1, "realloc": 1, "free": 2}
    # live: 552, 672, 552+4000, +100 -> 4652 peak; then -552, -4000
    assert st.peak_live_bytes == 4652
    assert st.peak_live_blocks == 3
    assert st.max_size == 4000
    assert st.threads == 2 and st.tids == [0, 2]
    assert st.live_at_end == 1 and st.live_bytes_at_end == 100
    assert st.total_requested == 552 + 120 + 4000 + 100


def test_stats_count_calloc_as_product():
    st = Trace.load(DATA / "sample.hkt").stats()
    assert st.max_size == 4000
    assert st.total_requested == 552 + 120 + 4000 + 100 + 120 + 33
    assert st.realloc_null == 1


def test_live_counts():
    t = Trace.from_text(SPEC_EXAMPLE)
    assert live_counts(t.records).tolist() == [1, 2, 2, 3, 2, 1]


# -- round trips ----------------------------------------------------------

def _all_ops_trace():
    b = TraceBuilder()
    a = b.malloc(10, tid=3)
    c = b.calloc(7, 9)
    r = b.realloc(a, 100, tid=3)
    n = b.realloc(None, 0)
    al = b.aligned(4096, 1, tid=65535)
    b.free(c)
    b.free(r, tid=3)
    b.free(al)
    b.malloc(0xFFFFFFFF)
    return b.build("ops"), n


@pytest.mark.parametrize("ext", ["hkt", "hkt.gz", "hkb"])
def test_round_trip_files(tmp_path, ext):
    t, _ = _all_ops_trace()
    p = tmp_path / f"t.{ext}"
    t.save(p)
    assert Trace.load(p) == t


def test_round_trip_text_binary_gz_chain(tmp_path):
    t = Trace.load(DATA / "sample.hkt")
    b1 = Trace.from_bytes(t.to_bytes())
    t2 = Trace.from_text(b1.to_text())
    (tmp_path / "x.hkt.gz").write_bytes(gzip.compress(t2.to_text().encode()))
    t3 = read_trace(tmp_path / "x.hkt.gz")
    assert t == b1 == t2 == t3
    assert t3.to_bytes() == t.to_bytes()


def test_content_decides_encoding_not_name(tmp_path):
    t, _ = _all_ops_trace()
    (tmp_path / "binary.dat").write_bytes(t.to_bytes())
    (tmp_path / "text.dat").write_text(t.to_text())
    (tmp_path / "gz.dat").write_bytes(gzip.compress(t.to_text().encode()))
    for name in ("binary.dat", "text.dat", "gz.dat"):
        assert read_trace(tmp_path / name) == t


def test_gz_output_is_deterministic(tmp_path):
    t, _ = _all_ops_trace()
    t.save(tmp_path / "a.hkt.gz")
    t.save(tmp_path / "b.hkt.gz")
    assert (tmp_path / "a.hkt.gz").read_bytes() == (tmp_path / "b.hkt.gz").read_bytes()


def test_binary_header_and_records():
    t, _ = _all_ops_trace()
    data = t.to_bytes()
    magic, version, flags, count, ids, reserved = struct.unpack_from("<8sIIQII", data)
    assert (magic, version, flags, count, ids, reserved) == (b"HKTRACE\0", 1, 0, 9, 6, 0)
    assert len(data) == 32 + 16 * 9
    # record 2: r id 2 old 0 size 100, tid 3
    assert struct.unpack_from("<BBHIII", data, 32 + 2 * 16) == (ord("r"), 0, 3, 2, 100, 0)
    # record 3: realloc(NULL) -> aux 0xFFFFFFFF
    assert struct.unpack_from("<BBHIII", data, 32 + 3 * 16)[5] == 0xFFFFFFFF


def test_tolerant_whitespace_goes_through_slow_path_and_agrees():
    canonical = Trace.from_text(SPEC_EXAMPLE)
    messy = SPEC_EXAMPLE.replace("m 1 120 t2", "m  1 120\tt2").replace("\n", "\r\n")
    assert Trace.from_text(messy) == canonical


def test_tid_is_truncated_to_16_bits():
    t = Trace.from_text("heapkit-trace 1\nm 0 1 t70000\n")
    assert int(t.records["tid"][0]) == 70000 & 0xFFFF


def test_empty_trace():
    t = Trace.from_text("heapkit-trace 1\n")
    assert len(t) == 0 and t.n_ids == 0
    assert Trace.from_bytes(t.to_bytes()) == t
    assert t.stats().peak_live_bytes == 0


def test_form_of_path():
    assert form_of_path("a.hkb") == "hkb"
    assert form_of_path("a.HKT") == "hkt"
    assert form_of_path("dir/a.hkt.gz") == "hkt.gz"
    assert form_of_path("a.txt") is None


def test_write_to_unknown_extension_is_an_error(tmp_path):
    t, _ = _all_ops_trace()
    with pytest.raises(HeapkitError, match=r"must end in \.hkt, \.hkt\.gz or \.hkb"):
        write_trace(t, tmp_path / "t.txt")


# -- malformed text: exact file:line messages ---------------------------------

MALFORMED = [
    ("m 0 5\nf 7\n", "x.hkt:3: free of id 7 which is not live"),
    ("m 0 5\nf 0\nf 0\n", "x.hkt:4: free of id 0 which is not live"),
    ("m 0 5\nm 2 5\n", "x.hkt:3: id 2 out of order: expected 1 (ids must be dense and in order)"),
    ("m 1 5\n", "x.hkt:2: id 1 out of order: expected 0 (ids must be dense and in order)"),
    ("m 0 5\nr 1 0 9\nf 0\n", "x.hkt:4: free of id 0 which is not live"),
    ("m 0 5\nr 1 1 9\n", "x.hkt:3: realloc of id 1 which is not live"),
    ("r 0 0 9\n", "x.hkt:2: realloc of id 0 which is not live"),
    ("m 0 5\nr 1 0 0\n", "x.hkt:3: realloc to size 0: write it as a free of the old id"),
    ("m 0 1\na 1 3 8\n", "x.hkt:3: alignment 3 is not a power of two"),
    ("a 0 0 8\n", "x.hkt:2: alignment 0 is not a power of two"),
    ("m 0 4294967296\n", "x.hkt:2: size 4294967296 does not fit in 32 bits"),
    ("c 0 4294967296 1\n", "x.hkt:2: nmemb 4294967296 does not fit in 32 bits"),
    ("m 0 +5\n", "x.hkt:2: malformed line: numbers are plain decimal"),
    ("m 0 1_0\n", "x.hkt:2: malformed line: numbers are plain decimal"),
    ("m 0 -5\n", "x.hkt:2: malformed line: numbers are plain decimal"),
    ("m 0 5\nr 1 -1 5\n", "x.hkt:3: malformed line: numbers are plain decimal"),
    ("m 0\n", "x.hkt:2: malformed line: expected 'm ID SIZE [tTID]'"),
    ("f 0 1\n", "x.hkt:2: malformed line: expected 'f ID [tTID]'"),
    ("x 0\n", "x.hkt:2: malformed line: unknown event 'x'"),
    ("m 0 abc\n", "x.hkt:2: malformed line: expected decimal numbers"),
    ("m 0 1 tq\n", "x.hkt:2: malformed line: expected decimal numbers"),
    ("# ok comment é\nm 0 ٣\n", "x.hkt:3: malformed line: non-ASCII character"),
]


@pytest.mark.parametrize("body,message", MALFORMED)
def test_malformed_text_messages(tmp_path, body, message):
    with pytest.raises(TraceError) as e:
        Trace.from_text("heapkit-trace 1\n" + body, "x.hkt")
    assert str(e.value) == message


def test_malformed_file_message_names_path(tmp_path):
    p = tmp_path / "bad.hkt"
    p.write_text("heapkit-trace 1\n# c\nm 0 5\n\nf 7\n")
    with pytest.raises(TraceError) as e:
        Trace.load(p)
    assert str(e.value) == f"{p}:5: free of id 7 which is not live"
    assert e.value.line == 5


@pytest.mark.parametrize("text,message", [
    ("", "x.hkt: empty file"),
    ("heapkit-trace 1", "x.hkt:1: truncated: the last line has no line end"),
    ("heapkit-trace 1\nm 0 1\nf 0", "x.hkt:3: truncated: the last line has no line end"),
    ("m 0 1\n", "x.hkt:1: expected the header line 'heapkit-trace 1'"),
    ("heapkit-trace 2\nm 0 1\n", "x.hkt:1: unsupported trace version '2'"),
])
def test_bad_header(text, message):
    with pytest.raises(TraceError) as e:
        Trace.from_text(text, "x.hkt")
    assert str(e.value) == message


def test_not_a_trace_file(tmp_path):
    p = tmp_path / "nope.hkt"
    p.write_text("hello\n")
    with pytest.raises(TraceError, match="not a heapkit trace"):
        read_trace(p)


def test_missing_file():
    with pytest.raises(HeapkitError, match=r"nope\.hkt: no such file"):
        read_trace("nope.hkt")


# -- malformed binary: record indexes -----------------------------------------

def _hkb(records, ids=None, count=None):
    rec = np.array(records, dtype=RECORD_DTYPE)
    n_ids = ids if ids is not None else int(np.isin(rec["op"], [109, 99, 97, 114]).sum())
    head = struct.pack("<8sIIQII", b"HKTRACE\0", 1, 0, len(rec) if count is None else count,
                       n_ids, 0)
    return head + rec.tobytes()


M, F, A = ord("m"), ord("f"), ord("a")


@pytest.mark.parametrize("records,message", [
    ([(M, 0, 0, 0, 8, 0), (F, 0, 0, 7, 0, 0)], "x.hkb: record 1: free of id 7 which is not live"),
    ([(M, 0, 0, 1, 8, 0)], "x.hkb: record 0: id 1 out of order: expected 0 (ids must be dense "
                           "and in order)"),
    ([(M, 0, 0, 0, 8, 0), (ord("z"), 0, 0, 1, 0, 0)], "x.hkb: record 1: unknown op byte 0x7a"),
    ([(M, 1, 0, 0, 8, 0)], "x.hkb: record 0: reserved byte is not 0"),
    ([(M, 0, 0, 0, 8, 0), (F, 0, 0, 0, 5, 0)], "x.hkb: record 1: free record with non-zero "
                                               "size or aux"),
    ([(A, 0, 0, 0, 8, 12)], "x.hkb: record 0: alignment 12 is not a power of two"),
])
def test_malformed_binary_records(records, message):
    with pytest.raises(TraceError) as e:
        Trace.from_bytes(_hkb(records), "x.hkb")
    assert str(e.value) == message


def test_malformed_binary_header():
    good = [(M, 0, 0, 0, 8, 0)]
    with pytest.raises(TraceError, match="x.hkb: header says 1 ids but the records create 0"):
        Trace.from_bytes(_hkb([(F, 0, 0, 0, 0, 0)][:0], ids=1), "x.hkb")
    with pytest.raises(TraceError, match="header says 2 records but the file holds 1"):
        Trace.from_bytes(_hkb(good, count=2), "x.hkb")
    with pytest.raises(TraceError, match="bad magic"):
        Trace.from_bytes(b"HKTRACEX" + _hkb(good)[8:], "x.hkb")
    with pytest.raises(TraceError, match="truncated: 8 bytes, shorter than the 32-byte header"):
        Trace.from_bytes(b"HKTRACE\0", "x.hkb")
    with pytest.raises(TraceError, match="unsupported binary trace version 2"):
        data = bytearray(_hkb(good))
        data[8] = 2
        Trace.from_bytes(bytes(data), "x.hkb")


def test_builder_output_is_validated():
    b = TraceBuilder()
    b.malloc(1)
    b.free(0)
    b.free(0)
    with pytest.raises(TraceError, match="record 2: free of id 0 which is not live"):
        b.build("built")
