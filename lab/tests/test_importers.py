# SPDX-License-Identifier: MIT
"""Importers: hand-made samples with hand-checked traces, and the staged real traces."""

import gzip
import re
import time
import zipfile
from pathlib import Path

import pytest

from heapkit.errors import HeapkitError, TraceError
from heapkit.importers import (detect_format, import_memory_replay, import_mtrace,
                               import_trace, import_valgrind, import_wee)

DATA = Path(__file__).parent / "data"
REPO = Path(__file__).resolve().parents[2]
TRACES = REPO / "data" / "traces"      # the real traces, committed with their provenance


def text_of(result):
    return result.trace.to_text()


def assert_malformed(importer, path, text, line, reason):
    """Importing *text* (written to *path*) fails with exactly 'PATH:LINE: REASON'."""
    path.write_text(text)
    with pytest.raises(TraceError) as e:
        importer(path)
    assert str(e.value) == f"{path}:{line}: {reason}"


# -- wee_alloc ------------------------------------------------------------

WEE_EXPECTED = """heapkit-trace 1
m 0 552
m 1 120
m 2 1024
f 1
f 2
f 0
m 3 5
f 3
m 4 0
"""


def test_wee_sample():
    r = import_wee(DATA / "wee_sample.trace")
    assert text_of(r) == WEE_EXPECTED
    assert r.events == {"Alloc": 5, "Free": 6}
    assert r.dropped == {"Free of an index already freed": 1,
                         "Free of an index not allocated yet": 1}


@pytest.mark.parametrize("line,reason", [
    ("Alloc(12)),", "malformed line: expected 'Alloc(<size>),' or 'Free(<index>),'"),
    ("Realloc(3),", "malformed line: expected 'Alloc(<size>),' or 'Free(<index>),'"),
    ("Alloc(-1),", "malformed line: expected 'Alloc(<size>),' or 'Free(<index>),'"),
    ("Alloc(4294967296),", "size 4294967296 does not fit in 32 bits"),
])
def test_wee_malformed(tmp_path, line, reason):
    assert_malformed(import_wee, tmp_path / "w.trace", f"Alloc(1),\nFree(0),\n{line}\n", 3, reason)


# -- memory_replay --------------------------------------------------------

MR_EXPECTED = """heapkit-trace 1
m 0 1024 t100
c 1 32 8 t100
a 2 16 104 t101
r 3 - 80 t101
r 4 3 128 t100
f 0 t100
m 5 48 t101
f 4 t100
f 1 t100
m 6 16 t100
"""


def test_memory_replay_sample():
    r = import_memory_replay(DATA / "memory_replay_sample.txt")
    assert text_of(r) == MR_EXPECTED
    assert r.events == {"malloc": 3, "calloc": 1, "memalign": 1, "realloc": 3, "free": 3,
                        "thread_done": 1}
    assert r.dropped == {"free(NULL)": 1, "free of a pointer that is not live": 1}
    assert r.adjusted == {"realloc(p, 0) written as free": 1,
                          "free inserted (address returned again while live)": 1}
    assert r.ignored == {"thread_done": 1, "timestamps": 1}


def test_memory_replay_zip_and_gzip(tmp_path):
    src = (DATA / "memory_replay_sample.txt").read_bytes()
    z = tmp_path / "s.zip"
    with zipfile.ZipFile(z, "w", zipfile.ZIP_DEFLATED) as f:
        f.writestr("s.txt", src)
    g = tmp_path / "s.txt.gz"
    g.write_bytes(gzip.compress(src))
    for p in (z, g):
        assert detect_format(p) == "memory_replay"
        assert text_of(import_trace(p)) == MR_EXPECTED


def test_memory_replay_zip_needs_one_member(tmp_path):
    z = tmp_path / "two.zip"
    with zipfile.ZipFile(z, "w") as f:
        f.writestr("a.txt", "1: malloc 0x10 4\n")
        f.writestr("b.txt", "1: free 0x10\n")
    with pytest.raises(TraceError, match=r"two\.zip: zip must hold exactly one file, not 2"):
        import_memory_replay(z)


