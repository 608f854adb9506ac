# SPDX-License-Identifier: MIT
"""custom-dmm-network (Mamagkakis et al. 2006) measured for ``heapkit demo``.

What the seed's section of the demo's report needs, beyond what ``heapkit
explore`` alone writes:

- :func:`app_traces`: each application's traces (lab/netapps, hk-netapp): one per
  capture heapkit recorded (data/captures/, 50,000 packets each as the paper's
  DRR and URL traces; without them the default python3-dpkt capture replayed N
  times, as ``make explore`` uses) and one synthetic trace per usage shape of
  Fig. 3 (lab/netapps/synth.c), so each application has six traces as the
  paper's have three to seven;
- the exploration of :data:`DEMO_SPACE` on them (heapkit/explore.py): Tables
  3-5, Fig. 2 and Table 2 (``techniques``, one technique varied at a time from
  the chosen configuration). The demo's space is a reduction of ``make
  explore``'s 10,500 configurations: worst fit is left out (it is never on the
  front of a full exploration, and its capped replays are the slowest) and
  split and coalesce take the levels 0, 3, 6 and 9 of 0-9, so levels 0 and 9
  (Table 2's on and off) and first and best fit are always there;
- :func:`size_profile`: each trace's request-size histogram (Fig. 4) and the
  bimodality figures (share of the two dominant sizes, distinct sizes);
- :func:`usage_series` and :func:`usage_form`: live requested bytes over the
  trace (Fig. 3) and the usage form read from it;
- :func:`target_costs`: the presets and each application's chosen
  configuration replayed on the emulated Cortex-M3 (heapkit/target.py), exact
  instructions per call beside the work count;
- :func:`peak_breakdown`: dmm-net's footprint at the peak-live moment split into
  requested, internal, external and metadata bytes by the engine (Section 5
  point 4, full coalescing and external fragmentation);
- :data:`CAPTURE_SEARCH`: which packages were searched for larger captures.

:func:`collect` returns ``{"explore": heapkit-explore document, "dmm_network":
{...}}`` for the demo's ``extra``; heapkit/seeds/custom_dmm_network.py renders both.
"""

from __future__ import annotations

import time
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np

from . import explore, netapps
from .errors import HeapkitError

SHAPE_PACKETS = 10_000
QUICK_SHAPE_PACKETS = 5_000
QUICK_CAPTURE_PACKETS = 10_000     # --quick: the first packets of each recorded capture
DEMO_SPACE: dict[str, Any] = {"fits": ("first", "next", "best", "exact"), "orders": explore.ORDERS,
                              "splits": (0, 3, 6, 9), "coalesces": (0, 3, 6, 9), "list_sets": 7}
QUICK_SPACE: dict[str, Any] = {"fits": ("first", "best"), "orders": ("lifo",), "splits": (0, 9),
                               "coalesces": (0, 9), "list_sets": 4}
SERIES_POINTS = 300
TARGET_OPT = "-O2"
PRESET_ALLOCATORS = tuple(f"dmm-{p}" for p in explore.PRESETS + explore.EXTRA_PRESETS)
COALESCE_PRESET = "dmm-net"

# Where larger real captures were looked for (November 2026), none of which ships one, before
# heapkit recorded its own (data/captures/); the report lists them when it falls back to
# python3-dpkt's. Each entry: (registry, package, what it holds).
CAPTURE_SEARCH = (
    ("Debian", "python3-dpkt", "5 small captures (32-62 packets): used"),
    ("Debian", "tcpreplay", "no capture files"),
    ("Debian", "wireshark-common", "no capture files"),
    ("Debian", "python3-scapy", "no capture files"),
    ("Debian", "libndpi-bin", "no capture files"),
    ("PyPI", "scapy (sdist)", "no capture files"),
    ("PyPI", "dpkt (sdist)", "no capture files"),
    ("PyPI", "python-pcapng (sdist)", "no capture files"),
)


