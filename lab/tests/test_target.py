# SPDX-License-Identifier: MIT
"""The instruction counter (lab/target/, heapkit/target.py) in QEMU, on both
targets: Cortex-M3 (mps2-an385, SysTick) and RV32IMAC (virt, minstret).

Marked ``target``: `make target-icount-test` runs them (they need
arm-none-eabi-gcc with newlib, riscv64-unknown-elf-gcc with picolibc,
qemu-system-arm and qemu-system-riscv32, which `make deps` installs); the
plain lab pytest run leaves them out. Counts are asserted only where they
are exact by construction (calibration callees, the branch-free bump
probe, two identical runs, a wrapper's constant cost); never as a speed.
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

TARGETS = ["cortex-m3", "rv32"]
LIBC = {"cortex-m3": "newlib", "rv32": "picolibc"}
# Branches and calls, which would make a callee's count depend on its path.
BRANCHES = {"cortex-m3": r"^(b|bl|blx|bx|cbz|cbnz|b(eq|ne|cs|cc|hs|lo|mi|pl|vs|vc|hi|ls|ge|lt|gt|le)|it\w*)(\.[nw])?$",
            "rv32": r"^(j|jal|jalr|jr|beqz?|bnez?|blt[uz]?|bge[uz]?|bgtz?|blez|call|tail)$"}
RETURN = {"cortex-m3": "bx", "rv32": "ret"}


def few(tname: str) -> list[str]:
    return ["bump", "tlsf", "buddy", "freertos-heap4", "o1heap", "umm", "tlsf-conte", LIBC[tname]]


def _hkc(info, trace: Trace, name: str, work: Path) -> Path:
    meta = target.prepare_trace(name, trace, work, info["target"])
    assert meta["skipped"] is None
    return Path(meta["hkc"])


def _run(info, hkc: Path, allocs, counts: Path | None = None):
    return target.run_elf(info["elf"], hkc, allocs, counts_prefix=f"{counts}/" if counts else None)


@pytest.fixture(scope="module", params=TARGETS)
def o2(request):
    return target.build_objects("-O2", target=request.param)


@pytest.fixture(scope="module")
def itc_elf(o2):
    return o2["elf"]


@pytest.fixture(scope="module")
def itc_hkc(o2, tmp_path_factory):
    work = tmp_path_factory.mktemp(f"itc-{o2['target'].name}")
    return _hkc(o2, generate("itc", 1, duration=100), "itc", work)


@pytest.fixture(scope="module")
def itc_run(o2, itc_hkc, tmp_path_factory):
    out = tmp_path_factory.mktemp(f"counts1-{o2['target'].name}")
    return _run(o2, itc_hkc, few(o2["target"].name), out), out


def _results(lines):
    return {d["alloc"]: d for d in lines if d["type"] == "result"}


def _calibration(lines):
    return next(d for d in lines if d["type"] == "calibration")


def _disassembly(info, elf: Path, symbol: str) -> list[tuple[str, str]]:
    """(mnemonic, instruction) of *symbol* in objdump, up to and including its return."""
    t = info["target"]
    dis = subprocess.run([t.objdump, "-d", "--no-show-raw-insn", str(elf)],
                         capture_output=True, text=True, check=True).stdout
    body = dis.split(f"<{symbol}>:\n", 1)[1].split("\n\n", 1)[0]
    insns = [l.split("\t", 1)[1].strip() for l in body.splitlines() if "\t" in l]
    mnemonics = [i.split()[0] for i in insns]
    end = mnemonics.index(RETURN[t.name]) + 1       # what follows is padding and literals
    return list(zip(mnemonics[:end], insns[:end]))


def test_elf_target_is_read_from_the_header(o2, itc_elf):
    assert target.elf_target(itc_elf) is o2["target"]


def test_calibration_reads_exact_lengths(o2, itc_run):
    cal = _calibration(itc_run[0])
    assert cal["empty"] == 0
    assert cal["nop"] == 1            # a callee that is only a return
    assert cal["insns_1000"] == 1000  # 999 nops and a return
    # The raw window around the 1000-instruction callee spans 1002 instructions
    # (the call and the empty window's one).
    if o2["target"].name == "cortex-m3":
        # SysTick: 3.2 ticks per instruction, +-1 tick.
        assert cal["counter"] == "SYST_CVR" and cal["units_per_insn"] == 3.2
        assert abs(cal["ticks_1000"] - 3.2 * 1002) <= 1 and cal["raw_1000"] == cal["ticks_1000"]
    else:
        # minstret under -icount shift=7: nanoseconds of virtual time, exactly 128 per instruction.
        assert cal["counter"] == "minstret" and cal["units_per_insn"] == 128
        assert cal["raw_1000"] == 128 * 1002
        assert cal["empty_raw"] == 128    # the empty window: the second read itself


def test_calibration_callees_match_their_disassembly(o2, itc_elf, itc_run):
    """The calibration callees are as long as they say: objdump counts 1 and 1000 instructions,
    none of them a branch but the return."""
    cal = _calibration(itc_run[0])
    for symbol, measured in (("tgt_cal_nop", cal["nop"]), ("tgt_cal_1000", cal["insns_1000"])):
        insns = _disassembly(o2, itc_elf, symbol)
        assert len(insns) == measured, symbol
        assert {m for m, _ in insns[:-1]} <= {"nop"}, symbol


def test_bump_probe_matches_its_disassembly(o2, itc_elf, itc_run):
    """The measured count of a branch-free function equals its instruction count in objdump."""
    cal = _calibration(itc_run[0])
    insns = _disassembly(o2, itc_elf, "tgt_probe_bump_malloc")
    branch = re.compile(BRANCHES[o2["target"].name])
    assert not any(branch.match(m) for m, _ in insns[:-1]), insns
    assert cal["probe_bump"] == [len(insns), len(insns)]


def test_two_runs_give_identical_counts(o2, itc_hkc, itc_run, tmp_path):
    first, dir1 = itc_run
    names = few(o2["target"].name)
    second = _run(o2, itc_hkc, names, tmp_path)
    assert first == second
    for a in names:
        one = (dir1 / f"{a}.u32").read_bytes()
        assert one == (tmp_path / f"{a}.u32").read_bytes()
        assert len(one) == 4 * _results(first)[a]["records"]
    # Real counts, not a constant: allocators differ, and tlsf's frees vary with merges.
    assert len({_results(first)[a]["checksum"] for a in names}) == len(names)


def test_driver_statistics_agree_with_the_raw_counts(itc_run):
    lines, out = itc_run
    for a, res in _results(lines).items():
        words = target.checked_counts(out / f"{a}.u32", res)
        raw = target.kind_stats(words)
        for kind in target.KINDS:
            for key in ("count", "min", "max"):
                assert res["ops"][kind][key] == raw[kind][key], (a, kind, key)
        assert res["errors"] == {"corrupt_blocks": 0, "calloc_not_zero": 0, "misaligned": 0,
                                 "bad_blocks": 0}, a
        assert res["failures"]["total"] == 0, a
        assert res["ops"]["malloc"]["count"] + res["ops"]["free"]["count"] == res["records"], a


def test_uniform_layer_costs_a_constant_per_call(o2, itc_hkc, tmp_path):
    """tlsf-uniform replays the same heap as tlsf through hk_malloc/hk_free: the same path
    inside the allocator on every call, so its count exceeds tlsf's by one constant per kind."""
    lines = _run(o2, itc_hkc, ["tlsf", "tlsf-uniform"], tmp_path)
    res = _results(lines)
    assert res["tlsf-uniform"]["family"] == "uniform"
    direct = target.read_counts(tmp_path / "tlsf.u32")
    uniform = target.read_counts(tmp_path / "tlsf-uniform.u32")
    assert np.array_equal(direct >> 29, uniform >> 29)
    for kind in (0, 1):   # malloc, free
        sel = (direct >> 29) == kind
        diff = (uniform[sel] & target.COUNT_MASK).astype(np.int64) - (direct[sel] & target.COUNT_MASK)
        assert len(set(diff.tolist())) == 1 and diff[0] > 0, (kind, set(diff.tolist()))


