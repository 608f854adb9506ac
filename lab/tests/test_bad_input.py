# SPDX-License-Identifier: MIT
"""Bad input gets a one-line error and costs little (issue 12, item 4).

Every case runs in a fresh process, under a small Python wrapper that reports the exit
status, stdout, stderr and the peak resident memory of everything the command started
(getrusage(RUSAGE_CHILDREN) after the wait: the largest of the CLI and the engine or
tools it ran). Each must stay below PEAK_LIMIT_MB: before these fixes the same inputs
took from 1 GB (a 64-byte .hkb) to 16.7 GB (a three-line .hkt).
"""

from __future__ import annotations

import gzip
import json
import os
import signal
import subprocess
import sys
import time
import zlib
from pathlib import Path

import pytest

from heapkit import engine, native
from helpers import m, write_hkb

PEAK_LIMIT_MB = 200

# Runs argv and prints {"rc", "out", "err", "peak_kb"} as JSON.
_WRAPPER = """
import json, resource, subprocess, sys
p = subprocess.run(sys.argv[1:], capture_output=True, text=True)
print(json.dumps({"rc": p.returncode, "out": p.stdout, "err": p.stderr,
                  "peak_kb": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss}))
"""


def measured(*argv, env=None) -> dict:
    proc = subprocess.run([sys.executable, "-c", _WRAPPER, *map(str, argv)],
                          capture_output=True, text=True, env=env, timeout=600)
    assert proc.returncode == 0, proc.stderr
    res = json.loads(proc.stdout)
    assert res["peak_kb"] < PEAK_LIMIT_MB * 1024, \
        f"{argv}: peak {res['peak_kb'] / 1024:.0f} MB ({res['err'][-300:]})"
    return res


def heapkit(*args, env=None) -> dict:
    return measured(sys.executable, "-m", "heapkit", *args, env=env)


def one_line_error(res: dict, *parts: str, prefix: str = "heapkit: error: ") -> str:
    """The single stderr line of a status-2 failure, which holds every one of *parts*."""
    assert res["rc"] == 2, res
    lines = res["err"].strip("\n").split("\n")
    assert len(lines) == 1 and "Traceback" not in res["err"], res["err"]
    assert lines[0].startswith(prefix), lines[0]
    for p in parts:
        assert p in lines[0], (p, lines[0])
    return lines[0]


@pytest.fixture(scope="module")
def replay_exe() -> Path:
    return engine.find_binary()


# -- the engine's memory limit ---------------------------------------------------

def test_one_huge_record_is_refused_not_replayed(tmp_path, replay_exe):
    """A valid 64-byte .hkb asking for 256 MiB: a 1 GiB default arena, at the limit."""
    big = write_hkb(tmp_path / "big.hkb", [m(0, 256 << 20)])
    assert big.stat().st_size == 48
    res = measured(replay_exe, "--trace", big, "--alloc", "tlsf", "--json", "-")
    one_line_error(res, f"{big}: record 0 brings the live bytes to 268435456",
                   "default arena (4x) would take 1073741824 bytes", "memory limit",
                   "--arena", prefix="hk-replay: ")
    res = heapkit("bench", "--trace", big)
    one_line_error(res, "replay of big with", f"{big}: record 0 brings the live bytes")
    # asked for, it runs (in a small arena the record simply fails to allocate)
    res = measured(replay_exe, "--trace", big, "--alloc", "tlsf", "--arena", "64K", "--json", "-")
    assert res["rc"] == 0 and json.loads(res["out"])["replay"]["failures"]["total"] == 1


def test_a_4_gib_text_record_is_refused(tmp_path):
    huge = tmp_path / "huge.hkt"
    huge.write_text("heapkit-trace 1\nm 0 4294967295\nf 0\n")
    res = heapkit("bench", "--alloc", "tlsf", "--trace", huge)
    one_line_error(res, "replay of huge with tlsf failed", "record 0 brings the live bytes to "
                   "4294967295", "memory limit")
    res = heapkit("bench", "--alloc", "system", "--trace", huge)
    one_line_error(res, "record 0", "memory limit", "HEAPKIT_MEM_LIMIT")


