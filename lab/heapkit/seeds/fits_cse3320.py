# SPDX-License-Identifier: MIT
"""fits-cse3320 (first, next, best and worst fit with counters): the counters table on
the ``cse3320`` workload at heapkit's header and at the paper's 24-byte header, timing in
exact Cortex-M3 instructions, the resident-size comparison with glibc, the ranking as
measured, the section and the verdicts on the report's claims."""

from __future__ import annotations

from typing import Sequence

from ..render import (Claim, NOISE_NOTE, UNTESTABLE, allocator_order, cap, clock_step, esc, failed,
                      fmt_f, fmt_int, fmt_ns, fmt_pct, get, judged, missing, runs_of, table,
                      timing)


CSE_FITS = (("seqfit-first", "First Fit"), ("seqfit-next", "Next Fit"),
            ("seqfit-best", "Best Fit"), ("seqfit-worst", "Worst Fit"))
CSE_COUNTERS = ("reuses", "grows", "splits", "coalesces", "free_blocks", "requested", "max_heap")


# The seed's counters table, per fit: reuses, grows, splits, coalesces, blocks, requested, max heap.
CSE_PAPER_KEYS = ("reuses", "grows", "splits", "coalesces", "heap_blocks", "requested", "max_heap")
CSE_PAPER = {"seqfit-first": (10, 22, 10, 30, 1, 20296, 17016),
             "seqfit-next": (10, 22, 10, 29, 2, 20296, 17016),
             "seqfit-best": (11, 21, 10, 29, 1, 20296, 11992),
             "seqfit-worst": (10, 22, 10, 30, 1, 20296, 17016)}
# The seed's malloc test: mean ns per malloc and free in a GitHub codespace.
CSE_PAPER_NS = {"system": (127, 35), "seqfit-first": (153, 42), "seqfit-next": (154, 44),
                "seqfit-best": (206, 45), "seqfit-worst": (209, 46)}
# The seed's conclusion: System, then Best Fit and First Fit tied, then Worst Fit, then Next Fit.
CSE_PAPER_RANK = (("system",), ("seqfit-best", "seqfit-first"), ("seqfit-worst",), ("seqfit-next",))
# Instruction counts within this fraction of each other are one place (the seed tied 153 and 154 ns).
CSE_TIE = 0.05


def cse_name(alloc: str) -> str:
    return dict(CSE_FITS).get(alloc, "System" if alloc in ("system", "newlib", "glibc") else alloc)


def cse3320_header_runs(data: dict) -> dict[tuple[str, int], dict]:
    """{(fit, header bytes): counters} of the one-round runs at heapkit's and the seed's header."""
    hdr = get(data, "extra.cse3320.header") or {}
    return {(r["allocator"], r["header"]): r["counters"] for r in hdr.get("runs", [])}


def cse3320_icounts(data: dict) -> dict[str, dict]:
    """{allocator: {"malloc": stats, "free": stats}} on the Cortex-M3, the C library as "system"."""
    ic = get(data, "extra.cse3320.icount") or {}
    return {("system" if r["allocator"] not in CSE_PAPER else r["allocator"]): r
            for r in ic.get("runs", []) if "malloc" in r}


def cse3320_rss(data: dict) -> dict[str, dict]:
    """{allocator: peak RSS run} of the seed's test process, glibc as "system"."""
    rss = get(data, "extra.cse3320.rss") or {}
    return {("system" if c["allocator"] == "glibc" else c["allocator"]): c
            for c in rss.get("configs", [])}


