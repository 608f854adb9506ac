# SPDX-License-Identifier: MIT
"""Design-space exploration of the configurable allocator (``heapkit explore``).

After Mamagkakis et al. 2006 (../shared/seeds/custom-dmm-network.txt,
Section 5, Fig. 2, Tables 3-5): enumerate thousands of dmm configurations
(include/heapkit/dmm.h), replay every trace of an application on each, and
keep the Pareto front of fragmentation against cost.

The pieces, each usable on its own:

- :class:`Config`: one ``hk_dmm_config_t`` in the textual form of
  lab/explore/config_text.h (``fit=first order=lifo split=9 ...``), its
  canonical text, and its C99 initializer (:func:`c_header`).
- :func:`size_histogram`, :func:`list_candidates`, :func:`enumerate_space`:
  the configuration space. Dedicated-list choices come from the trace's
  request-size histogram: the most frequent sizes, the two modes (the ACK
  and MTU peaks of network traffic) as exact sizes and as ranges around them.
  The full space is fits x orders x split levels x coalesce levels x list
  choices: 5 x 3 x 10 x 10 x 7 = 10,500 configurations per application.
- :func:`evaluate_batch`: one ``hk-explore`` process (lab/explore/) replays a
  trace on a batch of configurations and returns one :class:`Result` each.
- :class:`Store`: results in SQLite, keyed by (trace content hash + evaluator
  binary hash, canonical config text), so a rerun skips what is done, an
  interrupted run resumes, and a changed allocator starts afresh.
- :func:`run`: the batches run on a local thread pool (each thread drives one
  evaluator process, so N threads use N cores) or on a Dask distributed
  cluster (``scheduler=`` address, or ``dask_local=N`` for a LocalCluster)
  through the same submit / as_completed loop, behind a tqdm progress bar.
- :func:`pareto_front` and :func:`balanced_point`: the front (both axes
  minimised) and the most balanced point on it: with each axis measured as
  the relative excess over the best front value (memory = 1 + fragmentation
  over the least memory, cost over the least cost), the front point nearest
  the utopia point (0, 0) in Euclidean distance; ties go to the lower
  fragmentation, then to the earlier configuration.

Metrics (from the dmm's own counters, so they are deterministic):

- fragmentation = peak footprint / peak live requested bytes - 1, the paper's
  Section 3 metric (Johnstone and Wilson's measure #4), where the footprint is
  the bytes the dmm ever carved from its arena (headers included);
- work = one unit per trace record + free blocks examined by searches + list
  nodes passed by address-ordered inserts + splits + merges. This is the cost
  axis: the paper used execution time on one PC, but timings on a shared
  2-core machine move by more than the differences between neighbouring
  configurations, while work counts give the same front on every machine.
  The evaluator also measures each replay's CPU time, shown in the tables
  next to the work for reference (``cost="time"`` ranks on it instead).

A configuration with any failed allocation on any trace of an application is
infeasible there: it takes no part in the front or the choice. Neither does one
whose replay was stopped by the work cap (``heapkit explore --work-cap``,
default 10 x the costliest preset's work on the trace): worst fit over
thousands of unmerged fragments scans them all on every request, seconds per
replay, and such a point is far off the front's cost range anyway.

Dask: ``dask_local=N`` starts a LocalCluster of N single-thread workers in this
process (the work is in the evaluator subprocesses, so threads are enough).
Workers of an existing cluster (``scheduler=``) need this package importable
and an hk-explore of their own (``$HEAPKIT_EXPLORE``, an installed lab or a built checkout);
traces reach them as bytes, cached in their temp directory by content hash.
Results are filed under the client's evaluator binary, so the workers' must be
the same build.

:func:`main` is ``heapkit explore``: traces, space, runs, then per application
the tables, the header, the firmware image and the plot (:func:`app_document`,
:func:`build_firmware`; heapkit/seeds/custom_dmm_network.py draws the tables and the plot).
"""

from __future__ import annotations

import concurrent.futures
import dataclasses
import hashlib
import json
import math
import os
import re
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any, Iterable, Sequence

import numpy as np

from . import inputs, native
from . import progress as _progress
from .errors import HeapkitError
from .render import text_table
from .seeds.custom_dmm_network import explore_plot_png, explore_section, explore_table_rows

FITS = ("first", "next", "best", "worst", "exact")
ORDERS = ("lifo", "fifo", "address")
LEVELS = tuple(range(10))          # 0 never .. 9 always (dmm.h)
LIST_MAX = 32768                   # HK_DMM_LIST_MAX
MAX_LISTS = 16                     # HK_DMM_MAX_LISTS
ROUND_MAX = 32768                  # HK_DMM_ROUND_MAX
DEFAULT_TARGET = 10_000

# The paper's Table 1 allocators, as dmm presets, in its table order.
PRESETS = ("wince", "winxp", "lea", "ose", "uclinux")
# Presets shown beside them but not among the OS allocators the paper averages and
# compares against: heapkit's preset of the paper's DRR choice (2 lists, 16 and 1476 B).
EXTRA_PRESETS = ("net",)
PRESET_LABELS = {"wince": "Windows CE", "winxp": "Windows XP", "lea": "Linux (Lea)",
                 "ose": "Enea OSE", "uclinux": "uClinux", "net": "dmm-net (heapkit)"}

ENV_BINARY = "HEAPKIT_EXPLORE"
TARGET = "hk-explore"

_C_FIT = {f: f"HK_DMM_FIT_{f.upper()}" for f in FITS}
_C_ORDER = {o: f"HK_DMM_ORDER_{o.upper()}" for o in ORDERS}
_KEYS = ("fit", "order", "split", "coalesce", "no_pool", "class_round", "pool_round", "lists")


# --------------------------------------------------------------------------
# Configurations

