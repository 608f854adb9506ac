# SPDX-License-Identifier: MIT
"""What every section of the HTML report is built from: number formatting, the page's
CSS and HTML building blocks, reading one run's results, the plotting machinery
(matplotlib, Agg backend; plots queued while sections are written and rendered together,
in worker processes, as base64 PNGs), heap maps, and the claims framework the seed
sections judge their papers with (:class:`Claim`, :func:`judged`, the verdicts).

heapkit/report.py and the seed sections (heapkit/seeds/) build on this module; it
renders only and imports nothing that produces results (lab/tests/test_layering.py).

Heap maps: the engine's ``heapmap`` snapshots are ``[offset, size, used]``
runs; :func:`rasterize` turns them into an address x time picture (share
of each address bin covered by used and by free blocks).  ``heapkit demo``
rasterizes right after each replay and keeps only the picture and
:func:`heapmap_stats` (free-block counts and sizes per snapshot), so its
results file stays small; the report accepts either form.
"""

from __future__ import annotations

import base64
import html
import io
import math
import zlib
from typing import Any, Iterable, NamedTuple, Sequence

import numpy as np

from .boards import RV32


NOISE_NOTE = ("Host timings are noisy: one call at a time on the machine named at the top "
              "(TSC or CLOCK_MONOTONIC, empty-measurement overhead subtracted; a time below "
              "the clock's step prints as '< step', the step rounded up: '< 0.4' for 0.385 ns). "
              "Read medians and percentiles; max and standard deviation mostly show "
              "preemption. Compare allocators within this run only.")

HEAPMAP_BINS = 160


# --------------------------------------------------------------------------
# Small helpers

def get(d: Any, path: str, default: Any = None) -> Any:
    """``d["a"]["b"]`` for path ``"a.b"``, or *default* where a part is missing or null."""
    for part in path.split("."):
        if not isinstance(d, dict) or d.get(part) is None:
            return default
        d = d[part]
    return d


def fmt_int(v: Any) -> str:
    return "n/a" if v is None else f"{int(round(v)):,}"


def _ns_decimals(v: float) -> int:
    """Decimals that resolve *v* nanoseconds to one significant digit below 10 ns (0 from
    10 ns on), so a sub-nanosecond time or clock step never rounds to 0."""
    if v >= 10 or v <= 0:
        return 0
    return max(0, -math.floor(math.log10(v)))


def fmt_step(step: float) -> str:
    """The clock's step rounded up to the digits that resolve it (0.385 ns -> "0.4"), so
    "< step" stays true."""
    d = _ns_decimals(step)
    return f"{math.ceil(step * 10 ** d - 1e-9) / 10 ** d:,.{d}f}"


def fmt_ns(v: Any, step: Any = None) -> str:
    """Nanoseconds. Below the clock's step (the engine's ``step_ns``) a time cannot be told
    from 0: it prints as "< step" with the step's value ("< 0.4"); below 10 ns with the
    decimals that resolve the step (or the value, without a step), never as 0."""
    if v is None:
        return "n/a"
    if step and v < step:
        return f"< {fmt_step(step)}"
    d = 0 if v >= 10 else _ns_decimals(step or v)
    return f"{v:,.{d}f}"


def fmt_f(v: Any, digits: int = 1) -> str:
    return "n/a" if v is None or (isinstance(v, float) and math.isnan(v)) else f"{v:,.{digits}f}"


def fmt_pct(frac: Any) -> str:
    return "n/a" if frac is None else f"{100.0 * frac:,.1f} %"


def fmt_bytes(v: Any) -> str:
    return "n/a" if v is None else f"{int(v):,}"


def fmt_kib(v: Any) -> str:
    if v is None:
        return "n/a"
    if v >= 10 * 1024 * 1024:
        return f"{v / 1048576:,.1f} MiB"
    if v >= 10 * 1024:
        return f"{v / 1024:,.1f} KiB"
    return f"{int(v):,} B"


def _signed(v: float) -> str:
    return f"{v:+,}" if isinstance(v, int) else f"{v:+,.1f}"


def advice_gap_text(t: dict) -> str:
    """When a peer is recommended: heapkit's best by the same rule and what it costs more
    (heapkit advise's text and the report's advice table say it this way)."""
    g = t.get("heapkit_gap")
    if g is None:
        return ("no heapkit allocator is a candidate by the same rule (each fails, has no "
                "count or exceeds the budgets)")
    pick = next(r for r in t["rows"] if r["allocator"] == t["recommendation"])
    pct = 100.0 * g["min_heap"] / pick["min_heap"]
    worst = ", ".join(f"{_signed(v)} ns host p99" if k == "host p99 ns"
                      else f"{_signed(v)} instructions on {k}" for k, v in g["worst"].items())
    return (f"heapkit's best by the same rule is {g['allocator']}: smallest heap "
            f"{_signed(g['min_heap'])} bytes ({pct:+.1f} %)"
            + (f", worst case {worst}" if worst else ""))


