# SPDX-License-Identifier: MIT
"""buddy-kth (an OS-backed buddy allocator that returns free blocks to the OS):
Figures 1-4 on the ``kth`` workload (memory over time, blocks returned to the OS under
libheapkit_malloc.so, cost over the run and per size level on the host and in exact RV32
instructions), the section and the verdicts on the report's claims."""

from __future__ import annotations

import copy
from typing import Any, Callable, Sequence

import numpy as np

from ..render import (Claim, Figures, NOISE_NOTE, NO_TARGET, SYSTEM_STYLE, Styles, _apl,
                      _legend_below, _logaxis, _panels_done, _plt, _png, allocator_order, cap, clock_step, esc,
                      fmt_bytes, fmt_f, fmt_int, fmt_ns, get, judged, missing, runs_of, table,
                      target_part, timing)


KTH_FOCUS = ("buddy", "buddy-lazy", "tlsf", "seqfit-first", "o1heap", "freertos-heap4",
             "freertos-heap5", "system")


def fig_kth_memory(runs: dict[str, dict], allocs: Sequence[str]) -> str | None:
    from matplotlib.ticker import MaxNLocator
    panels = []
    for a in allocs:
        res = runs.get(a, {}).get("result") or {}
        s = get(res, "replay.series")
        if s and s.get("footprint"):
            panels.append((a, res, s))
    if not panels:
        return None
    plt = _plt()
    ncol = min(4, len(panels))
    nrow = (len(panels) + ncol - 1) // ncol
    fig, axes = plt.subplots(nrow, ncol, figsize=(13, 2.6 * nrow + 0.3), squeeze=False)
    for ax, (a, res, s) in zip(axes.flat, panels):
        rec = np.asarray(s["record"], dtype=float)
        fp = np.asarray(s["footprint"], dtype=float) / 1024
        req = np.asarray(s["live_requested"], dtype=float) / 1024
        gr = np.asarray(s["live_granted"], dtype=float) / 1024
        cap = get(res, "replay.memory.capacity")
        ax.plot(rec, fp, color="purple", label="held: footprint")
        if cap and s.get("free_bytes"):
            used = (cap - np.asarray(s["free_bytes"], dtype=float)) / 1024
            ax.plot(rec, used, color="tab:orange", label="used blocks incl. headers")
            ax.fill_between(rec, used, fp, color="tab:green", alpha=0.25,
                            label="held but free (external)")
        ax.plot(rec, gr, color="tab:blue", label="given to the user (granted)")
        ax.plot(rec, req, color="tab:cyan", linestyle="--", label="requested")
        ax.set_title(a)
        ax.set_xlabel("record")
        ax.set_ylabel("KiB")
        ax.xaxis.set_major_locator(MaxNLocator(4))
    return _panels_done(fig, axes, len(panels), 7, 0.06)


def fig_kth_release(kr: dict) -> str | None:
    """buddy-kth Figure 2: memory mapped from the OS, given to the user and free in the regions."""
    from matplotlib.ticker import MaxNLocator
    panels = [c for c in kr.get("configs", []) if c.get("series", {}).get("op")]
    if not panels:
        return None
    plt = _plt()
    ncol = min(3, len(panels))
    nrow = (len(panels) + ncol - 1) // ncol
    fig, axes = plt.subplots(nrow, ncol, figsize=(13, 2.7 * nrow + 0.4), squeeze=False, sharey=True)
    for ax, c in zip(axes.flat, panels):
        s = c["series"]
        op = np.asarray(s["op"], dtype=float)
        mapped = np.asarray(s["mapped"], dtype=float) / 1024
        used = np.asarray(s["used"], dtype=float) / 1024
        free = np.asarray(s["free"], dtype=float) / 1024
        ax.plot(op, mapped, color="purple", label="mapped from the OS")
        ax.plot(op, used, color="tab:blue", label="given to the user")
        ax.plot(op, free, color="tab:green", label="free inside the heap")
        ax.set_title(c["label"], fontsize=9)
        ax.set_xlabel("balloc calls")
        ax.set_ylabel("KiB")
        ax.xaxis.set_major_locator(MaxNLocator(4))
    return _panels_done(fig, axes, len(panels), 8, 0.06)


