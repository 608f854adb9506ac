# SPDX-License-Identifier: MIT
"""Tests of the C replay engine (lab/engine, hk-replay) through heapkit.engine.

Traces are written here with struct.pack, small enough to work out by hand.
The hand computations use seqfit-first, whose layout is documented in
src/tagged.h: every block starts with an 8-byte tag, a block's gross size is
the request plus the tag rounded up to HK_ALIGN, at least the minimum block
(tag, two links, footer: 32 bytes), the payload follows the tag, free blocks
merge with free neighbours, and first fit takes the lowest free block that
fits (splitting when a minimum block remains) before carving the top.
Addresses are offsets from the arena start; the first block starts at the
arena's control_bytes.

HEAPKIT_REPLAY / HEAPKIT_REPLAY_SELFTEST run the tests against another build
(ctest does so for each build tree); otherwise build/ is brought up to date.
"""

from __future__ import annotations

import os
import random
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from heapkit import engine  # noqa: E402
from heapkit.engine import EngineError  # noqa: E402
from helpers import HEADER, RECORD, a, c, f, hkb_bytes, m, r, write_hkb  # noqa: E402


# --------------------------------------------------------------------------
# Helpers (the .hkb writer and record tuples are in helpers.py)

def gross(n, align=8):
    """Gross size of a tagged (seqfit/tlsf) block for a request on a 64-bit host: tag, payload, rounding, minimum."""
    def up(x):
        return (x + align - 1) // align * align
    return max(up(n + 8), up(8 + 16))  # 64-bit host: an 8-byte tag, two links in a free block


def generate(n, seed=1, target_live=2000, max_align=256):
    """A random but valid trace of n records (all five kinds), as (op, id, size, aux) tuples."""
    rnd = random.Random(seed)
    live = []
    next_id = 0
    out = []

    def size():
        u = rnd.random()
        if u < 0.70:
            return rnd.randint(8, 128)
        if u < 0.95:
            return rnd.randint(129, 1024)
        return rnd.randint(1025, 8192)

    for _ in range(n):
        nl = len(live)
        if nl == 0 or rnd.random() < 0.5 + (target_live - nl) / (2.0 * target_live):
            u = rnd.random()
            if u < 0.10 and nl:
                j = rnd.randrange(nl)
                out.append(("r", next_id, size(), live[j]))
                live[j] = next_id
            else:
                if u < 0.85:
                    out.append(("m", next_id, size(), 0))
                elif u < 0.92:
                    out.append(("c", next_id, rnd.randint(1, 64), rnd.randint(1, 16)))
                else:
                    out.append(("a", next_id, size(), 1 << rnd.randint(4, max_align.bit_length() - 1)))
                live.append(next_id)
            next_id += 1
        else:
            j = rnd.randrange(nl)
            victim = live[j]
            live[j] = live[-1]
            live.pop()
            out.append(("f", victim, 0, 0))
    return out


def write_generated(path, n, seed=1, target_live=2000):
    """Like write_hkb(generate(...)) but fast enough for a million records."""
    recs = generate(n, seed, target_live)
    buf = bytearray(HEADER.size + RECORD.size * n)
    off = HEADER.size
    for op, ident, size, aux in recs:
        RECORD.pack_into(buf, off, ord(op), 0, 0, ident, size, aux)
        off += RECORD.size
    n_ids = sum(1 for rec in recs if rec[0] != "f")
    buf[:HEADER.size] = HEADER.pack(b"HKTRACE\0", 1, 0, n, n_ids, 0)
    Path(path).write_bytes(bytes(buf))
    return Path(path)


@pytest.fixture(scope="module")
def hk():
    """The current hk-replay (built or brought up to date), or $HEAPKIT_REPLAY (e.g. a sanitizer build)."""
    return Path(os.environ["HEAPKIT_REPLAY"]) if os.environ.get("HEAPKIT_REPLAY") else engine.build()


@pytest.fixture(scope="module")
def selftest():
    """hk-replay plus the deliberately broken test-* allocators ($HEAPKIT_REPLAY_SELFTEST overrides)."""
    env = os.environ.get("HEAPKIT_REPLAY_SELFTEST")
    return Path(env) if env else engine.build("hk-replay-selftest")


def run(trace, alloc, *, binary, **kw):
    kw.setdefault("timing", False)
    return engine.replay(trace, alloc, binary=binary, **kw)


# --------------------------------------------------------------------------
# Allocator table

def test_list_allocators(hk):
    names = engine.list_allocators(binary=hk)
    for expected in ("tlsf", "seqfit-first", "system"):
        assert expected in names
    assert not [n for n in names if n.startswith("test-")], "broken allocators leaked into hk-replay"
    assert len(names) == len(set(names))


