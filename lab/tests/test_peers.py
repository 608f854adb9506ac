# SPDX-License-Identifier: MIT
"""The peer allocators of hk-replay (lab/engine/peers/): FreeRTOS heap_2, heap_4
and heap_5, o1heap and umm_malloc, built from sources fetched from crates.io
at configure time. Every test skips when its peer is not in the engine (the
fetch failed or HEAPKIT_LAB_PEERS is OFF).

The hand-computed facts use heap_4 on x86-64: first fit over an
address-ordered free list; every block starts with a 16-byte header
{pxNextFreeBlock, xBlockSize} and its size (header included) is rounded up
to portBYTE_ALIGNMENT = 8; a free block is split when more than 32 bytes
(two headers) would remain; a 16-byte end marker sits at the top of the heap.
The engine's arena is 64-byte aligned, so the first block starts at offset 0.

HEAPKIT_REPLAY runs the tests against another build; otherwise build/ is
brought up to date.
"""

from __future__ import annotations

import os
import random
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from heapkit import engine  # noqa: E402
from heapkit.engine import EngineError  # noqa: E402
from helpers import c, f, m, r, write_hkb  # noqa: E402

PEERS = ["freertos-heap2", "freertos-heap4", "freertos-heap5", "o1heap", "umm"]
FREERTOS_HEADER = 16
UMM_MAX_HEAP = 32768 * 8


def generate(n, seed, target_live=60, max_size=600):
    """A random valid trace of malloc, calloc, realloc and free (no aligned
    requests: none of the peers but o1heap has an aligned_alloc)."""
    rnd = random.Random(seed)
    live, out, next_id = [], [], 0
    for _ in range(n):
        if not live or rnd.random() < 0.5 + (target_live - len(live)) / (2.0 * target_live):
            u = rnd.random()
            if u < 0.15 and live:
                j = rnd.randrange(len(live))
                out.append(r(next_id, live[j], rnd.randint(1, max_size)))
                live[j] = next_id
            elif u < 0.25:
                out.append(c(next_id, rnd.randint(1, 8), rnd.randint(1, 40)))
                live.append(next_id)
            else:
                out.append(m(next_id, rnd.randint(0, max_size)))
                live.append(next_id)
            next_id += 1
        else:
            out.append(f(live.pop(rnd.randrange(len(live)))))
    return out


@pytest.fixture(scope="module")
def hk():
    """The current hk-replay (built or brought up to date), or $HEAPKIT_REPLAY."""
    return Path(os.environ["HEAPKIT_REPLAY"]) if os.environ.get("HEAPKIT_REPLAY") else engine.build()


@pytest.fixture(scope="module")
def available(hk):
    return set(engine.list_allocators(binary=hk))


def need(available, peer):
    if peer not in available:
        pytest.skip(f"peer '{peer}' is not in this hk-replay (sources not fetched?)")


def run(trace, alloc, *, binary, **kw):
    kw.setdefault("timing", False)
    return engine.replay(trace, alloc, binary=binary, **kw)


def assert_clean(rep):
    err = rep["errors"]
    assert err["patterns_checked"]
    assert (err["corrupt_blocks"], err["calloc_not_zero"], err["misaligned"], err["bad_blocks"]) == (0, 0, 0, 0)
    assert err["misuse_reports"] == 0
    assert err["check"] == 0


def test_engine_peers_are_the_ones_python_names(hk):
    """engine.PEERS, which tells a missing peer from an unknown name, is the engine's peer list."""
    listed = {e["name"] for e in engine._run(["--list", "--json", "-"], binary=hk) if e["family"] == "peer"}
    assert listed <= set(engine.PEERS)
    if listed != set(engine.PEERS):
        pytest.skip(f"this hk-replay lacks {sorted(set(engine.PEERS) - listed)} (sources not fetched?)")


# --------------------------------------------------------------------------
# Every peer replays a generated trace cleanly