@dataclasses.dataclass(frozen=True)
class Config:
    """One ``hk_dmm_config_t``; ``lists`` holds (lo, hi) request-byte ranges."""

    fit: str = "first"
    order: str = "lifo"
    split: int = 0
    coalesce: int = 0
    no_pool: int = 0
    class_round: int = 0
    pool_round: int = 0
    lists: tuple[tuple[int, int], ...] = ()

    def text(self) -> str:
        """The canonical text, as lab/explore/config_text.c's config_format writes it."""
        lists = ",".join(str(lo) if lo == hi else f"{lo}-{hi}" for lo, hi in self.lists) or "none"
        return (f"fit={self.fit} order={self.order} split={self.split} coalesce={self.coalesce} "
                f"no_pool={self.no_pool} class_round={self.class_round} "
                f"pool_round={self.pool_round} lists={lists}")

    __str__ = text

    @classmethod
    def parse(cls, text: str) -> "Config":
        """A config from its text (any key order; absent keys are zero). No presets here:
        :func:`presets` asks the evaluator for those."""
        fields: dict[str, Any] = {}
        for token in text.split():
            key, eq, value = token.partition("=")
            if not eq:
                raise HeapkitError(f"config: {token!r} is not KEY=VALUE")
            if key not in _KEYS:
                raise HeapkitError(f"config: unknown key {key!r} (keys: {' '.join(_KEYS)})")
            if key in fields:
                raise HeapkitError(f"config: key {key!r} given twice")
            if key == "fit" and value not in FITS or key == "order" and value not in ORDERS:
                raise HeapkitError(f"config: {key}={value!r} is not one of "
                                   f"{', '.join(FITS if key == 'fit' else ORDERS)}")
            if key == "lists":
                fields[key] = _parse_lists(value)
            elif key in ("fit", "order"):
                fields[key] = value
            else:
                if not value.isdigit():
                    raise HeapkitError(f"config: {key}={value!r} is not a number")
                fields[key] = int(value)
        return cls(**fields)

    def problem(self) -> str | None:
        """Why hk_dmm_validate would refuse this config (None if it accepts it)."""
        if self.split > 9 or self.coalesce > 9:
            return "split and coalesce levels go from 0 to 9"
        if self.no_pool not in (0, 1) or self.class_round not in (0, 1):
            return "no_pool and class_round are 0 or 1"
        if self.pool_round and (self.pool_round & (self.pool_round - 1) or self.pool_round > ROUND_MAX):
            return f"pool_round must be 0 or a power of two up to {ROUND_MAX}"
        if len(self.lists) > MAX_LISTS:
            return f"at most {MAX_LISTS} dedicated lists"
        prev = -1
        for lo, hi in self.lists:
            if lo > hi or hi > LIST_MAX:
                return f"list {lo}-{hi}: lo <= hi <= {LIST_MAX}"
            if lo <= prev:
                return "lists must be sorted and disjoint"
            prev = hi
        if self.no_pool and not self.lists:
            return "no_pool needs dedicated lists"
        if self.no_pool and (self.split or self.coalesce):
            return "no_pool forbids splitting and coalescing"
        return None

    def c_initializer(self) -> str:
        """The C99 designated initializer of include/heapkit/dmm.h's field order."""
        lists = ", ".join(f"{{{lo}u, {hi}u}}" for lo, hi in self.lists) or "{0u, 0u}"
        return (f"{{\n    .fit = {_C_FIT[self.fit]}, .order = {_C_ORDER[self.order]},\n"
                f"    .split = {self.split}u, .coalesce = {self.coalesce}u, .no_pool = {self.no_pool}u,\n"
                f"    .class_round = {self.class_round}u, .pool_round = {self.pool_round}u,\n"
                f"    .nlists = {len(self.lists)}u,\n    .lists = {{{lists}}}}}")


def _parse_lists(value: str) -> tuple[tuple[int, int], ...]:
    if value == "none":
        return ()
    out = []
    for part in value.split(","):
        lo, dash, hi = part.partition("-")
        if not lo.isdigit() or (dash and not hi.isdigit()):
            raise HeapkitError(f"config: lists: bad range {part!r} (expected LO or LO-HI)")
        out.append((int(lo), int(hi) if dash else int(lo)))
    return tuple(out)


def c_header(cfg: Config, *, name: str = "hk_explored_config", guard: str = "HK_EXPLORED_CONFIG_H",
             comment: Sequence[str] = (), defines: dict[str, int] | None = None) -> str:
    """A header holding *cfg* as ``static const hk_dmm_config_t NAME``."""
    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name) or not re.fullmatch(r"[A-Z_][A-Z0-9_]*", guard):
        raise HeapkitError(f"header: {name!r} / {guard!r} are not C identifiers")
    lines = ["/*"] + [f" * {c}".rstrip() for c in comment] + [" */",
             f"#ifndef {guard}", f"#define {guard}", "", '#include "heapkit/dmm.h"', ""]
    for k, v in (defines or {}).items():
        lines.append(f"#define {k} {int(v)}u")
    if defines:
        lines.append("")
    lines += [f"/* {cfg.text()} */", f"static const hk_dmm_config_t {name} = {cfg.c_initializer()};", "",
              f"#endif /* {guard} */", ""]
    return "\n".join(lines)


# --------------------------------------------------------------------------
# The configuration space

_REC = np.dtype([("op", "u1"), ("reserved", "u1"), ("tid", "<u2"), ("id", "<u4"),
                 ("size", "<u4"), ("aux", "<u4")])


def size_histogram(path: str | os.PathLike) -> Counter:
    """Requested bytes -> number of allocating records (calloc: nmemb x size) of a .hkb trace."""
    try:
        with open(path, "rb") as f:
            head = f.read(32)
            if len(head) < 32 or head[:8] != b"HKTRACE\0":
                raise HeapkitError(f"{path}: not a heapkit binary trace (.hkb)")
            rec = np.fromfile(f, dtype=_REC)
    except OSError as e:
        raise HeapkitError(f"{path}: {e.strerror or e}") from None
    alloc = rec[rec["op"] != ord("f")]
    sizes = alloc["size"].astype(np.int64)
    calloc = alloc["op"] == ord("c")
    sizes[calloc] *= alloc["aux"][calloc].astype(np.int64)
    values, counts = np.unique(sizes, return_counts=True)
    return Counter(dict(zip(values.tolist(), counts.tolist())))


def _modes(hist: Counter) -> list[int]:
    """The ACK and MTU peaks: the most frequent size, then the most frequent size at least
    twice as far from it (in either direction) — one size when there is no second peak."""
    sizes = [s for s, _ in sorted(hist.items(), key=lambda kv: (-kv[1], kv[0])) if 0 < s <= LIST_MAX]
    if not sizes:
        return []
    first = sizes[0]
    for s in sizes[1:]:
        if s >= 2 * first or 2 * s <= first:
            return sorted((first, s))
    return [first]


def _mode_range(hist: Counter, mode: int) -> tuple[int, int]:
    """The sizes within 1/8 of *mode* that the trace requests: a range list around a peak."""
    lo, hi = mode - mode // 8, min(LIST_MAX, mode + mode // 8)
    present = [s for s in hist if lo <= s <= hi and s > 0]
    return min(present), max(present)