def app_traces(outdir: Path, quick: bool = False,
               recorded: dict[str, Path] | None = None) -> dict[str, list[dict]]:
    """app -> [{"name", "path", "kind": "capture" | "synthetic", ...}]: the capture traces,
    then one synthetic trace per usage shape. The captures are heapkit's recordings
    (*recorded*, name -> pcap; default :func:`heapkit.netapps.recorded_captures`), each
    replayed once by every application; without them, the application's default input
    (a python3-dpkt capture replayed N times). *quick*: the captures' first
    :data:`QUICK_CAPTURE_PACKETS` packets."""
    packets = QUICK_SHAPE_PACKETS if quick else SHAPE_PACKETS
    if recorded is None:
        recorded = netapps.recorded_captures(packets=QUICK_CAPTURE_PACKETS if quick else None)
    outdir.mkdir(parents=True, exist_ok=True)
    out: dict[str, list[dict]] = {}
    for app in netapps.APPS:
        out[app] = []
        for name, pcap_path in recorded.items():
            path = outdir / f"{app}-{Path(name).stem}.hkb"
            one = netapps.run(app, pcap=pcap_path, emit_trace=path)
            out[app].append({"name": Path(name).stem, "path": str(path), "kind": "capture",
                             "capture": name, "capture_packets": one["packets"], "copies": 1,
                             "recorded": True})
        if not recorded:
            pcap, copies = netapps.DEFAULT_INPUTS[app]
            one = netapps.run(app, pcap=netapps.pcap_dir() / pcap, repeat=1)
            out[app].append({"name": f"{Path(pcap).stem}x{copies}",
                             "path": str(netapps.default_trace(app)), "kind": "capture",
                             "capture": pcap, "capture_packets": one["packets"], "copies": copies,
                             "recorded": False})
        for shape in netapps.SHAPES:
            path = outdir / f"{app}-{shape}.hkb"
            netapps.run(app, synthetic=f"{shape},packets={packets}", emit_trace=path)
            out[app].append({"name": shape, "path": str(path), "kind": "synthetic",
                             "packets": packets})
    return out


def size_profile(hist: Counter) -> dict[str, Any]:
    """The request-size histogram of one trace (Fig. 4) and the paper's bimodality figures:
    the share of requests at the two most frequent sizes, and how many distinct sizes make
    the rest."""
    total = sum(hist.values())
    top = sorted(hist.items(), key=lambda kv: (-kv[1], kv[0]))[:2]
    share = sum(c for _, c in top) / total if total else 0.0
    return {"requests": total, "distinct": len(hist), "top2": [[s, c] for s, c in top],
            "top2_share": share, "rest_distinct": max(0, len(hist) - len(top)),
            "hist": [[s, c] for s, c in sorted(hist.items())]}


def usage_series(live: np.ndarray, points: int = SERIES_POINTS) -> list[list[float]]:
    """[record, live bytes] at *points* windows of the trace, each window's maximum (a
    spike narrower than a window still shows)."""
    n = len(live)
    if n == 0:
        return []
    edges = np.linspace(0, n, min(points, n) + 1).astype(np.int64)
    return [[int(a), float(live[a:b].max())] for a, b in zip(edges[:-1], edges[1:]) if b > a]


