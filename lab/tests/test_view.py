# SPDX-License-Identifier: MIT
"""heapkit view and heapkit export.

A trace with callers, tasks and stamps is made here (a heapkit trace and its
side table, as `heapkit import` writes from the firmware recorder). The page
is driven in Debian's chromium, headless, through selenium and chromium-driver
(`make deps` installs both); those tests skip only when chromium is absent.
The exports are read by their own tools: ms_print (valgrind), heaptrack_print
(heaptrack) and Perfetto's trace schema as the perfetto package on PyPI ships it.
"""

from __future__ import annotations

import gzip
import json
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

import numpy as np
import pytest

from heapkit import engine
from heapkit.annotations import Annotations, side_path
from heapkit.cli import main
from heapkit.leaks import _blocks, analyse
from heapkit.trace import Trace, TraceBuilder, live_bytes
from heapkit.view import live_ids_at, load

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
CALLERS = [0x8001000, 0x8002000, 0x8003000, 0x8004000]
TASKS = {1: "net", 2: "ui", 3: "logger"}


def make_trace(path: Path, records: int = 3000, seed: int = 7) -> Path:
    """Tasks allocating and freeing from four callers; caller 2 never frees (a leak)."""
    rng = np.random.default_rng(seed)
    b = TraceBuilder()
    callers, live = [], []
    while len(b) < records:
        tid = int(rng.integers(1, 4))
        if live and rng.random() < 0.45:
            ident = live.pop(int(rng.integers(len(live))))
            b.free(ident, tid=tid)
            callers.append(CALLERS[0])
        else:
            k = int(rng.integers(0, 4))
            ident = b.malloc(int(rng.integers(8, 600)) * (4 if k == 1 else 1), tid=tid)
            callers.append(CALLERS[k])
            if k != 2:
                live.append(ident)
    t = b.build(path.name)
    t.save(path)
    Annotations(callers=np.array(callers, np.uint64), stamps=np.arange(len(t), dtype=np.uint64) * 10,
                tasks=dict(TASKS), marks=[(len(t) // 2, "steady")],
                meta={"stamp_hz": "1000"}).save(side_path(path))
    return path


@pytest.fixture(scope="module")
def fw(tmp_path_factory):
    return make_trace(tmp_path_factory.mktemp("view") / "fw.hkb")


def expected_by_caller(trace_path: Path, record: int) -> list[tuple[str, int, int]]:
    """(caller, live requested bytes, blocks) just after *record*, largest first: from the trace."""
    trace, ann = load(trace_path)
    b = _blocks(trace, ann)
    ids = live_ids_at(b, record)
    out = {}
    for c, s in zip(b.callers[ids].tolist(), b.sizes[ids].tolist()):
        v = out.setdefault(c, [0, 0])
        v[0] += s
        v[1] += 1
    return sorted(((f"0x{c:x}", v[0], v[1]) for c, v in out.items()), key=lambda r: (-r[1], -r[2]))


# --------------------------------------------------------------------------
# the page's data

def page_data(html: str) -> dict:
    m = re.search(r'<script id="hk-data" type="application/json">(.*?)</script>', html, re.S)
    return json.loads(m.group(1).replace("<\\/", "</"))


def test_view_writes_bounded_offline_page(fw, tmp_path, capsys):
    out = tmp_path / "v.html"
    assert main(["view", str(fw), "--alloc", "tlsf,buddy", "-o", str(out)]) == 0
    page = out.read_text()
    assert "http://" not in page and "https://" not in page and "<link" not in page
    d = page_data(page)
    assert d["records"] == 3000 and [a["name"] for a in d["allocators"]] == ["tlsf", "buddy"]
    trace, _ = load(fw)
    live = live_bytes(trace.records)
    assert d["peak"] == {"record": int(np.argmax(live)), "bytes": int(live.max())}
    assert max(d["buckets"]["live_max"]) == int(live.max())
    assert len(d["buckets"]["start"]) == 2000
    for a in d["allocators"]:
        assert sum(len(s["blocks"]) // 3 for s in a["snapshots"]) <= d["bounds"]["block_budget"]
        assert not any(s["merged"] for s in a["snapshots"])
        # The exact map's columns: where each id's block went, 4 bytes each as base64.
        assert set(a["between"]) == {"head", "tail", "offset", "usable"}
        assert len(a["between"]["offset"]["b"]) == 4 * -(-4 * trace.n_ids // 3)
    assert set(d["ids"]) == {"size", "birth", "caller", "tid", "pos", "end"}
    # At the peak the leaking caller holds the most.
    top = d["at_peak"]["by_caller"][0]
    assert d["callers"][top[0]] == f"0x{CALLERS[2]:x}"
    assert (d["callers"][top[0]], top[1], top[2]) == expected_by_caller(fw, d["peak"]["record"])[0]
    # Leaks: caller 2 never frees, so all it allocated remains.
    leak = [r for r in d["leaks"]["rows"] if d["callers"][r[0]] == f"0x{CALLERS[2]:x}"]
    assert leak and all(r[2] == r[4] and r[3] == r[5] for r in leak)


def test_view_checkpoint_and_owner_ids_match_the_trace(fw, tmp_path):
    out = tmp_path / "v.html"
    assert main(["view", str(fw), "--alloc", "tlsf", "--checkpoint", "steady", "-o", str(out)]) == 0
    d = page_data(out.read_text())
    assert d["leaks"]["since"] == 1500 and d["leaks"]["label"] == "steady"
    trace, ann = load(fw)
    b = _blocks(trace, ann)
    for snap in d["allocators"][0]["snapshots"][::97]:
        owners = {o for o in snap["blocks"][2::3] if o >= 0}
        assert owners == set(live_ids_at(b, snap["record"]).tolist())


def past_the_budget(fw, tmp_path, monkeypatch) -> Path:
    """The page of *fw* (3,000 records, two allocators) with the exact budget one short of it."""
    from heapkit import view
    monkeypatch.setattr(view, "EXACT_BUDGET", 2 * 3000 - 1)
    out = tmp_path / "v.html"
    assert main(["view", str(fw), "--alloc", "tlsf,buddy", "-o", str(out)]) == 0
    return out


def test_view_past_the_exact_budget_embeds_snapshots_only(fw, tmp_path, monkeypatch):
    d = page_data(past_the_budget(fw, tmp_path, monkeypatch).read_text())
    assert all("pass the page's bound (5,999)" in a["between"] for a in d["allocators"])
    assert "pos" not in d["ids"] and "id" in d["ids"]


def test_browser_past_the_exact_budget_shows_snapshots_and_says_so(fw, tmp_path, monkeypatch, browser):
    out = past_the_budget(fw, tmp_path, monkeypatch)
    browser.get(out.as_uri())
    snaps = browser.execute_script("return window.heapkitView.snapshotRecords('tlsf')")
    rec = snaps[10] + 1
    assert rec not in snaps and not browser.execute_script("return window.heapkitView.exact('tlsf')")
    browser.execute_script("window.heapkitView.setCursor(arguments[0])", rec)
    off = browser.execute_script("return JSON.parse(document.getElementById('hk-data').textContent)"
                                 ".allocators[0].snapshots[10].blocks[0]")
    assert browser.execute_script("return window.heapkitView.blockAt('tlsf', arguments[0])", off)["record"] == snaps[10]
    caption = browser.find_element("css selector", "#map-tlsf").find_element("xpath", "..").text
    assert f"record {snaps[10]} (latest snapshot at or before the cursor: not the cursor's heap)" in caption
    note = browser.find_element("id", "app").text
    assert "not exact between them: the trace's 3,000 records x allocators pass" in note


@pytest.mark.parametrize("argv, message", [
    (["--alloc", "nosuch"], "--alloc: nosuch: not an arena allocator"),
    (["--alloc", "tlsf,buddy,bump"], "at most 2 allocators"),
    (["--alloc", "system"], "--alloc: system: not an arena allocator"),
    (["--checkpoint", "nolabel"], "no such label"),
])
def test_view_bad_arguments(fw, tmp_path, capsys, argv, message):
    assert main(["view", str(fw), "-o", str(tmp_path / "v.html"), *argv]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and message in err


@pytest.mark.parametrize("body, message", [
    (b"heapkit-trace 1\nm 0 10\nf 0\nf 0\n", ":4:"),
    (b"heapkit-trace 1\nm 0 10\nm 1 2", "truncated"),
    (b"HKTRACE\0" + b"\x01\0\0\0" + b"\0" * 4 + (10**9).to_bytes(8, "little") + b"\0" * 8, "bad.hkt"),
])
def test_view_bad_trace_one_line(tmp_path, capsys, body, message):
    f = tmp_path / "bad.hkt"
    f.write_bytes(body)
    for cmd in (["view", str(f), "-o", str(tmp_path / "v.html")],
                ["export", str(f), "--format", "massif", "-o", str(tmp_path / "m.out")]):
        assert main(cmd) == 2
        err = capsys.readouterr().err.strip()
        assert "\n" not in err and message in err


# --------------------------------------------------------------------------
# in the browser

@pytest.fixture(scope="module")
def browser():
    if not os.path.exists(CHROMIUM) or not os.path.exists(CHROMEDRIVER):
        pytest.skip("chromium and chromium-driver are not installed (make deps installs them)")
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    profile = tempfile.mkdtemp(prefix="heapkit-chromium-")
    for a in ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
              "--disable-background-networking", "--disable-component-update", "--disable-sync",
              f"--user-data-dir={profile}", "--window-size=1400,1700"):
        opts.add_argument(a)
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    d = webdriver.Chrome(service=Service(CHROMEDRIVER), options=opts)
    yield d
    d.quit()
    shutil.rmtree(profile, ignore_errors=True)


@pytest.fixture(scope="module")
def page(fw, tmp_path_factory):
    out = tmp_path_factory.mktemp("page") / "view.html"
    assert main(["view", str(fw), "--alloc", "tlsf,buddy", "-o", str(out)]) == 0
    return out


def test_browser_loads_without_console_errors(browser, page):
    browser.get(page.as_uri())
    assert browser.execute_script("return typeof window.heapkitView") == "object"
    errors = [e for e in browser.get_log("browser") if e["level"] in ("SEVERE", "WARNING")]
    assert errors == []


def walk_at(trace_path: Path, alloc: str, arena: int, record: int) -> list[list[int]]:
    """The engine's walk of *alloc* just after *record*: [offset, size, owner] (-1 free), from a
    replay of the trace's prefix ending there (the replay is deterministic) on the same arena."""
    trace, _ = load(trace_path)
    prefix = Trace(trace.records[:record + 1], "prefix")
    snap = engine.replay(prefix, alloc, arena=arena, series=0, heapmap=1, heapmap_owners=True,
                         timing=False)["replay"]["heapmap"]["snapshots"][0]
    assert snap["record"] == record and not snap["merged"]
    return [[o, s, -1 if not u else w] for (o, s, u), w in zip(snap["blocks"], snap["owners"])]


def test_browser_cursor_and_block_under_address(browser, page, fw):
    browser.get(page.as_uri())
    d = page_data(page.read_text())
    tlsf = d["allocators"][0]
    snaps = {s["record"] for s in tlsf["snapshots"]}
    # A record that is no snapshot's, in the middle; the walk there (not the page's data) gives the
    # used block asked for by one byte inside it.
    rec = next(r for r in range(d["records"] // 2, d["records"]) if r not in snaps)
    walk = walk_at(fw, "tlsf", tlsf["arena"], rec)
    off, size, owner = next(blk for blk in walk if blk[2] >= 0 and int(_blocks(*load(fw)).born[blk[2]]) < rec - 10)
    browser.execute_script("window.heapkitView.setCursor(arguments[0])", rec)
    assert f"record {rec}" in browser.find_element("id", "readout").text
    got = browser.execute_script("return window.heapkitView.blockAt('tlsf', arguments[0])", off + size // 2)
    trace, ann = load(fw)
    b = _blocks(trace, ann)
    assert got["record"] == rec and got["offset"] == off and got["size"] == size
    assert got["owner"] == owner and got["used"] is True
    assert got["request"] == int(b.sizes[owner]) and got["caller"] == f"0x{int(b.callers[owner]):x}"
    assert got["task"] == TASKS[int(b.tids[owner])]
    assert got["age"] == rec - int(b.born[owner])
    # A byte inside a free block there is free.
    foff, fsize, _ = next(blk for blk in walk if blk[2] == -1)
    assert browser.execute_script("return window.heapkitView.blockAt('tlsf', arguments[0])",
                                  foff + fsize // 2)["used"] is False
    # A real mouse click in the middle of the plot (it spans x = 50 .. width - 10) moves the cursor there.
    from selenium.webdriver.common.action_chains import ActionChains
    tl = browser.find_element("id", "timeline")
    ActionChains(browser).move_to_element_with_offset(tl, 20, 0).click().perform()
    moved = int(re.search(r"record (\d+)", browser.find_element("id", "readout").text).group(1))
    assert abs(moved - 1500) <= 5


@pytest.mark.parametrize("alloc", ["tlsf", "buddy"])
def test_browser_map_between_snapshots_is_the_walk_there(browser, page, fw, alloc):
    """At records no snapshot holds, the page's map (its JS, in the browser) is the engine's walk
    there: every used block with its extent and owner, every free block's bytes free; tlsf merges
    a freed block with its free neighbours at once, so its free blocks are the walk's too."""
    browser.get(page.as_uri())
    d = page_data(page.read_text())
    a = next(x for x in d["allocators"] if x["name"] == alloc)
    snaps = sorted(s["record"] for s in a["snapshots"])
    assert len(snaps) < d["records"] and browser.execute_script("return window.heapkitView.exact(arguments[0])", alloc)
    # Just after a snapshot, the furthest from one, before the first, and the last record but one.
    picks = [snaps[3] + 1, snaps[len(snaps) // 2] + 2, snaps[0] - 1, d["records"] - 2]
    for rec in picks:
        assert rec not in snaps
        walk = walk_at(fw, alloc, a["arena"], rec)
        browser.execute_script("window.heapkitView.setCursor(arguments[0])", rec)
        # One byte inside each block, and the first and last bytes of the used ones.
        probes = [o + s // 2 for o, s, _ in walk] + [o for o, _, w in walk if w >= 0] + \
            [o + s - 1 for o, s, w in walk if w >= 0]
        got = browser.execute_script(
            "return arguments[0].map((o) => window.heapkitView.blockAt(arguments[1], o))", probes, alloc)
        want = walk + [blk for blk in walk if blk[2] >= 0] * 2
        assert len(got) == len(want)
        for g, (o, s, w) in zip(got, want):
            assert g["record"] == rec
            if w >= 0:
                assert (g["used"], g["owner"], g["offset"], g["size"]) == (True, w, o, s), (rec, o)
            else:
                assert g["used"] is False, (rec, o)
                if alloc == "tlsf":
                    assert (g["offset"], g["size"]) == (o, s), (rec, o)


EVERY_RECORD = """
const [name, d] = arguments, bad = [];
const a = d.allocators.find((x) => x.name === name);
for (const s of a.snapshots) {
  window.heapkitView.setCursor(s.record);
  for (let i = 0; i < s.blocks.length; i += 3) {
    const [off, size, owner] = s.blocks.slice(i, i + 3);
    if (owner === -1) continue;
    const g = window.heapkitView.blockAt(name, off + (size >> 1));
    if (!g || g.record !== s.record || !g.used || g.owner !== owner || g.offset !== off || g.size !== size)
      bad.push([s.record, off, size, owner, g]);
  }
}
return [a.snapshots.length, bad.slice(0, 5)];
"""


@pytest.mark.parametrize("alloc", ["tlsf", "buddy"])
def test_browser_used_blocks_exact_at_every_record(browser, tmp_path, alloc):
    """A trace short enough for a walk at every record: at each, every used block the walk saw is
    the page's block there, which it computes from where the blocks went, not from the walk."""
    fw = make_trace(tmp_path / "short.hkb", records=500, seed=3)
    out = tmp_path / "v.html"
    assert main(["view", str(fw), "--alloc", alloc, "-o", str(out)]) == 0
    browser.get(out.as_uri())
    assert browser.execute_script("return window.heapkitView.exact(arguments[0])", alloc)
    walks, bad = browser.execute_script(EVERY_RECORD, alloc, page_data(out.read_text()))
    assert walks == 500 and bad == []


def test_browser_by_caller_matches_the_trace(browser, page, fw):
    browser.get(page.as_uri())
    d = page_data(page.read_text())
    # A record that no snapshot holds, where the heap differs from the latest snapshot's before it.
    trace, ann = load(fw)
    b = _blocks(trace, ann)
    snaps = [s["record"] for s in d["allocators"][0]["snapshots"]]
    rec = next(r for r in range(snaps[-2] - 1, 0, -1) if r not in snaps and not np.array_equal(
        live_ids_at(b, r), live_ids_at(b, max(s for s in snaps if s < r))))
    browser.execute_script("window.heapkitView.setCursor(arguments[0])", rec)
    rows = browser.execute_script("return window.heapkitView.byCaller()")
    want = expected_by_caller(fw, rec)
    assert [tuple(r) for r in rows] == want
    first = browser.find_element("css selector", "#by-caller tbody tr").text.split()
    assert first == [f"{want[0][1]:,}", f"{want[0][2]:,}", want[0][0]]


def test_browser_screenshot(browser, fw, tmp_path):
    """The docs' screenshot of the viewer (docs/img/viewer-*.png are made this way, on real traces)."""
    out = tmp_path / "v.html"
    assert main(["view", str(fw), "--alloc", "tlsf,buddy", "-o", str(out)]) == 0
    browser.get(out.as_uri())
    png = tmp_path / "viewer.png"
    assert browser.save_screenshot(str(png))
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 10_000


# --------------------------------------------------------------------------
# exports, read by their tools

def _peak_and_top(fw):
    trace, ann = load(fw)
    live = live_bytes(trace.records)
    peak_rec = int(np.argmax(live))
    return int(live.max()), expected_by_caller(fw, peak_rec)[0]


@pytest.mark.skipif(shutil.which("ms_print") is None, reason="ms_print (Debian valgrind) is not installed")
def test_export_massif_read_by_ms_print(fw, tmp_path):
    out = tmp_path / "massif.out"
    assert main(["export", str(fw), "--format", "massif", "-o", str(out)]) == 0
    text = subprocess.run(["ms_print", str(out)], capture_output=True, text=True, check=True).stdout
    peak, (caller, nbytes, _) = _peak_and_top(fw)
    # The peak snapshot's table row, then its tree: the first child is the top caller.
    detailed = re.search(r"Detailed snapshots: \[(.*)\]", text).group(1)
    peak_snap = int(re.search(r"(\d+) \(peak\)", detailed).group(1))
    table = re.search(rf"^ +{peak_snap} +([\d,]+) +([\d,]+) +([\d,]+) +0 +0$", text, re.M)
    assert int(table.group(2).replace(",", "")) == peak
    tree = text[table.end():].split("\n->", 1)[1]
    assert re.match(rf"[\d.]+% \({nbytes:,}B\) 0x[0-9A-F]+: {caller}\n", tree)


@pytest.mark.skipif(shutil.which("heaptrack_print") is None, reason="heaptrack_print (Debian heaptrack) is not installed")
def test_export_heaptrack_read_by_heaptrack_print(fw, tmp_path):
    out = tmp_path / "fw.heaptrack.gz"
    assert main(["export", str(fw), "--format", "heaptrack", "-o", str(out)]) == 0
    assert gzip.decompress(out.read_bytes()).startswith(b"v ")
    flame = tmp_path / "peak.folded"
    text = subprocess.run(["heaptrack_print", "-f", str(out), "--flamegraph-cost-type", "peak",
                           "-F", str(flame)], capture_output=True, text=True, check=True).stdout
    peak, (caller, nbytes, _) = _peak_and_top(fw)
    stacks = sorted(((int(line.rsplit(" ", 1)[1]), line.rsplit(" ", 1)[0]) for line in
                     flame.read_text().splitlines() if line.strip()), reverse=True)
    assert sum(c for c, _ in stacks) == peak
    # A folded stack reads "function (file);" per frame: ours have one, the caller.
    assert stacks[0][0] == nbytes and stacks[0][1].split(" (")[0] == caller
    assert "PEAK MEMORY CONSUMERS" in text and f"\n{caller}\n" in text
    trace, ann = load(fw)
    b = _blocks(trace, ann)
    leaked = int(b.sizes[b.killed_at == len(trace)].sum())
    massif = tmp_path / "ht.massif"
    subprocess.run(["heaptrack_print", "-f", str(out), "-M", str(massif)], capture_output=True, check=True)
    assert max(int(v) for v in re.findall(r"^mem_heap_B=(\d+)", massif.read_text(), re.M)) == peak
    assert re.search(r"total memory leaked: ", text) and leaked > 0


def test_export_perfetto_read_with_perfettos_schema(fw, tmp_path):
    pb2 = pytest.importorskip("perfetto.protos.perfetto.trace.perfetto_trace_pb2",
                              reason="the perfetto package (PyPI) is not installed")
    out = tmp_path / "fw.perfetto-trace"
    assert main(["export", str(fw), "--format", "perfetto", "--alloc", "tlsf,buddy", "-o", str(out)]) == 0
    t = pb2.Trace()
    t.ParseFromString(out.read_bytes())
    names, values = {}, {}
    for p in t.packet:
        if p.HasField("track_descriptor"):
            names[p.track_descriptor.uuid] = p.track_descriptor.name
            assert p.track_descriptor.HasField("counter")
        elif p.HasField("track_event"):
            assert p.track_event.type == pb2.TrackEvent.TYPE_COUNTER
            values.setdefault(names[p.track_event.track_uuid], []).append(
                (p.timestamp, p.track_event.counter_value))
    peak, _ = _peak_and_top(fw)
    assert max(v for _, v in values["live requested bytes (trace)"]) == peak
    assert {"tlsf: footprint", "buddy: largest free block", "task net: live bytes"} <= set(values)
    # Counter timestamps: the recorder's stamps (10 per record at 1000 Hz) in ns, in order.
    stamps = [ts for ts, _ in values["live requested bytes (trace)"]]
    assert stamps == sorted(stamps) and all(ts % 10_000_000 == 0 for ts in stamps)
    # Each task's track peaks at heapkit leaks' figure for it.
    trace, ann = load(fw)
    tasks = {t["task"]: t["peak_live_bytes"] for t in analyse(trace, ann)["tasks"]}
    assert set(tasks) == set(TASKS.values())
    for name, pk in tasks.items():
        assert max(v for _, v in values[f"task {name}: live bytes"]) == pk


# --------------------------------------------------------------------------
# --follow: a stream written while the page is open

WRITER = r"""
import struct, sys, time
out = open(sys.argv[1], "wb")
out.write(b"HKFWTRC\0" + struct.pack("<HBBI", 1, 4, 0, 1000))
name = b"sensor"
out.write(bytes([ord("T"), 2, len(name), 0]) + struct.pack("<2I", 0x2000, 0) + name + b"\0\0")
stamp = 0
for burst in range(3):
    for k in range(40):
        ptr = 0x20000000 + 0x100 * (burst * 40 + k)
        stamp += 1
        out.write(bytes([ord("m"), 5, 0, 0]) + struct.pack("<5I", ptr, 16 + k, 0x8000 + burst, 0x2000, stamp))
        if k % 2:
            stamp += 1
            out.write(bytes([ord("f"), 5, 0, 0]) + struct.pack("<5I", ptr, 0, 0x9000, 0x2000, stamp))
    out.write(bytes([ord("m"), 5, 0, 0])[:2])       # half a record: the reader waits for the rest
    out.flush()
    time.sleep(1.5)
    out.write(bytes([0, 0]) + struct.pack("<5I", 0x30000000 + burst, 8, 0x8000, 0x2000, stamp))
out.close()
"""


def follow_run(tmp_path, *argv):
    """heapkit view --follow running WRITER: (process, page URL)."""
    import sys
    writer = tmp_path / "writer.py"
    writer.write_text(WRITER)
    stream = tmp_path / "live.hkfw"
    proc = subprocess.Popen([sys.executable, "-m", "heapkit", "view", "--follow", str(stream), "--run",
                             f"{sys.executable} {writer} {stream}", "-o", str(tmp_path / "final.html"), *argv],
                            stderr=subprocess.PIPE, text=True)
    line = proc.stderr.readline()
    url = re.search(r"serving (http://127\.0\.0\.1:\d+/)", line)
    assert url, line
    return proc, url.group(1)


def test_follow_serves_growing_stream(tmp_path):
    import time
    import urllib.request
    proc, url = follow_run(tmp_path)
    seen = []
    try:
        while proc.poll() is None:
            with urllib.request.urlopen(url + "data", timeout=5) as r:
                d = json.loads(r.read())
            seen.append((d.get("records", 0), d["follow"]["done"]))
            if d["follow"]["done"]:
                break
            time.sleep(0.3)
    finally:
        assert proc.wait(timeout=30) == 0, proc.stderr.read()
    counts = [c for c, _ in seen]
    assert counts == sorted(counts) and len(set(counts)) >= 3     # the page saw the stream grow
    final = page_data((tmp_path / "final.html").read_text())
    assert final["records"] == 3 * 60 + 3 and final["tasks"] == {"1": "sensor"}
    assert "connect-src" not in (tmp_path / "final.html").read_text()


def test_follow_page_in_browser(browser, tmp_path):
    proc, url = follow_run(tmp_path)
    try:
        browser.get(url)
        status = browser.find_element("id", "follow-status")
        import time
        deadline = time.time() + 30
        while "ended" not in status.text and time.time() < deadline:
            time.sleep(0.3)
        assert status.text == "the firmware ended: 183 records"
        assert browser.execute_script("return window.heapkitView.records") == 183
        errors = [e for e in browser.get_log("browser") if e["level"] in ("SEVERE", "WARNING")]
        assert errors == []
    finally:
        proc.wait(timeout=30)


def test_follow_bad_arguments(tmp_path, capsys):
    assert main(["view", "x.hkfw", "-o", str(tmp_path / "v.html"), "--run", "true"]) == 2
    assert "--follow" in capsys.readouterr().err
    assert main(["view", "--follow", str(tmp_path / "none.hkfw"), "-o", str(tmp_path / "v.html"),
                 "--run", "true"]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err.split("\n", 1)[1] and "no records arrived" in err


def test_view_marks_failures(fw, tmp_path):
    out = tmp_path / "v.html"
    assert main(["view", str(fw), "--alloc", "tlsf", "--arena", "16K", "-o", str(out)]) == 0
    a = page_data(out.read_text())["allocators"][0]
    fails = a["series"]["failures"]
    assert a["failures"] > 0 and fails == sorted(fails) and fails[-1] == a["failures"]
    first = next(r for r, f in zip(a["series"]["record"], fails) if f)
    assert a["first_failure"] <= first