def test_unknown_and_test_only_allocators_are_rejected(hk, tmp_path):
    t = write_hkb(tmp_path / "t.hkb", [m(0, 8)])
    for name in ("no-such-allocator", "test-overlap"):
        with pytest.raises(EngineError, match=f"unknown allocator '{name}'"):
            run(t, name, binary=hk)


# --------------------------------------------------------------------------
# Metric definitions, worked out by hand on seqfit-first

# m0 100 | m1 8 | m2 100 | m3 8 | f0 | f2 | m4 150 | f4 | f3 | f1
# The 8-byte blocks keep the two 100-byte holes apart, so m4 (gross 160)
# cannot reuse them: the footprint peaks after the live bytes did.
PEAKS = [m(0, 100), m(1, 8), m(2, 100), m(3, 8), f(0), f(2), m(4, 150), f(4), f(3), f(1)]


def test_footprint_and_jw_measures_by_hand(hk, tmp_path):
    t = write_hkb(tmp_path / "peaks.hkb", PEAKS)
    res = run(t, "seqfit-first", binary=hk, series=len(PEAKS))
    b = res["arena"]["control_bytes"]
    g100, g8, g150 = (gross(n, res["engine"]["hk_align"]) for n in (100, 8, 150))
    rep = res["replay"]
    # Layout: m0 [b, +g100) m1 [.., +g8) m2 [.., +g100) m3 [.., +g8) = top; m4 (g150 > g100) on top.
    top = b + 2 * g100 + 2 * g8
    s = rep["series"]
    assert s["record"] == list(range(len(PEAKS)))
    assert s["live_requested"] == [100, 108, 208, 216, 116, 16, 166, 16, 8, 0]
    u100, u8, u150 = g100 - 8, g8 - 8, g150 - 8  # usable: the block less its tag
    assert s["live_granted"] == [u100, u100 + u8, 2 * u100 + u8, 2 * u100 + 2 * u8, u100 + 2 * u8,
                                 2 * u8, 2 * u8 + u150, 2 * u8, u8, 0]
    # The footprint falls when the highest block goes (f4, f3) and is 0 with nothing live.
    assert s["footprint"] == [b + g100, b + g100 + g8, b + 2 * g100 + g8, top, top, top, top + g150,
                              top, b + g100 + g8, 0]
    mem = rep["memory"]
    assert (mem["peak_live_requested"], mem["peak_live_record"]) == (216, 3)
    assert mem["peak_live_granted"] == 2 * u100 + 2 * u8
    assert (mem["peak_footprint"], mem["peak_footprint_record"]) == (top + g150, 6)
    assert mem["live_requested_at_peak_footprint"] == 166
    assert mem["end_footprint"] == 0
    fr = rep["fragmentation"]
    assert fr["jw4"] == pytest.approx((top + g150) / 216 - 1)
    assert fr["jw3"] == pytest.approx((top + g150) / 166 - 1)
    assert fr["jw2"] == pytest.approx(top / 216 - 1)
    assert fr["jw1"] == pytest.approx(sum(s["footprint"]) / sum(s["live_requested"]) - 1)
    assert rep["failures"]["total"] == 0
    assert rep["errors"]["corrupt_blocks"] == 0 and rep["errors"]["check"] == 0


# m0 100 | m1 200 | m2 50 | f1 | m3 300: m3 does not fit m1's hole and goes on
# top, which is the peak-live moment.
HOLE = [m(0, 100), m(1, 200), m(2, 50), f(1), m(3, 300), f(0), c(4, 4, 8)]


def test_breakdown_at_peak_live_by_hand(hk, tmp_path):
    t = write_hkb(tmp_path / "hole.hkb", HOLE)
    res = run(t, "seqfit-first", binary=hk, heapmap=len(HOLE))
    b = res["arena"]["control_bytes"]
    g = {n: gross(n, res["engine"]["hk_align"]) for n in (100, 200, 50, 300, 32)}
    assert g[300] > g[200] and g[100] + g[200] - g[32] >= 32
    at = res["replay"]["at_peak_live"]
    # m0 [b, +g100) hole [.., +g200) m2 [.., +g50) m3 [.., +g300)
    footprint = b + g[100] + g[200] + g[50] + g[300]
    assert at["record"] == 4
    assert at["requested"] == 450
    assert at["granted"] == g[100] + g[50] + g[300] - 3 * 8
    assert at["internal"] == at["granted"] - 450
    assert at["footprint"] == footprint
    assert at["external"] == g[200]
    assert at["free_blocks_below_footprint"] == 1
    assert at["largest_free_below_footprint"] == g[200]
    # The rest is the control block and three 8-byte tags.
    assert at["metadata"] == b + 3 * 8
    assert at["requested"] + at["internal"] + at["external"] + at["metadata"] == at["footprint"]
    assert res["replay"]["fragmentation"]["jw2"] == pytest.approx(footprint / 450 - 1)
    # Heap map after the last record: f0 merged m0 into the hole, then c4 (32 bytes) took its
    # bottom and split off the rest, still free below m2.
    snaps = res["replay"]["heapmap"]["snapshots"]
    assert [sn["record"] for sn in snaps] == list(range(len(HOLE)))
    hole = g[100] + g[200]
    last = snaps[-1]["blocks"]
    assert last[:4] == [[b, g[32], 1], [b + g[32], hole - g[32], 0], [b + hole, g[50], 1],
                        [b + hole + g[50], g[300], 1]]
    assert last[4][0] == footprint and last[4][2] == 0
    assert snaps[0]["blocks"][0] == [b, g[100], 1]
    assert res["arena"]["size"] == 65536  # max(64 KiB, 4 x 450), the documented default


