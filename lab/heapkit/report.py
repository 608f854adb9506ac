# SPDX-License-Identifier: MIT
"""One self-contained HTML report from replay results (``heapkit report``).

Input: the JSON that ``heapkit demo`` saves (``kind: heapkit-demo``), or
what ``heapkit bench --json`` / ``heapkit size --json`` save, or raw
``hk-replay --json`` results, or ``heapkit explore``'s explore.json, or
``heapkit bench --target --json``'s; several files are merged.  (Without
results, ``heapkit report`` runs :func:`heapkit.demo.collect` first.)

This module loads and merges the results, writes the sections that are
not a seed paper's and puts the page together.  Each seed paper's section
and verdicts live in heapkit/seeds/ (one module per paper), the helpers,
plotting and claims framework they share in heapkit/render.py.  All of
them render only: they import nothing that produces results, and demo,
explore, kth_release and target import them for their own pages and
tables (lab/tests/test_layering.py checks).

Output: one HTML page with every plot embedded as a base64 PNG (matplotlib,
Agg backend) and inline CSS, so it references nothing outside itself.
Every number in it is read from the results; the only constants are the
seed papers' own figures, quoted in captions for comparison.

Sections (see :data:`SECTIONS`): the advice, the allocator x trace summary,
the smallest-arena table, one section per seed paper (buddy-freertos,
fctma-pools, buddy-kth, fits-cse3320, custom-dmm-network), per-trace plots
(latency CDF, fragmentation over time, heap map), the Cortex-M3 target
counts and the method notes.
"""

from __future__ import annotations

import json
import os
import zlib
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence

import numpy as np

from . import progress as _progress
from .boards import ARENA_SIZE, CORTEX_M3, get_target
from .errors import HeapkitError
from .render import (Absent, CSS, Claim, Figures, NOISE_NOTE, Styles, VERDICTS, _logaxis, _panels_done, _plt,
                     _png, advice_gap_text, allocator_order, cap, claims_html, clock_step, esc,
                     failed, families, fmt_bytes, fmt_f, fmt_int, fmt_kib, fmt_ns, fmt_pct,
                     geomean, get, heapmap_picture, missing, runs_of, table, timing, trace_order)
from .seeds.buddy_freertos import claims_buddy_freertos, section_buddy_freertos
from .seeds.buddy_kth import claims_kth, section_kth
from .seeds.custom_dmm_network import claims_dmm_network, section_dmm_network
from .seeds.fctma_pools import claims_fctma, section_fctma
from .seeds.fits_cse3320 import claims_cse3320, section_cse3320


# Section ids and headings, in page order (tests look for these headings).
SECTIONS = {
    "advice": "Advice: which allocator, how much heap, what worst case (heapkit advise)",
    "summary": "Summary: every allocator on every trace",
    "size": "Smallest arena per trace (heapkit size)",
    "buddy-freertos": "buddy-freertos Tables 3-6: free blocks, merging, alloc/free time (buddy-paper)",
    "fctma-pools": "fctma-pools Tables I-III: alloc/free time and internal fragmentation (itc)",
    "buddy-kth": "buddy-kth Figures 1-4: memory over time and cost per size level (kth)",
    "fits-cse3320": "fits-cse3320 tables: fit policies' timing and counters (cse3320)",
    "custom-dmm-network": "custom-dmm-network Tables 2-5, Figures 2-4: explored dmm configurations (drr, easyport, url-switch)",
    "traces": "Per-trace plots: latency CDF, fragmentation over time, heap map",
    "target": "Cortex-M3: exact instructions per call (heapkit bench --target cortex-m3)",
    "notes": "Method, deviations, and what could not be reproduced",
}


# --------------------------------------------------------------------------
# Loading results

def _empty() -> dict:
    return {"kind": "heapkit-report-input", "meta": {}, "runs": [], "size_runs": [],
            "traces": {}, "extra": {}, "target": [], "advice": []}


def _engine_run(obj: dict) -> dict:
    name = Path(get(obj, "trace.path", "trace")).name.split(".")[0]
    return {"allocator": get(obj, "allocator.name", "?"), "trace": name, "result": obj}


def normalize(obj: Any) -> dict:
    """Any supported results document as the report's input layout."""
    data = _empty()
    if isinstance(obj, list):
        for item in obj:
            merge(data, normalize(item))
        return data
    if not isinstance(obj, dict):
        raise HeapkitError("results: expected a JSON object or array")
    kind = obj.get("kind")
    if kind == "heapkit-demo":
        for key in ("meta", "traces", "extra"):
            data[key] = dict(obj.get(key) or {})
        data["runs"] = list(obj.get("runs") or [])
        data["size_runs"] = list(obj.get("size_runs") or [])
        data["advice"] = [obj["advice"]] if obj.get("advice") else []
        data["kind"] = kind
    elif kind == "heapkit-bench":
        data["runs"] = list(obj.get("runs") or [])
    elif kind == "heapkit-size":
        data["size_runs"] = list(obj.get("runs") or [])
    elif kind == "heapkit-advise":
        data["advice"] = [obj]
    elif kind == "heapkit-explore":
        data["extra"]["explore"] = [obj]
    elif kind == "heapkit-target":
        data["target"] = [obj]
    elif obj.get("format") == "heapkit-replay":
        run = _engine_run(obj)
        (data["size_runs"] if obj.get("mode") == "size-search" else data["runs"]).append(run)
    else:
        raise HeapkitError("results: not a heapkit demo/bench/size/advise/target file nor "
                           "hk-replay output")
    # The host the results were measured on (engine.machine()); a target document's
    # "machine" names the emulated board instead.
    if isinstance(obj.get("machine"), dict) and not data["meta"].get("machine"):
        data["meta"]["machine"] = obj["machine"]
    for key in ("runs", "size_runs"):
        for run in data[key]:
            if not (isinstance(run, dict) and isinstance(run.get("allocator"), str)
                    and isinstance(run.get("trace"), str) and isinstance(run.get("result") or {}, dict)):
                raise HeapkitError(f"results: a {key} entry lacks its allocator, trace or result object")
    return data


def merge(into: dict, other: dict) -> dict:
    into["runs"] += other["runs"]
    into["size_runs"] += other["size_runs"]
    into.setdefault("target", []).extend(other.get("target") or [])
    into.setdefault("advice", []).extend(other.get("advice") or [])
    into["traces"].update(other["traces"])
    into["meta"].update(other["meta"])
    for k, v in other["extra"].items():
        if isinstance(v, dict):     # one measurement (kth_release): the last file's wins
            into["extra"][k] = v
            continue
        into["extra"].setdefault(k, [])
        into["extra"][k] += v
    if other.get("kind") == "heapkit-demo":
        into["kind"] = "heapkit-demo"
    return into


_TRACE_HEADS = (b"HKTRACE\0", b"heapkit-trace ")
_NOT_RESULTS = ("not a results file (the JSON of heapkit demo, bench --json, size --json, "
                "explore or kth-release --json)")


