# SPDX-License-Identifier: MIT
"""The firmware recorder's host side: heapkit.fwtrace (import) and heapkit.leaks.

A host program built here from ports/trace/hk_trace.c and the heapkit core
records through the uniform-call wrappers into a file sink; its trace goes
through `heapkit import` and `heapkit leaks --elf` against its own DWARF.
Hand-made streams and images cover the format's corners and bad input.
"""

from __future__ import annotations

import gzip
import json
import re
import shutil
import struct
import subprocess
from pathlib import Path

import pytest

from heapkit.annotations import Annotations, side_path
from heapkit.cli import main
from heapkit.fwtrace import parse_firmware
from heapkit.importers import detect_format, import_trace
from heapkit.leaks import analyse
from heapkit.trace import Trace

ROOT = Path(__file__).resolve().parents[2]

PROGRAM = r"""
#include <stdio.h>
#include <stdlib.h>
#include "heapkit/tlsf.h"
#include "hk_trace.h"

static FILE *out;
static size_t to_file(void *ctx, const uint8_t *b, size_t n) { (void)ctx; return fwrite(b, 1, n, out); }
static uint32_t now;
static uint32_t tick(void) { return ++now; }
static hk_heap_t *heap;

__attribute__((noinline)) static void *make_buffer(size_t n) { return hk_trace_heap_malloc(heap, n); }
__attribute__((noinline)) static void leaky_function(void) {
    (void)hk_trace_heap_malloc(heap, 48); /* LEAK */
}

int main(int argc, char **argv)
{
    static uint8_t arena[1 << 16] __attribute__((aligned(16)));
    static uintptr_t buf[8192];
    hk_trace_config_t cfg = {0};
    hk_status_t st;
    void *keep, *tmp;
    int i;
    if (argc != 3) return 2;
    out = fopen(argv[1], "wb");
    heap = hk_tlsf_heap(hk_tlsf_init(arena, sizeof(arena), &st));
    cfg.sink = to_file;
    cfg.stamp = tick;
    cfg.stamp_hz = 1000;
    cfg.policy = HK_TRACE_BLOCK;
    hk_trace_init(buf, sizeof(buf), &cfg);
    keep = make_buffer(1000);                 /* long-lived */
    hk_trace_mark(hk_trace_active, "steady", 0);
    for (i = 0; i < 50; i++) {
        tmp = make_buffer((size_t)(16 + i));
        if (i % 10 == 0) leaky_function();
        hk_trace_heap_free(heap, tmp);
    }
    tmp = hk_trace_heap_realloc(heap, keep, 2000);
    keep = tmp;
    /* The ISR-free "tasks" of this host program: names recorded once. */
    hk_trace_task(hk_trace_active, 0x1000, "worker");
    hk_trace_alloc(hk_trace_active, HK_TRACE_MALLOC, (void *)0x7000, 64, 0, (void *)0x1, 0x1000);
    hk_trace_free(hk_trace_active, (void *)0x7000, 0, (void *)0x1, 0x1000);
    hk_trace_drain(hk_trace_active);
    fclose(out);
    /* The buffer image, as `dump binary memory` would write it. */
    out = fopen(argv[2], "wb");
    fwrite(buf, 1, sizeof(buf), out);
    fclose(out);
    return 0;
}
"""


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        pytest.skip("no C compiler")
    d = tmp_path_factory.mktemp("fw")
    src = d / "prog.c"
    src.write_text(PROGRAM)
    core = [str(ROOT / "src" / f) for f in ("core.c", "heap.c", "tlsf.c", "tagged.c")]
    exe = d / "prog"
    subprocess.run([cc, "-std=gnu99", "-g", "-O1", "-no-pie", "-I", str(ROOT / "include"), "-I", str(ROOT / "src"),
                    "-I", str(ROOT / "ports" / "trace"), str(src), str(ROOT / "ports" / "trace" / "hk_trace.c"),
                    *core, "-o", str(exe)], check=True)
    subprocess.run([str(exe), str(d / "stream.hkfw"), str(d / "image.bin")], check=True)
    line = PROGRAM.splitlines().index(next(l for l in PROGRAM.splitlines() if "/* LEAK */" in l)) + 1
    return d, exe, line


