# SPDX-License-Identifier: MIT
"""custom-dmm-network (custom dynamic memory managers explored for network
applications): heapkit explore's tables and Pareto plots (explore.html and the report),
Tables 2-5 and Figures 2-4 for DRR, Easyport and URL switching with the presets and the
chosen configurations, their Cortex-M3 costs, the section and the verdicts on the
paper's claims."""

from __future__ import annotations

import base64
import io
from typing import Any, Callable, Sequence

from ..errors import HeapkitError
from ..render import (Absent, Claim, Figures, UNTESTABLE, _logaxis, _plt, _png, cap, esc, fmt_f,
                      fmt_int, fmt_pct, judged, table)


# --------------------------------------------------------------------------
# heapkit explore's results (heapkit-explore documents)

def _explore_cells(row: dict, names: Sequence[str], field: str, scale: float, digits: int) -> list[str]:
    vals = []
    for n in names:
        c = row["per_trace"].get(n)
        if c is None or c["status"] != "ok":
            vals.append(None)
        else:
            vals.append(c[field] * scale)
    ok = [v for v in vals if v is not None]
    avg = f"{sum(ok) / len(ok):.{digits}f}" if len(ok) == len(vals) and ok else "-"
    out = [avg]
    for n, v in zip(names, vals):
        c = row["per_trace"].get(n)
        mark = "*" if c and c["status"] == "ok" and c["failures"] else ""
        out.append("-" if v is None else f"{v:.{digits}f}{mark}")
    return out


def explore_table_rows(doc: dict) -> tuple[list[str], list[list[str]]]:
    """Header and rows of one application's table: fragmentation % per trace, work (thousands
    of units) per trace, CPU ms per trace, each group led by its average over the traces."""
    names = doc["traces"]
    header = ["DM allocator", "frag avg %"] + [f"{n} %" for n in names] + \
        ["work avg k"] + [f"{n} k" for n in names] + ["cpu avg ms"] + [f"{n} ms" for n in names]
    rows = []
    for r in doc["rows"] + [doc["average"]] + doc.get("extra_rows", []) + ([doc["chosen"]] if doc["chosen"] else []):
        rows.append([r["label"]] + _explore_cells(r, names, "frag", 100, 1) + _explore_cells(r, names, "work", 1e-3, 1)
                    + _explore_cells(r, names, "cpu_ns", 1e-6, 1))
    return header, rows


def explore_plot_png(doc: dict) -> bytes:
    """Fig. 2: every feasible configuration (cost, fragmentation), the front, presets, choice."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(7.5, 5), dpi=110)
    unit = "work units" if doc["cost"] == "work" else "CPU ns"
    if doc["cloud"]:
        xs, ys = zip(*doc["cloud"])
        ax.scatter([c for c in ys], [100 * f for f in xs], s=4, c="#9aa5b1", alpha=0.5, lw=0,
                   label=f"{len(doc['cloud'])} feasible configurations")
    if doc["front"]:
        fx = [p["cost"] for p in doc["front"]]
        fy = [100 * p["frag"] for p in doc["front"]]
        ax.plot(fx, fy, "-o", c="#d62728", ms=3.5, lw=1.2, label=f"Pareto front ({len(fx)})")
    field = "work" if doc["cost"] == "work" else "cpu_ns"
    names = doc["traces"]
    for k, r in enumerate(doc["rows"] + doc.get("extra_rows", [])):
        cs = [r["per_trace"][n] for n in names]
        if all(c and c["status"] == "ok" for c in cs):
            x = sum(c[field] for c in cs) / len(cs)
            y = 100 * sum(c["frag"] for c in cs) / len(cs)
            fail = any(c["failures"] for c in cs)
            ax.scatter([x], [y], marker="s", s=36, c="#1f77b4", zorder=3)
            ax.annotate(r["label"] + (" (failures)" if fail else ""), (x, y), fontsize=8,
                        xytext=(5, 10 - 9 * (k % 3)), textcoords="offset points")
    if doc["chosen"]:
        cs = [doc["chosen"]["per_trace"][n] for n in names]
        x = sum(c[field] for c in cs) / len(cs)
        y = 100 * sum(c["frag"] for c in cs) / len(cs)
        ax.scatter([x], [y], marker="*", s=180, c="#2ca02c", edgecolors="k", zorder=4,
                   label="chosen (most balanced)")
    allx = [c[1] for c in doc["cloud"]] or [1]
    if max(allx) > 20 * max(min(allx), 1):
        ax.set_xscale("log")
    ax.set_yscale("symlog", linthresh=10)
    ax.set_ylim(bottom=0)
    ax.set_xlabel(f"cost: mean {unit} per trace replay")
    ax.set_ylabel("fragmentation % (symlog; peak footprint / peak requested - 1)")
    ax.set_title(f"{doc['app']}: custom DM allocator exploration ({doc['configs']} configurations)")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8, loc="upper right")
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    plt.close(fig)
    return buf.getvalue()


def explore_section(doc_all: dict, embed: Callable[[bytes], str] | None = None) -> str:
    """heapkit explore's results (a heapkit-explore document) as HTML: tables, verdicts, plots;
    explore.html and the lab report's section."""
    import html as h
    embed = embed or (lambda png: "data:image/png;base64," + base64.b64encode(png).decode())
    out = []
    t = doc_all.get("timing") or {}
    if t:
        per_app = t.get("configs_per_app") or {}
        per_app = ", ".join(f"{h.escape(str(a))} {n}" for a, n in per_app.items()) \
            if isinstance(per_app, dict) else h.escape(str(per_app))
        out.append(f"<p>Configurations per application: {per_app}; "
                   f"{t.get('evaluated', 0)} evaluated in this run in {t.get('wall_s', 0):.1f} s on "
                   f"{t.get('workers', '?')} worker(s) ({h.escape(str(t.get('engine', '')))}); "
                   f"{t.get('done_before', 0)} results came from the database.</p>")
    out.append("<p>Fragmentation: peak footprint (bytes the allocator carved from its arena) over "
               "peak live requested bytes, minus 1, as in the paper's Section 3. Work: one unit per "
               "trace record plus free blocks examined, ordered-insert steps, splits and merges "
               "(deterministic, the Pareto cost axis); CPU ms is the measured replay time on this "
               "shared machine, for reference. * marks a run with failed allocations. The choice is "
               "the front point nearest the utopia point when each axis is the relative excess over "
               "the front's best value (memory = 1 + fragmentation, and cost).</p>")
    for doc in doc_all.get("apps", []):
        header, rows = explore_table_rows(doc)
        out.append(f"<h3>{h.escape(doc['app'])}: {doc['configs']} configurations, "
                   f"{doc['feasible']} feasible, {len(doc['front'])} on the front</h3>")
        out.append("<table><tr>" + "".join(f"<th>{h.escape(c)}</th>" for c in header) + "</tr>" +
                   "".join("<tr>" + "".join(f"<td>{h.escape(c)}</td>" for c in r) + "</tr>" for r in rows) +
                   "</table>")
        if doc["chosen"]:
            out.append(f"<p>Chosen: <code>{h.escape(doc['chosen']['config'])}</code>"
                       + (f", header <code>{h.escape(doc['header'])}</code>" if doc.get("header") else "")
                       + (f", firmware: {h.escape(doc['firmware'].get('text', ''))}" if doc.get("firmware") else "")
                       + "</p>")
        out.append(f"<p>Against the presets: {h.escape(doc['verdict']['text'])}</p>")
        out.append(f'<img alt="{h.escape(doc["app"])} Pareto front" src="{embed(explore_plot_png(doc))}">')
    return "\n".join(out)


