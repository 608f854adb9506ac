# SPDX-License-Identifier: MIT
"""The ``heapkit`` command line.

Subcommands: import, leaks, gen, info, workloads, bench, size, advise (heapkit/advise.py),
trace, report, demo, explore, netapp, kth-release (heapkit/kth_release.py),
fits-cse3320 (heapkit/fits.py).
``trace`` (capture a program), ``report`` and ``demo`` are implemented in
heapkit/capture.py, heapkit/report.py and heapkit/demo.py, each exposing
``run(args: argparse.Namespace) -> int``; bench and size drive the replay
engine through heapkit/engine.py.

Every user error (bad arguments, missing files, malformed traces) ends the
program with one line on stderr, ``heapkit: error: ...``, and status 2.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import inspect
import json
import math
import os
import signal
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Sequence

from . import __version__, inputs, progress, report
from .cliargs import ListAction, byte_size, list_first, parse_bytes, percent, positive_int
from .errors import HeapkitError
from .annotations import side_path
from .boards import TARGETS
from .importers import FORMATS, import_trace
from .render import fmt_ns, text_table
from .report import target_builds, target_description, target_summary_rows
from .trace import form_of_path, read_trace, write_trace
from .workloads import WORKLOADS, get as get_workload

PROG = "heapkit"


# --------------------------------------------------------------------------
# argparse that reports in one line

class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # type: ignore[override]
        hint = f" (see '{self.prog} --help')"
        raise _UsageError(f"{message}{hint}")


class _UsageError(Exception):
    pass


def _die(message: str) -> int:
    print(f"{PROG}: error: {message}", file=sys.stderr)
    return 2


# --------------------------------------------------------------------------
# helpers

def _parse_params(workload: str, items: Sequence[str] | None) -> dict[str, Any]:
    defaults = get_workload(workload).params()
    out: dict[str, Any] = {}
    for item in items or ():
        key, eq, value = item.partition("=")
        key = key.strip()
        if not eq or not key:
            raise HeapkitError(f"--param expects KEY=VALUE, got {item!r}")
        if key not in defaults:
            raise HeapkitError(f"{workload}: unknown parameter {key!r} "
                               f"(has: {', '.join(defaults)})")
        kind = type(defaults[key])
        try:
            if key in get_workload(workload).byte_params:
                out[key] = parse_bytes(value)
            else:
                out[key] = kind(value) if kind is not bool else value.lower() in ("1", "true", "yes")
        except ValueError:
            what = ("a byte size (N, NK, NM or NG)" if key in get_workload(workload).byte_params
                    else "an integer" if kind is int else kind.__name__)
            raise HeapkitError(f"{workload}: parameter {key} expects {what}, got {value!r}") from None
    return out


def _engine():
    if importlib.util.find_spec("heapkit.engine") is None:
        raise HeapkitError("the replay engine is not available (heapkit/engine.py is "
                           "missing; build lab/engine and reinstall)")
    try:
        return importlib.import_module("heapkit.engine")
    except ImportError as e:
        raise HeapkitError(f"the replay engine failed to load: {e}") from None


def _arena_allocators() -> list[str]:
    """The engine's allocators that live in an arena: the ones a size search can size."""
    engine = _engine()
    inside = engine.arena_allocators()
    return [a for a in engine.list_allocators() if a in inside]


def _plugin(name: str, what: str):
    """heapkit.<name>, or a clear error when that module is not installed."""
    if importlib.util.find_spec(f"heapkit.{name}") is None:
        raise HeapkitError(f"'heapkit {what}' is not available in this installation "
                           f"(heapkit/{name}.py is missing)")
    return importlib.import_module(f"heapkit.{name}")


def _human_bytes(n: float | None) -> str | None:
    if n is None:
        return None
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(n) < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return None


# --------------------------------------------------------------------------
# reading engine results

