# SPDX-License-Identifier: MIT
"""Every fctma-pools verdict on hand-made results (test_report.with_fctma: every number chosen
there), and the change of those numbers that flips it: no verdict holds or fails whatever the
measurements say."""

from __future__ import annotations

from typing import Callable

import pytest

from heapkit import render

from test_report import fctma_claim, hand_made, with_fctma

H, F = render.HOLDS, render.FAILS


def _target(data, build, alloc, kind):
    return next(r for r in data["extra"]["fctma_target"]["runs"]
                if (r["build"], r["allocator"]) == (build, alloc))["stats"][kind]


def _kernel(data, heap, kind=None):
    res = data["extra"]["itc_kernel"]["levels"]["-O2"][heap]
    return res[kind] if kind else res


def _checks(data, name):
    return data["extra"]["itc_kernel"]["checks"][name]


def _apl(data, alloc):
    return next(e for e in data["extra"]["itc_min"] if e["allocator"] == alloc)["result"]["replay"]["at_peak_live"]


FLIPS: list[tuple[str, str, Callable[[dict], None]]] = [
    # heap_4 396 per mille against 50 x the pool's (sd 0, floored at one instruction: 7.69) = 385
    ("heap_4's alloc() standard deviation", H,
     lambda d: _target(d, "-O0", "freertos-heap4", "malloc").update(sd=55.0)),
    ("FCTMA's free() standard deviation is practically zero", H,
     lambda d: _target(d, "-O0", "pool", "free").update(sd=0.5)),
    # sdma 260 / 130 = 2 and 292 / 104 = 2.8 times: far from 78 and 173
    ("SDMA's alloc() is about 78", F, lambda d: _target(d, "-O0", "sdma", "malloc").update(mean=6000.0)),
    ("SDMA's free() is about 173", F, lambda d: _target(d, "-O0", "sdma", "free").update(mean=10000.0)),
    ("SDMA's standard deviation is very low", H, lambda d: _target(d, "-O0", "sdma", "malloc").update(sd=5.0)),
    ("FCTMA is faster than any", H, lambda d: _target(d, "-O0", "tlsf", "free").update(mean=100.0)),
    # 4-byte link of 178 blocks as user data: 23,318 of 24,480 B = 4.7 %, within twice 3.11 %
    ("using the blocks' next pointer", H, lambda d: _kernel(d, "pool", "table3").update(peak_used=30000)),
    ("FCTMA's internal fragmentation is equal or comparable", H,
     lambda d: _apl(d, "pool").update(requested=1000)),
    ("SDMA has the highest internal fragmentation", H,   # every byte of sdma's requested: no fragmentation
     lambda d: _apl(d, "sdma").update(requested=_apl(d, "sdma")["footprint"] - _apl(d, "sdma")["external"])),
    ("the ITC application runs on FreeRTOS", H, lambda d: _kernel(d, "sdma", "free").update(count=2999)),
    # pool_sync 292 and 318 instructions against heap_4's 131.4 and 131.6
    ("FCTMA's alloc(), its mutex and semaphore included", F,
     lambda d: _kernel(d, "pool_sync", "alloc").update(mean=100.0)),
    ("FCTMA's free(), its mutex and semaphore included", F,
     lambda d: _kernel(d, "pool_sync", "free").update(mean=40.0)),
    ("the pool's mutex and semaphore make FCTMA safe", H, lambda d: _kernel(d, "pool_sync", "stress").update(overlaps=1)),
    ("the pool's mutex and semaphore make FCTMA safe", H,
     lambda d: _kernel(d, "pool_sync", "stress").update(free_after=478)),
    ("the pool's mutex and semaphore make FCTMA safe", H, lambda d: _checks(d, "itc_pool_race").update(status=0)),
    ("future work: an ISR-safe pool", H, lambda d: _checks(d, "isr_lfpool")["result"].update(twice=1)),
    ("future work: an ISR-safe pool", H, lambda d: _checks(d, "isr_lfpool")["result"].update(free_end=192)),
    ("future work: an ISR-safe pool", H, lambda d: _checks(d, "isr_lfpool")["result"].update(ops=999_999)),
    ("future work: an ISR-safe pool", H, lambda d: _checks(d, "isr_pool_race").update(status=0)),
]


@pytest.mark.parametrize("start,before,change", FLIPS, ids=[f"{s[:30]}-{i}" for i, (s, _, _) in enumerate(FLIPS)])
def test_verdict_flips_with_the_data(start, before, change):
    data = with_fctma(hand_made())
    assert fctma_claim(data, start).verdict == before
    change(data)
    assert fctma_claim(data, start).verdict == (F if before == H else H)


def test_heap_4_sd_can_fail_against_a_pool_of_zero_sd():
    """The old test passed against any pool sd of 0; per mille with the count's resolution it can fail."""
    data = with_fctma(hand_made())
    _target(data, "-O0", "freertos-heap4", "malloc").update(sd=4.5)
    assert _target(data, "-O0", "pool", "malloc")["sd"] == 0
    c = fctma_claim(data, "heap_4's alloc() standard deviation")
    assert c.verdict == F and "28.75" in c.reason and "384.62" in c.reason


def test_only_the_qualitative_claim_is_untestable():
    from heapkit import report as rep
    data = with_fctma(hand_made())
    claims = rep.seed_claims(data)["fctma-pools"]
    assert [c.claim for c in claims if c.verdict == render.UNTESTABLE] == [
        "FCTMA makes embedded software easier and safer to write, and suits ultra low energy systems"]
    safe = fctma_claim(data, "the pool's mutex and semaphore")
    assert "160,000 operations" in safe.reason and "exit status 2" in safe.reason
    isr = fctma_claim(data, "future work: an ISR-safe pool")
    assert "38 instructions per alloc, 43 per free" in isr.reason


def test_kernel_checks_in_the_section():
    from heapkit import report as rep
    import copy
    from test_report import sections
    data = with_fctma(hand_made())
    sec = sections(rep.build_html(rep.normalize(copy.deepcopy(data)), "t"))["fctma-pools"]
    assert "FCTMA with its mutex and semaphore" in sec and "292" in sec
    assert "Multitasking stress (-O2): 4 tasks" in sec and "alloc 38-38 (worst 38)" in sec
