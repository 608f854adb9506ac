# SPDX-License-Identifier: MIT
"""Tests of the capture tool: libhkcapture.so (lab/capture) and heapkit.capture.

Real programs are recorded: python3 (an allocation-heavy snippet), sqlite3
(skipped when not installed; the Makefile installs it), and small C
programs compiled here whose distinctive request sizes make exact counts
checkable among the C runtime's own allocations. Every captured trace is
validated by heapkit.trace and replayed against every allocator the engine
lists, which must report no corruption.

HEAPKIT_CAPTURE_LIB / HEAPKIT_REPLAY run the tests against another build
(ctest does so for each build tree); otherwise build/ is brought up to date.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from heapkit import capture, cli, engine  # noqa: E402
from heapkit.capture import ENV_LIB  # noqa: E402
from heapkit.errors import HeapkitError  # noqa: E402
from heapkit.trace import NULL_ID, OP_NAMES, Trace  # noqa: E402

CC = shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
SQLITE3 = shutil.which("sqlite3")
PYTHON = os.path.realpath(sys.executable)   # the binary, not a venv or pyenv wrapper

PY_SNIPPET = """
import json, zlib
blobs = [bytes(range(256)) * (1 + i % 16) for i in range(3000)]
del blobs[::2]
table = {str(i): "x" * (i % 2000) for i in range(5000)}
text = json.dumps(table)
packed = zlib.compress(text.encode())
assert zlib.decompress(packed) == text.encode()
rows = [list(range(i % 300)) for i in range(2000)]
print(len(text), len(packed), sum(map(len, rows)))
"""

SQL = """
CREATE TABLE t(a INTEGER PRIMARY KEY, b TEXT, c BLOB);
WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 20000)
INSERT INTO t SELECT i, printf('row-%d-%s', i, hex(randomblob(i % 64))), randomblob(i % 300) FROM n;
CREATE INDEX tb ON t(b);
SELECT count(*), sum(length(b)), sum(length(c)) FROM t;
UPDATE t SET b = b || 'x' WHERE a % 3 = 0;
DELETE FROM t WHERE a % 5 = 0;
SELECT length(b), count(*) FROM t GROUP BY 1 ORDER BY 2 DESC LIMIT 2;
"""

# Each thread (tag 0: main, tag 1: a second thread) makes the same calls with
# sizes only it uses; the main thread adds the rarer entry points.
THREADS_C = r"""
#define _GNU_SOURCE
#include <malloc.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

static void work(size_t tag)
{
    char *c = calloc(7, 1001 + tag);
    char *r = realloc(c, 3001 + tag);
    void *a = NULL;
    if (posix_memalign(&a, 64, 2001 + tag) != 0) abort();
    void *a2 = aligned_alloc(128, 128 * (40 + tag));
    char *m = malloc(6001 + tag);
    char *rn = realloc(NULL, 7001 + tag);
    if (!r || !a2 || !m || !rn) abort();
    r[0] = m[0] = rn[0] = 1;
    if (realloc(m, 0) != NULL) abort();          /* glibc frees */
    free(NULL); free(NULL); free(NULL);
    free(r); free(a); free(a2); free(rn);
}

static void *thread_main(void *arg) { work((size_t)arg); return NULL; }

int main(void)
{
    work(0);
    void *ma = memalign(256, 8001);
    void *va = valloc(9001);
    void *pa = pvalloc(10001);
    void *ra = reallocarray(NULL, 11, 1001);
    if (!ma || !va || !pa || !ra) abort();
    free(ma); free(va); free(pa); free(ra);
    pthread_t t;
    if (pthread_create(&t, NULL, thread_main, (void *)1) != 0) abort();
    pthread_join(t, NULL);
    puts("threads done");
    return 0;
}
"""

FORK_C = r"""
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

