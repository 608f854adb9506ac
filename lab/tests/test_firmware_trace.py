# SPDX-License-Identifier: MIT
"""A real FreeRTOS firmware traced on emulated targets (examples/firmware-trace).

Built with the kernel's GCC/ARM_CM3 port for QEMU mps2-an385 and its
GCC/RISC-V port for QEMU virt (RV32IMAC), run once with heap_4 and once
with heapkit's heap_tlsf, the recorder draining through semihosting.
`heapkit leaks` must find exactly the deliberate leak, by function,
file:line and task; the imported trace must replay on every arena allocator
of the lab without a corruption; and the firmware, rebuilt with the heap
`heapkit size --margin` advises, must run its scenario without a failed
allocation. Needs arm-none-eabi-gcc, riscv64-unknown-elf-gcc with picolibc,
qemu-system-arm, qemu-system-riscv32 and cargo (make firmware-trace).
HEAPKIT_FIRMWARE_BUILD is the Cortex-M3 build; the RV32 build is its rv32/.
"""

from __future__ import annotations

import functools
import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from heapkit import engine
from heapkit.cli import main
from heapkit.trace import ALLOC_OPS, Trace

pytestmark = pytest.mark.target

ROOT = Path(__file__).resolve().parents[2]
APP = ROOT / "examples" / "firmware-trace" / "app.c"
BUILD = Path(os.environ.get("HEAPKIT_FIRMWARE_BUILD", ROOT / "build" / "firmware-trace"))
# Board -> (toolchain file, compiler, QEMU, build directory).
BOARDS = {"mps2-an385": ("arm-cortex-m3.cmake", "arm-none-eabi-gcc", "qemu-system-arm", BUILD),
          "riscv-virt": ("riscv32-imac.cmake", "riscv64-unknown-elf-gcc", "qemu-system-riscv32",
                         BUILD / "rv32")}
LEAK_LINE = next(i for i, l in enumerate(APP.read_text().splitlines(), 1) if "pvPortMalloc(40)" in l)
ROUNDS = 200
# The firmware's heap -> the lab allocator that models it.
HEAPS = {"heap_4": "freertos-heap4", "tlsf": "tlsf"}
# Fixed-size blocks: requests above their largest block fail by design (src/catalog.c:
# POOLSET_MAX_BLOCK, LFPOOL_BLOCK). Every other arena allocator must serve the whole trace.
FIXED_CLASSES = {"poolset": 1024, "lfpool": 128}
SUMMARY = re.compile(r"heap (\S+): (\d+) bytes, min ever free (\d+), (\d+) failed allocations; "
                     r"trace: (\d+) records, (\d+) dropped")


def build_firmware(board: str, build: Path, *extra: str, target: str | None = None) -> None:
    toolchain = ROOT / "ports" / "baremetal" / "cmake" / BOARDS[board][0]
    # Every build shares the first one's copy of the kernel's sources.
    subprocess.run(["cmake", "-S", str(ROOT / "examples" / "firmware-trace"), "-B", str(build),
                    f"-DCMAKE_TOOLCHAIN_FILE={toolchain}", f"-DFR_PEERS={BUILD / 'peers'}", *extra],
                   check=True, stdout=subprocess.DEVNULL)
    subprocess.run(["cmake", "--build", str(build), "-j2", *(["--target", target] if target else [])],
                   check=True, stdout=subprocess.DEVNULL)


def run_firmware(board: str, elf: Path, raw: Path) -> tuple[subprocess.CompletedProcess, dict]:
    """The run and its summary line's numbers."""
    run = subprocess.run([str(ROOT / "ports" / "baremetal" / "run-qemu.sh"), board, str(elf),
                          str(raw), str(ROUNDS)], capture_output=True, text=True, timeout=120)
    m = SUMMARY.search(run.stdout)
    assert m, run.stdout + run.stderr
    keys = ("heap", "size", "min_ever_free", "failed", "records", "dropped")
    return run, {k: (v if k == "heap" else int(v)) for k, v in zip(keys, m.groups())}