def _is_trace(head: bytes) -> bool:
    if head.startswith(b"\x1f\x8b"):
        try:
            head = zlib.decompressobj(wbits=31).decompress(head)
        except zlib.error:
            return False
    return head.startswith(_TRACE_HEADS)


def load(paths: Iterable[str | os.PathLike]) -> dict:
    """The results files *paths* merged; they are told from traces and other files by content."""
    data = _empty()
    for p in paths:
        try:
            with open(p, "rb") as f:
                raw = f.read()
        except FileNotFoundError:
            raise HeapkitError(f"{p}: no such file") from None
        except OSError as e:
            raise HeapkitError(f"{p}: {e.strerror or e}") from None
        if not raw:
            raise HeapkitError(f"{p}: empty file")
        if _is_trace(raw[:1024]):
            raise HeapkitError(f"{p}: a trace, not results: run `heapkit bench --json` first")
        try:
            obj = json.loads(raw.decode("utf-8"))
        except UnicodeDecodeError:
            raise HeapkitError(f"{p}: {_NOT_RESULTS}") from None
        except json.JSONDecodeError as e:
            raise HeapkitError(f"{p}: {_NOT_RESULTS}: not JSON ({e})") from None
        try:
            merge(data, normalize(obj))
        except HeapkitError as e:
            raise HeapkitError(f"{p}: {e}") from None
    return data


# --------------------------------------------------------------------------
# One run's line of the summary (heapkit demo prints it too)

def summary_row(run: dict) -> dict:
    res = run.get("result") or {}
    rep = res.get("replay") or {}
    row = {"trace": run["trace"], "allocator": run["allocator"],
           "family": get(res, "allocator.family", run.get("family", "")),
           "records": get(rep, "completed_records"), "failures": get(rep, "failures.total"),
           "jw4": get(rep, "fragmentation.jw4"), "peak_footprint": get(rep, "memory.peak_footprint"),
           "arena": get(res, "arena.size"), "error": failed(run), "step": clock_step(run)}
    errs = rep.get("errors") or {}
    row["bugs"] = sum(int(errs.get(k) or 0) for k in ("corrupt_blocks", "calloc_not_zero",
                                                          "misaligned", "bad_blocks",
                                                          "misuse_reports"))
    row["bugs"] += int(bool(errs.get("check")))
    for kind in ("malloc", "free"):
        t = timing(run, kind) or {}
        for stat in ("p50", "p99", "max"):
            row[f"{kind}_{stat}"] = t.get(stat)
    return row


# --------------------------------------------------------------------------
# Plots: the per-trace figures and the advice's fronts

def _ccdf_points(t: dict) -> tuple[list[float], list[float]]:
    n = t["count"]
    pts = [(t["min"], 1.0), (t["p50"], 0.5)]
    if n >= 100:
        pts.append((t["p99"], 0.01))
    if n >= 1000:
        pts.append((t["p999"], 0.001))
    pts.append((t["max"], 1.0 / n))
    xs = [max(float(x), 1.0) for x, _ in pts]
    return xs, [y for _, y in pts]


MAX_SERIES = 8
GREY = {"color": "0.78", "linestyle": "-", "linewidth": 0.8, "zorder": 1}


def series_panels(allocs: Sequence[str], highlight: Iterable[str] = ()
                  ) -> list[tuple[list[str], list[str]]]:
    """(coloured, grey) series per row of panels: everything in one row up to MAX_SERIES;
    beyond, the highlighted ones (the advice's front) coloured and the rest grey, or without
    a front small multiples of MAX_SERIES series each."""
    allocs = list(allocs)
    if len(allocs) <= MAX_SERIES:
        return [(allocs, [])]
    hl = [a for a in allocs if a in set(highlight)][:MAX_SERIES]
    if hl:
        return [(hl, [a for a in allocs if a not in hl])]
    return [(allocs[i:i + MAX_SERIES], []) for i in range(0, len(allocs), MAX_SERIES)]


def _panel_style(st: Styles, a: str, i: int) -> dict:
    """The allocator's line style with a colour unique within its panel (tab10)."""
    import matplotlib
    style = dict(st(a))
    if style.get("color") != "black":
        style["color"] = matplotlib.colormaps["tab10"](i % 10)
    return style


def _panel_rows(draw: Callable[[Any, str, str, dict, str | None], bool], allocs: Sequence[str],
                highlight: Iterable[str], st: Styles, kinds: Sequence[str],
                finish: Callable[[Any, str], None], legend_at: str) -> str | None:
    """One row of len(kinds) panels per group of series_panels(); draw(ax, kind, alloc,
    style, label) draws one series and says whether it had data; finish(ax, kind) labels a
    panel; each row's legend goes in its first panel at *legend_at*."""
    plt = _plt()
    groups = series_panels(allocs, highlight)
    fig, axes = plt.subplots(len(groups), len(kinds), figsize=(12, 3.6 * len(groups) + 0.4),
                             squeeze=False)
    drawn = False
    for row, (shown, grey) in zip(axes, groups):
        for ax, kind in zip(row, kinds):
            for a in grey:
                drawn |= draw(ax, kind, a, GREY, None)
            for i, a in enumerate(shown):
                drawn |= draw(ax, kind, a, _panel_style(st, a, i), a)
            finish(ax, kind)
        if grey:
            row[0].plot([], [], label=f"{len(grey)} others (not on the advice's front)", **GREY)
        if row[0].get_legend_handles_labels()[0]:
            row[0].legend(fontsize=6.5, ncol=2, frameon=False, loc=legend_at)
    if not drawn:
        plt.close(fig)
        return None
    height = 3.6 * len(groups) + 0.4
    fig.subplots_adjust(left=0.06, right=0.98, bottom=0.55 / height, top=1 - 0.3 / height,
                        wspace=0.2, hspace=0.75 / 3.6)
    return _png(fig)


def fig_latency(trace: str, series: dict[str, dict], allocs: Sequence[str], st: Styles,
                highlight: Iterable[str] = (), unit: str = "ns") -> str | None:
    """Tails of time per call: *series* is allocator -> call kind -> the five quantiles
    (the target's instruction counts, or the host's ns); *unit* labels the x axis."""
    def draw(ax, kind, a, style, label) -> bool:
        t = series[a].get(kind)
        if not t or not t.get("count"):
            return False
        xs, ys = _ccdf_points(t)
        ax.plot(xs, ys, marker="o", markersize=2.5, label=label, **style)
        return True

    def finish(ax, kind) -> None:
        _logaxis(ax)
        ax.set_xlabel(f"{kind} per call, {unit}")
        ax.set_ylabel("share of calls slower (1 - CDF)")
        ax.set_title(f"{trace}: {kind} latency")

    return _panel_rows(draw, [a for a in allocs if a in series], highlight, st,
                       ("malloc", "free"), finish, "lower left")


