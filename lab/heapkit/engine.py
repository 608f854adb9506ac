# SPDX-License-Identifier: MIT
"""Python side of the C replay engine (``hk-replay``, lab/engine/).

The engine does all the work; this module finds (or builds) the binary,
runs it with ``--json -`` and hands back the parsed result, whose layout is
docs/results-format.md::

    from heapkit import engine
    res = engine.replay("t.hkb", "tlsf")
    res["replay"]["fragmentation"]["jw4"]
    engine.size_search("t.hkb", "tlsf")["search"]["min_arena"]
    engine.list_allocators()

Where the binary comes from: ``$HEAPKIT_REPLAY`` if set, else the installed
one, else the build tree's ``lab/engine/hk-replay``, built with CMake when it
is missing (:func:`build` rebuilds on demand); see :mod:`heapkit.native`.

Traces: ``.hkb`` files go to the engine as they are; ``.hkt`` / ``.hkt.gz``
files (and :class:`heapkit.trace.Trace` objects) are converted to a
temporary ``.hkb`` through :mod:`heapkit.trace` first.

Errors the engine reports (bad arguments, a malformed trace, an arena the
allocator refuses) raise :class:`EngineError`, a
:class:`~heapkit.errors.HeapkitError` whose message is the engine's one line.
"""

from __future__ import annotations

import atexit
import ctypes.util
import functools
import json
import os
import platform
import shutil
import tempfile
from pathlib import Path
from typing import Any, Callable

from . import native
from . import progress as _progress
from .errors import HeapkitError

__all__ = [
    "EngineError", "PEERS", "binary_path", "build", "find_binary", "replay", "size_search",
    "list_allocators", "arena_allocators", "allocator_table", "machine", "as_hkb", "PRELOADED",
    "preload_library",
]

DEFAULT_TARGET = "hk-replay"
ENV_BINARY = "HEAPKIT_REPLAY"
HKB_MAGIC = b"HKTRACE\0"


class EngineError(HeapkitError):
    """The engine refused its input or failed; ``str(e)`` is its one-line message."""

    def __init__(self, message: str, *, returncode: int | None = None,
                 argv: list[str] | None = None):
        super().__init__(message)
        self.message = message
        self.returncode = returncode
        self.argv = argv


# --------------------------------------------------------------------------
# Finding and building the binary

def binary_path(target: str = DEFAULT_TARGET) -> Path:
    """Where *target* is installed or built (it may not exist yet)."""
    return native.path(target)


def build(target: str = DEFAULT_TARGET) -> Path:
    """Configure (if needed) and build *target* in a checkout; returns its path."""
    try:
        return native.build(target)
    except EngineError:
        raise
    except HeapkitError as e:
        raise EngineError(str(e)) from None


def find_binary() -> Path:
    """``$HEAPKIT_REPLAY``, else the installed hk-replay or the build tree's, built if missing."""
    try:
        return native.find(ENV_BINARY, DEFAULT_TARGET)
    except HeapkitError as e:
        raise EngineError(str(e)) from None


# --------------------------------------------------------------------------
# Traces

_converted: dict[tuple[str, int, int], Path] = {}
_tmpdir: Path | None = None


def _scratch() -> Path:
    global _tmpdir
    if _tmpdir is None:
        _tmpdir = Path(tempfile.mkdtemp(prefix="heapkit-engine-"))
        atexit.register(shutil.rmtree, _tmpdir, True)
    return _tmpdir


def as_hkb(trace: Any) -> Path:
    """A .hkb path for *trace*: a path to any heapkit encoding, or a Trace.

    Binary traces are used in place (the engine validates them); text ones
    are converted once per process and file version through heapkit.trace.
    """
    if hasattr(trace, "to_bytes") and hasattr(trace, "records"):
        out = _scratch() / f"trace-{id(trace)}-{len(_converted)}.hkb"
        out.write_bytes(trace.to_bytes())
        _converted[(str(out), 0, 0)] = out
        return out
    path = Path(os.fspath(trace))
    try:
        with open(path, "rb") as f:
            head = f.read(len(HKB_MAGIC))
        st = path.stat()
    except FileNotFoundError:
        raise EngineError(f"{path}: no such file") from None
    except OSError as e:
        raise EngineError(f"{path}: {e.strerror or e}") from None
    if head == HKB_MAGIC or path.suffix == ".hkb":
        return path
    key = (str(path.resolve()), st.st_mtime_ns, st.st_size)
    if key not in _converted:
        from .trace import Trace  # numpy is only needed for text traces

        out = _scratch() / f"{path.name}.{len(_converted)}.hkb"
        Trace.load(path).save(out, "hkb")
        _converted[key] = out
    return _converted[key]