def test_the_limit_is_the_environment_s_when_given(tmp_path, replay_exe):
    t = write_hkb(tmp_path / "t.hkb", [m(0, 100 << 10)])       # default arena 400 KiB
    env = {**os.environ, "HEAPKIT_MEM_LIMIT": "256K"}
    res = measured(replay_exe, "--trace", t, "--alloc", "tlsf", "--json", "-", env=env)
    one_line_error(res, "at or above the memory limit of 262144", prefix="hk-replay: ")
    res = measured(replay_exe, "--trace", t, "--alloc", "tlsf", "--size-search", "--json", "-",
                   env=env)
    assert res["rc"] == 0, res["err"]
    search = json.loads(res["out"])["search"]
    assert search["limit"] <= 256 << 10 and search["min_arena"] > 100 << 10


def test_the_footprint_bookkeeping_shares_the_limit_with_the_arena(tmp_path, replay_exe):
    """The footprint tracks each block of the fresh heap (docs/metrics.md): poolset carves
    hundreds of thousands of slots in a 64 MiB arena, and that bookkeeping and the arena
    together must stay within the memory limit."""
    t = write_hkb(tmp_path / "t.hkb", [m(0, 16)])
    env = {**os.environ, "HEAPKIT_MEM_LIMIT": "66M"}
    res = measured(replay_exe, "--trace", t, "--alloc", "poolset", "--arena", "64M", "--json", "-", env=env)
    one_line_error(res, "poolset's fresh heap in a 67108864-byte arena has more blocks than the footprint",
                   "memory limit of 69206016", "--arena", prefix="hk-replay: ")
    for alloc, arena in (("poolset", "1M"), ("tlsf", "64M")):
        res = measured(replay_exe, "--trace", t, "--alloc", alloc, "--arena", arena, "--json", "-", env=env)
        assert res["rc"] == 0, res["err"]


# -- sums, streams, sizes ---------------------------------------------------------

def test_sums_do_not_overflow(tmp_path):
    t = tmp_path / "calloc.hkt"
    t.write_text("heapkit-trace 1\nc 0 4294967295 4294967295\nc 1 4294967295 4294967295\n")
    res = heapkit("info", "--json", t)
    assert res["rc"] == 0, res["err"]
    st = json.loads(res["out"])
    assert st["total_requested"] == 2 * 4294967295 ** 2 > 2 ** 64
    assert st["peak_live_bytes"] == st["total_requested"]


def test_a_gzip_of_comment_lines_is_read_as_a_stream(tmp_path):
    """256 MiB of comments in 250 KB of gzip: held whole, the text alone would pass the limit."""
    bomb = tmp_path / "bomb.hkt.gz"
    line = b"#" + b"x" * 62 + b"\n"
    co = zlib.compressobj(9, zlib.DEFLATED, 31)
    with open(bomb, "wb") as f:
        f.write(co.compress(b"heapkit-trace 1\n"))
        block = line * (1 << 14)
        for _ in range(256):
            f.write(co.compress(block))
        f.write(co.compress(b"m 0 8\nf 0\n") + co.flush())
    assert bomb.stat().st_size < 1 << 20
    res = heapkit("info", bomb)
    assert res["rc"] == 0, res["err"]
    assert "events            2" in res["out"]


def test_gen_parameters_have_upper_bounds(tmp_path):
    res = heapkit("gen", "itc", "-o", tmp_path / "x.hkb", "-p", "producers=1000000000")
    one_line_error(res, "itc: parameter producers is at most 256, not 1,000,000,000")
    res = heapkit("workloads", "itc")
    assert res["rc"] == 0 and "producers=10 (at most 256)" in res["out"]