def cse3320_ranking(data: dict) -> list[list[str]] | None:
    """The measured ranking, best first, as places of tied allocators, by the seed's
    criteria: a fit that leaves more free blocks at the end (at the seed's header) ranks
    below; among fits that leave as many, one joins the place above unless a fit there
    dominates it on max heap and Cortex-M3 instructions per malloc plus free (no worse on
    both, better on one; instructions within :data:`CSE_TIE` count as equal), as the seed
    tied best fit's smaller heap with first fit's speed. The C library leads when it is
    faster than every fit and the test made its process grow least (:func:`rss_not_smaller`).
    None without the runs."""
    counters = {a: c for (a, h), c in cse3320_header_runs(data).items()
                if h == get(data, "extra.cse3320.header.paper_header")}
    ic, rss = cse3320_icounts(data), cse3320_rss(data)
    fits = [a for a in CSE_PAPER if a in counters and a in ic]
    if not fits:
        return None
    cost = {a: ic[a]["malloc"]["mean"] + ic[a]["free"]["mean"] for a in ic}
    heap = {a: counters[a]["max_heap"] for a in fits}

    def dominates(d: str, a: str) -> bool:
        no_worse = heap[d] <= heap[a] and cost[d] <= cost[a] * (1 + CSE_TIE)
        return no_worse and (heap[d] < heap[a] or cost[d] * (1 + CSE_TIE) < cost[a])

    fits.sort(key=lambda a: (counters[a]["heap_blocks"], heap[a], cost[a]))
    places: list[list[str]] = []
    for a in fits:
        if places and counters[places[-1][0]]["heap_blocks"] == counters[a]["heap_blocks"] \
                and not any(dominates(d, a) for d in places[-1]):
            places[-1].append(a)
        else:
            places.append([a])
    if "system" in ic and "system" in rss and all(a in rss for a in fits) \
            and all(cost["system"] < cost[a] for a in fits) and not rss_not_smaller(rss, fits):
        places.insert(0, ["system"])
    return places


RSS_PAGE_KB = 4


def rss_growth(rss: dict[str, dict]) -> dict[str, int]:
    """What the test made resident under each malloc: peak RSS minus RSS before the first
    call (the peak itself is mostly the preloaded library's own pages)."""
    return {a: r["rss_peak_kb"] - r["rss_start_kb"] for a, r in rss.items()}


def rss_not_smaller(rss: dict[str, dict], fits: Sequence[str]) -> list[str]:
    """The fits whose growth the system malloc's does not undercut by a whole page."""
    grew = rss_growth(rss)
    return [a for a in fits if grew["system"] + RSS_PAGE_KB > grew[a]]


def ranking_text(places: Sequence[Sequence[str]]) -> str:
    return " > ".join(" = ".join(cse_name(a) for a in p) for p in places)


CSE_TIMING_HEAD = ["allocator", "paper malloc ns", "paper free ns", "M3 malloc mean",
                   "M3 malloc max", "M3 free mean", "M3 free max", "host malloc mean ns",
                   "host free mean ns"]
CSE_RSS_HEAD = ["malloc", "peak RSS KiB", "growth during the test KiB", "malloc mean ns",
                "free mean ns"]


def cse3320_timing_rows(data: dict) -> list[list[str]]:
    """System and the four fits: the paper's ns, Cortex-M3 instructions, the host engine's ns."""
    runs, ic = runs_of(data, "cse3320"), cse3320_icounts(data)
    rows = []
    for a in ("system", *CSE_PAPER):
        r, i = runs.get(a), ic.get(a, {})
        tm, tf = (timing(r, "malloc"), timing(r, "free")) if r else (None, None)
        pm, pf = CSE_PAPER_NS[a]
        rows.append([cse_name(a) + (f" ({a})" if a in CSE_PAPER else ""), fmt_int(pm), fmt_int(pf),
                     fmt_f(get(i, "malloc.mean")), fmt_int(get(i, "malloc.max")),
                     fmt_f(get(i, "free.mean")), fmt_int(get(i, "free.max")),
                     fmt_ns(tm["mean"], clock_step(r)) if tm else "n/a",
                     fmt_ns(tf["mean"], clock_step(r)) if tf else "n/a"])
    return rows


def cse3320_counter_rows(data: dict) -> tuple[list[str], list[list[str]], set[tuple[int, int]]]:
    """Header, rows (a counter each: per fit the paper's figure, heapkit's own header, the
    seed's header) and the (row, column) cells at the seed's header that differ from the paper."""
    hdr = get(data, "extra.cse3320.header") or {}
    by = cse3320_header_runs(data)
    own, paper = hdr.get("own_header"), hdr.get("paper_header")
    cols = [(a, lab) for a, lab in CSE_FITS if (a, paper) in by]
    head = ["counter"]
    for _, lab in cols:
        head += [f"{lab}: paper", f"{own}-B header", f"{paper}-B header"]
    rows, off = [], set()
    for k, key in enumerate(CSE_PAPER_KEYS):
        row = ["blocks (free, in the heap)" if key == "heap_blocks" else key.replace("_", " ")]
        for a, _ in cols:
            want, got = CSE_PAPER[a][k], by[(a, paper)][key]
            row += [fmt_int(want), fmt_int(by.get((a, own), {}).get(key)), fmt_int(got)]
            if got != want:
                off.add((k, len(row) - 1))
        rows.append(row)
    return head, rows, off