def test_import_writes_trace_and_side_table(recorded, capsys):
    d, _, _ = recorded
    assert main(["import", str(d / "stream.hkfw"), "-o", str(d / "fw.hkb")]) == 0
    assert "side.npz" in capsys.readouterr().out
    t = Trace.load(d / "fw.hkb")
    ann = Annotations.load(side_path(d / "fw.hkb"), len(t))
    st = t.stats()
    # 1 keep + 50 buffers + 5 leaks + 1 realloc + 1 worker block; 51 frees.
    assert st.by_op == {"malloc": 57, "calloc": 0, "aligned": 0, "realloc": 1, "free": 51}
    assert st.live_at_end == 6
    assert ann.tasks == {1: "worker"}
    assert ann.marks == [(1, "steady")]
    assert (ann.callers != 0).all() and len(ann.callers) == len(t)
    assert list(ann.stamps[:3]) == [1, 3, 4]   # the mark took stamp 2


def test_image_equals_stream(recorded):
    d, _, _ = recorded
    a = parse_firmware((d / "stream.hkfw").read_bytes(), "s")
    # The image's ring still holds what was drained last: its tail = head, so it is empty...
    b = parse_firmware((d / "image.bin").read_bytes(), "i")
    assert len(b[0]) == 0 and len(a[0]) == 109


def test_image_with_undrained_records():
    ring = 512
    rec = b"m\x05\x00\x00" + struct.pack("<5I", 0x100, 24, 0x8000, 0, 7)
    head, tail = 1000 + len(rec) * 2, 1000
    ring_bytes = bytearray(ring)
    for k, byte in enumerate(rec * 2):
        ring_bytes[(tail + k) % ring] = byte
    control = struct.pack("<8sHBBIIIIIIII", b"HKFWBUF\0", 1, 4, 16, 48, ring, head, tail, 100, 3, 3, 2)
    control += bytes(48 - len(control))
    tr, ann, _, dropped = parse_firmware(control + bytes(ring_bytes), "img")
    # Two mallocs of the same address: the second implies a lost free.
    assert [chr(o) for o in tr.records["op"]] == ["m", "f", "m"]
    assert dropped["missed free (address reused)"] == 1
    assert dropped["recorder (ring full)"] == 3
    assert ann.meta["stamp_hz"] == "100"


def test_leaks_names_the_leak(recorded, capsys):
    d, exe, line = recorded
    assert main(["leaks", str(d / "stream.hkfw"), "--elf", str(exe), "--checkpoint", "steady"]) == 0
    out = capsys.readouterr().out
    after = out.split("allocated after the checkpoint")[1].split("long-lived")[0]
    assert re.search(rf"^ +5 +240 +- +leaky_function \(prog\.c:{line}\)$", after, re.M)
    long_lived = out.split("long-lived")[1].split("per task")[0]
    assert "main (prog.c:" in long_lived          # the realloc of the block from before


def test_leaks_json_groups_and_tasks(recorded, capsys):
    d, exe, line = recorded
    main(["import", str(d / "stream.hkfw"), "-o", str(d / "fw.hkt"), "-q"])
    assert main(["leaks", str(d / "fw.hkt"), "--elf", str(exe), "--checkpoint", "1", "--json"]) == 0
    rep = json.loads(capsys.readouterr().out)
    after, before = rep["sections"]
    leak = [g for g in after["groups"] if g["where"].startswith("leaky_function")]
    assert leak == [{"caller": leak[0]["caller"], "where": f"leaky_function (prog.c:{line})", "tid": 0,
                     "task": "", "count": 5, "bytes": 240}]
    assert before["blocks"] == 1 and before["bytes"] == 2000
    tasks = {t["tid"]: t for t in rep["tasks"]}
    assert tasks[1]["task"] == "worker" and tasks[1]["peak_live_bytes"] == 64
    assert tasks[1]["live_blocks_at_end"] == 0
    # Task 0: 1000 (kept) + at most one 16..65-byte buffer + the leaks so far, then the realloc.
    assert tasks[0]["allocations"] == 57
    assert 2000 + 240 <= tasks[0]["peak_live_bytes"] <= 1000 + 2000 + 240 + 65