# --------------------------------------------------------------------------
# The footprint wherever an allocator places its blocks (docs/metrics.md): the
# fresh heap's blocks are the pieces; F = control data + each piece up to its
# highest live block end.

def fresh_pieces(hk, tmp_path, alloc, arena):
    """The fresh heap's block offsets: the heap map after one malloc(1) + free, which
    merges back (buddy, tagged heaps) or leaves every slot as it was (pools)."""
    t = write_hkb(tmp_path / "fresh.hkb", [m(0, 1), f(0)])
    res = run(t, alloc, binary=hk, arena=arena, heapmap=2)
    return [o for o, _, _ in res["replay"]["heapmap"]["snapshots"][-1]["blocks"]]


def by_definition(blocks, pieces, control):
    """(footprint, external) of one heap-map snapshot, from the walk alone."""
    def piece(off):
        return max(i for i, p in enumerate(pieces) if p <= off)
    top = {}
    for o, n, u in blocks:
        if u:
            i = piece(o)
            top[i] = max(top.get(i, 0), o + n)
    if not top:
        return 0, 0
    external = sum(n for o, n, u in blocks if not u and o < top.get(piece(o), 0))
    return control + sum(t - pieces[i] for i, t in top.items()), external


def check_footprints(res, recs, pieces):
    """Every record's footprint (series) and the peak-live breakdown agree with the heap maps."""
    rep = res["replay"]
    control = res["arena"]["control_bytes"]
    assert control == pieces[0]
    snaps = rep["heapmap"]["snapshots"]
    assert [sn["record"] for sn in snaps] == list(range(len(recs)))
    got = [by_definition(sn["blocks"], pieces, control) for sn in snaps]
    assert rep["series"]["footprint"] == [fp for fp, _ in got]
    at = rep["at_peak_live"]
    assert (at["footprint"], at["external"]) == got[at["record"]]
    assert at["requested"] + at["internal"] + at["external"] + at["metadata"] == at["footprint"]
    return got


# Buddy serves a request from the smallest free block that fits: in a 64 KiB
# arena (control bytes C, then top-level blocks of 32, 16, 8, 2, 1 KiB, 512 and
# 256 B: the pieces) two 100-byte requests share the 256-byte top-level block at
# the top (its 128-byte halves, the lower one first), 20,000 bytes take the
# 32 KiB block at the bottom.
BUDDY_TOP = [m(0, 100), m(1, 100), f(0), m(2, 20000), f(2), f(1)]


def test_footprint_of_buddy_counts_its_blocks_not_the_arena(hk, tmp_path):
    pieces = fresh_pieces(hk, tmp_path, "buddy", 65536)
    t = write_hkb(tmp_path / "top.hkb", BUDDY_TOP)
    res = run(t, "buddy", binary=hk, arena=65536, series=len(BUDDY_TOP), heapmap=len(BUDDY_TOP))
    c = res["arena"]["control_bytes"]
    assert 0 < c < 8192
    sizes = [b - a for a, b in zip(pieces, pieces[1:] + [65536])]
    assert sizes == [32768, 16384, 8192, 2048, 1024, 512, 256] and sum(sizes) == 65536 - c
    rep = res["replay"]
    # The arena's high-water mark was 65536 from the first record; now m0 counts the lower
    # half of the top piece, m1 the whole piece, m1 alone still does (m0's freed lower half
    # is inside it), m2 adds its 32 KiB piece.
    assert rep["series"]["footprint"] == [c + 128, c + 256, c + 256, c + 32768 + 256, c + 256, 0]
    got = check_footprints(res, BUDDY_TOP, pieces)
    assert got[2] == (c + 256, 128)
    mem = rep["memory"]
    assert (mem["peak_footprint"], mem["peak_footprint_record"]) == (c + 32768 + 256, 3)
    assert mem["peak_end"] == 65536
    at = rep["at_peak_live"]
    assert (at["record"], at["external"], at["internal"], at["metadata"]) == (3, 128, 28 + 12768, c)
    assert rep["fragmentation"]["jw4"] == pytest.approx((c + 32768 + 256) / 20100 - 1)


