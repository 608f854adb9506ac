# SPDX-License-Identifier: MIT
"""Workload generators: determinism and each workload's documented invariants."""

import numpy as np
import pytest

from heapkit.errors import HeapkitError
from heapkit.trace import OP_FREE, OP_MALLOC, live_counts
from heapkit.workloads import (CSE_GROW, CSE_LARGE, WORKLOADS, Rng, generate,
                               kth_level_bounds, robson_sizes)


@pytest.fixture(scope="module")
def default_traces():
    return {name: generate(name, seed=1) for name in WORKLOADS}


# -- determinism ----------------------------------------------------------

@pytest.mark.parametrize("name", list(WORKLOADS))
def test_same_seed_same_bytes(name, default_traces):
    assert generate(name, seed=1).to_bytes() == default_traces[name].to_bytes()


@pytest.mark.parametrize("name", list(WORKLOADS))
def test_different_seed_differs(name, default_traces):
    assert generate(name, seed=2).to_bytes() != default_traces[name].to_bytes()


@pytest.mark.parametrize("name", list(WORKLOADS))
def test_default_sizes(name, default_traces):
    n = len(default_traces[name])
    assert 5_000 <= n <= 400_000, n


def test_rng_is_splitmix64():
    # Reference values of SplitMix64 from state 0 (Vigna's splitmix64.c).
    r = Rng(0)
    assert [r.next64() for _ in range(3)] == [
        0xE220A8397B1DCDAF, 0x6E789E6AA1B965F4, 0x06C45D188009454F]
    r = Rng(7)
    xs = [r.below(10) for _ in range(1000)]
    assert min(xs) == 0 and max(xs) == 9


def test_unknown_parameter_is_an_error():
    with pytest.raises(HeapkitError, match="itc: unknown parameter 'bogus'"):
        generate("itc", bogus=1)
    with pytest.raises(HeapkitError, match="unknown workload 'nope'"):
        generate("nope")


def test_every_parameter_has_an_upper_bound():
    for w in WORKLOADS.values():
        assert set(w.maxima) == set(w.params()), w.name
        assert set(w.byte_params) <= set(w.params()), w.name
        for k, default in w.params().items():
            assert default <= w.maxima[k], (w.name, k)


def test_parameters_above_their_bound_are_refused_at_once():
    with pytest.raises(HeapkitError, match="itc: parameter producers is at most 256, "
                                           "not 1,000,000,000"):
        generate("itc", producers=10**9)


def test_no_generator_passes_the_allocation_cap(monkeypatch):
    import heapkit.workloads as w
    monkeypatch.setattr(w, "MAX_ALLOCS", 1000)
    with pytest.raises(HeapkitError, match="kth: more than 1,000 allocations"):
        generate("kth", allocs=1001)
    assert len(generate("kth", allocs=1000)) > 1000


# -- itc ------------------------------------------------------------------

def test_itc_invariants(default_traces):
    t = default_traces["itc"]
    rec = t.records
    alloc = rec["op"] == OP_MALLOC
    assert set(rec["op"].tolist()) == {OP_MALLOC, OP_FREE}
    assert set(rec["size"][alloc].tolist()) == {127}               # only 127-byte blocks
    assert sorted(set(rec["tid"].tolist())) == list(range(1, 21))  # 20 task ids
    assert set(rec["tid"][alloc].tolist()) == set(range(1, 11))    # producers allocate
    assert set(rec["tid"][~alloc].tolist()) == set(range(11, 21))  # consumers free
    live = live_counts(rec)
    assert 90 <= live.mean() <= 110                                # about 100 live blocks
    # producers work in bursts of 20 from the same task
    first = rec[:20]
    assert (first["op"] == OP_MALLOC).all() and len(set(first["tid"].tolist())) == 1
    # consumers free in FIFO order (pop_front)
    freed = rec["id"][~alloc]
    assert (np.diff(freed.astype(np.int64)) == 1).all()


def test_itc_backs_off_at_16k():
    # With no backoff producers would allocate without bound; with it, live
    # bytes drop back below 16 KB repeatedly.
    t = generate("itc", seed=3, duration=2000)
    live = live_counts(t.records) * 127
    assert live.max() < 16384 + 10 * 20 * 127
    assert (live < 16384).mean() > 0.5


def test_itc_lcg_matches_paper():
    # seed 1 -> first LCG state 1103515245 + 12345; the first consumer wait
    # is (state >> 16) % MaxTime.  A single producer/consumer pair exposes it.
    t = generate("itc", producers=1, consumers=1, burst=1, pop=1, duration=3,
                 max_time_producer=1, max_time_consumer=1000)
    s = (1 * 1103515245 + 12345) & 0xFFFFFFFF
    assert (s >> 16) % 1000 > 2                 # the consumer sleeps past the end
    ops = [chr(o) for o in t.records["op"].tolist()]
    # tick 0: producer allocs 1, consumer frees it; ticks 1, 2: producer allocs
    assert ops == ["m", "f", "m", "m"]


# -- kth ------------------------------------------------------------------

def test_kth_eight_levels(default_traces):
    t = default_traces["kth"]
    sizes = t.records["size"][t.records["op"] == OP_MALLOC].astype(np.int64)
    bounds = kth_level_bounds(24)
    assert bounds[0] == (1, 8) and bounds[7] == (2025, 4072)
    levels = np.full(len(sizes), -1)
    for k, (lo, hi) in enumerate(bounds):
        levels[(sizes >= lo) & (sizes <= hi)] = k
    assert (levels >= 0).all()                              # every size is on one level
    share = np.bincount(levels, minlength=8) / len(sizes)
    assert len(share) == 8 and np.all(np.abs(share - 1 / 8) < 0.01)   # evenly spread
    assert sizes.max() <= 4096 - 24