int main(void)
{
    char *mine = malloc(12345);
    mine[0] = 1;
    fflush(stdout);
    pid_t pid = fork();
    if (pid < 0) return 1;
    if (pid == 0) {
        char *child = malloc(23456);
        child[0] = 2;
        free(mine);                      /* allocated before this process began */
        free(child);
        exit(0);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    free(mine);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}
"""

# Threads allocating and freeing each other's blocks through shared slots.
STRESS_C = r"""
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>

#define SLOTS 1024
static void *slot[SLOTS];

static void *worker(void *arg)
{
    uint64_t x = (uintptr_t)arg * 2654435761u + 1;
    for (int i = 0; i < 30000; i++) {
        x ^= x << 13; x ^= x >> 7; x ^= x << 17;
        int k = (int)(x % SLOTS);
        void *p = __atomic_exchange_n(&slot[k], NULL, __ATOMIC_ACQ_REL);
        switch ((x >> 20) % 5) {
        case 0: free(p); p = malloc((x >> 32) % 3000); break;
        case 1: p = realloc(p, (x >> 32) % 5000); break;
        case 2: free(p); p = calloc(1 + (x >> 40) % 10, 1 + (x >> 32) % 100); break;
        case 3: free(p); if (posix_memalign(&p, 64, (x >> 32) % 1000)) p = NULL; break;
        default: free(p); p = NULL; break;
        }
        free(__atomic_exchange_n(&slot[k], p, __ATOMIC_ACQ_REL));
    }
    return NULL;
}

int main(void)
{
    pthread_t t[4];
    for (uintptr_t i = 0; i < 4; i++)
        pthread_create(&t[i], NULL, worker, (void *)(i + 1));
    for (int i = 0; i < 4; i++)
        pthread_join(t[i], NULL);
    return 0;
}
"""

# Exits without exit(): _exit (finished by the library) or SIGKILL after
# more than one 65536-record chunk (the header is stale and rebuilt).
ABRUPT_C = r"""
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    int n = atoi(argv[2]);
    for (int i = 0; i < n; i++) {
        char *p = malloc(100 + (size_t)(i % 50));
        p[0] = (char)i;
        if (i % 2) free(p);
    }
    if (strcmp(argv[1], "kill") == 0) raise(SIGKILL);
    _exit(5);
}
"""

# Closes every descriptor it did not open, then reuses their numbers for a
# file of its own: the recorder must neither lose the trace nor write there.
FDREUSE_C = r"""
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

static void churn(void)
{
    for (int i = 0; i < 70000; i++) {
        char *p = malloc(64);
        p[0] = 1;
        if (i % 2) free(p);
    }
}