def test_footprint_of_buddy_small_blocks(hk, tmp_path):
    recs = [m(0, 100), m(1, 100), f(0), f(1)]
    t = write_hkb(tmp_path / "small.hkb", recs)
    res = run(t, "buddy", binary=hk, arena=65536, series=len(recs), heapmap=len(recs))
    c = res["arena"]["control_bytes"]
    check_footprints(res, recs, fresh_pieces(hk, tmp_path, "buddy", 65536))
    assert res["replay"]["memory"]["peak_footprint"] == c + 256
    assert res["replay"]["fragmentation"]["jw4"] == pytest.approx((c + 256) / 200 - 1)
    at = res["replay"]["at_peak_live"]
    assert (at["external"], at["internal"], at["metadata"]) == (0, 56, c)


# The pools carve their slots at creation: every slot is a piece, so a pool counts
# the slots that hold a live block (lfpool: 128 bytes each, no header).
POOLS = [m(0, 100), m(1, 10), m(2, 100), f(0), f(2), f(1)]


def test_footprint_of_pools(hk, tmp_path):
    t = write_hkb(tmp_path / "pools.hkb", POOLS)
    for alloc in ("poolset", "lfpool"):
        pieces = fresh_pieces(hk, tmp_path, alloc, 65536)
        res = run(t, alloc, binary=hk, arena=65536, series=len(POOLS), heapmap=len(POOLS))
        c = res["arena"]["control_bytes"]
        got = check_footprints(res, POOLS, pieces)
        assert all(ext == 0 for _, ext in got)     # a free slot is never inside a used one
        if alloc == "lfpool":
            assert res["replay"]["series"]["footprint"] == [c + 128, c + 256, c + 384, c + 256,
                                                            c + 128, 0]


def test_footprint_of_a_tagged_heap_is_its_high_water_mark(hk, tmp_path):
    """One piece (the fresh heap's single free block): F is the end of the highest live block."""
    pieces = fresh_pieces(hk, tmp_path, "seqfit-first", 65536)
    assert len(pieces) == 1
    t = write_hkb(tmp_path / "peaks.hkb", PEAKS)
    res = run(t, "seqfit-first", binary=hk, arena=65536, series=len(PEAKS), heapmap=len(PEAKS))
    check_footprints(res, PEAKS, pieces)


def test_default_arena_is_four_times_peak(hk, tmp_path):
    t = write_hkb(tmp_path / "big.hkb", [m(0, 50000), m(1, 1000)])
    res = run(t, "tlsf", binary=hk)
    assert res["arena"]["default"] is True
    assert res["arena"]["size"] == (4 * 51000 + 63) // 64 * 64
    assert res["arena"]["alignment"] == 64


# --------------------------------------------------------------------------
# Failures

def test_failures_are_counted_and_followed(hk, tmp_path):
    recs = [
        m(0, 2000),      # fits
        m(1, 3000),      # fails: 2000 + 3000 > the 4 KiB arena
        r(2, 1, 100),    # realloc of a failed id: replayed as malloc(100), fits
        r(3, 0, 9000),   # fails: too big; the engine frees id 0's block, the trace never names it again
        f(3),            # skipped: id 3 never got memory
        m(4, 1500),      # fits in id 0's old block
        m(5, 9000),      # fails
        f(5),            # skipped
        f(2), f(4),
    ]
    t = write_hkb(tmp_path / "fail.hkb", recs)
    res = run(t, "seqfit-first", binary=hk, arena=4096)
    fl = res["replay"]["failures"]
    assert fl["total"] == 3
    assert (fl["malloc"], fl["realloc"], fl["calloc"], fl["aligned"]) == (2, 1, 0, 0)
    assert fl["first_failure_record"] == 1
    assert fl["skipped_frees"] == 3  # the realloc of id 1, f3, f5
    assert fl["failed_realloc_frees"] == 1
    assert res["replay"]["completed_records"] == len(recs)
    assert res["replay"]["errors"]["corrupt_blocks"] == 0
    assert res["replay"]["memory"]["end_live_requested"] == 0
    # Had everything succeeded the peak would be record 6 (100 + 9000 + 1500 + 9000 bytes); with
    # the failures it is record 2 (2000 + 100), and the breakdown follows the real peak.
    assert res["trace"]["peak_live_record"] == 6
    at = res["replay"]["at_peak_live"]
    assert at["record"] == res["replay"]["memory"]["peak_live_record"] == 2
    assert at["requested"] == 2100


def test_unsupported_alignment_counts_as_failure(hk, tmp_path):
    if "lfpool" not in engine.list_allocators(binary=hk):
        pytest.skip("lfpool has not landed")
    t = write_hkb(tmp_path / "al.hkb", [a(0, 64, 100), f(0)])
    fl = run(t, "lfpool", binary=hk)["replay"]["failures"]
    assert fl["aligned"] == 1 and fl["unsupported_aligned"] == 1 and fl["skipped_frees"] == 1