def test_analyse_without_callers():
    t = Trace.from_text("heapkit-trace 1\nm 0 10\nm 1 20 t2\nf 0\n")
    rep = analyse(t, Annotations())
    assert rep["callers"] is False
    assert rep["sections"][0]["groups"] == [{"caller": "0x0", "where": "(unknown caller)", "tid": 2,
                                             "task": "", "count": 1, "bytes": 20}]


@pytest.mark.parametrize("data, message", [
    (b"HKFWTRC\0" + b"\x02\x00\x04\x00" + b"\0" * 4, "unsupported recorder version 2"),
    (b"HKFWTRC\0" + b"\x01\x00\x03\x00" + b"\0" * 4, "word size 3"),
    (b"HKFWTRC\0\x01\x00\x04\x00\0\0\0\0" + b"Z\x05\x00\x00", "record 0: unknown record op 0x5a"),
    (b"HKFWTRC\0\x01\x00\x04\x00\0\0\0\0" + b"m\x05\x00\x00" + b"\0" * 8, "record 0: truncated record"),
    (b"HKFWTRC\0\x01\x00\x04\x00\0\0\0\0" + b"m\x04\x00\x00" + b"\0" * 16, "record 0: 'm' record with 4 words"),
    (b"HKFWTRC\0\x01\x00\x04\x00\0\0\0\0" + b"a\x06\x00\x00" + struct.pack("<6I", 8, 8, 3, 0, 0, 0),
     "record 0: alignment 3 is not a power of two"),
    (b"HKFWBUF\0\x01\x00\x04\x00" + struct.pack("<8I", 48, 512, 2000, 0, 0, 0, 0, 0) + bytes(560),
     "more than the 512-byte ring"),
    (b"HKFWBUF\0\x01\x00\x04\x00" + struct.pack("<8I", 48, 512, 0, 0, 0, 0, 0, 0), "dump the whole buffer"),
])
def test_bad_input_one_line(tmp_path, capsys, data, message):
    f = tmp_path / "bad.hkfw"
    f.write_bytes(data)
    assert main(["import", str(f), "-o", str(tmp_path / "o.hkb")]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and str(f) in err and message in err


def test_leaks_bad_arguments(recorded, tmp_path, capsys):
    d, exe, _ = recorded
    assert main(["leaks", str(d / "stream.hkfw"), "--checkpoint", "nope"]) == 2
    assert "no such label (labels: steady)" in capsys.readouterr().err
    t = tmp_path / "plain.hkt"
    t.write_text("heapkit-trace 1\nm 0 1\n")
    assert main(["leaks", str(t)]) == 2
    assert "no side table" in capsys.readouterr().err
    assert main(["leaks", str(d / "stream.hkfw"), "--elf", str(d / "prog.c")]) == 2
    assert "cannot read the ELF" in capsys.readouterr().err


def test_a_compressed_stream_imports_as_the_plain_one(recorded, tmp_path):
    """The repository keeps its recordings gzip-compressed (data/traces/embedded)."""
    d, _, _ = recorded
    packed = tmp_path / "stream.hkfw.gz"
    packed.write_bytes(gzip.compress((d / "stream.hkfw").read_bytes()))
    assert detect_format(packed) == "firmware"
    plain, packed_trace = import_trace(d / "stream.hkfw").trace, import_trace(packed).trace
    assert plain.to_text() == packed_trace.to_text()


def test_a_stream_past_the_bound_is_refused_before_it_is_read(tmp_path, monkeypatch, capsys):
    """A gzip bomb cannot take the memory: reading stops at MAX_STREAM bytes."""
    from heapkit import fwtrace
    monkeypatch.setattr(fwtrace, "MAX_STREAM", 4096)
    bomb = tmp_path / "bomb.hkfw.gz"
    bomb.write_bytes(gzip.compress(b"HKFWTRC\0\x01\x00\x04\x00\0\0\0\0" + bytes(1 << 20)))
    assert main(["import", str(bomb), "-o", str(tmp_path / "o.hkb")]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and str(bomb) in err and "bytes of recorder stream: refused" in err