def instruction_series(data: dict) -> dict[str, tuple[str, dict[str, dict]]]:
    """Per trace with exact counts: (target title, allocator -> call kind -> quantiles of
    instructions per call), from the advice's target runs (the first target counted), else
    from heapkit-target documents (their first build). Runs with failed allocations count
    other calls than the trace's and are left out."""
    out: dict[str, tuple[str, dict[str, dict]]] = {}
    for doc in advice_docs(data):
        tgts = doc.get("targets") or {}
        for t in doc.get("traces") or []:
            for k in (k for k, v in tgts.items() if "error" not in v):
                got = {r["allocator"]: r["targets"][k]["stats"] for r in t["rows"]
                       if ((r.get("targets") or {}).get(k) or {}).get("stats")
                       and not r["targets"][k].get("failures")}
                if got:
                    out.setdefault(t["trace"], (tgts[k].get("title", k), got))
                    break
    for tdoc in data.get("target") or []:
        build = next(iter(tdoc.get("builds") or []), None)
        title = get_target(tdoc.get("target", "cortex-m3")).title
        found: dict[str, dict[str, dict]] = {}
        for r in tdoc.get("runs") or []:
            if r.get("stats") and r.get("build") == build and not r.get("directed") \
                    and not get(r, "result.failures.total"):
                found.setdefault(r["trace"], {})[r["allocator"]] = r["stats"]
        for trace, got in found.items():
            out.setdefault(trace, (title, got))
    return out


def host_at_resolution(runs: dict[str, dict]) -> float | None:
    """The clock's step when half or more of the host's malloc and free medians lie below it
    (the plot would show the clock, not the allocators), else None."""
    below = total = 0
    step = None
    for r in runs.values():
        for kind in ("malloc", "free"):
            t, s = timing(r, kind), clock_step(r)
            if t and s:
                total += 1
                below += t["p50"] < s
                step = s
    return step if total and 2 * below >= total else None


def fig_fragmentation(trace: str, runs: dict[str, dict], allocs: Sequence[str], st: Styles,
                      highlight: Iterable[str] = ()) -> str | None:
    # R(i) of a run without failures (a failed request holds no memory, so a
    # run with failures has a lower R of its own).
    ref = [get(runs[a].get("result") or {}, "replay.series") for a in allocs if a in runs
           and get(runs[a].get("result") or {}, "replay.failures.total") == 0]
    ref = [x for x in ref if x and x.get("live_requested")]

    def series(a):
        s = get(runs.get(a, {}).get("result") or {}, "replay.series")
        return s if s and s.get("footprint") else None

    def draw(ax, kind, a, style, label) -> bool:
        s = series(a)
        if s is None:
            return False
        rec = np.asarray(s["record"], dtype=float)
        fp = np.asarray(s["footprint"], dtype=float)
        if kind == "footprint":
            ax.plot(rec, fp / 1024, label=label, **style)
        else:
            req = np.asarray(s["live_requested"], dtype=float)
            with np.errstate(divide="ignore", invalid="ignore"):
                ax.plot(rec, np.where(req > 0, fp / req, np.nan), label=label, **style)
        return True

    def finish(ax, kind) -> None:
        _logaxis(ax, "y")
        ax.set_xlabel("record")
        if kind == "footprint":
            if ref:
                ax.plot(np.asarray(ref[0]["record"], dtype=float),
                        np.asarray(ref[0]["live_requested"], dtype=float) / 1024, color="black",
                        linewidth=2.0, label="live requested", zorder=10)
            ax.set_ylabel("KiB (log)")
            ax.set_title(f"{trace}: footprint F(i) vs live requested R(i)")
        else:
            ax.set_ylabel("F(i) / R(i)")
            ax.set_title(f"{trace}: footprint per live requested byte")

    return _panel_rows(draw, [a for a in allocs if series(a)], highlight, st,
                       ("footprint", "ratio"), finish, "lower right")


def fig_advice_fronts(traces: Sequence[dict]) -> str | None:
    """One panel per trace: every allocator's smallest heap against its worst case, the
    Pareto front joined and named, the recommendation starred."""
    panels = [t for t in traces if any(r.get("min_heap") and r.get("cost") is not None
                                       for r in t.get("rows", []))]
    if not panels:
        return None
    plt = _plt()
    ncol = min(3, len(panels))
    nrow = (len(panels) + ncol - 1) // ncol
    fig, axes = plt.subplots(nrow, ncol, figsize=(4.4 * ncol, 3.1 * nrow + 0.5), squeeze=False)
    for ax, t in zip(axes.flat, panels):
        pts = {r["allocator"]: (r["min_heap"] / 1024, r["cost"]) for r in t["rows"]
               if r.get("min_heap") and r.get("cost") is not None}
        front = sorted((pts[a] + (a,) for a in t.get("front") or [] if a in pts))
        rest = [p for a, p in pts.items() if a not in (t.get("front") or [])]
        if rest:
            ax.scatter([p[0] for p in rest], [p[1] for p in rest], s=10, color="0.7",
                       label="other allocators", zorder=2)
        ax.plot([p[0] for p in front], [p[1] for p in front], "-o", color="tab:blue",
                markersize=4, label="Pareto front", zorder=3)
        named = list(front)
        rec = t.get("recommendation")
        if rec in pts:
            ax.plot(*pts[rec], marker="*", markersize=13, color="tab:red", linestyle="none",
                    label="recommended", zorder=4)
            if rec not in (t.get("front") or []):
                named.append(pts[rec] + (rec,))
        for x, y, a in named:
            ax.annotate(a, (x, y), fontsize=7, xytext=(4, 3), textcoords="offset points")
        _logaxis(ax)
        ax.set_title(t["trace"])
        ax.set_xlabel("smallest heap, KiB (log)")
        ax.set_ylabel((t.get("cost") or {}).get("label", "worst case"), fontsize=7)
    return _panels_done(fig, axes, len(panels), 8, 0.5 / (3.1 * nrow + 0.5))