def esc(s: Any) -> str:
    return html.escape(str(s), quote=True)


def geomean(xs: Sequence[float]) -> float | None:
    xs = [x for x in xs if x is not None and x > 0]
    return math.exp(sum(map(math.log, xs)) / len(xs)) if xs else None


def text_table(header: Sequence[str], rows: Sequence[Sequence[Any]],
               right: Iterable[int] | None = None) -> str:
    """A plain-text table: the columns in *right* right-aligned (default: all but the first
    two), the others left-aligned; None shows as "-"."""
    right = set(range(2, len(header)) if right is None else right)
    cells = [list(map(str, header))] + [["-" if c is None else str(c) for c in r] for r in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(header))]
    out = []
    for n, r in enumerate(cells):
        out.append("  ".join(c.rjust(w) if i in right else c.ljust(w)
                             for i, (c, w) in enumerate(zip(r, widths))).rstrip())
        if n == 0:
            out.append("  ".join("-" * w for w in widths))
    return "\n".join(out)


# --------------------------------------------------------------------------
# Heap maps

def rasterize(snapshots: Sequence[dict], top: int, bins: int = HEAPMAP_BINS
              ) -> tuple[np.ndarray, np.ndarray]:
    """(used, free): per snapshot and address bin over [0, top), the share of
    the bin covered by used blocks and by free blocks (the rest is control
    data, headers the walk does not report, or above the last block)."""
    top = max(int(top), 1)
    edges = np.linspace(0.0, float(top), bins + 1)
    width = np.diff(edges)
    used = np.zeros((len(snapshots), bins))
    free = np.zeros((len(snapshots), bins))
    for i, snap in enumerate(snapshots):
        b = np.asarray(snap.get("blocks") or [], dtype=np.float64).reshape(-1, 3)
        for state, out in ((1, used), (0, free)):
            sel = b[b[:, 2] == state]
            if not len(sel):
                continue
            cum = np.concatenate(([0.0], np.cumsum(sel[:, 1])))
            xs = np.empty(2 * len(sel))
            ys = np.empty(2 * len(sel))
            xs[0::2], xs[1::2] = sel[:, 0], sel[:, 0] + sel[:, 1]
            ys[0::2], ys[1::2] = cum[:-1], cum[1:]
            out[i] = np.diff(np.interp(edges, xs, ys)) / width
    return np.clip(used, 0, 1), np.clip(free, 0, 1)


def _pack(a: np.ndarray) -> str:
    return base64.b64encode(zlib.compress(np.round(a * 255).astype(np.uint8).tobytes(), 6)).decode()


def _unpack(s: str, shape: tuple[int, int]) -> np.ndarray:
    raw = np.frombuffer(zlib.decompress(base64.b64decode(s)), dtype=np.uint8)
    return raw.reshape(shape).astype(np.float64) / 255.0


def heapmap_top(result: dict) -> int:
    """Address range a heap map shows: up to the highest block end reached (else the arena)."""
    return int(get(result, "replay.memory.peak_end") or get(result, "arena.size") or 1)


def pack_heapmap(result: dict, bins: int = HEAPMAP_BINS) -> dict | None:
    """The compact heap map ``heapkit demo`` stores: records, top, bins and the
    zlib+base64 uint8 pictures of :func:`rasterize`."""
    snaps = get(result, "replay.heapmap.snapshots")
    if not snaps:
        return None
    top = heapmap_top(result)
    used, free = rasterize(snaps, top, bins)
    return {"records": [s["record"] for s in snaps], "top": top, "bins": bins,
            "used": _pack(used), "free": _pack(free)}


def heapmap_picture(run: dict) -> tuple[list[int], int, np.ndarray, np.ndarray] | None:
    """(records, top, used, free) of a run, from its packed map or raw snapshots."""
    hm = run.get("heapmap_raster")
    if hm:
        shape = (len(hm["records"]), hm["bins"])
        return hm["records"], hm["top"], _unpack(hm["used"], shape), _unpack(hm["free"], shape)
    res = run.get("result") or {}
    snaps = get(res, "replay.heapmap.snapshots")
    if not snaps:
        return None
    top = heapmap_top(res)
    used, free = rasterize(snaps, top)
    return [s["record"] for s in snaps], top, used, free


