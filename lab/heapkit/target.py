"""Exact instructions per allocator call on an emulated Cortex-M3.

``heapkit bench --target cortex-m3`` comes here. The driver in lab/target/
(icount.c, measure_m3.S) replays one embedded trace against every heapkit
catalog entry and the peers (FreeRTOS heap_4 and heap_5, o1heap, umm_malloc,
newlib's malloc) inside QEMU's mps2-an385 with ``-icount shift=7`` and reads
SysTick around each call, so every count is exact and the same on every run.

Steps, all cached under :func:`build_dir` (``build/target-icount``, or
``$HEAPKIT_TARGET_BUILD``):

1. the peers' sources: tools/fetch_peers.sh (reusing the host build's
   ``build/gcc/peers`` when it is there);
2. objects, once per optimisation level (-O2 and -Os), every source with the
   same compiler and flags: arm-none-eabi-gcc -mcpu=cortex-m3 -mthumb
   -ffunction-sections -fdata-sections -DNDEBUG; rebuilt when a source,
   header or flag changes;
3. per trace: the .hkb converted to the driver's compact form (:func:`compact`,
   ids replaced by reusable slots), assembled into trace_blob.S and linked
   with the board port (ports/baremetal/mps2-an385: startup, link.ld,
   runtime) into one ELF per (trace, level);
4. ports/baremetal/run-qemu.sh runs it; the JSON lines it prints and the raw
   counts (one 32-bit word per record, written to the host through
   semihosting) come back as a dict.

A trace fits when its compact form fits the board's 4 MiB "flash" next to
the code (:data:`MAX_BLOB_BYTES`) and its work arrays fit the PSRAM budget
(:data:`MAX_WORK_BYTES`); larger traces are skipped, with the reason, not
streamed. Every allocator gets the same :data:`ARENA_SIZE` arena in the
4 MiB RAM, except newlib (the port's sbrk heap in PSRAM) and umm (256 KiB at
most: 15-bit block indices).
"""

from __future__ import annotations

import concurrent.futures as cf
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any, Iterable, Sequence

import numpy as np

from .errors import HeapkitError
from .native import REPO_ROOT
from .trace import (NULL_ID, OP_ALIGNED, OP_CALLOC, OP_FREE, OP_MALLOC, OP_REALLOC, Trace)

TARGETS = ("cortex-m3",)
OPT_LEVELS = ("-O2", "-Os")
ARENA_SIZE = 3_670_016                  # 3.5 MiB of the 4 MiB RAM (stack, .data, .bss beside it)
ARENA_ADDR = 0x20040000                 # above .data + .bss (< 256 KiB), below the 64 KiB stack
MAX_BLOB_BYTES = 3_670_016              # of the 4 MiB flash; code and rodata take < 200 KiB
MAX_WORK_BYTES = 12 * 1024 * 1024       # of the 16 MiB PSRAM; newlib's heap gets the rest
KINDS = ("malloc", "free", "calloc", "aligned", "realloc")
KIND_NONE = 7
COUNT_MASK = (1 << 29) - 1
TICKS_PER_INSN = 3.2

CC = "arm-none-eabi-gcc"
SIZE = "arm-none-eabi-size"
QEMU = "qemu-system-arm"
CPU_FLAGS = ["-mcpu=cortex-m3", "-mthumb"]
COMMON_FLAGS = ["-std=gnu11", "-ffunction-sections", "-fdata-sections", "-DNDEBUG", "-g0",
                f"-DTGT_ARENA_SIZE={ARENA_SIZE}"]

TARGET_DIR = REPO_ROOT / "lab" / "target"
PORT_DIR = REPO_ROOT / "ports" / "baremetal"
BOARD = "mps2-an385"

# Compact trace (lab/target/icount.h)
HKC_MAGIC = 0x43544B48
HKC_VERSION = 1
HKC_MALLOC, HKC_FREE, HKC_CALLOC, HKC_ALIGNED, HKC_REALLOC, HKC_REALLOC_NULL = range(6)

# Which objects make up each allocator's code (for the .text column).
_HEAPKIT_CODE = {
    "bump": ["bump"], "seqfit": ["seqfit", "tagged"], "buddy": ["buddy"],
    "tlsf": ["tlsf", "tagged"], "poolset": ["pool", "bump"], "lfpool": ["pool_lockfree"],
    "pool": ["pool", "bump"], "dmm": ["dmm", "tagged"],
}
_NEWLIB_MEMBERS = ("lib_a-mallocr.o", "lib_a-freer.o", "lib_a-reallocr.o", "lib_a-callocr.o",
                   "lib_a-malignr.o", "lib_a-malloc.o", "lib_a-mlock.o", "lib_a-sbrkr.o")