def test_recorder_costs_a_constant_per_call(o2, itc_hkc, tmp_path):
    """tlsf-traced is tlsf-uniform through the firmware recorder's wrappers (ports/trace/),
    its ring emptied after every call: one record per call, the same path every time, so
    its count exceeds tlsf-uniform's by one constant per kind (docs/firmware-trace.md)."""
    lines = _run(o2, itc_hkc, ["tlsf-uniform", "tlsf-traced"], tmp_path)
    res = _results(lines)
    assert res["tlsf-traced"]["family"] == "traced"
    assert res["tlsf-traced"]["failures"]["total"] == 0 and not any(res["tlsf-traced"]["errors"].values())
    uniform = target.read_counts(tmp_path / "tlsf-uniform.u32")
    traced = target.read_counts(tmp_path / "tlsf-traced.u32")
    assert np.array_equal(uniform >> 29, traced >> 29)
    for kind in (0, 1):   # malloc, free
        sel = (uniform >> 29) == kind
        diff = (traced[sel] & target.COUNT_MASK).astype(np.int64) - (uniform[sel] & target.COUNT_MASK)
        assert len(set(diff.tolist())) == 1 and diff[0] > 0, (kind, set(diff.tolist()))


def test_overlapping_blocks_are_reported(o2, itc_hkc):
    res = _results(_run(o2, itc_hkc, ["selftest-overlap"]))["selftest-overlap"]
    assert res["errors"]["corrupt_blocks"] > 0


