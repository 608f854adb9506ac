# SPDX-License-Identifier: MIT
"""heapkit explore: the configuration space, the evaluator (lab/explore/hk-explore), the SQLite
store and resume, the Pareto front and the balanced choice, the generated header (round trip
through C, Cortex-M3 firmware build), Dask against the local pool, and the CLI's errors."""

import random
import re
import shutil
import sqlite3
import struct
import subprocess
from collections import Counter
from pathlib import Path

import pytest

from heapkit import cli, explore
from heapkit.errors import HeapkitError
from heapkit.trace import TraceBuilder

from helpers import f, m, write_hkb

REPO = Path(__file__).resolve().parents[2]
SMALL_SPACE = dict(fits=("first", "best"), orders=("lifo", "address"), splits=(0, 9),
                   coalesces=(0, 9), list_sets=3)


def bimodal_trace(path, n=3000, seed=1):
    """Network-like sizes: ACK-sized (16) and MTU-sized (1476) modes plus an even spread,
    freed mostly in arrival order."""
    rng = random.Random(seed)
    b, live = TraceBuilder(), []
    for _ in range(n):
        if live and (rng.random() < 0.47 or len(live) > 300):
            b.free(live.pop(0) if rng.random() < 0.7 else live.pop(rng.randrange(len(live))))
        else:
            r = rng.random()
            live.append(b.malloc(16 if r < 0.35 else 1476 if r < 0.7 else rng.randint(17, 1475)))
    for ident in live:
        b.free(ident)
    b.build("bimodal").save(path)
    return str(path)


@pytest.fixture(scope="module")
def exe():
    return str(explore.binary())


@pytest.fixture(scope="module")
def trace(tmp_path_factory):
    return bimodal_trace(tmp_path_factory.mktemp("explore") / "bimodal.hkb")


def evaluate(exe, trace, configs, **kw):
    return explore.evaluate_batch(trace, [c.text() if isinstance(c, explore.Config) else c for c in configs],
                                  exe=exe, **kw)


# -- the configuration space ------------------------------------------------------------------

def test_histogram_modes_and_list_candidates(trace):
    hist = explore.size_histogram(trace)
    assert hist[16] > 500 and hist[1476] > 500
    assert explore._modes(hist) == [16, 1476]
    cands = explore.list_candidates(hist, 7)
    assert len(cands) == 7 and len(set(cands)) == 7
    assert cands[0] == ((), 0)
    assert cands[1] == (((16, 16),), 0) or cands[1] == (((1476, 1476),), 0)
    assert (((16, 16), (1476, 1476)), 0) in cands          # the ACK and MTU modes
    ranges = [lists for lists, cr in cands if cr == 1]
    assert ranges and any(lo < hi for lo, hi in ranges[0])  # range lists with class rounding


def test_full_space_has_ten_thousand_valid_distinct_configs(trace, exe, tmp_path):
    space = explore.enumerate_space(explore.size_histogram(trace))
    assert len(space) >= 10_000
    texts = [c.text() for c in space]
    assert len(set(texts)) == len(texts)
    assert all(c.problem() is None for c in space)
    assert {c.fit for c in space} == set(explore.FITS)
    assert {c.order for c in space} == set(explore.ORDERS)
    assert {c.split for c in space} == set(range(10)) == {c.coalesce for c in space}
    # The C side parses every one to the same canonical text and the dmm accepts every one.
    assert explore.canonical(texts, exe) == texts
    tiny = write_hkb(tmp_path / "tiny.hkb", [m(0, 16), m(1, 1476), f(0), f(1)])
    results = evaluate(exe, str(tiny), texts)
    assert [r.status for r in results] == ["ok"] * len(texts)


def test_target_and_small_axes():
    hist = Counter({16: 50, 1476: 40, 100: 3, 700: 2, 900: 1})
    assert len(explore.enumerate_space(hist, target=3000)) == 3000    # 2 list choices x 1500
    small = explore.enumerate_space(hist, **SMALL_SPACE)
    assert len(small) == 2 * 2 * 2 * 2 * 3
    with pytest.raises(HeapkitError, match="empty"):
        explore.enumerate_space(hist, fits=())