def section_explore(data: dict) -> str:
    """heapkit explore's tables and Pareto plots (heapkit/explore.py renders them)."""
    docs = data["extra"].get("explore") or []
    if not docs:
        return Absent("no exploration here: run <code>heapkit explore</code> and pass its "
                      "OUTDIR/explore.json to <code>heapkit report</code> with the other results.")
    try:
        return "\n".join(explore_section(d) for d in docs)
    except (KeyError, TypeError, ValueError) as e:
        raise HeapkitError(f"results: a heapkit-explore document is malformed ({e})") from None


# --------------------------------------------------------------------------
# custom-dmm-network: the demo's exploration, Table 2, Figures 3-4, Cortex-M3 costs

# The paper's Tables 3-5: average fragmentation % and execution time s over its traces.
DMM_PAPER = {
    "drr": {"table": 3, "frag": {"wince": 83, "winxp": 142, "lea": 66, "ose": 93, "uclinux": 152,
                                 "avg": 107, "chosen": 55},
            "time": {"wince": 1.78, "winxp": 1.69, "lea": 2.19, "ose": 7.91, "uclinux": 2.40,
                     "avg": 3.19, "chosen": 1.62}},
    "easyport": {"table": 4, "frag": {"wince": 46, "winxp": 49, "lea": 40, "ose": 46, "uclinux": 60,
                                      "avg": 48, "chosen": 37},
                 "time": {"wince": 0.51, "winxp": 0.49, "lea": 0.59, "ose": 1.20, "uclinux": 0.87,
                          "avg": 0.73, "chosen": 0.47}},
    "url-switch": {"table": 5, "frag": {"wince": 5, "winxp": 14, "lea": 25, "ose": 75, "uclinux": 99,
                                        "avg": 44, "chosen": 5},
                   "time": {"wince": 3.23, "winxp": 3.37, "lea": 3.03, "ose": 3.11, "uclinux": 3.00,
                            "avg": 3.15, "chosen": 3.13}},
}
# The paper's Table 2 (as its text explains the signs): effect of switching each technique
# on, in internal and external fragmentation and in performance.
DMM_TABLE2 = {"freelists": ("-", "+", "faster"), "fit": ("-", "none", "slower"),
              "split": ("-", "none", "slower"), "coalesce": ("none", "-", "slower")}


def dmm_apps(data: dict) -> list[dict]:
    """The application documents of the last heapkit-explore document in *data*."""
    docs = data["extra"].get("explore") or []
    return list(docs[-1].get("apps", [])) if docs else []


def _dmm_mean(row: dict | None, names: Sequence[str], field: str) -> float | None:
    """A table row's mean of *field* over the traces (None unless every trace replayed)."""
    if not row:
        return None
    cells = [row["per_trace"].get(n) for n in names]
    if not cells or any(c is None or c["status"] != "ok" for c in cells):
        return None
    return sum(c[field] for c in cells) / len(cells)


def _dmm_failed(row: dict, names: Sequence[str]) -> bool:
    return any((row["per_trace"].get(n) or {}).get("failures") for n in names)


def dmm_target_totals(data: dict) -> dict[tuple[str, str], dict[str, float]]:
    """(app, allocator) -> its Cortex-M3 figures (allocator "chosen" for dmm-chosen-<app>):
    total instructions and per-call means averaged over the application's traces on which
    no allocator failed an allocation on the board (a failed call costs what a refusal
    costs, so such traces do not compare), "traces" how many those are, and the
    failures summed over every trace."""
    runs = ((data["extra"].get("dmm_network") or {}).get("target") or {}).get("runs") or []
    failed = {(r["app"], r["trace"]) for r in runs if r["failures"]}
    acc: dict[tuple[str, str], list[dict]] = {}
    for r in runs:
        a = "chosen" if r["allocator"].startswith("dmm-chosen-") else r["allocator"].removeprefix("dmm-")
        acc.setdefault((r["app"], a), []).append(r)
    out = {}
    for k, v in acc.items():
        clean = [r for r in v if (r["app"], r["trace"]) not in failed]
        n = len(clean)
        out[k] = {"total": sum(r["total"] for r in clean) / n if n else None, "traces": n,
                  "malloc": sum(r["malloc_mean"] or 0 for r in clean) / n if n else None,
                  "free": sum(r["free_mean"] or 0 for r in clean) / n if n else None,
                  "failures": sum(r["failures"] for r in v)}
    return out


