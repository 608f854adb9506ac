# SPDX-License-Identifier: MIT
"""fits-cse3320 as the seed measured it (heapkit/fits.py): the counters at the seed's
24-byte header on the real workload, the test process under libheapkit_malloc.so, and
the Cortex-M3 counts where QEMU is installed. Builds hk-replay, libheapkit_malloc.so and
hk-fits-process if the build tree lacks them."""

import json
import os
import subprocess

import pytest

from heapkit import cli, fits, native, target, workloads
from heapkit.errors import HeapkitError


@pytest.fixture(scope="module")
def header():
    return fits.header_runs()


def by_header(h: dict) -> dict:
    return {(r["allocator"], r["header"]): r["counters"] for r in h["runs"]}


def counts(c: dict) -> tuple:
    return tuple(c[k] for k in ("reuses", "grows", "splits", "coalesces", "heap_blocks",
                                "requested", "max_heap"))


def test_block_overhead_is_the_tag():
    # A 64-bit host: an 8-byte tag, and 64 is a multiple of HK_ALIGN.
    assert fits.block_overhead() == 8


def test_counters_at_the_seeds_header_on_the_real_workload(header):
    got = by_header(header)
    assert header["own_header"] == 8 and header["paper_header"] == 24
    # The seed's geometry: 20 step-1 blocks + the 2448-byte block, each with 24 bytes, is
    # 11992 (the paper's best-fit max heap); the 5000-byte block is placed in freed space.
    for a in fits.FITS:
        assert counts(got[(a, 24)]) == (11, 21, 10, 31, 1, 20296, 11992), a
    # The paper's figures that match at its header and not at heapkit's own: the splits.
    assert [got[(a, 8)]["splits"] for a in fits.FITS] == [11, 11, 11, 10]
    assert all(got[(a, 8)]["max_heap"] == 11656 for a in fits.FITS)
    # Best fit's row of the paper, counter by counter: all but the coalesces.
    paper_best = (11, 21, 10, 29, 1, 20296, 11992)
    assert [g == p for g, p in zip(counts(got[("seqfit-best", 24)]), paper_best)] == \
        [True, True, True, False, True, True, True]


def test_a_header_smaller_than_the_tag_is_refused():
    with pytest.raises(HeapkitError, match="more than a 4-byte header"):
        fits.header_runs(header=4)


def test_requests_text_is_the_workload():
    text = fits.requests_text(rounds=2)
    lines = text.splitlines()
    assert len(lines) == 2 * 64
    assert lines[:2] == ["m 0 480", "m 1 64"] and lines[20] == "f 0"
    t = workloads.generate("cse3320", rounds=2, shuffle=0)
    assert sum(int(x.split()[2]) for x in lines if x[0] == "m") == t.stats().total_requested


def test_rss_of_the_test_process_under_each_malloc():
    got = fits.rss(repeats=1, rounds=5)
    by = {c["allocator"]: c for c in got["configs"]}
    assert list(by) == ["glibc", *fits.FITS]
    for c in by.values():
        assert c["mallocs"] == c["frees"] == 32 * 5
        assert c["rss_peak_kb"] >= c["rss_start_kb"] > 0
        assert c["malloc_mean_ns"] > 0


def test_the_process_rejects_bad_input():
    process = native.find(fits.PROCESS_ENV, fits.PROCESS_TARGET)
    for text, msg in (("m 0\n", "needs a size"), ("x 1 2\n", "expected 'm ID SIZE'"),
                      ("m 70000 8\n", "id out of range"), ("m 0 0\n", "needs a size")):
        proc = subprocess.run([str(process)], input=text, capture_output=True, text=True,
                              env={k: v for k, v in os.environ.items() if k != "LD_PRELOAD"})
        assert proc.returncode == 2 and msg in proc.stderr, text


@pytest.mark.skipif(bool(target.missing_tools()), reason="no arm-none-eabi-gcc or QEMU")
def test_cortex_m3_counts_order_the_fits_as_the_paper():
    got = fits.icount(rounds=2, jobs=1)
    by = {r["allocator"]: r for r in got["runs"]}
    assert set(by) == {*fits.FITS, fits.TARGET_LIBC}
    m = {a: by[a]["malloc"]["mean"] for a in by}
    assert all(by[a]["malloc"]["count"] == 64 for a in by)
    assert m[fits.TARGET_LIBC] < min(m["seqfit-first"], m["seqfit-next"])
    assert max(m["seqfit-first"], m["seqfit-next"]) < min(m["seqfit-best"], m["seqfit-worst"])


def test_cli_prints_the_tables_and_a_verdict_per_claim(capsys, tmp_path):
    out = tmp_path / "fits.json"
    assert cli.main(["fits-cse3320", "--repeats", "1", "--json", str(out)]) == 0
    text = capsys.readouterr().out
    assert "24-B header" in text and "Ranking: measured" in text
    assert text.count("\n- ") == 11
    doc = json.loads(out.read_text())
    assert doc["kind"] == "heapkit-demo" and doc["extra"]["cse3320"]["header"]["paper_header"] == 24