int main(int argc, char **argv)
{
    churn();
    int f = open(argv[1], O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (f < 0 || write(f, "mine\n", 5) != 5) return 1;
    for (int fd = 3; fd < 1024; fd++)
        if (fd != f) dup2(f, fd);
    churn();
    return 0;
}
"""


# A deliberate leak in a named function of a position-independent program,
# next to blocks that are freed: `heapkit leaks --elf` must name it.
LEAK_C = r"""
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char *remember(const char *s)
{
    char *copy = malloc(strlen(s) + 1);
    strcpy(copy, s);
    return copy;
}

__attribute__((noinline)) static void leaky_cache(int i)
{
    int *entry = malloc(48 + (size_t)i);
    entry[0] = i;
}

int main(void)
{
    for (int i = 0; i < 7; i++) {
        char *s = remember("transient");
        leaky_cache(i);
        free(s);
    }
    puts("done");
    return 0;
}
"""


# --------------------------------------------------------------------------
# Fixtures

@pytest.fixture(scope="module")
def lib() -> Path:
    env = os.environ.get(ENV_LIB)
    return Path(env) if env else capture.build()


@pytest.fixture(scope="module")
def bins(tmp_path_factory) -> dict[str, Path]:
    if CC is None:
        pytest.skip("no C compiler (cc, gcc or clang) to build the test programs")
    d = tmp_path_factory.mktemp("capture-bin")
    out = {}
    for name, src in (("threads", THREADS_C), ("fork", FORK_C), ("stress", STRESS_C),
                      ("abrupt", ABRUPT_C), ("fdreuse", FDREUSE_C)):
        c = d / f"{name}.c"
        c.write_text(src)
        exe = d / name
        # -O0 -fno-builtin: the compiler must not elide malloc/free pairs.
        subprocess.run([CC, "-std=gnu11", "-O0", "-fno-builtin", "-pthread", str(c),
                        "-o", str(exe)], check=True, capture_output=True)
        out[name] = exe
    return out


@pytest.fixture(scope="module")
def allocators() -> list[str]:
    names = engine.list_allocators()
    assert names, "the engine lists no allocators"
    return names


def rec(cmd, lib, **kw) -> capture.Capture:
    return capture.record(cmd, library=lib, stdout=subprocess.DEVNULL, **kw)


@pytest.fixture(scope="module")
def recorded(lib, bins) -> dict[str, capture.Capture]:
    caps = {
        "python3": rec([PYTHON, "-c", PY_SNIPPET], lib),
        "threads": rec([bins["threads"]], lib),
        "fork": rec([bins["fork"]], lib),
        "stress": rec([bins["stress"]], lib),
    }
    if SQLITE3:
        caps["sqlite3"] = rec([SQLITE3, ":memory:"], lib, stdin=_sql_file())
    return caps


def _sql_file():
    import tempfile
    f = tempfile.TemporaryFile("w+")
    f.write(SQL)
    f.seek(0)
    return f


def by_op(trace: Trace) -> dict[str, int]:
    return trace.stats().by_op


def where(r: np.ndarray, op: str, **fields) -> np.ndarray:
    mask = r["op"] == ord(op)
    for k, v in fields.items():
        mask &= r[k] == v
    return r[mask]


def one(r: np.ndarray, op: str, **fields):
    hits = where(r, op, **fields)
    assert len(hits) == 1, f"expected exactly one {op} record with {fields}, got {len(hits)}"
    return hits[0]


# --------------------------------------------------------------------------
# Real programs

def test_python3(recorded):
    cap = recorded["python3"]
    assert cap.returncode == 0
    main = cap.main
    assert main is not None and main.complete and not main.repaired
    ops = by_op(main.trace)
    for op in ("malloc", "calloc", "realloc", "free"):
        assert ops[op] > 0, ops
    assert ops["malloc"] + ops["realloc"] > 3000     # every blob is > 512 bytes
    assert main.trace.stats().threads >= 1
    # Re-reading the file the library wrote gives the same records.
    assert Trace.from_bytes(main.trace.to_bytes()) == main.trace


def test_sqlite3(recorded):
    if not SQLITE3:
        pytest.skip("sqlite3 is not installed (apt-get install sqlite3; make test installs it)")
    cap = recorded["sqlite3"]
    assert cap.returncode == 0
    main = cap.main
    assert main is not None and main.complete
    ops = by_op(main.trace)
    assert ops["malloc"] > 10000 and ops["realloc"] > 0 and ops["free"] > 10000, ops
    assert main.unknown_free == 0


def test_threads_exact_counts(recorded):
    cap = recorded["threads"]
    assert cap.returncode == 0
    main = cap.main
    assert main is not None and main.complete
    r = main.trace.records
    tids = set()
    for tag in (0, 1):
        cal = one(r, "c", size=1001 + tag, aux=7)
        tid = int(cal["tid"])
        tids.add(tid)
        moved = one(r, "r", size=3001 + tag, aux=int(cal["id"]), tid=tid)
        pm = one(r, "a", size=2001 + tag, aux=64, tid=tid)
        aa = one(r, "a", size=128 * (40 + tag), aux=128, tid=tid)
        m = one(r, "m", size=6001 + tag, tid=tid)
        rn = one(r, "r", size=7001 + tag, aux=NULL_ID, tid=tid)
        for blk in (moved, pm, aa, m, rn):        # realloc(m, 0) is the free of m
            one(r, "f", id=int(blk["id"]), tid=tid)
        # The calloc's id was consumed by the realloc, never freed.
        assert len(where(r, "f", id=int(cal["id"]))) == 0
    assert len(tids) == 2 and 0 not in tids
    assert main.trace.stats().threads == 2
    page = os.sysconf("SC_PAGE_SIZE")
    main_tid = int(one(r, "c", size=1001, aux=7)["tid"])
    for op, size, aux in (("a", 8001, 256), ("a", 9001, page),
                          ("a", -(-10001 // page) * page, page), ("r", 11011, NULL_ID)):
        blk = one(r, op, size=size, aux=aux, tid=main_tid)
        one(r, "f", id=int(blk["id"]), tid=main_tid)
    # free(NULL) x3 per thread are dropped, and counted.
    assert main.free_null >= 6


def test_threads_stress_is_a_valid_trace(recorded):
    cap = recorded["stress"]
    assert cap.returncode == 0
    st = cap.main.trace.stats()
    _, per_thread = np.unique(cap.main.trace.records["tid"], return_counts=True)
    assert np.count_nonzero(per_thread > 10000) == 4     # the workers; main allocated a little
    assert st.events > 4 * 30000
    assert all(st.by_op[op] > 1000 for op in ("malloc", "calloc", "aligned", "realloc", "free"))


def test_fork_makes_two_files(recorded):
    cap = recorded["fork"]
    assert cap.returncode == 0
    assert len(cap.processes) == 2
    parent, child = cap.main, cap.others[0]
    assert child.ppid == parent.pid == cap.pid
    pm = one(parent.trace.records, "m", size=12345)
    one(parent.trace.records, "f", id=int(pm["id"]))
    assert len(where(parent.trace.records, "m", size=23456)) == 0
    cm = one(child.trace.records, "m", size=23456)
    one(child.trace.records, "f", id=int(cm["id"]))
    # The child's trace starts empty: the inherited block is unknown there.
    assert len(where(child.trace.records, "m", size=12345)) == 0
    assert child.unknown_free >= 1 and child.trace.records["id"].min() == 0


def test_replay_every_trace_on_every_allocator(recorded, allocators, tmp_path):
    """Zero corruption (and no other allocator error) on every pair."""
    traces = {}
    for name, cap in recorded.items():
        for p in cap.processes:
            if len(p.trace):
                traces[f"{name}[{p.pid}]"] = p.trace
    assert len(traces) >= len(recorded)
    bad = []
    for name, trace in traces.items():
        path = tmp_path / f"{name}.hkb"
        trace.save(path)
        arena = max(16 << 20, 8 * trace.stats().peak_live_bytes)
        for alloc in allocators:
            res = engine.replay(path, alloc, arena=arena, series=0, timing=False)
            out = res["replay"]
            errors = out["errors"]
            assert errors["patterns_checked"] is True
            assert out["completed_records"] == len(trace)
            if errors["corrupt_blocks"] or any(errors[k] for k in (
                    "calloc_not_zero", "misaligned", "bad_blocks", "misuse_reports", "check")):
                bad.append(f"{name} on {alloc}: {errors}")
    assert not bad, "\n".join(bad)


# --------------------------------------------------------------------------
# Abnormal ends

def test_exit_through_underscore_exit_is_complete(lib, bins):
    cap = rec([bins["abrupt"], "exit", "1000"], lib)
    assert cap.returncode == 5
    assert cap.main.complete
    ops = by_op(cap.main.trace)
    assert ops["malloc"] == 1000 and ops["free"] == 500


def test_killed_program_keeps_flushed_prefix(lib, bins):
    cap = rec([bins["abrupt"], "kill", "60000"], lib)
    assert cap.returncode == -9 and cap.exit_status == 137
    main = cap.main
    assert not main.complete and main.repaired
    # One full chunk (65536 records) reached the file; the rest was lost.
    assert len(main.trace) == 65536
    assert "incomplete" in main.summary()


def test_program_reusing_descriptors(lib, bins, tmp_path):
    theirs = tmp_path / "theirs.txt"
    cap = rec([bins["fdreuse"], theirs], lib)
    assert cap.returncode == 0
    assert theirs.read_bytes() == b"mine\n"
    assert cap.main.complete
    ops = by_op(cap.main.trace)
    assert ops["malloc"] >= 140000 and ops["free"] >= 70000


# --------------------------------------------------------------------------
# The command line

def test_cli_trace(lib, bins, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv(ENV_LIB, str(lib))
    out = tmp_path / "t.hkt.gz"
    code = cli.main(["trace", "-o", str(out), "--", str(bins["threads"])])
    assert code == 0
    err = capsys.readouterr().err
    lines = err.splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith(f"wrote {out}: ")
    assert "2 threads" in lines[0] and "threads exited with status 0" in lines[0]
    assert "frees dropped (" in lines[0]
    t = Trace.load(out)
    for name in OP_NAMES.values():
        assert f"{name} {by_op(t)[name]}" in lines[0]


def test_cli_all_processes(lib, bins, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv(ENV_LIB, str(lib))
    out = tmp_path / "f.hkb"
    assert cli.main(["trace", "-o", str(out), "--", str(bins["fork"])]) == 0
    assert "1 other process not kept" in capsys.readouterr().err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["f.hkb", "f.hkb.side.npz"]
    assert cli.main(["trace", "--all-processes", "-o", str(out), "--", str(bins["fork"])]) == 0
    lines = capsys.readouterr().err.splitlines()
    files = sorted(p.name for p in tmp_path.iterdir() if not p.name.endswith(".side.npz"))
    assert len(files) == 2 and len(lines) == 2
    side = next(f for f in files if f != "f.hkb")
    assert (tmp_path / f"{side}.side.npz").is_file()
    pid = int(side.split(".")[1])
    assert side == f"f.{pid}.hkb" and f"[pid {pid}, fork]" in lines[1]
    assert len(where(Trace.load(tmp_path / side).records, "m", size=23456)) == 1
    assert len(where(Trace.load(out).records, "m", size=12345)) == 1


def test_cli_propagates_exit_status(lib, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv(ENV_LIB, str(lib))
    out = tmp_path / "s.hkb"
    code = cli.main(["trace", "-o", str(out), "--", "sh", "-c", "exit 7"])
    assert code == 7
    assert "sh exited with status 7" in capsys.readouterr().err
    Trace.load(out)


@pytest.mark.parametrize("argv,message", [
    (["no-such-program-hk"], "no-such-program-hk: command not found"),
    (["./no/such/prog"], "./no/such/prog: no such file"),
])
def test_cli_missing_program(lib, tmp_path, capsys, monkeypatch, argv, message):
    monkeypatch.setenv(ENV_LIB, str(lib))
    code = cli.main(["trace", "-o", str(tmp_path / "x.hkb"), "--"] + argv)
    err = capsys.readouterr().err
    assert code == 2 and err == f"heapkit: error: {message}\n"
    assert not (tmp_path / "x.hkb").exists()


def test_cli_bad_output_name(lib, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv(ENV_LIB, str(lib))
    code = cli.main(["trace", "-o", str(tmp_path / "x.txt"), "--", "true"])
    assert code == 2
    assert capsys.readouterr().err == (f"heapkit: error: {tmp_path / 'x.txt'}: output name "
                                       "must end in .hkb, .hkt or .hkt.gz\n")


def test_cli_output_directory_checked_first(lib, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv(ENV_LIB, str(lib))
    marker = tmp_path / "ran"
    out = tmp_path / "no" / "x.hkb"
    code = cli.main(["trace", "-o", str(out), "--", "touch", str(marker)])
    assert code == 2 and not marker.exists()
    assert capsys.readouterr().err.startswith(f"heapkit: error: {out}: cannot write: ")


def test_leaks_names_the_leaking_function(lib, tmp_path, capsys, monkeypatch):
    """The capture records each call's caller and the loaded objects: `heapkit leaks --elf`
    names the leaking function and its line in a PIE program, from its run-time addresses."""
    if CC is None:
        pytest.skip("no C compiler")
    src = tmp_path / "leak.c"
    src.write_text(LEAK_C)
    exe = tmp_path / "leak"
    subprocess.run([CC, "-g", "-O0", "-fno-builtin", "-fPIE", "-pie", str(src), "-o", str(exe)],
                   check=True, capture_output=True)
    line = next(i for i, l in enumerate(LEAK_C.splitlines(), 1) if "malloc(48" in l)
    monkeypatch.setenv(ENV_LIB, str(lib))
    out = tmp_path / "leak.hkb"
    assert cli.main(["trace", "-o", str(out), "--", str(exe)]) == 0
    capsys.readouterr()
    assert cli.main(["leaks", str(out), "--elf", str(exe), "--json"]) == 0
    rep = json.loads(capsys.readouterr().out)
    assert rep["callers"]
    groups = rep["sections"][0]["groups"]
    mine = [g for g in groups if not g["where"].startswith("lib")]   # the C library's own blocks aside
    assert mine == [{**mine[0], "where": f"leaky_cache (leak.c:{line})", "task": "main", "count": 7,
                     "bytes": sum(48 + i for i in range(7))}], groups
    # Without the ELF, the caller is the program's file and offset.
    assert cli.main(["leaks", str(out)]) == 0
    assert "leak+0x" in capsys.readouterr().out


def test_missing_library_is_reported(tmp_path, monkeypatch):
    monkeypatch.setenv(ENV_LIB, str(tmp_path / "nope.so"))
    with pytest.raises(HeapkitError, match="HEAPKIT_CAPTURE_LIB=.*nope.so: no such file"):
        capture.find_library()


def test_side_path():
    assert capture.side_path("a/out.hkb", 42) == "a/out.42.hkb"
    assert capture.side_path("x.hkt.gz", 7) == "x.7.hkt.gz"
    assert capture.side_path("x.hkt", 7) == "x.7.hkt"
