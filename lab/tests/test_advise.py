# SPDX-License-Identifier: MIT
"""heapkit advise: advice on traces whose answer is known, and its configuration compiled
and run.

- a trace whose smallest heap is computed by hand (bump: a header and the request
  rounded up per allocation, nothing reused) must get that heap;
- the recommended heap with no margin replays with zero failures (and 16 bytes less
  fails: it is the smallest);
- a fixed-size trace of lfpool's block size: the pool must win (instruction counts in
  QEMU, marker ``target``);
- the decision rule on hand-made measurements (bounded first, budgets, the reason, ties,
  boards too small for the heap, the host's p99 not ranking);
- one answer per trace: on hand-made measurements where a peer wins and where heapkit
  wins, the text, the JSON, the report's advice table and the C and FreeRTOS snippets
  name the same allocator, with one "recommendation:" line; a peer is configured only
  with --configure heapkit, and heapkit's best is named with the gap;
- the C snippet compiled with the library and the FreeRTOS snippet compiled with the
  kernel's POSIX port (V11.2.0, the peers' fetch) each replay a trace's first 10,000
  records without a failed allocation.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from heapkit import advise as adv
from heapkit import cli, engine, native
from heapkit.trace import Trace, TraceBuilder
from heapkit.workloads import generate

HERE = Path(__file__).resolve().parent / "advise"
PREFIX = 10_000
NULL_ID = 0xFFFFFFFF


def _advise(path, **kw) -> dict:
    kw.setdefault("targets", [])
    return adv.advise([str(path)], progress=False, **kw)


@pytest.fixture(scope="module")
def kth_trace(tmp_path_factory) -> Path:
    """A workload trace of 24,000 records (buddy-kth's benchmark, 12,000 allocations)."""
    path = tmp_path_factory.mktemp("advise") / "kth.hkb"
    generate("kth", seed=3, allocs=12_000).save(path)
    return path


# --------------------------------------------------------------------------
# The answer on known traces

def test_hand_computed_minimum_heap(tmp_path):
    sizes = [100, 24, 1000, 1, 300, 77]
    b = TraceBuilder()
    ids = [b.malloc(n) for n in sizes[:3]]
    b.free(ids[0])
    ids.append(b.malloc(sizes[3]))
    b.free(ids[1])
    b.free(ids[2])
    ids += [b.malloc(n) for n in sizes[4:]]
    path = tmp_path / "hand.hkt"
    b.build("hand").save(path)
    probe = engine.replay(path, "bump", arena=65536, series=0)
    if probe["engine"]["hk_hardening"] >= 2:
        pytest.skip("HK_HARDENING >= 2 adds canary room to every bump block")
    # bump reuses nothing: its control data, then per allocation an 8-byte header and the
    # request rounded up to 8; the size search steps in 16 bytes.
    need = probe["arena"]["control_bytes"] + sum(-(-n // 8) * 8 + 8 for n in sizes)
    doc = _advise(path, allocs="bump")
    row = doc["traces"][0]["rows"][0]
    assert row["allocator"] == "bump"
    assert row["min_heap"] == -(-need // 16) * 16


def test_recommended_heap_without_margin_replays_without_failure(kth_trace):
    doc = _advise(kth_trace, margin=0, allocs="tlsf,seqfit-best,buddy,dmm-lea,o1heap,umm")
    t = doc["traces"][0]
    assert t["recommendation"]
    rows = {r["allocator"]: r for r in t["rows"]}
    for name in {t["recommendation"], *t["front"]}:
        r = rows[name]
        assert r["heap"] == r["min_heap"]
        ok = engine.replay(kth_trace, name, arena=r["heap"], series=0, timing=False)
        assert ok["replay"]["failures"]["total"] == 0, name
        if not r["nonmonotone"]:
            short = engine.replay(kth_trace, name, arena=r["heap"] - 16, series=0, timing=False)
            assert short["replay"]["failures"]["total"] > 0, name


@pytest.mark.target
def test_fixed_size_trace_pool_wins(tmp_path):
    """Every request is lfpool's block size (the catalog's 128 bytes): the pools need the
    smallest heap and have the lowest worst case, whatever the churn; lfpool (a 4-byte side
    word a block) is the recommendation, pool (the seed's FCTMA: an 8-byte header, fewer
    instructions) the other point of the front."""
    from heapkit import target
    if target.missing_tools("cortex-m3"):
        pytest.skip("no Cortex-M3 tools: " + ", ".join(target.missing_tools("cortex-m3")))
    b = TraceBuilder()
    live: list[int] = []
    state = 12345
    for _ in range(6000):
        state = (state * 1103515245 + 12345) % (1 << 31)
        if len(live) < 200 or (state >> 16) % 2 and len(live) < 800:
            live.append(b.malloc(128))
        else:
            b.free(live.pop((state >> 8) % len(live)))
    path = tmp_path / "fixed.hkt"
    b.build("fixed-128").save(path)
    doc = _advise(path, targets=["cortex-m3"])
    t = doc["traces"][0]
    assert t["cost"]["kind"] == "instructions"
    assert t["recommendation"] == "lfpool", t["reason"]
    assert t["front"] == ["lfpool", "pool"]
    assert t["reason"].startswith("lfpool: heap ≥ ")
    assert t["config"]["c"] and "hk_catalog_find(\"lfpool\")" in t["config"]["c"]


# --------------------------------------------------------------------------
# The decision rule on hand-made measurements

AXIS = {"kind": "instructions", "target": "cortex-m3", "title": "Cortex-M3", "arena": 3670016,
        "unit": "instructions", "short": "instructions",
        "label": "Cortex-M3 worst-case instructions"}


def _row(name, heap, cost, failures=0, family="heapkit"):
    return {"allocator": name, "family": family, "min_heap": heap,
            "heap": adv.heap_with_margin(heap, 25), "host": {"failures": 0},
            "growth": adv.growth(name),
            "targets": {"cortex-m3": {"worst": cost, "failures": failures}}}


def test_decide_prefers_a_bounded_worst_case_near_the_smallest_heap():
    rows = [_row("seqfit-best", 100_000, 150), _row("tlsf", 102_000, 226),
            _row("o1heap", 180_000, 90), _row("buddy", 101_000, 400)]
    d = adv.decide(rows, AXIS, 25)
    assert d["front"] == ["seqfit-best", "o1heap"]
    assert d["recommendation"] == "tlsf"
    assert d["reason"] == ("tlsf: heap ≥ 99.6 KiB (+25 % margin: 125.0 KiB), worst case 226 "
                           "instructions; seqfit-best needs 2 % less heap but its worst case "
                           "grows with the number of free blocks")


def test_decide_budgets():
    rows = [_row("seqfit-best", 100_000, 150), _row("tlsf", 102_000, 226),
            _row("o1heap", 180_000, 90)]
    # A heap budget: the lowest worst case that fits it.
    d = adv.decide(rows, AXIS, 25, max_heap=230_000)
    assert d["recommendation"] == "o1heap"
    d = adv.decide(rows, AXIS, 25, max_heap=200_000)
    assert d["recommendation"] == "tlsf"
    # An instruction budget leaves the smallest heaps under it.
    d = adv.decide(rows, AXIS, 25, max_insns=200)
    assert d["recommendation"] == "seqfit-best"
    assert "grows with the number of free blocks" in d["reason"]
    d = adv.decide(rows, AXIS, 25, max_heap=50_000)
    assert d["recommendation"] is None
    assert d["why_none"] == ("no heap with margin fits --max-heap 48.8 KiB: the smallest is "
                             "seqfit-best's 123.0 KiB")
    d = adv.decide(rows, AXIS, 25, max_heap=130_000, max_insns=100)
    assert d["why_none"] == ("no worst case within --max-instructions 100 and --max-heap "
                             "127.0 KiB: the lowest is seqfit-best's 150")
    d = adv.decide([_row("tlsf", 100_000, 226, failures=5)], AXIS, 25, max_heap=200_000)
    assert d["why_none"].startswith("every allocator within --max-heap fails: tlsf fails 5")


def test_decide_leaves_out_what_fails_on_the_target():
    rows = [_row("tlsf", 100_000, 226, failures=977), _row("buddy", 150_000, 300),
            _row("bump", 4_000_000, 100, failures=3)]
    d = adv.decide(rows, AXIS, 25)
    assert d["recommendation"] == "buddy"
    assert d["dropped"] == ["tlsf fails 977 allocations on Cortex-M3's 3,584.0 KiB arena "
                            "(it needs 97.7 KiB on the host)",
                            "bump needs more heap than Cortex-M3's 3,584.0 KiB arena: no count"]
    assert d["board_limits"] == []


def test_a_board_too_small_for_the_heap_does_not_decide():
    """No allocator's heap fits the targets' arenas: their counts describe failing calls, so
    the host's p99 decides and the failures leave nobody out."""
    rows = [_row("tlsf", 4_000_000, 226, failures=900), _row("buddy", 4_100_000, 300, failures=5)]
    for k, r in enumerate(rows):
        r["host"].update(p99_ns=50.0 + k)
        r["targets"]["rv32"] = {"worst": 200, "failures": 800}
    targets = {"cortex-m3": {"title": "Cortex-M3", "arena": 3670016, "runs": {
        ("t", r["allocator"]): r["targets"]["cortex-m3"] for r in rows}},
               "rv32": {"title": "RV32IMAC", "arena": 3670016, "runs": {
        ("t", r["allocator"]): r["targets"]["rv32"] for r in rows}}}
    doc = adv.advise_trace("t", {"records": 10}, rows, targets, 25, None, None)
    assert doc["cost"]["kind"] == "host-p99" and doc["recommendation"] == "tlsf"
    assert doc["dropped"] == []
    assert doc["board_limits"] == [
        f"{t}'s 3,584.0 KiB arena is smaller than the heap of tlsf, buddy: their counts there "
        "describe failing calls and are not used" for t in ("Cortex-M3", "RV32IMAC")]
    # Where the arena is the most the board holds, the line says so, with the board's limit.
    targets["cortex-m3"]["board"] = {"max_arena": 3670016, "region": "16 MiB PSRAM"}
    doc = adv.advise_trace("t", {"records": 10}, rows, targets, 25, None, None)
    assert doc["board_limits"][0].startswith(
        "Cortex-M3's 3,584.0 KiB arena (the most its board holds: 16 MiB PSRAM) is smaller than")


# --------------------------------------------------------------------------
# One answer per trace: every renderer says the same

RV32_AXIS = {"title": "RV32IMAC", "arena": 16 << 20}


def _two_targets(rows: list[dict], rv32: dict[str, int]) -> dict:
    """The targets of a document whose rows were counted on Cortex-M3 and RV32 (*rv32*:
    allocator -> its RV32 worst case)."""
    for r in rows:
        r["arena_alignment"] = 64
        r["targets"]["rv32"] = {"worst": rv32[r["allocator"]], "failures": 0}
        r["host"].update(ns_per_op=0.2, p99_ns=30.0, step_ns=0.385)
    return {k: {"title": t["title"], "arena": t["arena"],
                "runs": {("t", r["allocator"]): r["targets"][k] for r in rows}}
            for k, t in (("cortex-m3", AXIS), ("rv32", RV32_AXIS))}


def _document(rows: list[dict], rv32: dict[str, int], configure: str | None = None) -> dict:
    targets = _two_targets(rows, rv32)
    t = adv.advise_trace("t", {"records": 10}, rows, targets, 25, None, None, configure)
    return adv.document([t], targets, {}, {"margin": 25}, {"hk_hardening": 1}, {})


def _peer_wins(configure=None) -> dict:
    """o1heap (a peer) has the lowest bounded worst case within 10 % of the smallest heap;
    heapkit's tlsf needs 1,000 bytes more and 136 (Cortex-M3) and 100 (RV32) instructions
    more; seqfit-best's heap is smaller but its worst case is unbounded."""
    rows = [_row("o1heap", 100_000, 90, family="peer"), _row("tlsf", 101_000, 226),
            _row("seqfit-best", 99_000, 400)]
    return _document(rows, {"o1heap": 80, "tlsf": 180, "seqfit-best": 350}, configure)


def _heapkit_wins() -> dict:
    """Conte's TLSF has the lowest worst case but needs 20 % more heap than heapkit's tlsf."""
    rows = [_row("tlsf-conte", 120_000, 100, family="peer"), _row("tlsf", 100_000, 200),
            _row("buddy", 104_000, 250)]
    return _document(rows, {"tlsf-conte": 90, "tlsf": 170, "buddy": 240})


def _answers(doc: dict) -> dict[str, set[str]]:
    """The allocator each renderer names as the answer (text, JSON, report table) and the
    ones the configuration is for (the printed C and FreeRTOS files)."""
    from heapkit import render, report
    text = "\n".join(adv.text(doc, configuration=True))
    lines = [ln for ln in text.splitlines() if ln.startswith("recommendation: ")]
    out = {"text": {re.match(r"recommendation: ([\w-]+)", ln).group(1) for ln in lines},
           "text lines": {str(len(lines))},
           "json": {t["recommendation"] for t in json.loads(json.dumps(doc))["traces"]}}
    html = report.section_advice({"advice": [doc]}, render.Figures())
    overview = html[:html.index("</table>")]
    out["report"] = {re.sub(r" \(peer\)$", "", m) for m in
                     re.findall(r"<tr><td>t</td><td>([^<]+)</td>", overview)}
    out["report rows"] = {str(overview.count("<tr><td>t</td>"))}
    out["configured"] = set(re.findall(r"^-- t: (?:C|FreeRTOS) \(([\w-]+)\)", text, re.M))
    out["snippets"] = set()
    for t in doc["traces"]:
        cfg = t.get("config") or {}
        for snippet in (cfg.get("c"), (cfg.get("freertos") or {}).get("config")):
            if snippet:
                out["snippets"] |= set(re.findall(r"heapkit advise, trace t: ([\w-]+),", snippet))
    out["report configured"] = set(re.findall(r'<td class="n">[^<]*</td><td>([\w-]+|none: a peer)'
                                              r'</td><td class="wrap', overview))
    return out


def test_heapkit_wins_every_renderer_agrees():
    doc = _heapkit_wins()
    t = doc["traces"][0]
    assert t["recommendation"] == "tlsf" and t["ranking"] == ["tlsf", "buddy", "tlsf-conte"]
    got = _answers(doc)
    assert got == {"text": {"tlsf"}, "text lines": {"1"}, "json": {"tlsf"}, "report": {"tlsf"},
                   "report rows": {"1"}, "configured": {"tlsf"}, "snippets": {"tlsf"},
                   "report configured": {"tlsf"}}
    assert "heapkit_best" not in t and "configured: tlsf" in adv.text(doc)


def test_a_peer_wins_and_is_the_one_answer():
    doc = _peer_wins()
    t = doc["traces"][0]
    assert t["recommendation"] == "o1heap" and t["family"] == "peer"
    assert t["ranking"] == ["o1heap", "tlsf", "seqfit-best"] and t["heapkit_best"] == "tlsf"
    assert t["heapkit_gap"] == {"allocator": "tlsf", "min_heap": 1000, "heap": 1024,
                                "worst": {"Cortex-M3": 136, "RV32IMAC": 100}}
    assert "config" not in t          # a peer is not configured unless asked
    assert _answers(doc) == {"text": {"o1heap"}, "text lines": {"1"}, "json": {"o1heap"},
                             "report": {"o1heap"}, "report rows": {"1"}, "configured": set(),
                             "snippets": set(), "report configured": {"none: a peer"}}
    text = "\n".join(adv.text(doc))
    assert text.startswith("rule: " + adv.RULE)
    assert "recommendation: o1heap (a peer, not heapkit's): heap ≥ 97.7 KiB" in text
    gap = ("heapkit's best by the same rule is tlsf: smallest heap +1,000 bytes (+1.0 %), worst "
           "case +136 instructions on Cortex-M3, +100 instructions on RV32IMAC")
    assert gap in text.splitlines()
    assert "not configured: o1heap is a peer" in text
    assert "--configure heapkit configures tlsf" in text
    from heapkit import render, report
    assert render.esc(gap) in report.section_advice({"advice": [doc]}, render.Figures())


def test_a_peer_wins_and_heapkit_is_configured_when_asked():
    doc = _peer_wins(configure="heapkit")
    t = doc["traces"][0]
    assert t["recommendation"] == "o1heap" and t["config"]["allocator"] == "tlsf"
    assert "hk_tlsf_init" in t["config"]["c"]
    assert t["config"]["freertos"]["heap_file"] == "ports/freertos/heap_tlsf.c"
    got = _answers(doc)
    # still one answer; the configuration is heapkit's best and says so
    assert got["text"] == got["json"] == got["report"] == {"o1heap"} and got["text lines"] == {"1"}
    assert got["configured"] == got["snippets"] == got["report configured"] == {"tlsf"}
    assert ("configured (--configure heapkit): tlsf, heapkit's best, not the "
            "recommendation") in adv.text(doc)


def test_a_peer_wins_with_no_heapkit_candidate():
    rows = [_row("o1heap", 100_000, 90, family="peer"), _row("tlsf", 101_000, 226, failures=3)]
    doc = _document(rows, {"o1heap": 80, "tlsf": 180}, configure="heapkit")
    t = doc["traces"][0]
    assert t["recommendation"] == "o1heap" and t["heapkit_best"] is None and "config" not in t
    text = adv.text(doc)
    assert text.count("recommendation: o1heap (a peer, not heapkit's): heap ≥ 97.7 KiB (+25 % "
                      "margin: 123.0 KiB), worst case 90 instructions; the smallest heap and the "
                      "lowest worst case of the 1 candidates") == 1
    assert "no heapkit allocator is a candidate by the same rule" in "\n".join(text)
    assert ("not configured: o1heap is a peer (give it a 125,952-byte heap through its own "
            "API)") in text


def test_the_noisy_host_p99_does_not_rank():
    """Without instruction counts the smaller heap decides between bounded allocators, not a
    host p99 that another run could reverse."""
    host = {"kind": "host-p99", "target": None, "title": "host", "unit": "ns (host p99, noisy)",
            "short": "ns", "label": "host p99 ns per call (noisy)"}
    rows = [_row("tlsf-conte", 104_000, None, family="peer"), _row("tlsf", 100_000, None),
            _row("seqfit-best", 99_000, None)]
    for r, p99 in zip(rows, (200.0, 300.0, 150.0)):
        r["host"]["p99_ns"] = p99
        r["targets"] = {}
    d = adv.decide(rows, host, 25)
    assert d["ranking"] == ["tlsf", "tlsf-conte", "seqfit-best"]
    assert d["reason"].startswith("tlsf: heap ≥ 97.7 KiB (+25 % margin: 123.0 KiB), worst case "
                                  "300 ns (host p99, noisy); seqfit-best needs 1 % less heap")


def test_the_rule_breaks_ties_by_heap_then_name():
    rows = [_row("buddy", 100_000, 200), _row("tlsf", 100_000, 200), _row("lfpool", 99_000, 200)]
    d = adv.decide(rows, AXIS, 25)
    assert d["ranking"] == ["lfpool", "buddy", "tlsf"]


def test_a_target_failure_off_the_cost_axis_leaves_the_allocator_out():
    rows = [_row("tlsf", 100_000, 200), _row("buddy", 105_000, 300)]
    rows[0]["targets"]["rv32"] = {"worst": 150, "failures": 42}
    d = adv.decide(rows, AXIS, 25, tinfo={"rv32": RV32_AXIS})
    assert d["recommendation"] == "buddy"
    assert d["dropped"] == ["tlsf fails 42 allocations on RV32IMAC's 16.0 MiB arena (it needs "
                            "97.7 KiB on the host)"]


def test_misuse_matrix_output_is_parsed():
    text = ("[ RUN      ] tlsf: double free\n[       OK ] tlsf: double free\n"
            "[tlsf] stale: skipped: a stale tag is a sound tag\n[  SKIPPED ] tlsf: stale\n")
    assert adv.parse_misuse(text) == {"tlsf": {"double free": ("OK", None),
                                               "stale": ("SKIPPED", "a stale tag is a sound tag")}}
    level, dmg = adv.parse_corruption(
        "corruption[buddy] HK_HARDENING=1: 27 run, 21 detected | smoke ok | overflow-used 1:- 2:- "
        "| overflow-free 1:C 2:CD | owner-header skipped | freed-poison -")
    assert level == 1
    assert dmg == {"buddy": {"overflow-used": [0, 2], "overflow-free": [2, 2],
                             "freed-poison": [0, 1]}}


def test_detection_comes_from_the_matrices():
    det = adv.measure_detection(["tlsf", "lfpool", "o1heap"])
    if "error" in det:
        pytest.skip(det["error"])
    assert det["level"] in (0, 1, 2, 3) and "o1heap" not in det["entries"]
    tlsf = det["entries"]["tlsf"]
    if det["level"] >= 1:
        assert "double free" in tlsf["misuse"]["detected"]
        assert tlsf["damage"]["overflow-used"][0] > 0
    assert adv.detection_text(None, det["level"]).startswith("not tested")


# --------------------------------------------------------------------------
# The configuration compiled and run

def ops_header(trace: Trace, n: int) -> str:
    rec = trace.records[:n]
    lines = ["#include <stddef.h>",
             "typedef struct { char op; unsigned id, size, aux; } adv_op_t;",
             f"#define ADV_N_OPS {len(rec)}u", f"#define ADV_N_IDS {int(rec['id'].max()) + 1}u",
             f"#define ADV_NULL {NULL_ID}u", "static const adv_op_t adv_ops[] = {"]
    for op, ident, size, aux in zip(rec["op"].tolist(), rec["id"].tolist(), rec["size"].tolist(),
                                    rec["aux"].tolist()):
        lines.append(f"{{'{chr(op)}',{ident}u,{size}u,{aux}u}},")
    lines.append("};")
    return "\n".join(lines) + "\n"


def _cc(args: list[str], cwd: Path) -> None:
    proc = subprocess.run(["gcc", *args], cwd=cwd, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-3000:]


def _library() -> Path:
    return native.build("heapkit")


def _advice(trace_path: Path, alloc: str) -> tuple[dict, dict]:
    doc = _advise(trace_path, allocs=alloc)
    t = doc["traces"][0]
    assert t["recommendation"] == alloc, t.get("why_none")
    return doc, t["config"]


@pytest.mark.parametrize("alloc", ["tlsf", "buddy-lazy", "seqfit-best", "dmm-lea"])
def test_c_snippet_builds_and_replays_the_first_records(alloc, kth_trace, tmp_path):
    if shutil.which("gcc") is None:
        pytest.skip("no gcc")
    doc, cfg = _advice(kth_trace, alloc)
    (tmp_path / "app_heap.c").write_text(cfg["c"])
    (tmp_path / "ops.h").write_text(ops_header(Trace.load(kth_trace), PREFIX))
    _cc(["-O1", "-Wall", "-Wextra", "-Werror", f"-DHK_ALIGN={doc['library']['hk_align']}",
         "-I", str(native.SOURCE_ROOT / "include"), "-I", str(tmp_path), "app_heap.c",
         str(HERE / "replay_prefix.c"), str(_library()), "-o", "replay"], tmp_path)
    proc = subprocess.run([str(tmp_path / "replay")], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.strip() == f"replayed {PREFIX} records, 0 failed allocations"


@pytest.fixture(scope="module")
def freertos_kernel(tmp_path_factory) -> tuple[Path, list[Path]]:
    """The kernel's objects for the POSIX port (compiled once; FreeRTOSConfig.h from
    lab/tests/advise with a placeholder heap configuration: the kernel does not read it)."""
    from heapkit import target
    if shutil.which("gcc") is None:
        pytest.skip("no gcc")
    kernel = target.peer_sources().get("freertos")
    if kernel is None:
        pytest.skip("FreeRTOS-Kernel sources not fetched (tools/fetch_peers.sh)")
    out = tmp_path_factory.mktemp("kernel")
    (out / "advice_config.h").write_text("#define configTOTAL_HEAP_SIZE ((size_t)4096u)\n")
    posix = kernel / "portable" / "ThirdParty" / "GCC" / "Posix"
    srcs = [kernel / f for f in ("tasks.c", "list.c", "queue.c", "timers.c", "event_groups.c",
                                 "stream_buffer.c")] + [posix / "port.c",
                                                        posix / "utils" / "wait_for_event.c"]
    _cc(["-c", "-O1", "-w", *_fr_includes(kernel, out), *map(str, srcs)], out)
    return kernel, sorted(out.glob("*.o"))


def _fr_includes(kernel: Path, config_dir: Path) -> list[str]:
    posix = kernel / "portable" / "ThirdParty" / "GCC" / "Posix"
    dirs = [config_dir, HERE, kernel / "include", posix, posix / "utils",
            native.SOURCE_ROOT / "ports" / "freertos", native.SOURCE_ROOT / "include"]
    return [f"-I{d}" for d in dirs]


@pytest.mark.parametrize("alloc,heap_file", [("tlsf", "ports/freertos/heap_tlsf.c"),
                                             ("buddy", "ports/freertos/heap_buddy.c"),
                                             ("seqfit-best", "heap_heapkit.c")])
def test_freertos_snippet_builds_with_the_kernel_and_replays(alloc, heap_file, kth_trace,
                                                             freertos_kernel, tmp_path):
    kernel, objects = freertos_kernel
    doc, cfg = _advice(kth_trace, alloc)
    fr = cfg["freertos"]
    assert fr["heap_file"] == heap_file
    (tmp_path / "advice_config.h").write_text(fr["config"])
    (tmp_path / "ops.h").write_text(ops_header(Trace.load(kth_trace), PREFIX))
    (tmp_path / "ucheap.c").write_text(fr["app"])
    heap_src = native.SOURCE_ROOT / heap_file
    if fr["source"]:
        heap_src = tmp_path / heap_file
        heap_src.write_text(fr["source"])
    _cc(["-O1", "-Wall", "-Wextra", "-Werror", "-DADV_FREERTOS",
         f"-DHK_ALIGN={doc['library']['hk_align']}", *_fr_includes(kernel, tmp_path),
         str(heap_src), "ucheap.c", str(HERE / "replay_prefix.c"), *map(str, objects),
         str(_library()), "-pthread", "-o", "replay"], tmp_path)
    proc = subprocess.run([str(tmp_path / "replay")], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert f"replayed {PREFIX} records, 0 failed allocations" in proc.stdout


# --------------------------------------------------------------------------
# The command

def test_cli_advise_prints_the_answer_and_writes_configuration(kth_trace, tmp_path, capsys):
    out = tmp_path / "out"
    code = cli.main(["advise", str(kth_trace), "--target", "none", "--alloc",
                     "tlsf,seqfit-best,buddy", "--margin", "10", "--json",
                     str(tmp_path / "a.json"), "--out", str(out)])
    text = capsys.readouterr().out
    assert code == 0
    assert text.count("\nrecommendation: ") == 1 and "Pareto front" in text
    assert text.startswith("rule: ")
    doc = json.loads((tmp_path / "a.json").read_text())
    assert doc["kind"] == "heapkit-advise" and doc["settings"]["margin"] == 10
    t = doc["traces"][0]
    assert (out / "kth" / "app_heap.c").read_text() == t["config"]["c"]
    assert (out / "kth" / "FreeRTOSConfig_heap.h").exists()
    assert json.loads((out / "advice.json").read_text()) == doc


@pytest.mark.parametrize("argv,message", [
    (["--alloc", "system"], "does not live in an arena"),
    (["--alloc", "nosuch"], "unknown allocator nosuch"),
    (["--target", "m68k"], "--target"),
    (["--max-heap", "12Q"], "byte size"),
    (["--margin", "-5"], "--margin"),
    (["--margin", "nan"], "--margin"),
    (["--target", "none", "--max-instructions", "200"], "needs instruction counts"),
    (["--configure", "peer"], "--configure"),
])
def test_cli_advise_bad_arguments_are_one_line(argv, message, kth_trace, capsys):
    code = cli.main(["advise", str(kth_trace), *argv])
    err = capsys.readouterr().err
    assert code == 2 and err.startswith("heapkit: error: ") and err.count("\n") == 1
    assert message in err


def test_an_allocator_rebuilt_only_for_a_seed_is_never_advised():
    """sdma is the fctma-pools seed's SDMA, rebuilt for that comparison: no firmware can take
    it, so advise neither measures nor recommends it, while the engine still runs it."""
    from heapkit import engine
    assert "sdma" in {a["name"] for a in engine.allocator_table()}
    names = {a["name"] for a in adv.arena_allocators()}
    assert "sdma" not in names and {"tlsf", "o1heap"} <= names
