# SPDX-License-Identifier: MIT
"""The heapkit CLI: commands, output, and one-line errors with exit status 2."""

import importlib.machinery
import importlib.util
import json
import subprocess
import sys
import types
from pathlib import Path

import pytest

from heapkit import cli
from heapkit.trace import Trace
from heapkit.workloads import WORKLOADS

DATA = Path(__file__).parent / "data"
LAB = Path(__file__).resolve().parents[1]
HAS_ENGINE = (LAB / "heapkit" / "engine.py").exists()


def run(capsys, *argv):
    code = cli.main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def assert_one_line_error(code, err, expected=None):
    assert code == 2
    assert "Traceback" not in err
    lines = err.strip("\n").split("\n")
    assert len(lines) == 1, err
    assert lines[0].startswith("heapkit: error: ")
    if expected is not None:
        assert lines[0] == f"heapkit: error: {expected}"


# -- help ---------------------------------------------------------------------

@pytest.mark.parametrize("sub", [[], ["import"], ["gen"], ["info"], ["workloads"], ["bench"],
                                 ["size"], ["trace"], ["report"]])
def test_help_everywhere(capsys, sub):
    code, out, _ = run(capsys, *sub, "--help")
    assert code == 0
    assert out.startswith("usage: heapkit")


def test_bench_help_lists_options(capsys):
    _, out, _ = run(capsys, "bench", "--help")
    for opt in ("--alloc", "--trace", "--workload", "--arena", "--json"):
        assert opt in out


# -- gen / info / import / workloads ------------------------------------------

def test_gen_is_deterministic(tmp_path, capsys):
    for name in ("a", "b"):
        code, out, _ = run(capsys, "gen", "cse3320", "-o", str(tmp_path / f"{name}.hkt.gz"),
                           "--seed", "5", "-p", "rounds=3")
        assert code == 0 and "192 events" in out
    assert (tmp_path / "a.hkt.gz").read_bytes() == (tmp_path / "b.hkt.gz").read_bytes()
    code, _, _ = run(capsys, "gen", "cse3320", "-o", str(tmp_path / "c.hkb"), "--seed", "5",
                     "--param", "rounds=3", "-q")
    assert code == 0
    assert Trace.load(tmp_path / "c.hkb") == Trace.load(tmp_path / "a.hkt.gz")


def test_info(capsys):
    code, out, _ = run(capsys, "info", str(DATA / "sample.hkt"))
    assert code == 0
    assert "peak live         4805 bytes" in out
    assert "threads           4" in out
    code, out, _ = run(capsys, "info", "--json", str(DATA / "sample.hkt"))
    d = json.loads(out)
    assert d["by_op"] == {"malloc": 2, "calloc": 1, "aligned": 1, "realloc": 2, "free": 2}
    assert d["tids"] == [0, 2, 7, 65535]


def test_info_on_external_format(capsys):
    code, out, _ = run(capsys, "info", str(DATA / "wee_sample.trace"))
    assert code == 0
    assert "(imported from wee)" in out
    assert "Free of an index already freed 1" in out


def test_import(tmp_path, capsys):
    out_path = tmp_path / "mr.hkt"
    code, out, _ = run(capsys, "import", str(DATA / "memory_replay_sample.txt"), "-o",
                       str(out_path))
    assert code == 0
    assert "format    memory_replay" in out
    assert "free(NULL) 1" in out
    assert out_path.read_text().splitlines()[1:3] == ["m 0 1024 t100", "c 1 32 8 t100"]
    code, _, _ = run(capsys, "import", str(DATA / "mtrace_sample.txt"), "--format", "mtrace",
                     "-o", str(tmp_path / "mt.hkb"), "-q")
    assert code == 0 and Trace.load(tmp_path / "mt.hkb").n_ids == 4


def test_workloads_listing(capsys):
    code, out, _ = run(capsys, "workloads")
    assert code == 0
    for name in WORKLOADS:
        assert any(line.startswith(name + " ") for line in out.splitlines())
    assert "max_time_producer=110" in out
    code, out, _ = run(capsys, "workloads", "robson")
    assert code == 0 and "Robson" in out and "M=262144" in out


# -- errors: one line, exit 2 ---------------------------------------------------

def test_malformed_trace_message(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "traces").mkdir()
    (tmp_path / "traces" / "x.hkt").write_text("heapkit-trace 1\n" + "m 0 8\n" * 1 +
                                                "".join(f"m {i} 8\n" for i in range(1, 10)) +
                                                "f 7\nf 7\n")
    code, _, err = run(capsys, "info", "traces/x.hkt")
    assert_one_line_error(code, err, "traces/x.hkt:13: free of id 7 which is not live")