def list_candidates(hist: Counter, wanted: int) -> list[tuple[tuple[tuple[int, int], ...], int]]:
    """Up to *wanted* distinct (lists, class_round) choices, in priority order: none; the most
    frequent size; the two modes; the 3 most frequent sizes; ranges around the modes (blocks
    of the exact request, then of the range's top size); the 4, 2, 5 and 6 most frequent sizes;
    then the histogram's quartiles of requests as four ranges (both roundings)."""
    top = [s for s, _ in sorted(hist.items(), key=lambda kv: (-kv[1], kv[0])) if 0 < s <= LIST_MAX]
    modes = _modes(hist)
    exact = lambda sizes: tuple((s, s) for s in sorted(sizes))  # noqa: E731
    ranges = tuple(_mode_range(hist, m) for m in modes)
    if len(ranges) == 2 and ranges[0][1] >= ranges[1][0]:
        ranges = ranges[:1]
    cands: list[tuple[tuple[tuple[int, int], ...], int]] = [
        ((), 0), (exact(top[:1]), 0), (exact(modes), 0), (exact(top[:3]), 0),
        (ranges, 0), (ranges, 1), (exact(top[:4]), 0), (exact(top[:2]), 0),
        (exact(top[:5]), 0), (exact(top[:6]), 0)]
    quart = _quartile_ranges(hist)
    cands += [(quart, 0), (quart, 1)]
    out: list[tuple[tuple[tuple[int, int], ...], int]] = []
    for lists, cr in cands:
        if cr and not any(lo != hi for lo, hi in lists):
            continue            # rounding to the top of an exact list changes nothing
        if (lists, cr) in out or (not lists and out):
            continue            # a repeat, or an empty pick past the first ("none") choice
        out.append((lists, cr))
        if len(out) == wanted:
            break
    return out


def _quartile_ranges(hist: Counter) -> tuple[tuple[int, int], ...]:
    sizes = sorted(s for s in hist if 0 < s <= LIST_MAX)
    if len(sizes) < 4:
        return ()
    counts = np.array([hist[s] for s in sizes], dtype=np.float64)
    cum = np.cumsum(counts) / counts.sum()
    cuts = [int(np.searchsorted(cum, q)) for q in (0.25, 0.5, 0.75)]
    bounds, start = [], 0
    for c in cuts + [len(sizes) - 1]:
        c = max(c, start)
        if start < len(sizes):
            bounds.append((sizes[start], sizes[min(c, len(sizes) - 1)]))
        start = c + 1
    return tuple(b for b in bounds if b[0] <= b[1])


def enumerate_space(hist: Counter, *, target: int = DEFAULT_TARGET, fits: Sequence[str] = FITS,
                    orders: Sequence[str] = ORDERS, splits: Sequence[int] = LEVELS,
                    coalesces: Sequence[int] = LEVELS, list_sets: int | None = None) -> list[Config]:
    """Every combination of the given fits, orders, levels and list choices, in a fixed order.

    The number of list choices is *list_sets*, or else the fewest that reach *target*
    configurations (7 for the full axes and the default target); a trace with few distinct
    sizes may offer fewer choices, and so fewer configurations."""
    per_list = len(fits) * len(orders) * len(splits) * len(coalesces)
    if per_list == 0:
        raise HeapkitError("explore: the configuration space is empty (an axis has no values)")
    wanted = list_sets if list_sets is not None else max(1, -(-target // per_list))
    configs = []
    for lists, cr in list_candidates(hist, wanted):
        for fit in fits:
            for order in orders:
                for split in splits:
                    for coalesce in coalesces:
                        configs.append(Config(fit, order, split, coalesce, 0, cr, 0, lists))
    return configs


# --------------------------------------------------------------------------
# The evaluator

@dataclasses.dataclass(frozen=True)
class Result:
    """One configuration on one trace (``status`` "ok", or "refused" with ``reason``)."""

    config: str
    status: str
    failures: int = 0
    frag: float = 0.0
    work: int = 0
    footprint: int = 0
    requested: int = 0
    cpu_ns: int = 0
    reason: str = ""

    @property
    def feasible(self) -> bool:
        return self.status == "ok" and self.failures == 0


def binary() -> Path:
    """``$HEAPKIT_EXPLORE``, else the installed hk-explore or the build tree's (built when missing)."""
    return native.find(ENV_BINARY, TARGET)


def _call(argv: list[str], stdin: str) -> str:
    try:
        proc = subprocess.run(argv, input=stdin, capture_output=True, text=True)
    except OSError as e:
        raise HeapkitError(f"{argv[0]}: cannot run: {e.strerror or e}") from None
    if proc.returncode != 0:
        msg = proc.stderr.strip().splitlines()
        raise HeapkitError(msg[-1] if msg else f"{argv[0]} exited with status {proc.returncode}")
    return proc.stdout


def presets(exe: str | os.PathLike | None = None) -> dict[str, Config]:
    """Every dmm preset (hk_dmm_preset) as a Config, read from the evaluator."""
    out = {}
    for line in _call([str(exe or binary()), "--presets"], "").splitlines():
        name, _, text = line.partition(" ")
        out[name] = Config.parse(text)
    return out


def canonical(texts: Sequence[str], exe: str | os.PathLike | None = None) -> list[str]:
    """The evaluator's canonical form of each config text (its parser, not Python's)."""
    stdin = "".join(f"{i} {t}\n" for i, t in enumerate(texts))
    lines = _call([str(exe or binary()), "--canon"], stdin).splitlines()
    return [line.partition(" ")[2] for line in lines]


@dataclasses.dataclass(frozen=True)
class TraceRef:
    """A trace an evaluator can reach: its path, or (for remote workers) its bytes."""

    key: str
    path: str
    data: bytes | None = None

    def local_path(self) -> str:
        if self.data is None or os.path.exists(self.path) and _file_key(self.path) == self.key:
            return self.path
        cached = Path(tempfile.gettempdir()) / f"heapkit-explore-{self.key}.hkb"
        if not cached.exists():
            tmp = cached.with_suffix(f".{os.getpid()}.tmp")
            tmp.write_bytes(self.data)
            os.replace(tmp, cached)
        return str(cached)


def _file_key(path: str | os.PathLike) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()[:20]


def result_key(trace: str | os.PathLike, exe: str | os.PathLike) -> str:
    """The store's key of *trace*'s results: its content hash and the evaluator binary's. A
    rebuilt evaluator whose dmm changed is another binary, so its results never mix with the
    old ones (an unchanged rebuild gives the same bytes, and keeps the results)."""
    return f"{_file_key(trace)}-{_file_key(exe)[:12]}"


def evaluate_batch(trace: TraceRef | str, configs: Sequence[str], arena: int | None = None,
                   exe: str | os.PathLike | None = None, max_work: int | None = None) -> list[Result]:
    """Replay *trace* once per config text in one evaluator process (a replay whose work
    passes *max_work* stops early with status "capped")."""
    path = trace.local_path() if isinstance(trace, TraceRef) else str(trace)
    argv = [str(exe or binary()), path] + (["--arena", str(arena)] if arena else []) + \
        (["--max-work", str(max_work)] if max_work else [])
    out = _call(argv, "".join(f"{i} {c}\n" for i, c in enumerate(configs)))
    results = []
    for line in out.splitlines():
        f = line.split()
        cfg = configs[int(f[0])]
        if f[1] == "ok":
            results.append(Result(cfg, "ok", int(f[2]), float(f[3]), int(f[4]), int(f[5]),
                                  int(f[6]), int(f[7])))
        elif f[1] == "capped":
            results.append(Result(cfg, "capped", work=int(f[2]), cpu_ns=int(f[4]),
                                  reason=f"work passed {max_work} by record {f[3]}"))
        else:
            results.append(Result(cfg, f[1], reason=" ".join(f[2:])))
    if len(results) != len(configs):
        raise HeapkitError(f"{argv[0]}: {len(results)} results for {len(configs)} configs")
    return results


# --------------------------------------------------------------------------
# SQLite store

_SCHEMA = """
CREATE TABLE IF NOT EXISTS traces (
    key TEXT PRIMARY KEY, name TEXT NOT NULL, app TEXT NOT NULL, path TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS results (
    trace TEXT NOT NULL, config TEXT NOT NULL, status TEXT NOT NULL, failures INTEGER,
    frag REAL, work INTEGER, footprint INTEGER, requested INTEGER, cpu_ns INTEGER, reason TEXT,
    PRIMARY KEY (trace, config)) WITHOUT ROWID;
"""


class Store:
    """Results in SQLite, one row per (trace content key, canonical config text)."""

    def __init__(self, path: str | os.PathLike):
        self.path = str(path)
        try:
            self.db = sqlite3.connect(self.path)
            self.db.executescript(_SCHEMA)
        except sqlite3.DatabaseError as e:
            raise HeapkitError(f"{self.path}: not a usable SQLite results database ({e})") from None

    def close(self) -> None:
        self.db.close()

    def add_trace(self, key: str, name: str, app: str, path: str) -> None:
        self.db.execute("INSERT OR REPLACE INTO traces VALUES (?, ?, ?, ?)", (key, name, app, path))
        self.db.commit()

    def done(self, key: str) -> set[str]:
        return {r[0] for r in self.db.execute("SELECT config FROM results WHERE trace = ?", (key,))}

    def add(self, key: str, results: Iterable[Result]) -> None:
        self.db.executemany(
            "INSERT OR IGNORE INTO results VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [(key, r.config, r.status, r.failures, r.frag, r.work, r.footprint, r.requested,
              r.cpu_ns, r.reason) for r in results])
        self.db.commit()

    def results(self, key: str) -> dict[str, Result]:
        rows = self.db.execute("SELECT config, status, failures, frag, work, footprint, requested, "
                               "cpu_ns, reason FROM results WHERE trace = ?", (key,))
        return {r[0]: Result(*r) for r in rows}

    def count(self) -> int:
        return self.db.execute("SELECT COUNT(*) FROM results").fetchone()[0]


