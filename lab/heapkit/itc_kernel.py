# SPDX-License-Identifier: MIT
"""The fctma-pools seed's ITC benchmark on the real FreeRTOS kernel, every allocator call
counted in instructions (``make itc-kernel``, ``heapkit demo``'s ``extra.itc_kernel``).

examples/firmware-itc (app.c) is FreeRTOS-Kernel V11.2.0 with its GCC/ARM_CM3 port on QEMU
mps2-an385: 10 producer and 10 consumer tasks pass 127-byte blocks through a queue, with
heap_4 (pvPortMalloc/vPortFree, the kernel's heap too), FCTMA (heapkit's "pool": one pool of
127-byte blocks called from the tasks) and SimpleDMA (heapkit's bump). Each call runs with
interrupts masked inside lab/target/measure_m3.S's window on the CMSDK timer 0 (the kernel
owns SysTick), calibrated in the running kernel with callees of 1 and 1000 instructions.

:func:`measure` configures and builds the firmware once per level (:data:`LEVELS`: -O2, and
-O0 as the seed compiled) with CMake, runs each ELF with ports/baremetal/run-qemu.sh and
returns ``{"levels": {level: {heap: result}}, "block", "blocks"}``, each result the
firmware's JSON line with ``mean`` and ``sd`` added per kind (alloc, free). Build trees go
under :func:`build_root`; the kernel comes from the peers the lab already fetched.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

from .errors import HeapkitError
from .native import CACHE_DIR, SOURCE_ROOT

LEVELS = ("-O2", "-O0")
HEAPS = ("heap_4", "pool", "bump")
FIRMWARE = SOURCE_ROOT / "examples" / "firmware-itc"
TOOLCHAIN = SOURCE_ROOT / "ports" / "baremetal" / "cmake" / "arm-cortex-m3.cmake"
RUN_QEMU = SOURCE_ROOT / "ports" / "baremetal" / "run-qemu.sh"
TOOLS = ("cmake", "arm-none-eabi-gcc", "qemu-system-arm")
RUN_TIMEOUT = 300


class ItcError(HeapkitError):
    """The firmware could not be built or did not run to its result line."""


def build_root() -> Path:
    value = os.environ.get("HEAPKIT_ITC_BUILD")
    return Path(value).resolve() if value else CACHE_DIR / "firmware-itc"


def missing() -> str | None:
    """None when the firmware can be built and run here, else why not (one sentence)."""
    if not (FIRMWARE / "app.c").is_file():
        return "the firmware's sources (examples/firmware-itc) are not in this installation"
    absent = [t for t in TOOLS if shutil.which(t) is None]
    if absent:
        return (f"{', '.join(absent)} not installed (apt-get install cmake gcc-arm-none-eabi "
                "libnewlib-arm-none-eabi qemu-system-arm)")
    return None


def _run(argv: list[str], what: str, timeout: int | None = None) -> subprocess.CompletedProcess:
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise ItcError(f"{what}: no result within {timeout} s") from None
    if proc.returncode != 0:
        tail = (proc.stdout + proc.stderr).strip().splitlines()[-8:]
        raise ItcError(f"{what} failed (status {proc.returncode}):\n" + "\n".join(tail))
    return proc


def _peers_dir() -> Path:
    """The peers root holding the kernel: the lab's fetched peers (fetching them when absent)."""
    from .target import peer_sources
    kernel = peer_sources().get("freertos")
    if kernel is None:
        raise ItcError("the FreeRTOS kernel could not be fetched (tools/fetch_peers.sh)")
    return kernel.parents[2]


def build(level: str, jobs: int = 2) -> Path:
    """Configure and build the firmware at *level*; returns its build directory."""
    if level not in LEVELS:
        raise ItcError(f"level {level!r} not supported (use {', '.join(LEVELS)})")
    d = build_root() / level.lstrip("-")
    _run(["cmake", "-S", str(FIRMWARE), "-B", str(d), f"-DCMAKE_TOOLCHAIN_FILE={TOOLCHAIN}",
          f"-DITC_OPT={level}", f"-DFR_PEERS={_peers_dir()}"], f"configuring the ITC firmware ({level})")
    _run(["cmake", "--build", str(d), "-j", str(max(1, jobs))], f"building the ITC firmware ({level})")
    return d


def with_moments(calls: dict[str, Any]) -> dict[str, Any]:
    """The firmware's per-kind figures plus mean and (population) standard deviation."""
    n = calls["count"]
    mean = calls["sum"] / n if n else None
    sd = math.sqrt(max(0.0, calls["sumsq"] / n - mean * mean)) if n else None
    return {**calls, "mean": mean, "sd": sd}


def run(elf: Path) -> dict[str, Any]:
    """One firmware run: its result line, with the moments."""
    proc = subprocess.run([str(RUN_QEMU), "mps2-an385", str(elf)], capture_output=True, text=True,
                          env=dict(os.environ, HK_QEMU_TIMEOUT=str(RUN_TIMEOUT)))
    lines = [l for l in proc.stdout.splitlines() if l.startswith('{"type":"itc"')]
    if proc.returncode != 0 or len(lines) != 1:
        tail = (proc.stdout + proc.stderr).strip().splitlines()[-3:]
        raise ItcError(f"{elf.name}: status {proc.returncode}: " + " | ".join(tail))
    out = json.loads(lines[0])
    for kind in ("alloc", "free"):
        out[kind] = with_moments(out[kind])
    return out


def measure(levels=LEVELS, jobs: int = 2) -> dict[str, Any]:
    """Every heap at every level (see the module docstring)."""
    why = missing()
    if why:
        raise ItcError(why)
    out: dict[str, Any] = {"levels": {}, "board": "QEMU mps2-an385 (Cortex-M3), -icount shift=7",
                           "kernel": "FreeRTOS-Kernel V11.2.0, GCC/ARM_CM3"}
    for level in levels:
        d = build(level, jobs)
        out["levels"][level] = {h: run(d / f"itc_{h}.elf") for h in HEAPS}
    first = next(iter(next(iter(out["levels"].values())).values()))
    out.update(block=first["block"], blocks=first["blocks"])
    return out


def main() -> int:
    """``python -m heapkit.itc_kernel``: measure and print one table per level (make itc-kernel)."""
    from .render import text_table
    from .seeds.fctma_pools import itc_kernel_rows, ITC_KERNEL_HEAD
    data = measure()
    for level, heaps in data["levels"].items():
        print(f"ITC on FreeRTOS V11.2.0, QEMU mps2-an385, {level}: instructions per call "
              f"({data['blocks']} blocks of {data['block']} B)")
        print(text_table(ITC_KERNEL_HEAD, itc_kernel_rows(heaps)))
        t3 = heaps["pool"]["table3"]
        total = t3["control"] + t3["peak_used"]
        print(f"Table III, pool: {t3['blocks']} blocks at its high-water mark, {t3['user']:,} user bytes "
              f"of {total:,}: {100 * (1 - t3['user'] / total):.1f} % internal fragmentation\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