def test_memory_replay_realloc_zero_returning_a_block(tmp_path):
    p = tmp_path / "r.txt"
    p.write_text("5: malloc 0x10 8\n5: realloc 0x20 0x10 0\n5: realloc 0x0 0x20 0\n"
                 "5: realloc 0x30 0x99 4\n5: realloc 0x0 0x30 16\n")
    r = import_memory_replay(p)
    # realloc(p,0) handing out 0x20 -> f + m 0; then that block freed by realloc(.,0)
    # -> f; realloc of an unknown pointer -> realloc(NULL); a failed realloc is dropped.
    assert text_of(r) == ("heapkit-trace 1\nm 0 8 t5\nf 0 t5\nm 1 0 t5\nf 1 t5\n"
                          "r 2 - 4 t5\n")
    assert r.dropped == {"failed realloc (NULL result, old block kept)": 1}


@pytest.mark.parametrize("line,reason", [
    ("7: malloc 0x10", "malformed line: malloc takes 2 values (plus optional start and end "
                       "timestamps)"),
    ("7: malloc 0x10 8 100", "malformed line: malloc takes 2 values (plus optional start and "
                             "end timestamps)"),
    ("7: mmap 0x10 8", "malformed line: unknown action 'mmap'"),
    ("seven: malloc 0x10 8", "malformed line: bad number"),
    ("7: malloc 0xzz 8", "malformed line: bad number"),
    ("malloc 0x10 8", "malformed line: expected 'TID: ACTION PTR ...'"),
    ("7: malloc 0x10 5000000000", "size 5000000000 does not fit in 32 bits"),
])
def test_memory_replay_malformed(tmp_path, line, reason):
    assert_malformed(import_memory_replay, tmp_path / "m.txt", f"7: malloc 0x20 4\n{line}\n", 2,
                     reason)


def test_memory_replay_tid_without_space(tmp_path):
    p = tmp_path / "m.txt"
    p.write_text("9:malloc 0x20 4\n9:free 0x20\n")
    assert text_of(import_memory_replay(p)) == "heapkit-trace 1\nm 0 4 t9\nf 0 t9\n"


# -- mtrace -----------------------------------------------------------------

MTRACE_EXPECTED = """heapkit-trace 1
m 0 100
m 1 16
r 2 0 200
f 1
f 2
m 3 0
"""


def test_mtrace_sample():
    r = import_mtrace(DATA / "mtrace_sample.txt")
    assert text_of(r) == MTRACE_EXPECTED
    assert r.events == {"alloc": 4, "free": 3, "realloc": 1, "failed realloc": 1}
    assert r.dropped == {"failed allocation (NULL result)": 1,
                         "failed realloc (NULL result, old block kept)": 1,
                         "free of a pointer that is not live": 1}


@pytest.mark.parametrize("body,line,reason", [
    ("+ 0x10\n", 2, "malformed line: expected '+ PTR SIZE', '- PTR', '< PTR', '> PTR SIZE' "
                    "or '! PTR SIZE'"),
    ("@ ./a.out + 0x10 0x4\n", 2, "malformed line: bad '@ CALLER' part"),
    ("< 0x10\n- 0x10\n", 3, "'<' on line 2 is not followed by '>'"),
    ("> 0x10 0x4\n", 2, "'>' without a preceding '<'"),
    ("= Middle\n", 2, "malformed line: unknown marker '= Middle'"),
    ("+ 0x10 0x100000000\n", 2, "size 4294967296 does not fit in 32 bits"),
])
def test_mtrace_malformed(tmp_path, body, line, reason):
    assert_malformed(import_mtrace, tmp_path / "mt.txt", "= Start\n" + body + "= End\n", line,
                     reason)


def test_mtrace_unterminated_realloc(tmp_path):
    p = tmp_path / "mt.txt"
    p.write_text("+ 0x10 0x4\n< 0x10\n")
    with pytest.raises(TraceError, match=r":2: '<' is not followed by '>'"):
        import_mtrace(p)


# -- valgrind ---------------------------------------------------------------