def heapmap_stats(snapshots: Sequence[dict]) -> list[dict]:
    """Per snapshot: free-block count, largest/smallest free block, free bytes.

    Exact unless the snapshot says ``merged`` (then adjacent free blocks
    were merged into runs by the engine and the counts are lower bounds).
    """
    out = []
    for snap in snapshots:
        b = np.asarray(snap.get("blocks") or [], dtype=np.int64).reshape(-1, 3)
        f = b[b[:, 2] == 0, 1]
        out.append({"record": snap["record"], "free_blocks": int(len(f)),
                    "largest_free": int(f.max()) if len(f) else 0,
                    "smallest_free": int(f.min()) if len(f) else 0,
                    "free_bytes": int(f.sum()), "used_blocks": int((b[:, 2] == 1).sum()),
                    "merged": bool(snap.get("merged")) or bool(snap.get("truncated"))})
    return out


def run_heapmap_stats(run: dict) -> list[dict] | None:
    if run.get("heapmap_stats") is not None:
        return run["heapmap_stats"]
    snaps = get(run.get("result") or {}, "replay.heapmap.snapshots")
    return heapmap_stats(snaps) if snaps else None


# --------------------------------------------------------------------------
# Reading one run

def timing(run: dict, kind: str) -> dict | None:
    t = get(run.get("result") or {}, f"replay.timing.{kind}")
    return t if t and t.get("count") else None


def clock_step(run: dict | None) -> float | None:
    """The engine's clock step for this run (None in results older than step_ns)."""
    return get((run or {}).get("result") or {}, "replay.timing.step_ns")


def failed(run: dict) -> str | None:
    """Why a run has no result (the engine refused it), or None."""
    return run.get("error") if not run.get("result") else None


def allocator_order(data: dict) -> list[str]:
    seen: dict[str, None] = {}
    for r in data["runs"] + data["size_runs"]:
        seen.setdefault(r["allocator"], None)
    return list(seen)


def trace_order(data: dict) -> list[str]:
    seen: dict[str, None] = {}
    for r in data["runs"]:
        seen.setdefault(r["trace"], None)
    return list(seen)


def runs_of(data: dict, trace: str) -> dict[str, dict]:
    return {r["allocator"]: r for r in data["runs"] if r["trace"] == trace}


def families(data: dict) -> dict[str, str]:
    out = {}
    for r in data["runs"] + data["size_runs"]:
        fam = get(r.get("result") or {}, "allocator.family") or r.get("family")
        if fam:
            out.setdefault(r["allocator"], fam)
    return out


def focus_first(names: Sequence[str], focus: Sequence[str]) -> list[str]:
    return [n for n in focus if n in names] + [n for n in names if n not in focus]


# --------------------------------------------------------------------------
# Plots

_PLT = None


def _plt():
    global _PLT
    if _PLT is None:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        plt.rcParams.update({"font.size": 8, "axes.titlesize": 9, "legend.fontsize": 7,
                             "figure.dpi": 80, "savefig.dpi": 80, "axes.grid": True,
                             "grid.alpha": 0.3})
        _PLT = plt
    return _PLT


def _png(fig) -> str:
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    _plt().close(fig)
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode()


SYSTEM_STYLE = {"color": "black", "linestyle": ":", "linewidth": 1.6}


