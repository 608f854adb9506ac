# SPDX-License-Identifier: MIT
"""The fctma-pools seed's ITC benchmark on the real FreeRTOS kernel, every allocator call
counted in instructions (``make itc-kernel``, ``heapkit demo``'s ``extra.itc_kernel``).

examples/firmware-itc (app.c) is FreeRTOS-Kernel V11.2.0 with its GCC/ARM_CM3 port on QEMU
mps2-an385: 10 producer and 10 consumer tasks pass 127-byte blocks through a queue, with
heap_4 (pvPortMalloc/vPortFree, the kernel's heap too), FCTMA (heapkit's "pool": one pool of
127-byte blocks called from the tasks), FCTMA with its mutex and counting semaphore
attached ("pool_sync"), SimpleDMA (heapkit's bump) and SDMA (lab/target/sdma.c on a 48 KB
chunk from heap_4). Each call runs with interrupts masked inside lab/target/measure_m3.S's
window on the CMSDK timer 0 (the kernel owns SysTick), calibrated in the running kernel
with callees of 1 and 1000 instructions. pool_sync's run ends with the multitasking stress
(tasks preempting each other inside the pool's calls, every block stamped by its holder).

At :data:`CONTROL_LEVEL` :func:`measure` also runs the checks that must fail and the ISR
pool (``"checks"``): pool_race (the stress on the pool without its lock), isr_lfpool
(examples/firmware-itc/isr_pool.c: lfpool used by tasks and by the CMSDK timer 1
interrupt for a million operations, the ISR's calls counted) and isr_pool_race (the same
on the plain pool). Each is the firmware's JSON line with its exit ``status``.

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
HEAPS = ("heap_4", "pool", "pool_sync", "bump", "sdma")
# Runs whose checks decide a verdict, at one level: (ELF stem, result line type, must pass).
CHECKS = (("itc_pool_race", "itc", False), ("isr_lfpool", "isr", True), ("isr_pool_race", "isr", False))
CONTROL_LEVEL = "-O2"
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


def _line(elf: Path, kind: str) -> tuple[subprocess.CompletedProcess, dict | None]:
    proc = subprocess.run([str(RUN_QEMU), "mps2-an385", str(elf)], capture_output=True, text=True,
                          env=dict(os.environ, HK_QEMU_TIMEOUT=str(RUN_TIMEOUT)))
    lines = [l for l in proc.stdout.splitlines() if l.startswith('{"type":"%s"' % kind)]
    return proc, json.loads(lines[0]) if len(lines) == 1 else None


def run(elf: Path) -> dict[str, Any]:
    """One firmware run: its result line, with the moments."""
    proc, out = _line(elf, "itc")
    if proc.returncode != 0 or out is None:
        tail = (proc.stdout + proc.stderr).strip().splitlines()[-3:]
        raise ItcError(f"{elf.name}: status {proc.returncode}: " + " | ".join(tail))
    for kind in ("alloc", "free"):
        out[kind] = with_moments(out[kind])
    return out


def run_check(elf: Path, kind: str) -> dict[str, Any]:
    """A run whose outcome is the finding, pass or fail: its result line (None when the firmware
    died before printing it), exit ``status`` and last ``message`` line."""
    proc, out = _line(elf, kind)
    lines = (proc.stdout + proc.stderr).strip().splitlines()
    return {"status": proc.returncode, "result": out, "message": lines[-1] if lines else ""}


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
        if level == CONTROL_LEVEL:
            out["checks"] = {name: {**run_check(d / f"{name}.elf", kind), "level": level, "must_pass": ok}
                             for name, kind, ok in CHECKS}
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
              f"of {total:,}: {100 * (1 - t3['user'] / total):.1f} % internal fragmentation")
        s = heaps["pool_sync"]["stress"]
        print(f"pool_sync under the multitasking stress: {s['tasks']} tasks, {s['ops']:,} operations, "
              f"{s['overlaps']} overlaps, free blocks {s['free_before']} before and {s['free_after']} after\n")
    for name, c in (data.get("checks") or {}).items():
        r = c["result"] or {}
        extra = ""
        if r.get("type") == "isr":
            extra = (f": {r['ops']:,} operations, the interrupt inside a task's pool call {r['isr_inside_task_call']:,} "
                     f"times, handed out twice {r['twice']}, overwritten {r['overlap']}, free at the end "
                     f"{r['free_end']} of {r['blocks']}; from the ISR (instructions, {c['level']}) alloc "
                     f"{r['isr_alloc']['min']}-{r['isr_alloc']['max']}, free {r['isr_free']['min']}-{r['isr_free']['max']}")
        print(f"{name} ({'must pass' if c['must_pass'] else 'must fail'}): exit status {c['status']}{extra}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