def fig_heapmaps(trace: str, runs: dict[str, dict], allocs: Sequence[str]) -> str | None:
    pics = []
    for a in allocs:
        if a in runs:
            p = heapmap_picture(runs[a])
            if p is not None:
                pics.append((a, p))
    if not pics:
        return None
    plt = _plt()
    ncol = 5
    nrow = (len(pics) + ncol - 1) // ncol
    fig, axes = plt.subplots(nrow, ncol, figsize=(13, 1.55 * nrow + 0.5), squeeze=False)
    used_c = np.array([0.12, 0.25, 0.60])
    free_c = np.array([0.93, 0.90, 0.70])
    other_c = np.array([0.55, 0.55, 0.55])
    for ax, (a, (records, top, used, free)) in zip(axes.flat, pics):
        other = np.clip(1.0 - used - free, 0, 1)
        rgb = (used[..., None] * used_c + free[..., None] * free_c + other[..., None] * other_c)
        img = np.clip(rgb.transpose(1, 0, 2), 0, 1)
        r0, r1 = (records[0], records[-1]) if len(records) > 1 else (0, max(records[0], 1))
        ax.imshow(img, aspect="auto", origin="lower", interpolation="nearest")
        ax.set_title(f"{a} (0-{fmt_kib(top)})", fontsize=7)
        span = f"records {r0:,}-{r1:,}"
        ax.set_xticks([])
        ax.set_yticks([])
        ax.grid(False)
    for ax in list(axes.flat)[len(pics):]:
        ax.axis("off")
    fig.text(0.5, 0.01, "x: record (time), y: arena offset from 0 up to the highest block end "
             "reached; blue: used blocks, pale yellow: free blocks, grey: control data and bytes the "
             "heap walk does not report", ha="center", fontsize=8)
    fig.suptitle(f"{trace}: heap map (address x time, {span})", fontsize=9)
    height = 1.55 * nrow + 0.5
    fig.subplots_adjust(left=0.01, right=0.99, bottom=0.3 / height, top=1 - 0.45 / height,
                        wspace=0.04, hspace=0.32)
    return _png(fig)


# --------------------------------------------------------------------------
# The seed papers' verdicts (their judges: CLAIM_JUDGES)

def seed_claims(data: dict) -> dict[str, list[Claim]]:
    """Every seed's claims judged on *data*: {section id: claims}; a seed whose runs are
    not in *data* has none."""
    out = {}
    for seed, judge in CLAIM_JUDGES.items():
        claims = judge(data)
        bad = [c for c in claims if c.verdict not in VERDICTS]
        assert not bad, f"{seed}: verdicts must be one of {VERDICTS}: {bad}"
        if claims:
            out[seed] = claims
    return out


def claims_markdown(data: dict) -> str:
    """The verdicts as Markdown, one list per seed (``heapkit demo`` writes claims.md)."""
    out = []
    for seed, claims in seed_claims(data).items():
        out.append(f"## {SECTIONS[seed]}\n")
        out += [f"- {c.claim}: **{c.verdict}**. {c.reason}" for c in claims]
        out.append("")
    return "\n".join(out)


# --------------------------------------------------------------------------
# Sections

def advice_docs(data: dict) -> list[dict]:
    """The heapkit-advise documents: a list once loaded, one document in a demo's data."""
    docs = data.get("advice") or []
    return [docs] if isinstance(docs, dict) else list(docs)


def advice_fronts(data: dict) -> dict[str, list[str]]:
    """Per trace: the allocators of the advice's front, the recommendation first."""
    out: dict[str, list[str]] = {}
    for doc in advice_docs(data):
        for t in doc.get("traces") or []:
            names = [t["recommendation"]] if t.get("recommendation") else []
            out[t["trace"]] = list(dict.fromkeys(names + list(t.get("front") or [])))
    return out


def _advice_rows(t: dict, targets: Sequence[str]) -> list[list[Any]]:
    """Every allocator of one trace's advice, smallest heap first (front marked)."""
    rows = []
    for r in sorted(t["rows"], key=lambda r: (r.get("min_heap") is None, r.get("min_heap") or 0)):
        mark = " (recommended)" if r["allocator"] == t.get("recommendation") else \
            " (front)" if r.get("on_front") else ""
        if not r.get("min_heap"):
            why = "none: " + (r.get("why_none") or "no heap found")
            rows.append([r["allocator"], (why, "wrap")]
                        + [""] * (len(targets) + 4))
            continue
        cells: list[Any] = [r["allocator"] + mark, fmt_bytes(r["min_heap"]), fmt_bytes(r["heap"])]
        for k in targets:
            tr = (r.get("targets") or {}).get(k) or {}
            cell = fmt_int(tr.get("worst"))
            cells.append((f"{cell} ({fmt_int(tr['failures'])} failed)", "bad")
                         if tr.get("failures") else cell)
        h = r.get("host") or {}
        cells += [fmt_ns(h.get("ns_per_op"), h.get("step_ns")), r.get("growth") or "bounded",
                  (r.get("detects") or {}).get("text", "not measured")]
        rows.append(cells)
    return rows


def section_advice(data: dict, figs: Figures) -> str:
    docs = advice_docs(data)
    if not docs:
        return Absent("no advice here: run <code>heapkit advise TRACE... --json FILE</code> and "
                      "pass FILE to <code>heapkit report</code> (<code>heapkit demo</code> "
                      "includes it).")
    parts = []
    for doc in docs:
        tgts = doc.get("targets") or {}
        counted = [k for k, v in tgts.items() if "error" not in v]
        rows = []
        for t in doc.get("traces") or []:
            pick = next((r for r in t["rows"] if r["allocator"] == t.get("recommendation")), None)
            if pick is None:
                rows.append([t["trace"], ("none", "bad"), ""] + [""] * len(counted)
                            + ["", "", (t.get("why_none", ""), "wrap")])
                continue
            h = pick.get("host") or {}
            peer = t.get("family", "heapkit") != "heapkit"
            why = t["reason"] + (". " + advice_gap_text(t) if peer else "")
            cfg = (t.get("config") or {}).get("allocator") or ("none: a peer" if peer else "none")
            rows.append([t["trace"], pick["allocator"] + (" (peer)" if peer else ""),
                         fmt_kib(pick["heap"])]
                        + [fmt_int(((pick.get("targets") or {}).get(k) or {}).get("worst"))
                           for k in counted]
                        + [fmt_ns(h.get("ns_per_op"), h.get("step_ns")),
                           cfg, (why, "wrap")])
        parts.append(table(["trace", "recommended", "heap to configure"]
                           + [f"{tgts[k].get('title', k)} worst insns" for k in counted]
                           + ["host ns/op", "configured", "why"], rows, numeric_from=2,
                           text_cols=[-1, -2]))
        parts.append(figs.img(fig_advice_fronts, (doc.get("traces") or [],),
                              "advice: smallest heap against worst case"))
        st = doc.get("settings") or {}
        how = [f"Per trace and allocator that lives in an arena: the smallest heap on which the "
               f"whole trace replays without a failed allocation (engine size search, 16-byte "
               f"steps), the heap to configure (+{st.get('margin', 0):g} %), host time per "
               f"operation (each call kind's median weighted by its calls, replayed at "
               f"{esc(st.get('host_arena', ''))})"]
        if counted:
            how.append("the exact worst case per call on " + ", ".join(
                f"{esc(tgts[k].get('title', k))} ({fmt_int(tgts[k].get('arena'))}-byte arena)"
                for k in counted)
                + ": the most instructions any malloc, aligned allocation or free took")
        missing_t = [f"{k}: {v['error']}" for k, v in tgts.items() if "error" in v]
        lvl = (doc.get("library") or {}).get("hk_hardening")
        parts.append(cap(
            "; ".join(how) + ". The front (blue) holds the allocators no other beats on both "
            "smallest heap and worst case; the recommendation (red star), one per trace, "
            f"follows this rule: {esc(doc.get('rule', ''))} (heapkit advise, docs/advise.md). "
            f"Detection: the misuse and corruption matrices at HK_HARDENING {esc(lvl)}, run on "
            "heapkit's allocators. "
            + (f"Not counted: {esc('; '.join(missing_t))}. " if missing_t else "")
            + (f"Misuse not measured: {esc(doc['detection_error'])}." if doc.get("detection_error")
               else "")))
        for t in doc.get("traces") or []:
            parts.append(f"<details><summary>{esc(t['trace'])}: every allocator "
                         f"({fmt_int(t.get('records'))} records"
                         + (f"; {esc(t['note'])}" if t.get("note") else "") + ")</summary>")
            parts.append(table(["allocator", "smallest heap B", "to configure B"]
                               + [f"{tgts[k].get('title', k)} worst insns" for k in counted]
                               + ["host ns/op", "worst case grows with",
                                  f"detects (HK_HARDENING {esc(lvl)})"],
                               _advice_rows(t, counted), text_cols=[-1, -2]))
            if t.get("dropped"):
                parts.append(cap("Left out of the recommendation: " + esc("; ".join(t["dropped"]))))
            if t.get("board_limits"):
                parts.append(cap(esc("; ".join(t["board_limits"])) + "."))
            parts.append("</details>")
    return "\n".join(parts)