def test_byte_sizes_are_one_syntax_everywhere(tmp_path):
    out = tmp_path / "b.json"
    res = heapkit("bench", "--alloc", "tlsf", "--workload", "cse3320", "--arena", "64K",
                  "--json", out)
    assert res["rc"] == 0, res["err"]
    assert json.loads(out.read_text())["runs"][0]["result"]["arena"]["size"] == 65536
    res = heapkit("netapp", "easyport", "--synthetic", "plateau,packets=2000", "--arena", "2M",
                  "--quantum", "8K", "--json", "-")
    assert res["rc"] == 0, res["err"]
    assert json.loads(res["out"])["arena"] == 2 << 20
    res = heapkit("gen", "robson", "-o", tmp_path / "r.hkb", "-p", "M=16K", "-p", "unit=64")
    assert res["rc"] == 0, res["err"]
    for cmd in (("bench", "--alloc", "tlsf", "--workload", "cse3320"), ("netapp", "drr"),
                ("explore", "--workload", "ramp")):
        res = heapkit(*cmd, "--arena", "64Q")
        one_line_error(res, "argument --arena: expected a byte size (N, NK, NM or NG, e.g. 64K), "
                       "got '64Q'")


# -- what files are -------------------------------------------------------------

def test_a_trace_given_as_results_is_named(tmp_path):
    t = write_hkb(tmp_path / "sqlite.hkb", [m(0, 8)])
    gz = tmp_path / "x.hkt.gz"
    gz.write_bytes(gzip.compress(b"heapkit-trace 1\nm 0 8\n"))
    for p in (t, gz):
        res = heapkit("report", p, "-o", tmp_path / "r.html")
        one_line_error(res, f"{p}: a trace, not results: run `heapkit bench --json` first")
    other = tmp_path / "x.bin"
    other.write_bytes(bytes(range(256)))
    one_line_error(heapkit("report", other), f"{other}: not a results file")


def test_empty_and_truncated_files_are_named(tmp_path, replay_exe):
    empty = tmp_path / "empty.hkt"
    empty.write_text("")
    one_line_error(heapkit("info", empty), f"{empty}: empty file")
    one_line_error(heapkit("info", "--format", "wee", empty), f"{empty}: empty file")
    empty_hkb = tmp_path / "empty.hkb"
    empty_hkb.write_bytes(b"")
    one_line_error(measured(replay_exe, "--trace", empty_hkb, "--alloc", "tlsf"),
                   f"{empty_hkb}: empty file", prefix="hk-replay: ")
    cut = tmp_path / "cut.hkt"                     # "f 10" cut to "f 1": id 1 was freed
    cut.write_text("heapkit-trace 1\n" + "".join(f"m {i} 16\n" for i in range(11))
                   + "f 1\nf 1")
    one_line_error(heapkit("info", cut), f"{cut}:14: truncated: the last line has no line end")
    full = write_hkb(tmp_path / "full.hkb", [m(0, 8), m(1, 8)])
    cut_hkb = tmp_path / "cut.hkb"
    cut_hkb.write_bytes(full.read_bytes()[:-5])
    for res, prefix in ((measured(replay_exe, "--trace", cut_hkb, "--alloc", "tlsf"), "hk-replay: "),
                        (heapkit("info", cut_hkb), "heapkit: error: ")):
        one_line_error(res, f"{cut_hkb}: truncated: the header says 2 records but the file holds 1 "
                       "and part of another", prefix=prefix)
    gz = tmp_path / "cut.hkt.gz"
    gz.write_bytes(gzip.compress(b"heapkit-trace 1\n" + b"m 0 8\n" * 5000)[:-40])
    one_line_error(heapkit("info", gz), f"{gz}: truncated: the gzip data ends early")


def test_a_format_that_parses_nothing_is_an_error(tmp_path):
    junk = tmp_path / "junk.txt"
    junk.write_text("hello\nworld\n")
    one_line_error(heapkit("info", "--format", "valgrind", junk),
                   f"{junk}: no valgrind allocation events in its 2 line(s)")


# -- names, interruptions, the malloc replacement ----------------------------------

