# SPDX-License-Identifier: MIT
"""A real FreeRTOS firmware traced on the emulated Cortex-M3 (examples/firmware-trace).

Built with the kernel's GCC/ARM_CM3 port, run in QEMU mps2-an385 once with
heap_4 and once with heapkit's heap_tlsf, the recorder draining through
semihosting. `heapkit leaks` must find exactly the deliberate leak, by
function, file:line and task; the imported trace must replay cleanly.
Needs arm-none-eabi-gcc, qemu-system-arm and cargo (make firmware-trace).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from heapkit import engine
from heapkit.cli import main

pytestmark = pytest.mark.target

ROOT = Path(__file__).resolve().parents[2]
APP = ROOT / "examples" / "firmware-trace" / "app.c"
BUILD = Path(os.environ.get("HEAPKIT_FIRMWARE_BUILD", ROOT / "build" / "firmware-trace"))
LEAK_LINE = next(i for i, l in enumerate(APP.read_text().splitlines(), 1) if "pvPortMalloc(40)" in l)
ROUNDS = 200


@pytest.fixture(scope="module")
def firmware():
    for tool in ("arm-none-eabi-gcc", "qemu-system-arm", "cmake"):
        if shutil.which(tool) is None:
            pytest.skip(f"{tool} not installed")
    subprocess.run(["cmake", "-S", str(ROOT / "examples" / "firmware-trace"), "-B", str(BUILD),
                    f"-DCMAKE_TOOLCHAIN_FILE={ROOT}/ports/baremetal/cmake/arm-cortex-m3.cmake"],
                   check=True, stdout=subprocess.DEVNULL)
    subprocess.run(["cmake", "--build", str(BUILD), "-j2"], check=True, stdout=subprocess.DEVNULL)
    return BUILD


@pytest.mark.parametrize("heap", ["heap_4", "tlsf"])
def test_firmware_leak_report(firmware, heap, tmp_path, capsys):
    elf = firmware / f"fw_{heap}.elf"
    raw = tmp_path / f"{heap}.hkfw"
    run = subprocess.run([str(ROOT / "ports" / "baremetal" / "run-qemu.sh"), "mps2-an385", str(elf),
                          str(raw), str(ROUNDS)], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stdout + run.stderr
    assert f"heap {heap}:" in run.stdout and ", 0 dropped" in run.stdout

    assert main(["import", str(raw), "-o", str(tmp_path / "fw.hkb"), "-q"]) == 0
    assert main(["leaks", str(tmp_path / "fw.hkb"), "--elf", str(elf), "--checkpoint", "steady",
                 "--json"]) == 0
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
    assert tasks["Tmr Svc"]["allocations"] > 0 and tasks["Tmr Svc"]["peak_live_bytes"] <= 112

    # The trace replays on the lab's arena allocators without a failure or a corruption.
    for alloc in ("tlsf", "seqfit-best", "buddy", "freertos-heap4", "o1heap", "umm"):
        res = engine.replay(tmp_path / "fw.hkb", alloc)["replay"]
        assert res["failures"]["total"] == 0, alloc
        assert res["errors"]["corrupt_blocks"] == 0 and res["errors"]["check"] == 0, alloc