def test_a_call_that_wraps_the_counter_is_reported_saturated(o2, tmp_path):
    """selftest-spin's malloc(n) spins n * 256 times: 200 000 is past both counters' range
    (Cortex-M3: 2^24 SysTick ticks, RV32: 2^32 ns); 64 is well inside it."""
    b = TraceBuilder()
    b.free(b.malloc(64))
    b.free(b.malloc(200_000))
    lines = _run(o2, _hkc(o2, b.build("spin"), "spin", tmp_path), ["selftest-spin"])
    res = _results(lines)["selftest-spin"]
    mall = res["ops"]["malloc"]
    assert mall["saturated"] == 1 and mall["max"] == target.COUNT_MASK and mall["min"] > 64 * 256
    assert lines[-1]["saturated_calls"] == 1


def test_failures_and_skipped_frees(o2, tmp_path):
    b = TraceBuilder()
    big = b.malloc(2 * target.ARENA_SIZE)
    b.free(big)
    small = b.malloc(16)
    moved = b.realloc(small, 4 * target.ARENA_SIZE)
    b.free(moved)
    c = b.calloc(3, 40)
    b.free(c)
    allocs = ["tlsf", "o1heap", "tlsf-conte"]
    res = _results(_run(o2, _hkc(o2, b.build("fail"), "fail", tmp_path), allocs))
    for a in allocs:
        f = res[a]["failures"]
        assert (f["malloc"], f["realloc"], f["calloc"]) == (1, 1, 0), a
        assert f["skipped_frees"] == 2 and f["failed_realloc_frees"] == 1, a
        assert res[a]["errors"]["calloc_not_zero"] == 0
    assert res["o1heap"]["emulated"] == {"realloc": True, "calloc": True, "aligned": True}
    assert res["tlsf"]["emulated"] == {"realloc": False, "calloc": False, "aligned": False}
    assert res["tlsf-conte"]["emulated"] == {"realloc": False, "calloc": True, "aligned": False}


def test_tlsf_conte_aligned_and_realloc(o2, tmp_path):
    """Conte's TLSF: 4-byte blocks on these 32-bit targets, aligned requests through
    lv_tlsf_memalign, realloc in place and moving; the pattern checks find nothing."""
    b = TraceBuilder()
    ids = [b.malloc(n) for n in (1, 3, 5, 13, 100)]
    al = [b.aligned(a, 40) for a in (8, 64, 1024)]
    grown = b.realloc(ids[4], 1000)
    for i in ids[:4] + al + [grown]:
        b.free(i)
    res = _results(_run(o2, _hkc(o2, b.build("conte"), "conte", tmp_path), ["tlsf-conte"]))
    r = res["tlsf-conte"]
    assert r["failures"]["total"] == 0 and r["failures"]["unsupported_aligned"] == 0
    assert r["errors"] == {"corrupt_blocks": 0, "calloc_not_zero": 0, "misaligned": 0, "bad_blocks": 0}
    assert r["ops"]["aligned"]["count"] == 3 and r["ops"]["realloc"]["count"] == 1