def test_arena_the_allocator_refuses(hk, tmp_path):
    t = write_hkb(tmp_path / "t.hkb", [m(0, 8)])
    with pytest.raises(EngineError, match="refused an arena of 16 bytes"):
        run(t, "tlsf", binary=hk, arena=16)


# --------------------------------------------------------------------------
# Pattern checks: only a broken allocator can trip them, so the test build
# carries three bump allocators (lab/engine/testalloc.c): a correct one, one
# whose every second block overlaps the previous, one whose realloc does not copy.

def test_pattern_corruption_detected(selftest, tmp_path):
    overlap = write_hkb(tmp_path / "overlap.hkb", [m(0, 64), m(1, 64), f(0), f(1)])
    res = run(overlap, "test-overlap", binary=selftest)
    # m1 got m0's block and wrote its own pattern there: m0's check before its free fails.
    assert res["replay"]["errors"]["corrupt_blocks"] == 1
    res = run(overlap, "test-bump", binary=selftest)
    assert res["replay"]["errors"]["corrupt_blocks"] == 0

    moved = write_hkb(tmp_path / "moved.hkb", [m(0, 100), r(1, 0, 200), f(1)])
    res = run(moved, "test-nocopy", binary=selftest)
    assert res["replay"]["errors"]["corrupt_blocks"] == 1  # the preserved prefix is garbage
    res = run(moved, "test-bump", binary=selftest)
    assert res["replay"]["errors"]["corrupt_blocks"] == 0


# --------------------------------------------------------------------------
# Size search

@pytest.mark.parametrize("alloc", ["seqfit-first", "tlsf", "buddy"])
def test_size_search_finds_a_tight_arena(hk, tmp_path, alloc):
    # buddy can only align to HK_BUDDY_BASE_ALIGN (64) in general: keep alignments at or below it.
    t = write_hkb(tmp_path / "s.hkb", generate(400, seed=7, target_live=40, max_align=64))
    res = engine.size_search(t, alloc, binary=hk)
    s = res["search"]
    assert s["reason"] is None
    n = s["min_arena"]
    assert n % 16 == 0 and n > s["peak_live_requested"]
    assert s["ratio"] == pytest.approx(n / s["peak_live_requested"])
    assert res["verify"]["failures"]["total"] == 0
    assert res["verify"]["errors"]["corrupt_blocks"] == 0
    assert run(t, alloc, binary=hk, arena=n)["replay"]["failures"]["total"] == 0
    try:
        below = run(t, alloc, binary=hk, arena=n - 16)["replay"]["failures"]["total"]
    except EngineError as e:
        assert "refused" in str(e)
    else:
        assert below > 0
    assert s["failed_at"] == n - 16


def test_size_search_needs_an_arena(hk, tmp_path):
    t = write_hkb(tmp_path / "t.hkb", [m(0, 8)])
    with pytest.raises(EngineError, match="size-search needs an allocator that lives in an arena"):
        engine.size_search(t, "system", binary=hk)


# --------------------------------------------------------------------------
# Malformed input

MALFORMED = [
    ("magic", lambda: hkb_bytes([m(0, 8)], magic=b"HKTRACX\0"), "bad magic"),
    ("version", lambda: hkb_bytes([m(0, 8)], version=2), "unsupported .hkb version 2"),
    ("short", lambda: b"HKTRACE\0", "truncated: 8 bytes, shorter than the 32-byte .hkb header"),
    ("length", lambda: hkb_bytes([m(0, 8)], count=2), "header says 2 records"),
    ("truncated", lambda: hkb_bytes([m(0, 8), f(0)])[:-3], "header says 2 records"),
    ("double free", lambda: hkb_bytes([m(0, 8), f(0), f(0)]), "record 2: free of id 0, which is not live"),
    ("order", lambda: hkb_bytes([m(1, 8), m(0, 8)]), "record 0: id 1 out of order"),
    ("op", lambda: hkb_bytes([m(0, 8), ("x", 0, 0, 0)]), "record 1: unknown op byte 0x78"),
    ("realloc", lambda: hkb_bytes([m(0, 8), f(0), r(1, 0, 16)]), "record 2: realloc of id 0, which is not live"),
    ("align", lambda: hkb_bytes([a(0, 24, 8)]), "record 0: alignment 24 is not a power of two"),
    ("realloc0", lambda: hkb_bytes([m(0, 8), r(1, 0, 0)]), "record 1: realloc to size 0"),
    ("ids", lambda: hkb_bytes([m(0, 8), f(0)], ids=2), "header says 2 ids but the records create 1"),
    ("idcount", lambda: hkb_bytes([m(0, 8)], ids=5), "header says 5 ids but there are only 1 records"),
]


