#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""flash_table.py: the flash each allocator costs a firmware, measured by linking one.

    python3 tools/flash_table.py                 # print the table
    python3 tools/flash_table.py --check         # exit 1 with a diff if README.md's table is stale
    python3 tools/flash_table.py --write         # rewrite README.md's table in place
    python3 tools/flash_table.py --breakdown tlsf [--target rv32] [--opt O2] [--level 0]

Each figure is the flash bytes (`size -B` text + data: code, constants and
.data's initial values) of a program whose main initialises the allocator on
a 64 KiB static arena, calls malloc(100) and free, and returns, minus those
of a baseline program with the same main and no allocator. Results go
through volatile sinks, so nothing is optimised away. Both programs are
linked with main as the entry point and no startup files (-nostartfiles
-Wl,-e,main): a bare main keeps the baseline at a few dozen bytes that no C
library's start-up code moves, and the difference holds only what the
allocator pulls in: its functions and the C library and libgcc routines they
call (memset, memcpy, division).

Targets: Cortex-M3 (arm-none-eabi-gcc -mcpu=cortex-m3 -mthumb, newlib-nano:
--specs=nano.specs --specs=nosys.specs) and RV32IMAC (riscv64-unknown-elf-gcc
-march=rv32imac -mabi=ilp32 --specs=picolibc.specs: picolibc is the one C
library Debian builds for that toolchain), each at -Os and -O2 with
-ffunction-sections -fdata-sections -Wl,--gc-sections and -DNDEBUG (a release
build, as the lab's target driver compiles everything: o1heap's asserts would
otherwise link the C library's printing).

heapkit: each allocator's drop-in, dropin/heapkit_<name>.c (tools/dropin.py),
the two files a firmware copies, compiled at HK_HARDENING 0-2, -std=c99
(lfpool -std=c11); --gc-sections keeps what the calls reach. A build that
links libheapkit.a instead gets the same code, less what one translation
unit lets the compiler share. Peers: o1heap, Conte's
TLSF (as LVGL 8 bundles it), FreeRTOS heap_4, umm_malloc, from
tools/fetch_peers.sh (fetched into --peers when missing), compiled -std=gnu11
-w with the configuration the lab's target driver gives them (lab/target/
freertos and umm, lab/engine/peers/tlsf_conte); and the C library's own
malloc and free (newlib-nano on Cortex-M3, picolibc on RV32) with the sbrk
they call.

The table also holds the lean issue's targets (GOALS) and whether each is met.
--breakdown lists, largest first, the symbols in flash of one program that
the baseline does not have (`nm -S` of the linked ELF), then main's growth
and the unnamed rest, so that the lines add up to the table's figure.

Exit status 0, 1 (--check: stale), or 2 with one line on stderr (a missing
toolchain, a failed compile or link, peers that cannot be fetched).
"""

from __future__ import annotations

import argparse
import concurrent.futures as cf
import os
import re
import shutil
import subprocess
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tools"))

import readme_blocks  # noqa: E402

README = REPO / "README.md"
POOL_HEADER = REPO / "include" / "heapkit" / "pool.h"
ARENA = 64 * 1024
OPTS = ("-Os", "-O2")
LEVELS = (0, 1, 2)
COMMON = ("-ffunction-sections", "-fdata-sections", "-DNDEBUG")
LINK = ("-Wl,--gc-sections", "-nostartfiles", "-Wl,-e,main")
DASH = "–"


class FlashError(Exception):
    """A tool, a compile or a link failed; the message names it."""


@dataclass(frozen=True)
class Target:
    key: str                        # --target KEY, the build directory's name
    title: str                      # the table's column heading
    cc: str
    size: str
    nm: str
    flags: tuple[str, ...]          # compile and link: the core and the C library's specs
    link: tuple[str, ...]
    libc: str
    freertos_port: str              # FreeRTOS-Kernel/portable/GCC/<port>
    freertos_flags: tuple[str, ...]


TARGETS = (
    Target("cortex-m3", "Cortex-M3", "arm-none-eabi-gcc", "arm-none-eabi-size", "arm-none-eabi-nm",
           ("-mcpu=cortex-m3", "-mthumb", "--specs=nano.specs", "--specs=nosys.specs"), (),
           "newlib-nano", "ARM_CM3", ()),
    # picolibc.ld's default RAM (32 KiB) cannot hold the 64 KiB arena.
    Target("rv32", "RV32", "riscv64-unknown-elf-gcc", "riscv64-unknown-elf-size", "riscv64-unknown-elf-nm",
           ("-march=rv32imac", "-mabi=ilp32", "--specs=picolibc.specs"),
           ("-Wl,--defsym=__ram_size=0x40000", "-Wl,--defsym=__flash_size=0x40000"),
           "picolibc",
           # portmacro.h's critical sections are CSR instructions, a separate extension to binutils 2.40.
           "RISC-V", ("-march=rv32imac_zicsr",)),
)
TARGET_PACKAGES = {"cortex-m3": "gcc-arm-none-eabi libnewlib-arm-none-eabi",
                   "rv32": "gcc-riscv64-unknown-elf picolibc-riscv64-unknown-elf"}

# The lean issue's targets: (row, level) -> most Cortex-M3 -Os bytes.
GOALS = {("tlsf", 1): 1600, ("tlsf", 0): 1100, ("pool", 1): 500, ("seqfit-best", 1): 1300,
         ("buddy", 1): 1800}
GOAL_COLUMN = ("cortex-m3", "-Os")


@dataclass(frozen=True)
class Program:
    """One main: set heap up on the arena, malloc(100) into p, free it."""
    name: str
    setup: str = "heap = arena;"
    malloc: str = "(unsigned char *)heap + 100"
    free: str = "(void)p"
    include: str = ""
    decls: str = ""
    arena: str = f"static unsigned char arena[{ARENA}] __attribute__((aligned(16)));"
    peer: str | None = None          # a key of peer_sources(); None: a heapkit drop-in or none
    dropin: str | None = None        # dropin/heapkit_<dropin>.c, built at each HK_HARDENING level
    note: str = ""                   # how the row's name would mislead without it


BASELINE = Program("baseline")


def heapkit_program(name: str, dropin: str, prefix: str, init: str) -> Program:
    return Program(name, include=f'#include "heapkit_{dropin}.h"',
                   setup=f"hk_status_t status;\n    heap = {init};",
                   malloc=f"hk_{prefix}_malloc(heap, 100)", free=f"hk_{prefix}_free(heap, p)",
                   dropin=dropin)


def pool_program(header: str) -> Program:
    """The pool straight on the arena once pool.h has hk_pool_init; until then on a bump heap."""
    if re.search(r"^\s*hk_pool_t\s*\*\s*hk_pool_init\s*\(", header, re.M):
        return heapkit_program("pool", "pool", "pool", "hk_pool_init(arena, sizeof arena, 100, &status)")
    # 512 blocks of 100 bytes fit 64 KiB at every level; the count is data, not code.
    return Program("pool", include='#include "heapkit_pool.h"',
                   setup="hk_status_t status;\n    heap = hk_pool_create("
                         "hk_bump_heap(hk_bump_init(arena, sizeof arena, &status)), 100, 512);",
                   malloc="hk_pool_malloc(heap, 100)", free="hk_pool_free(heap, p)", dropin="pool",
                   note="pool: hk_pool_create on a bump heap (bump's init and malloc included)")


def programs() -> list[Program]:
    heapkit = [
        heapkit_program("tlsf", "tlsf", "tlsf", "hk_tlsf_init(arena, sizeof arena, &status)"),
        heapkit_program("seqfit-best", "seqfit", "seqfit",
                        "hk_seqfit_init(arena, sizeof arena, HK_SEQFIT_BEST, &status)"),
        heapkit_program("buddy", "buddy", "buddy", "hk_buddy_init(arena, sizeof arena, NULL, &status)"),
        # dmm.h's own example of a config a firmware compiles in: the net preset's shape.
        Program("dmm-net", include='#include "heapkit_dmm.h"',
                decls="static const hk_dmm_config_t net = {\n"
                      "    .fit = HK_DMM_FIT_FIRST, .order = HK_DMM_ORDER_LIFO, .split = 9, .coalesce = 9,\n"
                      "    .nlists = 2, .lists = {{16, 16}, {1476, 1476}}};",
                setup="hk_status_t status;\n    heap = hk_dmm_init(arena, sizeof arena, &net, &status);",
                malloc="hk_dmm_malloc(heap, 100)", free="hk_dmm_free(heap, p)", dropin="dmm"),
        heapkit_program("bump", "bump", "bump", "hk_bump_init(arena, sizeof arena, &status)"),
        pool_program(POOL_HEADER.read_text(encoding="utf-8")),
        heapkit_program("lfpool", "lfpool", "lfpool", "hk_lfpool_init(arena, sizeof arena, 100, &status)"),
    ]
    peers = [
        Program("o1heap", include='#include "o1heap.h"', setup="heap = o1heapInit(arena, sizeof arena);",
                malloc="o1heapAllocate(heap, 100)", free="o1heapFree(heap, p)", peer="o1heap"),
        Program("tlsf-conte", include='#include "lv_tlsf_shim.h"\n#include "lv_tlsf.h"',
                setup="heap = lv_tlsf_create_with_pool(arena, sizeof arena);",
                malloc="lv_tlsf_malloc(heap, 100)", free="lv_tlsf_free(heap, p)", peer="tlsf_conte"),
        # No kernel: the scheduler calls heap_4 makes are the no-op stubs of lab/target/allocs.c.
        Program("freertos-heap4", arena=f"uint8_t ucHeap[{ARENA}] __attribute__((aligned(16)));",
                decls="void *pvPortMalloc(size_t size);\nvoid vPortFree(void *ptr);\n"
                      "void vTaskSuspendAll(void);\nlong xTaskResumeAll(void);\n"
                      "void vTaskSuspendAll(void) {}\nlong xTaskResumeAll(void) { return 0; }",
                setup="heap = ucHeap;", malloc="pvPortMalloc(100)", free="vPortFree(p)", peer="freertos"),
        Program("umm", include='#include "umm_malloc.h"',
                setup="umm_init_heap(arena, sizeof arena);\n    heap = arena;",
                malloc="umm_malloc(100)", free="umm_free(p)", peer="umm"),
        Program("libc", include="#include <stdlib.h>", malloc="malloc(100)", free="free(p)",
                note=" / ".join(t.libc for t in TARGETS) + " malloc: the C library's malloc and free on "
                     + " / ".join(t.title for t in TARGETS) + ", with the sbrk they call"),
    ]
    return heapkit + peers


def source(prog: Program) -> str:
    decls = prog.decls + "\n" if prog.decls else ""
    return (f"#include <stddef.h>\n#include <stdint.h>\n{prog.include}\n\n{prog.arena}\n"
            f"void *volatile sink;\n{decls}\nint main(void)\n{{\n    void *heap;\n    void *p;\n"
            f"    {prog.setup}\n    sink = heap;\n    p = {prog.malloc};\n    sink = p;\n"
            f"    {prog.free};\n    return 0;\n}}\n")


def row_name(prog: Program) -> str:
    if prog.name == "libc":
        return " / ".join(t.libc for t in TARGETS) + " malloc (peer)"
    return f"**{prog.name}**" if (prog.dropin is not None) else f"{prog.name} (peer)"


# --------------------------------------------------------------------------
# Peers

_PEER_LAYOUT = {"freertos": ("freertos-next-0.12.0/FreeRTOS-Kernel", "portable/MemMang/heap_4.c"),
                "o1heap": ("o1heap-0.0.2/o1heap/o1heap", "o1heap.c"),
                "umm": ("umm-malloc-sys-0.3.2/umm_malloc/src", "umm_malloc.c"),
                "tlsf_conte": ("lvgl-sys-0.6.2/vendor/lvgl/src/misc", "lv_tlsf.c")}


def peer_sources(root: Path) -> dict[str, Path]:
    """{peer: source directory} under root, running tools/fetch_peers.sh when any is missing."""
    dirs = {k: root / "src" / d for k, (d, _) in _PEER_LAYOUT.items()}
    if not all((dirs[k] / f).is_file() for k, (_, f) in _PEER_LAYOUT.items()):
        done = subprocess.run(["sh", str(REPO / "tools" / "fetch_peers.sh"), str(root)],
                              capture_output=True, text=True)
        if done.returncode != 0:
            raise FlashError(f"fetching the peers into {root} failed: "
                             f"{(done.stderr.strip().splitlines() or ['no message'])[-1]}")
    return dirs


def peer_build(t: Target, peers: dict[str, Path]) -> dict[str, tuple[Path, list[str], list[str]]]:
    """{peer: (source, its compile flags, the flags a program calling it needs)}."""
    lab_target = REPO / "lab" / "target"
    shim = REPO / "lab" / "engine" / "peers" / "tlsf_conte"
    kernel = peers["freertos"]
    o1heap_inc = [f"-I{peers['o1heap']}"]
    umm_inc = [f"-I{lab_target / 'umm'}", f"-I{peers['umm']}"]
    lv = [f"-I{shim}", f"-I{peers['tlsf_conte']}", f"-DLV_MEM_SIZE={ARENA}u"]
    frtos = [f"-I{lab_target / 'freertos'}", f"-I{kernel / 'include'}",
             f"-I{kernel / 'portable' / 'GCC' / t.freertos_port}", f"-DTGT_ARENA_SIZE={ARENA}",
             *t.freertos_flags]
    return {
        "o1heap": (peers["o1heap"] / "o1heap.c", o1heap_inc, o1heap_inc),
        "tlsf_conte": (peers["tlsf_conte"] / "lv_tlsf.c", ["-include", str(shim / "lv_tlsf_shim.h"), *lv], lv),
        "freertos": (kernel / "portable" / "MemMang" / "heap_4.c", frtos, []),
        "umm": (peers["umm"] / "umm_malloc.c", umm_inc, umm_inc),
    }


# --------------------------------------------------------------------------
# Building and measuring

def check_tools(targets: tuple[Target, ...]) -> None:
    for t in targets:
        for tool in (t.cc, t.size, t.nm):
            if shutil.which(tool) is None:
                raise FlashError(f"{tool} not found (make deps installs it: apt-get install "
                                 f"{TARGET_PACKAGES[t.key]})")


def run(argv: list[str], what: str) -> str:
    try:
        done = subprocess.run(argv, capture_output=True, text=True)
    except FileNotFoundError:
        raise FlashError(f"{what}: {argv[0]} not found") from None
    if done.returncode != 0:
        lines = done.stderr.strip().splitlines()
        first = next((l for l in lines if "error" in l), lines[0] if lines else "no message")
        raise FlashError(f"{what} failed: {first.strip()}")
    return done.stdout


def flash_bytes(size_output: str) -> int:
    """text + data of `size -B` for one file: code, constants and .data's initial values."""
    lines = [l.split() for l in size_output.strip().splitlines()]
    if len(lines) != 2 or lines[0][:2] != ["text", "data"]:
        raise FlashError(f"unexpected size output: {size_output.strip()!r}")
    return int(lines[1][0]) + int(lines[1][1])


def heapkit_flags(dropin: str, level: int) -> list[str]:
    return ["-std=c11" if dropin == "lfpool" else "-std=c99", f"-I{REPO / 'dropin'}", f"-DHK_HARDENING={level}"]


Object = tuple[Path, Path, list[str]]       # (source, object, its flags after the target's, opt and COMMON)


@dataclass(frozen=True)
class Build:
    """Where the objects and programs go; peers is None when no peer program is built."""
    root: Path
    peers: dict[str, Path] | None = None

    def where(self, t: Target, opt: str, level: int | None = None) -> Path:
        d = self.root / t.key / opt.lstrip("-")
        return d if level is None else d / f"h{level}"

    def objects(self, t: Target, opt: str, level: int | None, prog: Program) -> list[Object]:
        """What prog links besides its main: one heapkit drop-in, one peer, or nothing."""
        if prog.dropin is not None and level is not None:
            src = REPO / "dropin" / f"heapkit_{prog.dropin}.c"
            return [(src, self.where(t, opt, level) / "lib" / f"{src.stem}.o", heapkit_flags(prog.dropin, level))]
        if prog.peer is not None and self.peers is not None:
            src, flags, _ = peer_build(t, self.peers)[prog.peer]
            return [(src, self.where(t, opt) / "peers" / f"{src.stem}.o", ["-std=gnu11", *flags, "-w"])]
        return []

    def compile(self, t: Target, opt: str, obj: Object) -> None:
        src, out, flags = obj
        out.parent.mkdir(parents=True, exist_ok=True)
        defines = " ".join(f for f in flags if f.startswith("-DHK_"))
        run([t.cc, *t.flags, opt, *COMMON, *flags, "-c", str(src), "-o", str(out)],
            f"compiling {src.name} for {t.title} {opt}" + (f" {defines}" if defines else ""))

    def link(self, t: Target, opt: str, level: int | None, prog: Program) -> Path:
        """prog's ELF, its objects() already compiled."""
        d = self.where(t, opt, level)
        d.mkdir(parents=True, exist_ok=True)
        flags = ["-std=c99"]
        if prog.dropin is not None and level is not None:
            flags = heapkit_flags(prog.dropin, level)
        elif prog.peer is not None and self.peers is not None:
            flags += peer_build(t, self.peers)[prog.peer][2]
        c = d / f"{prog.name}.c"
        c.write_text(source(prog))
        main = (c, d / f"{prog.name}.main.o", flags)
        self.compile(t, opt, main)
        elf = d / f"{prog.name}.elf"
        objs = [str(o) for _, o, _ in self.objects(t, opt, level, prog)]
        run([t.cc, *t.flags, opt, *COMMON, *LINK, *t.link, str(main[1]), *objs, "-o", str(elf)],
            f"linking {prog.name} for {t.title} {opt}" + ("" if level is None else f" HK_HARDENING={level}"))
        return elf


Key = tuple[str, int | None, str, str]      # (program, level or None, target key, opt)


def measure(progs: list[Program], build: Build, jobs: int, targets: tuple[Target, ...] = TARGETS,
            opts: tuple[str, ...] = OPTS,
            levels: tuple[int, ...] = LEVELS) -> tuple[dict[Key, int], dict[Key, Path]]:
    """({key: flash bytes beyond the baseline}, {key: ELF}); the baseline's own key,
    ("baseline", None, target, opt), holds its own flash bytes."""
    wanted = [(p, level, t, opt) for t in targets for opt in opts for p in [BASELINE, *progs]
              for level in (levels if p.dropin else (None,))]
    objects = {o[1]: (t, opt, o) for p, level, t, opt in wanted for o in build.objects(t, opt, level, p)}

    def program(item: tuple[Program, int | None, Target, str]) -> tuple[Key, Path, int]:
        p, level, t, opt = item
        elf = build.link(t, opt, level, p)
        return (p.name, level, t.key, opt), elf, flash_bytes(run([t.size, "-B", str(elf)], f"{t.size} {elf}"))

    with cf.ThreadPoolExecutor(max(1, jobs)) as pool:
        list(pool.map(lambda job: build.compile(*job), objects.values()))
        done = list(pool.map(program, wanted))
    flash = {k: n for k, _, n in done}
    deltas = {k: n - (0 if k[0] == BASELINE.name else flash[(BASELINE.name, None, k[2], k[3])])
              for k, n in flash.items()}
    return deltas, {k: elf for k, elf, _ in done}


# --------------------------------------------------------------------------
# The table

def table(progs: list[Program], sizes: dict[Key, int]) -> str:
    cols = [(t, opt) for t in TARGETS for opt in OPTS]
    gt = next(t for t in TARGETS if t.key == GOAL_COLUMN[0])
    head = ["allocator", "level", *(f"{t.title} {opt}" for t, opt in cols),
            f"lean target ({gt.title} {GOAL_COLUMN[1]})"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * 2 + "---:|" * len(cols) + "---|"]
    for p in progs:
        for level in (LEVELS if (p.dropin is not None) else (None,)):
            cells = [row_name(p), DASH if level is None else str(level)]
            cells += [f"{sizes[(p.name, level, t.key, opt)]:,}" for t, opt in cols]
            goal = GOALS.get((p.name, level))
            met = goal is not None and sizes[(p.name, level, *GOAL_COLUMN)] <= goal
            cells.append("" if goal is None else f"≤ {goal:,}: {'met' if met else 'missed'}")
            lines.append("| " + " | ".join(cells) + " |")
    base = ", ".join(f"{t.title} " + " / ".join(f"{sizes[(BASELINE.name, None, t.key, o)]:,}" for o in OPTS)
                     for t in TARGETS)
    notes = [f"Flash bytes (code, constants, initialised data) beyond a bare main ({base} bytes "
             f"at {' / '.join(OPTS)})."]
    notes += [f"{p.note}." for p in progs if p.note]
    return "\n".join(lines) + "\n\n" + textwrap.fill(" ".join(notes), 78, break_on_hyphens=False) + "\n"


def parse_nm(text: str) -> list[tuple[int, int, str, str]]:
    """(address, size, type, name) of each line of `nm -S`."""
    out = []
    for line in text.splitlines():
        parts = line.split()
        if len(parts) == 4:
            out.append((int(parts[0], 16), int(parts[1], 16), parts[2], parts[3]))
    return out


# Code, constants and initialised data (g, G: RISC-V's small-data section).
FLASH_TYPES = set("tTrRdDgGW")


def breakdown(symbols: list[tuple[int, int, str, str]], baseline: list[tuple[int, int, str, str]],
              delta: int) -> list[tuple[int, str]]:
    """(bytes, what) of the symbols in flash the baseline lacks, largest first, then main's
    growth and the unnamed rest; they add up to delta. Aliases share one line, and a symbol
    that overlaps the next one (RISC-V's __riscv_save_N entry points) counts up to it."""
    base_names = {name for _, _, _, name in baseline}
    code = sorted((a, s, n) for a, s, ty, n in symbols if ty in FLASH_TYPES and s > 0)
    starts = sorted({a for a, _, _ in code})
    by_start: dict[int, list[tuple[int, str]]] = {}
    for a, s, n in code:
        by_start.setdefault(a, []).append((s, n))
    lines = []
    for i, a in enumerate(starts):
        names = sorted(by_start[a], key=lambda sn: (sn[1].startswith("_"), sn[1]))
        if any(n in base_names for _, n in names):
            continue
        size = max(s for s, _ in names)
        if i + 1 < len(starts):
            size = min(size, starts[i + 1] - a)
        what = names[0][1] + (f" (also {', '.join(n for _, n in names[1:])})" if len(names) > 1 else "")
        lines.append((size, what))
    lines.sort(key=lambda x: (-x[0], x[1]))

    def main_size(syms):
        return next((s for _, s, ty, n in syms if n == "main" and ty in FLASH_TYPES), 0)

    growth = main_size(symbols) - main_size(baseline)
    rest = delta - growth - sum(s for s, _ in lines)
    return lines + [(growth, "main's growth over the baseline's main"),
                    (rest, "unnamed: alignment padding and routines without a symbol size")]


# --------------------------------------------------------------------------
# Command line

def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="The flash each allocator adds to a firmware (README.md's table).")
    mode = ap.add_mutually_exclusive_group()
    mode.add_argument("--check", action="store_true", help="exit 1 with a diff when README.md's table is stale")
    mode.add_argument("--write", action="store_true", help="rewrite README.md's table")
    mode.add_argument("--breakdown", metavar="NAME", help="per-function bytes of one program (a table row: "
                      "tlsf, pool, o1heap, libc, ...)")
    ap.add_argument("--target", choices=[t.key for t in TARGETS], default="cortex-m3", help="for --breakdown")
    ap.add_argument("--opt", choices=[o.lstrip("-") for o in OPTS], default="Os", help="for --breakdown")
    ap.add_argument("--level", type=int, choices=LEVELS, default=1, help="HK_HARDENING for --breakdown")
    ap.add_argument("--peers", type=Path, default=REPO / "build" / "gcc" / "peers",
                    help="the peers' sources (tools/fetch_peers.sh fetches them there when missing; "
                         "default: the host build's build/gcc/peers)")
    ap.add_argument("--build", type=Path, default=REPO / "build" / "flash-table",
                    help="objects, programs and ELFs (default build/flash-table)")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 2, help="compilers at once")
    args = ap.parse_args(argv)
    progs = programs()
    try:
        if args.breakdown:
            return show_breakdown(args, progs)
        check_tools(TARGETS)
        build = Build(args.build.resolve(), peer_sources(args.peers.resolve()))
        sizes, _ = measure(progs, build, args.jobs)
        block = table(progs, sizes)
        if not (args.check or args.write):
            sys.stdout.write(block)
            return 0
        text = README.read_text(encoding="utf-8")
        new = readme_blocks.render(text, "flash_table", {"sizes": block})
    except (FlashError, readme_blocks.BlockError, OSError) as e:
        print(f"flash_table.py: {e}", file=sys.stderr)
        return 2
    return readme_blocks.finish(README, text, new, args.write, "flash_table.py", "flash table", "a fresh build")