def _fig_log_pair(points: Callable[[str], list[tuple[float, float, float]]],
                  allocs: Sequence[str], st: Styles, whats: Sequence[str], xlabel: str,
                  ylabel: str, title: str) -> str | None:
    """Two side-by-side panels with a log y axis and one line per allocator from its
    points(a) = [(x, y of the left panel, y of the right panel)], legend below; the
    panels' statistics *whats* go into the *ylabel* and *title* templates. None when
    no allocator has a point."""
    plt = _plt()
    fig, axes = plt.subplots(1, 2, figsize=(12, 3.8))
    drawn = False
    for a in allocs:
        pts = points(a)
        if pts:
            for ax, col in zip(axes, (1, 2)):
                ax.plot([p[0] for p in pts], [p[col] for p in pts], marker="o", markersize=3,
                        label=a, **st(a))
            drawn = True
    if not drawn:
        plt.close(fig)
        return None
    for ax, what in zip(axes, whats):
        ax.set_xlabel(xlabel)
        ax.set_ylabel(ylabel.format(what))
        _logaxis(ax, "y")
        ax.set_title(title.format(what))
    _legend_below(fig, axes[0], bottom=0.25)
    return _png(fig)


def kth_levels(levels: list[dict], alloc: str) -> list[tuple[int, float, float]]:
    """(size level, p50, mean malloc ns) from the per-level runs."""
    pts = []
    for lvl, e in sorted((e["level"], e) for e in levels if e["allocator"] == alloc):
        t = timing(e, "malloc")
        if t:
            pts.append((lvl, t["p50"], t["mean"]))
    return pts


def fig_kth_levels(levels: list[dict], allocs: Sequence[str], st: Styles) -> str | None:
    return _fig_log_pair(lambda a: kth_levels(levels, a), allocs, st, ("median", "mean"),
                         "size level k (block 32 << k bytes incl. a 24-byte head)",
                         "{} ns per malloc (noisy)", "Fig. 4: {} malloc cost per size level")


def kth_levels_target(part: dict, alloc: str) -> list[tuple[int, float, float]]:
    """(size level, median, mean instructions per malloc) from the target's per-level runs."""
    pts = []
    for r in part.get("runs", []):
        if r["allocator"] == alloc and r["stats"]["malloc"]["count"]:
            pts.append((int(r["trace"].removeprefix("kth-level")), r["stats"]["malloc"]["p50"],
                        r["stats"]["malloc"]["mean"]))
    return sorted(pts)


def fig_kth_levels_target(part: dict, allocs: Sequence[str], st: Styles, title: str) -> str | None:
    return _fig_log_pair(lambda a: kth_levels_target(part, a), allocs, st, ("median", "mean"),
                         "size level k (block 32 << k bytes incl. a 24-byte head)",
                         "{} instructions per malloc",
                         "Fig. 4: {} malloc cost per size level, " + title)


def kth_windows(windows: list[dict], alloc: str) -> list[tuple[int, float, float]]:
    """(mallocs so far, p50, p99 of all mallocs so far) from the prefix runs."""
    pts = []
    for e in windows:
        if e["allocator"] != alloc:
            continue
        t = timing(e, "malloc")
        if t:
            pts.append((t["count"], t["p50"], t["p99"]))
    return sorted(pts)


def fig_kth_time(windows: list[dict], allocs: Sequence[str], st: Styles) -> str | None:
    return _fig_log_pair(lambda a: kth_windows(windows, a), allocs, st, ("median", "p99"),
                         "mallocs so far (end of each tenth of the trace)",
                         "{} ns of all mallocs so far",
                         "Fig. 3: cumulative {} malloc cost over the run (noisy)")