VALGRIND_EXPECTED = """heapkit-trace 1
m 0 10
c 1 4 8
r 2 - 20
r 3 0 40
a 4 64 100
a 5 32 48
m 6 24
f 6
f 1
f 5
f 2
m 7 5 t1
a 8 32 64
"""


def test_valgrind_sample():
    r = import_valgrind(DATA / "valgrind_sample.txt")
    assert text_of(r) == VALGRIND_EXPECTED
    assert r.dropped == {"failed allocation (NULL result)": 1, "free(NULL)": 1,
                         "free of a pointer that is not live": 1}
    assert r.adjusted["allocation with no printed address"] == 1
    assert r.adjusted["bound unseen pointer to a block valgrind printed no address for"] == 1
    assert r.adjusted["realloc(p, 0) written as free"] == 1
    assert r.ignored == {"other lines": 4, "other valgrind lines": 1}


def test_valgrind_newer_realloc_forms(tmp_path):
    p = tmp_path / "vg.txt"
    p.write_text("--1-- realloc(0x0,16) = 0x100\n"
                 "--1-- realloc(0x100,0) = 0x0\n"
                 "--1-- malloc(8) = 0x200\n"
                 "--1-- realloc(0x200,0) = 0x300\n"
                 "--1-- realloc(0x300,99) = 0x0\n"
                 "--1-- aligned_alloc(al 24, size 10) = 0x400\n"
                 "--1-- memalign(alignment 16, size 3) = 0x500\n")
    r = import_valgrind(p)
    assert text_of(r) == ("heapkit-trace 1\nr 0 - 16\nf 0\nm 1 8\nf 1\nm 2 0\n"
                          "a 3 32 10\na 4 16 3\n")
    assert r.adjusted["alignment rounded up to a power of two"] == 1
    assert r.dropped == {"failed realloc (NULL result, old block kept)": 1}


@pytest.mark.parametrize("line,reason", [
    ("--1-- malloc(ten) = 0x10", "malformed line: bad arguments to malloc"),
    ("--1-- malloc(10) = banana", "malformed line: expected ' = 0xADDRESS' after the call"),
    ("--1-- memalign(64, 10) = 0x10", "malformed line: bad arguments to memalign"),
    ("--1-- realloc(0x10,4)", "malformed line: bad arguments to realloc"),
])
def test_valgrind_malformed(tmp_path, line, reason):
    assert_malformed(import_valgrind, tmp_path / "vg.txt", f"==1== Memcheck\n{line}\n", 2, reason)


# -- detection --------------------------------------------------------------

@pytest.mark.parametrize("name,fmt", [
    ("wee_sample.trace", "wee"),
    ("memory_replay_sample.txt", "memory_replay"),
    ("mtrace_sample.txt", "mtrace"),
    ("valgrind_sample.txt", "valgrind"),
    ("sample.hkt", "heapkit"),
])
def test_detect_format(name, fmt):
    assert detect_format(DATA / name) == fmt


def test_detect_binary_and_unknown(tmp_path):
    t = import_trace(DATA / "sample.hkt").trace
    (tmp_path / "t.bin").write_bytes(t.to_bytes())
    assert detect_format(tmp_path / "t.bin") == "heapkit"
    (tmp_path / "x.txt").write_text("hello world\n")
    with pytest.raises(HeapkitError, match="cannot tell the format; pass --format"):
        detect_format(tmp_path / "x.txt")


def test_explicit_format_wins(tmp_path):
    # a wee trace read as mtrace is malformed at line 1
    with pytest.raises(TraceError, match=r"wee_sample\.trace:1: malformed line"):
        import_trace(DATA / "wee_sample.trace", "mtrace")
    with pytest.raises(HeapkitError, match="unknown format 'nope'"):
        import_trace(DATA / "wee_sample.trace", "nope")


# -- the staged real traces ---------------------------------------------------