def dmm_rows(doc: dict) -> list[tuple[str, dict | None]]:
    """(preset key or "avg" / "chosen", row) in the paper's table order, dmm-net after the average."""
    out = [(r.get("preset", r["label"]), r) for r in doc["rows"]]
    out.append(("avg", doc["average"]))
    out += [(r.get("preset", r["label"]), r) for r in doc.get("extra_rows", [])]
    out.append(("chosen", doc.get("chosen")))
    return out


def _dmm_paper_table(doc: dict, m3: dict) -> str:
    app = doc["app"]
    paper = DMM_PAPER.get(app, {})
    names = doc["traces"]
    rows = []
    for key, r in dmm_rows(doc):
        if r is None:
            continue
        frag, work = _dmm_mean(r, names, "frag"), _dmm_mean(r, names, "work")
        t = m3.get((app, key)) or {}
        total = t.get("total")
        fail = " *" if _dmm_failed(r, names) else ""
        rows.append([r["label"], fmt_f(paper.get("frag", {}).get(key), 0) if key in paper.get("frag", {}) else "",
                     (fmt_f(None if frag is None else 100 * frag) + fail),
                     fmt_f(paper.get("time", {}).get(key), 2) if key in paper.get("time", {}) else "",
                     fmt_f(None if work is None else work / 1e3),
                     fmt_f(None if total is None else total / 1e3, 0),
                     fmt_f(t.get("malloc"), 0), fmt_f(t.get("free"), 0),
                     fmt_int(t.get("traces")), fmt_int(t.get("failures"))])
    return table(["DM allocator", "paper frag %", "ours frag %", "paper time s", "ours work k",
                  "ours Cortex-M3 k instr.", "instr./malloc", "instr./free", "M3 traces",
                  "M3 failures"], rows, focus=[len(rows) - 1])


def _dmm_table2(apps: Sequence[dict]) -> str:
    rows = []
    groups = {}
    for doc in apps:
        groups[len(rows)] = f"{doc['app']}: from {doc['chosen']['config'] if doc.get('chosen') else 'no choice'}"
        for t in doc.get("techniques", []):
            on, off = t["on"] or {}, t["off"] or {}
            cells = []
            for v in (on, off):
                cells += [fmt_f(None if v.get("frag") is None else 100 * v["frag"]) if v.get("frag") is not None
                          else v.get("status", "n/a"), fmt_f(None if v.get("work") is None else v["work"] / 1e3)]
            int_, ext, perf = DMM_TABLE2[t["technique"]]
            rows.append([f"{t['on_label']} / {t['off_label']}"] + cells +
                        [f"int {int_}, ext {ext}, {perf}"])
    return table(["technique on / off", "on: frag %", "on: work k", "off: frag %", "off: work k",
                  "paper (switching on)"], rows, groups=groups, text_cols=[-1])


def _app_panels(per_app: dict[str, dict[str, dict]], draw: Callable[[Any, str, str, dict], None],
                ylabel: str, xlabel: str) -> str | None:
    """One panel per application (row) and trace (column), each drawn by *draw(ax, app, trace,
    its data)*; the custom-dmm-network figures."""
    apps = [a for a in per_app if per_app[a]]
    if not apps:
        return None
    plt = _plt()
    ncol = max(len(per_app[a]) for a in apps)
    fig, axes = plt.subplots(len(apps), ncol, figsize=(2.6 * ncol, 2.0 * len(apps) + 0.3), squeeze=False)
    for i, a in enumerate(apps):
        for j, (name, d) in enumerate(per_app[a].items()):
            ax = axes[i][j]
            draw(ax, a, name, d)
            if j == 0:
                ax.set_ylabel(ylabel)
            if i == len(apps) - 1:
                ax.set_xlabel(xlabel)
        for j in range(len(per_app[a]), ncol):
            axes[i][j].axis("off")
    fig.tight_layout()
    return _png(fig)


def _draw_shape(ax, app: str, name: str, sh: dict) -> None:
    xs = [p[0] for p in sh["series"]]
    ys = [p[1] / 1024 for p in sh["series"]]
    ax.fill_between(xs, ys, color="tab:blue", alpha=0.35, lw=0)
    ax.plot(xs, ys, color="tab:blue", lw=0.8)
    ax.set_title(f"{app}: {name} (read: {sh['form']})", fontsize=8)
    ax.set_ylim(bottom=0)


def _draw_sizes(ax, app: str, name: str, p: dict) -> None:
    ax.vlines([h[0] for h in p["hist"]], 0.8, [h[1] for h in p["hist"]], color="tab:purple", lw=0.8)
    for s, c in p["top2"]:
        ax.plot([s], [c], "o", color="tab:red", ms=3)
    _logaxis(ax, "y")
    ax.set_ylim(bottom=0.8)
    ax.set_title(f"{app}: {name} ({100 * p['top2_share']:.0f} % at 2 sizes, {p['distinct']} sizes)",
                 fontsize=7)


def fig_dmm_shapes(shapes: dict[str, dict[str, dict]]) -> str | None:
    """Figure 3: live requested bytes over each trace, one panel per application and trace."""
    return _app_panels(shapes, _draw_shape, "live KiB", "trace record")


def fig_dmm_sizes(sizes: dict[str, dict[str, dict]]) -> str | None:
    """Figure 4: each trace's request-size histogram (requests per size, log scale)."""
    return _app_panels(sizes, _draw_sizes, "requests", "request bytes")