@pytest.mark.parametrize("argv,expected", [
    (["info", "nope.hkt"], "nope.hkt: no such file"),
    (["gen", "itc", "-o", "x.txt"], "x.txt: output name must end in .hkt, .hkt.gz or .hkb"),
    (["gen", "itc", "-o", "x.hkt", "-p", "bogus=1"], None),
    (["gen", "itc", "-o", "x.hkt", "-p", "burst=many"],
     "itc: parameter burst expects an integer, got 'many'"),
    (["gen", "itc", "-o", "x.hkt", "-p", "burst"], "--param expects KEY=VALUE, got 'burst'"),
    (["gen", "nope", "-o", "x.hkt"], None),
    (["gen", "itc"], None),
    (["import", "missing.trace", "-o", "x.hkt"], "missing.trace: no such file"),
    (["frobnicate"], None),
    ([], None),
    (["bench", "--arena", "-3", "--workload", "itc"], None),
    (["trace", "-o", "x.hkb"], "trace: give the program to run after -- "
                               "(see 'heapkit trace --help')"),
    (["workloads", "nope"], None),
])
def test_error_paths(tmp_path, capsys, monkeypatch, argv, expected):
    monkeypatch.chdir(tmp_path)
    code, _, err = run(capsys, *argv)
    assert_one_line_error(code, err, expected)


def test_malformed_import_names_line(tmp_path, capsys):
    p = tmp_path / "bad.trace"
    p.write_text("Alloc(3),\nAlloc(x),\n")
    code, _, err = run(capsys, "import", str(p), "--format", "wee", "-o",
                       str(tmp_path / "o.hkt"))
    assert_one_line_error(code, err, f"{p}:2: malformed line: expected 'Alloc(<size>),' or "
                                     "'Free(<index>),'")


def test_undetectable_import(tmp_path, capsys):
    p = tmp_path / "x.log"
    p.write_text("nothing to see\n")
    code, _, err = run(capsys, "import", str(p), "-o", str(tmp_path / "o.hkt"))
    assert_one_line_error(code, err)
    assert "cannot tell the format; pass --format" in err


def test_process_exit_status_and_no_traceback(tmp_path):
    bad = tmp_path / "x.hkt"
    bad.write_text("heapkit-trace 1\nf 0\n")
    proc = subprocess.run([sys.executable, "-m", "heapkit.cli", "info", str(bad)],
                          capture_output=True, text=True)
    assert proc.returncode == 2
    assert proc.stderr == f"heapkit: error: {bad}:2: free of id 0 which is not live\n"
    assert proc.stdout == ""


@pytest.mark.parametrize("sub,module", [("trace", "capture"), ("report", "report")])
def test_plugins_missing(tmp_path, capsys, sub, module):
    if importlib.util.find_spec(f"heapkit.{module}") is not None:
        pytest.skip(f"heapkit/{module}.py is installed")
    argv = ["trace", "-o", "x.hkb", "--", "true"] if sub == "trace" else ["report", "r.json"]
    code, _, err = run(capsys, *argv)
    assert_one_line_error(code, err, f"'heapkit {sub}' is not available in this installation "
                                     f"(heapkit/{module}.py is missing)")


def test_plugins_are_called(monkeypatch, capsys, tmp_path):
    seen = {}
    fake = types.ModuleType("heapkit.capture")
    fake.__spec__ = importlib.machinery.ModuleSpec("heapkit.capture", None)
    fake.run = lambda args: seen.setdefault("capture", args) and 0
    monkeypatch.setitem(sys.modules, "heapkit.capture", fake)
    assert cli.main(["trace", "-o", "p.hkb", "--", "ls", "-l"]) == 0
    assert seen["capture"].command == ["ls", "-l"] and seen["capture"].output == "p.hkb"

    def write(data, out, title, **kw):
        seen["write"] = (data, out, title)
        (tmp_path / "out").write_text("page")
        return tmp_path / "out"
    monkeypatch.setattr(cli.report, "load", lambda paths: {"paths": paths, "runs": [{}]})
    monkeypatch.setattr(cli.report, "write_report", write)
    assert cli.main(["report", "a.json", "--results", "b.json", "-o", "out"]) == 0
    data, out, title = seen["write"]
    assert data["paths"] == ["a.json", "b.json"] and out == "out" and title == "heapkit report"


# -- bench and size against a stand-in engine -----------------------------------