# file: (events, Alloc, Free, never freed, max size), from PROVENANCE.md
WEE_TABLE = {
    "cpp-demangle.trace": (102, 62, 40, 22, 8192),
    "dogfood.trace": (46076, 32472, 13604, 18868, 198802),
    "ffmpeg.trace": (3637, 1832, 1805, 27, 72704),
    "find.trace": (1130, 567, 563, 4, 32816),
    "gcc-hello.trace": (17775, 11431, 6344, 5087, 1366424),
    "grep-random-data.trace": (198, 122, 76, 46, 36872),
    "grep-recursive.trace": (1276, 657, 619, 38, 36872),
    "ls.trace": (82, 45, 37, 8, 32816),
    "source-map.trace": (2402, 2087, 315, 1772, 1474560),
}


def test_wee_ls_trace_exact():
    r = import_trace(TRACES / "wee_alloc" / "ls.trace.gz")
    assert r.format == "wee"
    lines = r.trace.to_text().splitlines()
    # PROVENANCE: Alloc(552) Alloc(120) Alloc(1024) Free(1) Free(2) Free(0) Alloc(5),
    # then Free(3) frees Alloc(5).
    assert lines[1:9] == ["m 0 552", "m 1 120", "m 2 1024", "f 1", "f 2", "f 0", "m 3 5", "f 3"]
    # Every line maps one to one: Alloc(n) -> m k n, Free(i) -> f i.
    src = gzip.decompress((TRACES / "wee_alloc" / "ls.trace.gz").read_bytes()).decode().splitlines()
    k = 0
    expect = []
    for line in src:
        n = int(re.search(r"\d+", line).group())
        if line.startswith("Alloc"):
            expect.append(f"m {k} {n}")
            k += 1
        else:
            expect.append(f"f {n}")
    assert lines[1:] == expect


@pytest.mark.parametrize("name", sorted(WEE_TABLE))
def test_wee_traces_match_provenance(name):
    events, allocs, frees, never, max_size = WEE_TABLE[name]
    r = import_wee(TRACES / "wee_alloc" / f"{name}.gz")
    st = r.trace.stats()
    assert r.events == {"Alloc": allocs, "Free": frees}
    assert not r.dropped                 # PROVENANCE: no double or out-of-range frees
    assert st.events == events
    assert st.live_at_end == never
    assert st.max_size == max_size


@pytest.mark.slow
def test_aosp_systemui_counts():
    t0 = time.perf_counter()
    r = import_trace(TRACES / "aosp" / "systemui.zip")
    elapsed = time.perf_counter() - t0
    assert r.format == "memory_replay"
    assert r.events == {"malloc": 383154, "calloc": 7847, "realloc": 29167, "memalign": 1066,
                        "free": 364863, "thread_done": 357}
    assert r.dropped == {"free(NULL)": 15818}
    assert not r.adjusted                # no unknown frees, no NULL reallocs
    st = r.trace.stats()
    assert st.by_op == {"malloc": 383154, "calloc": 7847, "aligned": 1066, "realloc": 29167,
                        "free": 364863 - 15818}
    assert st.realloc_null == 10623
    assert set(r.trace.records["aux"][r.trace.records["op"] == ord("a")].tolist()) == {16}
    assert 10.3e6 < st.peak_live_bytes < 10.5e6          # "peak live ≈10.4 MB"
    assert st.threads == 393
    print(f"systemui import: {elapsed:.1f} s")


@pytest.mark.slow
def test_aosp_surfaceflinger_counts():
    t0 = time.perf_counter()
    r = import_trace(TRACES / "aosp" / "surfaceflinger.zip")
    elapsed = time.perf_counter() - t0
    assert r.events == {"malloc": 1142990, "calloc": 44229, "realloc": 73781, "free": 1194239,
                        "thread_done": 1}
    assert r.dropped == {"free(NULL)": 2514}
    st = r.trace.stats()
    assert st.realloc_null == 8073
    assert st.by_op["free"] == 1194239 - 2514
    assert 2.0e6 < st.peak_live_bytes < 2.1e6            # "peak live ≈2.06 MB"
    assert st.threads == 15
    print(f"surfaceflinger import: {elapsed:.1f} s")


# -- vectorised memory_replay path agrees with the line-by-line importer ------

