# SPDX-License-Identifier: MIT
"""Deterministic synthetic workloads, each modelled on a seed paper or survey.

Every generator is a function ``gen(seed=..., **params) -> Trace`` whose
parameters all have defaults; :data:`WORKLOADS` lists them for the CLI.

Seed semantics
--------------
A generator's output is a pure function of its seed and parameters: the
same seed and parameters give byte-identical traces on every platform and
Python/numpy version, because randomness comes from the small generators
below rather than from ``random`` or ``numpy.random`` (whose streams may
change between versions):

* ``itc`` uses the fctma-pools paper's own LCG, ``s = s*1103515245 + 12345``
  (mod 2**32), ``wait = (s >> 16) % MaxTime``, starting from ``s = seed``
  (the paper's program starts from 1, the default here);
* every other generator uses SplitMix64 (Steele, Lea, Flood 2014) whose
  64-bit state starts at ``seed`` (mod 2**64).  ``Rng.below(n)`` is
  Lemire's multiply-shift reduction of one 64-bit draw.

Different seeds give different traces (for ``cse3320`` and ``robson``
the seed only reorders events within the structure the paper fixes; see
their docstrings).

Bounds
------
Every parameter has an upper bound (:attr:`Workload.maxima`, printed by
``heapkit workloads``), and no generator makes more than
:data:`MAX_ALLOCS` allocations (so at most twice as many events, about
400 MB while generating): larger values are refused with one line
instead of running for minutes and taking gigabytes.
"""

from __future__ import annotations

import heapq
import inspect
import math
from collections import deque
from dataclasses import dataclass
from typing import Callable

from .errors import HeapkitError
from .trace import Trace, TraceBuilder

_M64 = (1 << 64) - 1
U32 = (1 << 32) - 1
MAX_ALLOCS = 5_000_000


def _builder(what: str) -> TraceBuilder:
    return TraceBuilder(max_ids=MAX_ALLOCS, what=what)


class Rng:
    """SplitMix64: 64-bit state, one multiply-xorshift output per step."""

    __slots__ = ("state",)

    def __init__(self, seed: int):
        self.state = seed & _M64

    def next64(self) -> int:
        self.state = z = (self.state + 0x9E3779B97F4A7C15) & _M64
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _M64
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _M64
        return z ^ (z >> 31)

    def below(self, n: int) -> int:
        """Uniform integer in [0, n)."""
        return (self.next64() * n) >> 64

    def between(self, lo: int, hi: int) -> int:
        """Uniform integer in [lo, hi]."""
        return lo + self.below(hi - lo + 1)

    def random(self) -> float:
        """Uniform float in [0, 1)."""
        return (self.next64() >> 11) * (1.0 / (1 << 53))

    def shuffle(self, items: list) -> None:
        for i in range(len(items) - 1, 0, -1):
            j = self.below(i + 1)
            items[i], items[j] = items[j], items[i]

    def expo(self, mean: float) -> float:
        return -mean * math.log(1.0 - self.random())

    def weighted(self, cumulative: list[float]) -> int:
        """Index drawn with the weights whose running sums are *cumulative*."""
        x = self.random() * cumulative[-1]
        lo, hi = 0, len(cumulative) - 1
        while lo < hi:
            mid = (lo + hi) // 2
            if cumulative[mid] > x:
                hi = mid
            else:
                lo = mid + 1
        return lo


def _need(cond: bool, message: str) -> None:
    if not cond:
        raise HeapkitError(message)


# --------------------------------------------------------------------------
# itc: fctma-pools inter-task communication benchmark

ITC_LIMIT = 16 * 1024