def usage_form(live: np.ndarray) -> dict[str, Any]:
    """The usage form of Fig. 3 read from live bytes over the records.

    duty: share of records above half the peak; width: mean length of such a stretch as a
    share of the trace; growth: the last quarter's mean over the first's. ramp: each
    quarter's mean above the one before and growth >= 2; else spikes when duty < 0.35 (thin
    when a stretch is under 1 % of the trace, fat otherwise); else plateau."""
    n = len(live)
    if n < 4 or live.max() <= 0:
        return {"form": "none", "duty": 0.0, "width": 0.0, "growth": 0.0}
    above = live > live.max() / 2
    runs = int(np.count_nonzero(np.diff(above.astype(np.int8)) == 1)) + int(above[0])
    duty = float(above.mean())
    width = duty / max(runs, 1)
    q = [float(live[k * n // 4:(k + 1) * n // 4].mean()) for k in range(4)]
    growth = q[3] / q[0] if q[0] > 0 else float("inf")
    if all(b > a for a, b in zip(q, q[1:])) and growth >= 2:
        form = "ramp"
    elif duty < 0.35:
        form = "thin-spikes" if width < 0.01 else "fat-spikes"
    else:
        form = "plateau"
    return {"form": form, "duty": duty, "width": width, "growth": growth}


def explore_apps(traces: dict[str, list[dict]], db: Path, space: dict[str, Any], jobs: int,
                 progress: bool) -> tuple[dict, dict[str, explore.AppSummary]]:
    """The exploration of *space* on every application's traces: a heapkit-explore
    document (as explore.json) and each application's summary."""
    t0 = time.perf_counter()
    exe = explore.binary()
    preset_cfgs = explore.presets(exe)
    preset_list = [preset_cfgs[p] for p in explore.PRESETS + explore.EXTRA_PRESETS if p in preset_cfgs]
    groups = {app: [(t["name"], t["path"]) for t in ts] for app, ts in traces.items()}
    spaces = {}
    for app, ts in groups.items():
        hist: Counter = Counter()
        for _, path in ts:
            hist.update(explore.size_histogram(path))
        spaces[app] = explore.enumerate_space(hist, **space)
    store = explore.Store(db)
    try:
        stats = explore.evaluate_groups(groups, spaces, preset_list, store, exe=exe, jobs=jobs,
                                        progress=progress)
        summaries = {app: explore.summarize(app, [(n, explore.result_key(p, exe)) for n, p in ts],
                                            spaces[app], preset_cfgs, store)
                     for app, ts in groups.items()}
    finally:
        store.close()
    docs = [explore.app_document(s) for s in summaries.values()]
    doc_all = {"kind": "heapkit-explore", "version": 1, "cost": "work",
               "timing": {**stats, "engine": f"local pool of {jobs}",
                          "configs_per_app": {a: len(c) for a, c in spaces.items()},
                          "total_s": time.perf_counter() - t0},
               "space": {k: list(v) if isinstance(v, tuple) else v for k, v in space.items()},
               "apps": docs}
    return doc_all, summaries


def _dmm_header(chosen: dict[str, str]) -> str:
    """A header for the target driver (lab/target/allocs.c, TGT_DMM_CONFIGS): each chosen
    configuration as ``dmm-chosen-<app>``."""
    lines = ['#include "heapkit/dmm.h"', ""]
    entries = []
    for app, text in chosen.items():
        ident = "tgt_dmm_" + "".join(ch if ch.isalnum() else "_" for ch in app)
        lines.append(f"/* {text} */")
        lines.append(f"static const hk_dmm_config_t {ident} = {explore.Config.parse(text).c_initializer()};")
        entries.append(f'{{"dmm-chosen-{app}", "heapkit", setup_dmm_config, &{ident}, 1}}')
    lines += ["", "#define TGT_DMM_ENTRIES " + ", ".join(entries), ""]
    return "\n".join(lines)


def target_costs(traces: dict[str, list[dict]], chosen: dict[str, str], jobs: int,
                 progress: bool) -> dict[str, Any]:
    """Exact Cortex-M3 instructions of the presets and each application's chosen
    configuration on every trace (heapkit/target.py at :data:`TARGET_OPT`):
    {"runs": [{"app", "trace", "allocator", "malloc_mean", "free_mean", "total", "calls",
    "failures"}], "calibration"}, or {"error": why} when the target cannot run."""
    from . import target
    from .trace import read_trace
    missing = target.missing_tools()
    if missing:
        return {"error": f"the Cortex-M3 target needs {', '.join(missing)}"}
    names = {}
    items = []
    for app, ts in traces.items():
        for t in ts:
            key = f"{app}/{t['name']}"
            names[key] = (app, t["name"])
            allocs = list(PRESET_ALLOCATORS) + ([f"dmm-chosen-{app}"] if app in chosen else [])
            items.append((key, read_trace(t["path"]), allocs))
    try:
        doc = target.bench(items, opts=(TARGET_OPT,), jobs=jobs, progress=progress,
                           dmm_header=_dmm_header(chosen) if chosen else None)
    except HeapkitError as e:
        return {"error": str(e).splitlines()[0]}
    runs = []
    for r in doc["runs"]:
        if r.get("result") is None:
            continue
        app, trace = names[r["trace"]]
        st = r["stats"]
        calls = sum(st[k]["count"] for k in target.KINDS)
        total = sum(st[k]["mean"] * st[k]["count"] for k in target.KINDS if st[k]["count"])
        runs.append({"app": app, "trace": trace, "allocator": r["allocator"],
                     "malloc_mean": (st.get("malloc") or {}).get("mean"),
                     "free_mean": (st.get("free") or {}).get("mean"), "calls": calls,
                     "total": total, "failures": r["result"]["failures"]["total"]})
    return {"opt": TARGET_OPT, "calibration": doc.get("calibration"), "runs": runs,
            "skipped": doc.get("skipped_traces") or {}}


def peak_breakdown(traces: dict[str, list[dict]], allocator: str = COALESCE_PRESET) -> dict[str, Any]:
    """Section 5 point 4 (full coalescing eradicates external fragmentation): *allocator*
    (dmm-net: full coalescing and splitting) replayed by the engine on every trace, the
    footprint at the peak-live moment split into its parts (docs/metrics.md):
    {app: {trace: {"requested", "internal", "external", "metadata", "footprint", ...}}}."""
    from . import engine
    out: dict[str, Any] = {"allocator": allocator, "apps": {}}
    for app, ts in traces.items():
        for t in ts:
            res = engine.replay(t["path"], allocator, series=0, timing=False)
            out["apps"].setdefault(app, {})[t["name"]] = res["replay"]["at_peak_live"]
    return out


def collect(workdir: Path, quick: bool = False, jobs: int = 2, progress: bool = True) -> dict:
    """Everything the custom-dmm-network section needs: {"explore": heapkit-explore
    document, "dmm_network": {"traces", "sizes", "shapes", "target", "captures", ...}}."""
    from .trace import live_bytes, read_trace
    t0 = time.perf_counter()
    traces = app_traces(workdir / "traces", quick)
    sizes, shapes = {}, {}
    for app, ts in traces.items():
        for t in ts:
            sizes.setdefault(app, {})[t["name"]] = size_profile(explore.size_histogram(t["path"]))
            live = live_bytes(read_trace(t["path"]).records)
            shapes.setdefault(app, {})[t["name"]] = {"series": usage_series(live), **usage_form(live),
                                                     "peak": float(live.max()) if len(live) else 0.0}
    space = QUICK_SPACE if quick else DEMO_SPACE
    doc_all, summaries = explore_apps(traces, workdir / "explore.db", space, jobs, progress)
    chosen = {app: s.chosen for app, s in summaries.items() if s.chosen}
    costs = target_costs(traces, chosen, jobs, progress)
    try:
        breakdown = peak_breakdown(traces)
    except HeapkitError as e:
        breakdown = {"error": str(e).splitlines()[0]}
    info = {app: [{k: v for k, v in t.items() if k != "path"} for t in ts] for app, ts in traces.items()}
    return {"explore": doc_all,
            "dmm_network": {"traces": info, "sizes": sizes, "shapes": shapes, "target": costs,
                            "breakdown": breakdown,
                            "chosen": chosen, "captures": [list(c) for c in CAPTURE_SEARCH],
                            "pcap_dir": str(netapps.pcap_dir()),
                            "recorded_dir": str(netapps.CAPTURES_DIR or ""), "quick": quick,
                            "wall_s": time.perf_counter() - t0}}
