# SPDX-License-Identifier: MIT
"""``heapkit advise TRACE...``: which allocator, how much heap, what worst case.

For each trace and every allocator that lives in an arena (the engine's
``--list``: heapkit's catalog and the peers; ``system`` and the preloaded
mallocs have no arena to size), advise measures

- the smallest heap on which the whole trace replays without a failed
  allocation (the engine's size search, :func:`heapkit.engine.size_search`);
- host time per operation: one replay at the heap it would recommend (the
  smallest plus the margin), each call kind's median weighted by its calls
  (:func:`host_stats`);
- where QEMU and the cross compilers are installed, the exact worst case in
  instructions per call on the emulated Cortex-M3 and RV32
  (:func:`heapkit.target.bench`, -O2, the target's arena: 16 MiB, or what the
  largest heap needs): the most any malloc, aligned allocation or free of the
  trace took (calloc and realloc also copy or clear the caller's bytes, which is
  not the allocator's cost);
- what misuse it detects at the heapkit library's ``HK_HARDENING``: the
  misuse matrix (tests/test_misuse.c) and the corruption matrix
  (tests/test_corruption.c) of the same build, run now. Their cases are
  heapkit's catalog only, so the peers' column says "not tested".

From these, per trace: the Pareto front of smallest heap against worst-case
cost (instructions on the first target measured; without a target the host's
p99 time per call, which is noisy), and one recommendation (:func:`decide`) from
every allocator measured, heapkit's and the peers', by the one rule :data:`RULE`
(printed first, docs/advise.md):

1. candidates are the allocators with a heap, that replay on every target counted
   without a failure and that fit ``--max-heap`` (heap with margin) and
   ``--max-instructions``; a target whose arena is smaller than an allocator's
   heap says nothing about it (its calls fail for the board);
2. with ``--max-heap`` the heap is a budget: every candidate competes; else
   only those within :data:`HEAP_TOLERANCE` of the smallest candidate heap;
3. among those, allocators whose worst case is bounded (:func:`growth`) come
   first, then the fewest worst-case instructions (the host's p99 is too noisy to
   rank), then the smaller heap, then the name.

The recommendation, when it is heapkit's, is also written as configuration
(:func:`snippets`): a C file that puts the heap in a static array and initialises
it through the allocator's own API (include/heapkit/), a FreeRTOS configuration
(which heap file: ports/freertos/heap_tlsf.c, heap_buddy.c, or a generated one on
the catalog for the other heapkit allocators) and the JSON of the decision. When
a peer wins, the output says so and names heapkit's best (the first heapkit
allocator of the same ranking) with the gap in heap and worst case; that one is
configured only with ``--configure heapkit``. The text, the JSON, the snippets and
the report's advice table all read the one decision :func:`advise_trace` makes.
"""

from __future__ import annotations

import concurrent.futures as cf
import json
import math
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any, Sequence

from . import progress as prog
from .boards import TARGETS
from . import render
from .errors import HeapkitError

DEFAULT_MARGIN = 25.0
# Allocators whose smallest heap is within this share of the smallest one compete on worst case.
HEAP_TOLERANCE = 0.10
TARGET_OPT = "-O2"
COST_KINDS = ("malloc", "aligned", "free")

# How each allocator's worst case per call grows, from the algorithms' bounds (the headers in
# include/heapkit/, docs/dmm.md, the peers' documentation). BOUNDED: only constants of the
# configuration limit a call (size classes, first- and second-level lists, buddy orders);
# the sequential searches grow with the free blocks; an allocator in neither is unbounded.
BOUNDED = frozenset({"bump", "buddy", "buddy-lazy", "buddy-fib", "buddy-weighted", "tlsf",
                     "poolset", "lfpool", "dmm-ose", "o1heap", "tlsf-conte"})
# Allocators the lab rebuilt from a seed for its comparison only (the fctma-pools seed's SDMA):
# nothing a firmware can take, so advise never measures or recommends them.
SEED_ONLY = frozenset({"sdma"})
FREE_BLOCK_SEARCH = frozenset({"seqfit-first", "seqfit-next", "seqfit-best", "seqfit-worst",
                               "dmm-wince", "dmm-winxp", "dmm-lea", "dmm-uclinux", "dmm-net",
                               "freertos-heap2", "freertos-heap4", "freertos-heap5", "umm"})

# The corruption matrix's case families, as the table names them.
DAMAGE_WORDS = {"overflow-used": "overflow into used", "overflow-free": "overflow into free",
                "freed-write": "write after free", "owner-header": "pool header",
                "slack-free": "canary", "slack-realloc": "canary", "freed-poison": "poison"}


def growth(alloc: str) -> str | None:
    """What *alloc*'s worst case per call grows with; None when it is bounded."""
    if alloc in BOUNDED:
        return None
    return "the number of free blocks" if alloc in FREE_BLOCK_SEARCH else "an unknown bound"


