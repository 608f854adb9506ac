# SPDX-License-Identifier: MIT
"""Exact instructions per allocator call on an emulated Cortex-M3 or RV32 core.

``heapkit bench --target cortex-m3`` and ``--target rv32`` come here. One
driver in lab/target/ (icount.c, allocs.c, probe.c) replays one embedded
trace against every heapkit catalog entry and the peers (FreeRTOS heap_4
and heap_5, o1heap, umm_malloc, Conte's TLSF, the toolchain's C library)
inside QEMU with ``-icount shift=7`` and reads a counter around each call,
so every count is exact and the same on every run. Per target only the
measuring window and its counter differ:

- ``cortex-m3``: QEMU mps2-an385, SysTick (SYST_CVR) read around each call
  (measure_m3.S, counter_m3.c), arm-none-eabi-gcc with newlib;
- ``rv32``: QEMU virt, RV32IMAC in machine mode, the minstret CSR read
  around each call (measure_rv32.S, counter_rv32.c; QEMU's icount makes it
  128 ns of virtual time per instruction), riscv64-unknown-elf-gcc
  -march=rv32imac -mabi=ilp32 with picolibc.

Steps, all cached under :func:`build_dir` (``target-icount`` in the lab's
cache, ``build/`` in a checkout, or ``$HEAPKIT_TARGET_BUILD``); the sources
are the checkout's or, installed, the package's copy (:mod:`heapkit.native`):

1. the peers' sources: tools/fetch_peers.sh (reusing a checkout's host
   build's ``build/gcc/peers`` when it is there);
2. objects, once per target, optimisation level (-O2, -Os), hardening level
   (``HK_HARDENING``, when asked for) and arena size, every source with the
   same compiler and flags (-ffunction-sections -fdata-sections -DNDEBUG);
   rebuilt when a source, header or flag changes;
3. the objects linked with the board port (ports/baremetal/<board>: startup,
   link.ld, runtime) into one ELF per build;
4. per trace: the .hkb converted to the driver's compact form (:func:`compact`,
   ids replaced by reusable slots) in a host file, which the driver reads
   through semihosting a chunk at a time, outside the measured windows;
5. ports/baremetal/run-qemu.sh runs it; the JSON lines it prints and the raw
   counts (one 32-bit word per record, written back to the host a chunk at a
   time) come back as a dict.

A trace of any length fits: only its blocks live at once must fit the
driver's slot table (:meth:`Target.fits`). Every allocator gets the same
arena (:data:`ARENA_SIZE`, 16 MiB, unless ``--arena`` says otherwise, up to
the board's :attr:`Target.max_arena`), except the C library (the port's
sbrk heap: on the Cortex-M3 what its 4 MiB RAM leaves) and umm (256 KiB at
most: 15-bit block indices).
"""

from __future__ import annotations

import concurrent.futures as cf
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any, Iterable, Sequence

import numpy as np

from . import progress as _progress
from .boards import ARENA_SIZE, CORTEX_M3, RV32, Target, get_target
from .errors import HeapkitError
from .native import BUILD_DIR, CACHE_DIR, SOURCE_ROOT
from .trace import (NULL_ID, OP_ALIGNED, OP_CALLOC, OP_FREE, OP_MALLOC, OP_REALLOC, Trace)

OPT_LEVELS = ("-O2", "-Os", "-O0")    # -O0: as the fctma-pools seed compiled
DEFAULT_OPTS = ("-O2", "-Os")
HARDENING_LEVELS = (0, 1, 2, 3)
MIN_ARENA = 16 * 1024
KINDS = ("malloc", "free", "calloc", "aligned", "realloc")
KIND_NONE = 7
COUNT_MASK = (1 << 29) - 1
MAX_ALLOCS_PER_RUN = 24                 # the ports' semihosting command line holds 32 words
FAMILIES_HARDENED = ("heapkit", "uniform", "traced")

TARGET_DIR = SOURCE_ROOT / "lab" / "target"
PORT_DIR = SOURCE_ROOT / "ports" / "baremetal"
TRACE_DIR = SOURCE_ROOT / "ports" / "trace"
PEERS_DIR = SOURCE_ROOT / "lab" / "engine" / "peers"
LV_SHIM = PEERS_DIR / "tlsf_conte" / "lv_tlsf_shim.h"
COMMON_FLAGS = ["-std=gnu11", "-ffunction-sections", "-fdata-sections", "-DNDEBUG", "-g0"]

# Compact trace (lab/target/icount.h)
HKC_MAGIC = 0x43544B48
HKC_VERSION = 1
HKC_MALLOC, HKC_FREE, HKC_CALLOC, HKC_ALIGNED, HKC_REALLOC, HKC_REALLOC_NULL = range(6)