@pytest.mark.parametrize("name,image,message", MALFORMED, ids=[x[0] for x in MALFORMED])
def test_malformed_trace_rejected(hk, tmp_path, name, image, message):
    t = tmp_path / "bad.hkb"
    t.write_bytes(image())
    with pytest.raises(EngineError) as e:
        run(t, "tlsf", binary=hk)
    assert str(t) in str(e.value)
    assert message in str(e.value)
    assert "\n" not in str(e.value)
    assert e.value.returncode == 2


def test_cli_usage_errors_exit_2(hk, tmp_path):
    t = write_hkb(tmp_path / "t.hkb", [m(0, 8)])
    for argv in (["--trace", str(t)], ["--trace", str(t), "--alloc", "tlsf", "--series", "x"],
                 ["--bogus"], ["--trace", str(tmp_path / "missing.hkb"), "--alloc", "tlsf"]):
        proc = subprocess.run([str(hk)] + argv, capture_output=True, text=True)
        assert proc.returncode == 2, argv
        assert proc.stderr.strip().splitlines()[-1].startswith("hk-replay: ")


def test_pad_enlarges_every_block_but_not_the_accounting(hk, tmp_path):
    # Two 64-byte blocks, then both freed: with --pad 16 each block costs 16 bytes more
    # (an 8-byte tag becomes the fits-cse3320 seed's 24-byte header).
    t = write_hkb(tmp_path / "t.hkb", [m(0, 64), m(1, 64), f(0), f(1)])
    plain = run(t, "seqfit-first", binary=hk)
    padded = run(t, "seqfit-first", binary=hk, pad=16)
    assert plain["allocator"]["pad"] == 0 and padded["allocator"]["pad"] == 16
    align = plain["engine"]["hk_align"]           # HK_ALIGN 8: 72 and 88 bytes a block
    assert plain["replay"]["counters"]["max_heap"] == 2 * gross(64, align)
    assert padded["replay"]["counters"]["max_heap"] == 2 * gross(64 + 16, align)
    for res in (plain, padded):
        assert res["replay"]["counters"]["requested"] == 128      # the trace's bytes, pad excluded
        assert res["replay"]["memory"]["peak_live_requested"] == 128
        assert res["replay"]["errors"]["corrupt_blocks"] == 0
    assert padded["replay"]["memory"]["peak_live_granted"] == 2 * (gross(64 + 16, align) - 8)
    # calloc, aligned_alloc and realloc are padded too; the engine still checks the blocks.
    t = write_hkb(tmp_path / "t2.hkb", [c(0, 8, 4), a(1, 64, 40), r(2, 0, 100), f(1), f(2)])
    padded = run(t, "seqfit-first", binary=hk, pad=16)["replay"]
    assert padded["failures"]["total"] == 0 and padded["errors"]["calloc_not_zero"] == 0
    assert padded["errors"]["corrupt_blocks"] == padded["errors"]["misaligned"] == 0
    assert padded["counters"]["requested"] == 32 + 40 + 100      # three hand-outs, each pad taken off


def test_pad_is_refused_by_the_size_search_and_checked(hk, tmp_path):
    t = write_hkb(tmp_path / "t.hkb", [m(0, 8)])
    for argv, msg in ((["--size-search", "--pad", "16"], "drop --pad"),
                      (["--pad", "-3"], "not a byte count")):
        proc = subprocess.run([str(hk), "--trace", str(t), "--alloc", "seqfit-first"] + argv,
                              capture_output=True, text=True)
        assert proc.returncode == 2 and msg in proc.stderr, argv


def test_heap_blocks_counts_the_top_below_the_max_heap(hk, tmp_path):
    # a, b, c used; a freed: one listed block, the top starts at the max heap (not counted).
    t = write_hkb(tmp_path / "t.hkb", [m(0, 64), m(1, 64), m(2, 64), f(0)])
    c = run(t, "seqfit-first", binary=hk)["replay"]["counters"]
    assert (c["free_blocks"], c["heap_blocks"]) == (1, 1)
    # c freed as well: it merges into the top, which now starts below the max heap.
    t = write_hkb(tmp_path / "t2.hkb", [m(0, 64), m(1, 64), m(2, 64), f(0), f(2)])
    c = run(t, "seqfit-first", binary=hk)["replay"]["counters"]
    assert (c["free_blocks"], c["heap_blocks"]) == (1, 2)
    # everything freed: one block, the top, as the seed's heap would be one free block.
    t = write_hkb(tmp_path / "t3.hkb", [m(0, 64), m(1, 64), m(2, 64), f(0), f(2), f(1)])
    c = run(t, "seqfit-first", binary=hk)["replay"]["counters"]
    assert (c["free_blocks"], c["heap_blocks"]) == (0, 1)