def section_summary(data: dict) -> str:
    allocs = allocator_order(data)
    rows, groups, focus = [], {}, []
    for trace in trace_order(data):
        runs = runs_of(data, trace)
        groups[len(rows)] = f"{trace}  ({data['traces'].get(trace, {}).get('label', '')})".rstrip(" ()")
        for a in allocs:
            if a not in runs:
                continue
            s = summary_row(runs[a])
            if s["error"]:
                rows.append([a, ("n/a: " + s["error"], "bad")] + ["n/a"] * 10)
                continue
            fails = (fmt_int(s["failures"]), "bad") if s["failures"] else fmt_int(s["failures"])
            bugs = (fmt_int(s["bugs"]), "bad") if s["bugs"] else "0"
            ns = [fmt_ns(s[k], s["step"]) for k in ("malloc_p50", "malloc_p99", "malloc_max",
                                                     "free_p50", "free_p99", "free_max")]
            rows.append([a, fmt_int(s["records"]), fails, *ns, fmt_pct(s["jw4"]),
                         fmt_bytes(s["peak_footprint"]), bugs])
    if not rows:
        return Absent("no replays here: run <code>heapkit bench --json FILE</code> or "
                      "<code>heapkit demo</code>.")
    header = ["allocator", "records", "failures", "malloc p50 ns", "malloc p99 ns",
              "malloc max ns", "free p50 ns", "free p99 ns", "free max ns", "J&W #4",
              "peak footprint B", "errors"]
    return (cap("One replay per allocator and trace at the engine's default arena "
                "(max(64 KiB, 4 x peak live requested)). Failures are allocations that "
                "returned NULL (results, not errors). J&amp;W #4 = peak footprint / peak "
                "live requested - 1 (n/a for <code>system</code>, whose footprint is not "
                "observable). <b>errors</b> counts allocator bugs the engine saw (pattern "
                "corruption, misalignment, bad blocks, misuse reports, failed "
                "<code>hk_check</code>): 0 is expected. " + esc(NOISE_NOTE))
            + f"<details open><summary>{len(rows)} runs (click to fold)</summary>"
            + table(header, rows, groups=groups, focus=focus) + "</details>")


def size_summary(data: dict) -> tuple[list[str], list[str], dict, dict]:
    """(allocators, traces, ratio[(a, t)] or reason, geomean[a] = (value, n))."""
    allocs = [a for a in allocator_order(data) if any(r["allocator"] == a for r in data["size_runs"])]
    traces: dict[str, None] = {}
    cell: dict[tuple[str, str], Any] = {}
    for r in data["size_runs"]:
        traces.setdefault(r["trace"], None)
        res = r.get("result") or {}
        arena, peak = get(res, "search.min_arena"), get(res, "search.peak_live_requested")
        if arena and peak:
            cell[(r["allocator"], r["trace"])] = arena / peak
        else:
            cell[(r["allocator"], r["trace"])] = (failed(r) or get(res, "search.reason")
                                                  or "no arena found")
    # Say why in a word, from the bench run of the same trace where there is one.
    bench = {(r["allocator"], r["trace"]): r.get("result") or {} for r in data["runs"]}
    for (a, t), v in list(cell.items()):
        if isinstance(v, float):
            continue
        b = bench.get((a, t), {})
        if get(b, "allocator.in_arena") is False or "arena" in v and "needs" in v:
            cell[(a, t)] = "arena"
        elif get(b, "replay.failures.unsupported_aligned"):
            cell[(a, t)] = "align"
        elif "every arena size" in v:
            cell[(a, t)] = "size"
    gm = {}
    for a in allocs:
        xs = [v for (aa, _), v in cell.items() if aa == a and isinstance(v, float)]
        gm[a] = (geomean(xs), len(xs))
    return allocs, list(traces), cell, gm


def section_size(data: dict) -> str:
    if not data["size_runs"]:
        return missing("size", "run <code>heapkit size --json</code> or <code>heapkit demo</code>.")
    allocs, traces, cell, gm = size_summary(data)
    header = ["allocator"] + traces + ["geomean", "traces"]
    rows = []
    for a in allocs:
        row: list[Any] = [a]
        for t in traces:
            v = cell.get((a, t))
            row.append("" if v is None else fmt_f(v, 3) if isinstance(v, float)
                       else (f"n/a: {v}" if len(v) < 24 else "n/a", "bad"))
        g, n = gm[a]
        row += [fmt_f(g, 3), f"{n}/{len(traces)}"]
        rows.append(row)
    order = sorted(range(len(rows)), key=lambda i: (gm[allocs[i]][0] is None, -gm[allocs[i]][1],
                                                    gm[allocs[i]][0] or 0))
    rows = [rows[i] for i in order]
    reasons = sorted({get(r.get("result") or {}, "search.reason") or failed(r)
                      for r in data["size_runs"]} - {None})
    prefix = data["meta"].get("size_prefix_note", "")
    peaks = []
    for t in traces:
        r = next((x for x in data["size_runs"] if x["trace"] == t and x.get("result")), None)
        if r:
            peaks.append(f"{esc(t)} {fmt_kib(get(r['result'], 'search.peak_live_requested'))}")
    return (cap("Smallest arena on which the whole trace replays without a failed allocation "
                "(binary search in 16-byte steps, docs/metrics.md), divided by the trace's "
                "peak live requested bytes; the geometric mean is over the traces where an "
                "arena was found (count in the last column), so compare it only between "
                "allocators with the same count. n/a: no arena up to the search limit: "
                "'arena' = the allocator does not live in an arena (system malloc); "
                "'align' = the trace has aligned (memalign) requests the allocator has no "
                "aligned_alloc for; 'size' = no size up to the search limit works: a request "
                "is larger than the allocator can ever serve (a pool's largest class, umm's "
                "256 KiB cap), or, for bump, which never reuses memory, the trace's total "
                "allocation exceeds the limit. "
                + ("Engine reasons: " + esc("; ".join(reasons)) + ". " if reasons else "")
                + prefix)
            + table(header, rows)
            + cap("Peak live requested bytes: " + ", ".join(peaks) + "."))