def heap_with_margin(min_heap: int, margin: float) -> int:
    """The heap to configure: the smallest plus *margin* percent, rounded up to 1 KiB from
    16 KiB on (64 bytes below); exactly the smallest with no margin."""
    if margin <= 0:
        return int(min_heap)
    want = math.ceil(min_heap * (1 + margin / 100.0))
    unit = 1024 if want >= 16 * 1024 else 64
    return -(-want // unit) * unit


# --------------------------------------------------------------------------
# Measuring

def arena_allocators(binary=None) -> list[dict]:
    """The engine's entries that live in an arena, but :data:`SEED_ONLY`: [{"name", "family"}]."""
    from . import engine
    return [{"name": a["name"], "family": a["family"]} for a in engine.allocator_table(binary=binary)
            if a.get("in_arena") and a["name"] not in SEED_ONLY]


def select(allocs: str | None, table: list[dict]) -> list[dict]:
    """The entries of *table* named in the comma list *allocs* (all when None)."""
    if not allocs:
        return table
    from . import engine
    by_name = {a["name"]: a for a in table}
    names = [a.strip() for a in allocs.split(",") if a.strip()]
    bad = [a for a in names if a not in by_name]
    if bad:
        known = set(engine.list_allocators())
        why = "; ".join(f"{a} does not live in an arena (no heap to size)" if a in known
                        else f"unknown allocator {a}" for a in bad)
        raise HeapkitError(f"--alloc: {why} (arena allocators: {', '.join(by_name)})")
    return [by_name[a] for a in dict.fromkeys(names)]


def host_stats(result: dict) -> dict:
    """Of one replay: time per operation as the mean of every call (``mean_ns``, which one
    preempted call can dominate on a busy host) and as the calls' medians weighted by their
    number (``ns_per_op``, what the tables show), the p99 over the cost kinds, the clock step
    and the failures."""
    timing = render.get(result, "replay.timing") or {}
    calls = total = typical = 0.0
    p99 = None
    for kind in ("malloc", "calloc", "aligned", "realloc", "free"):
        t = timing.get(kind) or {}
        if t.get("count"):
            calls += t["count"]
            total += t["count"] * (t.get("mean") or 0.0)
            typical += t["count"] * (t.get("p50") or 0.0)
            if kind in COST_KINDS and t.get("p99") is not None:
                p99 = t["p99"] if p99 is None else max(p99, t["p99"])
    return {"ns_per_op": typical / calls if calls else None,
            "mean_ns": total / calls if calls else None, "p99_ns": p99,
            "step_ns": timing.get("step_ns"), "arena": render.get(result, "arena.size"),
            "failures": render.get(result, "replay.failures.total")}


def _host_one(path: str, alloc: str, margin: float) -> dict:
    from . import engine
    try:
        search = engine.size_search(path, alloc)
    except engine.EngineError as e:
        return {"error": str(e)}
    out: dict[str, Any] = {"min_heap": render.get(search, "search.min_arena"),
                           "nonmonotone": bool(render.get(search, "search.nonmonotone")),
                           "why_none": render.get(search, "search.reason"),
                           "hardening": render.get(search, "engine.hk_hardening"),
                           "arena_alignment": render.get(search, "arena.alignment"),
                           "hk_align": render.get(search, "engine.hk_align")}
    if out["min_heap"]:
        try:
            res = engine.replay(path, alloc, arena=heap_with_margin(out["min_heap"], margin),
                                series=0)
        except engine.EngineError as e:
            out["host_error"] = str(e)
        else:
            out["host"] = host_stats(res)
    return out


def measure_host(traces: Sequence[tuple[str, str]], allocs: Sequence[dict], margin: float,
                 jobs: int = 2, progress: bool = True) -> dict[tuple[str, str], dict]:
    """(trace, allocator) -> size search and timing replay, behind one progress bar."""
    pairs = [(t, a["name"]) for t in traces for a in allocs]
    out: dict[tuple[str, str], dict] = {}
    with cf.ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        futs = {pool.submit(_host_one, path, alloc, margin): (name, alloc)
                for (name, path), alloc in pairs}
        with prog.bar(len(futs), "advise: heaps", "alloc", show=progress) as bar:
            for fut in cf.as_completed(futs):
                out[futs[fut]] = fut.result()
                bar.update()
    return out


def fitted(host: dict[tuple[str, str], dict], trace: str, allocs: Sequence[str]) -> list[str]:
    """The allocators whose size search found a heap for *trace*: the ones worth counting."""
    return [a for a in allocs if (host.get((trace, a)) or {}).get("min_heap")]


def heaps_needed(host: dict[tuple[str, str], dict], margin: float) -> dict[tuple[str, str], int]:
    """(trace, allocator) -> the heap it needs, with margin, where its size search found one."""
    return {k: heap_with_margin(h["min_heap"], margin) for k, h in host.items() if h.get("min_heap")}


def available_targets() -> list[str]:
    from . import target as tg
    return [t for t in TARGETS if not tg.missing_tools(t)]


def measure_targets(traces: Sequence[tuple], allocs: Sequence[str],
                    targets: Sequence[str], hardening: int | None, jobs: int = 2,
                    progress: bool = True, heaps: dict[tuple[str, str], int] | None = None) -> dict[str, dict]:
    """Per target name: {"runs": {(trace, alloc): {...}}, "skipped_traces", "arena"}
    or {"error": why}. *traces* are (name, Trace) pairs, or (name, Trace, allocators)
    triples naming the allocators worth counting (those the host did not fail).

    *heaps*: (trace, allocator) -> the heap it needs (with margin). The arena is the
    board's default (16 MiB) or larger where a trace needs it, up to what the board holds;
    an allocator that needs more fails there, and :func:`decide` says so."""
    from . import target as tg
    out: dict[str, dict] = {}
    levels = None if hardening in (None, 1) else [hardening]
    heaps = heaps or {}
    for name in targets:
        t = tg.get_target(name)
        need = max([tg.ARENA_SIZE, *heaps.values()])
        arena = min(-(-need // 2**20) * 2**20, t.max_arena)
        try:
            info = tg.build_objects(TARGET_OPT, jobs, t, arena, hardening=levels[0] if levels else None)
            known = {a["name"] for a in tg.allocators(info)}
            wanted = [a for a in allocs if a in known]
            if not wanted:
                out[name] = {"error": "none of the allocators runs on this target"}
                continue
            items = [(tr[0], tr[1], [a for a in tr[2] if a in known]) if len(tr) > 2 else tr
                     for tr in traces]
            data = tg.bench([tr for tr in items if len(tr) == 2 or tr[2]], wanted, (TARGET_OPT,),
                            jobs=jobs, progress=progress and sys.stderr.isatty(), target=t,
                            arena=arena, hardening=levels)
        except HeapkitError as e:
            out[name] = {"error": str(e).splitlines()[0]}
            continue
        runs = {}
        for r in data["runs"]:
            if r.get("result") is None:
                runs[(r["trace"], r["allocator"])] = {"skipped": r.get("skipped")}
                continue
            st = r["stats"]
            maxima = {k: st[k]["max"] for k in ("malloc", "free", "aligned", "calloc", "realloc")}
            worst = [v for k, v in maxima.items() if k in COST_KINDS and v is not None]
            runs[(r["trace"], r["allocator"])] = {
                "worst": max(worst) if worst else None, "max": maxima,
                "failures": r["result"]["failures"]["total"],
                "stats": {k: st[k] for k in ("malloc", "free")}}
        out[name] = {"runs": runs, "skipped_traces": data.get("skipped_traces") or {},
                     "arena": data.get("arena"), "title": t.title,
                     "board": {"max_arena": t.max_arena, "region": t.arena_region}}
    return out


def _run_matrix(name: str) -> str:
    from . import native
    proc = subprocess.run([str(native.build(name))], capture_output=True, text=True,
                          timeout=1800)
    return proc.stdout + proc.stderr


_CMOCKA = re.compile(r"^\[\s*(OK|SKIPPED|FAILED)\s*\] (\S+): (.+)$")
_SKIP_REASON = re.compile(r"^\[(\S+)\] (.+): skipped: (.+)$")


def parse_misuse(text: str) -> dict[str, dict[str, tuple[str, str | None]]]:
    """test_misuse's output: entry -> case -> (OK | SKIPPED | FAILED, skip reason)."""
    reasons = {(m.group(1), m.group(2)): m.group(3)
               for m in map(_SKIP_REASON.match, text.splitlines()) if m}
    out: dict[str, dict[str, tuple[str, str | None]]] = {}
    for m in map(_CMOCKA.match, text.splitlines()):
        if m:
            entry, case = m.group(2), m.group(3)
            out.setdefault(entry, {})[case] = (m.group(1), reasons.get((entry, case)))
    return out


def parse_corruption(text: str) -> tuple[int | None, dict[str, dict[str, list[int]]]]:
    """test_corruption's summary lines: (HK_HARDENING, entry -> family -> [detected, run])."""
    level = None
    out: dict[str, dict[str, list[int]]] = {}
    for line in text.splitlines():
        m = re.match(r"^corruption\[(\S+)\] HK_HARDENING=(\d+): [^|]*((?:\|.*)?)$", line)
        if not m:
            continue
        level = int(m.group(2))
        fams = out.setdefault(m.group(1), {})
        for part in m.group(3).split("|")[1:]:
            words = part.split()
            if not words or words[0] == "smoke" or "skipped" in words[1:]:
                continue
            tokens = [w.split(":", 1)[-1] for w in words[1:]]
            fams[words[0]] = [sum(any(c in tok for c in "CDFI") for tok in tokens), len(tokens)]
    return level, out


def measure_detection(allocs: Sequence[str]) -> dict[str, Any]:
    """What each catalog entry detects at the build's HK_HARDENING, from running the misuse
    and corruption matrices: {"level", "entries": {name: {...}}} or {"error": why}.

    A misuse case is one the level-0 build skips (level 0 checks nothing); at the build's
    level it counts as detected when the matrix ran it and it passed (the expected error
    was reported, the heap left intact)."""
    try:
        level, damage = parse_corruption(_run_matrix("test_corruption"))
        misuse = parse_misuse(_run_matrix("test_misuse"))
        baseline = parse_misuse(_run_matrix("test_misuse_l0"))
    except (HeapkitError, OSError, subprocess.SubprocessError) as e:
        return {"error": f"the misuse matrices could not run: {str(e).splitlines()[0]}"}
    if level is None or not misuse:
        return {"error": "the misuse matrices printed no results"}
    entries = {}
    for a in allocs:
        if a not in misuse:
            continue
        cases = [c for c, (state, _) in baseline.get(a, {}).items() if state == "SKIPPED"]
        found = [c for c in cases if misuse[a].get(c, ("",))[0] == "OK"]
        missed = [{"case": c, "why": misuse[a].get(c, ("", None))[1] or "not reported"}
                  for c in cases if c not in found]
        entries[a] = {"misuse": {"detected": found, "missed": missed},
                      "damage": damage.get(a, {})}
    return {"level": level, "entries": entries}


def detection_text(entry: dict | None, level: int | None) -> str:
    """One cell: misuse cases detected and the kinds of damage reported."""
    if entry is None:
        return "not tested (the matrices cover heapkit's catalog)"
    if level == 0:
        return "nothing (HK_HARDENING 0 checks nothing)"
    mis = entry["misuse"]
    n = len(mis["detected"]) + len(mis["missed"])
    words: dict[str, list[int]] = {}
    for fam, (det, run) in entry["damage"].items():
        w = words.setdefault(DAMAGE_WORDS.get(fam, fam), [0, 0])
        w[0] += det
        w[1] += run
    dmg = [w if d == r else f"{w} ({d}/{r})" for w, (d, r) in words.items() if d]
    return f"misuse {len(mis['detected'])}/{n}" + ("; " + ", ".join(dmg) if dmg else "")


# --------------------------------------------------------------------------
# Deciding

def cost_axis(targets: dict[str, dict], trace: str) -> dict:
    """What the front's cost is for *trace*: the first target on whose arena some allocator
    replayed it without a failure (else its counts describe failing calls), else the host's
    p99."""
    for name, t in targets.items():
        if any(tr == trace and v.get("worst") is not None and v.get("failures") == 0
               for (tr, _), v in t.get("runs", {}).items()):
            return {"kind": "instructions", "target": name, "title": t.get("title", name),
                    "arena": t.get("arena"), "unit": "instructions", "short": "instructions",
                    "label": f"{t.get('title', name)} worst-case instructions"}
    return {"kind": "host-p99", "target": None, "title": "host", "unit": "ns (host p99, noisy)",
            "short": "ns", "label": "host p99 ns per call (noisy)"}


def row_cost(row: dict, axis: dict) -> float | None:
    if axis["kind"] == "instructions":
        t = row["targets"].get(axis["target"]) or {}
        return t.get("worst")
    return (row.get("host") or {}).get("p99_ns")


def pareto(points: Sequence[tuple[str, float, float]]) -> list[str]:
    """Names of the points no other point beats on both axes (ties: the first wins)."""
    front, best = [], math.inf
    for name, x, y in sorted(points, key=lambda p: (p[1], p[2], p[0])):
        if y < best:
            front.append(name)
            best = y
    return front


def _pct(a: float, b: float) -> str:
    """|a - b| as a percentage of b, with the digits that keep a small difference from
    reading as 0."""
    v = 100.0 * abs(a - b) / b
    if v >= 1:
        return f"{v:.0f} %"
    return f"{v:.1f} %" if v >= 0.1 else f"{v:.2f} %" if v >= 0.01 else "< 0.01 %"


RULE = ("among the allocators that replay the trace without a failed allocation (on the host "
        "at the heap with margin and on every target counted) and fit the budgets, those whose "
        f"smallest heap is within {HEAP_TOLERANCE * 100:.0f} % of the smallest compete (with "
        "--max-heap, every one within it); a bounded worst case comes first, then the fewest "
        "worst-case instructions on the first target counted (without counts the host's noisy "
        "p99 does not rank), then the smaller heap, then the name")


def _target_failure(r: dict, axis: dict, tinfo: dict[str, dict],
                    limits: dict[str, list[str]]) -> str | None:
    """Why *r* is left out for failing on a target, or None. A target whose arena is smaller
    than *r*'s heap says nothing about *r* (its calls there fail for the board): on the cost
    axis's target *r* then has no count and is left out; on another target it is noted in
    *limits* (target -> allocators) and kept."""
    for tname, t in sorted(r["targets"].items(), key=lambda kv: kv[0] != axis["target"]):
        if not t.get("failures"):
            continue
        info = tinfo.get(tname) or {}
        title, arena = info.get("title", tname), info.get("arena")
        where = f"{title}'s {render.fmt_kib(arena)} arena" if arena else title
        if arena and info.get("board") and arena >= info["board"]["max_arena"]:
            where += f" (the most its board holds: {info['board']['region']})"
        if arena and r["min_heap"] > arena:
            if tname == axis["target"]:
                return f"{r['allocator']} needs more heap than {where}: no count"
            limits.setdefault(where, []).append(r["allocator"])
            continue
        return (f"{r['allocator']} fails {t['failures']:,} allocations on {where} (it needs "
                f"{render.fmt_kib(r['min_heap'])} on the host)")
    return None


def decide(rows: list[dict], axis: dict, margin: float, max_heap: int | None = None,
           max_insns: int | None = None, tinfo: dict[str, dict] | None = None) -> dict:
    """The front, the ranking by :data:`RULE` and the one recommendation (its first) for one
    trace's rows; *tinfo* gives the targets' "title" and "arena" (the axis's by default)."""
    tinfo = {**({axis["target"]: axis} if axis["target"] else {}), **(tinfo or {})}
    measured = [r for r in rows if r.get("min_heap") and row_cost(r, axis) is not None]
    front = pareto([(r["allocator"], r["min_heap"], row_cost(r, axis)) for r in measured])
    out: dict[str, Any] = {"front": front, "recommendation": None, "ranking": []}
    uncounted = [r["allocator"] for r in rows if r.get("min_heap") and r not in measured]
    if max_insns is not None and axis["kind"] != "instructions":
        out["why_none"] = "--max-instructions: no instruction counts for this trace"
        return out
    if not measured:
        out["why_none"] = "no allocator replays this trace without a failure at any heap size"
        return out
    cands, dropped = [], []
    limits: dict[str, list[str]] = {}
    for r in measured:
        why = _target_failure(r, axis, tinfo, limits)
        if why:
            dropped.append(why)
        elif (r.get("host") or {}).get("failures"):
            dropped.append(f"{r['allocator']} fails at its heap with margin")
        elif max_heap is not None and r["heap"] > max_heap:
            continue
        elif max_insns is not None and row_cost(r, axis) > max_insns:
            continue
        else:
            cands.append(r)
    if uncounted:
        dropped.append(f"{', '.join(uncounted)}: no {axis['label']} (not measured there)")
    out["dropped"] = dropped
    out["board_limits"] = [f"{where} is smaller than the heap of {', '.join(names)}: their "
                           "counts there describe failing calls and are not used"
                           for where, names in limits.items()]
    if not cands:
        out["why_none"] = _over_budget(measured, axis, max_heap, max_insns, dropped)
        return out
    band = min(r["min_heap"] for r in cands) * (1 + HEAP_TOLERANCE)
    exact = axis["kind"] == "instructions"
    ranking = sorted(cands, key=lambda r: (max_heap is None and r["min_heap"] > band,
                                           growth(r["allocator"]) is not None,
                                           row_cost(r, axis) if exact else 0, r["min_heap"],
                                           r["allocator"]))
    out["ranking"] = [r["allocator"] for r in ranking]
    out["recommendation"] = ranking[0]["allocator"]
    out["reason"] = _reason(ranking[0], cands, axis, margin)
    return out


def _over_budget(rows: list[dict], axis: dict, max_heap: int | None, max_insns: int | None,
                 dropped: list[str]) -> str:
    """Why no candidate is left: the budget that nothing fits, or the failures."""
    if max_heap is None and max_insns is None:
        return "every allocator with a heap fails: " + "; ".join(dropped)
    fit = rows
    if max_heap is not None:
        fit = [r for r in rows if r["heap"] <= max_heap]
        if not fit:
            best = min(rows, key=lambda r: r["heap"])
            return (f"no heap with margin fits --max-heap {render.fmt_kib(max_heap)}: the "
                    f"smallest is {best['allocator']}'s {render.fmt_kib(best['heap'])}")
    if max_insns is None:
        return f"every allocator within --max-heap fails: {'; '.join(dropped)}"
    best = min(fit, key=lambda r: row_cost(r, axis))
    return (f"no worst case within --max-instructions {max_insns:,}"
            + (f" and --max-heap {render.fmt_kib(max_heap)}" if max_heap is not None else "")
            + f": the lowest is {best['allocator']}'s {row_cost(best, axis):,.0f}"
            + (f" (left out: {'; '.join(dropped)})" if dropped else ""))


def _reason(pick: dict, cands: list[dict], axis: dict, margin: float) -> str:
    unit = axis["unit"]
    cost = row_cost(pick, axis)
    peer = " (a peer, not heapkit's)" if pick.get("family", "heapkit") != "heapkit" else ""
    head = (f"{pick['allocator']}{peer}: heap ≥ {render.fmt_kib(pick['min_heap'])}"
            + (f" (+{margin:g} % margin: {render.fmt_kib(pick['heap'])})" if margin > 0 else "")
            + f", worst case {cost:,.0f} {unit}")
    if growth(pick["allocator"]) is not None:
        head += f" on this trace (it grows with {growth(pick['allocator'])})"
    smaller = min(cands, key=lambda r: (r["min_heap"], row_cost(r, axis)))
    cheaper = min(cands, key=lambda r: (row_cost(r, axis), r["min_heap"]))
    if smaller is not pick and smaller["min_heap"] < pick["min_heap"]:
        g = growth(smaller["allocator"])
        but = (f"its worst case grows with {g}" if g and growth(pick["allocator"]) is None
               else f"its worst case is {row_cost(smaller, axis):,.0f} {axis['short']}")
        return (f"{head}; {smaller['allocator']} needs "
                f"{_pct(smaller['min_heap'], pick['min_heap'])} less heap but {but}")
    if cheaper is not pick and row_cost(cheaper, axis) < cost:
        g = growth(cheaper["allocator"])
        return (f"{head}; {cheaper['allocator']} has a lower worst case "
                f"({row_cost(cheaper, axis):,.0f} {axis['short']}) but needs "
                f"{_pct(cheaper['min_heap'], pick['min_heap'])} more heap"
                + (f" and its worst case grows with {g}" if g else ""))
    return f"{head}; the smallest heap and the lowest worst case of the {len(cands)} candidates"


# --------------------------------------------------------------------------
# Configuration

def _c_init(alloc: str) -> tuple[list[str], list[str]] | None:
    """(headers, body) of a function returning the heap built on app_heap_area, or None."""
    if alloc == "bump":
        return ["heapkit/bump.h"], [
            "hk_bump_t *h = hk_bump_init(app_heap_area, sizeof app_heap_area, &status);",
            "return h != NULL ? hk_bump_heap(h) : NULL;"]
    if alloc.startswith("seqfit-"):
        policy = "HK_SEQFIT_" + alloc.split("-", 1)[1].upper()
        return ["heapkit/seqfit.h"], [
            f"hk_seqfit_t *h = hk_seqfit_init(app_heap_area, sizeof app_heap_area, {policy},"
            " &status);",
            "return h != NULL ? hk_seqfit_heap(h) : NULL;"]
    if alloc in ("buddy", "buddy-lazy"):
        return ["string.h", "heapkit/buddy.h"], [
            "hk_buddy_config_t config;", "hk_buddy_t *h;", "memset(&config, 0, sizeof config);",
            f"config.lazy = {int(alloc == 'buddy-lazy')};",
            "h = hk_buddy_init(app_heap_area, sizeof app_heap_area, &config, &status);",
            "return h != NULL ? hk_buddy_heap(h) : NULL;"]
    if alloc == "tlsf":
        return ["heapkit/tlsf.h"], [
            "hk_tlsf_t *h = hk_tlsf_init(app_heap_area, sizeof app_heap_area, &status);",
            "return h != NULL ? hk_tlsf_heap(h) : NULL;"]
    if alloc.startswith("dmm-"):
        return ["heapkit/dmm.h"], [
            f"hk_dmm_t *h = hk_dmm_init(app_heap_area, sizeof app_heap_area, "
            f"hk_dmm_preset(\"{alloc.split('-', 1)[1]}\"), &status);",
            "return h != NULL ? hk_dmm_heap(h) : NULL;"]
    if alloc in ("poolset", "lfpool", "buddy-fib", "buddy-weighted"):
        # Their size classes, block size or size sequence are the catalog's configuration.
        return ["heapkit/catalog.h"], [
            f"return hk_catalog_find(\"{alloc}\")->make(app_heap_area, sizeof app_heap_area,"
            " &status);"]
    return None


def c_snippet(alloc: str, heap: int, align: int, note: str) -> str | None:
    """A C file defining ``hk_heap_t *app_heap_init(void)`` on a static heap, or None."""
    init = _c_init(alloc)
    if init is None:
        return None
    headers, body = init
    lines = [f"/* {note}",
             " * Build with heapkit's include/ on the include path and link the heapkit library",
             " * (built with the HK_ALIGN and HK_HARDENING the advice was measured with). */",
             "#include <stdint.h>"]
    lines += [f'#include "{h}"' if h.startswith("heapkit/") else f"#include <{h}>"
              for h in headers]
    lines += ["", f"#define APP_HEAP_SIZE {heap}u", "",
              f"static uint8_t app_heap_area[APP_HEAP_SIZE] __attribute__((aligned({align})));", "",
              "/* Once, before the first hk_malloc(heap, ...); NULL when the heap cannot be"
              " made. */",
              "hk_heap_t *app_heap_init(void)", "{", "    hk_status_t status;"]
    lines += [f"    {b}" for b in body] + ["}", ""]
    return "\n".join(lines)


def freertos_snippet(alloc: str, heap: int, align: int, note: str) -> dict | None:
    """{"heap_file", "config" (FreeRTOSConfig.h lines), "source" (generated heap file or
    None), "app" (the application-allocated ucHeap)}, or None (not a heapkit allocator)."""
    config = [f"/* {note} */",
              f"#define configTOTAL_HEAP_SIZE ((size_t){heap}u)"]
    source = None
    if alloc == "tlsf":
        heap_file = "ports/freertos/heap_tlsf.c"
    elif alloc in ("buddy", "buddy-lazy"):
        heap_file = "ports/freertos/heap_buddy.c"
        config.append(f"#define configHEAPKIT_BUDDY_LAZY {int(alloc == 'buddy-lazy')}")
    elif _c_init(alloc) is not None:
        heap_file = "heap_heapkit.c"
        source = "\n".join([
            f"/* heap_heapkit.c: a FreeRTOS heap on heapkit's {alloc} (written by heapkit advise;",
            " * ports/freertos/ has files for tlsf, buddy and pools). Compile it instead of",
            " * heap_4.c with heapkit's include/ and ports/freertos/ on the include path. */",
            '#include "heapkit/catalog.h"', '#include "heapkit_freertos_common.h"', "",
            "static hk_heap_t *prvHeapkitMake(void *arena, size_t size, hk_status_t *status)",
            "{", f'    return hk_catalog_find("{alloc}")->make(arena, size, status);', "}", ""])
    else:
        return None
    config.append("#define configAPPLICATION_ALLOCATED_HEAP 1")
    app = "\n".join([
        "/* In one of the application's C files: the heap, aligned as the advice measured it. */",
        '#include "FreeRTOS.h"',
        f"uint8_t ucHeap[configTOTAL_HEAP_SIZE] __attribute__((aligned({align})));", ""])
    return {"heap_file": heap_file, "config": "\n".join(config) + "\n", "source": source,
            "app": app}


def snippets(trace: str, row: dict, margin: float) -> dict:
    note = (f"heapkit advise, trace {trace}: {row['allocator']}, smallest heap "
            f"{row['min_heap']:,} bytes" + (f" + {margin:g} % margin" if margin > 0 else ""))
    align = int(row.get("arena_alignment") or 64)
    return {"c": c_snippet(row["allocator"], row["heap"], align, note),
            "freertos": freertos_snippet(row["allocator"], row["heap"], align, note)}


# --------------------------------------------------------------------------
# The document

def build_rows(trace: str, allocs: Sequence[dict], host: dict, targets: dict,
               detection: dict, margin: float) -> list[dict]:
    rows = []
    for a in allocs:
        name = a["name"]
        h = host.get((trace, name)) or {}
        row = {"allocator": name, "family": a["family"], "min_heap": h.get("min_heap"),
               "heap": heap_with_margin(h["min_heap"], margin) if h.get("min_heap") else None,
               "why_none": h.get("error") or h.get("why_none"),
               "nonmonotone": h.get("nonmonotone", False), "host": h.get("host"),
               "arena_alignment": h.get("arena_alignment"), "growth": growth(name),
               "targets": {}, "detects": None}
        for tname, t in targets.items():
            if "runs" in t:
                row["targets"][tname] = t["runs"].get((trace, name)) or {}
        if detection.get("entries") is not None:
            entry = detection["entries"].get(name)
            row["detects"] = {"text": detection_text(entry, detection.get("level")),
                              **(entry or {})}
        rows.append(row)
    return rows


def heapkit_gap(pick: dict, own: dict, axis: dict, tinfo: dict[str, dict]) -> dict:
    """What heapkit's best (*own*) costs against the recommended peer (*pick*): heap bytes
    more (its smallest heap and its heap with margin) and worst case more, per target counted
    (the host's p99 ns without counts)."""
    worst = {}
    for tname, t in own["targets"].items():
        theirs = (pick["targets"].get(tname) or {}).get("worst")
        if t.get("worst") is not None and theirs is not None:
            worst[(tinfo.get(tname) or {}).get("title", tname)] = t["worst"] - theirs
    if not worst and axis["kind"] == "host-p99":
        worst["host p99 ns"] = row_cost(own, axis) - row_cost(pick, axis)
    return {"allocator": own["allocator"], "min_heap": own["min_heap"] - pick["min_heap"],
            "heap": own["heap"] - pick["heap"], "worst": worst}


def advise_trace(name: str, info: dict, rows: list[dict], targets: dict, margin: float,
                 max_heap: int | None, max_insns: int | None,
                 configure: str | None = None) -> dict:
    """One trace's advice: the rows, the front, the one recommendation, and the
    configuration of the recommendation when it is heapkit's (of heapkit's best when a peer
    wins and *configure* is "heapkit")."""
    axis = cost_axis(targets, name)
    tinfo = {k: {"title": v.get("title", k), "arena": v.get("arena"), "board": v.get("board")}
             for k, v in targets.items()}
    d = decide(rows, axis, margin, max_heap, max_insns, tinfo)
    for r in rows:
        r["cost"] = row_cost(r, axis)
        r["on_front"] = r["allocator"] in d["front"]
    doc = {"trace": name, **info, "cost": axis, "rows": rows, **d}
    by_name = {r["allocator"]: r for r in rows}
    pick = d["recommendation"]
    if pick is None:
        return doc
    doc["family"] = by_name[pick]["family"]
    configured = pick
    if doc["family"] != "heapkit":
        own = next((a for a in d["ranking"] if by_name[a]["family"] == "heapkit"), None)
        doc["heapkit_best"] = own
        if own is not None:
            doc["heapkit_gap"] = heapkit_gap(by_name[pick], by_name[own], axis, tinfo)
        configured = own if configure == "heapkit" else None
    if configured:
        doc["config"] = {"allocator": configured, **snippets(name, by_name[configured], margin)}
    return doc


def document(traces: list[dict], targets: dict, detection: dict, settings: dict,
             library: dict, machine: dict) -> dict:
    """The heapkit-advise document (docs/advise.md). The matrices run on the engine's build,
    so the library's HK_HARDENING is theirs when the engine did not say."""
    if library.get("hk_hardening") is None:
        library = {**library, "hk_hardening": detection.get("level")}
    return {"kind": "heapkit-advise", "version": 1, "machine": machine, "settings": settings,
            "library": library, "rule": RULE,
            "targets": {k: {kk: vv for kk, vv in v.items() if kk != "runs"}
                        for k, v in targets.items()},
            "detection_error": detection.get("error"), "traces": traces}


def from_results(data: dict, traces: dict[str, dict], *, margin: float = DEFAULT_MARGIN,
                 targets: Sequence[str] = (), jobs: int = 2, progress: bool = True) -> dict:
    """The advice from results already measured (``heapkit demo``): the smallest heaps of its
    size searches, host time per operation from its replays at the default arena.

    *traces*: name -> {"path": .hkb the size search replayed, "records", "note"}; the
    target counts replay the same records, whatever their number."""
    from . import engine
    from .trace import Trace
    allocs = arena_allocators()
    host: dict[tuple[str, str], dict] = {}
    for r in data.get("size_runs", []):
        if r["trace"] in traces:
            res = r.get("result") or {}
            host[(r["trace"], r["allocator"])] = {
                "min_heap": render.get(res, "search.min_arena"),
                "nonmonotone": bool(render.get(res, "search.nonmonotone")),
                "why_none": r.get("error") or render.get(res, "search.reason"),
                "arena_alignment": render.get(res, "arena.alignment")}
    for r in data.get("runs", []):
        h = host.get((r["trace"], r["allocator"]))
        if h is not None and r.get("result"):
            h["host"] = host_stats(r["result"])
            h["host"]["failures"] = None   # a replay at the default arena, not at the heap
    names = [a["name"] for a in allocs]
    counted = [(n, Trace.load(t["path"]), fitted(host, n, names)) for n, t in traces.items()]
    eng = next((render.get(r.get("result") or {}, "engine")
                for r in data.get("runs", []) if r.get("result")), None) or {}
    hardening = eng.get("hk_hardening")
    tgt = measure_targets(counted, names, targets, hardening, jobs, progress,
                          heaps=heaps_needed(host, margin)) if counted else {}
    detection = measure_detection(names)
    docs = []
    for name, t in traces.items():
        rows = build_rows(name, allocs, host, tgt, detection, margin)
        docs.append(advise_trace(name, {"records": t["records"], "note": t.get("note", "")},
                                 rows, tgt, margin, None, None))
    settings = {"margin": margin, "max_heap": None, "max_instructions": None,
                "host_arena": "the engine's default (max(64 KiB, 4 x peak live requested))"}
    library = {"hk_align": eng.get("hk_align"), "hk_hardening": hardening}
    return document(docs, tgt, detection, settings, library, engine.machine())


def advise(paths: Sequence[str], *, allocs: str | None = None, margin: float = DEFAULT_MARGIN,
           targets: Sequence[str] | None = None, max_heap: int | None = None,
           max_insns: int | None = None, jobs: int = 2, progress: bool = True,
           configure: str | None = None) -> dict:
    """Measure and decide for the trace files *paths* (any importable format); *configure*
    "heapkit": configure heapkit's best when a peer is recommended."""
    from . import engine
    from .importers import import_trace
    from .trace import Trace, write_trace
    table = select(allocs, arena_allocators())
    tnames = available_targets() if targets is None else list(targets)
    if max_insns is not None and not tnames:
        raise HeapkitError("--max-instructions needs instruction counts: --target cortex-m3 or "
                           "rv32, with QEMU and the cross compilers installed")
    with tempfile.TemporaryDirectory(prefix="heapkit-advise-") as tmp:
        named: list[tuple[str, str]] = []
        info: dict[str, dict] = {}
        for path in paths:
            res = import_trace(path)
            base = Path(path).name.split(".")[0] or "trace"
            name, k = base, 2
            while name in info:
                name, k = f"{base}#{k}", k + 1
            out = os.path.join(tmp, f"{len(named)}.hkb")
            write_trace(res.trace, out)
            named.append((name, out))
            st = res.trace.stats()
            info[name] = {"path": str(path), "records": int(st.events),
                          "peak_live": int(st.peak_live_bytes)}
        host = measure_host(named, table, margin, jobs, progress)
        found = next((h for h in host.values() if h.get("hardening") is not None), {})
        library = {"hk_align": found.get("hk_align"), "hk_hardening": found.get("hardening")}
        hardening = library["hk_hardening"]
        names = [a["name"] for a in table]
        tgt = measure_targets([(n, Trace.load(p), fitted(host, n, names)) for n, p in named], names,
                              tnames, hardening, jobs, progress,
                              heaps=heaps_needed(host, margin)) if tnames else {}
    if max_insns is not None and not any("runs" in t for t in tgt.values()):
        raise HeapkitError("--max-instructions needs instruction counts, and none were made: "
                           + "; ".join(f"{k}: {v['error']}" for k, v in tgt.items()))
    detection = measure_detection(names)
    docs = [advise_trace(name, info[name], build_rows(name, table, host, tgt, detection, margin),
                         tgt, margin, max_heap, max_insns, configure) for name, _ in named]
    settings = {"margin": margin, "max_heap": max_heap, "max_instructions": max_insns,
                "host_arena": "the heap with margin", "alloc": allocs, "configure": configure}
    return document(docs, tgt, detection, settings, library, engine.machine())


# --------------------------------------------------------------------------
# `heapkit advise`

def config_note(t: dict) -> str | None:
    """What is configured for one trace, or why nothing is."""
    cfg, pick = t.get("config"), t.get("recommendation")
    if cfg and not (cfg["c"] or cfg["freertos"]):
        return f"not configured: advise writes no C or FreeRTOS file for {cfg['allocator']}"
    if cfg and cfg["allocator"] == pick:
        return f"configured: {pick}"
    if cfg:
        return (f"configured (--configure heapkit): {cfg['allocator']}, heapkit's best, not "
                "the recommendation")
    if pick and t.get("family") != "heapkit":
        heap = next(r["heap"] for r in t["rows"] if r["allocator"] == pick)
        return (f"not configured: {pick} is a peer (give it a {heap:,}-byte heap through its "
                "own API)" + (f"; --configure heapkit configures {t['heapkit_best']}"
                              if t.get("heapkit_best") else ""))
    return None


def config_text(t: dict) -> list[str]:
    """The configuration of one trace as printed: the C file, the FreeRTOS files."""
    cfg = t.get("config") or {}
    out = []
    if cfg.get("c"):
        out.append(f"-- {t['trace']}: C ({cfg['allocator']})\n{cfg['c']}")
    fr = cfg.get("freertos")
    if fr:
        out.append(f"-- {t['trace']}: FreeRTOS ({cfg['allocator']}): build {fr['heap_file']}; "
                   f"FreeRTOSConfig.h:\n{fr['config']}")
        out += [fr[key] for key in ("app", "source") if fr[key]]
    return out


def text(doc: dict, configuration: bool = False) -> list[str]:
    """The advice as text: the rule, then per trace the table, the front, the one
    recommendation and (with *configuration*) its C and FreeRTOS files."""
    tnames = [k for k, v in doc["targets"].items() if "error" not in v]
    out = [f"rule: {doc['rule']}", ""]
    lvl = doc["library"].get("hk_hardening")
    for t in doc["traces"]:
        axis = t["cost"]
        out.append(f"== {t['trace']}: {t['records']:,} records" +
                   (f", peak live {render.fmt_kib(t['peak_live'])}" if t.get("peak_live") else ""))
        header = (["allocator", "min heap", "with margin"] +
                  [f"{doc['targets'][k].get('title', k)} worst insns" for k in tnames] +
                  ["host ns/op", "worst case grows with", f"detects (HK_HARDENING {lvl})"])
        rows = []
        none: dict[str, list[str]] = {}
        for r in sorted(t["rows"], key=lambda r: (r["min_heap"] is None, r["min_heap"] or 0)):
            if not r["min_heap"]:
                none.setdefault(r["why_none"] or "no heap found", []).append(r["allocator"])
                continue
            cells = [r["allocator"] + (" *" if r.get("on_front") else ""),
                     f"{r['min_heap']:,}", f"{r['heap']:,}"]
            for k in tnames:
                tr = r["targets"].get(k) or {}
                cell = "-" if tr.get("worst") is None else f"{tr['worst']:,}"
                if tr.get("failures"):
                    cell += f" ({tr['failures']:,} failed)"
                elif tr.get("skipped"):
                    cell = "skipped"
                cells.append(cell)
            h = r.get("host") or {}
            cells.append(render.fmt_ns(h.get("ns_per_op"), h.get("step_ns")))
            cells.append(r["growth"] or "bounded")
            cells.append((r.get("detects") or {}).get("text", "not measured"))
            rows.append(cells)
        out.append(render.text_table(header, rows))
        for why, names in none.items():
            out.append(f"no heap: {', '.join(names)} ({why})")
        for k, v in doc["targets"].items():
            if "error" in v:
                out.append(f"{k}: not measured ({v['error']})")
            for name, why in (v.get("skipped_traces") or {}).items():
                if name == t["trace"]:
                    out.append(f"{k}: trace skipped ({why})")
        front = [r for r in t["rows"] if r.get("on_front")]
        front.sort(key=lambda r: r["min_heap"])
        out.append(f"Pareto front (*), smallest heap against {axis['label']}: " +
                   ", ".join(f"{r['allocator']} ({render.fmt_kib(r['min_heap'])}, "
                             f"{r['cost']:,.0f})" for r in front))
        for why in t.get("dropped") or []:
            out.append(f"left out: {why}")
        out += t.get("board_limits") or []
        if t["recommendation"]:
            out.append("recommendation: " + t["reason"])
            if t["family"] != "heapkit":
                out.append(render.advice_gap_text(t))
        else:
            out.append("no recommendation: " + t.get("why_none", ""))
        note = config_note(t)
        if note:
            out.append(note)
        out.append("")
        if configuration:
            out += config_text(t)
    if doc.get("detection_error"):
        out.append(f"misuse: not measured ({doc['detection_error']})")
    return out


def write_out(doc: dict, outdir: Path) -> list[Path]:
    """advice.json, and per recommended trace its C and FreeRTOS files."""
    outdir.mkdir(parents=True, exist_ok=True)
    written = [outdir / "advice.json"]
    written[0].write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")
    for t in doc["traces"]:
        cfg = t.get("config")
        if not cfg:
            continue
        d = outdir / _safe(t["trace"])
        d.mkdir(exist_ok=True)
        if cfg["c"]:
            written.append(d / "app_heap.c")
            written[-1].write_text(cfg["c"], encoding="utf-8")
        fr = cfg["freertos"]
        if fr:
            written.append(d / "FreeRTOSConfig_heap.h")
            written[-1].write_text(fr["config"], encoding="utf-8")
            for key, fname in (("source", "heap_heapkit.c"), ("app", "freertos_ucheap.c")):
                if fr[key]:
                    written.append(d / fname)
                    written[-1].write_text(fr[key], encoding="utf-8")
    return written


def _safe(name: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in name)


def parse_targets(text: str | None) -> list[str] | None:
    """--target: None (auto: every target whose tools are installed), [] (none) or names."""
    from . import target as tg
    if text is None:
        return None
    names = [p.strip() for p in text.split(",") if p.strip()]
    if names == ["none"]:
        return []
    bad = [n for n in names if n not in TARGETS]
    if bad or not names:
        raise HeapkitError(f"--target: {', '.join(bad) or 'nothing'} is not one of "
                           f"{', '.join(TARGETS)}, none")
    missing = {n: tg.missing_tools(n) for n in names}
    if any(missing.values()):
        raise HeapkitError("--target: missing tools: " + "; ".join(
            f"{n}: {', '.join(m)}" for n, m in missing.items() if m) + " (`make deps`)")
    return names


def run(args) -> int:
    """``heapkit advise TRACE... [options]`` (see cli.py for the options)."""
    if not 0 <= args.margin <= 1000:
        raise HeapkitError(f"--margin: {args.margin:g} is not a percentage from 0 to 1000")
    doc = advise(args.traces, allocs=args.alloc, margin=args.margin,
                 targets=parse_targets(args.target), max_heap=args.max_heap,
                 max_insns=args.max_instructions, jobs=args.jobs, progress=True,
                 configure=args.configure)
    print("\n".join(text(doc, configuration=not args.out)))
    if args.json:
        try:
            Path(args.json).write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")
        except OSError as e:
            raise HeapkitError(f"{args.json}: cannot write: {e.strerror or e}") from None
    if args.out:
        try:
            files = write_out(doc, Path(args.out))
        except OSError as e:
            raise HeapkitError(f"{args.out}: cannot write: {e.strerror or e}") from None
        print(f"wrote {len(files)} files under {args.out}")
    return 0