def test_config_text_round_trip_and_problems():
    c = explore.Config("best", "address", 7, 3, 0, 1, 0, ((16, 16), (60, 90), (1476, 1476)))
    assert c.text() == ("fit=best order=address split=7 coalesce=3 no_pool=0 class_round=1 "
                        "pool_round=0 lists=16,60-90,1476")
    assert explore.Config.parse(c.text()) == c
    assert explore.Config.parse("lists=none split=9") == explore.Config(split=9)
    for bad, what in (("fit=bogus", "fit"), ("split=x", "number"), ("colour=red", "unknown key"),
                      ("split=1 split=2", "twice"), ("lists=1-", "bad range"), ("split", "KEY=VALUE")):
        with pytest.raises(HeapkitError, match=what):
            explore.Config.parse(bad)
    assert explore.Config(split=10).problem()
    assert explore.Config(lists=((100, 50),)).problem()
    assert explore.Config(lists=((10, 20), (15, 30))).problem()
    assert explore.Config(no_pool=1).problem()
    assert explore.Config(pool_round=3).problem()


# -- the evaluator ----------------------------------------------------------------------------

def test_evaluator_metrics_on_a_hand_made_trace(exe, tmp_path):
    t = write_hkb(tmp_path / "t.hkb", [m(0, 1000), m(1, 1000), f(0), m(2, 500), f(1), f(2)])
    [r] = evaluate(exe, str(t), [explore.Config(split=9, coalesce=9)])
    assert r.status == "ok" and r.failures == 0
    assert r.requested == 2000                       # peak live requested bytes
    assert r.footprint >= 2000
    assert r.frag == pytest.approx(r.footprint / r.requested - 1, abs=1e-6)
    assert r.work >= 6                               # at least one unit per record
    # With splitting, the 500-byte block reuses the freed 1000 bytes: no growth past two blocks.
    [nosplit] = evaluate(exe, str(t), [explore.Config(split=0, coalesce=9)])
    assert r.footprint <= nosplit.footprint


def test_evaluator_failures_refusals_and_cap(exe, trace, tmp_path):
    t = write_hkb(tmp_path / "big.hkb", [m(0, 200000), f(0)])
    [r] = evaluate(exe, str(t), [explore.Config()], arena=65536)
    assert r.status == "ok" and r.failures == 1 and not r.feasible
    [ref] = evaluate(exe, str(t), ["split=12"])
    assert ref.status == "refused" and "split" in ref.reason
    capped, whole = evaluate(exe, trace, [explore.Config(fit="best")] * 2, max_work=2000)[0], \
        evaluate(exe, trace, [explore.Config(fit="best")])[0]
    assert capped.status == "capped" and whole.status == "ok" and whole.work > 2000


def test_evaluator_bad_input_is_one_line(exe, trace, tmp_path):
    for stdin, argv, expect in (
            ("1 fit=bogus\n", [trace], "stdin:1: fit"),
            ("1 split=1\n2 lists=a\n", [trace], "stdin:2: lists"),
            ("", [str(tmp_path / "missing.hkb")], "missing.hkb"),
            ("", [trace, "--arena", "12"], "--arena"),
            ("", [trace, "--bogus"], "--bogus")):
        proc = subprocess.run([exe, *argv], input=stdin, capture_output=True, text=True)
        assert proc.returncode == 2, (argv, proc.stderr)
        assert len(proc.stderr.strip().splitlines()) == 1 and expect in proc.stderr


def test_presets_come_from_the_dmm(exe):
    p = explore.presets(exe)
    assert set(explore.PRESETS) <= set(p)
    assert p["ose"].no_pool == 1 and p["uclinux"].pool_round == 4096
    assert p["wince"].fit == "first" and p["lea"].fit == "best"
    # preset= loads a preset that later keys override; the canonical text never names presets.
    [text] = explore.canonical(["preset=lea split=3"], exe)
    assert explore.Config.parse(text) == explore.dataclasses.replace(p["lea"], split=3)
    with pytest.raises(HeapkitError, match="preset= must come before"):
        explore.canonical(["split=3 preset=lea"], exe)


# -- Pareto front and choice ------------------------------------------------------------------

