# SPDX-License-Identifier: MIT
"""The fctma-pools seed's stand-ins on hand-made traces: FCTMA is "pool", one pool whose
block is the trace's largest request (not poolset's size classes), and the seed's
SimpleDMA is heapkit's bump allocator (never reuses; free reclaims nothing)."""

from __future__ import annotations

import os
import struct
from pathlib import Path

import pytest

from heapkit import engine

from helpers import f, m, write_hkb


@pytest.fixture(scope="module")
def hk():
    return Path(os.environ["HEAPKIT_REPLAY"]) if os.environ.get("HEAPKIT_REPLAY") else engine.build()


def replay(trace, alloc, hk, **kw):
    return engine.replay(trace, alloc, binary=hk, timing=False, **kw)["replay"]


def block_of(request: int, hk_align: int, header: int) -> int:
    """What a pool block sized to *request* grants: header and payload in whole HK_ALIGN units."""
    return -(-(request + header) // hk_align) * hk_align - header


ITC_LIKE = [m(0, 127), m(1, 127), m(2, 127), f(1), m(3, 127), f(0), f(2), f(3)]


@pytest.mark.parametrize("size", [127, 100, 200, 1000])
def test_pool_is_one_pool_sized_to_the_block(hk, tmp_path, size):
    t = write_hkb(tmp_path / "t.hkb", [m(0, size), m(1, size), m(2, size), f(1), f(0), f(2)])
    res = engine.replay(t, "pool", binary=hk, timing=False)
    at, align = res["replay"]["at_peak_live"], res["engine"]["hk_align"]
    per_block = at["granted"] / at["blocks"]
    assert at["blocks"] == 3 and at["requested"] == 3 * size
    # The block is the request in whole alignment units with the two-word header, not a size class.
    assert per_block == block_of(size, align, 2 * struct.calcsize("P"))
    assert per_block - size < align
    if size in (127, 200):   # poolset hands these its 256-byte class
        classes = replay(t, "poolset", hk)["at_peak_live"]
        assert classes["granted"] / classes["blocks"] == 256


def test_pool_block_is_the_largest_request(hk, tmp_path):
    t = write_hkb(tmp_path / "mixed.hkb", [m(0, 30), m(1, 127), m(2, 64), f(0), f(1), f(2)])
    at = replay(t, "pool", hk)["at_peak_live"]
    assert at["blocks"] == 3 and at["granted"] % 3 == 0
    assert at["granted"] // 3 >= 127 and at["granted"] // 3 < 127 + 16


def test_pool_reuses_freed_blocks(hk, tmp_path):
    recs = [x for i in range(400) for x in (m(i, 127), f(i))]
    t = write_hkb(tmp_path / "churn.hkb", recs)
    r = replay(t, "pool", hk, arena=16384, series=len(recs))
    assert r["failures"]["total"] == 0
    assert max(r["series"]["footprint"]) == r["series"]["footprint"][0]


def test_bump_as_simpledma_never_reuses(hk, tmp_path):
    t = write_hkb(tmp_path / "itc.hkb", ITC_LIKE)
    s = replay(t, "bump", hk, series=len(ITC_LIKE))["series"]["footprint"]
    # m3 after f1 goes above m2: the freed block is never handed out again.
    assert s[4] > s[3] == s[2] > s[1] > s[0]
    assert s[4] - s[2] == s[2] - s[1]


def test_bump_as_simpledma_free_reclaims_nothing(hk, tmp_path):
    recs = [x for i in range(200) for x in (m(i, 1000), f(i))]
    t = write_hkb(tmp_path / "churn.hkb", recs)
    bump = replay(t, "bump", hk, arena=65536)["failures"]
    pool = replay(t, "pool", hk, arena=65536)["failures"]
    # At most one block is live, yet the bump runs out after arena / block allocations.
    assert pool["total"] == 0
    assert 0 < bump["total"] < 200 and bump["first_failure_record"] <= 2 * 65536 // 1000


@pytest.mark.target
def test_target_pool_is_sized_to_the_trace():
    """The target driver's "pool" takes its block from the trace as the engine's does: 1000-byte
    requests all succeed (a pool of 128-byte blocks would fail them), at a constant count."""
    from heapkit import target
    from heapkit.trace import TraceBuilder
    if target.missing_tools():
        pytest.skip(f"missing: {', '.join(target.missing_tools())}")
    b = TraceBuilder()
    ids = [b.malloc(1000) for _ in range(40)]
    for i in ids:
        b.free(i)
    data = target.bench([("big", b.build("big"))], ["pool"], opts=["-O2"])
    run = next(r for r in data["runs"] if r["allocator"] == "pool")
    assert run["result"]["failures"]["total"] == 0
    for kind in ("malloc", "free"):
        st = run["stats"][kind]
        assert st["count"] == 40 and st["min"] == st["max"] and st["sd"] == 0