def test_every_name_taking_option_lists_its_names():
    res = heapkit("netapp", "--list")
    assert res["rc"] == 0 and res["out"].startswith("APP: drr easyport url-switch\n")
    assert "--allocator: " in res["out"] and "--synthetic: thin-spikes" in res["out"]
    res = heapkit("bench", "--alloc", "--list")
    assert res["rc"] == 0 and "tlsf" in res["out"].split("\n") and "system" in res["out"]
    res = heapkit("size", "--alloc", "--list")
    assert res["rc"] == 0 and "tlsf" in res["out"].split("\n") and "system" not in res["out"]
    for args, names in ((("gen", "--list"), "WORKLOAD: itc kth"), (("info", "--list"), "--format: auto"),
                        (("explore", "--list"), "--fits: first next best worst exact"),
                        (("bench", "--list"), "--target: cortex-m3 rv32")):
        res = heapkit(*args)
        assert res["rc"] == 0 and names in res["out"], (args, res)
    one_line_error(heapkit("bench", "--trace", "--list"), "--list: --trace takes no names")


def test_size_skips_allocators_outside_an_arena_and_says_so():
    res = heapkit("size", "--workload", "cse3320", "--alloc", "tlsf,system")
    assert res["rc"] == 0, res["err"]
    assert res["err"].strip() == ("heapkit size: skipping system: no arena to size (the process "
                                  "heap serves them)")
    rows = [line.split()[0] for line in res["out"].splitlines()[2:] if line.strip()]
    assert rows[0] == "tlsf" and "system" not in rows


def _interrupted(argv: list, *, after: float = 0.0, marker: str | None = None
                 ) -> subprocess.CompletedProcess:
    """*argv* started as from a shell (its own process group, SIGINT at its default) and
    sent Ctrl-C (SIGINT to the group) *after* seconds, or once a stderr line holds *marker*."""
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    seen = ""
    if marker is not None:
        for line in proc.stderr:
            seen += line
            if marker in line:
                break
    time.sleep(after)
    os.killpg(proc.pid, signal.SIGINT)
    out, err = proc.communicate(timeout=120)
    return subprocess.CompletedProcess(argv, proc.returncode, out, seen + err)


def test_ctrl_c_while_the_cli_loads_is_one_line_and_130():
    """-X importtime shows when numpy, which the CLI's modules import, is loading."""
    res = _interrupted([sys.executable, "-X", "importtime", "-m", "heapkit", "info", "x"],
                       marker=" numpy.")
    assert res.returncode == 130, res.stderr[-2000:]
    assert "Traceback" not in res.stderr
    assert res.stderr.strip().split("\n")[-1] == "heapkit: interrupted"


def test_ctrl_c_in_explore_is_one_line_and_130(tmp_path):
    """In the evaluation: worker threads, evaluator processes, the SQLite store."""
    from heapkit import explore
    explore.binary()                       # built before the clock starts
    res = _interrupted([sys.executable, "-m", "heapkit", "explore", "--workload", "ramp",
                        "plateau", "-o", str(tmp_path / "ex"), "--no-firmware", "--jobs", "2"],
                       marker="configurations x 2 trace(s)", after=2.0)
    assert res.returncode == 130, res.stderr
    assert "Traceback" not in res.stderr, res.stderr
    assert res.stderr.strip().split("\n")[-1] == "heapkit: interrupted"


def test_stats_line_survives_a_closed_stderr():
    """ls closes stderr before exit (coreutils' close_stdout); the line still comes."""
    lib = native.find("HEAPKIT_MALLOC_LIB", "heapkit_malloc")
    env = {**os.environ, "LD_PRELOAD": str(lib), "HEAPKIT_STATS": "1"}
    res = subprocess.run(["ls", "/"], capture_output=True, text=True, env=env)
    assert res.returncode == 0
    assert res.stderr.startswith("heapkit_malloc: pid="), res.stderr
    assert " allocator=tlsf " in res.stderr and " calls=" in res.stderr