def test_listing_names_families_and_defaults(o2):
    rows = {a["name"]: a for a in target.allocators(o2)}
    t = o2["target"].name
    for name in ("tlsf", "pool", "tlsf-uniform", "tlsf-conte", "o1heap", LIBC[t], "selftest-spin"):
        assert name in rows, name
    assert rows["tlsf"]["family"] == "heapkit" and not rows["tlsf"]["optional"]
    assert rows["tlsf-uniform"]["family"] == "uniform" and not rows["tlsf-uniform"]["optional"]
    assert rows["buddy-uniform"]["optional"] and rows["selftest-spin"]["optional"]
    assert rows["tlsf-conte"]["family"] == "peer"
    assert rows["tlsf-traced"]["family"] == "traced" and rows["tlsf-traced"]["optional"]


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
    assert w[:8] == [target.HKC_MAGIC, 1, 11, 5, meta["words"], 7, 70, 0]   # 70: the largest request
    M, F, C, A, R, RN = range(6)
    assert w[8:] == [M | 0 << 3, 10, M | 1 << 3, 20, F | 0 << 3, M | 0 << 3, 30, R | 1 << 3, 40,
                     RN | 2 << 3, 50, A | 3 << 3, 70, 64, C | 4 << 3, 5, 3,
                     F | 0 << 3, F | 1 << 3, F | 2 << 3]
    assert meta == {"records": 11, "slots": 5, "ids": 7, "words": len(w) - 8}


def test_only_blocks_live_at_once_limit_a_trace():
    """A trace streams in, so its length never matters; its live blocks must fit the slot table."""
    assert target.fits({"records": 50_000_000, "slots": target.CORTEX_M3.max_slots}) is None
    why = target.fits({"records": 10, "slots": target.CORTEX_M3.max_slots + 1})
    assert why and f"{target.CORTEX_M3.max_slots:,}" in why
    assert target.fits({"records": 10, "slots": target.CORTEX_M3.max_slots + 1}, "rv32") is None


def test_a_long_trace_streams_through_in_chunks(o2, tmp_path):
    """More records than the driver's chunk holds, with 1-, 2- and 3-word records straddling
    the chunk borders: every record is replayed and counted, and a 12 MiB block fits the
    16 MiB arena that the old 3.5 MiB one could not hold."""
    b = TraceBuilder()
    live = []
    for i in range(30_000):
        k = i % 4
        live.append(b.malloc(24 + i % 50) if k == 0 else b.calloc(2, 8 + i % 9) if k == 1 else
                    b.aligned(16, 40) if k == 2 else b.malloc(8))
        if len(live) > 64:
            b.free(live.pop(0))
    big = b.malloc(12 << 20)
    b.free(big)
    for i in live:
        b.free(i)
    trace = b.build("long")
    res = _results(_run(o2, _hkc(o2, trace, "long", tmp_path), ["tlsf"], tmp_path))["tlsf"]
    assert res["records"] == len(trace.records)
    assert res["failures"]["total"] == 0 and not any(res["errors"].values())
    words = target.checked_counts(tmp_path / "tlsf.u32", res)
    assert (words >> 29 == 7).sum() == 0 and res["ops"]["calloc"]["count"] == 7_500


def test_a_truncated_trace_or_count_file_is_an_error(o2, tmp_path):
    b = TraceBuilder()
    for _ in range(5000):
        b.free(b.malloc(32))
    hkc = _hkc(o2, b.build("cut"), "cut", tmp_path)
    good = _results(_run(o2, hkc, ["tlsf"], tmp_path))["tlsf"]
    counts = tmp_path / "tlsf.u32"
    counts.write_bytes(counts.read_bytes()[:-4])
    with pytest.raises(target.TargetError, match="do not match"):
        target.checked_counts(counts, good)
    hkc.write_bytes(hkc.read_bytes()[:-400])
    with pytest.raises(target.TargetError, match="malformed or truncated"):
        _run(o2, hkc, ["tlsf"])


