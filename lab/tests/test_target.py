"""The Cortex-M3 instruction counter (lab/target/, heapkit/target.py) in QEMU.

Marked ``target``: `make target-icount-test` runs them (they need
arm-none-eabi-gcc, newlib and qemu-system-arm, which `make deps` installs);
the plain lab pytest run leaves them out. Counts are asserted only where
they are exact by construction (calibration callees, the branch-free bump
probe, two identical runs); never as a speed.
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import numpy as np
import pytest

from heapkit import cli, target
from heapkit.trace import Trace, TraceBuilder
from heapkit.workloads import generate

pytestmark = pytest.mark.target

FEW = ["bump", "tlsf", "buddy", "freertos-heap4", "o1heap", "umm", "newlib"]


def _elf(info, trace: Trace, name: str, work: Path) -> Path:
    meta = target.prepare_trace(name, trace, work)
    assert meta["skipped"] is None
    elf = work / f"{name}.elf"
    target._link(info, Path(meta["blob_obj"]), elf)
    return elf


@pytest.fixture(scope="module")
def o2():
    return target.build_objects("-O2")


@pytest.fixture(scope="module")
def itc_elf(o2, tmp_path_factory):
    work = tmp_path_factory.mktemp("itc")
    return _elf(o2, generate("itc", 1, duration=100), "itc", work)


@pytest.fixture(scope="module")
def itc_run(itc_elf, tmp_path_factory):
    out = tmp_path_factory.mktemp("counts1")
    return target.run_elf(itc_elf, FEW, counts_prefix=f"{out}/"), out


def _results(lines):
    return {d["alloc"]: d for d in lines if d["type"] == "result"}


def test_calibration_reads_exact_lengths(itc_run):
    cal = next(d for d in itc_run[0] if d["type"] == "calibration")
    assert cal["empty"] == 0
    assert cal["nop"] == 1            # a callee that is only `bx lr`
    assert cal["insns_1000"] == 1000  # 999 nops and `bx lr`
    # The raw window around the 1000-instruction callee spans 1002 instructions
    # (the call and the empty window's one): 3.2 SysTick ticks each, +-1 tick.
    assert abs(cal["ticks_1000"] - 3.2 * 1002) <= 1


def test_bump_probe_matches_its_disassembly(itc_elf, itc_run):
    """The measured count of a branch-free function equals its instruction count in objdump."""
    cal = next(d for d in itc_run[0] if d["type"] == "calibration")
    dis = subprocess.run(["arm-none-eabi-objdump", "-d", "--no-show-raw-insn", str(itc_elf)],
                         capture_output=True, text=True, check=True).stdout
    body = dis.split("<tgt_probe_bump_malloc>:\n", 1)[1].split("\n\n", 1)[0]
    insns = [l.split("\t", 1)[1].strip() for l in body.splitlines() if "\t" in l]
    mnemonics = [i.split()[0] for i in insns]
    insns = insns[:mnemonics.index("bx") + 1]   # what follows is padding and the literal pool
    mnemonics = mnemonics[:len(insns)]
    assert not any(re.match(r"^(b|bl|blx|cbz|cbnz|b\w\w|it\w*)$", m) for m in mnemonics[:-1]), insns
    assert cal["probe_bump"] == [len(insns), len(insns)]


def test_two_runs_give_identical_counts(itc_elf, itc_run, tmp_path):
    first, dir1 = itc_run
    second = target.run_elf(itc_elf, FEW, counts_prefix=f"{tmp_path}/")
    assert first == second
    for a in FEW:
        one = (dir1 / f"{a}.u32").read_bytes()
        assert one == (tmp_path / f"{a}.u32").read_bytes()
        assert len(one) == 4 * _results(first)[a]["records"]
    # Real counts, not a constant: allocators differ, and tlsf's frees vary with merges.
    assert len({_results(first)[a]["checksum"] for a in FEW}) == len(FEW)


def test_driver_statistics_agree_with_the_raw_counts(itc_run):
    lines, out = itc_run
    for a, res in _results(lines).items():
        raw = target.kind_stats(target.read_counts(out / f"{a}.u32"))
        for kind in target.KINDS:
            for key in ("count", "min", "p50", "p99", "p999", "max"):
                assert res["ops"][kind][key] == raw[kind][key], (a, kind, key)
        assert res["errors"] == {"corrupt_blocks": 0, "calloc_not_zero": 0, "misaligned": 0,
                                 "bad_blocks": 0}, a
        assert res["failures"]["total"] == 0, a
        assert res["ops"]["malloc"]["count"] + res["ops"]["free"]["count"] == res["records"], a


def test_overlapping_blocks_are_reported(itc_elf):
    res = _results(target.run_elf(itc_elf, ["selftest-overlap"]))["selftest-overlap"]
    assert res["errors"]["corrupt_blocks"] > 0


def test_failures_and_skipped_frees(o2, tmp_path):
    b = TraceBuilder()
    big = b.malloc(2 * target.ARENA_SIZE)
    b.free(big)
    small = b.malloc(16)
    moved = b.realloc(small, 4 * target.ARENA_SIZE)
    b.free(moved)
    c = b.calloc(3, 40)
    b.free(c)
    res = _results(target.run_elf(_elf(o2, b.build("fail"), "fail", tmp_path), ["tlsf", "o1heap"]))
    for a in ("tlsf", "o1heap"):
        f = res[a]["failures"]
        assert (f["malloc"], f["realloc"], f["calloc"]) == (1, 1, 0), a
        assert f["skipped_frees"] == 2 and f["failed_realloc_frees"] == 1, a
        assert res[a]["errors"]["calloc_not_zero"] == 0
    assert res["o1heap"]["emulated"] == {"realloc": True, "calloc": True, "aligned": True}
    assert res["tlsf"]["emulated"] == {"realloc": False, "calloc": False, "aligned": False}


def test_compact_form_reuses_slots():
    b = TraceBuilder()
    a = b.malloc(10)
    c = b.malloc(20)
    b.free(a)
    d = b.malloc(30)          # reuses a's slot
    e = b.realloc(c, 40)      # keeps c's slot
    f = b.realloc(None, 50)
    b.aligned(64, 70)
    b.calloc(3, 5)
    b.free(d)
    b.free(e)
    b.free(f)
    data, meta = target.compact(b.build("t"))
    w = np.frombuffer(data, dtype="<u4").tolist()
    assert w[:8] == [target.HKC_MAGIC, 1, 11, 5, meta["words"], 7, 0, 0]
    M, F, C, A, R, RN = range(6)
    assert w[8:] == [M | 0 << 3, 10, M | 1 << 3, 20, F | 0 << 3, M | 0 << 3, 30, R | 1 << 3, 40,
                     RN | 2 << 3, 50, A | 3 << 3, 70, 64, C | 4 << 3, 5, 3,
                     F | 0 << 3, F | 1 << 3, F | 2 << 3]
    assert meta == {"records": 11, "slots": 5, "ids": 7, "words": len(w) - 8}


def test_trace_too_big_for_the_board_is_skipped():
    meta = {"records": 10, "slots": 1}
    assert target.fits(meta, target.MAX_BLOB_BYTES) is None
    assert "flash" in target.fits(meta, target.MAX_BLOB_BYTES + 4)
    assert "PSRAM" in target.fits({"records": 2_000_000, "slots": 1}, 100)


def test_cli_bench_target(tmp_path, capsys):
    b = TraceBuilder()
    ids = [b.malloc(16 * (i % 7 + 1)) for i in range(40)]
    for i in ids[::2]:
        b.free(i)
    small = tmp_path / "small.hkt"
    b.build("small").save(small)
    out = tmp_path / "res.json"
    rc = cli.main(["bench", "--target", "cortex-m3", "--trace", str(small), "--alloc",
                   "tlsf,freertos-heap4", "--opt", "O2", "--no-host", "--json", str(out)])
    text = capsys.readouterr().out
    assert rc == 0
    assert "malloc p99.9" in text and "freertos-heap4" in text and ".text bytes" in text
    data = json.loads(out.read_text())
    assert data["kind"] == "heapkit-target" and data["opts"] == ["-O2"]
    assert {r["allocator"] for r in data["runs"]} == {"tlsf", "freertos-heap4"}
    assert data["text_bytes"]["-O2"]["tlsf"] > 0
    assert data["pooled"]["-O2"]["tlsf"]["malloc"]["count"] == 40
    html = tmp_path / "report.html"
    assert cli.main(["report", str(out), "-o", str(html)]) == 0
    page = html.read_text()
    assert "Cortex-M3: exact instructions per call" in page and "worst-path malloc" in page
    tlsf = data["pooled"]["-O2"]["tlsf"]
    assert (f'<td>tlsf</td><td class="n">{tlsf["malloc"]["p50"]}</td>'
            f'<td class="n">{tlsf["malloc"]["max"]}</td>') in page


@pytest.mark.parametrize("argv, message", [
    (["--target", "avr8", "--workload", "itc"], "--target: unknown target 'avr8'"),
    (["--target", "cortex-m3", "--opt", "O3", "--workload", "itc"], "--opt: 'O3' is not one of O2, Os"),
    (["--target", "cortex-m3"], "give at least one --trace FILE, --workload NAME or --worst-case"),
])
def test_cli_bench_target_bad_arguments(argv, message, capsys):
    assert cli.main(["bench", *argv]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and message in err