# --------------------------------------------------------------------------
# Running the engine

def _run(argv: list[str], *, binary: str | os.PathLike | None = None,
         preload: str | None = None, want_json: bool = True,
         progress: Callable[[int], None] | None = None) -> Any:
    exe = str(binary) if binary is not None else str(find_binary())
    full = [exe] + argv + (["--progress"] if progress is not None else [])
    env = None
    if preload is not None:
        env = dict(os.environ)
        env["LD_PRELOAD"] = preload
    proc = _progress.run(full, "hk-replay: ", progress, env=env)
    if proc.returncode != 0:
        lines = [ln for ln in proc.stderr.strip().splitlines() if ln.strip()]
        if proc.returncode < 0:
            msg = f"hk-replay died from signal {-proc.returncode} ({' '.join(argv)})"
        elif lines:
            msg = lines[-1].removeprefix("hk-replay: ")
        else:
            msg = f"hk-replay exited with status {proc.returncode}"
        raise EngineError(msg, returncode=proc.returncode, argv=full)
    if not want_json:
        return proc.stdout
    try:
        return json.loads(proc.stdout)
    except json.JSONDecodeError as e:
        raise EngineError(f"hk-replay printed malformed JSON ({e})", argv=full) from None


def replay(trace_path: Any, allocator: str, arena: int | None = None, series: int = 200,
           heapmap: int = 0, timing: bool = True, *, heapmap_cap: int | None = None,
           heapmap_owners: bool = False, placements: str | os.PathLike | None = None, pad: int = 0,
           second_region: int = 0, preload: str | None = None, binary: str | os.PathLike | None = None,
           progress: Callable[[int], None] | None = None) -> dict:
    """Replay a trace against *allocator*; the engine's JSON result as a dict.

    arena: bytes (default: the engine's, max(64 KiB, 4 x peak live requested),
    refused at the engine's memory limit); series: hk_get_stats samples (0 for
    none); heapmap: hk_walk snapshots (heapmap_owners: with the trace id each used
    block holds); placements: a file the engine writes, per trace id, its block's
    payload offset and usable bytes (little-endian int64 pairs, -1 -1: never placed);
    timing: time every call; pad: bytes added to every request the allocator sees (a
    larger per-block header); second_region: freertos-heap5 only, the arena's top bytes
    as a second heap region (a board with two memories); preload: an LD_PRELOAD for the
    "system" entry (e.g. a libmimalloc.so path); binary: another engine build;
    progress: called with the records replayed so far.
    """
    allocator, preload = _engine_entry(allocator, preload, binary)
    argv = ["--trace", str(as_hkb(trace_path)), "--alloc", allocator,
            "--series", str(int(series)), "--heapmap", str(int(heapmap)), "--json", "-"]
    if arena is not None:
        argv += ["--arena", str(int(arena))]
    if heapmap_cap is not None:
        argv += ["--heapmap-cap", str(int(heapmap_cap))]
    if heapmap_owners:
        argv.append("--heapmap-owners")
    if placements is not None:
        argv += ["--placements", os.fspath(placements)]
    if pad:
        argv += ["--pad", str(int(pad))]
    if second_region:
        argv += ["--second-region", str(int(second_region))]
    if not timing:
        argv.append("--no-timing")
    return _run(argv, binary=binary, preload=preload, progress=progress)


def size_search(trace_path: Any, allocator: str, *,
                binary: str | os.PathLike | None = None,
                progress: Callable[[int], None] | None = None) -> dict:
    """Smallest arena on which the trace replays without a failed allocation.

    The result's ``search`` holds min_arena, peak_live_requested and ratio
    (plus the non-monotonicity evidence); ``verify`` is a full replay at
    min_arena. progress: called with the records the probes replayed so far.
    """
    allocator, preload = _engine_entry(allocator, None, binary)
    argv = ["--trace", str(as_hkb(trace_path)), "--alloc", allocator, "--size-search", "--json", "-"]
    return _run(argv, binary=binary, preload=preload, progress=progress)


