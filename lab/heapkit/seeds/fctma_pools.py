# SPDX-License-Identifier: MIT
"""fctma-pools (FCTMA pools against SimpleDMA and heap_4, ITC benchmark, STM32F103):
Tables I-III on the ``itc`` workload (alloc/free costs in exact Cortex-M3 instructions at
-O0 and -O2, internal fragmentation), the ITC application on FreeRTOS in QEMU, the
section and the verdicts on the paper's claims."""

from __future__ import annotations

from typing import Any

from ..render import (Claim, NOISE_NOTE, TIMING_HEADER, UNTESTABLE, allocator_order, cap, esc,
                      failed, fmt_bytes, fmt_f, fmt_int, fmt_pct, focus_first, get, judged, missing,
                      runs_of, table, timing_rows)


# The paper's candidates and their stand-ins: FCTMA = one pool sized to the block ("pool"),
# SDMA = the lab's sdma (the paper's configuration of its reference [2]), Heap4 = the kernel's
# heap_4; SimpleDMA (heapkit's bump, FCTMA's base) and poolset (size classes) for contrast.
FCTMA_STANDINS = {"pool": "FCTMA", "freertos-heap4": "Heap4", "sdma": "SDMA",
                  "bump": "(SimpleDMA)", "poolset": "(poolset, classes)"}
FCTMA_CLOCK_MHZ = 72          # the paper's STM32F103
FCTMA_LEVELS = ("-O0", "-O2")  # -O0 as the paper compiled
ITC_KERNEL_STANDINS = {"heap_4": "Heap4 (pvPortMalloc)", "pool": "FCTMA (pool, no lock)",
                       "pool_sync": "FCTMA with its mutex and semaphore", "bump": "(SimpleDMA, bump)",
                       "sdma": "SDMA (48 KB chunk from heap_4)"}
# Thresholds of the verdicts, stated in their reasons.
SD_FACTOR = 50           # "more than 50 times", on the standard deviation per mille of the mean
SD_FLOOR_INSNS = 1.0     # the count's resolution: the paper's FCTMA sd (14 ns) is one cycle at 72 MHz
NEARLY = 0.5             # "about N times slower": at least N / 2
PAPER_FRAG_NP = 0.0311   # Table III's bracketed figure: the next pointer counted as user bytes
NEXT_POINTER = 4         # bytes of the header word the paper counts as user data
# Tables I-III as printed (ns; bytes).
FCTMA_PAPER = {
    "alloc": {"FCTMA": (2196, 2174, 2211, 14), "Heap4": (3300, 2706, 7111, 1070),
              "SDMA": (171600, 171600, 171600, 13.5)},
    "free": {"FCTMA": (957, 955, 958, 0.6663), "Heap4": (2847, 1943, 6874, 1095),
             "SDMA": (165800, 165800, 166100, 26)},
    "frag": {"FCTMA": (20558, 21878), "Heap4": (26114, 26939), "SDMA": (13152, 15936)},
}
FCTMA_INSN_HEAD = ["allocator", "stand-in for", "build", "calls", "Tmin insns", "median", "Tavg",
                   "Tmax", "std dev", "1000 sd/Tavg", "Tmin us", "Tavg us", "Tmax us"]
ITC_KERNEL_HEAD = ["heap", "stand-in for", "calls", "alloc min", "p50", "mean", "max", "sd",
                   "free min", "p50", "mean", "max", "sd"]


def _us(insns: Any) -> str:
    """Instructions as microseconds at the paper's clock, one instruction per cycle."""
    return "n/a" if insns is None else f"{insns / FCTMA_CLOCK_MHZ:,.2f}"


def fctma_target_stats(data: dict) -> dict[tuple[str, str], dict]:
    """{(build, allocator): stats per kind} from the demo's Cortex-M3 counts on itc."""
    doc = data["extra"].get("fctma_target") or {}
    out = {}
    for r in doc.get("runs", []):
        if r.get("stats") and r.get("result"):
            out[(r["build"], r["allocator"])] = r["stats"]
    return out