@functools.cache
def built(board: str) -> Path:
    """The board's build directory, with the firmware built (once per session)."""
    _, cc, qemu, build = BOARDS[board]
    for tool in (cc, qemu, "cmake"):
        if shutil.which(tool) is None:
            pytest.skip(f"{tool} not installed")
    if board != "mps2-an385":
        built("mps2-an385")                       # it fetches the kernel's sources the others share
    build_firmware(board, build)
    return build


@pytest.fixture(scope="module", params=list(BOARDS))
def firmware(request):
    """(board, build directory) with the firmware built."""
    return request.param, built(request.param)


@pytest.fixture(scope="module", params=list(HEAPS))
def recorded(firmware, request, tmp_path_factory):
    """(board, heap, elf, imported trace) of one run with the recorder on."""
    board, build = firmware
    heap = request.param
    elf = build / f"fw_{heap}.elf"
    tmp = tmp_path_factory.mktemp(f"{board}-{heap}")
    run, summary = run_firmware(board, elf, tmp / f"{heap}.hkfw")
    assert run.returncode == 0, run.stdout + run.stderr
    assert summary["heap"] == heap and summary["failed"] == 0 and summary["dropped"] == 0
    hkb = tmp / "fw.hkb"
    assert main(["import", str(tmp / f"{heap}.hkfw"), "-o", str(hkb), "-q"]) == 0
    return board, heap, elf, hkb


def test_firmware_leak_report(recorded, capsys):
    _, heap, elf, hkb = recorded
    assert main(["leaks", str(hkb), "--elf", str(elf), "--checkpoint", "steady", "--json"]) == 0
    rep = json.loads(capsys.readouterr().out)
    assert rep["dropped"] == 0 and rep["callers"]
    after, before = rep["sections"]
    # Exactly the deliberate leak, one group: function, file:line, task.
    assert len(after["groups"]) == 1
    leak = after["groups"][0]
    assert leak["where"] == f"record_calibration (app.c:{LEAK_LINE})"
    assert leak["task"] == "sensor" and leak["count"] >= 5
    # Long-lived: the kernel objects made before the scheduler started (no task).
    assert {g["where"].split(" ")[0] for g in before["groups"]} <= {"prvCreateTask", "xTaskCreate",
                                                                     "xQueueGenericCreate", "xTimerCreate"}
    tasks = {t["task"]: t for t in rep["tasks"]}
    assert tasks["producer"]["allocations"] == ROUNDS and tasks["consumer"]["allocations"] == ROUNDS
    assert tasks["producer"]["live_blocks_at_end"] == 0 and tasks["consumer"]["live_blocks_at_end"] == 0
    # A message is 28..227 bytes (gross), at most 8 queued plus one being built.
    assert 28 <= tasks["producer"]["peak_live_bytes"] <= 9 * 240
    assert tasks["sensor"]["allocations"] > leak["count"]
    # One 96-byte report at a time (gross: heap_4 on RV32 aligns blocks to 16 bytes).
    assert tasks["Tmr Svc"]["allocations"] > 0 and tasks["Tmr Svc"]["peak_live_bytes"] <= 112


def test_firmware_trace_replays_on_every_arena_allocator(recorded):
    hkb = recorded[3]
    table = engine._run(["--list", "--json", "-"])
    arena_allocs = [a["name"] for a in table if a["in_arena"] and a["family"] in ("heapkit", "peer")]
    assert {"tlsf", "freertos-heap2", "freertos-heap4", "freertos-heap5", "o1heap", "umm",
            "tlsf-conte"} <= set(arena_allocs)
    rec = Trace.load(hkb).records
    sizes = rec["size"][np.isin(rec["op"], ALLOC_OPS)]
    for alloc in arena_allocs:
        if alloc == "bump":
            # It never reuses a block: replayed on the arena that holds every block of the trace.
            res = engine.size_search(hkb, alloc)["verify"]
        else:
            res = engine.replay(hkb, alloc)["replay"]
        assert res["errors"]["corrupt_blocks"] == 0 and res["errors"]["check"] == 0, alloc
        assert res["errors"]["misaligned"] == 0 and res["errors"]["bad_blocks"] == 0, alloc
        # Pools fail exactly the requests above their largest block; nothing else fails.
        expected = int((sizes > FIXED_CLASSES[alloc]).sum()) if alloc in FIXED_CLASSES else 0
        assert res["failures"]["total"] == expected, alloc