# --------------------------------------------------------------------------
# Running batches: a local thread pool or Dask, one loop

class _LocalPool:
    """Threads, each driving one evaluator process at a time."""

    def __init__(self, jobs: int):
        self.ex = concurrent.futures.ThreadPoolExecutor(max_workers=jobs)
        self.workers = jobs

    def prepare(self, ref: TraceRef) -> TraceRef:
        return ref

    def submit(self, fn, *args):
        return self.ex.submit(fn, *args)

    def as_completed(self, futures):
        return concurrent.futures.as_completed(futures)

    def close(self, cancel: bool = False) -> None:
        self.ex.shutdown(wait=not cancel, cancel_futures=cancel)


class _DaskPool:
    """A Dask distributed client: an existing scheduler, or a LocalCluster of *local* workers.
    Traces travel as bytes (scattered once), so workers need no shared file system, only an
    hk-explore binary of their own ($HEAPKIT_EXPLORE, an installed lab or a built checkout)."""

    def __init__(self, scheduler: str | None, local: int | None, processes: bool = False):
        try:
            from distributed import Client, LocalCluster
        except ImportError:
            raise HeapkitError("explore: Dask is not installed (pip install distributed)") from None
        self.cluster = None
        try:
            if scheduler:
                self.client = Client(scheduler, timeout="20s")
            else:
                self.cluster = LocalCluster(n_workers=local, threads_per_worker=1, processes=processes,
                                            dashboard_address=None, silence_logs=40)
                self.client = Client(self.cluster)
        except (OSError, TimeoutError) as e:
            raise HeapkitError(f"explore: cannot reach the Dask scheduler {scheduler!r}: {e}") from None
        self.workers = max(1, sum(self.client.nthreads().values()))

    def prepare(self, ref: TraceRef) -> TraceRef:
        with open(ref.path, "rb") as f:
            return TraceRef(ref.key, ref.path, f.read())

    def submit(self, fn, *args):
        return self.client.submit(fn, *args, pure=False)

    def as_completed(self, futures):
        from distributed import as_completed
        return as_completed(futures)

    def close(self, cancel: bool = False) -> None:
        self.client.close()
        if self.cluster is not None:
            self.cluster.close()


def _batches(items: list[str], size: int) -> list[list[str]]:
    return [items[i:i + size] for i in range(0, len(items), size)]


@dataclasses.dataclass
class Task:
    """Configurations to evaluate on one trace of one application."""

    app: str
    name: str
    path: str
    configs: Sequence[Config]
    max_work: int | None = None