# The peer allocators an hk-replay can hold: those of lab/engine/peers/peers.def, whose
# sources come from crates.io through cargo when the engine is built, so one built
# without cargo or the network lacks them; and sdma, the fctma-pools seed's SDMA rebuilt in
# the lab (lab/target/sdma.c), which an engine older than it lacks.
PEERS = ("freertos-heap2", "freertos-heap4", "freertos-heap5", "o1heap", "umm", "tlsf-conte", "sdma")


def missing_peers(names: list[str]) -> str:
    """Why *names* (peers this engine lacks) cannot run, and what brings them, in one line."""
    how = ("reinstall the lab (pip install CHECKOUT/lab)" if native.INSTALLED
           else "rebuild (make build)")
    return (f"{', '.join(names)}: peer allocator(s) this hk-replay was built without (their sources "
            f"are fetched from crates.io with cargo at build time): install cargo, then {how}")


# Hosted allocators measured as the engine's "system" entry under LD_PRELOAD
# (Debian's libmimalloc2.0 and libjemalloc2): name -> library to find.
PRELOADED = {"mimalloc": "mimalloc", "jemalloc": "jemalloc"}


def preload_library(allocator: str) -> str | None:
    """The LD_PRELOAD soname serving *allocator*, or None (not a preloaded one, or not installed)."""
    lib = PRELOADED.get(allocator)
    return ctypes.util.find_library(lib) if lib else None


@functools.lru_cache(maxsize=8)
def _sanitized(exe: str) -> bool:
    """Is this engine built with AddressSanitizer? Its runtime must own malloc, so nothing can be preloaded."""
    try:
        return b"__asan_init" in Path(exe).read_bytes()
    except OSError:
        return False


def _engine_entry(allocator: str, preload: str | None, binary: str | os.PathLike | None) -> tuple[str, str | None]:
    """The engine's own name and the LD_PRELOAD for *allocator*."""
    if allocator not in PRELOADED:
        return allocator, preload
    lib = preload_library(allocator)
    if lib is None:
        raise EngineError(f"{allocator}: lib{PRELOADED[allocator]} is not installed "
                          f"(apt-get install the Debian package)")
    if _sanitized(str(binary) if binary is not None else str(find_binary())):
        raise EngineError(f"{allocator}: this hk-replay is built with AddressSanitizer, "
                          "which cannot run under LD_PRELOAD of another malloc")
    return "system", lib


def allocator_table(*, binary: str | os.PathLike | None = None) -> list[dict]:
    """The engine's own entries: [{"name", "family", "in_arena"}] in table order."""
    table = _run(["--list", "--json", "-"], binary=binary)
    if not isinstance(table, list):
        raise EngineError("hk-replay --list --json printed no list")
    return table


def machine() -> dict:
    """The machine results are measured on, recorded with them for the report's banner."""
    info = {"system": platform.system(), "release": platform.release(),
            "arch": platform.machine(), "cpus": os.cpu_count(), "cpu": None,
            "virtualised": None, "python": platform.python_version()}
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                key, _, value = line.partition(":")
                key = key.strip()
                if key == "model name" and info["cpu"] is None:
                    info["cpu"] = value.strip()
                elif key == "flags":
                    info["virtualised"] = "hypervisor" in value.split()
                    break
    except OSError:
        pass
    try:
        info["load_avg"] = [round(x, 2) for x in os.getloadavg()]
    except OSError:
        info["load_avg"] = None
    return info


def arena_allocators(*, binary: str | os.PathLike | None = None) -> set[str]:
    """The allocators that live in an arena, the ones a size search can size (not "system"
    nor the preloaded ones, which the process heap serves)."""
    return {a["name"] for a in allocator_table(binary=binary) if a["in_arena"]}


def list_allocators(*, binary: str | os.PathLike | None = None) -> list[str]:
    """Names ``replay`` accepts, in table order: the engine's, then the installed preloaded ones."""
    out = _run(["--list"], binary=binary, want_json=False)
    names = [ln.strip() for ln in out.splitlines() if ln.strip()]
    if _sanitized(str(binary) if binary is not None else str(find_binary())):
        return names
    return names + [a for a in PRELOADED if preload_library(a) is not None]