def section_kth(data: dict, st: Styles, figs: Figures) -> str:
    trace = "kth"
    runs = runs_of(data, trace)
    extra = data["extra"]
    if not runs and not extra.get("kth_levels") and not extra.get("kth_release"):
        return missing(trace, "run <code>heapkit demo</code> (or <code>heapkit bench "
                       "--workload kth --json</code> for Figure 1).")
    names = allocator_order(data)
    focus = [a for a in KTH_FOCUS if a in names] or names[:6]
    parts = ["<h3>Figure 1: memory held vs given to the user over time (standard buddy and "
             "peers)</h3>"]
    parts.append(figs.img(fig_kth_memory, (runs, focus), "kth memory over time"))
    parts.append(cap("From the engine's 200-point series on the kth trace at the default arena. "
                     "'Held' is the footprint (control data plus each top-level block up to its "
                     "highest live block, docs/metrics.md: the in-arena analogue of the "
                     "top-level blocks obtained from the OS); 'used blocks' is capacity minus "
                     "free bytes; the green band, held minus used, is the free memory inside "
                     "the footprint plus the control data (the paper's green line)."))
    parts.append("<h3>Figure 2: with blocks returned to the OS</h3>")
    parts.append(section_kth_release(extra.get("kth_release"), figs))
    parts.append("<h3>Figure 3: malloc cost over the run</h3>")
    parts.append(figs.img(fig_kth_time, (extra.get("kth_windows", []), focus, st),
                          "kth cost over time"))
    parts.append(cap("The engine reports timing quantiles, not per-call samples, so the kth "
                     "trace's prefixes of 10 %, 20 %, ..., 100 % of its records are replayed "
                     "separately and each point is the median (left) or p99 (right) of all "
                     "mallocs up to that point. These are cumulative, so a late change in cost "
                     "shows up damped; differencing the prefixes' totals would give per-tenth "
                     "means, but a mean over a noisy host is dominated by a few preempted calls, "
                     "so it is not shown. The paper's Figure 3 is the cost per round of many "
                     "ballocs. " + esc(NOISE_NOTE)))
    parts += kth_release_windows(extra.get("kth_release"))
    parts.append("<h3>Figure 4: malloc cost per size level, against the system malloc</h3>")
    levels = extra.get("kth_levels", [])
    parts += section_kth_levels_target(data, st, figs)
    if not target_part(data, "kth_levels"):
        parts.append(figs.img(fig_kth_levels, (levels, focus, st), "kth cost per level"))
    if levels and not target_part(data, "kth_levels"):
        rows = []
        lv = sorted({e["level"] for e in levels})
        for a in focus:
            row: list[Any] = [a]
            for k in lv:
                e = next((x for x in levels if x["allocator"] == a and x["level"] == k), None)
                t = timing(e, "malloc") if e else None
                fails = get(e.get("result") or {}, "replay.failures.total") if e else None
                cellv = fmt_ns(t["p50"], clock_step(e)) if t else "n/a"
                row.append((cellv + (f" ({fails} failed)" if fails else ""), "bad") if fails
                           else cellv)
            rows.append(row)
        bounds = {e["level"]: (e.get("lo"), e.get("hi")) for e in levels}
        parts.append(table(["allocator"] + [f"level {k}: {bounds[k][0]}-{bounds[k][1]} B"
                                            for k in lv], rows))
        e0 = levels[0]
        parts.append(cap(f"Median ns per malloc. One trace per size level: the kth process "
                         f"(random slot in a {e0.get('slots')}-slot buffer, the old block freed "
                         f"first) with all {e0.get('allocs')} requests drawn from that level "
                         "only, so every run's heap holds one size class, as in the paper's "
                         "per-level benchmark. Arena: 4 x slots x (32 &lt;&lt; k) bytes or the "
                         "engine's default, whichever is larger, so allocators whose smallest "
                         "block is far above a 1-8 byte request still fit every slot at level 0 "
                         "(failures, if any, are marked). The paper plots the total cost of "
                         "100,000 ballocs, i.e. 100,000 x the mean. " + esc(NOISE_NOTE)))
    parts += kth_release_levels(extra.get("kth_release"))
    return "\n".join(parts)