# Which objects make up each allocator's code (for the .text column).
_HEAPKIT_CODE = {
    "bump": ["bump"], "seqfit": ["seqfit", "tagged"], "buddy": ["buddy"],
    "tlsf": ["tlsf", "tagged"], "poolset": ["poolset", "pool", "bump"], "lfpool": ["pool_lockfree"],
    "pool": ["pool", "bump"], "dmm": ["dmm", "tagged"],
}
_PEER_CODE = {"sdma": "tgt_sdma", "freertos-heap4": "heap_4", "freertos-heap5": "heap_5", "o1heap": "o1heap",
              "umm": "umm_malloc", "tlsf-conte": "lv_tlsf"}


class TargetError(HeapkitError):
    """Building or running the target driver failed; the message says where."""


def build_label(opt: str, hardening: int | None) -> str:
    """How results name one build: the level, plus the hardening level when one was asked for."""
    return opt if hardening is None else f"{opt}/h{hardening}"


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
    max_request = max((s * (a if o == OP_CALLOC else 1) for o, s, a in zip(ops, sizes, auxs) if o != OP_FREE),
                      default=0)
    header = [HKC_MAGIC, HKC_VERSION, n, slots, len(words), trace.n_ids, min(max_request, 0xFFFFFFFF), 0]
    data = np.asarray(header + words, dtype="<u4").tobytes()
    return data, {"records": n, "slots": slots, "ids": trace.n_ids, "words": len(words)}


def fits(meta: dict[str, int], target: str | Target = CORTEX_M3) -> str | None:
    """None when the trace fits *target*'s board, else why not."""
    return get_target(target).fits(meta)


# --------------------------------------------------------------------------
# Building

def build_dir() -> Path:
    value = os.environ.get("HEAPKIT_TARGET_BUILD")
    return Path(value).resolve() if value else CACHE_DIR / "target-icount"


def missing_tools(target: str | Target = CORTEX_M3) -> list[str]:
    t = get_target(target)
    return [x for x in (t.cc, t.size, t.qemu) if shutil.which(x) is None]