def _flatten(d: Any, prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    if isinstance(d, dict):
        for k, v in d.items():
            out.update(_flatten(v, f"{prefix}{k}".lower() + "."))
    elif isinstance(d, (int, float)) and not isinstance(d, bool):
        out[prefix[:-1]] = d
    return out


def _find(flat: dict[str, Any], want_all: Sequence[str], last: Sequence[str],
          avoid: Sequence[str] = ()) -> Any:
    """First number whose dotted key contains all of *want_all*, none of
    *avoid*, and whose last component is one of *last* (in that order of
    preference)."""
    for name in last:
        for key, value in flat.items():
            parts = key.split(".")
            head = ".".join(parts[:-1])
            if parts[-1] != name:
                continue
            if all(w in key for w in want_all) and not any(a in head for a in avoid):
                return value
    return None


def _at(d: Any, path: str) -> Any:
    for part in path.split("."):
        if not isinstance(d, dict) or part not in d:
            return None
        d = d[part]
    return d if isinstance(d, (int, float)) and not isinstance(d, bool) else None


# Where the engine's result (docs/results-format.md, "heapkit-replay" v1)
# keeps each column; _find() below is the fallback for other layouts.
_BENCH_PATHS = {
    "ops": "replay.completed_records",
    "failures": "replay.failures.total",
    "malloc_p50": "replay.timing.malloc.p50",
    "malloc_p99": "replay.timing.malloc.p99",
    "malloc_max": "replay.timing.malloc.max",
    "free_p50": "replay.timing.free.p50",
    "free_max": "replay.timing.free.max",
    "peak_footprint": "replay.memory.peak_footprint",
    "step_ns": "replay.timing.step_ns",
}


def bench_row(result: dict) -> dict[str, Any]:
    """The table columns of one engine.replay() result.

    Read from the engine's layout (``replay.timing.malloc.p50``,
    ``replay.fragmentation.jw4`` as a fraction, ...); for a result in
    another layout, the first number under a similar key is used.
    """
    flat = _flatten(result)
    row: dict[str, Any] = {k: _at(result, p) for k, p in _BENCH_PATHS.items()}
    jw4 = _at(result, "replay.fragmentation.jw4")
    row["frag4_pct"] = None if jw4 is None else 100.0 * jw4
    if row["ops"] is None:
        row["ops"] = _find(flat, [], ["completed_records", "ops", "events", "records"])
    if row["failures"] is None:
        row["failures"] = _find(flat, ["fail"], ["total", "failures", "failed", "fail_count"])
    for op, avoid in (("malloc", ("realloc", "free")), ("free", ())):
        for stat, names in (("p50", ["p50", "p50_ns", "median"]), ("p99", ["p99", "p99_ns"]),
                            ("max", ["max", "max_ns"])):
            if row.get(f"{op}_{stat}", 0) is None:
                row[f"{op}_{stat}"] = _find(flat, [op], names, avoid)
    if row["frag4_pct"] is None:
        frac = _find(flat, ["frag"], ["jw4", "frag4", "measure4", "m4"])
        row["frag4_pct"] = None if frac is None else 100.0 * frac
    if row["peak_footprint"] is None:
        row["peak_footprint"] = _find(flat, [], ["peak_footprint", "footprint", "high_water"])
    return row


def size_row(result: dict) -> tuple[Any, Any]:
    """(min_arena, peak_live_requested) of one engine.size_search() result."""
    for base in ("search.", ""):
        arena = _at(result, base + "min_arena")
        peak = _at(result, base + "peak_live_requested")
        if arena is not None or peak is not None:
            return arena, peak if peak is not None else _at(result, "trace.peak_live_requested")
    return None, _at(result, "trace.peak_live_requested")


def _num(v: Any, fmt: str = "{:.0f}") -> str | None:
    return None if v is None else fmt.format(v)


# --------------------------------------------------------------------------
# commands

def cmd_import(args: argparse.Namespace) -> int:
    if form_of_path(args.output) is None:
        raise HeapkitError(f"{args.output}: output name must end in .hkt, .hkt.gz or .hkb")
    res = import_trace(args.src, args.format)
    write_trace(res.trace, args.output)
    side = None
    if res.annotations is not None:
        side = side_path(args.output)
        res.annotations.save(side)
    if not args.quiet:
        print(f"wrote {args.output}" + (f" and {side}" if side else ""))
        for line in res.summary_lines():
            print("  " + line)
    return 0


def cmd_leaks(args: argparse.Namespace) -> int:
    from .annotations import Annotations
    from .leaks import Symbolizer, analyse, render, task_series
    res = import_trace(args.trace, "auto")
    ann = res.annotations
    if ann is None:
        side = side_path(args.trace)
        if not os.path.exists(side):
            raise HeapkitError(f"{args.trace}: no side table ({side}) with callers and tasks; "
                               "import the recorder's output with `heapkit import` or record with "
                               "`heapkit trace`")
        ann = Annotations.load(side, len(res.trace))
    sym = Symbolizer(args.elf) if args.elf else None
    report = analyse(res.trace, ann, args.checkpoint, sym)
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        print("\n".join(render(report)))
    if args.html:
        from . import leaks_html
        path = leaks_html.write(report, task_series(res.trace, ann), args.html,
                                f"heapkit leaks: {Path(args.trace).name}")
        print(f"wrote {path}", file=sys.stderr)
    return 0


def _allocs(args: argparse.Namespace, most: int) -> list[str]:
    names = [a for a in (args.alloc or "").split(",") if a]
    if len(names) > most:
        raise HeapkitError(f"--alloc: at most {most} allocators side by side, got {len(names)}")
    inside = _arena_allocators()
    bad = [a for a in names if a not in inside]
    if bad:
        raise HeapkitError(f"--alloc: {', '.join(bad)}: not an arena allocator of this engine "
                           f"(choose from {', '.join(inside)})")
    return names


def cmd_view(args: argparse.Namespace) -> int:
    from . import view
    if args.follow:
        import shlex
        rc = view.follow(args.trace, _allocs(args, 2), args.output, shlex.split(args.run or ""), port=args.port,
                         arena=args.arena, elf=args.elf, checkpoint=args.checkpoint,
                         announce=lambda m: print(m, file=sys.stderr, flush=True))
        print(f"wrote {args.output}", file=sys.stderr)
        return rc
    if args.run or args.port:
        raise HeapkitError("view: --run and --port go with --follow")
    size = view.write(args.trace, _allocs(args, 2), args.output, arena=args.arena, elf=args.elf,
                      checkpoint=args.checkpoint)
    print(f"wrote {args.output} ({size:,} bytes)", file=sys.stderr)
    return 0


def cmd_export(args: argparse.Namespace) -> int:
    from . import export
    export.write(args.trace, args.format, args.output, allocs=_allocs(args, 8), arena=args.arena,
                 elf=args.elf)
    print(f"wrote {args.output}", file=sys.stderr)
    return 0


def cmd_gen(args: argparse.Namespace) -> int:
    if form_of_path(args.output) is None:
        raise HeapkitError(f"{args.output}: output name must end in .hkt, .hkt.gz or .hkb")
    params = _parse_params(args.workload, args.param)
    try:
        trace = get_workload(args.workload).generate(args.seed, **params)
    except OverflowError:
        raise HeapkitError(f"{args.workload}: a parameter gives sizes or counts beyond 32 bits") from None
    write_trace(trace, args.output)
    if not args.quiet:
        st = trace.stats()
        print(f"wrote {args.output}: {st.events} events, {st.ids} ids, "
              f"peak live {st.peak_live_bytes} bytes, {st.threads} thread(s)")
    return 0


def cmd_info(args: argparse.Namespace) -> int:
    res = import_trace(args.trace, args.format)
    st = res.trace.stats()
    if args.json:
        d = st.as_dict()
        if res.format != "heapkit":
            d["import"] = res.as_dict()
        print(json.dumps(d, indent=2))
        return 0
    print(f"{args.trace}" + ("" if res.format == "heapkit" else f" (imported from {res.format})"))
    for line in st.lines():
        print("  " + line)
    if res.format != "heapkit":
        for line in res.summary_lines()[3:]:
            print("  " + line)
    return 0


def cmd_workloads(args: argparse.Namespace) -> int:
    if args.name:
        w = get_workload(args.name)
        print(f"{w.name}: {w.summary}\n")
        print("parameters (default, upper bound; byte sizes also as 64K, 1M, ...):")
        for k, v in w.params().items():
            print(f"  {k}={v} (at most {w.maxima[k]:,}{', bytes' if k in w.byte_params else ''})")
        print("\n" + inspect.cleandoc(w.func.__doc__ or ""))
        return 0
    width = max(map(len, WORKLOADS))
    for w in WORKLOADS.values():
        print(f"{w.name.ljust(width)}  {w.summary}")
        print(f"{' ' * width}  params: " + " ".join(f"{k}={v}" for k, v in w.params().items()))
    return 0


def _selected(args: argparse.Namespace, engine, allowed: Sequence[str] | None = None
              ) -> tuple[list[str], list[tuple[str, str]], Any]:
    """Allocators, (name, .hkb path) pairs and the temp dir holding generated files.

    *allowed*: the allocators the command can run (default: every one the engine has);
    the others are skipped, and named on stderr.
    """
    available = list(engine.list_allocators())
    usable = available if allowed is None else [a for a in available if a in allowed]
    if args.alloc:
        allocs = [a.strip() for a in args.alloc.split(",") if a.strip()]
        unknown = [a for a in allocs if a not in available]
        if unknown and all(a in engine.PEERS for a in unknown):
            raise HeapkitError(engine.missing_peers(unknown))
        if unknown:
            raise HeapkitError(f"unknown allocator(s) {', '.join(unknown)} "
                               f"(available: {', '.join(available)})")
    else:
        allocs = available
    skipped = [a for a in allocs if a not in usable]
    allocs = [a for a in allocs if a in usable]
    if skipped:
        print(f"{PROG} {args.subcommand}: skipping {', '.join(skipped)}: no arena to size "
              "(the process heap serves them)", file=sys.stderr)
    if not allocs:
        raise HeapkitError("no allocators to run")
    if not args.trace and not args.workload:
        raise HeapkitError("give at least one --trace FILE or --workload NAME")
    tmp = tempfile.TemporaryDirectory(prefix="heapkit-")
    try:
        return allocs, inputs.prepare(args.trace or (), args.workload or (), args.seed, tmp.name), tmp
    except BaseException:
        tmp.cleanup()
        raise


def _run_engine(what: str, func, alloc: str, name: str, *a, **kw):
    try:
        return func(*a, **kw)
    except Exception as e:   # the engine's own failures: report, no traceback
        raise HeapkitError(f"{what} of {name} with {alloc} failed: {e}") from None


def _run_selected(args: argparse.Namespace, engine, what: str, func, desc: str,
                  extra: dict[str, Any], allowed: Sequence[str] | None = None, *,
                  sized: bool = True, **kw
                  ) -> tuple[list[str], list[tuple[str, str]], list[dict]]:
    """Run *func* (an engine method, called as func(path, alloc, progress=..., **kw)) on every
    selected (allocator, trace) pair behind a bar counting records (of a known total when
    *sized*: each run replays its trace once); the allocators, the traces and one run dict
    per pair (*extra*'s keys between "trace" and "result")."""
    allocs, traces, tmp = _selected(args, engine, allowed)
    runs = []
    with tmp:
        pairs = [(a, t) for t in traces for a in allocs]
        total = sum(inputs.records(path) for _, (_, path) in pairs) if sized else None
        with progress.bar(total=total, desc=desc, unit="rec", unit_scale=True) as bar:
            for alloc, (name, path) in pairs:
                bar.set_postfix_str(f"{alloc} on {name}", refresh=False)
                result = _run_engine(what, func, alloc, name, path, alloc,
                                     progress=progress.reporter(bar), **kw)
                runs.append({"allocator": alloc, "trace": name, **extra, "result": result})
    return allocs, traces, runs


def cmd_bench(args: argparse.Namespace) -> int:
    if args.target:
        return _bench_target(args)
    engine = _engine()
    kw = {"series": args.series}
    if args.arena is not None:
        kw["arena"] = args.arena
    _, _, runs = _run_selected(args, engine, "replay", engine.replay, "bench",
                               {"arena": args.arena}, **kw)
    rows = []
    for r in runs:
        m = bench_row(r["result"] if isinstance(r["result"], dict) else {})
        ns = [fmt_ns(m[k], m["step_ns"]) if m[k] is not None else None
              for k in ("malloc_p50", "malloc_p99", "malloc_max", "free_p50", "free_max")]
        rows.append([r["allocator"], r["trace"], _num(m["ops"]), _num(m["failures"]), *ns,
                     _num(m["frag4_pct"], "{:.1f}"), _human_bytes(m["peak_footprint"])])
    header = ["allocator", "trace", "ops", "failures", "malloc p50 ns", "malloc p99 ns",
              "malloc max ns", "free p50 ns", "free max ns", "frag #4 %", "peak footprint"]
    print(text_table(header, rows, right=set(range(2, len(header)))))
    print(_engine_throughput(runs))
    if args.json:
        _write_json(args.json, {"kind": "heapkit-bench", "version": 1,
                                "machine": engine.machine(), "runs": runs})
    return 0


def _bench_target(args: argparse.Namespace) -> int:
    """`heapkit bench --target cortex-m3|rv32`: the host replays (timings, unless
    --no-host) and the target's instruction counts, side by side."""
    target = _plugin("target", "bench --target")
    t = target.get_target(args.target)
    opts = target.parse_opts(args.opt)
    hardening = target.parse_hardening(args.hardening)
    arena = target.check_arena(args.arena, t) if args.arena else target.ARENA_SIZE
    allocs = [a.strip() for a in args.alloc.split(",") if a.strip()] if args.alloc else None
    if not args.trace and not args.workload and not args.worst_case:
        raise HeapkitError("give at least one --trace FILE, --workload NAME or --worst-case")
    with tempfile.TemporaryDirectory(prefix="heapkit-") as tmp:
        named = inputs.prepare(args.trace or (), args.workload or (), args.seed, tmp)
        traces: list[tuple] = [(name, read_trace(path)) for name, path in named]
        if args.worst_case:
            traces += target.worst_case_traces(arena)
        data = target.bench(traces, allocs, opts, jobs=args.jobs, progress=True, target=t,
                            arena=arena, hardening=hardening, uniform=args.uniform)
        host: dict[tuple[str, str], dict] = {}
        if not args.no_host and named:
            engine = _engine()
            on_host = set(engine.list_allocators())
            names = {r["allocator"] for r in data["runs"] if r.get("result")}
            kw = {"arena": arena} if args.arena else {}
            pairs = [(a, name, path) for name, path in named for a in sorted(names & on_host)]
            with progress.bar(total=sum(inputs.records(p) for _, _, p in pairs), desc="host",
                              unit="rec", unit_scale=True) as bar:
                for a, name, path in pairs:
                    res = _run_engine("replay", engine.replay, a, name, path, a,
                                      progress=progress.reporter(bar), **kw)
                    host[(a, name)] = bench_row(res)
        data["host"] = [{"allocator": a, "trace": tr, **row} for (a, tr), row in host.items()]
    for name, why in data["skipped_traces"].items():
        print(f"skipped {name}: {why}", file=sys.stderr)
    print(target_description(data))
    for build in target_builds(data):
        rows = []
        for r in data["runs"]:
            if r.get("build", r["opt"]) != build:
                continue
            if r.get("result") is None:
                rows.append([r["allocator"], r["trace"]] + [None] * 10 + [f"skipped: {r['skipped']}"])
                continue
            st, res = r["stats"], r["result"]
            h = host.get((r["allocator"], r["trace"]), {})
            rows.append([r["allocator"], r["trace"], res["failures"]["total"],
                         st["malloc"]["p50"], st["malloc"]["p999"], st["malloc"]["max"],
                         st["free"]["p50"], st["free"]["max"], st["realloc"]["max"],
                         sum(res["errors"].values()),
                         *[fmt_ns(h[k], h.get("step_ns")) if h.get(k) is not None else None
                           for k in ("malloc_p50", "free_p50")], ""])
        print(f"\n{t.name} {build}: per trace")
        print(text_table(["allocator", "trace", "fail", "malloc p50", "malloc p99.9", "malloc max",
                          "free p50", "free max", "realloc max", "errors", "host malloc p50 ns",
                          "host free p50 ns", "note"], rows, right=set(range(2, 12))))
    for build in target_builds(data):
        rows = [[r["allocator"], r["malloc_p50"], r["malloc_max"], r["free_p50"], r["free_max"],
                 r["worst_malloc"], r["worst_free"], r["text"], r["failures"], r["corrupt"]]
                for r in target_summary_rows(data, build)]
        print(f"\n{t.name} {build}: over all traces (instructions; worst path = directed test)")
        print(text_table(["allocator", "malloc p50", "malloc max", "free p50", "free max",
                          "worst-path malloc", "worst-path free", ".text bytes", "failures", "errors"],
                         rows, right=set(range(1, 10))))
    if args.json:
        _write_json(args.json, data)
    return 0


def _engine_throughput(runs: list[dict]) -> str:
    """One line: records replayed per CPU second by the engine's replay loop, over all runs."""
    records = cpu = 0.0
    for r in runs:
        res = r["result"] if isinstance(r["result"], dict) else {}
        replay = res.get("replay") or {}
        spent = (replay.get("engine_time") or {}).get("replay_cpu_s")
        if spent:
            records += replay.get("completed_records") or 0
            cpu += spent
    if cpu <= 0:
        return "engine: no replay time recorded"
    return (f"engine: {records:,.0f} records replayed in {cpu:.2f} s CPU, "
            f"{records / cpu / 1e6:.2f} M records/s per core (timing, pattern checks and "
            f"fragmentation bookkeeping included)")


# `heapkit size --margin`'s default: the headroom docs/firmware-trace.md explains.
SIZE_MARGIN_PCT = 10


def advised_arena(min_arena: int, margin_pct: float) -> int:
    """min_arena plus margin_pct percent, rounded up to 8 bytes (every heap's granule divides it)."""
    return -(-math.ceil(min_arena * (100 + margin_pct) / 100) // 8) * 8


def cmd_size(args: argparse.Namespace) -> int:
    engine = _engine()
    allocs, traces, runs = _run_selected(args, engine, "size search", engine.size_search,
                                         "size", {}, engine.arena_allocators(), sized=False)
    margin = args.margin
    rows, ratios = [], {a: [] for a in allocs}
    for r in runs:
        arena, peak = size_row(r["result"] if isinstance(r["result"], dict) else {})
        ratio = arena / peak if arena and peak else None
        if ratio is not None:
            ratios[r["allocator"]].append(ratio)
        r["ratio"] = ratio
        rows.append([r["allocator"], r["trace"], _num(arena), _num(peak),
                     _num(ratio, "{:.3f}")])
        if margin is not None:
            r["advised"] = advised_arena(arena, margin) if arena else None
            rows[-1].append(_num(r["advised"]))
    header = ["allocator", "trace", "min arena", "peak live", "ratio"]
    if margin is not None:
        header.append(f"advised (+{margin:g} %)")
    print(text_table(header, rows, right=set(range(2, len(header)))))
    print()
    gm_rows = []
    geomeans = {}
    for a in allocs:
        xs = ratios[a]
        gm = math.exp(sum(map(math.log, xs)) / len(xs)) if xs else None
        geomeans[a] = gm
        gm_rows.append([a, _num(gm, "{:.3f}"), f"{len(xs)}/{len(traces)}"])
    print(text_table(["allocator", "geomean ratio", "traces"], gm_rows, right={1, 2}))
    if args.json:
        _write_json(args.json, {"kind": "heapkit-size", "version": 1,
                                "machine": engine.machine(), "runs": runs,
                                "geomean_ratio": geomeans})
    return 0


def _write_json(path: str, data: Any) -> None:
    try:
        with open(path, "w", encoding="utf-8") as f:
            json.dump(data, f, indent=2, default=_json_default)
            f.write("\n")
    except OSError as e:
        raise HeapkitError(f"{path}: cannot write: {e.strerror or e}") from None


def _json_default(o: Any):
    try:
        import numpy as np
        if isinstance(o, np.generic):
            return o.item()
        if isinstance(o, np.ndarray):
            return o.tolist()
    except ImportError:  # pragma: no cover
        pass
    raise TypeError(f"not JSON serialisable: {type(o).__name__}")


def cmd_advise(args: argparse.Namespace) -> int:
    return int(_plugin("advise", "advise").run(args) or 0)


def cmd_trace(args: argparse.Namespace) -> int:
    return int(_plugin("capture", "trace").run(args) or 0)


def cmd_report(args: argparse.Namespace) -> int:
    paths = list(args.results_pos or []) + list(args.results_opt or [])
    t0 = time.perf_counter()
    if paths:
        data = report.load(paths)
    else:
        print("heapkit report: no --results given, running the demo runs first "
              f"({'quick' if args.quick else 'full'})", file=sys.stderr)
        data = _plugin("demo", "report").collect(quick=args.quick)
    if not (data["runs"] or data["size_runs"] or data["extra"].get("explore") or data.get("target")
            or data.get("advice")):
        raise HeapkitError("the results hold no runs")
    path = report.write_report(data, args.output, args.title, workers=2, progress=True)
    print(f"wrote {path} ({path.stat().st_size / 1e6:.1f} MB, "
          f"{time.perf_counter() - t0:.1f} s)")
    return 0


def cmd_demo(args: argparse.Namespace) -> int:
    return int(_plugin("demo", "demo").run(args) or 0)


def cmd_netapp(args: argparse.Namespace) -> int:
    return int(_plugin("netapps", "netapp").run_cli(args) or 0)


def cmd_explore(args: argparse.Namespace) -> int:
    return int(_plugin("explore", "explore").main(args) or 0)


def cmd_kth_release(args: argparse.Namespace) -> int:
    return int(_plugin("kth_release", "kth-release").run(args) or 0)


def cmd_fits_cse3320(args: argparse.Namespace) -> int:
    return int(_plugin("fits", "fits-cse3320").run(args) or 0)


# --------------------------------------------------------------------------
# parser

def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog=PROG, description="heapkit lab: allocation traces, workloads, "
                "and replays that show which allocator fits a workload.")
    p.add_argument("--version", action="version", version=f"{PROG} {__version__}")
    sub = p.add_subparsers(dest="subcommand", metavar="COMMAND", parser_class=_Parser)
    sub.required = True

    s = sub.add_parser("import", help="convert an external allocation log to a heapkit trace",
                       description="Convert a wee_alloc trace, an Android memory_replay dump "
                       "(text or .zip), glibc mtrace output, valgrind --trace-malloc=yes "
                       "output (any of them may be gzipped) or a firmware recorder's stream or "
                       "buffer dump (ports/trace/; its callers, tasks and checkpoints go to "
                       "OUT.side.npz) to a heapkit trace. The output "
                       "name picks the encoding: .hkt, .hkt.gz or .hkb.")
    s.add_argument("src", metavar="SRC", help="file to import")
    s.add_argument("-o", "--output", required=True, metavar="OUT", help="trace to write")
    s.add_argument("--format", choices=("auto",) + FORMATS, default="auto",
                   help="input format (default: detect from the content)")
    s.add_argument("-q", "--quiet", action="store_true", help="print nothing on success")
    s.add_argument("--list", action=ListAction)
    s.set_defaults(func=cmd_import)

    s = sub.add_parser("leaks", help="blocks left live, by caller and task; per-task peaks",
                       description="List the blocks a trace leaves live at the end, grouped "
                       "by caller and task with count and bytes; with --checkpoint, those "
                       "allocated after it and never freed apart from the long-lived ones "
                       "allocated before it. Per task: allocations and peak live bytes. "
                       "TRACE is a firmware recorder's output or a heapkit trace with its "
                       "TRACE.side.npz (heapkit import, heapkit trace).")
    s.add_argument("trace", metavar="TRACE")
    s.add_argument("--elf", metavar="FIRMWARE.elf",
                   help="name callers as function (file:line) from this ELF's DWARF")
    s.add_argument("--checkpoint", metavar="N|LABEL",
                   help="a checkpoint's label (hk_trace_mark) or a record number")
    s.add_argument("--json", action="store_true", help="print the report as JSON")
    s.add_argument("--html", metavar="FILE",
                   help="also write the report as one HTML page, with a plot of each task's live "
                   "bytes over the trace")
    s.set_defaults(func=cmd_leaks)

    s = sub.add_parser("view", help="one self-contained HTML page to explore a trace",
                       description="Write one HTML page (no network, no server) with a zoomable "
                       "timeline of live bytes and of each allocator's footprint, largest free "
                       "block, free blocks and fragmentation; the allocator's arena at the cursor, "
                       "blocks coloured by caller, task, size or age; who holds memory at the "
                       "cursor and at the peak; and the leaks. docs/viewer.md.")
    s.add_argument("trace", metavar="TRACE", help="a heapkit trace, a firmware recorder's output or "
                   "any format heapkit import reads")
    s.add_argument("--alloc", default="tlsf", metavar="A[,B]",
                   help="the allocator(s) the engine replays the trace on, two side by side "
                   "(default tlsf)")
    s.add_argument("--arena", type=byte_size, metavar="BYTES",
                   help="arena size (default: the engine's, 4 x peak live requested)")
    s.add_argument("--elf", metavar="FIRMWARE.elf",
                   help="name callers as function (file:line) from this ELF's DWARF")
    s.add_argument("--checkpoint", metavar="N|LABEL",
                   help="leaks: blocks allocated after this checkpoint (default: the start)")
    s.add_argument("-o", "--output", required=True, metavar="VIEW.html",
                   help="page to write (with --follow: when the firmware ends)")
    s.add_argument("--follow", action="store_true",
                   help="TRACE is a firmware recorder's stream being written: serve the page on "
                   "127.0.0.1, updated as records arrive, while --run's command (e.g. QEMU running "
                   "the firmware) runs; without one until Ctrl-C")
    s.add_argument("--port", type=int, default=0, metavar="N",
                   help="--follow: the port on 127.0.0.1 (default: any free one)")
    s.add_argument("--run", metavar="'COMMAND ARGS'",
                   help="--follow: the command that writes TRACE (one string, split as a shell would)")
    s.add_argument("--list", action=ListAction, names={"--alloc": _arena_allocators})
    s.set_defaults(func=cmd_view)

    s = sub.add_parser("export", help="a trace for massif, heaptrack or Perfetto",
                       description="Write a trace in the format of a free heap viewer: massif "
                       "(ms_print, massif-visualizer), heaptrack (heaptrack_print, heaptrack_gui; "
                       "a .gz name is compressed) or perfetto (counter tracks per allocator and "
                       "per task, for ui.perfetto.dev or trace_processor). docs/viewer.md.")
    s.add_argument("trace", metavar="TRACE")
    s.add_argument("--format", required=True, choices=("massif", "heaptrack", "perfetto"))
    s.add_argument("--alloc", default="tlsf", metavar="A[,B...]",
                   help="perfetto: the allocators whose counters to add (default tlsf)")
    s.add_argument("--arena", type=byte_size, metavar="BYTES", help="perfetto: the replays' arena size")
    s.add_argument("--elf", metavar="FIRMWARE.elf",
                   help="name callers as function (file:line) from this ELF's DWARF")
    s.add_argument("-o", "--output", required=True, metavar="FILE")
    s.add_argument("--list", action=ListAction, names={"--alloc": _arena_allocators})
    s.set_defaults(func=cmd_export)

    s = sub.add_parser("gen", help="generate a synthetic workload trace",
                       description="Generate a workload trace (see 'heapkit workloads'). "
                       "The same seed and parameters always give the same bytes.")
    s.add_argument("workload", metavar="WORKLOAD", choices=list(WORKLOADS),
                   help="one of: " + ", ".join(WORKLOADS))
    s.add_argument("-o", "--output", required=True, metavar="OUT",
                   help="trace to write (.hkt, .hkt.gz or .hkb)")
    s.add_argument("--seed", type=int, default=1, help="random seed (default 1)")
    s.add_argument("-p", "--param", action="append", metavar="KEY=VALUE",
                   help="set a workload parameter; repeatable")
    s.add_argument("-q", "--quiet", action="store_true", help="print nothing on success")
    s.add_argument("--list", action=ListAction)
    s.set_defaults(func=cmd_gen)

    s = sub.add_parser("info", help="summarise a trace",
                       description="Print a trace's summary: events by type, peak live "
                       "requested bytes, max size, threads. External formats are imported "
                       "on the fly.")
    s.add_argument("trace", metavar="TRACE")
    s.add_argument("--format", choices=("auto",) + FORMATS, default="auto",
                   help="input format (default: detect)")
    s.add_argument("--json", action="store_true", help="print JSON")
    s.add_argument("--list", action=ListAction)
    s.set_defaults(func=cmd_info)

    s = sub.add_parser("workloads", help="list the workload generators",
                       description="List the workload generators and their parameters, or "
                       "describe one in full.")
    s.add_argument("name", nargs="?", metavar="NAME", help="describe this workload")
    s.set_defaults(func=cmd_workloads)

    def selection(s: argparse.ArgumentParser, **names: Any) -> None:
        s.add_argument("--alloc", metavar="A,B,...",
                       help="allocators to run, comma-separated (default: all)")
        s.add_argument("--list", action=ListAction, names=names)
        s.add_argument("--trace", nargs="+", action="extend", metavar="FILE",
                       help="trace files (heapkit or any importable format)")
        s.add_argument("--workload", nargs="+", action="extend", metavar="NAME",
                       choices=list(WORKLOADS), help="workloads to generate (default params)")
        s.add_argument("--seed", type=int, default=1, help="seed for --workload (default 1)")
        s.add_argument("--json", metavar="OUT", help="save all results as JSON")

    s = sub.add_parser("bench", help="replay traces against allocators",
                       description="Replay every trace/workload against every allocator "
                       "and print: allocator, trace, ops, failures, malloc p50/p99/max ns, "
                       "free p50/max ns, fragmentation (Johnstone-Wilson measure #4) and "
                       "peak footprint.")
    selection(s, **{"--alloc": lambda: _engine().list_allocators(),
                    "--target": lambda: list(TARGETS)})
    s.add_argument("--arena", type=byte_size, metavar="BYTES",
                   help="arena size, e.g. 65536 or 64K (default: the engine's, refused at the "
                   "engine's memory limit, 1 GiB or the available memory; with --target, the "
                   "target's arena, 16 MiB by default, and the host replays' as well)")
    s.add_argument("--series", type=positive_int, default=200, metavar="N",
                   help="points of the time series the engine records (default 200)")
    s.add_argument("--target", metavar="TARGET",
                   help="also replay on an emulated target and print exact instructions per "
                   "call next to the host timings: cortex-m3 (QEMU mps2-an385) or rv32 "
                   "(QEMU virt, RV32IMAC); see lab/target/ and docs/benchmarks.md")
    s.add_argument("--opt", metavar="O2,Os",
                   help="--target: optimisation levels to build: O2, Os, O0 (default: O2,Os)")
    s.add_argument("--hardening", metavar="N[,N...]",
                   help="--target: build heapkit once per HK_HARDENING level (0-3) and label "
                   "the results with it (default: one build, the sources' default level)")
    s.add_argument("--uniform", action="store_true",
                   help="--target: also measure every catalog allocator through the uniform "
                   "layer (hk_malloc, hk_free, ...: rows NAME-uniform; tlsf-uniform always runs)")
    s.add_argument("--worst-case", action="store_true",
                   help="--target: add the directed worst-case traces of each heapkit allocator")
    s.add_argument("--no-host", action="store_true",
                   help="--target: skip the host replays (instruction counts only)")
    s.add_argument("--jobs", type=positive_int, default=2, metavar="N",
                   help="--target: QEMU runs at once (default 2)")
    s.set_defaults(func=cmd_bench)

    s = sub.add_parser("size", help="smallest arena each allocator needs",
                       description="Binary-search the smallest arena on which each trace "
                       "replays without a failed allocation, per allocator; print it with "
                       "the ratio to the peak live requested bytes and each allocator's "
                       "geometric mean ratio. Allocators that do not live in an arena (the "
                       "system malloc and the preloaded ones) are skipped, and named on stderr.")
    selection(s, **{"--alloc": _arena_allocators})
    s.add_argument("--margin", type=percent, nargs="?", const=SIZE_MARGIN_PCT, metavar="PCT",
                   help="add a column (and JSON key \"advised\"): the min arena plus PCT %% "
                   f"headroom, rounded up to 8 bytes (default PCT {SIZE_MARGIN_PCT}; "
                   "docs/firmware-trace.md says why)")
    s.set_defaults(func=cmd_size)

    s = sub.add_parser("advise", help="which allocator, how much heap, what worst case",
                       description="For each trace and every allocator that lives in an arena: "
                       "the smallest heap that never fails, host time per operation, the exact "
                       "worst-case instructions per call on Cortex-M3 and RV32 (QEMU, where "
                       "installed) and the misuse it detects at the library's HK_HARDENING; "
                       "then the Pareto front of heap against worst case and one recommendation "
                       "per trace by the rule printed first, with its reason, as C and FreeRTOS "
                       "configuration when it is heapkit's (docs/advise.md).")
    s.add_argument("traces", nargs="+", metavar="TRACE",
                   help="trace files (heapkit or any importable format)")
    s.add_argument("--alloc", metavar="A,B,...",
                   help="allocators to consider, comma-separated (default: every arena allocator)")
    s.add_argument("--max-instructions", type=positive_int, metavar="N",
                   help="recommend only allocators whose worst case is at most N instructions")
    s.add_argument("--max-heap", type=byte_size, metavar="BYTES",
                   help="recommend only heaps (with margin) of at most BYTES (K, M, G suffixes); "
                   "the heap is then a budget and the lowest worst case within it wins")
    s.add_argument("--margin", type=percent, default=25.0, metavar="PCT",
                   help="percent added to the smallest heap in the configuration (default 25)")
    s.add_argument("--target", metavar="cortex-m3|rv32|none",
                   help="where to count instructions, comma-separated (default: every target "
                   "whose QEMU and cross compiler are installed)")
    s.add_argument("--configure", choices=["heapkit"],
                   help="when a peer is recommended, configure heapkit's best by the same rule "
                   "(default: configure only a heapkit recommendation)")
    s.add_argument("--json", metavar="FILE", help="write the advice as JSON")
    s.add_argument("--out", metavar="DIR",
                   help="write advice.json and per trace the C and FreeRTOS files")
    s.add_argument("--jobs", type=positive_int, default=2, metavar="N",
                   help="engine and QEMU runs at once (default 2)")
    s.set_defaults(func=cmd_advise)

    s = sub.add_parser("trace", help="record a program's allocations to a binary trace",
                       description="Run PROGRAM with the LD_PRELOAD recorder (lab/capture/) "
                       "and write the trace of the process it starts as. Exit status: "
                       "PROGRAM's (128+N when killed by signal N); 2 for heapkit's own errors.")
    s.add_argument("-o", "--output", required=True, metavar="OUT",
                   help="trace to write (.hkb, .hkt or .hkt.gz)")
    s.add_argument("--all-processes", action="store_true",
                   help="also keep the trace of every other process PROGRAM started, "
                   "each as OUT with .PID before the extension (not merged)")
    s.add_argument("command", nargs=argparse.REMAINDER, metavar="PROGRAM [ARGS...]",
                   help="program to run (put it after --)")
    s.set_defaults(func=cmd_trace)

    s = sub.add_parser("report", help="build one self-contained HTML report",
                       description="Build one HTML page (tables, plots embedded as PNG) "
                       "from the JSON saved by 'heapkit demo', 'heapkit bench --json' or "
                       "'heapkit size --json'. Without results it runs the demo's replays "
                       "itself first.")
    s.add_argument("results_pos", nargs="*", metavar="RESULTS", help="JSON files")
    s.add_argument("--results", dest="results_opt", action="append", metavar="FILE",
                   help="a results JSON file; repeatable (same as RESULTS)")
    s.add_argument("-o", "--output", default="report.html", metavar="FILE",
                   help="HTML file to write (default: report.html)")
    s.add_argument("--quick", action="store_true",
                   help="without results: run the demo's reduced (--quick) set")
    s.add_argument("--title", default="heapkit report", help="report title")
    s.set_defaults(func=cmd_report)

    s = sub.add_parser("demo", help="run every allocator on every workload and real trace",
                       description="Generate every workload, import the real traces "
                       "(the repository's data/traces), replay them against "
                       "every allocator, size-search the real traces, print the summary "
                       "table, and write OUTDIR/results.json and OUTDIR/report.html.")
    s.add_argument("-o", "--output", default="heapkit-demo", metavar="OUTDIR",
                   help="output directory (default: heapkit-demo)")
    s.add_argument("--quick", action="store_true",
                   help="smaller workloads and trace prefixes (a minute instead of several)")
    s.add_argument("--jobs", type=positive_int, default=2, metavar="N",
                   help="engine runs at once (default 2)")
    s.add_argument("--traces", metavar="DIR",
                   help="directory with wee_alloc/*.trace.gz, aosp/*.zip and embedded/* "
                   "(default: the repository's data/traces; none when the lab is installed)")
    s.set_defaults(func=cmd_demo)

    if importlib.util.find_spec("heapkit.netapps") is not None:
        importlib.import_module("heapkit.netapps").add_parser(sub)
        sub.choices["netapp"].set_defaults(func=cmd_netapp)

    s = sub.add_parser("explore", help="explore dmm configurations: Pareto front, C header, tables",
                       description="Enumerate configurations of the dmm allocator (fit policy, "
                       "list order, split and coalesce levels, dedicated lists from the traces' "
                       "size histogram), replay every trace of each application on each, keep the "
                       "results in SQLite (a rerun resumes), compute the Pareto front of "
                       "fragmentation against cost, and write OUTDIR/chosen-APP.h (the most "
                       "balanced configuration), pareto-APP.png, explore.json and explore.html "
                       "(the custom-dmm-network Tables 3-5 and Fig. 2).")
    s.add_argument("--app", nargs="+", action="extend", metavar="APP",
                   choices=["drr", "easyport", "url-switch"],
                   help="network applications (drr, easyport, url-switch): their default traces, "
                   "or one trace per --pcap")
    s.add_argument("--pcap", nargs="+", action="extend", metavar="FILE",
                   help="packet captures to feed each --app")
    s.add_argument("--repeat", type=positive_int, metavar="N",
                   help="replay each --pcap N times (shifted flows), for a longer trace")
    s.add_argument("--synthetic", nargs="+", action="extend", metavar="SPEC",
                   help="synthetic traffic for each --app, one trace per SPEC "
                   "(SHAPE[,seed=..,packets=..], see 'heapkit netapp --help')")
    s.add_argument("--trace", nargs="+", action="extend", metavar="FILE",
                   help="trace files (heapkit or any importable format), explored as one "
                   "application named --name")
    s.add_argument("--workload", nargs="+", action="extend", metavar="NAME",
                   choices=list(WORKLOADS), help="workloads to generate into that application")
    s.add_argument("--name", default="custom", help="application name of --trace/--workload "
                   "(default: custom)")
    s.add_argument("--seed", type=int, default=1, help="seed for --workload (default 1)")
    s.add_argument("-o", "--output", default="heapkit-explore", metavar="OUTDIR",
                   help="output directory (default: heapkit-explore)")
    s.add_argument("--db", metavar="FILE", help="SQLite results database (default: OUTDIR/explore.db)")
    s.add_argument("--jobs", type=positive_int, default=os.cpu_count() or 2, metavar="N",
                   help="evaluator processes at once on this machine (default: the CPU count)")
    s.add_argument("--batch", type=positive_int, metavar="N",
                   help="configurations per evaluator process (default: about 1/8 of the "
                   "work per worker, 8 to 250)")
    s.add_argument("--scheduler", metavar="ADDRESS",
                   help="run the batches on this Dask distributed scheduler (tcp://host:8786)")
    s.add_argument("--dask-local", type=positive_int, metavar="N",
                   help="run the batches on a local Dask cluster of N workers")
    s.add_argument("--target", type=positive_int, default=10000, metavar="N",
                   help="configurations per application to reach by adding dedicated-list "
                   "choices (default 10000)")
    s.add_argument("--fits", metavar="F,...", help="fit policies (default: first,next,best,worst,exact)")
    s.add_argument("--orders", metavar="O,...", help="list orders (default: lifo,fifo,address)")
    s.add_argument("--levels", metavar="L,...", help="split and coalesce levels (default: 0-9)")
    s.add_argument("--list-sets", type=positive_int, metavar="N",
                   help="dedicated-list choices (default: enough to reach --target)")
    s.add_argument("--quick", action="store_true",
                   help="a small space: first/best/worst fit, lifo/address, levels 0,5,9")
    s.add_argument("--cost", choices=("work", "time"), default="work",
                   help="cost axis: deterministic work counters (default) or measured CPU time")
    s.add_argument("--arena", type=byte_size, metavar="BYTES",
                   help="arena per replay, e.g. 4M (default: max(1 MiB, 16 x peak live requested))")
    s.add_argument("--work-cap", type=float, default=10.0, metavar="F",
                   help="stop a replay once its work passes F x the costliest preset's on that "
                   "trace; such configurations are left out of the front (default 10, 0: no cap)")
    s.add_argument("--no-firmware", action="store_true",
                   help="do not compile the chosen header into a Cortex-M3 firmware image")
    s.add_argument("--list", action=ListAction, names={
        "--fits": lambda: list(_plugin("explore", "explore").FITS),
        "--orders": lambda: list(_plugin("explore", "explore").ORDERS)})
    s.set_defaults(func=cmd_explore)

    s = sub.add_parser("kth-release", help="buddy-kth Figure 2: memory returned to the OS",
                       description="Run the kth benchmark process on heapkit's buddy under "
                       "LD_PRELOAD=libheapkit_malloc.so without and with HEAPKIT_RELEASE=1 "
                       "(default and 8 KiB regions) and under glibc; print memory and cost "
                       "(medians of interleaved runs).")
    s.add_argument("--repeats", type=positive_int, default=3, metavar="N",
                   help="runs per configuration (default 3)")
    s.add_argument("--allocs", type=positive_int, default=50000, metavar="N",
                   help="kth allocations (default 50000, the lab's kth workload)")
    s.add_argument("--slots", type=positive_int, default=4096, metavar="N",
                   help="kth slot buffer (default 4096)")
    s.add_argument("--json", metavar="FILE", help="also write the measurements here")
    s.set_defaults(func=cmd_kth_release)

    s = sub.add_parser("fits-cse3320", help="fits-cse3320 as the seed measured it",
                       description="The seed's counters at its 24-byte header (the engine pads "
                       "each request), its test process's peak RSS under libheapkit_malloc.so "
                       "against glibc, exact Cortex-M3 instructions per call; print the tables, "
                       "the measured ranking and a verdict on each claim.")
    s.add_argument("--repeats", type=positive_int, default=3, metavar="N",
                   help="runs of the test process per malloc (default 3)")
    s.add_argument("--jobs", type=positive_int, default=2, metavar="N",
                   help="parallel QEMU runs (default 2)")
    s.add_argument("--json", metavar="FILE", help="also write the measurements here")
    s.set_defaults(func=cmd_fits_cse3320)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(list_first(sys.argv[1:] if argv is None else argv))
        if args.func is cmd_trace:
            if args.command and args.command[0] == "--":
                args.command = args.command[1:]
            if not args.command:
                raise _UsageError("trace: give the program to run after -- "
                                  "(see 'heapkit trace --help')")
        return int(args.func(args) or 0)
    except _UsageError as e:
        return _die(str(e))
    except HeapkitError as e:
        return _die(str(e))
    except SystemExit as e:          # --help, --version
        return e.code if isinstance(e.code, int) else 0
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted", file=sys.stderr)
        # The children got the same Ctrl-C; another one would only interrupt the exit
        # (joining their threads) with a traceback.
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        return 130
    except BrokenPipeError:
        # Output closed early (heapkit ... | head): not an error worth a trace.
        try:
            sys.stdout = open(os.devnull, "w")
        except OSError:
            pass
        return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