def run(tasks: Sequence[Task], store: Store, *,
        jobs: int = 2, batch: int | None = None, scheduler: str | None = None,
        dask_local: int | None = None, arena: int | None = None, progress: bool = True,
        exe: str | os.PathLike | None = None) -> dict[str, Any]:
    """Evaluate each task's configs on its trace, skipping what *store* already has.

    Returns {"done_before", "evaluated", "workers", "wall_s", "cpu_ns"} (cpu_ns: the replays'
    summed CPU time). Each finished batch is committed at once, so an interrupted run
    (KeyboardInterrupt) loses only the batches in flight; rerunning resumes."""
    work: list[tuple[TraceRef, str, list[str], int | None]] = []
    done_before = 0
    local_exe = str(exe or binary())
    for task in tasks:
        texts = list(dict.fromkeys(c.text() for c in task.configs))
        key = result_key(task.path, local_exe)
        store.add_trace(key, task.name, task.app, str(task.path))
        done = store.done(key)
        todo = [t for t in texts if t not in done]
        done_before += len(texts) - len(todo)
        work.append((TraceRef(_file_key(task.path), str(task.path)), key, todo, task.max_work))
    total = sum(len(t) for _, _, t, _ in work)
    t0 = time.perf_counter()
    if total == 0:
        return {"done_before": done_before, "evaluated": 0, "workers": 0, "wall_s": 0.0, "cpu_ns": 0}
    pool: _LocalPool | _DaskPool
    if scheduler or dask_local:
        pool = _DaskPool(scheduler, dask_local)
    else:
        pool = _LocalPool(jobs)
    exe = None if (scheduler or dask_local) else local_exe
    size = batch or max(8, min(250, total // (pool.workers * 8) or 8))
    bar = _progress.bar(total=total, desc="explore", unit="cfg", show=progress, smoothing=0.05)
    futures = {}
    cancelled = False
    cpu_ns = 0
    try:
        for ref, key, todo, max_work in work:
            ref = pool.prepare(ref) if todo else ref
            for chunk in _batches(todo, size):
                futures[pool.submit(evaluate_batch, ref, chunk, arena, exe, max_work)] = key
        for fut in pool.as_completed(list(futures)):
            results = fut.result()
            store.add(futures[fut], results)
            cpu_ns += sum(r.cpu_ns for r in results)
            bar.update(len(results))
    except BaseException:
        cancelled = True
        for fut in futures:
            fut.cancel()
        raise
    finally:
        bar.close()
        pool.close(cancel=cancelled)
    return {"done_before": done_before, "evaluated": total, "workers": pool.workers,
            "wall_s": time.perf_counter() - t0, "cpu_ns": cpu_ns}


# --------------------------------------------------------------------------
# The front and the choice

def pareto_front(points: Sequence[tuple[float, float]]) -> list[int]:
    """Indices of the points no other point dominates (both coordinates minimised), sorted by
    the first coordinate. Equal points do not dominate each other: all of them stay."""
    order = sorted(range(len(points)), key=lambda i: (points[i][0], points[i][1], i))
    front: list[int] = []
    best = math.inf
    k = 0
    while k < len(order):
        x = points[order[k]][0]
        group_end = k
        while group_end < len(order) and points[order[group_end]][0] == x:
            group_end += 1
        y = points[order[k]][1]
        if y < best:
            front += [i for i in order[k:group_end] if points[i][1] == y]
            best = y
        k = group_end
    return front


def balanced_point(points: Sequence[tuple[float, float]], front: Sequence[int]) -> int:
    """The most balanced front point, for (fragmentation, cost) points.

    Each axis is measured as the relative excess over the best value on the front: memory
    (1 + fragmentation, i.e. footprint / requested) over the least memory, cost over the
    least cost. The point nearest (0, 0), the utopia point, in Euclidean distance wins: "x %
    more memory than the leanest configuration" weighs the same as "x % more work than the
    fastest". Unlike scaling each axis to [0, 1] over the front's range, this does not blow up
    an axis whose whole range is narrow. Ties: lower fragmentation, then lower index."""
    if not front:
        raise HeapkitError("explore: no feasible configuration (every one failed an allocation)")
    m0 = min(1.0 + points[i][0] for i in front)
    c0 = min(points[i][1] for i in front) or 1.0

    def distance(i: int) -> float:
        return math.hypot((1.0 + points[i][0]) / m0 - 1.0, points[i][1] / c0 - 1.0)

    return min(front, key=lambda i: (distance(i), points[i][0], i))


@dataclasses.dataclass
class AppSummary:
    """One application's exploration: per-trace results, the front and the choice."""

    app: str
    traces: list[tuple[str, str]]              # (name, key)
    configs: list[str]                         # every explored config, in enumeration order
    results: dict[str, dict[str, Result]]      # trace key -> config -> result
    presets: dict[str, Config]
    points: list[tuple[float, float]]          # (mean frag, mean cost) of the feasible configs
    feasible: list[str]                        # configs of points, same order
    front: list[int]
    chosen: str
    cost: str = "work"


def summarize(app: str, traces: Sequence[tuple[str, str]], configs: Sequence[Config],
              preset_cfgs: dict[str, Config], store: Store, cost: str = "work") -> AppSummary:
    """Front and balanced choice of *app* over its traces (mean fragmentation and mean cost)."""
    if cost not in ("work", "time"):
        raise HeapkitError(f"explore: cost must be 'work' or 'time', not {cost!r}")
    field = "work" if cost == "work" else "cpu_ns"
    results = {key: store.results(key) for _, key in traces}
    texts = [c.text() for c in configs]
    points, feasible = [], []
    for t in texts:
        rs = [results[k].get(t) for _, k in traces]
        if all(r is not None and r.feasible for r in rs):
            points.append((sum(r.frag for r in rs) / len(rs), sum(getattr(r, field) for r in rs) / len(rs)))
            feasible.append(t)
    front = pareto_front(points)
    chosen = feasible[balanced_point(points, front)] if front else ""
    return AppSummary(app, list(traces), texts, results, dict(preset_cfgs), points, feasible, front,
                      chosen, cost)


# --------------------------------------------------------------------------
# Firmware: the chosen header compiled for a Cortex-M3

FIRMWARE_MAIN = """\
/* A minimal firmware image around the explored dmm configuration (heapkit explore). */
#include <stddef.h>

#include "heapkit/dmm.h"
#include "explored.h"

/* The explored peak footprint plus room for the heap's control data. */
#ifdef HK_EXPLORED_PEAK_FOOTPRINT
#define ARENA_BYTES (HK_EXPLORED_PEAK_FOOTPRINT + 4096u)
#else
#define ARENA_BYTES 32768u
#endif

static unsigned char arena[ARENA_BYTES] __attribute__((aligned(8)));

int main(void)
{
    hk_status_t status;
    hk_dmm_t *heap = hk_dmm_init(arena, sizeof(arena), &hk_explored_config, &status);
    void *ack;
    void *mtu;
    if (heap == NULL) {
        return 1;
    }
    ack = hk_dmm_malloc(heap, 16);
    mtu = hk_dmm_malloc(heap, 1476);
    hk_dmm_free(heap, ack);
    hk_dmm_free(heap, mtu);
    return hk_dmm_check(heap);
}
"""

FIRMWARE_FLAGS = ["-mcpu=cortex-m3", "-mthumb", "-Os", "-std=c99", "-Wall", "-Wextra", "-Werror",
                  "-ffunction-sections", "-fdata-sections", "--specs=nosys.specs",
                  "-Wl,--gc-sections"]


def firmware_sources() -> list[Path]:
    """The allocator core for a firmware image: src/*.c but the catalog (which names every
    allocator) and the C11 lock-free pool."""
    return sorted(p for p in (native.SOURCE_ROOT / "src").glob("*.c")
                  if p.name not in ("catalog.c", "pool_lockfree.c"))


def build_firmware(header: str | os.PathLike, outdir: str | os.PathLike,
                   cc: str = "arm-none-eabi-gcc") -> tuple[Path, str]:
    """Compile *header* (as explored.h) with the core and a tiny main into OUTDIR/firmware.elf
    for a Cortex-M3; returns the .elf and its ``size`` line. HeapkitError when it fails."""
    if shutil.which(cc) is None:
        raise HeapkitError(f"{cc} not found: install gcc-arm-none-eabi to build the firmware image")
    out = Path(outdir)
    out.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(header, out / "explored.h")
    (out / "main.c").write_text(FIRMWARE_MAIN)
    elf = out / "firmware.elf"
    argv = [cc, *FIRMWARE_FLAGS, f"-I{out}", f"-I{native.SOURCE_ROOT / 'include'}",
            f"-I{native.SOURCE_ROOT / 'src'}", "-o", str(elf), str(out / "main.c"),
            *map(str, firmware_sources())]
    proc = subprocess.run(argv, capture_output=True, text=True)
    if proc.returncode != 0:
        tail = (proc.stdout + proc.stderr).strip().splitlines()[-10:]
        raise HeapkitError(f"firmware build of {header} failed:\n" + "\n".join(tail))
    size = ""
    size_tool = cc.replace("gcc", "size")
    if shutil.which(size_tool):
        lines = subprocess.run([size_tool, str(elf)], capture_output=True, text=True).stdout.splitlines()
        parts = lines[-1].split() if lines else []
        size = f"text {parts[0]} B, data {parts[1]} B, bss {parts[2]} B" if len(parts) >= 3 else ""
    return elf, size


# --------------------------------------------------------------------------
# Tables (the paper's Tables 3-5), plot (Fig. 2), the results document

def _row(s: AppSummary, label: str, config: str) -> dict:
    per = {}
    for name, key in s.traces:
        r = s.results[key].get(config)
        per[name] = None if r is None else {
            "status": r.status, "failures": r.failures, "frag": r.frag, "work": r.work,
            "cpu_ns": r.cpu_ns, "footprint": r.footprint, "requested": r.requested}
    return {"label": label, "config": config, "per_trace": per}


def _avg_row(label: str, rows: list[dict], names: Sequence[str]) -> dict:
    per = {}
    for n in names:
        cells = [r["per_trace"][n] for r in rows if r["per_trace"].get(n) and r["per_trace"][n]["status"] == "ok"]
        per[n] = None if not cells else {
            "status": "ok", "failures": sum(c["failures"] for c in cells),
            **{f: sum(c[f] for c in cells) / len(cells) for f in ("frag", "work", "cpu_ns", "footprint", "requested")}}
    return {"label": label, "config": "", "per_trace": per}


def app_document(s: AppSummary, *, header: str | None = None, plot: str | None = None,
                 firmware: dict | None = None) -> dict:
    """The JSON-ready summary of one application: table rows, front, choice, verdict."""
    names = [n for n, _ in s.traces]
    rows = [_row(s, PRESET_LABELS.get(p, p), s.presets[p].text()) | {"preset": p}
            for p in PRESETS if p in s.presets]
    extra = [_row(s, PRESET_LABELS.get(p, p), s.presets[p].text()) | {"preset": p}
             for p in EXTRA_PRESETS if p in s.presets]
    avg = _avg_row("Avrg. Alloc.", rows, names)
    chosen = _row(s, "Proposed Alloc.", s.chosen) if s.chosen else None
    verdict = _verdict(s, rows, chosen, names)
    front = [{"config": s.feasible[i], "frag": s.points[i][0], "cost": s.points[i][1]} for i in s.front]
    cloud = [[round(x, 6), y] for x, y in s.points]
    return {"app": s.app, "traces": names, "configs": len(s.configs), "feasible": len(s.feasible),
            "cost": s.cost, "rows": rows, "extra_rows": extra, "average": avg, "chosen": chosen,
            "front": front, "cloud": cloud, "verdict": verdict, "techniques": technique_effects(s),
            "technique_pairs": technique_pairs(s),
            "split_minima": split_minima(s), "header": header, "plot": plot, "firmware": firmware}


# The paper's Table 2: each technique on and off, the rest of the chosen configuration kept.
TECHNIQUES = (("freelists", "dedicated lists", "no dedicated lists"), ("fit", "best fit", "first fit"),
              ("split", "split always (9)", "split never (0)"),
              ("coalesce", "coalesce always (9)", "coalesce never (0)"))


def _mean_of(s: AppSummary, text: str) -> dict:
    """A configuration's mean fragmentation and work over the traces; None with the status
    ("not explored", "capped" by the work cap, "refused") where a trace has no full replay of
    it, and feasible False where any replay had a failed allocation."""
    rs = [s.results[k].get(text) for _, k in s.traces]
    if any(r is None or r.status != "ok" for r in rs):
        status = "not explored" if any(r is None for r in rs) else \
            next(r.status for r in rs if r.status != "ok")
        return {"config": text, "status": status, "frag": None, "work": None, "feasible": False}
    return {"config": text, "status": "ok", "frag": sum(r.frag for r in rs) / len(rs),
            "work": sum(r.work for r in rs) / len(rs), "feasible": all(r.feasible for r in rs)}


def technique_effects(s: AppSummary) -> list[dict]:
    """Table 2 from the exploration: for each technique of :data:`TECHNIQUES`, the chosen
    configuration with the technique on and off (everything else as chosen), mean
    fragmentation and work over the traces. The lists a list-less choice gets switched on
    are the first explored choice with two lists (the ACK and MTU modes)."""
    if not s.chosen:
        return []
    c = Config.parse(s.chosen)
    with_lists = c
    if not c.lists:
        two = [x for x in map(Config.parse, s.configs) if len(x.lists) == 2]
        with_lists = dataclasses.replace(c, lists=two[0].lists, class_round=two[0].class_round) \
            if two else None
    pairs = {"freelists": (with_lists, dataclasses.replace(c, lists=(), class_round=0)),
             "fit": (dataclasses.replace(c, fit="best"), dataclasses.replace(c, fit="first")),
             "split": (dataclasses.replace(c, split=9), dataclasses.replace(c, split=0)),
             "coalesce": (dataclasses.replace(c, coalesce=9), dataclasses.replace(c, coalesce=0))}
    out = []
    for name, on_label, off_label in TECHNIQUES:
        on, off = pairs[name]
        out.append({"technique": name, "on_label": on_label, "off_label": off_label,
                    "on": _mean_of(s, on.text()) if on else None, "off": _mean_of(s, off.text())})
    return out


def technique_pairs(s: AppSummary) -> dict[str, list[list[float]]]:
    """Every explored pair of configurations that differ only in one technique of
    :data:`TECHNIQUES` (on as Table 2 switches it on, off as it switches it off), both
    replayed in full on every trace: technique -> [[on frag, on work, off frag, off work]],
    means over the traces, so a technique is judged wherever it acts, not only from the
    chosen configuration."""
    ok = {}
    for text in s.configs:
        m = _mean_of(s, text)
        if m["status"] == "ok":
            ok[text] = m
    out: dict[str, list[list[float]]] = {name: [] for name, _, _ in TECHNIQUES}
    for text, on in ok.items():
        c = Config.parse(text)
        offs = {"freelists": dataclasses.replace(c, lists=(), class_round=0) if c.lists else None,
                "fit": dataclasses.replace(c, fit="first") if c.fit == "best" else None,
                "split": dataclasses.replace(c, split=0) if c.split == 9 else None,
                "coalesce": dataclasses.replace(c, coalesce=0) if c.coalesce == 9 else None}
        for name, off_cfg in offs.items():
            off = ok.get(off_cfg.text()) if off_cfg is not None else None
            if off is not None:
                out[name].append([on["frag"], on["work"], off["frag"], off["work"]])
    return out


def split_minima(s: AppSummary) -> dict[str, float]:
    """The lowest mean fragmentation among the feasible configurations of each split level
    (the paper's point 3: only full splitting really lowers fragmentation)."""
    out: dict[str, float] = {}
    for (frag, _), text in zip(s.points, s.feasible):
        level = str(Config.parse(text).split)
        out[level] = min(frag, out.get(level, math.inf))
    return dict(sorted(out.items(), key=lambda kv: int(kv[0])))


def _verdict(s: AppSummary, rows: list[dict], chosen: dict | None, names: Sequence[str]) -> dict:
    """Whether the choice has lower fragmentation than every preset on every trace; if not,
    which preset beats it and what the front's lowest-fragmentation point costs."""
    if chosen is None:
        return {"beats_all": False, "text": "no feasible configuration: every one failed an allocation"}
    losses = []
    for n in names:
        mine = chosen["per_trace"][n]["frag"]
        for r in rows:
            c = r["per_trace"].get(n)
            if c and c["status"] == "ok" and c["failures"] == 0 and c["frag"] <= mine:
                losses.append((r["label"], n, c["frag"], mine))
    if not losses:
        return {"beats_all": True, "text": "the chosen configuration has lower fragmentation than "
                "every preset on every trace (presets with failed allocations count as beaten)"}
    best = min(s.front, key=lambda i: (s.points[i][0], s.points[i][1]))
    lo_frag, lo_cost = s.points[best]
    ch = s.feasible.index(s.chosen)
    text = ("not on every trace: " + "; ".join(
        f"{lab} has {100 * f:.1f}% against {100 * m:.1f}% on {n}" for lab, n, f, m in losses[:4]) +
        f". The balanced point trades fragmentation for cost ({s.points[ch][1]:.4g} {s.cost}); the "
        f"front's lowest-fragmentation point reaches {100 * lo_frag:.1f}% mean fragmentation at "
        f"{lo_cost:.4g} {s.cost} ({s.feasible[best]}).")
    return {"beats_all": False, "text": text, "lowest_frag_config": s.feasible[best],
            "lowest_frag": lo_frag, "lowest_frag_cost": lo_cost}


# --------------------------------------------------------------------------
# heapkit explore

APPS = ("drr", "easyport", "url-switch")


def _app_traces(app: str, pcaps: Sequence[str], synthetic: Sequence[str], outdir: Path,
                repeat: int | None = None) -> list[tuple[str, str]]:
    """(name, .hkb path) of *app*'s traces: one per pcap (replayed *repeat* times) and one per
    synthetic traffic spec (heapkit/netapps.py), or else the app's default trace."""
    try:
        from . import netapps
    except ImportError:
        raise HeapkitError("explore: --app needs the network applications (heapkit/netapps.py "
                           "is missing from this installation)") from None
    if not pcaps and not synthetic:
        pcap, copies = netapps.DEFAULT_INPUTS[app]
        return [(f"{Path(pcap).stem}x{copies}", str(netapps.default_trace(app)))]
    tdir = outdir / "traces"
    tdir.mkdir(parents=True, exist_ok=True)
    out = []
    for pcap in pcaps:
        if not os.path.isfile(pcap):
            raise HeapkitError(f"{pcap}: no such file")
        name = Path(pcap).name.split(".")[0]
        path = tdir / f"{app}-{name}.hkb"
        netapps.run(app, pcap=pcap, repeat=repeat, emit_trace=path)
        out.append((name, str(path)))
    shapes = [spec.split(",")[0] for spec in synthetic]
    for spec, shape in zip(synthetic, shapes):
        # The shape names the trace, unless two specs share it: then the whole spec does.
        name = shape if shapes.count(shape) == 1 else re.sub(r"[^A-Za-z0-9]+", "-", spec).strip("-")
        path = tdir / f"{app}-{name}.hkb"
        netapps.run(app, synthetic=spec, emit_trace=path)
        out.append((name, str(path)))
    names = [n for n, _ in out]
    if len(set(names)) != len(names):
        raise HeapkitError("explore: two --pcap/--synthetic inputs give the same trace name")
    return out


def _custom_traces(args, outdir: Path) -> list[tuple[str, str]]:
    """(name, .hkb path) of every --trace (imported to OUTDIR/traces unless already binary) and
    --workload (generated there)."""
    return inputs.prepare(args.trace or (), args.workload or (), args.seed, outdir / "traces")


def _space_args(args) -> dict[str, Any]:
    def pick(text: str | None, allowed: Sequence[Any], what: str, conv=str) -> list[Any]:
        if text is None:
            return list(allowed)
        vals = []
        for part in text.split(","):
            part = part.strip()
            try:
                v = conv(part)
            except ValueError:
                v = None
            if v not in allowed:
                raise HeapkitError(f"--{what}: {part!r} is not one of {', '.join(map(str, allowed))}")
            if v not in vals:
                vals.append(v)
        return vals
    if args.quick:
        fits, orders, levels = ["first", "best", "worst"], ["lifo", "address"], [0, 5, 9]
    else:
        fits, orders, levels = list(FITS), list(ORDERS), list(LEVELS)
    return {"fits": pick(args.fits, FITS, "fits") if args.fits else fits,
            "orders": pick(args.orders, ORDERS, "orders") if args.orders else orders,
            "splits": pick(args.levels, LEVELS, "levels", int) if args.levels else levels,
            "coalesces": pick(args.levels, LEVELS, "levels", int) if args.levels else levels,
            "list_sets": args.list_sets, "target": args.target}


def evaluate_groups(groups: dict[str, list[tuple[str, str]]], spaces: dict[str, list[Config]],
                    preset_list: Sequence[Config], store: Store, *, exe: str | os.PathLike,
                    work_cap: float | None = 10.0, progress: bool = True, **run_kw) -> dict[str, Any]:
    """Every application's (name, .hkb path) traces on the presets, then on its space.

    The presets run first, uncapped: the tables need them whole, and they set each trace's
    work cap (*work_cap* x the costliest preset's work there). Returns :func:`run`'s figures
    for the space."""
    run_kw.setdefault("jobs", 2)
    run([Task(app, n, p, preset_list) for app, traces in groups.items() for n, p in traces],
        store, jobs=run_kw["jobs"], arena=run_kw.get("arena"), exe=exe, progress=False)
    tasks = []
    for app, traces in groups.items():
        for name, path in traces:
            done = store.results(result_key(path, exe))
            works = [done[c.text()].work for c in preset_list if c.text() in done]
            cap = int(work_cap * max(works)) if work_cap and works else None
            tasks.append(Task(app, name, path, spaces[app], cap))
    return run(tasks, store, exe=exe, progress=progress, **run_kw)


def main(args) -> int:
    """``heapkit explore``: see the subcommand's help in heapkit/cli.py."""
    t_start = time.perf_counter()
    outdir = Path(args.output)
    try:
        outdir.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise HeapkitError(f"{outdir}: cannot create: {e.strerror or e}") from None
    if args.scheduler and args.dask_local:
        raise HeapkitError("explore: give --scheduler or --dask-local, not both")
    if (args.pcap or args.synthetic) and not args.app:
        raise HeapkitError("explore: --pcap and --synthetic need --app (which application the "
                           "packets feed)")
    groups: dict[str, list[tuple[str, str]]] = {}
    for app in args.app or ():
        groups[app] = _app_traces(app, args.pcap or (), args.synthetic or (), outdir, args.repeat)
    custom = _custom_traces(args, outdir)
    if custom:
        groups[args.name] = custom
    if not groups:
        raise HeapkitError("explore: give --app NAME, --trace FILE or --workload NAME")
    exe = binary()
    preset_cfgs = presets(exe)
    space_kw = _space_args(args)
    store = Store(args.db or outdir / "explore.db")
    spaces, keys = {}, {}
    preset_list = [preset_cfgs[p] for p in PRESETS + EXTRA_PRESETS if p in preset_cfgs]
    for app, traces in groups.items():
        hist: Counter = Counter()
        for _, path in traces:
            hist.update(size_histogram(path))
            keys[path] = result_key(path, exe)
        spaces[app] = enumerate_space(hist, **space_kw)
        print(f"{app}: {len(spaces[app])} configurations x {len(traces)} trace(s) "
              f"({', '.join(n for n, _ in traces)})", file=sys.stderr)
    try:
        stats = evaluate_groups(groups, spaces, preset_list, store, exe=exe, work_cap=args.work_cap,
                                jobs=args.jobs, batch=args.batch, scheduler=args.scheduler,
                                dask_local=args.dask_local, arena=args.arena)
        docs = []
        for app, traces in groups.items():
            s = summarize(app, [(n, keys[p]) for n, p in traces], spaces[app], preset_cfgs, store,
                          args.cost)
            docs.append(_write_app(s, outdir, args, traces))
    finally:
        store.close()
    engine = f"{'Dask ' + (args.scheduler or f'LocalCluster({args.dask_local})') if args.scheduler or args.dask_local else f'local pool of {args.jobs}'}"
    doc_all = {"kind": "heapkit-explore", "version": 1, "cost": args.cost,
               "timing": {**stats, "engine": engine, "configs_per_app": {a: len(c) for a, c in spaces.items()},
                          "total_s": time.perf_counter() - t_start},
               "apps": docs}
    (outdir / "explore.json").write_text(json.dumps(doc_all, indent=1) + "\n")
    page = ("<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>heapkit explore"
            "</title><style>body{font-family:sans-serif;max-width:75em;margin:1em auto}"
            "table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:2px 6px;"
            "text-align:right}td:first-child{text-align:left}</style></head><body>"
            "<h1>heapkit explore: custom-dmm-network Tables 3-5 and Fig. 2</h1>"
            + explore_section(doc_all) + "</body></html>\n")
    (outdir / "explore.html").write_text(page)
    for doc in docs:
        print(f"\n== {doc['app']}: {doc['configs']} configurations, {doc['feasible']} feasible, "
              f"{len(doc['front'])} on the Pareto front")
        header, rows = explore_table_rows(doc)
        print(text_table(header, rows, right=range(1, len(header))))
        if doc["chosen"]:
            print(f"chosen: {doc['chosen']['config']}")
            print(f"header: {doc['header']}" + (f"; firmware: {doc['firmware']['elf']} ({doc['firmware']['text']})"
                                               if doc.get("firmware") else ""))
        print(f"against the presets: {doc['verdict']['text']}")
    rate = stats["evaluated"] / stats["wall_s"] if stats["wall_s"] else 0
    print(f"\nevaluated {stats['evaluated']} (config, trace) pairs in {stats['wall_s']:.1f} s "
          f"({rate:.0f}/s, {engine}); {stats['done_before']} were in the database")
    print(f"wrote {outdir / 'explore.json'}, {outdir / 'explore.html'}")
    return 0


def _write_app(s: AppSummary, outdir: Path, args, traces) -> dict:
    slug = re.sub(r"[^A-Za-z0-9]+", "_", s.app).strip("_").lower() or "app"
    header_path = plot_path = None
    firmware = None
    if s.chosen:
        cfg = Config.parse(s.chosen)
        feet = [s.results[k][s.chosen].footprint for _, k in s.traces]
        frag, cost = s.points[s.feasible.index(s.chosen)]
        comment = [f"heapkit explore: the most balanced dmm configuration for {s.app}",
                   f"traces: {', '.join(n for n, _ in s.traces)}; {len(s.configs)} configurations explored;",
                   f"mean fragmentation {100 * frag:.1f} %, mean {s.cost} {cost:.0f} per trace replay;",
                   "chosen on the Pareto front of fragmentation against "
                   f"{'work' if s.cost == 'work' else 'CPU time'} (nearest the utopia point).",
                   "HK_EXPLORED_PEAK_FOOTPRINT: the most bytes the heap carved from its arena on those",
                   "traces; the arena also needs room for the heap's control data."]
        header_path = outdir / f"chosen-{slug}.h"
        header_path.write_text(c_header(cfg, guard=f"HK_EXPLORED_{slug.upper()}_H", comment=comment,
                                        defines={"HK_EXPLORED_PEAK_FOOTPRINT": max(feet)}))
        if not args.no_firmware and shutil.which("arm-none-eabi-gcc") is None:
            print("heapkit explore: warning: arm-none-eabi-gcc not found, no firmware image built",
                  file=sys.stderr)
        elif not args.no_firmware:
            elf, size = build_firmware(header_path, outdir / f"firmware-{slug}")
            firmware = {"elf": str(elf), "text": size or "built"}
    doc = app_document(s, header=str(header_path) if header_path else None, firmware=firmware)
    plot_path = outdir / f"pareto-{slug}.png"
    plot_path.write_bytes(explore_plot_png(doc))
    doc["plot"] = str(plot_path)
    return doc