def _dmm_inputs_note(dn: dict, explore_doc: dict) -> str:
    parts, recorded = [], False
    for app, ts in (dn.get("traces") or {}).items():
        cap_ = [t for t in ts if t["kind"] == "capture"]
        syn = [t for t in ts if t["kind"] == "synthetic"]
        recorded = recorded or any(t.get("recorded") for t in cap_)
        bits = [f"{t['capture']} ({t['capture_packets']:,} packets)"
                + ("" if t.get("recorded") else f" replayed {t['copies']} times") for t in cap_]
        if syn:
            bits.append(f"{len(syn)} synthetic traces of {syn[0]['packets']:,} packets "
                        f"({', '.join(t['name'] for t in syn)})")
        parts.append(f"{esc(app)}: " + esc("; ".join(bits)))
    space = explore_doc.get("space") or {}
    per_app = (explore_doc.get("timing") or {}).get("configs_per_app") or {}
    searched = "; ".join(f"{r} {p}: {w}" for r, p, w in dn.get("captures") or [])
    real = ("The real inputs are heapkit's own captures (data/captures/PROVENANCE.md, "
            "tools/record_captures.sh): HTTP servers and clients exchanging real files, and a "
            "packet mix for DRR, in a network namespace whose loopback MTU is 1500, 50,000 packets "
            "each as the paper's DRR traces, every application run on each once; the synthetic "
            "traffic model (lab/netapps/synth.c, Fig. 3's four forms, the paper's bimodal size mix) "
            "supplies the other traces. " if recorded else
            "The real inputs are small: the only captures a package served here are python3-dpkt's "
            "(" + esc(searched) + ") and heapkit's own recordings (data/captures/) are not beside "
            "this lab, so each capture is replayed with shifted flows and timestamps, and the "
            "synthetic traffic model (lab/netapps/synth.c, Fig. 3's four forms, the paper's bimodal "
            "size mix) supplies the other traces. ")
    return cap(
        "Traces per application: " + "; ".join(parts) + ". " + real + "Space explored by the demo: "
        + esc(", ".join(
            f"{k} {'/'.join(map(str, v)) if isinstance(v, list) else v}" for k, v in space.items()))
        + " (" + esc(", ".join(f"{a} {n}" for a, n in per_app.items())) + " configurations), a "
        "reduction of <code>make explore</code>'s 10,500 that keeps first and best fit and "
        "levels 0 and 9 for Table 2 (docs/lab.md says why). Cortex-M3 columns: every call of every trace replayed on "
        "the emulated board (heapkit/target.py, " + esc((dn.get("target") or {}).get("opt", "")) +
        "; exact instructions, the chosen configurations compiled in from their headers), mean "
        "over the traces on which no allocator failed an allocation on the board (M3 traces; "
        "M3 failures counts them on every trace; hk-explore's 64-bit arena is 16 x the "
        "trace's peak). The verdicts compare fragmentation and cost on the same traces: for "
        "each pair of allocators, those neither failed on, which each reason names.")


def section_dmm_network(data: dict, figs: Figures) -> str:
    """custom-dmm-network: Tables 3-5 and Fig. 2 (the exploration), the paper's averages
    beside ours with Cortex-M3 costs, Table 2, Figures 3 and 4."""
    docs = data["extra"].get("explore") or []
    dn = data["extra"].get("dmm_network") or {}
    if not docs:
        why = f" ({esc(dn['error'])})" if dn.get("error") else ""
        return Absent("no exploration here" + why + ": run <code>heapkit demo</code>, or "
                      "<code>heapkit explore</code> and pass its OUTDIR/explore.json to "
                      "<code>heapkit report</code> with the other results.")
    apps = dmm_apps(data)
    out = []
    if dn.get("traces"):
        out.append(_dmm_inputs_note(dn, docs[-1]))
    out.append("<h3>Tables 3-5 and Figure 2: every explored configuration per application</h3>")
    out.append(section_explore(data))
    m3 = dmm_target_totals(data)
    out.append("<h3>Tables 3-5 beside the paper's averages, with Cortex-M3 instructions</h3>")
    if (dn.get("target") or {}).get("error"):
        out.append(f'<p class="na">No Cortex-M3 counts: {esc(dn["target"]["error"])}</p>')
    for doc in apps:
        paper = DMM_PAPER.get(doc["app"], {})
        out.append(f"<p><b>{esc(doc['app'])}</b> (the paper's Table {paper.get('table', '?')})</p>")
        out.append(_dmm_paper_table(doc, m3))
    out.append(cap("Paper: averages over its 3-5 real traces, fragmentation by its Section 3 "
                   "measure and execution time in seconds on a Pentium IV. Ours: means over this "
                   "run's traces of fragmentation (peak footprint over peak live requested, minus "
                   "1), the work count of hk-explore, and total Cortex-M3 instructions (thousands) "
                   "with the mean per malloc and per free. dmm-net is heapkit's preset of the "
                   "paper's DRR choice; it is not part of the OS average. * marks failed "
                   "allocations in the exploration."))
    out.append("<h3>Table 2: each technique on and off, the rest of the chosen configuration kept</h3>")
    out.append(_dmm_table2(apps))
    out.append(cap("From the exploration database: the chosen configuration with one technique "
                   "switched, means over the application's traces. 'capped' means a replay passed "
                   "the work cap (10 x the costliest preset); 'not explored' a variant outside the "
                   "space. hk-explore measures total fragmentation, so the paper's internal and "
                   "external columns are compared through their sum."))
    if dn.get("shapes"):
        out.append("<h3>Figure 3: memory usage over each trace</h3>")
        out.append(figs.img(fig_dmm_shapes, (dn["shapes"],), "usage shapes"))
        out.append(cap("Live requested bytes (the largest value in each of 300 windows) over the "
                       "trace's records. 'read' is the form measured from the curve "
                       "(heapkit/dmm_network.py usage_form): ramp when every quarter's mean "
                       "exceeds the one before and the last is at least twice the first; spikes "
                       "when under 35 % of the records sit above half the peak (thin when such a "
                       "stretch is under 1 % of the trace); else plateau."))
    if dn.get("sizes"):
        out.append("<h3>Figure 4: request-size histograms</h3>")
        out.append(figs.img(fig_dmm_sizes, (dn["sizes"],), "request-size histograms"))
        rows = []
        for app, per in dn["sizes"].items():
            for name, p in per.items():
                rows.append([app, name, fmt_int(p["requests"]), fmt_int(p["distinct"]),
                             ", ".join(f"{s} B" for s, _ in p["top2"]), fmt_pct(p["top2_share"])])
        out.append(table(["application", "trace", "requests", "distinct sizes", "two dominant sizes",
                          "their share"], rows, numeric_from=2, text_cols=[4]))
        out.append(cap("Paper: two sizes (around the ACK and the MTU) make 30-70 % of the "
                       "requests, the rest spread over 700-1,500 distinct sizes. Red dots: the "
                       "two dominant sizes."))
    return "\n".join(out)