def _replay_result(alloc, path):
    # The engine's layout ("heapkit-replay" v1), reduced to what the table reads.
    n = len(Trace.load(path))
    base = {"tlsf": 100, "seqfit-first": 50}[alloc]
    return {
        "format": "heapkit-replay",
        "trace": {"records": n},
        "replay": {
            "completed_records": n,
            "failures": {"total": 1 if alloc == "seqfit-first" else 0},
            "memory": {"peak_footprint": 10 * 1024 + base},
            "fragmentation": {"jw4": 0.125},
            "timing": {"malloc": {"p50": base, "p99": base * 2, "max": base * 10},
                       "free": {"p50": base // 2, "max": base * 5}},
        },
    }


@pytest.fixture
def fake_engine(monkeypatch):
    calls = []
    eng = types.ModuleType("heapkit.engine")
    eng.__spec__ = importlib.machinery.ModuleSpec("heapkit.engine", None)
    eng.list_allocators = lambda: ["tlsf", "seqfit-first"]
    eng.PEERS = ("o1heap", "umm")
    eng.missing_peers = lambda names: "no peers here: " + ", ".join(names)
    eng.machine = lambda: {"system": "TestOS", "cpus": 3}

    eng.arena_allocators = lambda: {"tlsf", "seqfit-first"}

    def replay(trace_path, allocator, arena=None, series=200, heapmap=0, progress=None):
        calls.append(("replay", Path(trace_path).read_bytes()[:8], allocator, arena))
        return _replay_result(allocator, trace_path)

    def size_search(trace_path, allocator, progress=None):
        calls.append(("size", Path(trace_path).read_bytes()[:8], allocator))
        peak = Trace.load(trace_path).stats().peak_live_bytes
        factor = {"tlsf": 1.5, "seqfit-first": 2.0}[allocator]
        return {"search": {"min_arena": int(peak * factor), "peak_live_requested": peak}}

    eng.replay, eng.size_search = replay, size_search
    monkeypatch.setitem(sys.modules, "heapkit.engine", eng)
    return calls


def test_bench_table_and_json(tmp_path, capsys, fake_engine):
    out_json = tmp_path / "b.json"
    code, out, err = run(capsys, "bench", "--trace", str(DATA / "sample.hkt"),
                         str(DATA / "wee_sample.trace"), "--workload", "cse3320",
                         "--arena", "65536", "--json", str(out_json))
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0].split() == ["allocator", "trace", "ops", "failures", "malloc", "p50", "ns",
                                "malloc", "p99", "ns", "malloc", "max", "ns", "free", "p50",
                                "ns", "free", "max", "ns", "frag", "#4", "%", "peak",
                                "footprint"]
    rows = [line.split() for line in lines[2:-1]]
    assert len(rows) == 6                                  # 2 allocators x 3 traces
    assert lines[-1].startswith("engine: ")
    assert rows[0][:2] == ["tlsf", "sample"]
    assert rows[0][2:10] == ["8", "0", "100", "200", "1,000", "50", "500", "12.5"]
    assert rows[1][:4] == ["seqfit-first", "sample", "8", "1"]
    assert [r[1] for r in rows] == ["sample", "sample", "wee_sample", "wee_sample",
                                    "cse3320", "cse3320"]
    assert " ".join(rows[0][10:]) == "10.1 KiB"
    # every trace reached the engine as .hkb, with the arena passed through
    assert all(c[1] == b"HKTRACE\0" and c[3] == 65536 for c in fake_engine)
    saved = json.loads(out_json.read_text())
    assert saved["kind"] == "heapkit-bench" and len(saved["runs"]) == 6
    assert saved["machine"] == {"system": "TestOS", "cpus": 3}
    assert saved["runs"][0]["result"]["replay"]["fragmentation"]["jw4"] == 0.125
    # columns line up: every row as wide as the header
    assert len({len(line.rstrip()) for line in lines[:2]}) == 1


def test_bench_selects_allocators(capsys, fake_engine):
    code, out, _ = run(capsys, "bench", "--alloc", "tlsf", "--workload", "cse3320")
    assert code == 0
    assert [line.split()[0] for line in out.splitlines()[2:]] == ["tlsf", "engine:"]
    code, _, err = run(capsys, "bench", "--alloc", "tlsf,nope", "--workload", "cse3320")
    assert_one_line_error(code, err, "unknown allocator(s) nope (available: tlsf, seqfit-first)")
    # a peer the engine was built without: the engine says what brings it
    code, _, err = run(capsys, "bench", "--alloc", "tlsf,umm,o1heap", "--workload", "cse3320")
    assert_one_line_error(code, err, "no peers here: umm, o1heap")
    code, _, err = run(capsys, "bench")
    assert_one_line_error(code, err, "give at least one --trace FILE or --workload NAME")


def test_bench_engine_failure_is_one_line(capsys, fake_engine, monkeypatch):
    def boom(*a, **k):
        raise RuntimeError("arena too small\nsecond line")
    monkeypatch.setattr(sys.modules["heapkit.engine"], "replay", boom)
    code, _, err = run(capsys, "bench", "--alloc", "tlsf", "--trace", str(DATA / "sample.hkt"))
    assert code == 2 and "Traceback" not in err
    assert err.startswith("heapkit: error: replay of sample with tlsf failed: arena too small")


def test_bench_rejects_malformed_trace(tmp_path, capsys, fake_engine):
    p = tmp_path / "bad.hkt"
    p.write_text("heapkit-trace 1\nm 0 1\nf 1\n")
    code, _, err = run(capsys, "bench", "--trace", str(p))
    assert_one_line_error(code, err, f"{p}:3: free of id 1 which is not live")
    assert fake_engine == []


def test_size_table_and_geomean(tmp_path, capsys, fake_engine):
    out_json = tmp_path / "s.json"
    code, out, _ = run(capsys, "size", "--trace", str(DATA / "sample.hkt"), "--workload",
                       "cse3320", "--json", str(out_json))
    assert code == 0
    lines = out.splitlines()
    assert lines[0].split() == ["allocator", "trace", "min", "arena", "peak", "live", "ratio"]
    rows = [line.split() for line in lines[2:6]]
    assert rows[0] == ["tlsf", "sample", str(int(4805 * 1.5)), "4805", "1.500"]
    assert rows[3] == ["seqfit-first", "cse3320", str(int(9040 * 2.0)), "9040", "2.000"]
    gm = {line.split()[0]: line.split()[1:] for line in lines[9:]}
    assert gm == {"tlsf": ["1.500", "2/2"], "seqfit-first": ["2.000", "2/2"]}
    saved = json.loads(out_json.read_text())
    assert saved["geomean_ratio"] == pytest.approx({"tlsf": 1.5, "seqfit-first": 2.0}, rel=1e-3)


def test_engine_missing(capsys, monkeypatch):
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "heapkit.engine" else
                        importlib.machinery.ModuleSpec(name, None))
    monkeypatch.delitem(sys.modules, "heapkit.engine", raising=False)
    code, _, err = run(capsys, "bench", "--workload", "itc")
    assert_one_line_error(code, err)
    assert "replay engine is not available" in err