def test_worst_case_traces_scale_with_the_arena():
    full = {n: (len(t.records), only) for n, t, only in target.worst_case_traces()}
    small = {n: (len(t.records), only) for n, t, only in target.worst_case_traces(256 * 1024)}
    assert full["worst-buddy"][0] == 2 * target.BUDDY_MIN_BLOCKS + 2
    assert full["worst-pools"][0] == 2 * target.POOL_REQUESTS
    assert small["worst-buddy"][0] < full["worst-buddy"][0] and small["worst-pools"][0] < full["worst-pools"][0]
    assert "tlsf-conte" in full["worst-tlsf"][1] and "freertos-heap4" in full["worst-seqfit"][1]


@pytest.mark.parametrize("tname", TARGETS)
def test_cli_bench_target(tname, tmp_path, capsys):
    b = TraceBuilder()
    ids = [b.malloc(16 * (i % 7 + 1)) for i in range(40)]
    for i in ids[::2]:
        b.free(i)
    small = tmp_path / "small.hkt"
    b.build("small").save(small)
    out = tmp_path / "res.json"
    rc = cli.main(["bench", "--target", tname, "--trace", str(small), "--alloc",
                   "tlsf,freertos-heap4,tlsf-conte", "--opt", "O2", "--no-host", "--json", str(out)])
    text = capsys.readouterr().out
    assert rc == 0
    assert "malloc p99.9" in text and "freertos-heap4" in text and ".text bytes" in text
    assert text.startswith(target.get_target(tname).title)
    data = json.loads(out.read_text())
    assert data["kind"] == "heapkit-target" and data["opts"] == ["-O2"] and data["target"] == tname
    assert data["builds"] == ["-O2"] and data["hardening"] is None
    assert {r["allocator"] for r in data["runs"]} == {"tlsf", "freertos-heap4", "tlsf-conte"}
    assert data["text_bytes"]["-O2"]["tlsf"] > 0 and data["text_bytes"]["-O2"]["tlsf-conte"] > 0
    assert data["pooled"]["-O2"]["tlsf"]["malloc"]["count"] == 40
    html = tmp_path / "report.html"
    assert cli.main(["report", str(out), "-o", str(html)]) == 0
    page = html.read_text()
    assert "Cortex-M3: exact instructions per call" in page and "worst-path malloc" in page
    tlsf = data["pooled"]["-O2"]["tlsf"]
    assert (f'<td>tlsf</td><td class="n">{tlsf["malloc"]["p50"]}</td>'
            f'<td class="n">{tlsf["malloc"]["max"]}</td>') in page


def test_cli_bench_target_hardening_and_arena(tmp_path, capsys):
    """--hardening builds heapkit once per level and labels the results; the peers run in
    the first level only. --arena gives every allocator that arena."""
    b = TraceBuilder()
    for i in range(30):
        b.free(b.malloc(24 + i))
    small = tmp_path / "small.hkt"
    b.build("small").save(small)
    out = tmp_path / "res.json"
    rc = cli.main(["bench", "--target", "cortex-m3", "--trace", str(small), "--alloc", "tlsf,umm,freertos-heap4",
                   "--opt", "O2", "--hardening", "0,2", "--arena", str(256 * 1024), "--no-host",
                   "--json", str(out)])
    text = capsys.readouterr().out
    assert rc == 0 and "cortex-m3 -O2/h0: over all traces" in text and "-O2/h2" in text
    data = json.loads(out.read_text())
    assert data["builds"] == ["-O2/h0", "-O2/h2"] and data["hardening"] == [0, 2]
    assert data["arena"] == 256 * 1024
    runs = {(r["build"], r["allocator"]): r for r in data["runs"]}
    assert set(runs) == {("-O2/h0", "tlsf"), ("-O2/h0", "umm"), ("-O2/h0", "freertos-heap4"), ("-O2/h2", "tlsf")}
    assert runs[("-O2/h2", "tlsf")]["hardening"] == 2
    assert all(r["result"]["failures"]["total"] == 0 for r in data["runs"])
    for lab in data["builds"]:
        flags = (target.opt_dir("-O2", "cortex-m3", 256 * 1024, int(lab[-1])) / "objects.stamp")
        assert flags.exists()