def fctma_insn_rows(stats: dict[tuple[str, str], dict], kind: str) -> list[list[Any]]:
    rows = []
    for build in FCTMA_LEVELS:
        for a, paper in FCTMA_STANDINS.items():
            st = stats.get((build, a))
            t = (st or {}).get(kind)
            if not t or not t.get("count"):
                continue
            permil = 1000.0 * t["sd"] / t["mean"] if t.get("mean") else None
            rows.append([a, paper, build, fmt_int(t["count"]), fmt_int(t["min"]), fmt_int(t["p50"]),
                         fmt_f(t["mean"]), fmt_int(t["max"]), fmt_f(t.get("sd"), 2), fmt_f(permil, 2),
                         _us(t["min"]), _us(t["mean"]), _us(t["max"])])
    return rows


def itc_kernel_rows(heaps: dict[str, dict]) -> list[list[Any]]:
    """One row per heap of a heapkit.itc_kernel level: alloc and free min/p50/mean/max/sd."""
    rows = []
    for h, res in heaps.items():
        row = [h, ITC_KERNEL_STANDINS.get(h, ""), fmt_int(res["alloc"]["count"])]
        for kind in ("alloc", "free"):
            t = res[kind]
            row += [fmt_int(t["min"]), fmt_int(t["p50"]), fmt_f(t["mean"]), fmt_int(t["max"]),
                    fmt_f(t["sd"], 2)]
        rows.append(row)
    return rows


def stress_of(kdoc: dict) -> list[tuple[str, dict]]:
    """(level, pool_sync's stress figures) for every kernel level that ran it."""
    return [(lvl, hs["pool_sync"]["stress"]) for lvl, hs in (kdoc.get("levels") or {}).items()
            if (hs.get("pool_sync") or {}).get("stress")]


def check_failed(c: dict | None) -> bool:
    """A check run whose firmware reported a failure (non-zero exit); None is no run."""
    return c is not None and c.get("status") != 0


def _kernel_checks(kdoc: dict) -> str:
    """The multitasking stress and the ISR pool (itc_kernel's checks), as one caption."""
    checks = kdoc.get("checks") or {}
    out = []
    for lvl, st in stress_of(kdoc):
        out.append(f"Multitasking stress ({esc(lvl)}): {st['tasks']} tasks preempting each other inside "
                   f"the locked pool's calls, {st['ops']:,} operations, {st['overlaps']} blocks found "
                   f"overwritten, {st['free_after']} of {st['free_before']} blocks free at the end.")
    race = checks.get("itc_pool_race")
    if race:
        out.append(f"The same stress on the pool without its lock: exit status {race['status']} "
                   f"({esc(race['message'])}).")
    isr, isr_race = checks.get("isr_lfpool"), checks.get("isr_pool_race")
    r = (isr or {}).get("result")
    if r:
        out.append(f"ISR-safe pool (lfpool, {esc(isr['level'])}; examples/firmware-itc/isr_pool.c): "
                   f"{r['tasks']} tasks and the CMSDK timer 1 interrupt, {r['ops']:,} operations, the "
                   f"interrupt inside a task's pool call {r['isr_inside_task_call']:,} times; handed out "
                   f"twice {r['twice']}, overwritten {r['overlap']}, free at the end {r['free_end']} of "
                   f"{r['blocks']}, exit status {isr['status']}. From the ISR, instructions per call: "
                   f"alloc {r['isr_alloc']['min']}-{r['isr_alloc']['max']} (worst {r['isr_alloc']['max']}), "
                   f"free {r['isr_free']['min']}-{r['isr_free']['max']} (worst {r['isr_free']['max']}).")
    if isr_race:
        rr = isr_race.get("result") or {}
        out.append(f"The same on heapkit's plain pool (no lock): exit status {isr_race['status']}"
                   + (f", handed out twice {rr['twice']}, free at the end {rr['free_end']} of {rr['blocks']}"
                      if rr else "") + ".")
    return cap(" ".join(out)) if out else ""


def _not_measured(doc: dict | None, what: str) -> str:
    why = (doc or {}).get("missing") or (doc or {}).get("error")
    return f'<p class="na">{esc(what)}: not measured in these results{": " + esc(why) if why else ""}.</p>'


def fctma_frag(data: dict) -> dict[str, dict]:
    """Table III per allocator: the paper's internal fragmentation at the peak-live record of
    itc, each allocator at its smallest failure-free arena where the demo found it."""
    bench = runs_of(data, "itc")
    mins = {e["allocator"]: e for e in data["extra"].get("itc_min", []) if e.get("result")}
    out = {}
    for a in bench:
        r = mins.get(a) or bench[a]
        apl = get(r.get("result") or {}, "replay.at_peak_live") or {}
        if failed(r) or not apl or apl.get("footprint") is None:
            out[a] = {"run": r, "error": failed(r) or "footprint not observable"}
            continue
        user, fp, ext = apl["requested"], apl["footprint"], apl["external"]
        total = fp - ext
        out[a] = {"run": r, "user": user, "granted": apl["granted"], "blocks": apl.get("blocks"),
                  "metadata": apl["metadata"], "total": total, "footprint": fp,
                  "frag": 1 - user / total if total else None,
                  "frag_fp": 1 - user / fp if fp else None,
                  "failures": get(r["result"], "replay.failures.total"),
                  "arena": r.get("arena") if a in mins else None}
    return out