def _pct(x: float | None) -> str:
    return "n/a" if x is None else f"{100 * x:.1f} %"


# The paper's reductions of the chosen allocator against its "Avrg. Alloc." row (the mean of
# the five OS allocators), in fragmentation and execution time (Section 6's "on average").
DMM_AVG_REDUCTION = {"drr": (0.4839, 0.4922), "easyport": (0.230, 0.3562), "url-switch": (0.8864, 0.0164)}
# Ties in fragmentation: half a percentage point, the rounding of the paper's whole percents
# (its Table 5 ties Windows CE with the proposed allocator at 5 %).
DMM_FRAG_TIE = 0.005
# An average reduction holds when ours reaches the paper's less this many points.
DMM_AVG_TOL = 0.05
# Presets whose figures rest on a setting the paper does not give (docs/dmm.md): reported
# beside the "up to" reductions, not deciding them.
DMM_ASSUMED = {"wince": "its split level is heapkit's assumption (Table 1 is silent on splitting)"}
DMM_ASSUMED_LABELS = {"wince": "Windows CE"}
DMM_OS = ("wince", "winxp", "lea", "ose", "uclinux")
# The paper's DRR and URL traces: 50,000 packets; a capture shorter than this cannot show
# how many distinct sizes real traffic spreads over.
DMM_SIZE_PACKETS = 50_000


def dmm_target_runs(data: dict) -> dict[tuple[str, str, str], dict]:
    """(app, preset key or "chosen", trace) -> that Cortex-M3 run."""
    runs = ((data["extra"].get("dmm_network") or {}).get("target") or {}).get("runs") or []
    return {(r["app"], "chosen" if r["allocator"].startswith("dmm-chosen-")
             else r["allocator"].removeprefix("dmm-"), r["trace"]): r for r in runs}


def dmm_evidence(doc: dict, m3runs: dict, keys: Sequence[str]) -> dict[str, Any]:
    """What the rows *keys* of one application compare on: the traces on which each replayed
    in the exploration without a failed allocation and, when the Cortex-M3 ran, on the board
    too; means over those traces of fragmentation and cost (total Cortex-M3 instructions, else
    work units). {"traces", "dropped": {trace: why}, "frag": {key: mean}, "cost": {key: mean},
    "unit"}. Fragmentation and cost always come from the same traces."""
    app, rows = doc["app"], dict(dmm_rows(doc))
    board = any(k[0] == app for k in m3runs)
    traces, dropped = [], {}
    for n in doc["traces"]:
        bad = []
        for k in keys:
            c = ((rows.get(k) or {}).get("per_trace") or {}).get(n)
            r = m3runs.get((app, k, n))
            label = (rows.get(k) or {}).get("label", k)
            if c is None or c["status"] != "ok" or c["failures"]:
                bad.append(f"{label} failed in the exploration")
            elif board and (r is None or r["failures"]):
                bad.append(f"{label} failed allocations on the board")
        if bad:
            dropped[n] = bad
        else:
            traces.append(n)
    frag, cost = {}, {}
    if traces:
        for k in keys:
            frag[k] = sum(rows[k]["per_trace"][n]["frag"] for n in traces) / len(traces)
            cost[k] = sum(m3runs[(app, k, n)]["total"] if board else rows[k]["per_trace"][n]["work"]
                          for n in traces) / len(traces)
    return {"traces": traces, "dropped": dropped, "frag": frag, "cost": cost,
            "unit": "Cortex-M3 instructions" if board else "work units"}


def _on(ev: dict) -> str:
    """Which traces a comparison stands on, and which it left out and why."""
    n = len(ev["traces"])
    text = f"on {n} trace{'s' * (n != 1)} ({', '.join(ev['traces'])})" if n else "on no trace"
    if ev["dropped"]:
        text += "; left out: " + "; ".join(f"{t} ({', '.join(sorted(set(w)))})"
                                           for t, w in ev["dropped"].items())
    return text


def _dmm_os_keys(doc: dict) -> list[tuple[str, dict]]:
    return [(k, r) for k, r in dmm_rows(doc) if r is not None and k in DMM_OS]


