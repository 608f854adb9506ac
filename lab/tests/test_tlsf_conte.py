# SPDX-License-Identifier: MIT
"""The "tlsf-conte" peer of hk-replay (lab/engine/peers/tlsf_conte.c): Conte's
TLSF 3.1 from the lvgl-sys crate 0.6.2, fetched at configure time. The
tests skip when the peer is not in the engine (the fetch failed or
HEAPKIT_LAB_PEERS is OFF). They mirror test_peers.py's, plus facts worked
out by hand for x86-64 (64-bit: ALIGN_SIZE 8, one size word of overhead per
used block, minimum block 24 bytes; the shim's LV_MEM_SIZE of 1 GiB gives
23 first-level lists of 32 second-level lists, a control_t of 6016 bytes).

HEAPKIT_REPLAY runs the tests against another build; otherwise build/ is
brought up to date.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from heapkit import engine  # noqa: E402
from heapkit.engine import EngineError  # noqa: E402
from helpers import a, c, f, m, r, write_hkb  # noqa: E402
from test_peers import assert_clean, generate, run  # noqa: E402

PEER = "tlsf-conte"
WORD = 8                 # the size word of a used block (size_t)
CONTROL = 6016           # sizeof(control_t): 32 + 4 + 23 * 4 (+ padding) + 23 * 32 * 8


def gross(n):
    """Bytes a request of n takes: payload rounded up to 8, at least 24, plus the size word."""
    return max((n + 7) // 8 * 8, 24) + WORD


@pytest.fixture(scope="module")
def hk():
    binary = Path(os.environ["HEAPKIT_REPLAY"]) if os.environ.get("HEAPKIT_REPLAY") else engine.build()
    if PEER not in set(engine.list_allocators(binary=binary)):
        pytest.skip(f"peer '{PEER}' is not in this hk-replay (sources not fetched?)")
    return binary


def test_listed_as_peer_in_arena(hk):
    res = engine._run(["--list", "--json", "-"], binary=hk)
    assert next(e for e in res if e["name"] == PEER) == {"name": PEER, "family": "peer", "in_arena": True}


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_generated_trace_replays_without_corruption(hk, seed, tmp_path):
    recs = generate(3000, seed)
    t = write_hkb(tmp_path / "gen.hkb", recs)
    res = run(t, PEER, binary=hk, arena=64 * 1024, series=50, heapmap=5)
    rep = res["replay"]
    assert rep["completed_records"] == len(recs)
    assert rep["failures"]["total"] == 0
    assert_clean(rep)
    mem = rep["memory"]
    assert 0 < mem["peak_footprint"] <= 64 * 1024
    s = rep["series"]
    for free, largest, nfree in zip(s["free_bytes"], s["largest_free"], s["free_blocks"]):
        assert 0 <= largest <= free <= mem["capacity"]
        assert (nfree == 0) == (free == 0)
    assert mem["min_ever_free"] <= min(s["free_bytes"])
    for snap in rep["heapmap"]["snapshots"]:
        end = 0
        for off, size, used in snap["blocks"]:
            assert off >= end and size > 0 and used in (0, 1)
            end = off + size
        assert end <= 64 * 1024


def test_edge_requests(hk, tmp_path):
    """malloc(0) gives a unique block, realloc(NULL) allocates, calloc is zeroed, realloc keeps
    the contents when growing and shrinking, requests larger than the arena (or than any size
    TLSF can index) fail cleanly, aligned requests are honoured."""
    recs = [m(0, 0), m(1, 0), r(2, None, 40), r(3, None, 0), c(4, 10, 10), r(5, 4, 300), r(6, 5, 20),
            m(7, 1 << 30), m(8, 0xFFFFFFFF), a(9, 64, 100), a(10, 4096, 10), f(0), f(1), f(2), f(3),
            f(6), f(9), f(10)]
    t = write_hkb(tmp_path / "edge.hkb", recs)
    rep = run(t, PEER, binary=hk, arena=16 * 1024)["replay"]
    assert rep["failures"]["total"] == rep["failures"]["malloc"] == 2  # m7, m8
    assert_clean(rep)
    assert rep["memory"]["end_live_blocks"] == 0


def test_layout_by_hand(hk, tmp_path):
    """The control block first, then blocks of align8(n) (at least 24) + one size word each, in
    address order from the start of the pool; a freed block merges back into the free rest."""
    recs = [m(0, 1), m(1, 100), m(2, 24), f(1), m(3, 50), f(0), f(2), f(3)]
    t = write_hkb(tmp_path / "layout.hkb", recs)
    res = run(t, PEER, binary=hk, arena=16384, series=len(recs), heapmap=len(recs))
    assert res["arena"]["control_bytes"] == CONTROL
    rep = res["replay"]
    g0, g1, g2, g3 = gross(1), gross(100), gross(24), gross(50)
    assert (g0, g1, g2, g3) == (32, 112, 32, 64)
    s = rep["series"]
    assert s["live_granted"][:3] == [24, 24 + 104, 24 + 104 + 24]
    # m3 (64 bytes gross) goes into the 112-byte hole m1 left (a split: 48 bytes stay free there).
    snap = next(sn for sn in rep["heapmap"]["snapshots"] if sn["record"] == 4)
    assert snap["blocks"][:4] == [[CONTROL, 32, 1], [CONTROL + 32, 64, 1], [CONTROL + 96, 48, 0],
                                  [CONTROL + 144, 32, 1]]
    mem = rep["memory"]
    assert mem["peak_footprint"] == CONTROL + g0 + g1 + g2
    # The pool: the arena less the control block and two size words (the first block's
    # prev_phys_block lies outside the pool, the sentinel's size word ends it).
    assert mem["capacity"] == (16384 - CONTROL - 2 * WORD) // 8 * 8 + WORD
    assert_clean(rep)


def test_size_search(hk, tmp_path):
    recs = generate(800, 7, target_live=30, max_size=300)
    t = write_hkb(tmp_path / "search.hkb", recs)
    res = engine.size_search(t, PEER, binary=hk)
    s = res["search"]
    assert s["min_arena"] is not None, s["reason"]
    assert s["min_arena"] >= s["peak_live_requested"] + CONTROL
    v = res["verify"]
    assert v["failures"]["total"] == 0
    assert_clean(v)
    below = run(t, PEER, binary=hk, arena=s["failed_at"], series=0)["replay"]
    assert below["failures"]["total"] > 0


def test_refuses_tiny_arenas(hk, tmp_path):
    t = write_hkb(tmp_path / "one.hkb", [m(0, 8), f(0)])
    with pytest.raises(EngineError, match="refused an arena of 16 bytes"):
        run(t, PEER, binary=hk, arena=16)
    with pytest.raises(EngineError, match=f"refused an arena of {CONTROL} bytes"):
        run(t, PEER, binary=hk, arena=CONTROL)
    ok = run(t, PEER, binary=hk, arena=CONTROL + 64)["replay"]
    assert ok["failures"]["total"] == 0
    assert_clean(ok)