def test_pareto_front_on_hand_made_points():
    pts = [(5, 5), (1, 9), (2, 4), (3, 3), (4, 3), (2, 4), (9, 1), (3, 3.5), (1, 10), (10, 1)]
    front = explore.pareto_front(pts)
    assert sorted(front) == [1, 2, 3, 5, 6]          # duplicates (2,4) both stay; (4,3) and
    assert [pts[i][0] for i in front] == sorted(pts[i][0] for i in front)   # (10,1) are dominated
    assert explore.pareto_front([]) == []
    assert explore.pareto_front([(1, 1)]) == [0]
    # Brute force on random points agrees.
    rng = random.Random(3)
    pts = [(rng.randint(0, 20), rng.randint(0, 20)) for _ in range(300)]
    brute = [i for i, p in enumerate(pts)
             if not any(q[0] <= p[0] and q[1] <= p[1] and q != p for q in pts)]
    assert sorted(explore.pareto_front(pts)) == brute


def test_balanced_point_is_nearest_utopia_in_relative_excess():
    # (fragmentation, cost): memory = 1 + frag. Front: lean-but-slow, fast-but-fat, and a knee.
    pts = [(0.0, 200.0), (1.0, 100.0), (0.05, 110.0)]
    front = explore.pareto_front(pts)
    assert explore.balanced_point(pts, front) == 2
    # A narrow cost range does not dominate the choice (min-max scaling would pick index 0).
    pts = [(0.60, 100.0), (0.05, 104.0)]
    assert explore.balanced_point(pts, explore.pareto_front(pts)) == 1
    with pytest.raises(HeapkitError, match="no feasible"):
        explore.balanced_point(pts, [])


# -- store, resume, parallel engines ----------------------------------------------------------

def _rows(db):
    con = sqlite3.connect(db)
    try:
        return con.execute("SELECT trace, config, status, failures, frag, work, footprint, requested "
                           "FROM results ORDER BY trace, config").fetchall()
    finally:
        con.close()


def test_store_resume_after_interrupt(trace, exe, tmp_path, monkeypatch):
    space = explore.enumerate_space(explore.size_histogram(trace), **SMALL_SPACE)
    tasks = [explore.Task("app", "bimodal", trace, space)]
    fresh = tmp_path / "fresh.db"
    store = explore.Store(fresh)
    stats = explore.run(tasks, store, jobs=2, batch=5, exe=exe, progress=False)
    store.close()
    assert stats["evaluated"] == len(space) and stats["done_before"] == 0

    real = explore.evaluate_batch
    calls = []

    def flaky(*a, **kw):
        calls.append(1)
        if len(calls) > 3:
            raise KeyboardInterrupt
        return real(*a, **kw)

    db = tmp_path / "resume.db"
    store = explore.Store(db)
    monkeypatch.setattr(explore, "evaluate_batch", flaky)
    with pytest.raises(KeyboardInterrupt):
        explore.run(tasks, store, jobs=1, batch=5, exe=exe, progress=False)
    store.close()
    partial = _rows(db)
    assert 0 < len(partial) < len(space)
    monkeypatch.setattr(explore, "evaluate_batch", real)
    store = explore.Store(db)
    stats = explore.run(tasks, store, jobs=2, batch=5, exe=exe, progress=False)
    store.close()
    assert stats["done_before"] == len(partial)
    assert stats["evaluated"] == len(space) - len(partial)
    rows = _rows(db)
    assert len(rows) == len({(r[0], r[1]) for r in rows}) == len(space)
    assert rows == _rows(fresh)


def test_results_are_kept_per_evaluator_build(trace, exe, tmp_path):
    space = explore.enumerate_space(explore.size_histogram(trace), **SMALL_SPACE)[:6]
    tasks = [explore.Task("app", "bimodal", trace, space)]
    other = tmp_path / "hk-explore-rebuilt"
    other.write_bytes(Path(exe).read_bytes() + b"\0")     # another build of the evaluator
    other.chmod(0o755)
    store = explore.Store(tmp_path / "x.db")
    assert explore.run(tasks, store, exe=exe, progress=False)["evaluated"] == 6
    assert explore.run(tasks, store, exe=exe, progress=False)["evaluated"] == 0
    assert explore.run(tasks, store, exe=str(other), progress=False)["evaluated"] == 6
    assert store.count() == 12
    store.close()


def test_dask_local_cluster_matches_local_pool(trace, exe, tmp_path, monkeypatch):
    pytest.importorskip("distributed")
    monkeypatch.setenv(explore.ENV_BINARY, exe)      # what a worker resolves on its side
    space = explore.enumerate_space(explore.size_histogram(trace), **SMALL_SPACE)
    tasks = [explore.Task("app", "bimodal", trace, space)]
    local, dask = tmp_path / "local.db", tmp_path / "dask.db"
    for db, kw in ((local, {"jobs": 2}), (dask, {"dask_local": 2})):
        store = explore.Store(db)
        stats = explore.run(tasks, store, batch=6, exe=exe, progress=False, **kw)
        store.close()
        assert stats["evaluated"] == len(space)
    assert _rows(local) == _rows(dask)