def kth_release_configs(kr: dict | None, key: str) -> list[dict]:
    return [c for c in (kr or {}).get("configs", []) if c.get(key)]


def kth_release_windows(kr: dict | None) -> list[str]:
    """Figure 3 with the return to the OS: malloc cost per tenth of the kth process."""
    cs = kth_release_configs(kr, "windows")
    if not cs:
        return ['<p class="na">Figure 3 with blocks returned to the OS: not in these results '
                "(run <code>heapkit kth-release</code>).</p>"]
    rows = [[c["name"]] + [f"{fmt_f(w['mean'], 0)} ({fmt_f(w['p50'], 0)})" for w in c["windows"]]
            for c in cs]
    n = len(cs[0]["windows"])
    return [table(["configuration"] + [f"tenth {k + 1}" for k in range(n)], rows),
            cap("Figure 3 with the return-to-OS variant: mean (median) ns per malloc in each "
                "tenth of the kth process under libheapkit_malloc.so, per configuration of the "
                "Figure 2 section (medians over its interleaved runs). A mean includes the "
                "mmap and munmap calls the median hides; the paper plots a total, i.e. a mean. "
                "The emulated boards have no OS to return memory to, so these are host "
                "nanoseconds. " + esc(NOISE_NOTE))]


def kth_release_levels(kr: dict | None) -> list[str]:
    """Figure 4 with the return to the OS: malloc cost per size level of the kth process."""
    cs = kth_release_configs(kr, "levels")
    if not cs:
        return ['<p class="na">Figure 4 with blocks returned to the OS: not in these results '
                "(run <code>heapkit kth-release</code>).</p>"]
    rows = [[c["name"]] + [f"{fmt_f(e['malloc_mean'], 0)} ({fmt_f(e['malloc_p50'], 0)})"
                           for e in c["levels"]] for c in cs]
    return ["<h4>With blocks returned to the OS (host, the kth process per level)</h4>",
            table(["configuration"] + [f"level {e['level']}" for e in cs[0]["levels"]], rows),
            cap("Mean (median) ns per malloc with every request of the kth process drawn from "
                "one size level: glibc, buddy with 8 KiB regions (the paper's regular balloc: "
                "memory from the OS, never given back) and the same with HEAPKIT_RELEASE=1 (its "
                "optimised balloc). Host nanoseconds, medians over the Figure 2 section's "
                "interleaved runs: the return to the OS needs an OS, which the emulated boards "
                "do not have. " + esc(NOISE_NOTE))]


def section_kth_levels_target(data: dict, st: Styles, figs: Figures) -> list[str]:
    """Figure 4 in exact instructions on the target (demo.buddy_target)."""
    part = target_part(data, "kth_levels")
    bt = data["extra"].get("buddy_target") or {}
    if not part:
        why = f" ({esc(bt['error'])})" if bt.get("error") else ""
        return [f'<p class="na">Figure 4 in instructions: not in these results{why}: '
                f"{NO_TARGET}.</p>"]
    allocs = list(dict.fromkeys(r["allocator"] for r in part["runs"]))
    lv = sorted({int(r["trace"].removeprefix("kth-level")) for r in part["runs"]})
    rows = []
    for a in allocs:
        pts = {k: (p50, mean) for k, p50, mean in kth_levels_target(part, a)}
        rows.append([a] + [f"{fmt_int(pts[k][0])} ({fmt_f(pts[k][1])})" if k in pts else "n/a"
                           for k in lv])
    bounds = dict(enumerate(part["bounds"]))
    st = copy.copy(st)     # the C library's malloc drawn as the system malloc is
    st.map = {**st.map, bt["libc"]: SYSTEM_STYLE}
    out = [figs.img(fig_kth_levels_target, (part, allocs, st, f"{bt['title']} instructions"),
                    "kth cost per level in instructions")]
    out.append(table(["allocator"] + [f"level {k}: {bounds[k][0]}-{bounds[k][1]} B" for k in lv],
                     rows))
    out.append(cap(
        f"Median (mean) instructions per malloc on {esc(bt['title'])} ({esc(bt['machine'])}, "
        f"{esc(bt['opt'])}), every call counted: one trace per size level, the kth process "
        f"with all {part['allocs']:,} requests from that level and a {part['slots']}-slot buffer "
        f"(fewer than the host's 4096: the arena must hold 4 x slots x 4 KiB at level 7), arena "
        f"{fmt_bytes(part['arena'])} B for every allocator. {esc(bt['libc'])} is the C "
        "library's malloc, the target's system malloc (the paper's was glibc's). The "
        "return-to-OS variant cannot run here: the emulated board has no OS to return memory "
        "to; its per-level cost on the host is in the last table of this figure."))
    return out