def section_traces(data: dict, st: Styles, figs: Figures, fronts: dict[str, list[str]]) -> str:
    if not trace_order(data):
        return Absent("no replays here: run <code>heapkit bench --json FILE</code> or "
                      "<code>heapkit demo</code>.")
    allocs = allocator_order(data)
    counts = instruction_series(data)
    parts = [cap("For each trace: latency tails drawn through five quantiles per call kind "
                 "(min, p50, p99, p99.9, max; y = share of calls slower, so the p99 point sits "
                 "at 0.01), in exact instructions per call on the emulated target where the "
                 "advice or <code>heapkit bench --target</code> counted the trace (allocators "
                 "that failed allocations there are left out), else in host nanoseconds unless "
                 "half or more of the medians lie below the clock's step; footprint against "
                 "live requested bytes over time, and the heap map from the engine's heap-walk "
                 "snapshots. Heapkit allocators are solid lines, peers dashed, the system malloc dotted black; "
                 f"with more than {MAX_SERIES} allocators the advice's front for the trace is "
                 "coloured and the rest grey, or without advice the allocators are split over "
                 f"rows of {MAX_SERIES}. " + esc(NOISE_NOTE))]
    for trace in trace_order(data):
        runs = runs_of(data, trace)
        info = data["traces"].get(trace, {})
        any_res = next((r["result"] for r in runs.values() if r.get("result")), {})
        desc = info.get("label") or ""
        n = get(any_res, "trace.records")
        peak = get(any_res, "trace.peak_live_requested")
        parts.append(f'<h3 id="trace-{esc(trace)}">{esc(trace)}</h3>')
        parts.append(cap(f"{esc(desc)} {fmt_int(n)} records, peak live requested "
                         f"{fmt_kib(peak)}. {esc(info.get('note', ''))}"))
        hl = fronts.get(trace, ())
        if trace in counts:
            title, series = counts[trace]
            parts.append(figs.img(fig_latency, (trace, series, allocs, st, hl,
                                                f"{title} instructions (exact, QEMU)"),
                                  f"{trace} latency"))
        elif (step := host_at_resolution(runs)) is None:
            host = {a: {k: timing(r, k) for k in ("malloc", "free")} for a, r in runs.items()}
            parts.append(figs.img(fig_latency, (trace, host, allocs, st, hl,
                                                "ns (noisy host timing; 0 drawn at 1)"),
                                  f"{trace} latency"))
        else:
            parts.append(cap(f"No latency plot: half or more of the host's medians lie below "
                             f"the clock's step ({fmt_ns(step)} ns) and "
                             "there are no instruction counts for this trace "
                             "(<code>heapkit advise --target</code>, <code>heapkit bench "
                             "--target</code>)."))
        parts.append(figs.img(fig_fragmentation, (trace, runs, allocs, st, hl),
                              f"{trace} fragmentation"))
        parts.append(figs.img(fig_heapmaps, (trace, runs, allocs), f"{trace} heap map"))
    return "\n".join(parts)


PAPER_NOTES = [
    ("buddy-freertos", "Tables 3-6 are reproduced on the <code>buddy-paper</code> workload "
     "(the paper gives no sizes or counts; the generator's docstring says how they were "
     "chosen), heapkit's buddy standing in for heap_buddy.c, with FreeRTOS heap_5 and heap_4 "
     "as peers. The arena is the engine's default (4 x peak live), not the BL602 heap. Tables "
     "5-6 are exact instruction counts on an emulated RV32IMAC core (the BL602 is RISC-V) for "
     "the paper's 20 timed calls and for the whole workload, converted to microseconds at the "
     "BL602's 192 MHz with one instruction per cycle; host nanoseconds stand beside them. "
     "Table 1's binary-buddy waste and DELAY-2's speed-up are measured; the rest of Tables 1-2 "
     "is qualitative and judged as such."),
    ("fctma-pools", "Tables I-III are reproduced on the <code>itc</code> workload (a "
     "discrete-event version of the producer/consumer benchmark, MaxTime tuned to about 100 "
     "live blocks): FCTMA is heapkit's <code>pool</code>, one pool whose block is the trace's "
     "largest request (127 B), carved from a bump allocator (the paper's SimpleDMA); SDMA is "
     "the lab's <code>sdma</code>, the Smart Dynamic Memory Allocator of the paper's reference "
     "[2] as the paper configured it (15 classes, lookup tables in flash, every block "
     "short-lived, no split or merge), and the bump appears under its own name; FreeRTOS "
     "heap_4 is the kernel's own. Tables I-II are "
     "exact Cortex-M3 instruction counts (QEMU) at -O0 and -O2, converted to microseconds at "
     "72 MHz with one instruction per cycle; host nanoseconds follow as a secondary table. The "
     "ITC application itself runs on FreeRTOS V11.2.0 in QEMU with each heap, every call "
     "counted, FCTMA also with its mutex and counting semaphore and under a multitasking "
     "stress; the ISR-safe pool of the paper's future work (lfpool) runs under a timer "
     "interrupt there. Table III uses the paper's definition at each allocator's smallest "
     "failure-free arena."),
    ("buddy-kth", "Figure 1 is reproduced with the arena footprint in place of memory obtained "
     "from the OS; Figure 2 (blocks returned to the OS) with heapkit's buddy under "
     "libheapkit_malloc.so, which maps regions from the OS and munmaps empty ones with "
     "HEAPKIT_RELEASE=1 (a region stands for the paper's top-level block). Figure 3 is "
     "approximated by cumulative quantiles over prefixes of the trace (the engine reports "
     "quantiles, not per-call samples) and, with the return to the OS, by the kth process's "
     "cost per tenth; Figure 4 by one trace per size level, in exact RV32 instructions (the "
     "target's system malloc is picolibc's) and, with the return to the OS, by the kth "
     "process per level on the host. 'system' is the C library's malloc of this host (glibc "
     "unless LD_PRELOAD says otherwise)."),
    ("fits-cse3320", "The counters table is reproduced on one fixed-order round of the "
     "<code>cse3320</code> workload at heapkit's header and at the paper's 24-byte header (the "
     "engine pads each request); the paper lists no block sizes, so the workload's sizes are "
     "a reconstruction that matches its totals (32 mallocs, 20296 bytes), and with heapkit's "
     "merging of both neighbours the four fits end with the same heap. The timing table is "
     "reproduced as exact Cortex-M3 instruction counts (newlib standing for the system "
     "malloc) with host ns beside; the resident-size comparison runs the test as a process "
     "under libheapkit_malloc.so against glibc."),
    ("custom-dmm-network", "Tables 2-5 and Figures 2-4 are reproduced on the three applications "
     "of lab/netapps (DRR, Easyport, URL switching) with heapkit's configurable dmm standing in for "
     "the paper's allocator library and its presets for the OS allocators of Table 1. Each "
     "application has one real capture (python3-dpkt's, 43-62 packets, replayed with shifted "
     "flows) and four synthetic traces in the shapes of Fig. 3, where the paper had 3-7 real "
     "traces of 4,200-50,000 packets. The demo explores 1,344 configurations per application, "
     "not 10,500 (<code>make explore</code> runs the full space on the capture traces); cost is "
     "hk-explore's deterministic work count and exact Cortex-M3 instructions, not seconds on a "
     "Pentium IV; fragmentation is not split into internal and external parts."),
]