# -- header and firmware ----------------------------------------------------------------------

HEADER_MAIN = r"""
#include <stdio.h>
#include "config_text.h"
#include "explored.h"
int main(void)
{
    char text[CONFIG_TEXT_MAX];
    config_format(&hk_explored_config, text, sizeof(text));
    puts(text);
    return hk_dmm_validate(&hk_explored_config) != HK_DMM_CFG_OK;
}
"""


@pytest.mark.parametrize("cfg", [
    explore.Config("first", "lifo", 9, 9, 0, 0, 0, ((16, 16), (1476, 1476))),
    explore.Config("exact", "address", 4, 0, 0, 1, 256, ((1, 64), (65, 128))),
    explore.Config("worst", "fifo"),
])
def test_header_round_trips_through_c(cfg, tmp_path):
    header = explore.c_header(cfg, comment=["test"], defines={"HK_EXPLORED_PEAK_FOOTPRINT": 1234})
    (tmp_path / "explored.h").write_text(header)
    (tmp_path / "main.c").write_text(HEADER_MAIN)
    exe = tmp_path / "roundtrip"
    sources = [REPO / "lab/explore/config_text.c"] + explore.firmware_sources()
    subprocess.run(["gcc", "-std=c11", "-Wall", "-Wextra", "-Werror", f"-I{tmp_path}",
                    f"-I{REPO / 'include'}", f"-I{REPO / 'src'}", f"-I{REPO / 'lab/explore'}",
                    "-o", str(exe), str(tmp_path / "main.c"), *map(str, sources)], check=True)
    out = subprocess.run([str(exe)], capture_output=True, text=True, check=True).stdout.strip()
    assert out == cfg.text()


def test_chosen_header_compiles_into_cortex_m3_firmware(tmp_path):
    assert shutil.which("arm-none-eabi-gcc"), "gcc-arm-none-eabi is in the Makefile's APT_PACKAGES"
    cfg = explore.Config("first", "lifo", 9, 9, 0, 0, 0, ((16, 16), (1476, 1476)))
    (tmp_path / "chosen.h").write_text(explore.c_header(cfg))
    elf, size = explore.build_firmware(tmp_path / "chosen.h", tmp_path / "fw")
    head = elf.read_bytes()[:20]
    assert head[:4] == b"\x7fELF" and head[4] == 1                 # 32-bit ELF
    assert struct.unpack("<H", head[18:20])[0] == 40               # EM_ARM
    assert size.startswith("text ")
    (tmp_path / "bad.h").write_text("#error not a config\n")
    with pytest.raises(HeapkitError, match="firmware build"):
        explore.build_firmware(tmp_path / "bad.h", tmp_path / "fw2")


# -- the command ------------------------------------------------------------------------------

