# SPDX-License-Identifier: MIT
"""The emulated boards heapkit counts instructions on (heapkit/target.py runs them): each
one's toolchain, QEMU machine, counter and memory budget. Constants only, so the report
can describe a target's results without the code that produces them."""

from __future__ import annotations

from dataclasses import dataclass

from .errors import HeapkitError

ARENA_SIZE = 16 * 1024 * 1024          # the Cortex-M3 board's whole PSRAM


@dataclass(frozen=True)
class Target:
    """One emulated core the driver runs on: toolchain, board port and memory budget."""
    name: str                 # --target NAME
    title: str                # "Cortex-M3"
    machine: str              # "QEMU mps2-an385"
    board: str                # ports/baremetal/<board>, run-qemu.sh's board name
    cc: str
    size: str
    objdump: str
    qemu: str
    cpu_flags: tuple[str, ...]
    link_flags: tuple[str, ...]
    measure: str              # lab/target/<measure>: the measuring window
    counter: str              # lab/target/<counter>: the counter and the arena's placement
    counter_desc: str
    freertos_port: str        # FreeRTOS-Kernel/portable/GCC/<port>
    freertos_align: int       # its portBYTE_ALIGNMENT
    freertos_flags: tuple[str, ...]  # extra flags for heap_4/heap_5 (their port header's inline asm)
    libc: str                 # the C library's allocator: "newlib" or "picolibc"
    libc_members: tuple[str, ...]
    arena_addr: int | None    # the arena's fixed address (--defsym), or None: a .bss array
    arena_region: str         # where the arena lies
    max_arena: int
    max_slots: int            # blocks live at once the driver's slot table holds (12 bytes each)
    packages: str             # Debian packages with the tools

    def fits(self, meta: dict[str, int]) -> str | None:
        """None when the trace fits the board, else why not. The trace streams in from
        the host, so only its blocks live at once must fit, not its length."""
        if meta["slots"] > self.max_slots:
            return (f"it holds {meta['slots']:,} blocks live at once, more than the "
                    f"{self.max_slots:,} the driver's table in {self.title} RAM holds")
        return None


CORTEX_M3 = Target(
    name="cortex-m3", title="Cortex-M3", machine="QEMU mps2-an385", board="mps2-an385",
    cc="arm-none-eabi-gcc", size="arm-none-eabi-size", objdump="arm-none-eabi-objdump",
    qemu="qemu-system-arm", cpu_flags=("-mcpu=cortex-m3", "-mthumb"),
    link_flags=("--specs=rdimon.specs", "-nostartfiles", "-Wl,--defsym=__heap_in_ram=1"),
    measure="measure_m3.S", counter="counter_m3.c", counter_desc="SysTick read around each call",
    freertos_port="ARM_CM3", freertos_align=8, freertos_flags=(),
    libc="newlib",
    libc_members=("lib_a-mallocr.o", "lib_a-freer.o", "lib_a-reallocr.o", "lib_a-callocr.o",
                  "lib_a-malignr.o", "lib_a-malloc.o", "lib_a-mlock.o", "lib_a-sbrkr.o"),
    arena_addr=0x21000000,             # all of PSRAM; newlib's heap moves to the 4 MiB RAM
    arena_region="16 MiB PSRAM",
    max_arena=ARENA_SIZE,
    max_slots=1 << 17,                 # 1.5 MiB of the 4 MiB RAM; newlib's heap gets the rest
    packages="gcc-arm-none-eabi libnewlib-arm-none-eabi qemu-system-arm")

RV32 = Target(
    name="rv32", title="RV32IMAC", machine="QEMU virt", board="riscv-virt",
    cc="riscv64-unknown-elf-gcc", size="riscv64-unknown-elf-size",
    objdump="riscv64-unknown-elf-objdump", qemu="qemu-system-riscv32",
    cpu_flags=("-march=rv32imac", "-mabi=ilp32", "--specs=picolibc.specs"),
    link_flags=("--oslib=semihost", "-nostartfiles", "-Wl,--no-warn-rwx-segments"),
    measure="measure_rv32.S", counter="counter_rv32.c", counter_desc="minstret read around each call",
    freertos_port="RISC-V", freertos_align=16,
    freertos_flags=("-march=rv32imac_zicsr",),   # portmacro.h's critical sections are CSR instructions
    libc="picolibc",
    libc_members=("nano-malloc-malloc.c.o", "nano-malloc-free.c.o", "nano-malloc-realloc.c.o",
                  "nano-malloc-calloc.c.o", "nano-malloc-memalign.c.o", "libc_picolib_picosbrk.c.o"),
    arena_addr=None,                   # a .bss array of counter_rv32.c (128 MiB of RAM, all one region)
    arena_region="96 MiB of its 128 MiB RAM",
    max_arena=96 * 1024 * 1024,
    max_slots=1 << 19,                 # 6 MiB; picolibc's heap gets what is left of the 128 MiB
    packages="gcc-riscv64-unknown-elf picolibc-riscv64-unknown-elf qemu-system-misc")

TARGETS = {t.name: t for t in (CORTEX_M3, RV32)}


def get_target(target: str | Target) -> Target:
    if isinstance(target, Target):
        return target
    if target not in TARGETS:
        raise HeapkitError(f"--target: unknown target {target!r} (have: {', '.join(TARGETS)})")
    return TARGETS[target]