def _dmm_table_claims(doc: dict, m3runs: dict) -> list[Claim]:
    """Tables 3-5: the chosen allocator against each OS allocator, fragmentation and cost
    over the same traces (those both ran on without failure)."""
    app = doc["app"]
    n = DMM_PAPER.get(app, {}).get("table", "?")
    if doc.get("chosen") is None:
        return []
    strict = app != "url-switch"
    frag_bits, cost_bits, frag_lost, cost_lost = [], [], [], []
    for key, r in _dmm_os_keys(doc):
        ev = dmm_evidence(doc, m3runs, ["chosen", key])
        if not ev["traces"]:
            frag_bits.append(f"{r['label']}: {_on(ev)}")
            continue
        mine, theirs = ev["frag"]["chosen"], ev["frag"][key]
        if (mine >= theirs) if strict else (mine > theirs + DMM_FRAG_TIE):
            frag_lost.append(r["label"])
        frag_bits.append(f"{r['label']} {_pct(theirs)} against {_pct(mine)} {_on(ev)}")
        if strict:
            c_mine, c_theirs = ev["cost"]["chosen"], ev["cost"][key]
            if c_mine >= c_theirs:
                cost_lost.append(r["label"])
            cost_bits.append(f"{r['label']} {c_theirs:,.0f} against {c_mine:,.0f} {ev['unit']} "
                             f"per trace {_on(ev)}")
    if strict:
        frag_claim = (f"{app}: the chosen custom allocator has less fragmentation than every OS "
                      f"allocator (Table {n}; strictly less, on the traces both ran)")
    else:
        frag_claim = (f"{app}: the chosen custom allocator does not sacrifice fragmentation against "
                      f"any OS allocator (Table {n}, which ties Windows CE at 5 %: no more than "
                      f"{100 * DMM_FRAG_TIE:.1f} points above any, on the traces both ran)")
    out = [judged(frag_claim, not frag_lost, "Mean fragmentation of each OS allocator against the "
                  "chosen configuration's: " + "; ".join(frag_bits)
                  + (f". Not beaten: {', '.join(frag_lost)}." if frag_lost else "."))]
    if strict:
        out.append(judged(f"{app}: the chosen custom allocator is faster than every OS allocator "
                          f"(Table {n}; on the same traces as its fragmentation)", not cost_lost,
                          "Mean cost of each OS allocator against the chosen configuration's: "
                          + "; ".join(cost_bits)
                          + (f". Cheaper or equal: {', '.join(cost_lost)}." if cost_lost else ".")))
    else:
        keys = ["chosen"] + [k for k, _ in _dmm_os_keys(doc)]
        ev = dmm_evidence(doc, m3runs, keys)
        if ev["traces"]:
            avg = sum(ev["cost"][k] for k in keys[1:]) / len(keys[1:])
            out.append(judged(f"{app}: the chosen custom allocator costs no more than the OS "
                              f"allocators' average (Table {n}: 3.13 against 3.15 s)",
                              ev["cost"]["chosen"] <= avg,
                              f"It takes {ev['cost']['chosen']:,.0f} {ev['unit']} per trace against "
                              f"an OS average of {avg:,.0f}, {_on(ev)}."))
    return out


def _dmm_average_claims(doc: dict, m3runs: dict) -> list[Claim]:
    """Section 6's average reductions: the chosen allocator against the mean of the five OS
    allocators (the paper's "Avrg. Alloc." row), fragmentation and time on the same traces."""
    app = doc["app"]
    if app not in DMM_AVG_REDUCTION or doc.get("chosen") is None:
        return []
    keys = [k for k, _ in _dmm_os_keys(doc)]
    ev = dmm_evidence(doc, m3runs, ["chosen"] + keys)
    out = []
    for i, (what, field) in enumerate((("fragmentation", "frag"), ("execution time", "cost"))):
        paper = DMM_AVG_REDUCTION[app][i]
        floor = max(paper - DMM_AVG_TOL, 0.0)
        claim = (f"{app}: {what} reduced by {100 * paper:.2f} % on average against the OS "
                 f"allocators (Section 6; holding from {100 * floor:.2f} %, "
                 + (f"the paper's figure less {100 * DMM_AVG_TOL:.0f} points)" if floor else
                    "no more than the OS allocators' mean)"))
        if not ev["traces"] or not keys:
            out.append(Claim(claim, UNTESTABLE, "No trace on which the chosen configuration and "
                             "every OS allocator ran without failure: " + _on(ev) + "."))
            continue
        avg = sum(ev[field][k] for k in keys) / len(keys)
        red = (avg - ev[field]["chosen"]) / avg if avg else 0.0
        unit = "" if field == "frag" else f" {ev['unit']}"
        shown = (lambda x: _pct(x)) if field == "frag" else (lambda x: f"{x:,.0f}")
        out.append(judged(claim, red >= floor,
                          f"The OS allocators' mean is {shown(avg)}{unit}, the chosen "
                          f"configuration's {shown(ev[field]['chosen'])}: {100 * abs(red):.1f} % "
                          f"{'less' if red >= 0 else 'more'}, {_on(ev)}."))
    return out


def _dmm_reduction_claims(apps: Sequence[dict], m3runs: dict) -> list[Claim]:
    """The abstract's headline figures: up to 98 % less fragmentation and up to 97 % less
    execution time than the OS allocators, the largest reduction on one trace (as the paper's
    97.82 % and 98.13 %) against one OS allocator, fragmentation and time on the traces both
    ran. A preset whose figures rest on heapkit's assumption (:data:`DMM_ASSUMED`) is shown
    beside, not deciding."""
    best: dict[tuple[str, bool], tuple[float, str]] = {}
    for doc in apps:
        if doc.get("chosen") is None:
            continue
        rows = dict(dmm_rows(doc))
        for key, r in _dmm_os_keys(doc):
            ev = dmm_evidence(doc, m3runs, ["chosen", key])
            for n in ev["traces"]:
                one = dmm_evidence({**doc, "traces": [n]}, m3runs, ["chosen", key])
                for field in ("frag", "cost"):
                    theirs, mine = one[field][key], one[field]["chosen"]
                    if not theirs:
                        continue
                    red = (theirs - mine) / theirs
                    slot = (field, key in DMM_ASSUMED)
                    if slot not in best or red > best[slot][0]:
                        shown = (f"{_pct(theirs)} to {_pct(mine)}" if field == "frag"
                                 else f"{theirs:,.0f} to {mine:,.0f} {one['unit']}")
                        best[slot] = (red, f"{doc['app']} on {n} against {rows[key]['label']} ({shown})")
    out = []
    for field, claim in (("frag", "fragmentation reduced by up to 98 % against the OS allocators "
                                  "(abstract; the largest reduction on one trace, taken as holding "
                                  "from 90 % on)"),
                         ("cost", "execution time reduced by up to 97 % against the OS allocators "
                                  "(Section 7; the largest reduction on one trace, taken as holding "
                                  "from 90 % on)")):
        fair, assumed = best.get((field, False)), best.get((field, True))
        if fair is None:
            continue
        side = (" " + "; ".join(f"Against {DMM_ASSUMED_LABELS[k]}, as {why}," for k, why in DMM_ASSUMED.items())
                + f" it reaches {100 * assumed[0]:.1f} % ({assumed[1]}); not counted." if assumed else "")
        out.append(judged(claim, fair[0] >= 0.9,
                          f"The largest reduction against the OS allocators whose settings the paper "
                          f"gives is {100 * fair[0]:.1f} %, {fair[1]}.{side}"))
    return out


