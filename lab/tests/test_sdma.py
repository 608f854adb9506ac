# SPDX-License-Identifier: MIT
"""The fctma-pools seed's SDMA (lab/target/sdma.c), the lab's "sdma": replayed by hk-replay on
generated and hand-made traces, its misuse handling called directly (c/sdma_misuse.c), and its
lookup tables in the Cortex-M3 image's flash. HEAPKIT_REPLAY runs the replays against another
build."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from heapkit import engine
from heapkit.native import SOURCE_ROOT

from helpers import c, f, m, r, write_hkb
from test_peers import assert_clean, generate

TARGET = SOURCE_ROOT / "lab" / "target"


@pytest.fixture(scope="module")
def hk():
    return Path(os.environ["HEAPKIT_REPLAY"]) if os.environ.get("HEAPKIT_REPLAY") else engine.build()


def replay(recs, tmp_path, hk, **kw):
    t = write_hkb(tmp_path / "t.hkb", recs)
    return engine.replay(t, "sdma", binary=hk, timing=False, **kw)["replay"]


def test_listed_in_the_engine(hk):
    entry = next(e for e in engine._run(["--list", "--json", "-"], binary=hk) if e["name"] == "sdma")
    assert entry == {"name": "sdma", "family": "peer", "in_arena": True}


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_generated_trace_replays_without_corruption(hk, tmp_path, seed):
    recs = generate(3000, seed)
    rep = replay(recs, tmp_path, hk, arena=256 * 1024, series=50)
    assert rep["completed_records"] == len(recs) and rep["failures"]["total"] == 0
    assert_clean(rep)


def test_edge_requests(hk, tmp_path):
    """malloc(0), realloc(NULL), calloc zeroed, realloc growing (a move: no split) and shrinking,
    and the seed's 15 classes: a block above 32 KB fails cleanly."""
    recs = [m(0, 0), m(1, 0), r(2, None, 40), c(3, 10, 10), r(4, 3, 300), r(5, 4, 20), m(6, 40000),
            f(0), f(1), f(2), f(5)]
    rep = replay(recs, tmp_path, hk, arena=64 * 1024)
    assert rep["failures"]["total"] == rep["failures"]["malloc"] == 1   # m6
    assert_clean(rep)


def test_a_127_byte_block_takes_its_class(hk, tmp_path):
    # 127 + the 8-byte header = 135, in whole alignment units 136 (or 144), class (7, 1) from 144: 136 usable.
    at = replay([m(0, 127), m(1, 127), m(2, 127), f(1), f(0), f(2)], tmp_path, hk)["at_peak_live"]
    assert at["blocks"] == 3 and at["granted"] == 3 * 136


def test_same_class_reused_larger_never_split_never_merged(hk, tmp_path):
    recs = [m(0, 127), f(0), m(1, 130),        # 130 maps to 127's class: the same block, no growth
            m(2, 100), m(3, 100), f(2), f(3),  # two free neighbours ...
            m(4, 200),                         # ... are not merged for a 200-byte request
            m(5, 1000), f(5), m(6, 100),       # a free 1000-byte block is not split for 100 bytes
            f(1), f(4), f(6)]
    rep = replay(recs, tmp_path, hk, arena=64 * 1024, series=len(recs))
    used = rep["series"]["free_bytes"]
    assert used[2] == used[0]                         # m1 reused m0's block
    assert used[7] < used[6] and used[10] < used[9]   # m4 and m6 took new blocks from the chunk
    assert rep["failures"]["total"] == 0


def test_misuse_is_reported_and_harmless(tmp_path):
    cc = shutil.which("gcc")
    if cc is None:
        pytest.skip("gcc not installed")
    exe = tmp_path / "sdma_misuse"
    san = ["-fsanitize=address,undefined", "-fno-sanitize-recover=all"]
    subprocess.run([cc, "-std=c99", "-Wall", "-Wextra", "-Werror", *san, "-I", str(SOURCE_ROOT / "include"),
                    "-I", str(TARGET), str(TARGET / "sdma.c"), str(Path(__file__).parent / "c" / "sdma_misuse.c"),
                    "-o", str(exe)], check=True)
    out = subprocess.run([str(exe)], capture_output=True, text=True)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stdout + out.stderr


def test_lookup_tables_are_in_flash(tmp_path):
    """LTB1 and LTB2 are 256-byte const tables: read-only data in the Cortex-M3 object, as the seed
    placed them (saving 512 bytes of RAM)."""
    cc, nm = shutil.which("arm-none-eabi-gcc"), shutil.which("arm-none-eabi-nm")
    if cc is None or nm is None:
        pytest.skip("arm-none-eabi-gcc not installed")
    obj = tmp_path / "sdma.o"
    subprocess.run([cc, "-mcpu=cortex-m3", "-mthumb", "-O2", "-c", "-I", str(SOURCE_ROOT / "include"),
                    str(TARGET / "sdma.c"), "-o", str(obj)], check=True)
    syms = {}
    for line in subprocess.run([nm, "-S", str(obj)], capture_output=True, text=True, check=True).stdout.splitlines():
        parts = line.split()
        if len(parts) == 4:
            syms[parts[3]] = (int(parts[1], 16), parts[2])
    assert syms["LTB1"] == (256, "r") and syms["LTB2"] == (256, "r")
    assert not [s for s, (_, kind) in syms.items() if kind in "bBdD"], "SDMA keeps no state outside its chunk"