def cse3320_rss_rows(data: dict) -> list[list[str]]:
    """Per malloc, the test process's peak RSS, its growth during the test and its ns per call."""
    return [[cse_name(a) + (f" ({a})" if a in CSE_PAPER else " (glibc)"),
             fmt_int(c["rss_peak_kb"]), fmt_int(c["rss_peak_kb"] - c["rss_start_kb"]),
             fmt_f(c["malloc_mean_ns"]), fmt_f(c["free_mean_ns"])]
            for a, c in cse3320_rss(data).items()]


def section_cse3320(data: dict) -> str:
    trace = "cse3320"
    runs = runs_of(data, trace)
    single = {e["allocator"]: e for e in data["extra"].get("cse3320_single", [])}
    ext = get(data, "extra.cse3320") or {}
    if not runs and not single and not ext:
        return missing(trace, "run <code>heapkit demo</code> (or <code>heapkit bench "
                       "--workload cse3320 --json</code>).")
    names = allocator_order(data)
    parts = ["<h3>Malloc test: instructions per call (Cortex-M3), host ns beside</h3>"]
    ic = cse3320_icounts(data)
    parts.append(table(CSE_TIMING_HEAD, cse3320_timing_rows(data)))
    icd = ext.get("icount") or {}
    rounds = data["traces"].get(trace, {}).get("params", {}).get("rounds")
    host = {a: timing(runs[a], "malloc")["mean"] for a in CSE_PAPER
            if a in runs and timing(runs[a], "malloc")}
    order_note = ""
    if len(host) == len(CSE_PAPER) and all(a in ic for a in CSE_PAPER):
        by_host = sorted(host, key=host.get)
        by_insns = sorted(CSE_PAPER, key=lambda a: ic[a]["malloc"]["mean"])
        if by_host != by_insns:
            step = clock_step(runs[by_host[0]])
            order_note = (f"On the host {cse_name(by_host[0]).lower()} has the smallest malloc "
                          f"mean ({host[by_host[0]]:.1f} ns) and the instruction counts put "
                          f"{cse_name(by_insns[0]).lower()} first: the host means of the fits "
                          f"({min(host.values()):.1f}-{max(host.values()):.1f} ns) lie within "
                          + (f"{max(host.values()) / step:.1f} clock steps ({step:.1f} ns) "
                             if step else "a few clock steps ")
                          + "and move with the machine's load, so their order says nothing; "
                          "the exact counts give the order judged below. ")
    parts.append(cap(
        ("Cortex-M3 columns: exact instructions per call ("
         f"{esc(icd.get('machine', 'QEMU mps2-an385'))}, -icount shift=7, arm-none-eabi-gcc "
         f"{esc(icd.get('opt', '-O2'))}) on the seed's test in its fixed order repeated "
         f"{icd.get('rounds', 'n/a')} times (the seed averaged 100 iterations); 'System' there "
         "is the toolchain's newlib malloc on its sbrk heap. "
         if "runs" in icd else
         f"No Cortex-M3 counts: {esc(icd.get('error', 'not collected'))}. ")
        + f"Host columns: the engine's means on the whole cse3320 workload ({esc(rounds or 'default')} "
        "rounds, shuffled), 'System' being this host's malloc. The paper's columns: means of "
        "100 iterations in a GitHub codespace. " + esc(order_note) + esc(NOISE_NOTE)))

    # counters, at heapkit's header and at the seed's
    parts.append("<h3>Fragmentation &amp; heap size test: counters</h3>")
    hdr = ext.get("header") or {}
    by = cse3320_header_runs(data)
    if by:
        own, paper = hdr["own_header"], hdr["paper_header"]
        head, rows, off = cse3320_counter_rows(data)
        rows = [[(c, "bad") if (i, j) in off else c for j, c in enumerate(r)]
                for i, r in enumerate(rows)]
        parts.append(table(head, rows))
        parts.append(cap(
            "One round of the seed's five steps in their fixed order. 'paper': the seed's "
            f"table. '{own}-B header': heapkit's seqfit as it is (its boundary tag, measured "
            f"as the max heap of one malloc minus the request). '{paper}-B header': the same "
            f"runs with every request padded by {paper - own} bytes (<code>hk-replay --pad "
            f"{paper - own}</code>), so every block has the size the seed's 24-byte "
            "<code>struct _block</code> gives it (the workload's sizes are multiples of 8); "
            "marked where it differs from the paper. reuses = allocations served from the "
            "free list, grows = allocations that extended the used top of the arena (as sbrk "
            "would), max heap = high-water mark of that top, blocks = free blocks below the "
            "max heap at the end (the top included, as the seed's heap ends where sbrk left "
            "it). The paper lists no sizes: the workload's reproduce its 32 mallocs and 20296 "
            "bytes, and its 17016-byte heap only if the 5000-byte step-5 block grows the heap. "
            "After step 4 the space between the two kept blocks is one free block large enough "
            "for it under every policy (heapkit merges a freed block with both neighbours), "
            "and every fit places it there."))
    else:
        parts.append(f'<p class="na">No counters at the seed\'s header: '
                     f'{esc(hdr.get("error", "not collected"))}.</p>')
    cols = [(a, lab) for a, lab in CSE_FITS if a in runs]
    if cols:
        rows = []
        for key in CSE_COUNTERS + ("heap_blocks",):
            row = [key.replace("_", " ")]
            for a, _ in cols:
                row.append(fmt_int(get(runs[a].get("result") or {}, f"replay.counters.{key}")))
            rows.append(row)
        parts.append(f"<p><b>The whole cse3320 workload ({esc(rounds or 'default')} shuffled "
                     "rounds), heapkit's own header</b></p>")
        parts.append(table(["counter"] + [f"{lab} ({a})" for a, lab in cols], rows))
        parts.append(cap("Counters from <code>hk_seqfit_get_counters</code> (the engine's "
                         "<code>counters</code> object); free blocks excludes the untouched "
                         "top, heap blocks counts it when it starts below the max heap."))
    if single:
        rows = []
        for a in [x for x in names if x in single]:
            res = single[a].get("result") or {}
            rows.append([a, fmt_int(get(res, "replay.memory.peak_footprint")),
                         fmt_pct(get(res, "replay.fragmentation.jw4")),
                         fmt_int(get(res, "replay.failures.total")),
                         failed(single[a]) or get(res, "allocator.family", "")])
        parts.append("<p><b>Every allocator on the single round: peak footprint (the max-heap "
                     "analogue)</b></p>")
        parts.append(table(["allocator", "peak footprint B", "J&W #4", "failures", "family"],
                           rows, text_cols=[-1]))

    # peak RSS against the system malloc
    parts.append("<h3>Resident size against the system malloc</h3>")
    rss = cse3320_rss(data)
    if rss:
        rd = ext["rss"]
        parts.append(table(CSE_RSS_HEAD, cse3320_rss_rows(data)))
        parts.append(cap(
            "<code>hk-fits-process</code> making the seed's test's requests "
            f"({rd['rounds']} fixed-order rounds, every block written), plain (glibc) and "
            "under LD_PRELOAD=libheapkit_malloc.so with HEAPKIT_ALLOCATOR=seqfit-…; peak RSS "
            "is VmHWM at the end (what the seed read with <code>ps -o rss</code>), growth is "
            f"VmHWM minus VmRSS before the first call; medians of {rd['repeats']} interleaved "
            "runs. The heap is a few pages (max heap in the counters table): the peaks differ "
            "mostly by the preloaded library's own pages, not by the fit."))
    else:
        parts.append(f'<p class="na">No RSS comparison: '
                     f'{esc(get(ext, "rss.error", "not collected"))}.</p>')

    places = cse3320_ranking(data)
    parts.append("<h3>Final ranking</h3>")
    if places:
        parts.append(f"<p>Measured: <b>{esc(ranking_text(places))}</b>. The paper's: "
                     f"{esc(ranking_text(CSE_PAPER_RANK))}.</p>")
        parts.append(cap(
            "Ranked on the seed's criteria, at the seed's header: a fit that leaves more free "
            "blocks at the end ranks below (the seed put next fit last for its leftover block); "
            "among the others a fit shares a place unless one there is no worse on both max "
            "heap and Cortex-M3 instructions per malloc plus free and better on one (the seed "
            f"tied best fit's smaller heap with first fit's speed); instruction counts within "
            f"{CSE_TIE:.0%} count as equal. The C library leads when it is both faster than "
            "every fit and the test made its process grow least, by a whole page (peak RSS "
            "minus RSS before the first call)."))
    else:
        parts.append('<p class="na">No ranking: it needs the counters at the seed\'s header '
                     "and the Cortex-M3 counts.</p>")
    return "\n".join(parts)