class Styles:
    """A fixed colour and line style per allocator for every plot of a report."""

    def __init__(self, allocs: Sequence[str], fams: dict[str, str]):
        import matplotlib
        cmap = matplotlib.colormaps["tab20"]
        self.map = {}
        k = 0
        for a in allocs:
            if fams.get(a) == "system" or a == "system":
                self.map[a] = SYSTEM_STYLE
                continue
            self.map[a] = {"color": cmap((2 * k) % 20 + (k // 10) % 2),
                           "linestyle": "--" if fams.get(a) == "peer" else "-",
                           "linewidth": 1.3}
            k += 1

    def __call__(self, a: str) -> dict:
        return self.map.get(a, {"color": "grey", "linestyle": "-", "linewidth": 1})


def _panels_done(fig, axes, used: int, fontsize: int, bottom: float) -> str:
    """Finish a grid of *used* panels: blank the rest, one legend below them (from the first
    panel), and the PNG."""
    for ax in list(axes.flat)[used:]:
        ax.axis("off")
    h, lab = axes.flat[0].get_legend_handles_labels()
    fig.legend(h, lab, loc="lower center", ncol=len(lab), fontsize=fontsize, frameon=False)
    fig.tight_layout(rect=(0, bottom, 1, 1))
    return _png(fig)


def _logaxis(ax, which: str = "xy") -> None:
    """Log scale without minor ticks (their labels dominate the drawing time)."""
    from matplotlib.ticker import NullLocator
    for w in which:
        getattr(ax, f"set_{w}scale")("log")
        getattr(ax, f"{w}axis").set_minor_locator(NullLocator())


def _legend_below(fig, ax, bottom: float = 0.3) -> None:
    """One legend under the panels (a legend beside them would be cut off)."""
    h, lab = ax.get_legend_handles_labels()
    if h:
        fig.legend(h, lab, loc="lower center", ncol=min(len(lab), 8), fontsize=7,
                   frameon=False)
    fig.subplots_adjust(left=0.06, right=0.98, bottom=bottom, top=0.9, wspace=0.2)


# --------------------------------------------------------------------------
# HTML building blocks

CSS = """
body{font-family:system-ui,-apple-system,'Segoe UI',sans-serif;margin:24px auto;max-width:1400px;
color:#222;line-height:1.4;padding:0 16px}
h1{font-size:24px;margin-bottom:4px}h2{font-size:19px;margin-top:36px;border-bottom:2px solid #ccd;
padding-bottom:3px}h3{font-size:15px;margin:22px 0 6px}
table{border-collapse:collapse;margin:6px 0 10px;font-size:12px}
th,td{border:1px solid #ccd;padding:2px 6px;white-space:nowrap}th{background:#eef;text-align:left}
td.n{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
tr.focus td{background:#f7f3dd}tr.group td{background:#e8e8f0;font-weight:600}
td.bad{color:#a00;font-weight:600}.na{color:#888}td.wrap{white-space:normal;min-width:28em}
.warn{background:#fff4d6;border:1px solid #e6c96a;padding:6px 10px;margin:10px 0}
.cap{font-size:12px;color:#444;margin:2px 0 12px;max-width:1100px}
.meta{font-size:12px;color:#555}nav{font-size:13px;columns:2;margin:10px 0}
img{max-width:100%;display:block;margin:4px 0 10px}
details{margin:6px 0}summary{cursor:pointer;font-weight:600}
code{background:#f2f2f6;padding:0 3px}
.v-holds{color:#176b2c;font-weight:600}.v-fails{color:#a00;font-weight:600}
.v-untestable{color:#666;font-weight:600}ul.claims li{margin:3px 0;max-width:1100px}
"""


def table(header: Sequence[str], rows: Sequence[Sequence[Any]], *, numeric_from: int = 1,
          focus: Iterable[int] = (), groups: dict[int, str] | None = None,
          text_cols: Iterable[int] = ()) -> str:
    """HTML table; cells from column *numeric_from* on are right-aligned.

    A cell may be a (text, css class) pair; rows whose index is in *focus*
    are highlighted; *groups* inserts a full-width label row before a row index.
    """
    focus = set(focus)
    text_cols = {i % len(header) for i in text_cols}
    out = ["<table><tr>" + "".join(f"<th>{esc(h)}</th>" for h in header) + "</tr>"]
    for i, r in enumerate(rows):
        if groups and i in groups:
            out.append(f'<tr class="group"><td colspan="{len(header)}">{esc(groups[i])}</td></tr>')
        cells = []
        for j, c in enumerate(r):
            cls = []
            if isinstance(c, tuple):
                c, extra = c
                cls.append(extra)
            if j >= numeric_from and j not in text_cols:
                cls.append("n")
            if c == "n/a":
                cls.append("na")
            attr = f' class="{" ".join(cls)}"' if cls else ""
            cells.append(f"<td{attr}>{esc(c)}</td>")
        out.append(f'<tr{" class=focus" if i in focus else ""}>' + "".join(cells) + "</tr>")
    out.append("</table>")
    return "\n".join(out)


def img(uri: str | None, alt: str) -> str:
    if not uri:
        return f'<p class="na">({esc(alt)}: no data in these results)</p>'
    return f'<img alt="{esc(alt)}" src="{uri}">'


def _render(job: tuple) -> str | None:
    func, args = job
    return func(*args)


class Figures:
    """Plots queued while the sections are written, rendered together at the
    end (in *workers* processes when more than one) and put in place."""

    def __init__(self) -> None:
        self.jobs: list[tuple] = []
        self.alts: list[str] = []

    def img(self, func, args: tuple, alt: str) -> str:
        self.jobs.append((func, args))
        self.alts.append(alt)
        return f"\x00FIG{len(self.jobs) - 1}\x00"

    def fill(self, page: str, workers: int = 1, progress=None) -> str:
        uris: list[str | None] = []
        if workers > 1 and len(self.jobs) > 1:
            import concurrent.futures as cf
            import multiprocessing as mp
            ctx = mp.get_context("fork") if "fork" in mp.get_all_start_methods() else None
            with cf.ProcessPoolExecutor(max_workers=workers, mp_context=ctx) as pool:
                for uri in pool.map(_render, self.jobs, chunksize=1):
                    uris.append(uri)
                    if progress:
                        progress()
        else:
            for job in self.jobs:
                uris.append(_render(job))
                if progress:
                    progress()
        for i, (uri, alt) in enumerate(zip(uris, self.alts)):
            page = page.replace(f"\x00FIG{i}\x00", img(uri, alt), 1)
        return page


def cap(text: str) -> str:
    return f'<p class="cap">{text}</p>'


class Absent(str):
    """A section without data in these results: the line (HTML) saying what fills it.
    build_html leaves such sections out and lists them under the contents."""


def missing(trace: str, how: str) -> Absent:
    return Absent(f"no <code>{esc(trace)}</code> runs here: {how}")


# --------------------------------------------------------------------------
# The seed papers' claims and their verdicts

HOLDS, FAILS, UNTESTABLE = "holds", "does not hold", "cannot be tested here"
VERDICTS = (HOLDS, FAILS, UNTESTABLE)


class Claim(NamedTuple):
    """One claim of a seed paper judged on these results: *verdict* is one of
    :data:`VERDICTS`, *reason* one sentence with the measured figures (or why
    these machines cannot test it)."""
    claim: str
    verdict: str
    reason: str


def judged(claim: str, holds: bool, reason: str) -> Claim:
    """A claim judged by a measured comparison."""
    return Claim(claim, HOLDS if holds else FAILS, reason)


def claims_html(claims: Sequence[Claim]) -> str:
    """The verdict lines that close a seed's section (one ``<li>`` per claim)."""
    if not claims:
        return ""
    css = {HOLDS: "v-holds", FAILS: "v-fails", UNTESTABLE: "v-untestable"}
    items = "".join(f'<li>{esc(c.claim)}: <span class="{css[c.verdict]}">{esc(c.verdict)}</span>. '
                    f"{esc(c.reason)}</li>" for c in claims)
    return f'<h3>Verdicts</h3><ul class="claims">{items}</ul>'


# --------------------------------------------------------------------------
# Shared by several seed sections: the host timing table, the buddy seeds' RV32 counts

def timing_rows(runs: dict[str, dict], allocs: Sequence[str], kind: str,
                notes: dict[str, str] | None = None) -> list[list[Any]]:
    rows = []
    for a in allocs:
        r = runs.get(a)
        if r is None:
            continue
        t = timing(r, kind)
        if not t:
            why = failed(r) or "no calls"
            rows.append([a] + ["n/a"] * 8 + [why])
            continue
        permil = 1000.0 * t["stddev"] / t["mean"] if t["mean"] else None
        note = (notes or {}).get(a) or get(r["result"], "allocator.family", "")
        step = clock_step(r)
        rows.append([a, fmt_int(t["count"]), fmt_ns(t["min"], step), fmt_ns(t["p50"], step),
                     fmt_ns(t["mean"], step), fmt_ns(t["p99"], step), fmt_ns(t["max"], step),
                     fmt_f(t["stddev"]),
                     fmt_f(permil), note])
    return rows


TIMING_HEADER = ["allocator", "calls", "Tmin ns", "median ns", "Tavg ns", "p99 ns", "Tmax ns",
                 "std dev ns", "1000 sd/Tavg", "family / note"]


NO_TARGET = (f"instruction counts need the RV32 cross toolchain and QEMU (apt-get install "
             f"{RV32.packages}; <code>make test</code> installs them), then "
             "<code>heapkit demo</code>")


def target_part(data: dict, part: str) -> dict | None:
    """One part of the buddy seeds' target counts (``paper``, ``delay2``, ``kth_levels``)."""
    bt = data["extra"].get("buddy_target") or {}
    return bt.get(part)


def _apl(data: dict, trace: str, alloc: str) -> dict:
    r = runs_of(data, trace).get(alloc)
    return {} if not r or failed(r) else get(r["result"], "replay.at_peak_live") or {}