def kth_release_rows(data: dict) -> list[list[str]]:
    """Rows of the kth-release table (:data:`KTH_RELEASE_HEAD`) from heapkit kth-release's measurements."""
    rows = []
    for c in data["configs"]:
        rows.append([c["name"], f"{c['peak_mapped'] / 1024:.0f}", f"{c['final_mapped'] / 1024:.0f}",
                     f"{c['final_used'] / 1024:.0f}",
                     str(c.get("region_maps", "")), str(c.get("region_unmaps", "")),
                     fmt_ns(c["malloc_p50"]), fmt_ns(c["malloc_mean"]), fmt_ns(c["free_mean"]),
                     f"{c['wall_ms']:.0f}"])
    return rows


KTH_RELEASE_HEAD = ["configuration", "peak mapped KiB", "final mapped KiB", "final used KiB",
                    "maps", "unmaps", "malloc p50 ns", "malloc mean ns", "free mean ns", "run ms"]


def section_kth_release(kr: dict | None, figs: Figures) -> str:
    if not kr or not kr.get("configs"):
        why = f" ({esc(kr['error'])})" if kr and kr.get("error") else ""
        return ('<p class="na">Not in these results' + why + ": run <code>heapkit demo</code> or "
                "<code>heapkit kth-release</code> (it needs libheapkit_malloc.so and "
                "hk-kth-process from the CMake build).</p>")
    parts = [figs.img(fig_kth_release, (kr,), "kth memory with and without release to the OS")]
    parts.append(table(KTH_RELEASE_HEAD, kth_release_rows(kr)))
    parts.append(cap(
        f"The kth process ({kr['allocs']} allocations into {kr['slots']} slots, the same request "
        "sequence as the <code>kth</code> trace) calling malloc/free under "
        "LD_PRELOAD=libheapkit_malloc.so with HEAPKIT_ALLOCATOR=buddy. HEAPKIT_RELEASE=1 is the "
        "paper's optimisation: a region (heapkit's unit of memory from mmap, a set of top-level "
        "buddy blocks) is munmapped as soon as no used block is left in it. With the default "
        "regions (1 MiB, doubling) a region almost never empties while the buffer is full, so "
        "the option only helps at the end; with 8 KiB regions (the closest to the paper's 4 KiB "
        "top-level blocks that still holds a 4 KiB block next to buddy's control data) it maps "
        "and unmaps thousands of times. 'Mapped' counts region control data (about 1.4 KiB of an "
        "8 KiB region); 'used' is the usable size of live blocks (buddy's power-of-two sizes). "
        "glibc's line is mallinfo2 (arena plus mmapped bytes). Times are medians of "
        f"{kr['repeats']} interleaved runs of the whole process on a shared host; with many "
        "small regions malloc also pays for scanning them in address order. Reproduce with "
        f"<code>{esc(kr['command'])}</code>."))
    return "\n".join(parts)


FAIRLY_LOW = 0.10        # Figure 1's "fairly low": free-list memory at most 10 % of the mapped
NOISE_TOLERANCE = 0.10   # host-ns differences within 10 % of each other order nothing