class TargetError(HeapkitError):
    """Building or running the target driver failed; the message says where."""


# --------------------------------------------------------------------------
# The compact trace

def compact(trace: Trace) -> tuple[bytes, dict[str, int]]:
    """The driver's form of *trace*: (bytes, {"records", "slots", "ids", "words"})."""
    rec = trace.records
    n = len(rec)
    ops = rec["op"].tolist()
    ids = rec["id"].tolist()
    sizes = rec["size"].tolist()
    auxs = rec["aux"].tolist()
    slot_of: dict[int, int] = {}
    free_slots: list[int] = []
    slots = 0
    words: list[int] = []

    def new_slot() -> int:
        nonlocal slots
        if free_slots:
            return free_slots.pop()
        slots += 1
        return slots - 1

    for i in range(n):
        op, ident, size, aux = ops[i], ids[i], sizes[i], auxs[i]
        if op == OP_FREE:
            s = slot_of.pop(ident)
            free_slots.append(s)
            words.append(HKC_FREE | s << 3)
        elif op == OP_REALLOC and aux != NULL_ID:
            s = slot_of.pop(aux)
            slot_of[ident] = s
            words += [HKC_REALLOC | s << 3, size]
        else:
            s = new_slot()
            slot_of[ident] = s
            if op == OP_MALLOC:
                words += [HKC_MALLOC | s << 3, size]
            elif op == OP_CALLOC:
                words += [HKC_CALLOC | s << 3, size, aux]
            elif op == OP_ALIGNED:
                words += [HKC_ALIGNED | s << 3, size, aux]
            else:
                words += [HKC_REALLOC_NULL | s << 3, size]
    header = [HKC_MAGIC, HKC_VERSION, n, slots, len(words), trace.n_ids, 0, 0]
    data = np.asarray(header + words, dtype="<u4").tobytes()
    return data, {"records": n, "slots": slots, "ids": trace.n_ids, "words": len(words)}


def fits(meta: dict[str, int], blob_bytes: int) -> str | None:
    """None when the trace fits the board, else why not."""
    if blob_bytes > MAX_BLOB_BYTES:
        return (f"its compact form is {blob_bytes / 2**20:.1f} MiB, more than the "
                f"{MAX_BLOB_BYTES / 2**20:.1f} MiB of flash left for it")
    work = 8 * (meta["records"] + 1) + 12 * (meta["slots"] + 1)
    if work > MAX_WORK_BYTES:
        return f"its work arrays need {work / 2**20:.1f} MiB of the {MAX_WORK_BYTES / 2**20:.0f} MiB PSRAM budget"
    return None


# --------------------------------------------------------------------------
# Building

def build_dir() -> Path:
    value = os.environ.get("HEAPKIT_TARGET_BUILD")
    return Path(value).resolve() if value else REPO_ROOT / "build" / "target-icount"


def missing_tools() -> list[str]:
    return [t for t in (CC, SIZE, QEMU) if shutil.which(t) is None]