def fctma_frag_m3(data: dict) -> dict | None:
    """Table III of the pool on the Cortex-M3 (the kernel run's first level that has it):
    {"level", "blocks", "user", "total", "frag"}, or None."""
    for level, heaps in ((data["extra"].get("itc_kernel") or {}).get("levels") or {}).items():
        t3 = (heaps.get("pool") or {}).get("table3")
        if t3:
            total = t3["control"] + t3["peak_used"]
            return {"level": level, "blocks": t3["blocks"], "user": t3["user"], "total": total,
                    "frag": 1 - t3["user"] / total if total else None}
    return None


def section_fctma(data: dict) -> str:
    trace = "itc"
    bench = runs_of(data, trace)
    extra = data["extra"]
    if not bench and not extra.get("fctma_target") and not extra.get("itc_kernel"):
        return missing(trace, "run <code>heapkit demo</code> (or <code>heapkit bench "
                       "--workload itc --json</code>).")
    parts = []
    stats = fctma_target_stats(data)
    tdoc = extra.get("fctma_target") or {}
    for title, kind, pk in (("Table I: duration of alloc()", "malloc", "alloc"),
                            ("Table II: duration of free()", "free", "free")):
        parts.append(f"<h3>{title}: Cortex-M3 instructions per call</h3>")
        rows = fctma_insn_rows(stats, kind)
        if rows:
            parts.append(table(FCTMA_INSN_HEAD, rows, focus=[i for i, r in enumerate(rows)
                                                             if r[0] == "pool"], text_cols=[1, 2]))
        else:
            parts.append(_not_measured(tdoc, "Cortex-M3 counts"))
        paper = "; ".join(f"{k} Tavg {v[0]:,} ns (min {v[1]:,}, max {v[2]:,}, sd {v[3]:g})"
                          for k, v in FCTMA_PAPER[pk].items())
        parts.append(cap(f"Exact instruction counts of every {kind} call of the itc workload on "
                         "QEMU mps2-an385's Cortex-M3 (-icount, SysTick read around each direct "
                         "call, heapkit bench --target cortex-m3), at -O0 as the paper compiled "
                         "and at -O2; heap_4's vTaskSuspendAll/xTaskResumeAll are the no-op stubs "
                         "of a kernel-less image, as the paper's probes sat inside that block. "
                         f"Microseconds at the paper's {FCTMA_CLOCK_MHZ} MHz take one instruction "
                         "as one cycle (a Cortex-M3 load takes two and flash wait states add "
                         "more, so real times are longer). "
                         + "SDMA is the lab's sdma (lab/target/sdma.c: 15 classes, LTB1/LTB2 "
                         "in flash, lifetime mask 255, no split or merge), the arena as its chunk. "
                         + ("The bump (the paper's SimpleDMA, FCTMA's base) is replayed on the "
                            "prefix of itc its arena holds (it never reuses a block). "
                            if any(r[0] == "bump" for r in rows) else "")
                         + f"Paper (STM32F103 at 72 MHz, oscilloscope, -O0): {paper}."))
    # Host timings, secondary
    mins = {e["allocator"]: e for e in extra.get("itc_min", []) if e.get("result")}
    allocs = focus_first([a for a in allocator_order(data) if a in bench], tuple(FCTMA_STANDINS))
    if allocs:
        runs = {a: mins.get(a) or bench[a] for a in allocs}
        notes = {a: (f"arena {fmt_bytes(mins[a]['arena'])} B (smallest without failures)"
                     if a in mins else "default arena") for a in allocs}
        nfocus = sum(a in FCTMA_STANDINS for a in allocs)
        for title, kind in (("alloc()", "malloc"), ("free()", "free")):
            parts.append(f"<h3>Host nanoseconds, {title} (secondary)</h3>")
            parts.append(table(TIMING_HEADER[:-1] + ["arena"], timing_rows(runs, allocs, kind, notes),
                               focus=range(nfocus), text_cols=[-1]))
        parts.append(cap(esc(NOISE_NOTE)))
    # The ITC application on the real kernel
    kdoc = extra.get("itc_kernel") or {}
    parts.append("<h3>The ITC application on FreeRTOS (real kernel, emulated Cortex-M3): "
                 "instructions per call</h3>")
    if kdoc.get("levels"):
        for level, heaps in kdoc["levels"].items():
            parts.append(f"<p>{esc(level)}</p>")
            parts.append(table(ITC_KERNEL_HEAD, itc_kernel_rows(heaps), text_cols=[1],
                               focus=[i for i, h in enumerate(heaps) if h == "pool"]))
        parts.append(cap(f"examples/firmware-itc (make itc-kernel): {esc(kdoc.get('kernel', ''))} on "
                         f"{esc(kdoc.get('board', ''))}; 10 producer and 10 consumer tasks pass "
                         f"{fmt_int(kdoc.get('blocks'))} blocks of {fmt_int(kdoc.get('block'))} B "
                         "through a queue, each call counted with interrupts masked, between two "
                         "reads of the CMSDK timer 0 (the kernel owns SysTick), calibrated in the "
                         "running kernel with callees of 1 and 1000 instructions. heap_4's counts "
                         "include its vTaskSuspendAll/xTaskResumeAll; pool_sync's its mutex and "
                         "counting semaphore (FreeRTOS objects, hk_pool_set_sync), as the paper "
                         "timed FCTMA; the pool, the bump and sdma are called directly by the "
                         "tasks. sdma serves a chunk it took from heap_4 at start-up: 48 KB, as up to 328 "
                         "blocks can be live here, against the seed's 32 KB for its ~100."))
        parts.append(_kernel_checks(kdoc))
    else:
        parts.append(_not_measured(kdoc, "The kernel run"))
    # Table III
    frag = fctma_frag(data)
    rows = []
    order = focus_first(list(frag), tuple(FCTMA_STANDINS))
    for a in order:
        f = frag[a]
        dflt = fmt_int(get(bench[a].get("result") or {}, "replay.failures.total"))
        where = f"arena {fmt_bytes(f['arena'])} B (smallest without failures)" if f.get("arena") \
            else "default arena"
        if "error" in f:
            rows.append([a, FCTMA_STANDINS.get(a, "")] + ["n/a"] * 9 + [dflt, f["error"]])
            continue
        per_block = f["granted"] / f["blocks"] if f.get("blocks") else None
        rows.append([a, FCTMA_STANDINS.get(a, ""), fmt_bytes(f["user"]), fmt_bytes(f["granted"]),
                     fmt_f(per_block), fmt_bytes(f["metadata"]), fmt_bytes(f["total"]),
                     fmt_pct(f["frag"]), fmt_bytes(f["footprint"]), fmt_pct(f["frag_fp"]),
                     fmt_int(f["failures"]), dflt, where])
    if rows:
        parts.append("<h3>Table III: internal fragmentation at the peak-live moment</h3>")
        parts.append(table(["allocator", "stand-in for", "user bytes", "granted B", "granted per block",
                            "control + headers B", "total B (granted + control)", "internal frag.",
                            "footprint B", "frag. incl. free holes", "failures",
                            "failures at default arena", "arena"], rows,
                           focus=[i for i, a in enumerate(order) if a == "pool"], text_cols=[1, -1]))
        pf = FCTMA_PAPER["frag"]
        parts.append(cap("The paper's definition: internal fragmentation = 1 - user bytes / total "
                         "bytes, user bytes = live requested bytes at the peak-live record, total = "
                         "the footprint (the engine's at_peak_live.footprint) minus the free blocks "
                         "below it: every byte handed out or spent on control data and headers. "
                         "Granted per block shows what a 127-byte request takes: one block of the "
                         "pool sized to it, a size class of poolset. Each allocator at its smallest "
                         "failure-free arena of itc. On a 64-bit host a pool's header is two "
                         "8-byte words, against the paper's 8 bytes on the Cortex-M3. Paper: "
                         + "; ".join(f"{k} {u:,} of {t:,} B ({100 * (1 - u / t):.2f} %)"
                                     for k, (u, t) in pf.items()) + "."))
    m3 = fctma_frag_m3(data)
    if m3:
        parts.append(cap(f"On the Cortex-M3 (the kernel run above, {esc(m3['level'])}; 8-byte block "
                         f"headers as in the paper): the pool held at most {m3['blocks']:,} blocks "
                         f"at once, {m3['user']:,} user bytes of {m3['total']:,} B (those blocks' "
                         f"gross bytes and the pool's control data): internal fragmentation "
                         f"{fmt_pct(m3['frag'])}."))
    return "\n".join(parts)