def claims_kth(data: dict) -> list[Claim]:
    """buddy-kth: every claim of the paper with a figure behind it, judged on the kth runs,
    the kth process under libheapkit_malloc.so (heapkit kth-release) and the target's
    per-level counts."""
    out = []
    apl = _apl(data, "kth", "buddy")
    if apl.get("footprint"):
        out.append(judged(
            "Introduction: the buddy algorithm leaves no holes between memory blocks (no "
            "external fragmentation)", apl["external"] == 0,
            f"At the kth trace's peak-live record heapkit's buddy has {apl['external']:,} B in "
            f"{apl['free_blocks_below_footprint']:,} free blocks inside its footprint of "
            f"{apl['footprint']:,} B (internal: {apl['internal']:,} B)."))
    kr = {c["name"]: c for c in (data["extra"].get("kth_release") or {}).get("configs", [])}
    reg, opt, sysm = kr.get("buddy-8k"), kr.get("buddy-8k+release"), kr.get("glibc")
    if reg:
        share = [f / m for f, m in zip(reg["series"]["free"], reg["series"]["mapped"]) if m]
        if share:
            worst = max(share)
            out.append(judged(
                "Figure 1: balloc's external fragmentation is fairly low", worst <= FAIRLY_LOW,
                f"With 8 KiB regions and nothing given back, the free memory in the kth process's "
                f"free lists is at most {worst * 100:.1f} % of the memory mapped from the OS "
                f"(mean {float(np.mean(share)) * 100:.1f} % over {len(share)} samples; the "
                f"verdict: 'fairly low' taken as at most {FAIRLY_LOW * 100:.0f} % at every "
                "sample)."))
    if reg:
        free = reg["series"]["free"]
        k = max(1, len(free) // 10)
        early, late = float(np.mean(free[1:k + 1])), float(np.mean(free[-k:]))
        out.append(judged(
            "Figure 1: the free memory in the free lists grows the longer the program runs",
            late > early,
            f"With 8 KiB regions and nothing given back, the kth process holds {early / 1024:,.0f} "
            f"KiB free on average over its first tenth and {late / 1024:,.0f} KiB over its last."))
    if reg and opt:
        fr, fo = (float(np.mean(c["series"]["free"])) for c in (reg, opt))
        mr, mo = (float(np.mean(c["series"]["mapped"])) for c in (reg, opt))
        memory = (f"Over the kth process, with 8 KiB regions, HEAPKIT_RELEASE=1 holds "
                  f"{mo / 1024:,.0f} KiB mapped and {fo / 1024:,.0f} KiB free inside the heap on "
                  f"average, without it {mr / 1024:,.0f} and {fr / 1024:,.0f} KiB")
        out.append(judged(
            "Figure 2: giving top-level blocks back to the OS lowers the memory held",
            mo < mr, memory + "."))
        out.append(judged(
            "Figure 2: it cuts the free memory to close to 0, even with the buffer full (taken "
            "as at least ten times less free memory)", fo * 10 <= fr,
            memory + ": random replacement leaves a live block in almost every region."
            if fo * 10 > fr else memory + "."))
        out.append(judged(
            "Figure 3: the optimised balloc generally takes longer than the regular one",
            opt["malloc_mean"] > reg["malloc_mean"],
            f"Mean malloc over the kth process: {fmt_ns(opt['malloc_mean'])} ns with the return to "
            f"the OS, {fmt_ns(reg['malloc_mean'])} ns without (host, medians of "
            f"{data['extra']['kth_release']['repeats']} runs)."))
        lo, lr = (c.get("levels") for c in (opt, reg))
        if lo and lr:
            ratio = [o["malloc_mean"] / r["malloc_mean"] for o, r in zip(lo, lr)]
            out.append(judged(
                "Figure 4: the optimised balloc takes significantly longer at level seven",
                ratio[-1] == max(ratio) and ratio[-1] > 1,
                f"The return to the OS multiplies the mean malloc by {ratio[-1]:.1f} at level 7, "
                f"by {min(ratio[:-1]):.1f}-{max(ratio[:-1]):.1f} at levels 0-6 (host)."))
    if reg and sysm:
        out.append(judged(
            "Figure 3 and conclusion: the system malloc is faster than balloc",
            sysm["malloc_mean"] < reg["malloc_mean"],
            f"Mean malloc over the kth process: glibc {fmt_ns(sysm['malloc_mean'])} ns, buddy on "
            f"OS memory {fmt_ns(reg['malloc_mean'])} ns (host)."))
        gw, bw = sysm.get("windows"), reg.get("windows")
        if gw and bw:
            first, last = bw[0]["mean"] - gw[0]["mean"], bw[-1]["mean"] - gw[-1]["mean"]
            close = abs(first - last) <= NOISE_TOLERANCE * max(abs(first), abs(last))
            verdict = ("within the {:.0f} % tolerance of each other, which host timing cannot "
                       "order".format(NOISE_TOLERANCE * 100) if close else
                       "larger first" if first > last else "larger last")
            out.append(judged(
                "Figure 3: balloc's disadvantage is largest in the first rounds, with no free "
                "blocks yet", first > last and not close,
                f"balloc's mean malloc exceeds glibc's by {first:,.0f} ns in the first tenth of "
                f"the run and by {last:,.0f} ns in the last (host): {verdict} (the verdict: the "
                f"first larger by more than {NOISE_TOLERANCE * 100:.0f} %, the tolerance for "
                "host nanoseconds; no instruction count covers calls into the OS)."))
    part = target_part(data, "kth_levels")
    bt = data["extra"].get("buddy_target") or {}
    tb = kth_levels_target(part, "buddy") if part else []
    tl = kth_levels_target(part, bt.get("libc", "")) if part else []
    if reg and sysm and reg.get("levels") and sysm.get("levels"):
        rl, sl = reg["levels"], sysm["levels"]
        flat = (f"; heapkit's buddy in an arena on {bt['title']} takes {tb[0][1]:,} "
                f"instructions per malloc (median) at level 0 and {tb[-1][1]:,} at level 7, "
                "so the rise is the calls to the OS") if tb else ""
        out.append(judged(
            "Figure 4: balloc gets more costly at higher size levels",
            rl[-1]["malloc_mean"] > rl[0]["malloc_mean"],
            f"On OS memory (8 KiB regions, host) buddy's mean malloc is "
            f"{fmt_ns(rl[0]['malloc_mean'])} ns at level 0 and "
            f"{fmt_ns(rl[-1]['malloc_mean'])} ns at "
            f"level 7{flat}."))
        out.append(judged(
            "Figure 4: the system malloc gets more costly at higher size levels",
            sl[-1]["malloc_mean"] > sl[0]["malloc_mean"],
            f"glibc's mean malloc is {fmt_ns(sl[0]['malloc_mean'])} ns at level 0 and "
            f"{fmt_ns(sl[-1]['malloc_mean'])} ns at level 7 (host)"
            + (f"; {bt['libc']}'s on {bt['title']} {tl[0][1]:,} and {tl[-1][1]:,} instructions "
               "(median)." if tl else ".")))
        slower = [e["level"] for e, g in zip(rl, sl) if g["malloc_mean"] >= e["malloc_mean"]]
        out.append(judged(
            "Figure 4: the system malloc is faster than balloc at every size level (the "
            "paper's setting: balloc on memory from the OS)", not slower,
            f"glibc's mean malloc is below buddy's on OS memory at "
            f"{len(rl) - len(slower)} of {len(rl)} levels (host)."))
    if tb and tl:
        lib = {k: p50 for k, p50, _ in tl}
        wins = [k for k, p50, _ in tb if k in lib and lib[k] < p50]
        out.append(judged(
            f"Figure 4 on an MCU: the system malloc ({bt['libc']}) is faster than a buddy at "
            "every size level", len(wins) == len(tb),
            f"On {bt['title']} the median malloc of {bt['libc']} is below heapkit's buddy's at "
            f"{len(wins)} of {len(tb)} levels (buddy {min(p for _, p, _ in tb):,}-"
            f"{max(p for _, p, _ in tb):,} instructions, {bt['libc']} {min(lib.values()):,}-"
            f"{max(lib.values()):,})."))
    return out