def _run(argv: list[str], what: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    try:
        proc = subprocess.run(argv, cwd=cwd or SOURCE_ROOT, capture_output=True, text=True)
    except FileNotFoundError:
        raise TargetError(f"{argv[0]} not found: needed for {what} (install it: apt-get install "
                          f"{CORTEX_M3.packages} {RV32.packages})") from None
    if proc.returncode != 0:
        tail = (proc.stdout + proc.stderr).strip().splitlines()[-12:]
        raise TargetError(f"{what} failed ({' '.join(argv[:3])} ...):\n" + "\n".join(tail))
    return proc


_PEER_MARKS = {"freertos": "portable/MemMang/heap_4.c", "o1heap": "o1heap.c", "umm": "umm_malloc.c",
               "tlsf_conte": "lv_tlsf.c"}


def peer_sources() -> dict[str, Path]:
    """Peer source directories that exist, fetching them when some are missing."""
    def layout(root: Path) -> dict[str, Path]:
        src = root / "src"
        return {"freertos": src / "freertos-next-0.12.0" / "FreeRTOS-Kernel",
                "o1heap": src / "o1heap-0.0.2" / "o1heap" / "o1heap",
                "umm": src / "umm-malloc-sys-0.3.2" / "umm_malloc" / "src",
                "tlsf_conte": src / "lvgl-sys-0.6.2" / "vendor" / "lvgl" / "src" / "misc"}

    def present(d: dict[str, Path]) -> dict[str, Path]:
        return {k: p for k, p in d.items() if (p / _PEER_MARKS[k]).is_file()}

    for root in ([BUILD_DIR / "peers"] if BUILD_DIR else []) + [build_dir() / "peers"]:
        found = present(layout(root))
        if len(found) == len(_PEER_MARKS):
            return found
    root = build_dir() / "peers"
    proc = subprocess.run(["sh", str(SOURCE_ROOT / "tools" / "fetch_peers.sh"), str(root)],
                          capture_output=True, text=True)
    found = present(layout(root))
    if proc.returncode != 0 and len(found) < len(_PEER_MARKS):
        print(f"heapkit: some peers skipped on the target: {proc.stderr.strip()}", file=sys.stderr)
    return found


def _sources(t: Target, peers: dict[str, Path], arena: int, hardening: int | None,
             dmm_header: Path | None = None) -> list[tuple[str, Path, list[str]]]:
    """(object name, source, extra flags) for every object of the image; *dmm_header* adds
    its dmm configurations to the driver (lab/target/allocs.c, TGT_DMM_CONFIGS)."""
    inc = ["-I" + str(SOURCE_ROOT / "include"), "-I" + str(SOURCE_ROOT / "src"), "-I" + str(TARGET_DIR),
           "-I" + str(PORT_DIR / "common")]
    hk = [] if hardening is None else [f"-DHK_HARDENING={hardening}"]
    out = [(p.stem, p, inc + hk) for p in sorted((SOURCE_ROOT / "src").glob("*.c"))]
    defines = []
    if "freertos" in peers:
        f = peers["freertos"]
        finc = ["-I" + str(TARGET_DIR / "freertos"), "-I" + str(f / "include"),
                "-I" + str(f / "portable" / "GCC" / t.freertos_port), *t.freertos_flags]
        for h in (4, 5):
            out.append((f"heap_{h}", f / "portable" / "MemMang" / f"heap_{h}.c",
                        finc + [f"-DTGT_FREERTOS_HEAP={h}", "-w"]))
        defines += ["-DTGT_HAVE_FREERTOS", f"-DTGT_FREERTOS_ALIGN={t.freertos_align}"]
    if "o1heap" in peers:
        out.append(("o1heap", peers["o1heap"] / "o1heap.c", ["-w"]))
        defines += ["-DTGT_HAVE_O1HEAP", "-I" + str(peers["o1heap"])]
    if "umm" in peers:
        out.append(("umm_malloc", peers["umm"] / "umm_malloc.c",
                    ["-I" + str(TARGET_DIR / "umm"), "-I" + str(peers["umm"]), "-w"]))
        defines += ["-DTGT_HAVE_UMM", "-I" + str(TARGET_DIR / "umm"), "-I" + str(peers["umm"])]
    if "tlsf_conte" in peers:
        lv = [f"-DLV_MEM_SIZE={arena}u"]
        out.append(("lv_tlsf", peers["tlsf_conte"] / "lv_tlsf.c", ["-include", str(LV_SHIM), *lv, "-w"]))
        defines += ["-DTGT_HAVE_TLSF_CONTE", "-I" + str(LV_SHIM.parent), "-I" + str(peers["tlsf_conte"]), *lv]
    trace_inc = ["-I" + str(TRACE_DIR)]
    out.append(("hk_trace", TRACE_DIR / "hk_trace.c", inc + trace_inc + hk))
    dmm = [f'-DTGT_DMM_CONFIGS="{dmm_header}"'] if dmm_header else []
    for name in ("icount", "allocs", "probe", "sdma"):
        out.append((f"tgt_{name}", TARGET_DIR / f"{name}.c",
                    inc + trace_inc + defines + hk + (dmm if name == "allocs" else [])))
    out.append(("tgt_measure", TARGET_DIR / t.measure, []))
    out.append(("tgt_counter", TARGET_DIR / t.counter, inc))
    out.append(("port_startup", PORT_DIR / t.board / "startup.c", inc))
    out.append(("port_runtime", PORT_DIR / "common" / "runtime.c", inc))
    return out


def _fingerprint(t: Target, sources: list[tuple[str, Path, list[str]]], flags: list[str]) -> str:
    h = hashlib.sha256(" ".join([t.name, *flags]).encode())
    dirs = {SOURCE_ROOT / "include" / "heapkit", SOURCE_ROOT / "src", TARGET_DIR, TRACE_DIR,
            TARGET_DIR / "freertos", TARGET_DIR / "umm", PORT_DIR / "common", LV_SHIM.parent}
    files = {p for _, p, _ in sources}
    for d in dirs:
        files.update(d.glob("*.h"))
    for p in sorted(files):
        h.update(str(p).encode())
        h.update(p.read_bytes())
    for _, _, extra in sources:
        h.update(" ".join(extra).encode())
    return h.hexdigest()


def opt_dir(opt: str, target: str | Target = CORTEX_M3, arena: int = ARENA_SIZE,
            hardening: int | None = None, dmm_header: Path | None = None) -> Path:
    t = get_target(target)
    name = opt.lstrip("-") + ("" if hardening is None else f"-h{hardening}") + \
        ("" if arena == ARENA_SIZE else f"-a{arena}") + ("" if dmm_header is None else f"-{dmm_header.stem}")
    return build_dir() / t.name / name


def dmm_header_file(text: str) -> Path:
    """*text* (a TGT_DMM_CONFIGS header) in the build cache, named by its content hash, so
    each set of configurations has a build directory of its own."""
    path = build_dir() / "dmm-configs" / f"dmm{hashlib.sha256(text.encode()).hexdigest()[:12]}.h"
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return path


def check_arena(arena: int, target: str | Target = CORTEX_M3) -> int:
    t = get_target(target)
    if arena < MIN_ARENA or arena > t.max_arena or arena % 8:
        raise HeapkitError(f"--arena: {arena} bytes is not a multiple of 8 between {MIN_ARENA} and "
                           f"{t.max_arena} ({t.title})")
    return arena


def build_objects(opt: str, jobs: int = 2, target: str | Target = CORTEX_M3, arena: int = ARENA_SIZE,
                  hardening: int | None = None, dmm_header: Path | None = None) -> dict[str, Any]:
    """Compile every object of *target* at *opt* (cached); returns {"dir", "objects",
    "peers", "flags", "target", "opt", "hardening", "arena", "label"}."""
    t = get_target(target)
    if opt not in OPT_LEVELS:
        raise TargetError(f"optimisation level {opt!r} not supported (use {', '.join(OPT_LEVELS)})")
    if hardening is not None and hardening not in HARDENING_LEVELS:
        raise TargetError(f"hardening level {hardening!r} not supported (use 0-3)")
    check_arena(arena, t)
    if missing_tools(t):
        raise TargetError(f"missing tools for the {t.title} target: {', '.join(missing_tools(t))} "
                          f"(install them: apt-get install {t.packages})")
    peers = peer_sources()
    sources = _sources(t, peers, arena, hardening, dmm_header)
    flags = [*t.cpu_flags, opt, *COMMON_FLAGS, f"-DTGT_ARENA_SIZE={arena}", f"-DTGT_MAX_SLOTS={t.max_slots}"]
    d = opt_dir(opt, t, arena, hardening, dmm_header)
    obj = d / "obj"
    stamp = d / "objects.stamp"
    fp = _fingerprint(t, sources, flags)
    objects = {name: obj / f"{name}.o" for name, _, _ in sources}
    info = {"dir": d, "objects": objects, "peers": sorted(peers), "flags": flags, "target": t,
            "opt": opt, "hardening": hardening, "arena": arena, "label": build_label(opt, hardening),
            "fingerprint": fp, "elf": d / "icount.elf"}
    if stamp.exists() and stamp.read_text() == fp and all(p.exists() for p in objects.values()) \
            and info["elf"].exists():
        return info
    obj.mkdir(parents=True, exist_ok=True)

    def compile_one(item):
        name, src, extra = item
        _run([t.cc, *flags, *extra, "-c", str(src), "-o", str(obj / f"{name}.o")],
             f"compiling {src.name} ({t.name} {opt})")

    with cf.ThreadPoolExecutor(max_workers=max(1, jobs)) as ex:
        list(ex.map(compile_one, sources))
    _link(info)
    stamp.write_text(fp)
    (d / "allocators.json").unlink(missing_ok=True)
    return info


def _link(info: dict[str, Any]) -> None:
    t: Target = info["target"]
    elf: Path = info["elf"]
    place = [] if t.arena_addr is None else [f"-Wl,--defsym=tgt_arena={t.arena_addr:#x}"]
    _run([t.cc, *info["flags"], *t.link_flags,
          "-T", str(PORT_DIR / t.board / "link.ld"), "-Wl,--gc-sections", *place,
          *[str(p) for p in info["objects"].values()], "-o", str(elf)],
         f"linking {elf.name} ({t.name})")


def prepare_trace(name: str, trace: Trace, workdir: Path,
                  target: str | Target = CORTEX_M3) -> dict[str, Any]:
    """Write the compact trace the driver streams in; returns its metadata (``hkc``, the
    file; ``skipped`` holds the reason when it does not fit *target*'s board)."""
    t = get_target(target)
    data, meta = compact(trace)
    meta = {"name": name, **meta, "hkc_bytes": len(data), "skipped": t.fits(meta)}
    if meta["skipped"]:
        return meta
    workdir.mkdir(parents=True, exist_ok=True)
    hkc = workdir / f"{_safe(name)}.hkc"
    hkc.write_bytes(data)
    meta["hkc"] = str(hkc)
    return meta


def _safe(name: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in name)


def allocators(info: dict[str, Any]) -> list[dict[str, Any]]:
    """The driver's allocators in this build: [{"name", "family", "optional"}] in its order
    (`--list`, run once per build and cached next to the objects)."""
    cache = info["dir"] / "allocators.json"
    if cache.exists():
        saved = json.loads(cache.read_text())
        if saved.get("fingerprint") == info["fingerprint"]:
            return saved["allocators"]
    elf = info["elf"]
    proc = _qemu(elf, ["--list"], timeout=120)
    if proc.returncode != 0:
        raise TargetError(f"{elf.name}: --list failed (status {proc.returncode}): {proc.stdout[-300:]}")
    out = []
    for line in proc.stdout.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[2] in ("default", "optional"):
            out.append({"name": parts[0], "family": parts[1], "optional": parts[2] == "optional"})
    cache.write_text(json.dumps({"fingerprint": info["fingerprint"], "allocators": out}))
    return out


# --------------------------------------------------------------------------
# Running

_ELF_MACHINES = {40: CORTEX_M3, 243: RV32}   # EM_ARM, EM_RISCV


def elf_target(elf: Path) -> Target:
    """The target an ELF of ours was built for, from its header's e_machine."""
    with open(elf, "rb") as f:
        head = f.read(20)
    machine = int.from_bytes(head[18:20], "little") if len(head) == 20 and head[:4] == b"\x7fELF" else None
    if machine not in _ELF_MACHINES:
        raise TargetError(f"{elf}: not an ELF for a known target (e_machine {machine})")
    return _ELF_MACHINES[machine]


def _qemu(elf: Path, args: Sequence[str], timeout: int, cwd: Path | None = None) -> subprocess.CompletedProcess:
    env = dict(os.environ, HK_QEMU_TIMEOUT=str(timeout))
    return subprocess.run([str(PORT_DIR / "run-qemu.sh"), elf_target(elf).board, str(elf), *args],
                          capture_output=True, text=True, env=env, cwd=cwd or elf.parent)


def run_elf(elf: Path, hkc: str | os.PathLike, allocs: Sequence[str] = (), counts_prefix: str | None = None,
            timeout: int = 1800) -> list[dict]:
    """Run the driver in QEMU (the board its ELF was built for) on the compact trace *hkc*;
    its JSON lines (an error line raises). The driver opens *hkc* and writes the counts
    (*counts_prefix*, a folder with a trailing slash) through semihosting: QEMU runs in
    *hkc*'s folder and both are passed relative to it, so no path holds a space."""
    hkc = Path(hkc).resolve()
    args = [f"--trace={hkc.name}"]
    if counts_prefix:
        args.append("--counts=" + os.path.relpath(counts_prefix, hkc.parent) + "/")
    proc = _qemu(elf, args + list(allocs), timeout, cwd=hkc.parent)
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


def checksum(words: np.ndarray) -> str:
    """The driver's checksum of a run's count words (FNV-1a over whole words)."""
    h = 2166136261
    for w in words.tolist():
        h = ((h ^ w) * 16777619) & 0xFFFFFFFF
    return f"{h:08x}"


def checked_counts(path: Path, result: dict) -> np.ndarray:
    """The count words of one run, checked against what the driver saw as they streamed
    past (its checksum and per-kind count, min, max and sum), so a count file cut short
    or mixed up cannot pass for a measurement."""
    words = read_counts(path) if path.exists() else np.zeros(0, dtype="<u4")
    ok = len(words) == result["records"] and checksum(words) == result["checksum"]
    kinds, counts = words >> 29, (words & COUNT_MASK).astype(np.int64)
    for i, seen in enumerate(result["ops"].values()):
        mine = counts[kinds == i]
        ok = ok and len(mine) == seen["count"] and (len(mine) == 0 or (
            int(mine.min()) == seen["min"] and int(mine.max()) == seen["max"] and int(mine.sum()) == seen["sum"]))
    if not ok:
        raise TargetError(f"{path.name}: the counts written to the host do not match the driver's "
                          f"({len(words):,} words for {result['records']:,} records)")
    return words


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
        return {"count": 0, "min": None, "p50": None, "p99": None, "p999": None, "max": None, "mean": None,
                "sd": None}

    def rank(pm: int) -> int:
        k = (n * pm + 999) // 1000
        return int(v[max(k, 1) - 1])
    return {"count": n, "min": int(v[0]), "p50": rank(500), "p99": rank(990), "p999": rank(999),
            "max": int(v[-1]), "mean": float(v.mean()), "sd": float(v.std())}


def _code_family(alloc: str) -> list[str] | None:
    base = alloc.removesuffix("-uniform").removesuffix("-traced")
    fam = next((k for k in sorted(_HEAPKIT_CODE, key=len, reverse=True) if base.startswith(k)), None)
    recorder = ["hk_trace"] if alloc.endswith("-traced") else []
    return ["core", "heap"] + _HEAPKIT_CODE[fam] + recorder if fam else None


def text_bytes(info: dict[str, Any], allocs: Iterable[str]) -> dict[str, int | None]:
    """Berkeley `size` text (code + rodata) of each allocator's own objects in this build."""
    t: Target = info["target"]
    objs: dict[str, list[Path | None]] = {}
    allocs = list(allocs)
    for a in allocs:
        if a in _PEER_CODE:
            objs[a] = [info["objects"].get(_PEER_CODE[a])]
        elif a == t.libc:
            continue
        else:
            names = _code_family(a)
            objs[a] = [info["objects"].get(n) for n in names] if names else [None]
    out: dict[str, int | None] = {}
    for a, paths in objs.items():
        if any(p is None or not p.exists() for p in paths):
            out[a] = None
            continue
        proc = _run([t.size, *map(str, paths)], "measuring code size")
        out[a] = sum(int(l.split()[0]) for l in proc.stdout.splitlines()[1:] if l.strip())
    if t.libc in allocs:
        out[t.libc] = _libc_text(t)
    return out


def _libc_archive(t: Target) -> str | None:
    """The libc.a the link uses: the compiler's own (newlib), or picolibc's from its specs file."""
    try:
        if t.libc == "newlib":
            return subprocess.run([t.cc, *t.cpu_flags, "-print-file-name=libc.a"], capture_output=True,
                                  text=True).stdout.strip() or None
        specs = subprocess.run([t.cc, "-print-file-name=picolibc.specs"], capture_output=True,
                               text=True).stdout.strip()
        multi = subprocess.run([t.cc, *t.cpu_flags, "-print-multi-directory"], capture_output=True,
                               text=True).stdout.strip()
        m = re.search(r":(/[^;{}%\s]+)/%M\}", Path(specs).read_text())
        return str(Path(m.group(1)) / multi / "libc.a") if m else None
    except (FileNotFoundError, OSError):
        return None


def _libc_text(t: Target) -> int | None:
    lib = _libc_archive(t)
    if not lib or not Path(lib).is_file():
        return None
    try:
        proc = subprocess.run([t.size, lib], capture_output=True, text=True)
    except FileNotFoundError:
        return None
    total = 0
    for line in proc.stdout.splitlines()[1:]:
        parts = line.split()
        if len(parts) >= 6 and parts[5] in t.libc_members:
            total += int(parts[0])
    return total or None


LONG_TRACE = 50_000          # records: a trace at least this long spreads its allocators over the jobs
RECORDS_PER_SECOND = 2_000   # a floor of QEMU's pace (seconds per run scale with records x allocators)


def _chunks(names: Sequence[str], n: int = MAX_ALLOCS_PER_RUN) -> list[list[str]]:
    return [list(names[i:i + n]) for i in range(0, len(names), n)]


def _per_run(allocs: int, records: int, jobs: int) -> int:
    """Allocators per QEMU run: all in one (up to the command line's limit) for a short
    trace, spread over *jobs* runs for a long one."""
    if records < LONG_TRACE or jobs <= 1:
        return MAX_ALLOCS_PER_RUN
    return max(1, min(MAX_ALLOCS_PER_RUN, -(-allocs // jobs)))


def _timeout(records: int, allocs: int) -> int:
    """Seconds a run may take before it counts as hung."""
    return max(1800, records * max(1, allocs) // RECORDS_PER_SECOND)


def bench(traces: Sequence[tuple], allocs: Sequence[str] | None = None,
          opts: Sequence[str] = DEFAULT_OPTS, jobs: int = 2, progress: bool = False,
          target: str | Target = CORTEX_M3, arena: int = ARENA_SIZE,
          hardening: Sequence[int] | None = None, uniform: bool = False,
          dmm_header: str | None = None) -> dict[str, Any]:
    """Replay every trace in every build against *allocs* (default: every allocator the
    driver runs by default, plus every ``<catalog>-uniform`` twin with *uniform*) on *target*.

    One build per (level in *opts*, level in *hardening*); without *hardening* the
    heapkit sources are built with their default ``HK_HARDENING`` and results are
    labelled by level only. The peers do not depend on the hardening level: they are
    replayed in the first hardening build only.

    *traces* holds (name, Trace) pairs, or (name, Trace, allocators) triples for a
    trace meant for some allocators only (the directed worst-case traces); those
    runs carry ``"directed": true``.

    *dmm_header* (text) is a TGT_DMM_CONFIGS header (lab/target/allocs.c) whose dmm
    configurations join the allocators, under the names its TGT_DMM_ENTRIES give.

    Returns the ``heapkit-target`` document of docs/results-format.md (without
    ``host``; docs/benchmarks.md lists the keys added since): each run's ``result``
    is the driver's JSON line and ``stats`` the same statistics recomputed from the
    raw counts (plus the mean); ``pooled`` pools the raw counts of every non-directed
    trace per build and allocator."""
    t = get_target(target)
    if not traces:
        raise TargetError("no traces to run on the target")
    levels: list[int | None] = list(hardening) if hardening else [None]
    builds = [(opt, h) for opt in opts for h in levels]
    header = dmm_header_file(dmm_header) if dmm_header else None
    infos = {build_label(o, h): build_objects(o, jobs, t, arena, h, header) for o, h in builds}
    labels = list(infos)
    first_level = {opt: build_label(opt, levels[0]) for opt in opts}
    table = {lab: allocators(info) for lab, info in infos.items()}
    known = {a["name"] for a in table[labels[0]]}
    if allocs:
        if unknown := [a for a in allocs if a not in known]:
            raise HeapkitError(f"unknown allocator(s) on the target: {', '.join(unknown)} "
                               f"(have: {', '.join(sorted(known))})")
    families = {a["name"]: a["family"] for a in table[labels[0]]}

    def selection(lab: str, only: list[str] | None) -> list[str]:
        rows = table[lab]
        if only is not None:
            names = [a for a in only if a in {r["name"] for r in rows}]
        elif allocs:
            names = list(allocs)
        else:
            names = [r["name"] for r in rows if not r["optional"] or (uniform and r["family"] == "uniform")]
        if lab != first_level[infos[lab]["opt"]]:
            names = [a for a in names if families.get(a) in FAMILIES_HARDENED]
        return names

    root = build_dir() / "runs"
    root.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="run-", dir=root))
    metas = []
    try:
        for i, item in enumerate(traces):
            m = prepare_trace(item[0], item[1], work / f"t{i}", t)
            m["dir"] = work / f"t{i}"
            m["only"] = list(item[2]) if len(item) > 2 else None
            if m["only"] is not None and allocs:
                m["only"] = [a for a in m["only"] if a in allocs]
            if m["only"] is not None:
                m["only"] = [a for a in m["only"] if a in known]
            if m["only"] == []:
                continue
            metas.append(m)
        # A long trace's allocators are spread over the jobs (one QEMU each), a short
        # trace's go into as few runs as the command line allows.
        jobs_list = [(lab, m, chunk) for lab in labels for m in metas if not m["skipped"]
                     for chunk in _chunks(selection(lab, m["only"]),
                                          _per_run(len(selection(lab, m["only"])), m["records"], jobs))]

        def one(item):
            lab, m, names = item
            tdir = m["dir"] / _safe(lab)
            tdir.mkdir(parents=True, exist_ok=True)
            got = run_elf(infos[lab]["elf"], m["hkc"], names, counts_prefix=str(tdir) + "/",
                          timeout=_timeout(m["records"], len(names)))
            return lab, m, tdir, [d for d in got if d["type"] != "end"]

        results = []
        with _progress.bar(total=len(jobs_list), desc=t.name, unit="run", show=progress) as bar, \
                cf.ThreadPoolExecutor(max_workers=max(1, jobs)) as ex:
            for r in ex.map(one, jobs_list):
                results.append(r)
                bar.update()
        calibration = None
        runs = []
        names: dict[str, list[str]] = {lab: [] for lab in labels}
        for lab, m, tdir, lines in sorted(results, key=lambda r: labels.index(r[0])):
            info = infos[lab]
            for d in lines:
                if d["type"] == "calibration" and calibration is None:
                    calibration = {k: v for k, v in d.items() if k != "type"}
                elif d["type"] == "result":
                    words = checked_counts(tdir / f"{d['alloc']}.u32", d)
                    runs.append({"trace": m["name"], "opt": info["opt"], "hardening": info["hardening"],
                                 "build": lab, "allocator": d["alloc"], "family": d["family"],
                                 "directed": m["only"] is not None, "result": d, "stats": kind_stats(words)})
                    if d["alloc"] not in names[lab]:
                        names[lab].append(d["alloc"])
                elif d["type"] == "skipped":
                    runs.append({"trace": m["name"], "opt": info["opt"], "hardening": info["hardening"],
                                 "build": lab, "allocator": d["alloc"], "family": None, "result": None,
                                 "skipped": d["reason"]})
        pooled = pool_counts([r for r in results if r[1]["only"] is None])
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return {"kind": "heapkit-target", "version": 1, "target": t.name, "machine": t.machine,
            "arena": arena, "opts": list(opts), "hardening": list(hardening) if hardening else None,
            "builds": labels, "uniform": bool(uniform), "calibration": calibration,
            "traces": [{k: v for k, v in m.items() if k not in ("hkc", "dir")} for m in metas],
            "skipped_traces": {m["name"]: m["skipped"] for m in metas if m["skipped"]},
            "runs": runs, "pooled": pooled,
            "text_bytes": {lab: text_bytes(infos[lab], names[lab]) for lab in labels}}


def pool_counts(results) -> dict[str, dict[str, dict[str, Any]]]:
    """Per build and allocator, the statistics over every operation of every trace."""
    acc: dict[tuple[str, str], list[np.ndarray]] = {}
    for lab, _, tdir, lines in results:
        for d in lines:
            if d["type"] == "result":
                acc.setdefault((lab, d["alloc"]), []).append(read_counts(tdir / f"{d['alloc']}.u32"))
    out: dict[str, dict[str, Any]] = {}
    for (lab, alloc), parts in acc.items():
        out.setdefault(lab, {})[alloc] = kind_stats(np.concatenate(parts))
    return out


# --------------------------------------------------------------------------
# Directed worst-case traces

WORST_CASE_ARENA = 3_670_016  # the arena the counts below are for (3.5 MiB)
SEQFIT_FRAGMENTS = 2000       # free fragments the seqfit searches walk (fewer in arenas under 256 KiB)
BUDDY_MIN_BLOCKS = 120_000    # minimum blocks in a 3.5 MiB arena: more than every top-level block but the largest holds
POOL_REQUESTS = 30_000        # more than the pools of a 3.5 MiB arena hold
POOL_BLOCK = 128              # worst-pool's requests: "pool" sizes its one pool's block by them
TLSF_HELD_MAX = 16384         # the largest size held twice on the full-bitmap pass (3.5 MiB arena)


def worst_case_traces(arena: int = WORST_CASE_ARENA) -> list[tuple[str, Trace, list[str]]]:
    """(name, trace, allocators) driving each heapkit allocator's worst-case path in an
    arena of *arena* bytes (the counts below are for the default 3.5 MiB and scale with it).

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
      walks it) and frees that merge with both neighbours. FreeRTOS heap_4
      and heap_5 (first fit over an address-ordered list) run it too.
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
      the largest request that fits: the bitmap extremes. tlsf-uniform and
      Conte's TLSF (tlsf-conte) run it too.
    - poolset, lfpool: POOL_REQUESTS small requests, so every class empties
      (poolset falls through every class, then every pool is full and the
      request fails), then everything freed; pool (one pool sized to the
      trace's largest request) the same with POOL_BLOCK-byte requests, which
      its arena holds fewer of.
    """
    from .trace import TraceBuilder
    out: list[tuple[str, Trace, list[str]]] = []
    scale = arena / WORST_CASE_ARENA

    b = TraceBuilder()
    small = [b.malloc(1) for _ in range(round(BUDDY_MIN_BLOCKS * scale))]
    for i in small[1::2]:
        b.free(i)
    b.free(b.malloc(arena // 2))   # no block of the largest top-level size is free: buddy-lazy flushes first
    for i in small[0::2]:
        b.free(i)
    out.append(("worst-buddy", b.build("worst-buddy"), ["buddy", "buddy-lazy"]))

    b = TraceBuilder()
    frags = min(SEQFIT_FRAGMENTS, arena // 128)
    blocks = [b.malloc(16) for _ in range(2 * frags + 1)]
    for i in range(0, 2 * frags, 2):
        b.free(blocks[i])
    for _ in range(3):
        b.free(b.malloc(4096))           # fits no fragment: the whole list is searched
    b.free(blocks[2 * frags - 1])        # highest-address free: walks the list, merges both sides
    for i in range(2 * frags - 3, 0, -2):
        b.free(blocks[i])
    b.free(blocks[2 * frags])
    out.append(("worst-seqfit", b.build("worst-seqfit"),
                ["seqfit-first", "seqfit-next", "seqfit-best", "seqfit-worst", "freertos-heap4",
                 "freertos-heap5"]))

    b = TraceBuilder()
    sizes = sorted({max(1, (1 << k) + (j << max(0, k - 4)) + d)
                    for k in range(21) for j in range(16) for d in (-1, 0, 1)})
    held_max = TLSF_HELD_MAX
    while held_max > 64 and 2 * sum(sz + 48 for sz in sizes if sz <= held_max) > arena * 0.7:
        held_max //= 2
    for sz in sizes:                     # every class boundary on a fresh heap: search up to the top list
        b.free(b.malloc(sz))
    held = []
    for sz in sizes:                     # two free blocks in every list up to held_max, guards between them
        if sz <= held_max:
            held.append((b.malloc(sz), b.malloc(16)))
            held.append((b.malloc(sz), b.malloc(16)))
    for blk, _ in held:
        b.free(blk)
    for sz in reversed(sizes):           # searches over a full bitmap, splits into every list
        b.free(b.malloc(sz))
    for _, guard in held:                # frees that merge with both neighbours
        b.free(guard)
    k_max = 14
    while k_max > 6 and 14 * (1 << k_max) > arena // 2:
        k_max -= 1
    for k in range(6, k_max + 1):        # the longest search and a remainder joining a non-empty list:
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
    b.free(b.malloc(arena - min(65536, arena // 4)))  # the largest request
    out.append(("worst-tlsf", b.build("worst-tlsf"), ["tlsf", "tlsf-uniform", "tlsf-conte"]))

    for name, size, allocs in (("worst-pools", 16, ["poolset", "lfpool"]), ("worst-pool", POOL_BLOCK, ["pool"])):
        b = TraceBuilder()
        ids = [b.malloc(size) for _ in range(round(POOL_REQUESTS * scale))]
        for i in ids:
            b.free(i)
        out.append((name, b.build(name), allocs))
    return out


# --------------------------------------------------------------------------
# `heapkit bench --target cortex-m3|rv32`

def parse_opts(text: str | None) -> list[str]:
    if not text:
        return list(DEFAULT_OPTS)
    out = []
    for part in text.split(","):
        o = "-" + part.strip().lstrip("-")
        if o not in OPT_LEVELS:
            raise HeapkitError(f"--opt: {part.strip()!r} is not one of O2, Os, O0")
        if o not in out:
            out.append(o)
    return out


def parse_hardening(text: str | None) -> list[int] | None:
    """--hardening N[,N...]: HK_HARDENING levels to build, or None (the sources' default)."""
    if text is None:
        return None
    out = []
    for part in text.split(","):
        p = part.strip()
        if not p.isdigit() or int(p) not in HARDENING_LEVELS:
            raise HeapkitError(f"--hardening: {p!r} is not one of 0, 1, 2, 3")
        if int(p) not in out:
            out.append(int(p))
    return out