def _as_memory_replay(trace, stamps=False, base=0x1000):
    """Write a heapkit trace as a memory_replay dump, reusing freed addresses
    (LIFO) and sometimes letting realloc return the same address."""
    free_addrs, next_addr, addr_of, out = [], base, {}, []

    def take():
        nonlocal next_addr
        if free_addrs:
            return free_addrs.pop()
        next_addr += 0x40
        return next_addr

    for k, (op, _, tid, ident, size, aux) in enumerate(trace.records.tolist()):
        op = chr(op)
        tail = f" {k * 10} {k * 10 + 3}" if stamps and k % 3 == 0 else ""
        if op == "f":
            a = addr_of.pop(ident)
            free_addrs.append(a)
            out.append(f"{tid}: free 0x{a:x}{tail}")
            continue
        if op == "r" and aux != 0xFFFFFFFF:
            old = addr_of.pop(aux)
            new = old if k % 2 else take()
            if new != old:
                free_addrs.append(old)
            addr_of[ident] = new
            out.append(f"{tid}: realloc 0x{new:x} 0x{old:x} {size}{tail}")
            continue
        a = addr_of[ident] = take()
        if op == "m":
            out.append(f"{tid}: malloc 0x{a:x} {size}{tail}")
        elif op == "c":
            out.append(f"{tid}: calloc 0x{a:x} {aux} {size}{tail}")
        elif op == "a":
            out.append(f"{tid}: memalign 0x{a:x} {aux} {size}{tail}")
        else:
            out.append(f"{tid}: realloc 0x{a:x} 0x0 {size}{tail}")
        if k % 7 == 0:
            out.append(f"{tid}: free 0x0")
    out.append("3: thread_done 0x0")
    return "\n".join(out) + "\n"


@pytest.mark.parametrize("stamps", [False, True])
def test_memory_replay_vectorised_matches_loop(tmp_path, stamps):
    from heapkit.importers import _memory_replay_numpy
    from heapkit.workloads import generate
    src = _as_memory_replay(import_trace(DATA / "sample.hkt").trace, stamps)
    src += _as_memory_replay(generate("peak", events=3000), stamps, base=0x900000)
    p = tmp_path / "clean.txt"
    p.write_text(src)
    assert _memory_replay_numpy(p.read_bytes(), str(p)) is not None
    fast = import_memory_replay(p)
    slow = import_memory_replay(p, vectorised=False)
    assert fast.trace == slow.trace
    assert (fast.events, fast.dropped, fast.adjusted, fast.ignored) == \
        (slow.events, slow.dropped, slow.adjusted, slow.ignored)
    assert fast.dropped["free(NULL)"] > 0 and fast.ignored["thread_done"] == 2


def test_memory_replay_irregular_input_falls_back():
    from heapkit.importers import _memory_replay_numpy
    assert _memory_replay_numpy((DATA / "memory_replay_sample.txt").read_bytes(), "s") is None


@pytest.mark.slow
def test_aosp_systemui_vectorised_matches_loop():
    p = TRACES / "aosp" / "systemui.zip"
    fast, slow = import_memory_replay(p), import_memory_replay(p, vectorised=False)
    assert fast.trace == slow.trace and fast.events == slow.events
    assert fast.dropped == slow.dropped and fast.ignored == slow.ignored


def test_the_demo_finds_every_real_trace_in_the_repository():
    """`heapkit demo`'s default traces are the repository's own: every set, no licence or
    provenance file taken for a trace, and every one of them in a format the importers know."""
    from heapkit.demo import REAL_SETS, default_traces_dir, real_traces
    assert default_traces_dir() == TRACES
    found = real_traces(TRACES)
    kinds = [k for k, _ in found]
    assert kinds.count("wee_alloc") == len(WEE_TABLE) and kinds.count("aosp") == 2
    assert kinds.count("embedded") >= 3 and set(kinds) <= set(REAL_SETS)
    names = {p.name for _, p in found}
    assert not names & {"LICENSE", "NOTICE", "README", "TRACES", "README.md", "PROVENANCE.md"}
    for _, p in found:
        if p.suffix != ".zip":
            assert detect_format(p) in ("wee", "firmware", "heapkit"), p
    assert real_traces(None) == []