def _run(argv: list[str], what: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    try:
        proc = subprocess.run(argv, cwd=cwd or REPO_ROOT, capture_output=True, text=True)
    except FileNotFoundError:
        raise TargetError(f"{argv[0]} not found: needed for {what} "
                          "(Debian: gcc-arm-none-eabi libnewlib-arm-none-eabi qemu-system-arm)") from None
    if proc.returncode != 0:
        tail = (proc.stdout + proc.stderr).strip().splitlines()[-12:]
        raise TargetError(f"{what} failed ({' '.join(argv[:3])} ...):\n" + "\n".join(tail))
    return proc


def peer_sources() -> dict[str, Path]:
    """Peer source directories that exist, fetching them when none do."""
    def layout(root: Path) -> dict[str, Path]:
        src = root / "src"
        return {"freertos": src / "freertos-next-0.12.0" / "FreeRTOS-Kernel",
                "o1heap": src / "o1heap-0.0.2" / "o1heap" / "o1heap",
                "umm": src / "umm-malloc-sys-0.3.2" / "umm_malloc" / "src"}

    def present(d: dict[str, Path]) -> dict[str, Path]:
        marks = {"freertos": "portable/MemMang/heap_4.c", "o1heap": "o1heap.c", "umm": "umm_malloc.c"}
        return {k: p for k, p in d.items() if (p / marks[k]).is_file()}

    for root in (REPO_ROOT / "build" / "gcc" / "peers", build_dir() / "peers"):
        found = present(layout(root))
        if len(found) == 3:
            return found
    root = build_dir() / "peers"
    proc = subprocess.run(["sh", str(REPO_ROOT / "tools" / "fetch_peers.sh"), str(root)],
                          capture_output=True, text=True)
    found = present(layout(root))
    if proc.returncode != 0 and not found:
        print(f"heapkit: peers skipped on the target: {proc.stderr.strip()}")
    return found


def _sources(peers: dict[str, Path]) -> list[tuple[str, Path, list[str]]]:
    """(object name, source, extra flags) for every object of the image."""
    inc = ["-I" + str(REPO_ROOT / "include"), "-I" + str(REPO_ROOT / "src"), "-I" + str(TARGET_DIR),
           "-I" + str(PORT_DIR / "common")]
    out = [(p.stem, p, inc) for p in sorted((REPO_ROOT / "src").glob("*.c"))]
    defines = []
    if "freertos" in peers:
        f = peers["freertos"]
        finc = ["-I" + str(TARGET_DIR / "freertos"), "-I" + str(f / "include"),
                "-I" + str(f / "portable" / "GCC" / "ARM_CM3")]
        for h in (4, 5):
            out.append((f"heap_{h}", f / "portable" / "MemMang" / f"heap_{h}.c",
                        finc + [f"-DTGT_FREERTOS_HEAP={h}", "-w"]))
        defines.append("-DTGT_HAVE_FREERTOS")
    if "o1heap" in peers:
        out.append(("o1heap", peers["o1heap"] / "o1heap.c", ["-w"]))
        defines += ["-DTGT_HAVE_O1HEAP", "-I" + str(peers["o1heap"])]
    if "umm" in peers:
        out.append(("umm_malloc", peers["umm"] / "umm_malloc.c",
                    ["-I" + str(TARGET_DIR / "umm"), "-I" + str(peers["umm"]), "-w"]))
        defines += ["-DTGT_HAVE_UMM", "-I" + str(TARGET_DIR / "umm"), "-I" + str(peers["umm"])]
    for name in ("icount", "allocs", "probe"):
        out.append((f"tgt_{name}", TARGET_DIR / f"{name}.c", inc + defines))
    out.append(("tgt_measure_m3", TARGET_DIR / "measure_m3.S", []))
    out.append(("port_startup", PORT_DIR / BOARD / "startup.c", inc))
    out.append(("port_runtime", PORT_DIR / "common" / "runtime.c", inc))
    return out


def _fingerprint(sources: list[tuple[str, Path, list[str]]], flags: list[str]) -> str:
    h = hashlib.sha256(" ".join(flags).encode())
    dirs = {REPO_ROOT / "include" / "heapkit", REPO_ROOT / "src", TARGET_DIR,
            TARGET_DIR / "freertos", TARGET_DIR / "umm", PORT_DIR / "common"}
    files = {p for _, p, _ in sources}
    for d in dirs:
        files.update(d.glob("*.h"))
    for p in sorted(files):
        h.update(str(p).encode())
        h.update(p.read_bytes())
    for _, _, extra in sources:
        h.update(" ".join(extra).encode())
    return h.hexdigest()


def opt_dir(opt: str) -> Path:
    return build_dir() / opt.lstrip("-")


def build_objects(opt: str, jobs: int = 2) -> dict[str, Any]:
    """Compile every object at *opt* (cached); returns {"dir", "objects", "peers", "flags"}."""
    if opt not in OPT_LEVELS:
        raise TargetError(f"optimisation level {opt!r} not supported (use {', '.join(OPT_LEVELS)})")
    if missing_tools():
        raise TargetError(f"missing tools for the Cortex-M3 target: {', '.join(missing_tools())} "
                          "(Debian: gcc-arm-none-eabi libnewlib-arm-none-eabi qemu-system-arm; `make deps`)")
    peers = peer_sources()
    sources = _sources(peers)
    flags = CPU_FLAGS + [opt] + COMMON_FLAGS
    d = opt_dir(opt)
    obj = d / "obj"
    stamp = d / "objects.stamp"
    fp = _fingerprint(sources, flags)
    objects = {name: obj / f"{name}.o" for name, _, _ in sources}
    info = {"dir": d, "objects": objects, "peers": sorted(peers), "flags": flags}
    if stamp.exists() and stamp.read_text() == fp and all(p.exists() for p in objects.values()):
        return info
    obj.mkdir(parents=True, exist_ok=True)

    def compile_one(item):
        name, src, extra = item
        _run([CC, *flags, *extra, "-c", str(src), "-o", str(obj / f"{name}.o")], f"compiling {src.name} ({opt})")

    with cf.ThreadPoolExecutor(max_workers=max(1, jobs)) as ex:
        list(ex.map(compile_one, sources))
    stamp.write_text(fp)
    return info


def _link(info: dict[str, Any], blob_obj: Path, elf: Path) -> None:
    _run([CC, *info["flags"], "--specs=rdimon.specs", "-nostartfiles",
          "-T", str(PORT_DIR / BOARD / "link.ld"), "-Wl,--gc-sections",
          f"-Wl,--defsym=tgt_arena={ARENA_ADDR:#x}",
          *[str(p) for p in info["objects"].values()], str(blob_obj), "-o", str(elf)],
         f"linking {elf.name}")


def prepare_trace(name: str, trace: Trace, workdir: Path) -> dict[str, Any]:
    """Write the compact trace and assemble its blob object; returns its metadata
    (``skipped`` holds the reason when it does not fit the board)."""
    data, meta = compact(trace)
    meta = {"name": name, **meta, "blob_bytes": len(data), "skipped": fits(meta, len(data))}
    if meta["skipped"]:
        return meta
    workdir.mkdir(parents=True, exist_ok=True)
    hkc = workdir / f"{_safe(name)}.hkc"
    hkc.write_bytes(data)
    obj = workdir / f"{_safe(name)}.blob.o"
    _run([CC, *CPU_FLAGS, f'-DTGT_TRACE_FILE="{hkc}"', f"-DTGT_RECORDS={meta['records']}",
          f"-DTGT_SLOTS={meta['slots']}", "-c", str(TARGET_DIR / "trace_blob.S"), "-o", str(obj)],
         f"assembling the trace {name}")
    meta["blob_obj"] = str(obj)
    return meta


def _safe(name: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in name)


# --------------------------------------------------------------------------
# Running

def run_elf(elf: Path, allocs: Sequence[str] = (), counts_prefix: str | None = None,
            timeout: int = 1800) -> list[dict]:
    """Run the driver in QEMU; its JSON lines (an error line raises)."""
    args = ([f"--counts={counts_prefix}"] if counts_prefix else []) + list(allocs)
    env = dict(os.environ, HK_QEMU_TIMEOUT=str(timeout))
    proc = subprocess.run([str(PORT_DIR / "run-qemu.sh"), BOARD, str(elf), *args],
                          capture_output=True, text=True, env=env, cwd=elf.parent)
    lines = []
    for line in proc.stdout.splitlines():
        if line.startswith("{"):
            try:
                lines.append(json.loads(line))
            except json.JSONDecodeError:
                raise TargetError(f"{elf.name}: malformed output line: {line[:200]}") from None
    for d in lines:
        if d.get("type") == "error":
            raise TargetError(f"{elf.name}: {d.get('alloc', 'driver')}: {d.get('message')}")
    if proc.returncode != 0 or not lines or lines[-1].get("type") != "end":
        tail = (proc.stdout + proc.stderr).strip().splitlines()[-5:]
        raise TargetError(f"{elf.name}: QEMU exited with status {proc.returncode}" +
                          (" (timeout)" if proc.returncode == 124 else "") + ": " + " | ".join(tail))
    return lines


def read_counts(path: Path) -> np.ndarray:
    return np.fromfile(path, dtype="<u4")


def kind_stats(words: np.ndarray) -> dict[str, dict[str, Any]]:
    """Nearest-rank statistics per kind from raw count words (the driver's own definition)."""
    kinds = words >> 29
    counts = words & COUNT_MASK
    out = {}
    for k, name in enumerate(KINDS):
        v = np.sort(counts[kinds == k])
        out[name] = _stats(v)
    return out


def _stats(v: np.ndarray) -> dict[str, Any]:
    n = len(v)
    if n == 0:
        return {"count": 0, "min": None, "p50": None, "p99": None, "p999": None, "max": None, "mean": None}

    def rank(pm: int) -> int:
        k = (n * pm + 999) // 1000
        return int(v[max(k, 1) - 1])
    return {"count": n, "min": int(v[0]), "p50": rank(500), "p99": rank(990), "p999": rank(999),
            "max": int(v[-1]), "mean": float(v.mean())}


def text_bytes(info: dict[str, Any], allocs: Iterable[str]) -> dict[str, int | None]:
    """Berkeley `size` text (code + rodata) of each allocator's own objects at this level."""
    objs: dict[str, list[Path]] = {}
    for a in allocs:
        if a in ("freertos-heap4", "freertos-heap5"):
            objs[a] = [info["objects"].get(f"heap_{a[-1]}")]
        elif a == "o1heap":
            objs[a] = [info["objects"].get("o1heap")]
        elif a == "umm":
            objs[a] = [info["objects"].get("umm_malloc")]
        elif a == "newlib":
            continue
        else:
            fam = next((k for k in sorted(_HEAPKIT_CODE, key=len, reverse=True) if a.startswith(k)), None)
            objs[a] = ([info["objects"].get(n) for n in ["heap"] + _HEAPKIT_CODE[fam]] if fam else [None])
    out: dict[str, int | None] = {}
    for a, paths in objs.items():
        if any(p is None or not p.exists() for p in paths):
            out[a] = None
            continue
        proc = _run([SIZE, *map(str, paths)], "measuring code size")
        out[a] = sum(int(l.split()[0]) for l in proc.stdout.splitlines()[1:] if l.strip())
    if "newlib" in allocs:
        out["newlib"] = _newlib_text()
    return out


def _newlib_text() -> int | None:
    try:
        lib = subprocess.run([CC, *CPU_FLAGS, "-print-file-name=libc.a"], capture_output=True,
                             text=True).stdout.strip()
        proc = subprocess.run([SIZE, lib], capture_output=True, text=True)
    except FileNotFoundError:
        return None
    total = 0
    for line in proc.stdout.splitlines()[1:]:
        parts = line.split()
        if len(parts) >= 6 and parts[5] in _NEWLIB_MEMBERS:
            total += int(parts[0])
    return total or None


def bench(traces: Sequence[tuple], allocs: Sequence[str] | None = None,
          opts: Sequence[str] = OPT_LEVELS, jobs: int = 2, progress: bool = False) -> dict[str, Any]:
    """Replay every trace at every level against *allocs* (default: all) on the target.

    *traces* holds (name, Trace) pairs, or (name, Trace, allocators) triples for a
    trace meant for some allocators only (the directed worst-case traces); those
    runs carry ``"directed": true``.

    Returns the ``heapkit-target`` document of docs/results-format.md (without
    ``host``): each run's ``result`` is the driver's JSON line and ``stats`` the
    same statistics recomputed from the raw counts (plus the mean); ``pooled``
    pools the raw counts of every non-directed trace per level and allocator."""
    if not traces:
        raise TargetError("no traces to run on the target")
    infos = {opt: build_objects(opt, jobs) for opt in opts}
    root = build_dir() / "runs"
    root.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="run-", dir=root))
    metas = []
    try:
        for i, item in enumerate(traces):
            m = prepare_trace(item[0], item[1], work / f"t{i}")
            m["dir"] = work / f"t{i}"
            m["only"] = list(item[2]) if len(item) > 2 else None
            if m["only"] is not None and allocs:
                m["only"] = [a for a in m["only"] if a in allocs]
            if m["only"] == []:
                continue
            metas.append(m)
        jobs_list = [(opt, m) for opt in opts for m in metas if not m["skipped"]]

        def one(item):
            opt, m = item
            tdir = m["dir"] / opt.lstrip("-")
            tdir.mkdir(parents=True, exist_ok=True)
            elf = tdir / "icount.elf"
            _link(infos[opt], Path(m["blob_obj"]), elf)
            lines = run_elf(elf, m["only"] or allocs or (), counts_prefix=str(tdir) + "/")
            return opt, m, tdir, lines

        results = []
        bar = None
        if progress:
            from tqdm import tqdm
            bar = tqdm(total=len(jobs_list), desc="cortex-m3", unit="run", file=sys.stderr)
        with cf.ThreadPoolExecutor(max_workers=max(1, jobs)) as ex:
            for r in ex.map(one, jobs_list):
                results.append(r)
                if bar:
                    bar.update()
        if bar:
            bar.close()
        calibration = None
        runs = []
        names: list[str] = []
        for opt, m, tdir, lines in results:
            for d in lines:
                if d["type"] == "calibration" and (calibration is None or opt == opts[0]):
                    calibration = {k: v for k, v in d.items() if k != "type"}
                elif d["type"] == "result":
                    words = read_counts(tdir / f"{d['alloc']}.u32")
                    runs.append({"trace": m["name"], "opt": opt, "allocator": d["alloc"],
                                 "family": d["family"], "directed": m["only"] is not None,
                                 "result": d, "stats": kind_stats(words)})
                    if d["alloc"] not in names:
                        names.append(d["alloc"])
                elif d["type"] == "skipped":
                    runs.append({"trace": m["name"], "opt": opt, "allocator": d["alloc"],
                                 "family": None, "result": None, "skipped": d["reason"]})
        pooled = pool_counts([r for r in results if r[1]["only"] is None])
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return {"kind": "heapkit-target", "version": 1, "target": "cortex-m3", "arena": ARENA_SIZE,
            "opts": list(opts), "calibration": calibration,
            "traces": [{k: v for k, v in m.items() if k not in ("blob_obj", "dir")} for m in metas],
            "skipped_traces": {m["name"]: m["skipped"] for m in metas if m["skipped"]},
            "runs": runs, "pooled": pooled,
            "text_bytes": {opt: text_bytes(infos[opt], names) for opt in opts}}