def show_breakdown(args: argparse.Namespace, progs: list[Program]) -> int:
    prog = next((p for p in progs if p.name == args.breakdown), None)
    if prog is None:
        raise FlashError(f"--breakdown: no program {args.breakdown!r} "
                         f"(have: {', '.join(p.name for p in progs)})")
    t = next(x for x in TARGETS if x.key == args.target)
    check_tools((t,))
    opt = "-" + args.opt
    build = Build(args.build.resolve(), peer_sources(args.peers.resolve()) if prog.peer else None)
    level = args.level if (prog.dropin is not None) else None
    sizes, elfs = measure([prog], build, args.jobs, (t,), (opt,), (args.level,))
    key = (prog.name, level, t.key, opt)
    base_key = (BASELINE.name, None, t.key, opt)
    syms = {k: parse_nm(run([t.nm, "-S", str(elfs[k])], f"{t.nm} {elfs[k]}")) for k in (key, base_key)}
    where = f"{t.title} {opt}" + ("" if level is None else f", HK_HARDENING {level}")
    print(f"{prog.name}, {where}: {sizes[key]:,} bytes beyond the baseline\n")
    print("| bytes | symbol |\n|---:|---|")
    for n, what in breakdown(syms[key], syms[base_key], sizes[key]):
        print(f"| {n:,} | {what} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