@pytest.mark.parametrize("peer", PEERS)
def test_peer_listed_as_peer_in_arena(hk, available, peer):
    need(available, peer)
    res = engine._run(["--list", "--json", "-"], binary=hk)
    entry = next(e for e in res if e["name"] == peer)
    assert entry == {"name": peer, "family": "peer", "in_arena": True}


@pytest.mark.parametrize("peer", PEERS)
@pytest.mark.parametrize("seed", [1, 2])
def test_generated_trace_replays_without_corruption(hk, available, peer, seed, tmp_path):
    need(available, peer)
    recs = generate(3000, seed)
    t = write_hkb(tmp_path / "gen.hkb", recs)
    res = run(t, peer, binary=hk, arena=64 * 1024, series=50, heapmap=5)
    rep = res["replay"]
    assert res["allocator"] == {"name": peer, "family": "peer", "in_arena": True, "pad": 0,
                                "second_region": 0}
    assert rep["completed_records"] == len(recs)
    assert rep["failures"]["total"] == 0
    assert_clean(rep)
    mem = rep["memory"]
    assert 0 < mem["peak_footprint"] <= 64 * 1024
    assert 0 < mem["capacity"] <= 64 * 1024
    # The series samples get_stats: free bytes never exceed the capacity, the largest free block the free bytes.
    s = rep["series"]
    for free, largest, nfree in zip(s["free_bytes"], s["largest_free"], s["free_blocks"]):
        assert 0 <= largest <= free <= mem["capacity"]
        assert (nfree == 0) == (free == 0)
    assert mem["min_ever_free"] <= min(s["free_bytes"])
    # The walk's heap maps lie inside the arena, in address order, without overlaps.
    for snap in rep["heapmap"]["snapshots"]:
        end = 0
        for off, size, used in snap["blocks"]:
            assert off >= end and size > 0 and used in (0, 1)
            end = off + size
        assert end <= 64 * 1024


@pytest.mark.parametrize("peer", PEERS)
def test_edge_requests(hk, available, peer, tmp_path):
    """malloc(0) gives a unique block, realloc(NULL) allocates, calloc is zeroed, realloc keeps
    the contents when growing and shrinking, a request larger than the arena fails cleanly."""
    need(available, peer)
    recs = [m(0, 0), m(1, 0), r(2, None, 40), r(3, None, 0), c(4, 10, 10), r(5, 4, 300), r(6, 5, 20),
            m(7, 1 << 30), f(0), f(1), f(2), f(3), f(6)]
    t = write_hkb(tmp_path / "edge.hkb", recs)
    rep = run(t, peer, binary=hk, arena=16 * 1024)["replay"]
    assert rep["failures"]["total"] == rep["failures"]["malloc"] == 1  # m7
    assert_clean(rep)
    assert rep["memory"]["end_live_blocks"] == 0


# --------------------------------------------------------------------------
# heap_4 placement, worked out by hand

def h4_gross(n):
    return (n + FREERTOS_HEADER + 7) // 8 * 8


# m0 100 -> [0, 120)     m1 50 -> [120, 192)      f0 -> hole [0, 120)
# m2 10 (gross 32) -> first fit into the hole at 0, split (88 > 32 remain): [0, 32)
# m3 80 (gross 96) -> does not fit the 88-byte rest: carved at 192 -> [192, 288)
H4 = [m(0, 100), m(1, 50), f(0), m(2, 10), m(3, 80), f(1), f(2), f(3)]