def _cse_counts(c: dict) -> str:
    return "/".join(str(c[k]) for k in CSE_PAPER_KEYS)


SEARCH_CLAIM = ("First and Next Fit shorten the search of malloc by 75 % against Best and Worst "
                "Fit (the malloc test)")
SEARCH_TOL = 0.05


def cse3320_search(data: dict, malloc_mean: dict[str, float]) -> dict[str, float] | None:
    """Each fit's free-list search in Cortex-M3 instructions per malloc: its mean malloc on
    the timing test minus its mean malloc on the same allocations without frees (an empty
    free list: the same path without the search). None without those runs."""
    grow = {r["allocator"]: r["malloc"]["mean"]
            for r in (get(data, "extra.cse3320.icount.grow") or []) if "malloc" in r}
    if not all(a in grow and a in malloc_mean for a in CSE_PAPER):
        return None
    return {a: malloc_mean[a] - grow[a] for a in CSE_PAPER}


def _search_claim(data: dict, malloc_mean: dict[str, float]) -> list[Claim]:
    search = cse3320_search(data, malloc_mean)
    if search is None:
        return [Claim(SEARCH_CLAIM, UNTESTABLE, "The Cortex-M3 runs without frees (the malloc "
                      "path without a search) were not collected here.")]
    fast = (search["seqfit-first"] + search["seqfit-next"]) / 2
    slow = (search["seqfit-best"] + search["seqfit-worst"]) / 2
    cut = 1 - fast / slow if slow > 0 else 0.0
    return [judged(SEARCH_CLAIM, cut >= 0.75 - SEARCH_TOL,
                   "Search = mean Cortex-M3 instructions per malloc on the test minus the same "
                   "fit's on its allocations without frees (no search): "
                   + ", ".join(f"{cse_name(a).lower()} {search[a]:.1f}" for a in CSE_PAPER)
                   + f"; first and next fit's mean is {100 * cut:.1f} % shorter than best and "
                   f"worst fit's (holding from {100 * (0.75 - SEARCH_TOL):.0f} %, the paper's "
                   f"75 % less {100 * SEARCH_TOL:.0f} points).")]