# --------------------------------------------------------------------------
# Determinism and the rest of the report

VOLATILE = {"timing", "engine_time"}


def stable(res):
    """The result without wall-clock figures."""
    out = {k: v for k, v in res.items() if k != "engine"}
    body = "replay" if "replay" in out else "verify"
    out[body] = {k: v for k, v in out[body].items() if k not in VOLATILE}
    return out


@pytest.mark.parametrize("alloc", ["tlsf", "seqfit-best", "buddy"])
def test_non_timing_metrics_are_deterministic(hk, tmp_path, alloc):
    t = write_generated(tmp_path / "g.hkb", 20000, seed=3, target_live=500)
    one = engine.replay(t, alloc, heapmap=4, binary=hk)
    two = engine.replay(t, alloc, heapmap=4, binary=hk)
    assert stable(one) == stable(two)
    assert one["replay"]["errors"]["corrupt_blocks"] == 0
    assert one["replay"]["errors"]["check"] == 0


def test_timing_report(hk, tmp_path):
    recs = generate(3000, seed=5, target_live=100)
    t = write_hkb(tmp_path / "t.hkb", recs)
    res = engine.replay(t, "tlsf", binary=hk)
    tm = res["replay"]["timing"]
    assert tm["noisy"] is True and "noisy host timings" in tm["note"]
    ops = res["trace"]["ops"]
    for kind in ("malloc", "calloc", "aligned", "realloc", "free"):
        st = tm[kind]
        assert st["count"] == ops[kind]  # no failures: every record made its own call
        if st["count"]:
            assert 0 <= st["min"] <= st["p50"] <= st["p99"] <= st["p999"] <= st["max"]
            assert st["stddev"] >= 0
    assert engine.replay(t, "tlsf", timing=False, binary=hk)["replay"]["timing"] is None


def test_series_sampling(hk, tmp_path):
    t = write_generated(tmp_path / "g.hkb", 1000, seed=9, target_live=50)
    s = engine.replay(t, "tlsf", series=10, timing=False, binary=hk)["replay"]["series"]
    assert s["samples"] == 10
    assert s["record"] == [99 + 100 * k for k in range(10)]
    for key in ("live_requested", "live_granted", "footprint", "free_bytes", "largest_free", "free_blocks"):
        assert len(s[key]) == 10
    assert all(lf <= fb for lf, fb in zip(s["largest_free"], s["free_bytes"]))
    assert engine.replay(t, "tlsf", series=0, timing=False, binary=hk)["replay"]["series"] is None


def test_heapmap_cap_merges_then_truncates(hk, tmp_path):
    recs = [m(i, 24) for i in range(50)] + [f(i) for i in range(0, 50, 2)]
    t = write_hkb(tmp_path / "t.hkb", recs)
    full = engine.replay(t, "seqfit-first", heapmap=1, timing=False, binary=hk)["replay"]["heapmap"]
    blocks = full["snapshots"][0]["blocks"]
    assert len(blocks) == 51 and not full["snapshots"][0]["merged"]
    assert all(blocks[i][0] + blocks[i][1] == blocks[i + 1][0] for i in range(50))
    capped = engine.replay(t, "seqfit-first", heapmap=1, heapmap_cap=10, timing=False, binary=hk)
    snap = capped["replay"]["heapmap"]["snapshots"][0]
    assert snap["walked_blocks"] == 51 and snap["merged"] and snap["truncated"]
    assert len(snap["blocks"]) == 10


def test_system_allocator(hk, tmp_path):
    t = write_generated(tmp_path / "g.hkb", 5000, seed=11, target_live=200)
    res = engine.replay(t, "system", binary=hk)
    assert res["arena"] is None
    rep = res["replay"]
    assert rep["failures"]["total"] == 0 and rep["errors"]["corrupt_blocks"] == 0
    assert rep["memory"]["peak_footprint"] is None
    assert rep["fragmentation"]["jw4"] is None
    assert rep["series"]["footprint"] is None
    assert rep["memory"]["peak_live_requested"] == res["trace"]["peak_live_requested"]
    assert rep["at_peak_live"]["external"] is None
    assert rep["at_peak_live"]["granted"] >= rep["at_peak_live"]["requested"]


def test_text_traces_are_converted(hk, tmp_path):
    trace = pytest.importorskip("heapkit.trace")
    recs = generate(500, seed=2, target_live=30)
    hkb = write_hkb(tmp_path / "t.hkb", recs)
    loaded = trace.Trace.load(hkb)
    loaded.save(tmp_path / "t.hkt.gz")
    a_ = engine.replay(hkb, "tlsf", timing=False, binary=hk)
    b_ = engine.replay(tmp_path / "t.hkt.gz", "tlsf", timing=False, binary=hk)
    c_ = engine.replay(loaded, "tlsf", timing=False, binary=hk)
    for other in (b_, c_):
        assert stable(a_)["replay"] == stable(other)["replay"]
        assert a_["trace"]["ops"] == other["trace"]["ops"]