@pytest.mark.parametrize("peer", ["freertos-heap4", "freertos-heap5"])
def test_heap4_footprint_by_hand(hk, available, peer, tmp_path):
    need(available, peer)
    t = write_hkb(tmp_path / "h4.hkb", H4)
    res = run(t, peer, binary=hk, arena=4096, series=len(H4), heapmap=len(H4))
    assert res["arena"]["control_bytes"] == 0
    rep = res["replay"]
    g = {n: h4_gross(n) for n in (100, 50, 10, 80)}
    assert (g[100], g[50], g[10], g[80]) == (120, 72, 32, 96)
    s = rep["series"]
    # footprint = end of the highest live payload = block end
    assert s["footprint"] == [120, 192, 192, 192, 288, 288, 288, 0]
    assert s["live_granted"] == [104, 160, 56, 72, 152, 96, 80, 0]
    mem = rep["memory"]
    assert (mem["peak_footprint"], mem["peak_footprint_record"]) == (288, 4)
    # heap_4/5's capacity: the arena less the end marker.
    assert mem["capacity"] == 4096 - FREERTOS_HEADER
    # The walk after m3: used [0,32), free [32,120), used [120,192), used [192,288), free up to the marker.
    snap = next(sn for sn in rep["heapmap"]["snapshots"] if sn["record"] == 4)
    assert snap["blocks"][:4] == [[0, 32, 1], [32, 88, 0], [120, 72, 1], [192, 96, 1]]
    assert snap["blocks"][4] == [288, 4096 - FREERTOS_HEADER - 288, 0]
    at = rep["at_peak_live"]
    # peak live (record 1: 150 bytes requested): footprint 192, nothing free below it
    assert (at["record"], at["footprint"], at["external"], at["metadata"]) == (1, 192, 0, 192 - 160)
    assert_clean(rep)


def test_heap4_min_arena_by_hand(hk, available, tmp_path):
    """m 100 + m 50 need blocks of 120 and 72 bytes plus the 16-byte end marker: 208 bytes.
    At 192 the heap is a 176-byte block: after the 120-byte one, 56 bytes are left, too few."""
    need(available, "freertos-heap4")
    t = write_hkb(tmp_path / "two.hkb", [m(0, 100), m(1, 50), f(0), f(1)])
    res = engine.size_search(t, "freertos-heap4", binary=hk)
    assert res["search"]["min_arena"] == 208
    assert res["search"]["failed_at"] == 192
    assert res["search"]["nonmonotone"] is False
    assert res["verify"]["failures"]["total"] == 0
    assert res["verify"]["memory"]["peak_footprint"] == 192
    assert res["verify"]["memory"]["capacity"] == 208 - FREERTOS_HEADER


def test_heap2_does_not_coalesce(hk, available, tmp_path):
    """heap_2 keeps freed neighbours apart: two freed 64-byte-gross holes cannot take a 100-byte request,
    which heap_4 serves from the merged hole."""
    need(available, "freertos-heap2")
    need(available, "freertos-heap4")
    # gross(40) = 56; two adjacent 56-byte holes = 112 >= gross(90) = 112 only when merged.
    recs = [m(0, 40), m(1, 40), m(2, 8), f(0), f(1), m(3, 90)]
    t = write_hkb(tmp_path / "merge.hkb", recs)
    h2 = run(t, "freertos-heap2", binary=hk, arena=4096, series=len(recs))["replay"]
    h4 = run(t, "freertos-heap4", binary=hk, arena=4096, series=len(recs))["replay"]
    assert h4["memory"]["peak_footprint"] == 56 + 56 + 24  # m3 reuses [0, 112)
    assert h2["memory"]["peak_footprint"] == 56 + 56 + 24 + 112  # m3 goes above m2
    assert_clean(h2)
    assert_clean(h4)


# --------------------------------------------------------------------------
# Size search for every peer

@pytest.mark.parametrize("peer", PEERS)
def test_size_search(hk, available, peer, tmp_path):
    need(available, peer)
    recs = generate(800, 7, target_live=30, max_size=300)
    t = write_hkb(tmp_path / "search.hkb", recs)
    res = engine.size_search(t, peer, binary=hk)
    s = res["search"]
    assert s["min_arena"] is not None, s["reason"]
    assert s["min_arena"] >= s["peak_live_requested"]
    assert s["min_arena"] % 16 == 0
    assert s["failed_at"] == s["min_arena"] - 16
    v = res["verify"]
    assert v["failures"]["total"] == 0
    assert_clean(v)
    assert v["memory"]["peak_footprint"] <= s["min_arena"]
    # One granule less fails, as the search says.
    below = run(t, peer, binary=hk, arena=s["failed_at"], series=0)["replay"]
    assert below["failures"]["total"] > 0