def claims_cse3320(data: dict) -> list[Claim]:
    out = []
    best_claim = "Best Fit's max heap is smaller than the other fits' (11992 against 17016)"
    next_claim = "Next Fit leaves two free blocks at the end where the other fits leave one"
    no_header = "The runs at the seed's 24-byte header were not collected here."
    paper_hdr = get(data, "extra.cse3320.header.paper_header")
    at = {a: c for (a, h), c in cse3320_header_runs(data).items() if h == paper_hdr}
    for a, want in CSE_PAPER.items():
        claim = f"{cse_name(a)}'s counters are {'/'.join(map(str, want))} (reuses/grows/splits/" \
                "coalesces/blocks/requested/max heap)"
        if a not in at:
            out.append(Claim(claim, UNTESTABLE, no_header))
            continue
        got = at[a]
        off = [k.replace("heap_blocks", "blocks").replace("_", " ")
               for k, w in zip(CSE_PAPER_KEYS, want) if got[k] != w]
        out.append(judged(claim, not off,
                          f"At the seed's {paper_hdr}-byte header heapkit's {cse_name(a).lower()} "
                          f"counts {_cse_counts(got)}"
                          + (f": {', '.join(off)} differ, the rest match." if off else ".")))
    if len(at) == len(CSE_PAPER):
        best = at["seqfit-best"]["max_heap"]
        others = {a: at[a]["max_heap"] for a in at if a != "seqfit-best"}
        all_same = len({best, *others.values()}) == 1
        out.append(judged(
            best_claim, best < min(others.values()),
            f"Best fit's max heap is {best:,} B against "
            + ", ".join(f"{cse_name(a).lower()} {v:,} B" for a, v in others.items())
            + ("; every fit grew the heap alike: the workload's 5000-byte step-5 block fits the "
               "free block that step 4's frees merge into between the two kept blocks, whatever "
               "the policy." if all_same else ".")))
        nf = at["seqfit-next"]["heap_blocks"]
        rest = {a: at[a]["heap_blocks"] for a in at if a != "seqfit-next"}
        merged = nf == 1 and set(rest.values()) == {1}
        out.append(judged(
            next_claim, nf >= 2 and nf > max(rest.values()),
            f"Next fit ends with {nf} free block(s) in its heap, the others with "
            + ", ".join(f"{v}" for v in rest.values())
            + (": heapkit merges each freed block with both free neighbours whatever the "
               "policy, so the seed's leftover block was its own implementation's." if merged else ".")))
    else:
        out += [Claim(best_claim, UNTESTABLE, no_header), Claim(next_claim, UNTESTABLE, no_header)]
    ic = cse3320_icounts(data)
    malloc_claim = ("malloc time orders System < First Fit and Next Fit < Best Fit and Worst Fit "
                    "(127 < 153, 154 < 206, 209 ns)")
    free_claim = "System's free is faster than every fit's (35 against 42-46 ns)"
    if all(a in ic for a in ("system", *CSE_PAPER)):
        m = {a: ic[a]["malloc"]["mean"] for a in ic}
        f = {a: ic[a]["free"]["mean"] for a in ic}
        fast, slow = ("seqfit-first", "seqfit-next"), ("seqfit-best", "seqfit-worst")
        out.append(judged(
            malloc_claim,
            m["system"] < min(m[a] for a in fast) and max(m[a] for a in fast) < min(m[a] for a in slow),
            "Mean Cortex-M3 instructions per malloc: "
            + ", ".join(f"{cse_name(a).lower()} {m[a]:.1f}" for a in ("system", *CSE_PAPER))
            + " (System: newlib; exact counts, no tolerance)."))
        out.append(judged(
            free_claim, all(f["system"] < f[a] for a in CSE_PAPER),
            "Mean Cortex-M3 instructions per free: "
            + ", ".join(f"{cse_name(a).lower()} {f[a]:.1f}" for a in ("system", *CSE_PAPER))
            + " (exact counts, no tolerance)."))
        out += _search_claim(data, m)
    else:
        for claim in (malloc_claim, free_claim, SEARCH_CLAIM):
            out.append(Claim(claim, UNTESTABLE, "The Cortex-M3 instruction counts were not "
                             "collected here (QEMU or the cross compiler is missing)."))
    rss = cse3320_rss(data)
    rss_claim = "the system malloc's resident size is smaller than even Best Fit's"
    if "system" in rss and all(a in rss for a in CSE_PAPER):
        grew = rss_growth(rss)
        bigger = rss_not_smaller(rss, CSE_PAPER)
        out.append(judged(
            rss_claim, not bigger,
            f"Judged on what the test made resident (peak RSS minus RSS before the first call; "
            f"the whole peak is mostly the preloaded library's own pages), smaller meaning by at "
            f"least one {RSS_PAGE_KB} KiB page: glibc grew by {grew['system']:,} KiB, "
            + ", ".join(f"{cse_name(a).lower()} by {grew[a]:,} KiB" for a in CSE_PAPER)
            + (f" (not smaller than {', '.join(cse_name(a) for a in bigger)})" if bigger else "")
            + f". Peak RSS: glibc {rss['system']['rss_peak_kb']:,} KiB, "
            + ", ".join(f"{cse_name(a).lower()} {rss[a]['rss_peak_kb']:,} KiB" for a in CSE_PAPER)
            + "."))
    else:
        out.append(Claim(rss_claim, UNTESTABLE, "The test process was not run under "
                         "libheapkit_malloc.so here (no malloc port build)."))
    places = cse3320_ranking(data)
    rank_claim = "the final ranking is " + ranking_text(CSE_PAPER_RANK)
    if places:
        same = [sorted(p) for p in places] == [sorted(p) for p in CSE_PAPER_RANK]
        out.append(judged(rank_claim, same,
                          f"Measured: {ranking_text(places)} (free blocks left, then max heap "
                          "against Cortex-M3 instructions per malloc plus free)."))
    else:
        out.append(Claim(rank_claim, UNTESTABLE, "The ranking needs the counters at the seed's "
                         "header and the Cortex-M3 counts, not collected here."))
    return out