def test_firmware_runs_on_the_advised_heap(recorded, tmp_path, capsys):
    """The heap `heapkit size --margin` advises from the trace is enough for the scenario, and not lavish."""
    board, heap, _, hkb = recorded
    out = tmp_path / "size.json"
    assert main(["size", "--trace", str(hkb), "--alloc", HEAPS[heap], "--margin", "--json", str(out)]) == 0
    capsys.readouterr()
    advised = json.loads(out.read_text())["runs"][0]["advised"]
    sized = BOARDS[board][3] / f"sized-{heap}"
    build_firmware(board, sized, f"-DAPP_HEAP_SIZE={advised}", target=f"fw_{heap}")
    run, summary = run_firmware(board, sized / f"fw_{heap}.elf", tmp_path / "sized.hkfw")
    assert summary["size"] == advised
    assert summary["failed"] == 0 and run.returncode == 0, run.stdout + run.stderr
    # Tight: the low-water mark leaves less than a quarter of the heap never used.
    assert summary["min_ever_free"] < advised // 4, summary


def test_block_policy_delivers_every_record(tmp_path):
    """trace_rate.c (Cortex-M3): records pushed far faster than a 16 KiB ring holds, under the
    block policy, all reach the host through semihosting, and import as a valid trace."""
    raw = tmp_path / "rate.hkfw"
    run = subprocess.run([str(ROOT / "ports" / "baremetal" / "run-qemu.sh"), "mps2-an385",
                          str(built("mps2-an385") / "trace_rate.elf"), str(raw), "20000"],
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0 and "20000 records, 480016 bytes, 0 dropped" in run.stdout, run.stdout
    assert raw.stat().st_size == 480016
    assert main(["import", str(raw), "-o", str(tmp_path / "rate.hkb"), "-q"]) == 0
    assert len(Trace.load(tmp_path / "rate.hkb")) == 20000


def test_view_follow_in_qemu(firmware, tmp_path):
    """heapkit view --follow on the firmware as it runs in QEMU: the page's data grows while the
    firmware runs, and the last one holds the whole trace, the leak named from the ELF."""
    import shlex
    import sys
    import time
    import urllib.request
    board, build = firmware
    elf = build / "fw_tlsf.elf"
    stream, out = tmp_path / "live.hkfw", tmp_path / "live.html"
    run = " ".join(shlex.quote(str(a)) for a in (ROOT / "ports" / "baremetal" / "run-qemu.sh", board, elf,
                                                  stream, 50))
    proc = subprocess.Popen([sys.executable, "-m", "heapkit", "view", "--follow", str(stream), "--run", run,
                             "--elf", str(elf), "--checkpoint", "steady", "-o", str(out)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        url = re.search(r"serving (http://127\.0\.0\.1:\d+/)", proc.stderr.readline())
        assert url
        seen = []
        while proc.poll() is None:
            with urllib.request.urlopen(url.group(1) + "data", timeout=10) as r:
                d = json.loads(r.read())
            seen.append(d.get("records", 0))
            if d["follow"]["done"]:
                break
            time.sleep(0.2)
        assert proc.wait(timeout=120) == 0, proc.stderr.read()
    finally:
        if proc.poll() is None:
            proc.kill()
    html = out.read_text()
    data = json.loads(re.search(r'<script id="hk-data" type="application/json">(.*?)</script>', html,
                                re.S).group(1).replace("<\\/", "</"))
    assert seen == sorted(seen) and seen[-1] == data["records"] == len(Trace.load(_import(stream, tmp_path)))
    leak = [r for r in data["leaks"]["rows"] if r[4] and f"app.c:{LEAK_LINE}" in data["callers"][r[0]]]
    assert leak, data["leaks"]["rows"]


def _import(stream: Path, tmp: Path) -> Path:
    hkb = tmp / "imported.hkb"
    assert main(["import", str(stream), "-o", str(hkb), "-q"]) == 0
    return hkb