@pytest.mark.parametrize("argv, message", [
    (["--target", "avr8", "--workload", "itc"], "--target: unknown target 'avr8'"),
    (["--target", "cortex-m3", "--opt", "O3", "--workload", "itc"], "--opt: 'O3' is not one of O2, Os"),
    (["--target", "rv32", "--hardening", "4", "--workload", "itc"], "--hardening: '4' is not one of 0, 1, 2, 3"),
    (["--target", "cortex-m3", "--arena", str(32 * 2**20), "--workload", "itc"], "--arena: 33554432 bytes"),
    (["--target", "cortex-m3"], "give at least one --trace FILE, --workload NAME or --worst-case"),
    (["--target", "rv32", "--workload", "itc", "--alloc", "tlsf,nosuch"], "unknown allocator(s) on the target: nosuch"),
])
def test_cli_bench_target_bad_arguments(argv, message, capsys):
    assert cli.main(["bench", *argv]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and message in err


def test_hotpath_table(monkeypatch, tmp_path, capsys):
    """tools/hotpath_table.py on small stand-in workloads: one markdown row per allocator with
    both targets' columns, the per-workload table, and the JSON documents."""
    import importlib.util
    spec = importlib.util.spec_from_file_location("hotpath_table", Path(__file__).resolve().parents[2] / "tools" / "hotpath_table.py")
    tool = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tool)

    def small(seed, tmp):
        out = []
        for name, n in (("itc", 30), ("net", 20), ("random", 25)):
            b = TraceBuilder()
            for i in range(n):
                b.free(b.malloc(8 + 24 * i))
            out.append((name, b.build(name)))
        return out

    monkeypatch.setattr(tool, "workloads", small)
    js = tmp_path / "hot.json"
    assert tool.main(["--alloc", "tlsf,tlsf-uniform,o1heap,tlsf-conte", "--no-worst-case",
                      "--json", str(js)]) == 0
    text = capsys.readouterr().out
    assert "| allocator | HK_HARDENING | Cortex-M3 malloc p50 / max |" in text
    assert "RV32IMAC worst-path malloc / free | RV32IMAC failed |" in text
    docs = json.loads(js.read_text())
    assert set(docs) == {"cortex-m3", "rv32"} and all(d["arena"] == 256 * 1024 for d in docs.values())
    for a in ("tlsf", "tlsf-uniform", "o1heap", "tlsf-conte"):
        m3 = docs["cortex-m3"]["pooled"]["-O2"][a]
        rv = docs["rv32"]["pooled"]["-O2"][a]
        assert (f"| {a} | - | {m3['malloc']['p50']} / {m3['malloc']['max']} | "
                f"{m3['free']['p50']} / {m3['free']['max']} | - / - | 0 | "
                f"{rv['malloc']['p50']} / {rv['malloc']['max']} |") in text
    assert "p50 per workload (itc / net / random)" in text


def test_a_dmm_configuration_compiled_in_counts_as_its_preset():
    """heapkit/dmm_network.py's header: the dmm-net preset's own configuration, compiled in
    as dmm-chosen-x, takes exactly the catalog's dmm-net instructions on every call."""
    from heapkit import dmm_network, explore
    net = explore.presets()["net"].text()
    trace = generate("itc", 1, duration=100)
    doc = target.bench([("itc", trace, ["dmm-net", "dmm-chosen-x"])], opts=("-O2",),
                       dmm_header=dmm_network._dmm_header({"x": net}))
    runs = {r["allocator"]: r for r in doc["runs"]}
    assert set(runs) == {"dmm-net", "dmm-chosen-x"}
    for k in ("malloc", "free"):
        assert runs["dmm-chosen-x"]["stats"][k] == runs["dmm-net"]["stats"][k]
        assert runs["dmm-net"]["stats"][k]["count"] > 0
    # without the header the configuration is not there
    with pytest.raises(target.HeapkitError, match="dmm-chosen-x"):
        target.bench([("itc", trace)], allocs=["dmm-chosen-x"], opts=("-O2",))