def pool_counts(results) -> dict[str, dict[str, dict[str, Any]]]:
    """Per level and allocator, the statistics over every operation of every trace."""
    acc: dict[tuple[str, str], list[np.ndarray]] = {}
    for opt, _, tdir, lines in results:
        for d in lines:
            if d["type"] == "result":
                acc.setdefault((opt, d["alloc"]), []).append(read_counts(tdir / f"{d['alloc']}.u32"))
    out: dict[str, dict[str, Any]] = {}
    for (opt, alloc), parts in acc.items():
        out.setdefault(opt, {})[alloc] = kind_stats(np.concatenate(parts))
    return out


# --------------------------------------------------------------------------
# Directed worst-case traces

SEQFIT_FRAGMENTS = 2000       # free fragments the seqfit searches walk
BUDDY_MIN_BLOCKS = 120_000    # minimum blocks: more than every top-level block but the largest holds
POOL_REQUESTS = 30_000        # more than the pools of a 3.5 MiB arena hold


def worst_case_traces() -> list[tuple[str, Trace, list[str]]]:
    """(name, trace, allocators) driving each heapkit allocator's worst-case path.

    - buddy: BUDDY_MIN_BLOCKS minimum-size requests on a fresh heap. The
      arena's smaller top-level blocks are used up first; then one request
      splits the largest top-level block (2 MiB) all the way down to the
      minimum block, the deepest split cascade. Every other block is freed
      (buddy-lazy keeps most of them locally free, DELAY-2), then a large
      request finds no global block: buddy-lazy flushes every locally free
      block first (O(blocks)), and fails. Freeing the rest ends with merges
      all the way back up, the deepest coalesce cascade.
    - seqfit: SEQFIT_FRAGMENTS free 16-byte fragments between live blocks,
      then a request none of them fits (the search walks every fragment),
      then frees at the high end of the address-ordered list (insertion
      walks it) and frees that merge with both neighbours.
    - tlsf: every class boundary (2^k - 1, 2^k, 2^k + 1 and each second-level
      step up to 1 MiB) on a fresh heap, where the search starts in the
      requested class and finds the only free block in the highest list;
      then with two free blocks in every list up to 16 KiB (full bitmaps) and
      guards between them, the same sizes again (searches across set bits,
      splits whose remainders land in every list); frees that merge with both
      neighbours; requests rounded up past second level 0 whose search
      misses in their own first level (its map not empty) and whose only fit
      is in the next, with the split remainder joining a non-empty list (the
      longest path, found by single-stepping the traces' slowest call); and
      the largest request that fits: the bitmap extremes.
    - poolset, lfpool, pool: POOL_REQUESTS small requests, so every class empties
      (poolset falls through every class, then every pool is full and the
      request fails), then everything freed.
    """
    from .trace import TraceBuilder
    out: list[tuple[str, Trace, list[str]]] = []

    b = TraceBuilder()
    small = [b.malloc(1) for _ in range(BUDDY_MIN_BLOCKS)]
    for i in small[1::2]:
        b.free(i)
    b.free(b.malloc(ARENA_SIZE // 2))   # no 2 MiB block is free: buddy-lazy flushes every local one first
    for i in small[0::2]:
        b.free(i)
    out.append(("worst-buddy", b.build("worst-buddy"), ["buddy", "buddy-lazy"]))

    b = TraceBuilder()
    blocks = [b.malloc(16) for _ in range(2 * SEQFIT_FRAGMENTS + 1)]
    for i in range(0, 2 * SEQFIT_FRAGMENTS, 2):
        b.free(blocks[i])
    for _ in range(3):
        b.free(b.malloc(4096))           # fits no fragment: the whole list is searched
    b.free(blocks[2 * SEQFIT_FRAGMENTS - 1])  # highest-address free: walks the list, merges both sides
    for i in range(2 * SEQFIT_FRAGMENTS - 3, 0, -2):
        b.free(blocks[i])
    b.free(blocks[2 * SEQFIT_FRAGMENTS])
    out.append(("worst-seqfit", b.build("worst-seqfit"),
                ["seqfit-first", "seqfit-next", "seqfit-best", "seqfit-worst"]))

    b = TraceBuilder()
    sizes = sorted({max(1, (1 << k) + (j << max(0, k - 4)) + d)
                    for k in range(21) for j in range(16) for d in (-1, 0, 1)})
    for sz in sizes:                     # every class boundary on a fresh heap: search up to the top list
        b.free(b.malloc(sz))
    held = []
    for sz in sizes:                     # two free blocks in every list up to 16 KiB, guards between them
        if sz <= 16384:
            held.append((b.malloc(sz), b.malloc(16)))
            held.append((b.malloc(sz), b.malloc(16)))
    for blk, _ in held:
        b.free(blk)
    for sz in reversed(sizes):           # searches over a full bitmap, splits into every list
        b.free(b.malloc(sz))
    for _, guard in held:                # frees that merge with both neighbours
        b.free(guard)
    for k in range(6, 15):               # the longest search and a remainder joining a non-empty list:
        x = (1 << k) + 1                 # rounded up past second level 0 of first level k, it misses
        spare = (1 << (k + 1)) - x       # there; the only fit is a 2^(k+1) block, whose remainder
        parts = [b.malloc(16), b.malloc(1 << (k + 1)), b.malloc(16)]  # joins a non-empty list
        parts += [b.malloc(1 << k), b.malloc(16)]  # and a too-small block at level k: its map is not empty
        for r in range(max(8, spare - 48), min(spare + 32, x - 16), 8):
            parts += [b.malloc(r), b.malloc(16)]
        for blk in parts[1::2]:
            b.free(blk)
        b.free(b.malloc(x))
        for blk in parts[0::2]:
            b.free(blk)
    b.free(b.malloc(ARENA_SIZE - 65536))  # the largest request
    out.append(("worst-tlsf", b.build("worst-tlsf"), ["tlsf", "tlsf-sl2"]))

    b = TraceBuilder()
    ids = [b.malloc(16) for _ in range(POOL_REQUESTS)]
    for i in ids:
        b.free(i)
    out.append(("worst-pools", b.build("worst-pools"), ["poolset", "lfpool", "pool"]))
    return out


# --------------------------------------------------------------------------
# `heapkit bench --target cortex-m3`

def parse_opts(text: str | None) -> list[str]:
    if not text:
        return list(OPT_LEVELS)
    out = []
    for part in text.split(","):
        o = "-" + part.strip().lstrip("-")
        if o not in OPT_LEVELS:
            raise HeapkitError(f"--opt: {part.strip()!r} is not one of O2, Os")
        if o not in out:
            out.append(o)
    return out


def summary_rows(data: dict, opt: str) -> list[dict[str, Any]]:
    """Per allocator at *opt*: pooled malloc/free p50 and max over the non-directed
    traces, the directed worst case, failures, corruptions and .text bytes."""
    rows: dict[str, dict[str, Any]] = {}
    for r in data["runs"]:
        if r["opt"] != opt or r.get("result") is None:
            continue
        row = rows.setdefault(r["allocator"], {"allocator": r["allocator"], "family": r["family"],
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
        pooled = data["pooled"].get(opt, {}).get(alloc, {})
        for k in ("malloc", "free"):
            st = pooled.get(k) or {}
            row[f"{k}_p50"] = st.get("p50")
            row[f"{k}_max"] = st.get("max")
        row["text"] = data["text_bytes"].get(opt, {}).get(alloc)
    return list(rows.values())


def run_bench(args, cli) -> int:
    """`heapkit bench --target cortex-m3`: the host replays (timings, unless
    --no-host) and the target's instruction counts, side by side."""
    if args.target not in TARGETS:
        raise HeapkitError(f"--target: unknown target {args.target!r} (have: {', '.join(TARGETS)})")
    opts = parse_opts(args.opt)
    allocs = [a.strip() for a in args.alloc.split(",") if a.strip()] if args.alloc else None
    if not args.trace and not args.workload and not args.worst_case:
        raise HeapkitError("give at least one --trace FILE, --workload NAME or --worst-case")
    with tempfile.TemporaryDirectory(prefix="heapkit-") as tmp:
        named = cli._prepare_traces(args, tmp)
        traces: list[tuple] = [(name, Trace.load(path)) for name, path in named]
        if args.worst_case:
            traces += worst_case_traces()
        data = bench(traces, allocs, opts, jobs=args.jobs, progress=True)
        host: dict[tuple[str, str], dict] = {}
        if not args.no_host and named:
            engine = cli._engine()
            on_host = set(engine.list_allocators())
            names = {r["allocator"] for r in data["runs"] if r.get("result")}
            for name, path in named:
                for a in sorted(names & on_host):
                    res = cli._run_engine("replay", engine.replay, a, name, path, a)
                    host[(a, name)] = cli.bench_row(res)
        data["host"] = [{"allocator": a, "trace": t, **row} for (a, t), row in host.items()]
    if unknown := [a for a in (allocs or []) if a not in {r["allocator"] for r in data["runs"]}]:
        raise HeapkitError(f"unknown allocator(s) on the target: {', '.join(unknown)}")
    for name, why in data["skipped_traces"].items():
        print(f"skipped {name}: {why}", file=sys.stderr)
    cal = data["calibration"] or {}
    print(f"Cortex-M3 (QEMU mps2-an385, -icount shift=7): instructions per call, exact; "
          f"calibration: empty window {cal.get('empty')}, 1-instruction callee {cal.get('nop')}, "
          f"1000-instruction callee {cal.get('insns_1000')} ({cal.get('ticks_1000')} SysTick ticks)")
    for opt in opts:
        rows = []
        for r in data["runs"]:
            if r["opt"] != opt:
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
                         cli._num(h.get("malloc_p50")), cli._num(h.get("free_p50")), ""])
        print(f"\n{opt}: per trace")
        print(cli._table(["allocator", "trace", "fail", "malloc p50", "malloc p99.9", "malloc max",
                          "free p50", "free max", "realloc max", "errors", "host malloc p50 ns",
                          "host free p50 ns", "note"], rows, right=set(range(2, 12))))
    for opt in opts:
        rows = [[r["allocator"], r["malloc_p50"], r["malloc_max"], r["free_p50"], r["free_max"],
                 r["worst_malloc"], r["worst_free"], r["text"], r["failures"], r["corrupt"]]
                for r in summary_rows(data, opt)]
        print(f"\n{opt}: over all traces (instructions; worst path = directed test)")
        print(cli._table(["allocator", "malloc p50", "malloc max", "free p50", "free max",
                          "worst-path malloc", "worst-path free", ".text bytes", "failures", "errors"],
                         rows, right=set(range(1, 10))))
    if args.json:
        cli._write_json(args.json, data)
    return 0


# --------------------------------------------------------------------------
# The report's section (heapkit report RESULTS..., with a heapkit-target file)

def report_section(docs: Sequence[dict]) -> str:
    """HTML for the Cortex-M3 section of `heapkit report` from heapkit-target documents."""
    from . import report as rep
    if not docs:
        return ('<p class="na">No target results: run <code>heapkit bench --target cortex-m3 '
                '--json FILE</code> and pass FILE to <code>heapkit report</code>.</p>')
    out = []
    for data in docs:
        host: dict[str, dict[str, list[float]]] = {}
        for h in data.get("host") or []:
            d = host.setdefault(h["allocator"], {"malloc": [], "free": []})
            for k in ("malloc", "free"):
                if h.get(f"{k}_p50") is not None:
                    d[k].append(h[f"{k}_p50"])
        cal = data.get("calibration") or {}
        traces = [t["name"] for t in data.get("traces", []) if not t.get("skipped")]
        skipped = data.get("skipped_traces") or {}
        for opt in data.get("opts", []):
            rows = []
            for r in summary_rows(data, opt):
                hm = host.get(r["allocator"], {})
                med = {k: (float(np.median(v)) if v else None) for k, v in hm.items()}
                rows.append([r["allocator"], rep.fmt_int(r["malloc_p50"]), rep.fmt_int(r["malloc_max"]),
                             rep.fmt_int(r["free_p50"]), rep.fmt_int(r["free_max"]),
                             rep.fmt_int(r["worst_malloc"]), rep.fmt_int(r["worst_free"]),
                             rep.fmt_int(r["text"]), rep.fmt_int(r["failures"]),
                             (rep.fmt_int(r["corrupt"]), "bad") if r["corrupt"] else "0",
                             rep.fmt_ns(med.get("malloc")), rep.fmt_ns(med.get("free"))])
            out.append(f"<h3>{rep.esc(opt)}</h3>")
            out.append(rep.table(["allocator", "malloc p50", "malloc max", "free p50", "free max",
                                  "worst-path malloc", "worst-path free", ".text bytes", "failures",
                                  "errors", "host malloc p50 ns (median)", "host free p50 ns (median)"],
                                 rows))
        out.append(rep.cap(
            f"Exact instructions per call on QEMU mps2-an385 (Cortex-M3, -icount shift=7, "
            f"SysTick read around each call; calibration: empty window {cal.get('empty')}, "
            f"1-instruction callee {cal.get('nop')}, 1000-instruction callee "
            f"{cal.get('insns_1000')}). p50 and max pool every call of the traces "
            f"{rep.esc(', '.join(t for t in traces if not t.startswith('worst-')))}; worst-path "
            f"columns are the directed worst-case traces. Arena {data.get('arena', 0):,} bytes "
            f"(umm: 256 KiB; newlib: its sbrk heap). .text = Berkeley text of the allocator's "
            f"objects (newlib: its prebuilt malloc members). Host columns: median over the traces "
            f"of the host engine's p50 (noisy)."
            + (" Skipped (too big for the board): " + rep.esc("; ".join(f"{k}: {v}" for k, v in skipped.items()))
               if skipped else "")))
    return "\n".join(out)