def itc(seed: int = 1, producers: int = 10, consumers: int = 10, burst: int = 20,
        block: int = 127, pop: int = 10, max_time_producer: int = 110,
        max_time_consumer: int = 20, duration: int = 10000) -> Trace:
    """ITC benchmark of the fctma-pools seed, replayed as a discrete-event simulation.

    Paper: 10 producer and 10 consumer tasks share a list.  Each producer
    allocates twenty 127-byte blocks (an IEEE 802.15.4 frame) and appends
    them; after the push, if the total allocated has reached 16 KB it
    sleeps for a pseudo-random time.  Each consumer pops up to ten blocks,
    frees them, then waits a pseudo-random time.  Waits come from the LCG
    ``seed = seed*1103515245 + 12345; wait = (seed >> 16) % MaxTime``
    (32-bit unsigned, one generator shared by all tasks), and MaxTime is
    tuned so that about 100 blocks are allocated at any time.

    Simulation: time is in ticks (ms).  All tasks start at tick 0,
    producers (tids 1..P) before consumers (tids P+1..P+C); tasks due at
    the same tick run in the order they were scheduled.  A producer burst
    or a consumer pop takes one tick, so a task runs again at
    ``t + 1 + wait`` — a producer that is below 16 KB waits 0 (it yields
    for one tick, as a FreeRTOS task of equal priority would).  "Total
    allocated" is the live requested bytes (live blocks * 127), so producers
    back off at 130 live blocks.  Blocks still in the list when the
    simulation ends at *duration* ticks are left live.

    MaxTime is not given in the paper; the defaults (producers 110,
    consumers 20) were tuned here to keep the mean number of live blocks,
    averaged over events, near 100 (99.7 with seed 1, 100.0 with seed 2;
    peaks reach about 250 when all producers burst together).  The
    default run is 10,000 ticks, about 180,000 events.  Thread ids are
    the task ids; the LCG's seed parameter defaults to the paper's 1.
    """
    _need(producers >= 1 and consumers >= 1, "itc: producers and consumers must be >= 1")
    _need(burst >= 1 and pop >= 1 and block >= 1, "itc: burst, pop and block must be >= 1")
    _need(max_time_producer >= 1 and max_time_consumer >= 1, "itc: max times must be >= 1")
    _need(duration >= 1, "itc: duration must be >= 1")
    b = _builder("itc")
    lcg = seed & 0xFFFFFFFF

    def wait(max_time: int) -> int:
        nonlocal lcg
        lcg = (lcg * 1103515245 + 12345) & 0xFFFFFFFF
        return (lcg >> 16) % max_time

    shared: deque[int] = deque()
    live_bytes = 0
    seq = 0
    agenda: list[tuple[int, int, int]] = []
    for task in range(1, producers + consumers + 1):
        agenda.append((0, seq, task))
        seq += 1
    heapq.heapify(agenda)
    while agenda:
        now, _, task = heapq.heappop(agenda)
        if now >= duration:
            break
        if task <= producers:
            for _ in range(burst):
                shared.append(b.malloc(block, task))
            live_bytes += burst * block
            nxt = now + 1 + (wait(max_time_producer) if live_bytes >= ITC_LIMIT else 0)
        else:
            for _ in range(min(pop, len(shared))):
                b.free(shared.popleft(), task)
                live_bytes -= block
            nxt = now + 1 + wait(max_time_consumer)
        heapq.heappush(agenda, (nxt, seq, task))
        seq += 1
    return b.build(f"itc(seed={seed})")


# --------------------------------------------------------------------------
# kth: buddy-kth benchmark

KTH_LEVELS = 8
KTH_MIN_BLOCK = 32     # level 0 block; level 7 is 4096 bytes


def kth_level_bounds(header: int = 24) -> list[tuple[int, int]]:
    """Requested-size range (lo, hi) of each level: a level-k request fits a
    (32 << k)-byte block including the header, but not the level below."""
    out = []
    for k in range(KTH_LEVELS):
        hi = (KTH_MIN_BLOCK << k) - header
        lo = 1 if k == 0 else (KTH_MIN_BLOCK << (k - 1)) - header + 1
        out.append((max(lo, 1), hi))
    return out