def _ratio(a: float | None, b: float | None) -> float | None:
    return a / b if a is not None and b else None


def _permil(t: dict, floor: float = 0.0) -> float:
    """1000 * sd / mean (the paper's last column), the sd taken as at least *floor*."""
    return 1000.0 * max(t["sd"], floor) / t["mean"]


def claims_fctma(data: dict) -> list[Claim]:
    """The fctma-pools paper's claims judged on the Cortex-M3 counts of itc (-O0 as the paper
    compiled, -O2 alongside), the kernel run (with and without FCTMA's locks, the stress, the
    ISR pool) and Table III. Each threshold is stated in its reason."""
    out: list[Claim] = []
    stats = fctma_target_stats(data)
    levels = [b for b in FCTMA_LEVELS if (b, "pool") in stats]

    def t(build: str, alloc: str, kind: str) -> dict | None:
        st = (stats.get((build, alloc)) or {}).get(kind)
        return st if st and st.get("count") else None

    def both(kind: str, alloc: str, stat: str) -> str:
        return ", ".join(f"{fmt_f(t(b, alloc, kind)[stat], 1)} at {b}" for b in levels
                         if t(b, alloc, kind))

    paper0 = "-O0" if "-O0" in levels else (levels[0] if levels else None)
    if paper0 and t(paper0, "pool", "malloc") and t(paper0, "freertos-heap4", "malloc"):
        p, h = t(paper0, "pool", "malloc"), t(paper0, "freertos-heap4", "malloc")
        out.append(judged(
            "FCTMA's alloc() is faster on average than heap_4's (Table I: 2196 vs 3300 ns, 1.5 times), "
            "the pool's own code",
            h["mean"] > p["mean"],
            f"Mean Cortex-M3 instructions per malloc on itc: pool {both('malloc', 'pool', 'mean')}, heap_4 "
            f"{both('malloc', 'freertos-heap4', 'mean')}; heap_4 / pool = "
            f"{fmt_f(_ratio(h['mean'], p['mean']), 2)} at {paper0} against the paper's 1.50 (holds when "
            "above 1)."))
        hp, pp, pf = _permil(h), _permil(p), _permil(p, SD_FLOOR_INSNS)
        out.append(judged(
            "heap_4's alloc() standard deviation is more than 50 times FCTMA's (Table I: 324.24 vs "
            "6.38 per mille of the mean)",
            hp > SD_FACTOR * pf,
            f"Standard deviation per mille of the mean at {paper0}, as the paper's last column: heap_4 "
            f"{fmt_f(hp, 2)} (sd {fmt_f(h['sd'], 2)} of {fmt_f(h['mean'], 1)} instructions), pool "
            f"{fmt_f(pp, 2)} (sd {fmt_f(p['sd'], 2)} of {fmt_f(p['mean'], 1)}). The pool's sd is taken as "
            f"at least {SD_FLOOR_INSNS:g} instruction, the count's resolution (the paper's 14 ns is one "
            f"cycle at 72 MHz), so the pool counts {fmt_f(pf, 2)}; holds when heap_4's exceeds "
            f"{SD_FACTOR} times that, {fmt_f(SD_FACTOR * pf, 2)}."))
    if paper0 and t(paper0, "pool", "free") and t(paper0, "freertos-heap4", "free"):
        p, h = t(paper0, "pool", "free"), t(paper0, "freertos-heap4", "free")
        r = _ratio(h["mean"], p["mean"])
        out.append(judged(
            "FCTMA's free() is nearly 3 times faster than heap_4's (Table II: 957 vs 2847 ns), the "
            "pool's own code",
            r is not None and r >= 2.5,
            f"Mean instructions per free: pool {both('free', 'pool', 'mean')}, heap_4 "
            f"{both('free', 'freertos-heap4', 'mean')}; heap_4 / pool = {fmt_f(r, 2)} at {paper0}, "
            "counted as 'nearly 3' from 2.5 on."))
        out.append(judged(
            "FCTMA's free() standard deviation is practically zero (Table II: 0.67 ns, 0.7 per mille)",
            p["sd"] <= 0.001 * p["mean"],
            f"Pool free at {paper0}: sd {fmt_f(p['sd'], 3)} instructions over {fmt_int(p['count'])} calls, "
            f"min {p['min']}, max {p['max']} (practically zero: at most 1 per mille of the mean)."))
    if levels:
        spans = [(b, k, t(b, "pool", k)) for b in levels for k in ("malloc", "free") if t(b, "pool", k)]
        out.append(judged(
            "FCTMA allocates and frees in constant time",
            all(x["min"] == x["max"] for _, _, x in spans),
            "Pool instructions per call over every itc call: " + "; ".join(
                f"{k} {x['min']}-{x['max']} at {b}" for b, k, x in spans) + " (constant: min = max)."))
    if paper0 and t(paper0, "sdma", "malloc") and t(paper0, "pool", "malloc"):
        for kind, factor, ns in (("malloc", 78, "171600 vs 2196"), ("free", 173, "165800 vs 957")):
            b, p = t(paper0, "sdma", kind), t(paper0, "pool", kind)
            if not b or not p:
                continue
            r = _ratio(b["mean"], p["mean"])
            out.append(judged(
                f"SDMA's {'alloc' if kind == 'malloc' else 'free'}() is about {factor} times slower than "
                f"FCTMA's (Table {'I' if kind == 'malloc' else 'II'}: {ns} ns)",
                r is not None and r >= factor * NEARLY,
                f"SDMA (sdma: lookup-table indices, no split or merge) takes {fmt_f(b['mean'], 1)} "
                f"instructions per {kind} on average at {paper0}, the pool {fmt_f(p['mean'], 1)}: "
                f"{fmt_f(r, 2)} times (counted as about {factor} from {fmt_f(factor * NEARLY, 1)} on)."))
        sd = [(k, t(paper0, "sdma", k)) for k in ("malloc", "free") if t(paper0, "sdma", k)]
        out.append(judged(
            "SDMA's standard deviation is very low (Tables I-II: 0.08 and 0.1 per mille)",
            all(x["sd"] <= 0.01 * x["mean"] for _, x in sd),
            f"sdma at {paper0}: " + "; ".join(
                f"{k} sd {fmt_f(x['sd'], 2)} of mean {fmt_f(x['mean'], 1)} ({fmt_f(_permil(x), 2)} per mille, "
                f"min {x['min']}, max {x['max']})" for k, x in sd)
            + " (very low: at most 10 per mille)."))
    rivals = sorted({a for (b, a) in stats if b == paper0 and a not in ("pool", "bump")})
    if paper0 and t(paper0, "pool", "malloc") and t(paper0, "pool", "free") and rivals:
        p = {k: t(paper0, "pool", k) for k in ("malloc", "free")}
        beaten = {k: [a for a in rivals if t(paper0, a, k) and t(paper0, a, k)["mean"] <= p[k]["mean"]]
                  for k in p}
        fastest = {k: min((a for a in rivals if t(paper0, a, k)), key=lambda a: t(paper0, a, k)["mean"],
                          default=None) for k in p}
        out.append(judged(
            "FCTMA is faster than any conventional dynamic memory allocator",
            not beaten["malloc"] and not beaten["free"],
            f"Judged on the {len(rivals)} other allocators counted on itc at {paper0} ({', '.join(rivals)}), "
            "each its own code with no lock taken (the locked pool's verdicts below compare it with heap_4 on "
            "the kernel): holds when the pool's mean malloc and mean free are below every one of theirs. Pool malloc "
            f"{fmt_f(p['malloc']['mean'], 1)}, free {fmt_f(p['free']['mean'], 1)}; " + "; ".join(
                f"fastest other {k} {fastest[k]} {fmt_f(t(paper0, fastest[k], k)['mean'], 1)}"
                for k in p if fastest[k])
            + ("; not beaten by: " + ", ".join(sorted(set(beaten["malloc"] + beaten["free"])))
               if beaten["malloc"] or beaten["free"] else "") + "."))
    frag = fctma_frag(data)
    f_pool, f_h4, f_sdma = (frag.get(a, {}).get("frag") for a in ("pool", "freertos-heap4", "sdma"))
    m3 = fctma_frag_m3(data)
    if m3 and m3["frag"] is not None:
        out.append(judged(
            "FCTMA's internal fragmentation is low, 6.03 % on ITC (Table III)",
            m3["frag"] <= 2 * 0.0603,
            f"On the Cortex-M3 kernel run the pool's internal fragmentation by the paper's definition "
            f"is {fmt_pct(m3['frag'])} ({m3['user']:,} user bytes of {m3['total']:,}), counted as "
            "agreeing up to twice the paper's 6.03 %" + (
                f"; on the 64-bit host, with 16-byte headers, {fmt_pct(f_pool)}." if f_pool is not None
                else ".")))
        np_user = m3["user"] + NEXT_POINTER * m3["blocks"]
        f_np = 1 - np_user / m3["total"] if m3["total"] else None
        out.append(judged(
            "using the blocks' next pointer as user data brings the fragmentation to 3.11 % (Table III)",
            f_np is not None and f_np <= 2 * PAPER_FRAG_NP,
            f"The paper's accounting on the Cortex-M3 kernel run: the {NEXT_POINTER}-byte link word of "
            f"each of the {m3['blocks']:,} blocks counted as user bytes gives {np_user:,} of "
            f"{m3['total']:,} B, {fmt_pct(f_np)} (agreeing up to twice the paper's 3.11 %)."))
    elif f_pool is not None:
        out.append(judged(
            "FCTMA's internal fragmentation is low, 6.03 % on ITC (Table III)",
            f_pool <= 2 * 0.0603,
            f"The pool's internal fragmentation by the paper's definition is {fmt_pct(f_pool)} on itc "
            "(on a 64-bit host a block header is 16 bytes, the paper's 8), counted as agreeing up to "
            "twice the paper's 6.03 %."))
    if f_pool is not None and f_h4 is not None:
        out.append(judged(
            "FCTMA's internal fragmentation is equal or comparable to heap_4's (Table III: 6.03 vs 3.06 %)",
            f_pool <= 2 * f_h4 + 0.01,
            f"Pool {fmt_pct(f_pool)}, heap_4 {fmt_pct(f_h4)} by the paper's definition on itc "
            "(comparable: at most twice heap_4's, plus one point)."))
    if f_sdma is not None and f_pool is not None and f_h4 is not None:
        out.append(judged(
            "SDMA has the highest internal fragmentation of the three (Table III: 17.47 %)",
            f_sdma > max(f_pool, f_h4),
            f"sdma {fmt_pct(f_sdma)}, pool {fmt_pct(f_pool)}, heap_4 {fmt_pct(f_h4)} by the paper's "
            "definition on itc, each at its smallest failure-free arena (holds when sdma's is the largest)."))
    kdoc = data["extra"].get("itc_kernel") or {}
    kern = kdoc.get("levels") or {}
    if kern:
        runs = [(lvl, h, res) for lvl, hs in kern.items() for h, res in hs.items()]
        out.append(judged(
            "the ITC application runs on FreeRTOS with each allocator, every block delivered intact",
            all(res["alloc"]["count"] == res["blocks"] == res["free"]["count"] for _, _, res in runs)
            and {h for _, h, _ in runs} >= {"heap_4", "pool", "sdma"},
            "On FreeRTOS V11.2.0 in QEMU: " + "; ".join(
                f"{h} {lvl} {res['alloc']['count']} allocs, {res['free']['count']} frees, at most "
                f"{res['live_max']} live" for lvl, h, res in runs) + "."))
        pools = [(lvl, hs["pool"], hs.get("heap_4")) for lvl, hs in kern.items() if "pool" in hs]
        out.append(judged(
            "on the kernel, FCTMA serves the ITC tasks in constant time and faster than heap_4",
            all(p[k]["min"] == p[k]["max"] and (h is None or p[k]["mean"] < h[k]["mean"])
                for _, p, h in pools for k in ("alloc", "free")),
            "Instructions per call in the kernel run: " + "; ".join(
                f"{lvl} pool alloc {p['alloc']['min']}-{p['alloc']['max']}, free "
                f"{p['free']['min']}-{p['free']['max']}" + (
                    f", heap_4 alloc mean {fmt_f(h['alloc']['mean'])} (max {h['alloc']['max']}), free mean "
                    f"{fmt_f(h['free']['mean'])} (max {h['free']['max']})" if h else "")
                for lvl, p, h in pools) + " (heap_4's include its scheduler suspension)."))
        locked = [(lvl, hs["pool_sync"], hs["heap_4"]) for lvl, hs in kern.items()
                  if "pool_sync" in hs and "heap_4" in hs]
        lk0 = next(((lvl, p, h) for lvl, p, h in locked if lvl == "-O0"), locked[0] if locked else None)
        if lk0:
            lvl, p, h = lk0
            ra, rf = _ratio(h["alloc"]["mean"], p["alloc"]["mean"]), _ratio(h["free"]["mean"], p["free"]["mean"])
            detail = "; ".join(f"{lv} alloc {fmt_f(pp['alloc']['mean'])} against heap_4's {fmt_f(hh['alloc']['mean'])}, "
                               f"free {fmt_f(pp['free']['mean'])} against {fmt_f(hh['free']['mean'])}"
                               for lv, pp, hh in locked)
            out.append(judged(
                "FCTMA's alloc(), its mutex and semaphore included as the paper timed it, is faster on "
                "average than heap_4's (Table I: 1.5 times)",
                ra is not None and ra > 1,
                f"Mean instructions per call in the kernel run, pool_sync (FreeRTOS mutex and counting "
                f"semaphore attached) and heap_4 (its scheduler suspension included): {detail}; heap_4 / "
                f"pool_sync alloc = {fmt_f(ra, 2)} at {lvl} (holds when above 1). The locks are FreeRTOS "
                "V11's queue-based mutex and counting semaphore; the paper's toolchain had its own "
                "32-bit optimised ones."))
            out.append(judged(
                "FCTMA's free(), its mutex and semaphore included, is nearly 3 times faster than heap_4's "
                "(Table II)",
                rf is not None and rf >= 2.5,
                f"heap_4 / pool_sync free = {fmt_f(rf, 2)} at {lvl} ({fmt_f(h['free']['mean'])} against "
                f"{fmt_f(p['free']['mean'])} instructions), counted as 'nearly 3' from 2.5 on."))
    stress = stress_of(kdoc)
    checks = kdoc.get("checks") or {}
    if stress:
        race = checks.get("itc_pool_race")
        clean = all(st["overlaps"] == 0 and st["free_after"] == st["free_before"] and st["ops"] > 0
                    for _, st in stress)
        out.append(judged(
            "the pool's mutex and semaphore make FCTMA safe for multitasking",
            clean and check_failed(race),
            "On the kernel, " + "; ".join(
                f"{lvl}: {st['tasks']} tasks preempting each other inside the locked pool's calls for "
                f"{st['ops']:,} operations, each block stamped by its holder and checked before its free: "
                f"{st['overlaps']} overwritten, {st['free_after']} of {st['free_before']} blocks free at the end"
                for lvl, st in stress)
            + (f"; the same stress on the pool without its lock fails (exit status {race['status']}: "
               f"{race['message']})" if check_failed(race) else
               "; the same stress on the pool without its lock " + ("was not run" if race is None else
                                                                   "passed too, so the stress proves nothing"))
            + " (holds when the locked pool passes and the unlocked one is caught)."))
    isr, isr_race = checks.get("isr_lfpool"), checks.get("isr_pool_race")
    if isr and isr.get("result"):
        r = isr["result"]
        ok = (isr["status"] == 0 and r["ops"] >= 1_000_000 and r["twice"] == r["overlap"] == 0
              and r["free_end"] == r["blocks"] and r["isr_inside_task_call"] > 0)
        out.append(judged(
            "future work: an ISR-safe pool serves an interrupt handler and tasks at once (heapkit's lfpool)",
            ok and check_failed(isr_race),
            f"lfpool on the kernel at {isr['level']}: {r['tasks']} tasks and the timer 1 interrupt, "
            f"{r['ops']:,} operations, the interrupt inside a task's pool call {r['isr_inside_task_call']:,} "
            f"times; handed out twice {r['twice']}, overwritten {r['overlap']}, {r['free_end']} of {r['blocks']} "
            f"blocks free at the end; worst case from the ISR {r['isr_alloc']['max']} instructions per alloc, "
            f"{r['isr_free']['max']} per free; heapkit's plain pool in its place "
            + ("fails the same checks" if check_failed(isr_race) else "was not caught, so the run proves nothing")
            + " (holds with at least 1,000,000 operations, no block lost, twice or overwritten, and the "
              "plain pool caught)."))
    if out:
        out.append(Claim("FCTMA makes embedded software easier and safer to write, and suits ultra low "
                         "energy systems", UNTESTABLE, "These are qualitative or energy claims, and no "
                         "energy is measured on an emulator."))
    return out