def section_notes(data: dict) -> str:
    meta = data["meta"]
    items = [f"<li><b>{esc(k)}</b>: {v}</li>" for k, v in PAPER_NOTES]
    for note in meta.get("notes", []):
        items.append(f"<li>{esc(note)}</li>")
    items.append("<li>Timings: " + esc(NOISE_NOTE) + " The papers measured on MCUs "
                 "(STM32F103, BL602) or desktop Linux; compare orderings, not absolute "
                 "values.</li>")
    t = meta.get("timing")
    if t:
        items.append(f"<li>This run: collecting the results took {t['wall_s']:.0f} s wall and "
                     f"{t['cpu_s']:.0f} s CPU (this process and every engine process) with "
                     f"{t['jobs']} engine runs at a time; load average at the end "
                     f"{t['load_avg_at_end'][0]:.2f} on a shared machine.</li>")
    na = [(r["allocator"], r["trace"], r.get("error")) for r in data["runs"] if failed(r)]
    if na:
        lis = "".join(f"<li><code>{esc(a)}</code> on <code>{esc(t)}</code>: {esc(e)}</li>"
                      for a, t, e in na)
        items.append(f"<li>Runs the engine could not make (n/a in the tables):<ul>{lis}</ul></li>")
    fails = [(r["trace"], r["allocator"], get(r["result"], "replay.failures.total"))
             for r in data["runs"] if r.get("result")
             and get(r["result"], "replay.failures.total")]
    if fails:
        by = {}
        for t, a, n in fails:
            by.setdefault(a, []).append(f"{t} ({n:,})")
        lis = "".join(f"<li><code>{esc(a)}</code>: {esc(', '.join(v))}</li>"
                      for a, v in by.items())
        items.append("<li>Runs with failed allocations at the default arena (results, not "
                     f"errors; failed requests hold no memory):<ul>{lis}</ul></li>")
    return "<ul>" + "\n".join(items) + "</ul>"


def _meta_block(data: dict) -> str:
    meta = data["meta"]
    bits = []
    if meta.get("generated"):
        bits.append(f"results generated {esc(meta['generated'])}")
    if meta.get("quick"):
        bits.append("<b>--quick run: reduced workloads and trace prefixes</b>")
    t = meta.get("timing")
    if t:
        bits.append(f"demo collection took {t['wall_s']:.1f} s wall, {t['cpu_s']:.1f} s CPU "
                    f"({t['jobs']} parallel engine runs)")
    eng = next((get(r["result"], "engine") for r in data["runs"] if r.get("result")), None)
    if eng:
        bits.append(f"engine HK_ALIGN {eng.get('hk_align')}, LD_PRELOAD "
                    f"{esc(eng.get('ld_preload') or 'none')}")
    return '<p class="meta">' + "; ".join(bits) + "</p>" if bits else ""


# --------------------------------------------------------------------------
# Target results (heapkit bench --target cortex-m3|rv32: heapkit-target documents)

def target_builds(data: dict) -> list[str]:
    """The builds (optimisation level, and hardening level if asked for) a heapkit-target document holds."""
    return data.get("builds") or data.get("opts", [])


def target_summary_rows(data: dict, build: str) -> list[dict[str, Any]]:
    """Per allocator in *build* (an optimisation level, or "level/hN" with --hardening):
    pooled malloc/free p50 and max over the non-directed traces, the directed worst
    case, failures, corruptions and .text bytes."""
    rows: dict[str, dict[str, Any]] = {}
    for r in data["runs"]:
        if r.get("build", r["opt"]) != build or r.get("result") is None:
            continue
        row = rows.setdefault(r["allocator"], {"allocator": r["allocator"], "family": r["family"],
                                               "hardening": r.get("hardening"),
                                               "worst_malloc": None, "worst_free": None,
                                               "failures": 0, "corrupt": 0, "traces": 0})
        res = r["result"]
        if r.get("directed"):
            for k in ("malloc", "free"):
                v = r["stats"][k]["max"]
                if v is not None and (row[f"worst_{k}"] is None or v > row[f"worst_{k}"]):
                    row[f"worst_{k}"] = v
            continue
        row["traces"] += 1
        row["failures"] += res["failures"]["total"]
        row["corrupt"] += sum(res["errors"].values())
    for alloc, row in rows.items():
        pooled = data["pooled"].get(build, {}).get(alloc, {})
        for k in ("malloc", "free"):
            st = pooled.get(k) or {}
            row[f"{k}_p50"] = st.get("p50")
            row[f"{k}_max"] = st.get("max")
        row["text"] = data["text_bytes"].get(build, {}).get(alloc)
    return list(rows.values())


def target_description(data: dict) -> str:
    """One line: the target, its counter and the calibration of this document."""
    t = get_target(data.get("target", "cortex-m3"))
    cal = data.get("calibration") or {}
    raw = cal.get("raw_1000", cal.get("ticks_1000"))
    unit = "SysTick ticks" if t is CORTEX_M3 else "minstret units, ns"
    return (f"{t.title} ({t.machine}, -icount shift=7, {t.counter_desc}): instructions per call, "
            f"exact; calibration: empty window {cal.get('empty')}, 1-instruction callee "
            f"{cal.get('nop')}, 1000-instruction callee {cal.get('insns_1000')} ({raw} {unit}); "
            f"arena {data.get('arena', ARENA_SIZE):,} bytes")


