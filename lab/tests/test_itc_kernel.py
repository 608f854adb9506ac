# SPDX-License-Identifier: MIT
"""The fctma-pools ITC application on FreeRTOS V11.2.0 in QEMU mps2-an385 (examples/firmware-itc,
heapkit.itc_kernel): built and run with heap_4, the FCTMA pool (alone and with its mutex and
semaphore), the bump and SDMA at -O2 and -O0, every call counted; the multitasking stress on
the locked pool and its unlocked control; lfpool under a timer interrupt and the plain pool in
its place (make itc-kernel; needs the cross toolchain and QEMU)."""

from __future__ import annotations

import pytest

from heapkit import itc_kernel

pytestmark = pytest.mark.target


@pytest.fixture(scope="module")
def data():
    why = itc_kernel.missing()
    if why:
        pytest.skip(why)
    return itc_kernel.measure()


def test_every_heap_runs_every_block(data):
    assert set(data["levels"]) == set(itc_kernel.LEVELS)
    for heaps in data["levels"].values():
        assert set(heaps) == set(itc_kernel.HEAPS)
        for res in heaps.values():
            assert res["calibration"]["exact"] is True
            assert res["alloc"]["count"] == res["free"]["count"] == res["blocks"] == data["blocks"]
            assert res["block"] == 127 and 0 < res["live_max"] < data["blocks"]


def test_pool_is_constant_time_and_heap_4_is_not(data):
    for heaps in data["levels"].values():
        pool, heap4 = heaps["pool"], heaps["heap_4"]
        for kind in ("alloc", "free"):
            assert pool[kind]["min"] == pool[kind]["max"] > 0 and pool[kind]["sd"] == 0
            # heap_4 walks its free list and merges: its costs vary with the heap's state.
            assert heap4[kind]["max"] > heap4[kind]["min"] > pool[kind]["min"]


def test_pool_table_3_on_the_core(data):
    for heaps in data["levels"].values():
        t3 = heaps["pool"]["table3"]
        # 127-byte blocks of 136 bytes on this 32-bit core (8-byte header, 8-byte alignment)
        assert t3["user"] == 127 * t3["blocks"] and t3["peak_used"] == 136 * t3["blocks"]
        assert 0 < t3["control"] < 512


def test_counts_match_the_lab_driver_at_O2(data):
    # The same pool code, called directly: the lab's driver counts 22 and 29 at -O2
    # (include/heapkit/pool.h); the kernel run must agree to the instruction.
    pool = data["levels"]["-O2"]["pool"]
    assert (pool["alloc"]["min"], pool["free"]["min"]) == (22, 29)


def test_runs_are_deterministic():
    if itc_kernel.missing():
        pytest.skip(itc_kernel.missing())
    elf = itc_kernel.build_root() / "O2" / "itc_heap_4.elf"
    assert itc_kernel.run(elf) == itc_kernel.run(elf)


def test_moments():
    m = itc_kernel.with_moments({"count": 4, "sum": 10, "sumsq": 30, "min": 1, "p50": 2, "max": 4})
    assert m["mean"] == 2.5 and m["sd"] == pytest.approx(1.118033988)


def test_locked_pool_pays_for_its_locks_and_passes_the_stress(data):
    for heaps in data["levels"].values():
        pool, locked = heaps["pool"], heaps["pool_sync"]
        for kind in ("alloc", "free"):
            # the mutex and the counting semaphore are FreeRTOS calls: far more than the pool itself
            assert locked[kind]["min"] > 3 * pool[kind]["max"]
        st = locked["stress"]
        assert st["ops"] == 160000 and st["overlaps"] == 0 and st["free_after"] == st["free_before"] > 0


def test_the_stress_catches_the_unlocked_pool(data):
    race = data["checks"]["itc_pool_race"]
    assert race["status"] == 2 and "stress" in race["message"]


def test_sdma_from_a_heap_4_chunk(data):
    for heaps in data["levels"].values():
        sdma, pool = heaps["sdma"], heaps["pool"]
        # lookup-table indices, no split or merge: more than the pool, and nearly constant
        assert sdma["alloc"]["min"] > pool["alloc"]["max"] and sdma["free"]["min"] == sdma["free"]["max"]


def test_isr_pool_under_a_timer_interrupt(data):
    isr = data["checks"]["isr_lfpool"]
    r = isr["result"]
    assert isr["status"] == 0 and r["ops"] >= 1_000_000 and r["isr_inside_task_call"] > 1000
    assert r["twice"] == r["overlap"] == r["foreign"] == r["still_claimed"] == 0
    assert r["free_end"] == r["blocks"] and r["used_end"] == 0 and r["check"] == 0
    # nothing preempts the ISR: its calls are lfpool's uncontended paths, the same count every time
    assert r["isr_alloc"]["min"] == r["isr_alloc"]["max"] and r["isr_free"]["min"] == r["isr_free"]["max"]
    assert r["isr_alloc"]["count"] > 100_000


def test_isr_checks_catch_a_pool_that_is_not_isr_safe(data):
    race = data["checks"]["isr_pool_race"]
    r = race["result"]
    assert race["status"] == 2 and r is not None
    assert r["twice"] + r["overlap"] > 0 or r["free_end"] < r["blocks"]