def kth(seed: int = 1, allocs: int = 50000, slots: int = 4096, header: int = 24) -> Trace:
    """Benchmark of the buddy-kth seed (balloc/bfree, 8 levels up to 4 KiB).

    Paper: sizes are drawn at random "where sizes of each level were
    approximately as likely to appear"; each new block is stored at a random
    index of a buffer, and when that slot is already taken the old block is
    freed first — so frees become more frequent the longer the run goes.
    Blocks are 32 << k bytes (k = 0..7, level 7 = 2049..4096) and include a
    24-byte head, which the user does not see.

    Here: the level is uniform over the 8 levels, and the size uniform over
    the requests that land on that level with a *header*-byte head
    (level 0: 1..8, level k: (16<<k)-23 .. (32<<k)-24).  *allocs* blocks go
    into a buffer of *slots* slots.  The paper gives neither count (its
    plots run 100,000 ballocs); the defaults keep the trace near 10^5
    events while the buffer still fills gradually.  Blocks left in the
    buffer stay live at the end.
    """
    _need(allocs >= 1 and slots >= 1, "kth: allocs and slots must be >= 1")
    _need(0 <= header < KTH_MIN_BLOCK, f"kth: header must be in [0, {KTH_MIN_BLOCK})")
    rng = Rng(seed)
    bounds = kth_level_bounds(header)
    b = _builder("kth")
    buf: list[int | None] = [None] * slots
    for _ in range(allocs):
        lo, hi = bounds[rng.below(KTH_LEVELS)]
        size = rng.between(lo, hi)
        slot = rng.below(slots)
        old = buf[slot]
        if old is not None:
            b.free(old)
        buf[slot] = b.malloc(size)
    return b.build(f"kth(seed={seed})")


# --------------------------------------------------------------------------
# cse3320: the five-step fragmentation test of fits-cse3320

CSE_FREED = [480 + 48 * j for j in range(10)]          # step-1 blocks freed in step 2
CSE_KEPT = [64 + 32 * j for j in range(10)]            # step-1 blocks kept
CSE_REUSE = [208] + [200 + 40 * j for j in range(1, 10)]  # step-3 blocks that fit the holes
CSE_GROW = 2448                                        # step-3 block that fits no hole
CSE_LARGE = 5000                                       # step 5


def cse3320(seed: int = 1, rounds: int = 500, shuffle: int = 1) -> Trace:
    """The fits-cse3320 seed's fragmentation and heap-size test, repeated.

    Paper (five steps): create a heap of blocks of varying size; free every
    other block; allocate more blocks of varying size into the holes; free
    most of the memory; request another large block.  Its table reports 32
    mallocs (reuses + grows), 20296 bytes requested, and a max heap of
    17016 bytes for first fit.

    The paper does not list the sizes; these reproduce its totals: step 1
    allocates 20 blocks, alternately one that step 2 frees (480, 528, ...,
    912 bytes) and one that stays (64, 96, ..., 352); step 3 allocates ten
    blocks that fit the holes with a split (208, 240, 280, ..., 560) and
    one of 2448 that fits none; step 4 frees everything except the 10th
    and 20th step-1 blocks; step 5 asks for 5000 bytes.  That is 32
    mallocs and 20296 requested bytes.  With the seed's 24-byte block
    header, a first fit in which the ten hole-sized blocks reuse holes and
    the 2448- and 5000-byte blocks grow the heap ends at exactly 17016
    bytes (20 + 1 + 1 grows), the paper's first-fit max heap; if the
    5000-byte block is placed in coalesced space instead, the heap stays at
    11992 bytes, the paper's best-fit figure. heapkit's seqfit, which merges
    a freed block with both neighbours, does that under every policy
    (:mod:`heapkit.fits` replays it at the seed's header).

    Deviation: one round is only 64 events, so the test is repeated
    *rounds* times, each round ending by freeing its three remaining
    blocks.  With *shuffle* = 1 the seed permutes, per round, which size
    goes to which position within each group above (the groups and the
    steps stay as described); *shuffle* = 0 gives the fixed order every
    round.
    """
    _need(rounds >= 1, "cse3320: rounds must be >= 1")
    rng = Rng(seed)
    b = _builder("cse3320")
    for _ in range(rounds):
        freed, kept = list(CSE_FREED), list(CSE_KEPT)
        step3 = list(CSE_REUSE) + [CSE_GROW]
        if shuffle:
            rng.shuffle(freed)
            rng.shuffle(kept)
            rng.shuffle(step3)
        step1 = []
        for j in range(10):                                # step 1
            step1.append(b.malloc(freed[j]))
            step1.append(b.malloc(kept[j]))
        for j in range(0, 20, 2):                          # step 2
            b.free(step1[j])
        later = [b.malloc(s) for s in step3]               # step 3
        keep = {step1[9], step1[19]}
        for ident in [step1[j] for j in range(1, 20, 2)] + later:   # step 4
            if ident not in keep:
                b.free(ident)
        large = b.malloc(CSE_LARGE)                        # step 5
        for ident in (step1[9], step1[19], large):
            b.free(ident)
    return b.build(f"cse3320(seed={seed})")