# Table 2's directions hold where at least this share of the pairs in which a technique acts
# (its on and off configurations measure differently) goes the paper's way.
DMM_TECHNIQUE_SHARE = 2 / 3
DMM_TECHNIQUES = {
    "freelists": ("dedicated freelists make the allocator faster (Table 2, Section 5 point 1)",
                  lambda on_f, on_w, off_f, off_w: on_w < off_w),
    "fit": ("best fit lowers fragmentation and costs performance against first fit (Table 2)",
            lambda on_f, on_w, off_f, off_w: on_f < off_f and on_w > off_w),
    "split": ("splitting lowers fragmentation and costs performance (Table 2)",
              lambda on_f, on_w, off_f, off_w: on_f < off_f and on_w > off_w),
    "coalesce": ("coalescing lowers fragmentation (Table 2, Section 5 point 4)",
                 lambda on_f, on_w, off_f, off_w: on_f < off_f),
}


def _dmm_technique_claims(apps: Sequence[dict]) -> list[Claim]:
    """Table 2's directions, judged where each technique acts: over every explored pair of
    configurations that differ only in it (``technique_pairs``), those whose on and off
    measure differently; on every application where it acts at all."""
    out = []
    for tech, (claim, test) in DMM_TECHNIQUES.items():
        ok, bits, acts = True, [], False
        for doc in apps:
            pairs = (doc.get("technique_pairs") or {}).get(tech)
            if pairs is None:
                continue
            acting = [p for p in pairs if (p[0], p[1]) != (p[2], p[3])]
            idle = f"{len(pairs) - len(acting)} more where it changes nothing" if len(pairs) > len(acting) else ""
            if not acting:
                bits.append(f"{doc['app']} none ({idle or 'no pair explored'})")
                continue
            acts = True
            agree = sum(1 for p in acting if test(*p))
            share = agree / len(acting)
            ok = ok and share >= DMM_TECHNIQUE_SHARE
            bits.append(f"{doc['app']} {agree} of {len(acting)} ({100 * share:.0f} %)"
                        + (f", {idle}" if idle else ""))
        if bits:
            out.append(judged(claim[:-1] + f"; in at least {100 * DMM_TECHNIQUE_SHARE:.0f} % of the "
                              "explored pairs in which it acts, on every application where it acts)",
                              ok and acts,
                              "Pairs of explored configurations differing only in it that go the "
                              "paper's way: " + "; ".join(bits) + "."))
    return out


def _dmm_choice_claims(apps: Sequence[dict]) -> list[Claim]:
    out = []
    recommended, bits = True, []
    for doc in apps:
        if not doc.get("chosen"):
            continue
        cfg = dict(kv.split("=", 1) for kv in doc["chosen"]["config"].split())
        nlists = 0 if cfg.get("lists", "none") == "none" else len(cfg["lists"].split(","))
        match = nlists in (2, 3) and cfg.get("fit") == "first" and cfg.get("split") == "9" \
            and cfg.get("coalesce") == "9"
        recommended = recommended and match
        bits.append(f"{doc['app']} chose {nlists} lists, {cfg.get('fit')} fit, split "
                    f"{cfg.get('split')}, coalesce {cfg.get('coalesce')}")
    if bits:
        out.append(judged("the balanced configurations share two or three freelists, first fit, "
                          "full splitting and full coalescing (Section 5)", recommended,
                          "; ".join(bits) + "."))
    minima = [(doc["app"], doc.get("split_minima") or {}) for doc in apps]
    minima = [(a, m) for a, m in minima if "9" in m and len(m) > 1]
    if minima:
        ok = all(m["9"] < min(v for k, v in m.items() if k != "9") for _, m in minima)
        out.append(judged("only full splitting really lowers fragmentation (Section 5 point 3)", ok,
                          "Lowest mean fragmentation with split 9 against the other levels' lowest: "
                          + "; ".join(f"{a} {_pct(m['9'])} against "
                                      f"{_pct(min(v for k, v in m.items() if k != '9'))}" for a, m in minima)
                          + "."))
    return out


# "Eradicated" taken as external bytes at most this share of the footprint at peak live.
DMM_ERADICATED = 0.01
COALESCE_CLAIM = "with full coalescing, external fragmentation is eradicated (Section 5 point 4)"


def _dmm_coalesce_claim(dn: dict) -> list[Claim]:
    """Section 5 point 4 on the engine's breakdown of dmm-net's footprint at peak live."""
    bd = dn.get("breakdown") or {}
    if bd.get("error"):
        return [Claim(COALESCE_CLAIM, UNTESTABLE, f"The engine's breakdown could not run: {bd['error']}.")]
    cells = [(app, name, b) for app, per in (bd.get("apps") or {}).items() for name, b in per.items()
             if b and b.get("footprint")]
    if not cells:
        return []
    shares = [(app, name, b["external"] / b["footprint"]) for app, name, b in cells]
    over = [x for x in shares if x[2] > DMM_ERADICATED]
    worst = max(shares, key=lambda x: x[2])
    return [judged(COALESCE_CLAIM[:-1] + f"; taken as at most {100 * DMM_ERADICATED:.0f} % of "
                   "the footprint at peak live, on every trace)", not over,
                   f"{bd.get('allocator', 'dmm-net')} (full coalescing and splitting) replayed by "
                   f"the engine: external bytes above {100 * DMM_ERADICATED:.0f} % of the footprint "
                   f"on {len(over)} of {len(shares)} traces, the most {100 * worst[2]:.1f} % "
                   f"({worst[0]} {worst[1]}).")]