# -- the real engine, when it is there -------------------------------------------

@pytest.mark.skipif(not HAS_ENGINE, reason="heapkit/engine.py (the replay engine) is absent")
def test_real_engine_bench_and_size(tmp_path, capsys):
    t = tmp_path / "small.hkb"
    assert cli.main(["gen", "cse3320", "-o", str(t), "-p", "rounds=5", "-q"]) == 0
    capsys.readouterr()
    code, out, err = run(capsys, "bench", "--alloc", "tlsf", "--trace", str(t), "--json",
                         str(tmp_path / "b.json"))
    assert code == 0, err
    row = out.splitlines()[2].split()
    assert row[:4] == ["tlsf", "small", "320", "0"]
    code, out, err = run(capsys, "size", "--alloc", "tlsf", "--trace", str(t))
    assert code == 0, err
    row = out.splitlines()[2].split()
    assert row[:2] == ["tlsf", "small"] and row[3] == "9040"
    assert float(row[4]) >= 1.0


def test_engine_throughput_line_sums_replay_cpu_time():
    from heapkit.cli import _engine_throughput
    runs = [{"result": {"replay": {"completed_records": 3_000_000,
                                   "engine_time": {"replay_cpu_s": 1.0}}}},
            {"result": {"replay": {"completed_records": 1_000_000,
                                   "engine_time": {"replay_cpu_s": 1.0}}}},
            {"result": "failed"}]
    line = _engine_throughput(runs)
    assert line.startswith("engine: 4,000,000 records replayed in 2.00 s CPU, 2.00 M records/s")
    assert _engine_throughput([]) == "engine: no replay time recorded"


def test_out_of_range_inputs_are_one_line_errors(tmp_path, capsys):
    big = tmp_path / "big.hkt"
    big.write_text("heapkit-trace 1\nm 0 5\nm  99999999999999999999 5\n")
    code, _, err = run(capsys, "info", str(big))
    assert_one_line_error(code, err, f"{big}:3: malformed line: number too large")
    code, _, err = run(capsys, "gen", "ramp", "-o", str(tmp_path / "x.hkb"),
                       "-p", "max_size=1000000000000", "-p", "min_size=100000000000")
    assert_one_line_error(code, err, "ramp: parameter max_size is at most 4,294,967,295, "
                                     "not 1,000,000,000,000")
    code, _, err = run(capsys, "gen", "ramp", "-o", str(tmp_path / "x.hkb"),
                       "-p", "max_size=4294967295", "-p", "min_size=4294967290")
    assert_one_line_error(code, err, "ramp: a parameter gives sizes or counts beyond 32 bits")
    bad = tmp_path / "r.json"
    bad.write_text('{"kind": "heapkit-bench", "runs": [{}]}')
    code, _, err = run(capsys, "report", "--results", str(bad), "-o", str(tmp_path / "r.html"))
    assert_one_line_error(code, err, f"{bad}: results: a runs entry lacks its allocator, trace or result object")