# --------------------------------------------------------------------------
# buddy-paper: buddy-freertos experiments

def buddy_paper(seed: int = 1, rounds: int = 100, region: int = 65536, timing_allocs: int = 20,
                min_size: int = 16, max_size: int = 4096, fill_pct: int = 50) -> Trace:
    """The buddy-freertos seed's two experiments, repeated *rounds* times.

    Paper: (1) allocation efficiency: the time of 20 allocations of random
    size (and of freeing them), heap_5 vs heap_buddy on a BL602; (2)
    fragmentation and merge behaviour "observed after allocating then
    freeing blocks": largest/smallest free block and number of free blocks
    while fragmented, and whether the region (64 KiB) returns to one
    maximal block once everything is freed.

    Per round here: *timing_allocs* mallocs of sizes uniform in
    [min_size, max_size], then their frees in allocation order; then blocks
    of sizes uniform in [min_size, max_size / 2] until their requested
    bytes reach *fill_pct* % of *region*, every other one freed (the
    fragmentation-causing step), blocks of sizes uniform in
    [max_size / 4, max_size] allocated into the fragmented heap until
    another *fill_pct* / 2 % of *region* is requested, and finally
    everything freed in random order (the merge check).  The paper gives
    no sizes or counts: the size ranges match the block sizes it reports
    (256 B .. 32 KiB free blocks in a 64 KiB region).
    """
    _need(rounds >= 1 and timing_allocs >= 0, "buddy-paper: rounds >= 1, timing_allocs >= 0")
    _need(1 <= min_size <= max_size // 4, "buddy-paper: need 1 <= min_size <= max_size/4")
    _need(0 < fill_pct <= 100 and region > 0, "buddy-paper: fill_pct in (0, 100], region > 0")
    rng = Rng(seed)
    b = _builder("buddy-paper")
    target = region * fill_pct // 100
    for _ in range(rounds):
        timed = [b.malloc(rng.between(min_size, max_size)) for _ in range(timing_allocs)]
        for ident in timed:
            b.free(ident)
        blocks, total = [], 0
        while total < target:
            s = rng.between(min_size, max_size // 2)
            blocks.append(b.malloc(s))
            total += s
        for ident in blocks[::2]:
            b.free(ident)
        rest = blocks[1::2]
        total = 0
        while total < target // 2:
            s = rng.between(max_size // 4, max_size)
            rest.append(b.malloc(s))
            total += s
        rng.shuffle(rest)
        for ident in rest:
            b.free(ident)
    return b.build(f"buddy-paper(seed={seed})")


# --------------------------------------------------------------------------
# Wilson's phase patterns: ramp, peak, plateau

def _size_classes(rng: Rng, classes: int, lo: int, hi: int) -> tuple[list[int], list[float]]:
    """A few popular sizes (log-uniform in [lo, hi], multiples of 8) with
    Zipf-like popularity 1/rank: real programs use few distinct sizes."""
    sizes = []
    for _ in range(classes):
        s = int(round(math.exp(math.log(lo) + rng.random() * (math.log(hi) - math.log(lo)))))
        sizes.append(max(8, (s + 7) // 8 * 8))
    cumulative, acc = [], 0.0
    for rank in range(classes):
        acc += 1.0 / (rank + 1)
        cumulative.append(acc)
    return sizes, cumulative


class _Phased:
    """Short-lived 'noise' objects shared by the three phase patterns."""

    def __init__(self, what: str, seed: int, classes: int, min_size: int, max_size: int):
        _need(classes >= 1 and 8 <= min_size <= max_size,
              f"{what}: need classes >= 1 and 8 <= min_size <= max_size")
        self.rng = Rng(seed)
        self.sizes, self.cum = _size_classes(self.rng, classes, min_size, max_size)
        self.b = _builder(what)
        self.due: list[tuple[int, int]] = []    # (death event index, id)

    def size(self) -> int:
        return self.sizes[self.rng.weighted(self.cum)]

    def alloc(self) -> int:
        return self.b.malloc(self.size())

    def reap(self) -> None:
        now = len(self.b)
        while self.due and self.due[0][0] <= now:
            self.b.free(heapq.heappop(self.due)[1])

    def short(self, mean_life: float) -> None:
        ident = self.alloc()
        heapq.heappush(self.due, (len(self.b) + 1 + int(self.rng.expo(mean_life)), ident))


def ramp(seed: int = 1, events: int = 50000, keep_pct: int = 30, mean_life: int = 40,
         classes: int = 8, min_size: int = 16, max_size: int = 512) -> Trace:
    """Wilson et al. (1995) *ramp*: data accumulates monotonically.

    Each allocation is kept to the end of the trace with probability
    *keep_pct* %; the others are short-lived (freed after an exponential
    number of events, mean *mean_life*).  Live memory therefore grows
    about linearly with time, with a little short-lived noise on top.
    Sizes come from *classes* popular sizes (see :func:`_size_classes`).
    The trace stops after about *events* events; kept blocks stay live.
    """
    _need(0 <= keep_pct <= 100 and mean_life >= 1 and events >= 1,
          "ramp: keep_pct in [0, 100], mean_life >= 1, events >= 1")
    p = _Phased("ramp", seed, classes, min_size, max_size)
    while len(p.b) < events:
        p.reap()
        if p.rng.below(100) < keep_pct:
            p.alloc()
        else:
            p.short(mean_life)
    return p.b.build(f"ramp(seed={seed})")


def peak(seed: int = 1, events: int = 50000, peaks: int = 10, survive_pct: int = 5,
         noise_pct: int = 20, mean_life: int = 40, classes: int = 8, min_size: int = 16,
         max_size: int = 512) -> Trace:
    """Wilson et al. (1995) *peaks*: build up a large structure, then free most of it.

    The trace is *peaks* equal phases.  In each, allocations accumulate
    (with *noise_pct* % short-lived ones mixed in); at the phase end all
    of the phase's accumulated blocks are freed except *survive_pct* %,
    which live on to the end of the trace (the slow "ramp" under the peaks
    that Wilson observes).  Frees at a peak's end come in random order.
    """
    _need(peaks >= 1 and 0 <= survive_pct <= 100 and 0 <= noise_pct < 100 and events >= 1,
          "peak: peaks >= 1, survive_pct in [0, 100], noise_pct in [0, 100)")
    p = _Phased("peak", seed, classes, min_size, max_size)
    per_phase = max(1, events // peaks)
    for k in range(peaks):
        built: list[int] = []
        end = (k + 1) * per_phase
        # Leave room for the frees that end the phase (about 1 per block built).
        while len(p.b) + len(built) < end:
            p.reap()
            if p.rng.below(100) < noise_pct:
                p.short(mean_life)
            else:
                built.append(p.alloc())
        p.rng.shuffle(built)
        for ident in built:
            if p.rng.below(100) >= survive_pct:
                p.b.free(ident)
    return p.b.build(f"peak(seed={seed})")


def plateau(seed: int = 1, events: int = 50000, level: int = 2000, noise_pct: int = 20,
            mean_life: int = 40, classes: int = 8, min_size: int = 16,
            max_size: int = 512) -> Trace:
    """Wilson et al. (1995) *plateau*: build up quickly, then hold steady.

    First *level* long-lived blocks are allocated back to back (with
    *noise_pct* % short-lived blocks mixed in); after that each step frees
    one random long-lived block and allocates a replacement, so live memory
    stays on its plateau while the blocks turn over, and *noise_pct* % of
    steps add a short-lived block instead.  Blocks live at the end stay live.
    """
    _need(level >= 1 and 0 <= noise_pct < 100 and events >= 1,
          "plateau: level >= 1, noise_pct in [0, 100), events >= 1")
    p = _Phased("plateau", seed, classes, min_size, max_size)
    held: list[int] = []
    while len(held) < level:
        p.reap()
        if p.rng.below(100) < noise_pct:
            p.short(mean_life)
        held.append(p.alloc())
    while len(p.b) < events:
        p.reap()
        if p.rng.below(100) < noise_pct:
            p.short(mean_life)
            continue
        j = p.rng.below(len(held))
        p.b.free(held[j])
        held[j] = p.alloc()
    return p.b.build(f"plateau(seed={seed})")


# --------------------------------------------------------------------------
# robson: adversarial fragmentation

def robson_sizes(n: int, unit: int, overhead: int) -> list[int]:
    """Requested sizes of the phases: gross (request + overhead) unit * 2**k, up to unit * n."""
    sizes, g = [], unit
    while g <= unit * n:
        sizes.append(g - overhead)
        g *= 2
    return sizes


def robson(seed: int = 1, M: int = 262144, n: int = 64, unit: int = 32, overhead: int = 8) -> Trace:
    """A Robson-style sequence that drives allocators toward their worst case.

    REFERENCE.md: with M the peak live bytes and n the largest/smallest
    block ratio, power-of-two half-fit may need H = 2M(1 + ceil(log2 n)),
    address-ordered first fit about M(1 + ceil(log2 n)), best fit and TLSF
    about M(n - 2).  Robson's adversary reaches such bounds by watching the
    addresses the allocator returns; a trace cannot, so this is the
    oblivious version, relying on allocators placing consecutive requests
    at increasing addresses when no hole fits (true of sequential fits,
    TLSF and half-fit on fresh memory).

    Phases k = 0 .. log2 n use blocks whose gross size (request +
    *overhead*, the per-block header assumed) is ``unit * 2**k``.  Phase k
    allocates blocks until the live requested bytes would exceed M, then
    frees, in every earlier phase j's blocks (numbered in allocation order),
    those not at a multiple of 2**(k+1-j) — so each block that stays pins
    a window of 2**(k+1) minimum blocks and every hole is one minimum
    block too small for the next phase's size.  Each phase after the first
    thus finds no reusable hole and extends the heap by about M/2: an
    address-ordered fit ends near M(1 + log2(n)/2), the oblivious
    counterpart of Robson's M log2(n)/2 lower bound.  Peak live requested
    bytes never exceed M.  The seed only permutes the order of each
    phase's frees (which affects coalescing order, not the pinning).
    With *overhead* 0 the requests are exactly unit * 2**k and n is their
    ratio; otherwise n is the ratio of gross sizes.
    """
    _need(n >= 2 and n & (n - 1) == 0, "robson: n must be a power of two >= 2")
    _need(overhead >= 0 and unit > overhead, "robson: need unit > overhead >= 0")
    sizes = robson_sizes(n, unit, overhead)
    _need(M >= sizes[-1], f"robson: M must be at least the largest block ({sizes[-1]})")
    rng = Rng(seed)
    b = _builder("robson")
    phases: list[list[int | None]] = []
    live = 0
    for k, s in enumerate(sizes):
        blocks: list[int | None] = []
        while live + s <= M:
            blocks.append(b.malloc(s))
            live += s
        phases.append(blocks)
        if k == len(sizes) - 1:
            break
        doomed = []
        for j, ph in enumerate(phases):
            stride = 1 << (k + 1 - j)
            for i, ident in enumerate(ph):
                if ident is not None and i % stride:
                    doomed.append(ident)
                    ph[i] = None
                    live -= sizes[j]
        rng.shuffle(doomed)
        for ident in doomed:
            b.free(ident)
    return b.build(f"robson(seed={seed})")


# --------------------------------------------------------------------------
# Registry

@dataclass(frozen=True)
class Workload:
    name: str
    func: Callable[..., Trace]
    summary: str
    maxima: dict[str, int]            # every parameter's upper bound
    byte_params: tuple[str, ...] = ()  # parameters that are byte sizes (64K is accepted)

    def params(self) -> dict[str, object]:
        """Parameter defaults, seed excluded."""
        sig = inspect.signature(self.func)
        return {k: p.default for k, p in sig.parameters.items() if k != "seed"}

    def generate(self, seed: int = 1, **params) -> Trace:
        known = self.params()
        for k, v in params.items():
            if k not in known:
                raise HeapkitError(f"{self.name}: unknown parameter {k!r} "
                                   f"(has: {', '.join(known) or 'none'})")
            if v > self.maxima[k]:
                raise HeapkitError(f"{self.name}: parameter {k} is at most {self.maxima[k]:,}, "
                                   f"not {v:,}")
        trace = self.func(seed=seed, **params)
        trace.name = self.name
        return trace


_SIZES = {"classes": 4096, "min_size": U32, "max_size": U32}
_PHASED = {"events": 10_000_000, "mean_life": 10_000_000, **_SIZES}

WORKLOADS: dict[str, Workload] = {w.name: w for w in (
    Workload("itc", itc, "fctma-pools ITC: 10 producers / 10 consumers of 127-byte blocks",
             {"producers": 256, "consumers": 256, "burst": 100_000, "block": U32, "pop": 100_000,
              "max_time_producer": 10**9, "max_time_consumer": 10**9, "duration": 1_000_000},
             ("block",)),
    Workload("kth", kth, "buddy-kth benchmark: 8 size levels up to 4 KiB into a slot buffer",
             {"allocs": MAX_ALLOCS, "slots": 1_000_000, "header": KTH_MIN_BLOCK - 1}, ("header",)),
    Workload("cse3320", cse3320, "fits-cse3320 5-step fragmentation test, repeated",
             {"rounds": 100_000, "shuffle": 1}),
    Workload("buddy-paper", buddy_paper,
             "buddy-freertos: 20 timed allocs, then allocate/fragment/free-all rounds",
             {"rounds": 100_000, "region": 1 << 30, "timing_allocs": 1_000_000,
              "min_size": U32, "max_size": U32, "fill_pct": 100},
             ("region", "min_size", "max_size")),
    Workload("ramp", ramp, "Wilson ramp: live data accumulates steadily",
             {**_PHASED, "keep_pct": 100}, ("min_size", "max_size")),
    Workload("peak", peak, "Wilson peaks: build up, then free most, repeatedly",
             {**_PHASED, "peaks": 1_000_000, "survive_pct": 100, "noise_pct": 99},
             ("min_size", "max_size")),
    Workload("plateau", plateau, "Wilson plateau: rise quickly, then hold steady with turnover",
             {**_PHASED, "level": 1_000_000, "noise_pct": 99}, ("min_size", "max_size")),
    Workload("robson", robson, "oblivious Robson adversary: pins memory against doubling sizes",
             {"M": 1 << 30, "n": 1 << 20, "unit": 1 << 20, "overhead": 1 << 20},
             ("M", "unit", "overhead")),
)}


def get(name: str) -> Workload:
    try:
        return WORKLOADS[name]
    except KeyError:
        raise HeapkitError(f"unknown workload {name!r} (choose from "
                           f"{', '.join(WORKLOADS)})") from None


def generate(name: str, seed: int = 1, **params) -> Trace:
    return get(name).generate(seed, **params)