def _dmm_net_claim(apps: Sequence[dict]) -> list[Claim]:
    doc = next((d for d in apps if d["app"] == "drr"), None)
    net = next((r for r in (doc or {}).get("extra_rows", []) if r.get("preset") == "net"), None)
    if doc is None or net is None:
        return []
    names = doc["traces"]
    mine = _dmm_mean(net, names, "frag")
    if mine is None:
        return []
    worse = [(r["label"], _dmm_mean(r, names, "frag")) for r in doc["rows"]]
    lost = [lab for lab, f in worse if f is not None and f <= mine]
    return [judged("drr: the paper's DRR allocator (2 lists of 16 and 1476 B, first fit, full "
                   "splitting and coalescing: heapkit's dmm-net) has less fragmentation than every "
                   "OS allocator (Section 6)", not lost and not _dmm_failed(net, names),
                   f"dmm-net's mean is {_pct(mine)}" + (" with failures" if _dmm_failed(net, names) else "")
                   + " against " + ", ".join(f"{lab} {_pct(f)}" for lab, f in worse) + ".")]


# The applications whose requests are packets (the bimodality and distinct-size claims speak
# of packet sizes); url-switch allocates parsed header fields (the paper's 8/11/20-byte lists).
DMM_PACKET_APPS = ("drr", "easyport")


def _dmm_size_claims(dn: dict) -> list[Claim]:
    sizes, traces = dn.get("sizes") or {}, dn.get("traces") or {}
    profiles = [(app, t, sizes.get(app, {}).get(t["name"])) for app, ts in traces.items()
                for t in ts if t["kind"] == "capture"]
    profiles = [(a, t, p) for a, t, p in profiles if p]
    packets = [(a, t, p) for a, t, p in profiles if a in DMM_PACKET_APPS]
    if not packets:
        return []
    others = [(a, t, p) for a, t, p in profiles if a not in DMM_PACKET_APPS]
    aside = ("" if not others else " Not counted, as its requests are parsed header fields, not "
             "packets: " + "; ".join(f"{a} {t['name']} {_pct(p['top2_share'])} at "
                                     f"{' and '.join(str(s) for s, _ in p['top2'])} B, "
                                     f"{p['distinct']} distinct sizes" for a, t, p in others) + ".")
    shares = [p["top2_share"] for _, _, p in packets]
    out = [judged("two request sizes make 30-70 % of the requests (Section 5 point 1, Fig. 4; on "
                  "every real capture of the packet-buffering applications)",
                  all(0.3 <= x <= 0.7 for x in shares),
                  "On the real captures' traces: " + "; ".join(
                      f"{a} {t['name']} {_pct(p['top2_share'])} at "
                      f"{' and '.join(str(s) for s, _ in p['top2'])} B" for a, t, p in packets)
                  + " (the synthetic traces are built with the paper's mix, so they are no evidence)."
                  + aside)]
    claim = ("the rest of the requests spread over 700-1,500 distinct sizes (Section 5 point 3, "
             "Fig. 4; on every real capture of the packet-buffering applications)")
    short = min(t["capture_packets"] * t.get("copies", 1) for _, t, _ in packets)
    if short < DMM_SIZE_PACKETS:
        out.append(Claim(claim, UNTESTABLE,
                         f"The real captures available here hold {short:,} packets, fewer than the "
                         f"paper's {DMM_SIZE_PACKETS:,}-packet traces (distinct sizes grow with a "
                         "trace's length)."))
    else:
        out.append(judged(claim, all(700 <= p["rest_distinct"] <= 1500 for _, _, p in packets),
                          "Distinct sizes besides the two dominant ones on the real captures' "
                          "traces (50,000 packets each, as the paper's DRR traces): " + "; ".join(
                              f"{a} {t['name']} {p['rest_distinct']}" for a, t, p in packets)
                          + "." + aside))
    return out


def _dmm_usage_claim(dn: dict) -> list[Claim]:
    shapes, traces = dn.get("shapes") or {}, dn.get("traces") or {}
    pairs = [(app, t["name"], shapes.get(app, {}).get(t["name"], {}).get("form"))
             for app, ts in traces.items() for t in ts if t["kind"] == "synthetic"]
    pairs = [p for p in pairs if p[2]]
    if not pairs:
        return []
    wrong = [f"{a} {n} read as {f}" for a, n, f in pairs if f != n]
    real = [f"{app} {t['name']} {shapes[app][t['name']]['form']}" for app, ts in traces.items()
            for t in ts if t["kind"] == "capture" and shapes.get(app, {}).get(t["name"], {}).get("form")]
    return [judged("traffic of Fig. 3's four forms (thin and fat spikes, plateau, ramp) gives "
                   "each application's memory usage the same form (Section 5 point 2)", not wrong,
                   f"{len(pairs) - len(wrong)} of {len(pairs)} synthetic traces read as their "
                   "input's form" + (f" ({'; '.join(wrong)})" if wrong else "")
                   + (f". The real captures' usage reads as: {', '.join(real)} (their traffic "
                      "has no set form, so they pair no input form with a usage form)" if real else "")
                   + ".")]


def claims_dmm_network(data: dict) -> list[Claim]:
    """custom-dmm-network: Tables 3-5 (fragmentation and cost of the chosen configuration
    against the OS presets, on the same traces) and the average reductions per application,
    the headline reductions, Table 2, Section 5's four points (bimodality, usage forms,
    distinct sizes, coalescing) and dmm-net on DRR."""
    apps = dmm_apps(data)
    if not apps:
        return []
    dn = data["extra"].get("dmm_network") or {}
    m3runs = dmm_target_runs(data)
    out = []
    for doc in apps:
        if doc["app"] in DMM_PAPER:
            out += _dmm_table_claims(doc, m3runs)
            out += _dmm_average_claims(doc, m3runs)
    out += _dmm_reduction_claims(apps, m3runs)
    out += _dmm_net_claim(apps)
    out += _dmm_technique_claims(apps)
    out += _dmm_choice_claims(apps)
    out += _dmm_coalesce_claim(dn)
    out += _dmm_size_claims(dn)
    out += _dmm_usage_claim(dn)
    return out