def run_cli(capsys, *argv):
    code = cli.main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_explore_command_end_to_end_and_rerun(trace, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv(explore.ENV_BINARY, str(explore.binary()))
    out_dir = tmp_path / "out"
    argv = ["explore", "--trace", trace, "-o", str(out_dir), "--fits", "first,best",
            "--orders", "lifo", "--levels", "0,9", "--list-sets", "3", "--jobs", "2"]
    code, out, err = run_cli(capsys, *argv)
    assert code == 0, err
    assert "Proposed Alloc." in out and "Windows CE" in out and "Avrg. Alloc." in out
    for name in ("chosen-custom.h", "pareto-custom.png", "explore.json", "explore.html", "explore.db"):
        assert (out_dir / name).is_file(), name
    assert (out_dir / "firmware-custom" / "firmware.elf").is_file()
    header = (out_dir / "chosen-custom.h").read_text()
    assert "static const hk_dmm_config_t hk_explored_config" in header
    # 2 fits x 1 order x 2 x 2 levels x 3 lists; dmm-net's configuration is among them, and
    # the presets run first
    assert re.search(r"evaluated 23 .* 1 were in the database", out)
    code, out, err = run_cli(capsys, *argv)
    assert code == 0 and "evaluated 0 " in out and "24 were in the database" in out
    # The tables and the plot join the lab report.
    code, out, err = run_cli(capsys, "report", str(out_dir / "explore.json"), "-o", str(tmp_path / "r.html"))
    assert code == 0, err
    page = (tmp_path / "r.html").read_text()
    section = page[page.index('<h2 id="custom-dmm-network">'):]
    section = section[:section.index("<h2", 10)]
    assert "Proposed Alloc." in section and "Enea OSE" in section and "data:image/png;base64," in section


def test_explore_drr_on_a_real_pcap(tmp_path, capsys, monkeypatch):
    """The acceptance path: the DRR application fed by a real capture (python3-dpkt's)."""
    netapps = pytest.importorskip("heapkit.netapps")
    pcap = netapps.pcap_dir() / "http.pcap"
    if not pcap.is_file():
        pytest.skip(f"{pcap} missing (Debian package python3-dpkt)")
    monkeypatch.setenv(explore.ENV_BINARY, str(explore.binary()))
    out_dir = tmp_path / "drr"
    code, out, err = run_cli(capsys, "explore", "--app", "drr", "--pcap", str(pcap), "--repeat", "5",
                             "-o", str(out_dir), "--fits", "first,best", "--orders", "lifo",
                             "--levels", "0,9", "--list-sets", "2", "--no-firmware")
    assert code == 0, err
    assert "== drr: 16 configurations" in out and "Proposed Alloc." in out
    assert (out_dir / "chosen-drr.h").is_file() and (out_dir / "pareto-drr.png").is_file()
    hist = explore.size_histogram(out_dir / "traces" / "drr-http.hkb")
    assert explore._modes(hist)[0] == 16            # ACKs: no payload + 16 bytes of app data


@pytest.mark.parametrize("argv, expect", [
    (["explore"], "give --app NAME, --trace FILE or --workload NAME"),
    (["explore", "--pcap", "x.pcap"], "--pcap and --synthetic need --app"),
    (["explore", "--synthetic", "ramp"], "--pcap and --synthetic need --app"),
    (["explore", "--workload", "ramp", "--levels", "12"], "--levels: '12'"),
    (["explore", "--workload", "ramp", "--fits", "first,bogus"], "--fits: 'bogus'"),
    (["explore", "--workload", "ramp", "--scheduler", "tcp://127.0.0.1:1", "--dask-local", "2"],
     "not both"),
    (["explore", "--app", "nosuch"], "invalid choice"),
    (["explore", "--jobs", "0", "--workload", "ramp"], "positive integer"),
])
def test_explore_bad_args_are_one_line_errors(capsys, tmp_path, argv, expect):
    code, out, err = run_cli(capsys, *argv, "-o", str(tmp_path / "o"))
    assert code == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("heapkit: error: ") and expect in lines[0], err


def test_explore_bad_trace_file_is_one_line_error(capsys, tmp_path):
    bad = tmp_path / "bad.hkb"
    bad.write_bytes(b"HKTRACE\0" + b"\1" * 40)
    code, _, err = run_cli(capsys, "explore", "--trace", str(bad), "-o", str(tmp_path / "o"))
    assert code == 2 and len(err.strip().splitlines()) == 1 and "bad.hkb" in err


# -- custom-dmm-network in the demo: Table 2, the split minima, Figures 3 and 4 -----------------

def _summary(variants: dict, chosen: explore.Config, capped=()) -> explore.AppSummary:
    """An AppSummary by hand: every config of *variants* (config -> (frag, work)) on two
    traces with the same figures, those in *capped* stopped by the work cap."""
    results = {}
    for key in ("t1", "t2"):
        results[key] = {c.text(): explore.Result(c.text(), "capped" if c in capped else "ok", 0, f, w,
                                                  1000, 900, 1) for c, (f, w) in variants.items()}
    feasible = [c.text() for c in variants if c not in capped]
    points = [variants[explore.Config.parse(t)] for t in feasible]
    return explore.AppSummary("app", [("t1", "t1"), ("t2", "t2")], [c.text() for c in variants], results,
                              {}, points, feasible, explore.pareto_front(points), chosen.text())


def test_table2_switches_one_technique_from_the_choice():
    import dataclasses as dc
    base = explore.Config("first", "lifo", 9, 9, 0, 0, 0, ((16, 16), (1476, 1476)))
    variants = {base: (0.05, 100), dc.replace(base, lists=()): (0.07, 150),
                dc.replace(base, fit="best"): (0.04, 200), dc.replace(base, split=0): (0.30, 80),
                dc.replace(base, coalesce=0): (0.20, 90), dc.replace(base, split=3): (0.10, 90)}
    s = _summary(variants, base, capped={dc.replace(base, coalesce=0)})
    t = {x["technique"]: x for x in explore.technique_effects(s)}
    assert list(t) == ["freelists", "fit", "split", "coalesce"]
    assert (t["freelists"]["on"]["frag"], t["freelists"]["off"]["work"]) == (0.05, 150)
    assert (t["fit"]["on"]["frag"], t["fit"]["on"]["work"], t["fit"]["off"]["work"]) == (0.04, 200, 100)
    assert (t["split"]["on"]["frag"], t["split"]["off"]["frag"]) == (0.05, 0.30)
    assert t["coalesce"]["off"]["status"] == "capped" and t["coalesce"]["off"]["frag"] is None
    assert explore.split_minima(s) == {"0": 0.30, "3": 0.10, "9": 0.04}
    # a choice without lists switches on the first explored two-list choice
    bare = dc.replace(base, lists=())
    s = _summary(variants, bare)
    on = explore.technique_effects(s)[0]["on"]
    assert explore.Config.parse(on["config"]).lists == base.lists and on["frag"] == 0.05
    # a variant outside the space is reported as such
    s = _summary({bare: (0.07, 150)}, bare)
    assert explore.technique_effects(s)[1]["on"]["status"] == "not explored"


def test_technique_pairs_cover_every_explored_twin():
    import dataclasses as dc
    base = explore.Config("first", "lifo", 9, 9, 0, 0, 0, ((16, 16), (1476, 1476)))
    exact = dc.replace(base, fit="exact", lists=())
    variants = {base: (0.05, 100), dc.replace(base, split=0): (0.30, 80),
                dc.replace(base, fit="best"): (0.04, 200), dc.replace(base, fit="best", split=0): (0.2, 150),
                dc.replace(base, coalesce=0): (0.20, 90),
                exact: (0.1, 50), dc.replace(exact, split=0): (0.1, 50)}   # exact fit: split idle
    s = _summary(variants, base, capped={dc.replace(base, coalesce=0)})
    pairs = explore.technique_pairs(s)
    assert sorted(pairs["split"]) == [[0.04, 200, 0.2, 150], [0.05, 100, 0.30, 80], [0.1, 50, 0.1, 50]]
    assert sorted(pairs["fit"]) == [[0.04, 200, 0.05, 100], [0.2, 150, 0.30, 80]]
    assert pairs["coalesce"] == [] and pairs["freelists"] == []     # capped twin, no list-less twin


def test_size_profile_measures_the_two_modes():
    from heapkit import dmm_network
    p = dmm_network.size_profile(Counter({16: 30, 1476: 20, 100: 25, 200: 25}))
    assert p["requests"] == 100 and p["distinct"] == 4 and p["rest_distinct"] == 2
    assert p["top2"] == [[16, 30], [100, 25]] and p["top2_share"] == 0.55
    assert p["hist"] == [[16, 30], [100, 25], [200, 25], [1476, 20]]


def test_usage_forms_read_from_hand_made_curves():
    import numpy as np
    from heapkit import dmm_network
    n = 20000
    x = np.arange(n, dtype=float)
    ramp = x.copy()
    thin = np.full(n, 10.0)
    for k in range(1000, n, 4000):
        thin[k:k + 50] = 1000.0
    fat = np.zeros(n)
    for k in range(0, n, 5000):
        fat[k + 1000:k + 2000] = 1000.0 - np.abs(np.arange(1000) - 500.0)
    plateau = np.where((x % 10000) < 7000, 500.0, 20.0)
    forms = {name: dmm_network.usage_form(curve)["form"]
             for name, curve in (("ramp", ramp), ("thin-spikes", thin), ("fat-spikes", fat),
                                 ("plateau", plateau))}
    assert forms == {"ramp": "ramp", "thin-spikes": "thin-spikes", "fat-spikes": "fat-spikes",
                     "plateau": "plateau"}
    assert dmm_network.usage_form(np.zeros(10))["form"] == "none"
    series = dmm_network.usage_series(thin, points=100)
    assert len(series) == 100 and max(v for _, v in series) == 1000.0    # spikes survive the windows