def test_o1heap_instance_at_arena_start(hk, available, tmp_path):
    """o1heap puts its instance first (like heapkit) and hands out 32-byte aligned power-of-two fragments."""
    need(available, "o1heap")
    t = write_hkb(tmp_path / "o1.hkb", [m(0, 1), m(1, 32), m(2, 100), f(0), f(1), f(2)])
    res = run(t, "o1heap", binary=hk, arena=8192, heapmap=6)
    control = res["arena"]["control_bytes"]
    assert control > 0 and control % 32 == 0
    rep = res["replay"]
    # fragments: 64 (1 + 32 header), 64 (32 + 32), 256 (100 + 32 -> 256)
    assert rep["memory"]["peak_live_granted"] == 32 + 32 + 224
    assert rep["memory"]["peak_footprint"] == control + 64 + 64 + 256
    assert_clean(rep)


def test_umm_clamps_large_arenas(hk, available, tmp_path):
    """umm's 15-bit block indices cap its heap at 32768 blocks of 8 bytes: a larger arena is clamped."""
    need(available, "umm")
    t = write_hkb(tmp_path / "umm.hkb", [m(0, 200 * 1024), m(1, 100 * 1024), f(0)])
    rep = run(t, "umm", binary=hk, arena=1 << 20)["replay"]
    assert rep["memory"]["capacity"] == UMM_MAX_HEAP - 2 * 8
    assert rep["failures"]["total"] == 1  # the second block would need more than 256 KiB in all
    assert_clean(rep)
    small = run(t, "umm", binary=hk, arena=64 * 1024)["replay"]
    assert small["memory"]["capacity"] < 64 * 1024


def test_peers_refuse_tiny_arenas(hk, available, tmp_path):
    present = sorted(available & set(PEERS))
    if not present:
        pytest.skip("no peers in this hk-replay (sources not fetched?)")
    t = write_hkb(tmp_path / "one.hkb", [m(0, 8), f(0)])
    for peer in present:
        with pytest.raises(EngineError, match="refused an arena of 16 bytes"):
            run(t, peer, binary=hk, arena=16)


def test_heap5_second_region_by_hand(hk, available, tmp_path):
    """--second-region 1024 in a 4096-byte arena: heap_5 gets [0, 3072) and [3072, 4096), each
    ending with its own 16-byte marker. A block of 2,900 fills the first, one of 500 goes to
    the second, and one of 3,500 fits neither, although 4,064 bytes are free at the start."""
    need(available, "freertos-heap5")
    t = write_hkb(tmp_path / "two.hkb", [m(0, 2900), m(1, 500), f(0), f(1), m(2, 3500)])
    res = run(t, "freertos-heap5", binary=hk, arena=4096, second_region=1024, series=5, heapmap=5)
    rep = res["replay"]
    assert rep["memory"]["capacity"] == (3072 - FREERTOS_HEADER) + (1024 - FREERTOS_HEADER)
    snaps = {sn["record"]: sn["blocks"] for sn in rep["heapmap"]["snapshots"]}
    assert snaps[1] == [[0, 2920, 1], [2920, 3056 - 2920, 0], [3072, 520, 1], [3592, 4080 - 3592, 0]]
    # every block freed: one free block per region, never merged across the boundary
    assert snaps[3] == [[0, 3056, 0], [3072, 1008, 0]]
    assert rep["failures"]["total"] == 1 and rep["failures"]["first_failure_record"] == 4
    assert res["allocator"]["second_region"] == 1024
    assert rep["series"]["free_blocks"][3] == 2   # heap_5's own count, less its inner end marker
    assert_clean(rep)
    with pytest.raises(EngineError, match="only freertos-heap5 takes several regions"):
        run(t, "tlsf", binary=hk, second_region=1024)
    with pytest.raises(EngineError, match="too small"):
        run(t, "freertos-heap5", binary=hk, arena=1024, second_region=1024)