def test_kth_frees_only_when_slot_taken():
    t = generate("kth", allocs=2000, slots=100)
    rec = t.records
    # every free is immediately followed by the malloc that took its slot
    frees = np.flatnonzero(rec["op"] == OP_FREE)
    assert (rec["op"][frees + 1] == OP_MALLOC).all()
    assert t.stats().live_at_end <= 100
    # frees get more frequent as the buffer fills
    half = len(rec) // 2
    assert (rec["op"][half:] == OP_FREE).mean() > (rec["op"][:half] == OP_FREE).mean()


# -- cse3320 --------------------------------------------------------------

def test_cse3320_single_round_matches_paper_totals():
    t = generate("cse3320", rounds=1, shuffle=0)
    st = t.stats()
    assert st.by_op["malloc"] == 32                      # reuses + grows in the paper
    assert st.total_requested == 20296                   # "Requested" in the paper
    assert st.events == 64 and st.live_at_end == 0
    rec = t.records
    assert rec["size"][30] == 208                        # step 3 starts after 20 + 10 events
    text = t.to_text().splitlines()[1:]
    assert text[:4] == ["m 0 480", "m 1 64", "m 2 528", "m 3 96"]      # step 1
    assert text[20:30] == [f"f {i}" for i in range(0, 20, 2)]           # step 2
    assert text[30:41] == [f"m {20 + i} {s}" for i, s in
                           enumerate([208] + [200 + 40 * j for j in range(1, 10)] + [CSE_GROW])]
    assert text[60] == f"m 31 {CSE_LARGE}"                               # step 5
    # 24-byte headers: 22 grows of request + header = the paper's first-fit max heap
    step1 = sum(int(rec["size"][i]) for i in range(20))
    assert step1 + CSE_GROW + CSE_LARGE + 22 * 24 == 17016


def test_cse3320_shuffle_keeps_structure(default_traces):
    t = default_traces["cse3320"]
    st = t.stats()
    assert st.by_op["malloc"] == 32 * 500 and st.total_requested == 20296 * 500
    assert st.peak_live_bytes == 9040            # all of step 1, whatever the order


# -- buddy-paper ------------------------------------------------------------

def test_buddy_paper_structure(default_traces):
    t = default_traces["buddy-paper"]
    ops = t.records["op"]
    assert (ops[:20] == OP_MALLOC).all() and (ops[20:40] == OP_FREE).all()   # 20 timed allocs
    assert t.stats().live_at_end == 0            # every round frees everything (merge check)
    assert t.stats().peak_live_bytes <= 65536 * 3 // 4 + 4096


# -- Wilson's phases ----------------------------------------------------------

def test_ramp_accumulates(default_traces):
    live = live_counts(default_traces["ramp"].records)
    q = len(live) // 4
    assert live[q] < live[2 * q] < live[3 * q] < live[-1]
    assert live.argmax() > 0.95 * len(live)


def test_peaks_build_then_free_most(default_traces):
    live = live_counts(default_traces["peak"].records)
    phase = 50000 // 10
    low = 0
    for k in range(1, 11):
        high = live[(k - 1) * phase:k * phase].max()
        after = live[k * phase - 300:k * phase + 300].min()
        # each peak frees most of what it built (5% survive, plus noise) ...
        assert (high - after) / (high - low) > 0.9
        # ... and the survivors form a slow ramp under the peaks
        assert after > low
        low = after


def test_plateau_holds_steady(default_traces):
    live = live_counts(default_traces["plateau"].records)
    tail = live[len(live) // 5:]
    assert abs(tail.mean() - 2000) < 100
    assert tail.max() - tail.min() < 200


# -- robson -----------------------------------------------------------------

@pytest.mark.parametrize("M,n,unit,overhead", [(262144, 64, 32, 8), (65536, 16, 16, 0),
                                               (10000, 8, 64, 16)])
def test_robson_peak_live_at_most_M(M, n, unit, overhead):
    t = generate("robson", M=M, n=n, unit=unit, overhead=overhead)
    st = t.stats()
    assert st.peak_live_bytes <= M
    sizes = robson_sizes(n, unit, overhead)
    assert set(t.records["size"][t.records["op"] == OP_MALLOC].tolist()) == set(sizes)
    assert (sizes[-1] + overhead) / (sizes[0] + overhead) == n


def test_robson_pins_windows():
    # After the last phase's allocations, the survivors of phase j sit at
    # allocation indexes (within phase j) that are multiples of 2**(K-j).
    n = 16
    t = generate("robson", M=8192, n=n, unit=32, overhead=0)
    rec = t.records
    sizes = robson_sizes(n, 32, 0)
    K = len(sizes) - 1
    alive = np.ones(t.n_ids, bool)
    alive[rec["id"][rec["op"] == OP_FREE]] = False
    alloc = rec[rec["op"] == OP_MALLOC]
    for j, s in enumerate(sizes[:-1]):
        ids = alloc["id"][alloc["size"] == s]
        idx = np.flatnonzero(alive[ids])
        assert len(idx) and (idx % (1 << (K - j)) == 0).all()


def test_robson_needs_power_of_two_ratio():
    with pytest.raises(HeapkitError, match="n must be a power of two"):
        generate("robson", n=12)