def test_find_binary_honours_env(monkeypatch, tmp_path):
    monkeypatch.setenv(engine.ENV_BINARY, str(tmp_path / "nope"))
    with pytest.raises(EngineError, match="no such file"):
        engine.find_binary()


def test_missing_peers_says_what_brings_them():
    msg = engine.missing_peers(["o1heap", "umm"])
    assert "\n" not in msg and msg.startswith("o1heap, umm: peer allocator(s)")
    assert "install cargo, then rebuild (make build)" in msg   # the tests run from a checkout
    assert set(engine.PEERS) >= {"freertos-heap4", "o1heap", "umm", "tlsf-conte"}


# --------------------------------------------------------------------------
# Performance: a million records against tlsf, timing and all bookkeeping on

@pytest.mark.slow
def test_million_records_under_half_a_second(hk, tmp_path):
    t = write_generated(tmp_path / "m.hkb", 1_000_000, seed=1, target_live=5000)
    res = engine.replay(t, "tlsf", binary=hk)
    rep = res["replay"]
    assert rep["completed_records"] == 1_000_000
    assert rep["failures"]["total"] == 0 and rep["errors"]["corrupt_blocks"] == 0
    cpu = rep["engine_time"]["replay_cpu_s"]
    print(f"\n1M records on tlsf: replay {rep['engine_time']['replay_s']:.3f} s wall, {cpu:.3f} s CPU; "
          f"whole engine {res['engine']['total_cpu_s']:.3f} s CPU")
    # CPU time: the wall clock of a shared 2-core host says more about the neighbours.
    assert cpu < 0.5


@pytest.mark.parametrize("name", sorted(engine.PRELOADED))
def test_preloaded_allocators_run_as_system_under_ld_preload(hk, tmp_path, name):
    if engine.preload_library(name) is None:
        pytest.skip(f"lib{name} is not installed (make test installs it)")
    if engine._sanitized(str(hk)):
        assert name not in engine.list_allocators(binary=hk)
        with pytest.raises(EngineError, match="AddressSanitizer"):
            engine.replay(write_hkb(tmp_path / "t.hkb", [m(0, 1)]), name, binary=hk)
        return
    assert name in engine.list_allocators(binary=hk)
    trace = write_hkb(tmp_path / "t.hkb", [m(0, 100), m(1, 5000), f(0), r(2, 1, 9000), f(2)])
    res = engine.replay(trace, name, binary=hk)
    assert res["allocator"]["name"] == "system"
    assert name in res["engine"]["ld_preload"]
    assert res["replay"]["failures"]["total"] == 0
    assert res["replay"]["errors"]["corrupt_blocks"] == 0


@pytest.mark.parametrize("alloc", ["tlsf", "seqfit-best", "buddy"])
def test_placements_and_the_gross_relation(hk, tmp_path, alloc):
    """--placements: each id's payload offset and usable bytes; with heapmap.gross they give the
    extent of every used block the walks saw (reallocs, callocs and aligned allocations included)."""
    import numpy as np
    t = write_generated(tmp_path / "g.hkb", 4000, seed=11, target_live=300)
    where = tmp_path / "placements"
    res = engine.replay(t, alloc, heapmap=40, heapmap_owners=True, placements=where, timing=False, binary=hk)
    place = np.fromfile(where, "<i8").reshape(-1, 2)
    assert len(place) == res["trace"]["ids"]
    hm = res["replay"]["heapmap"]
    head, tail = hm["gross"]["head"], hm["gross"]["tail"]
    seen = 0
    for snap in hm["snapshots"]:
        for (off, size, used), owner in zip(snap["blocks"], snap["owners"]):
            if used and owner is not None:
                assert (off, size) == (place[owner, 0] - head, place[owner, 1] + head + tail)
                seen += 1
    assert seen > 1000
    # A failed allocation is never placed.
    small = engine.replay(t, alloc, arena=16384, placements=where, timing=False, binary=hk)
    assert small["replay"]["failures"]["total"] > 0
    assert (np.fromfile(where, "<i8").reshape(-1, 2)[:, 0] == -1).sum() >= small["replay"]["failures"]["total"]


def test_placements_needs_a_replay(hk, tmp_path):
    t = write_generated(tmp_path / "g.hkb", 100, seed=1, target_live=10)
    proc = subprocess.run([str(hk), "--trace", str(t), "--alloc", "tlsf", "--size-search", "--placements",
                           str(tmp_path / "p")], capture_output=True, text=True)
    assert proc.returncode == 2 and "--placements needs a replay" in proc.stderr