def section_target(docs: Sequence[dict]) -> str:
    """HTML for the target section of `heapkit report` from heapkit-target documents
    (one per target run: Cortex-M3, RV32, any arena or hardening levels)."""
    if not docs:
        return Absent("no instruction counts here: run <code>heapkit bench --target cortex-m3 "
                      "--json FILE</code> (or <code>--target rv32</code>) and pass FILE to "
                      "<code>heapkit report</code>.")
    out = []
    for data in docs:
        t = get_target(data.get("target", "cortex-m3"))
        host: dict[str, dict[str, list[float]]] = {}
        step = max((h["step_ns"] for h in data.get("host") or [] if h.get("step_ns")),
                   default=None)
        for h in data.get("host") or []:
            d = host.setdefault(h["allocator"], {"malloc": [], "free": []})
            for k in ("malloc", "free"):
                if h.get(f"{k}_p50") is not None:
                    d[k].append(h[f"{k}_p50"])
        cal = data.get("calibration") or {}
        traces = [tr["name"] for tr in data.get("traces", []) if not tr.get("skipped")]
        skipped = data.get("skipped_traces") or {}
        for build in target_builds(data):
            rows = []
            for r in target_summary_rows(data, build):
                hm = host.get(r["allocator"], {})
                med = {k: (float(np.median(v)) if v else None) for k, v in hm.items()}
                rows.append([r["allocator"], fmt_int(r["malloc_p50"]), fmt_int(r["malloc_max"]),
                             fmt_int(r["free_p50"]), fmt_int(r["free_max"]),
                             fmt_int(r["worst_malloc"]), fmt_int(r["worst_free"]),
                             fmt_int(r["text"]), fmt_int(r["failures"]),
                             (fmt_int(r["corrupt"]), "bad") if r["corrupt"] else "0",
                             fmt_ns(med.get("malloc"), step), fmt_ns(med.get("free"), step)])
            heading = build if t is CORTEX_M3 else f"{t.title}, {build}"
            out.append(f"<h3>{esc(heading)}</h3>")
            out.append(table(["allocator", "malloc p50", "malloc max", "free p50", "free max",
                                  "worst-path malloc", "worst-path free", ".text bytes", "failures",
                                  "errors", "host malloc p50 ns (median)", "host free p50 ns (median)"],
                                 rows))
        out.append(cap(
            f"Exact instructions per call on {esc(t.machine)} ({esc(t.title)}, -icount "
            f"shift=7, {esc(t.counter_desc)}; calibration: empty window {cal.get('empty')}, "
            f"1-instruction callee {cal.get('nop')}, 1000-instruction callee "
            f"{cal.get('insns_1000')}). p50 and max pool every call of the traces "
            f"{esc(', '.join(tr for tr in traces if not tr.startswith('worst-')))}; worst-path "
            f"columns are the directed worst-case traces. Arena {data.get('arena', 0):,} bytes "
            f"(umm: 256 KiB at most; {t.libc}: its sbrk heap). .text = Berkeley text of the "
            f"allocator's objects ({t.libc}: its prebuilt malloc members). Host columns: median "
            f"over the traces of the host engine's p50 (noisy)."
            + (" Skipped (too big for the board): " + esc("; ".join(f"{k}: {v}" for k, v in skipped.items()))
               if skipped else "")))
    return "\n".join(out)


def machine_text(meta: dict) -> str:
    """The machine the results were measured on, from what they recorded (engine.machine())."""
    m = meta.get("machine")
    if not m:
        return meta.get("host") or "a machine these results do not describe"
    parts = [" ".join(str(m[k]) for k in ("system", "release", "arch") if m.get(k)),
             f"{m.get('cpus')} CPUs"]
    if m.get("cpu"):
        parts.append(str(m["cpu"]))
    if m.get("virtualised") is not None:
        parts.append("virtualised (hypervisor CPU flag)" if m["virtualised"] else "not virtualised")
    if m.get("load_avg"):
        parts.append(f"load average {m['load_avg'][0]:.2f} when recorded")
    return ", ".join(parts)


# Each seed section's claims, judged on the results (see :func:`seed_claims`).
CLAIM_JUDGES: dict[str, Callable[[dict], list[Claim]]] = {
    "buddy-freertos": claims_buddy_freertos,
    "fctma-pools": claims_fctma,
    "fits-cse3320": claims_cse3320,
    "buddy-kth": claims_kth,
    "custom-dmm-network": claims_dmm_network,
}


def build_html(data: dict, title: str = "heapkit report", workers: int = 1,
               progress: bool = False) -> str:
    """The whole page as a string (plots rendered in *workers* processes). Sections without
    data are left out and listed under the contents with what would fill them."""
    allocs = allocator_order(data)
    st = Styles(allocs, families(data))
    figs = Figures()
    fronts = advice_fronts(data)
    body = {
        "advice": section_advice(data, figs),
        "summary": section_summary(data),
        "size": section_size(data),
        "buddy-freertos": section_buddy_freertos(data),
        "fctma-pools": section_fctma(data),
        "buddy-kth": section_kth(data, st, figs),
        "fits-cse3320": section_cse3320(data),
        "custom-dmm-network": section_dmm_network(data, figs),
        "traces": section_traces(data, st, figs, fronts),
        "target": section_target(data.get("target") or []),
        "notes": section_notes(data),
    }
    shown = [k for k in SECTIONS if not isinstance(body[k], Absent)]
    nav = "".join(f'<li><a href="#{k}">{esc(SECTIONS[k])}</a></li>' for k in shown)
    left_out = "".join(f"<li>{esc(SECTIONS[k])}: {body[k]}</li>" for k in SECTIONS
                       if k not in shown)
    traces_nav = " ".join(f'<a href="#trace-{esc(t)}">{esc(t)}</a>' for t in trace_order(data))
    out = [f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
           f"<title>{esc(title)}</title><style>{CSS}</style></head><body>",
           f"<h1>{esc(title)}</h1>", _meta_block(data),
           f'<div class="warn">Measured on {esc(machine_text(data["meta"]))}. '
           f'{esc(NOISE_NOTE)}</div>']
    # The answer comes first, before the contents of everything else.
    if "advice" in shown:
        out += [f'<h2 id="advice">{esc(SECTIONS["advice"])}</h2>', body["advice"]]
    out += [f"<nav><ol>{nav}</ol></nav>",
            f'<p class="na">Left out, no data in these results:</p><ul class="na">{left_out}</ul>'
            if left_out else "",
            f'<p class="meta">Traces: {traces_nav}</p>' if traces_nav else ""]
    claims = seed_claims(data)
    for key in shown:
        if key == "advice":
            continue
        out.append(f'<h2 id="{key}">{esc(SECTIONS[key])}</h2>')
        out.append(body[key])
        out.append(claims_html(claims.get(key, ())))
    out.append("</body></html>\n")
    page = "\n".join(out)
    with _progress.bar(total=len(figs.jobs), desc="plots", unit="plot", show=progress) as bar:
        return figs.fill(page, workers, bar.update)


def write_report(data: dict, path: str | os.PathLike, title: str = "heapkit report",
                 workers: int = 1, progress: bool = False) -> Path:
    page = build_html(data, title, workers, progress)
    path = Path(path)
    if path.parent and not path.parent.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
    try:
        path.write_text(page, encoding="utf-8")
    except OSError as e:
        raise HeapkitError(f"{path}: cannot write: {e.strerror or e}") from None
    return path
