# SPDX-License-Identifier: MIT
"""Tests of the network case studies: hk-netapp (lab/netapps) and heapkit.netapps.

Each application runs on the real captures of Debian's python3-dpkt (the
Makefile installs it) and on every synthetic shape: the runs must be
deterministic, verify every packet's content, free everything, and emit
traces the replay engine validates and replays to the same peak live bytes
and, on the same allocator and arena, the same granted bytes. Hand-made
captures pin DRR's quantum behaviour against a reference model, the flow
queues' creation and destruction, and url-switch's parsing and routing.

HEAPKIT_NETAPP / HEAPKIT_REPLAY run the tests against another build;
otherwise the build tree's binaries are brought up to date.
"""

from __future__ import annotations

import json
import struct
import subprocess
import sys
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from heapkit import cli, engine, netapps  # noqa: E402
from heapkit.netapps import APPS, SHAPES, NetappError  # noqa: E402
from heapkit.trace import Trace  # noqa: E402

PCAPS = netapps.pcap_dir()
HTTP = PCAPS / "http.pcap"
NB6 = PCAPS / "nb6-http.pcap"
QUANTUM = 9216
SMALL = 32

needs_pcaps = pytest.mark.skipif(not HTTP.is_file() or not NB6.is_file(),
                                 reason="python3-dpkt's captures are not installed (make deps)")


@pytest.fixture(scope="module")
def exe() -> Path:
    return netapps.find_binary()


@pytest.fixture(scope="module")
def replayer() -> Path:
    return engine.find_binary()


def run_raw(exe: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(exe), *map(str, args)], capture_output=True, text=True)


def run_json(exe: Path, *args: str) -> dict:
    proc = run_raw(exe, *args, "--json", "-")
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def healthy(s: dict) -> None:
    """What every run must show, whatever the input."""
    assert s["corruptions"] == 0
    assert s["heap_check"] == 0 and s["heap_errors"] == 0
    assert s["enqueued"] + s["drops"] == s["packets"]
    assert s["departed"] == s["enqueued"]
    assert s["allocations"] == s["frees"] and s["end_live_bytes"] == 0
    assert s["flows_created"] == s["flows_destroyed"]


# --------------------------------------------------------------------------
# Hand-made captures

def mac_ip_tcp(src: int, dst: int, sport: int, dport: int, payload: bytes, flags: int = 0x18,
               pad_to: int = 0) -> bytes:
    """An Ethernet + IPv4 + TCP frame (checksums left 0: nothing verifies them)."""
    tcp = struct.pack(">HHIIBBHHH", sport, dport, 1, 1, 5 << 4, flags, 65535, 0, 0)
    ip = struct.pack(">BBHHHBBH4s4s", 0x45, 0, 20 + len(tcp) + len(payload), 0, 0x4000, 64, 6, 0,
                     src.to_bytes(4, "big"), dst.to_bytes(4, "big"))
    frame = b"\x02\0\0\0\0\x01\x02\0\0\0\0\x02\x08\x00" + ip + tcp + payload
    return frame + b"\0" * max(0, pad_to - len(frame))


def write_pcap(path: Path, packets: list[tuple[int, bytes]], *, linktype: int = 1) -> Path:
    """packets: (time in microseconds, frame)."""
    out = [struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, linktype)]
    for t, frame in packets:
        out.append(struct.pack("<IIII", t // 1_000_000, t % 1_000_000, len(frame), len(frame)) + frame)
    path.write_bytes(b"".join(out))
    return path


def data_frame(flow: int, n: int, size: int = 1514) -> bytes:
    """A frame of *size* bytes on flow *flow* whose payload spells its number n."""
    payload = bytes((n * 7 + k) & 0xFF for k in range(size - 54))
    return mac_ip_tcp(0x0A000001 + flow, 0xC0A80001, 1000 + flow, 80, payload)


# --------------------------------------------------------------------------
# Real captures

@needs_pcaps
@pytest.mark.parametrize("app", APPS)
@pytest.mark.parametrize("pcap", [HTTP, NB6], ids=["http", "nb6-http"])
def test_real_capture_is_deterministic_and_verified(exe, tmp_path, app, pcap):
    a = run_json(exe, app, "--pcap", pcap, "--repeat", 5, "--emit-trace", tmp_path / "a.hkb")
    b = run_json(exe, app, "--pcap", pcap, "--repeat", 5, "--emit-trace", tmp_path / "b.hkb")
    healthy(a)
    a.pop("trace"), b.pop("trace")
    assert a == b
    assert (tmp_path / "a.hkb").read_bytes() == (tmp_path / "b.hkb").read_bytes()
    single = run_json(exe, app, "--pcap", pcap)
    assert a["packets"] == 5 * single["packets"] and a["bytes"] == 5 * single["bytes"]
    assert a["drops"] == 0 and a["alloc_failures"] == 0
    assert a["trace_records"] == 2 * a["allocations"]


@needs_pcaps
def test_repeated_copies_are_new_flows(exe, tmp_path):
    one, three = (tmp_path / "1.txt", tmp_path / "3.txt")
    # a stagger longer than the capture: copies never overlap, so only the shift tells them apart
    run_json(exe, "easyport", "--pcap", HTTP, "--departures", one)
    run_json(exe, "easyport", "--pcap", HTTP, "--repeat", 3, "--stagger", 100_000_000,
             "--departures", three)
    flows1 = {ln.split()[1] for ln in one.read_text().splitlines()}
    flows3 = {ln.split()[1] for ln in three.read_text().splitlines()}
    assert len(flows3) == 3 * len(flows1)
    lens1 = [ln.split()[2] for ln in one.read_text().splitlines()]
    assert [ln.split()[2] for ln in three.read_text().splitlines()] == lens1 * 3


@needs_pcaps
def test_url_switch_parses_the_captured_requests(exe, tmp_path):
    s = run_json(exe, "url-switch", "--pcap", HTTP, "--emit-trace", tmp_path / "u.hkb")
    healthy(s)
    # http.pcap: GET /download.html and GET /pagead/ads?... on www.ethereal.com and pagead2
    assert s["http_requests"] == 2 and s["pattern_matches"] == 2
    sizes = Trace.load(tmp_path / "u.hkb").records["size"][Trace.load(tmp_path / "u.hkb").records["op"] == ord("m")]
    assert len("/download.html") + 1 in sizes and len("GET") + 1 in sizes and len("HTTP/1.1") + 1 in sizes
    assert len("www.ethereal.com") + 1 in sizes
    assert s["small_allocations"] * 2 > s["allocations"]


# --------------------------------------------------------------------------
# Synthetic traffic

@pytest.mark.parametrize("app", APPS)
@pytest.mark.parametrize("shape", SHAPES)
def test_synthetic_shapes(exe, tmp_path, app, shape):
    spec = f"{shape},packets=6000,seed=7"
    a = run_json(exe, app, "--synthetic", spec, "--emit-trace", tmp_path / "a.hkb")
    b = run_json(exe, app, "--synthetic", spec, "--emit-trace", tmp_path / "b.hkb")
    healthy(a)
    a.pop("trace"), b.pop("trace")
    assert a == b and (tmp_path / "a.hkb").read_bytes() == (tmp_path / "b.hkb").read_bytes()
    assert a["packets"] == 6000 and a["drops"] == 0
    other = run_json(exe, app, "--synthetic", f"{shape},packets=6000,seed=8")
    assert other["peak_live_bytes"] != a["peak_live_bytes"] or other["bytes"] != a["bytes"]


def test_shapes_shape_the_backlog(exe):
    peak = {s: run_json(exe, "easyport", "--synthetic", f"{s},packets=10000")["peak_queued_bytes"]
            for s in SHAPES}
    # thin spikes of ~50 packets < plateaus of ~400 packets < fat spikes of ~500 < the ramp
    assert peak["thin-spikes"] * 4 < peak["plateau"] < peak["fat-spikes"] < peak["ramp"]
    # the ramp grows all along: its backlog is 20% of what arrived
    ramp = run_json(exe, "easyport", "--synthetic", "ramp,packets=10000")
    assert 0.15 < ramp["peak_queued_bytes"] / ramp["bytes"] < 0.25


@pytest.mark.parametrize("modes", [30, 50, 70])
def test_synthetic_sizes_are_bimodal(exe, tmp_path, modes):
    log = tmp_path / "d.txt"
    run_json(exe, "easyport", "--synthetic", f"plateau,packets=20000,modes={modes}", "--departures", log)
    sizes = np.array([int(ln.split()[2]) for ln in log.read_text().splitlines()])
    ack = np.count_nonzero((sizes >= 54) & (sizes <= 66))
    mtu = np.count_nonzero((sizes >= 1500) & (sizes <= 1514))
    # the mix applies to a connection's packets between its request and its FIN: about 40 of
    # its 43 (flowlen 40); its SYN and FIN sit at the ACK mode too
    assert 0.88 < mtu / len(sizes) / (modes / 200) < 1.0
    assert abs((ack + mtu) / len(sizes) - modes / 100) < 0.06
    mid = sizes[(sizes > 66) & (sizes < 1500)]
    hist, _ = np.histogram(mid, bins=8, range=(67, 1500))
    assert hist.min() > 0.6 * hist.mean()          # an even spread between the modes


def test_synthetic_flows_and_requests(exe):
    s = run_json(exe, "url-switch", "--synthetic", "ramp,packets=5000,flows=16")
    healthy(s)
    assert s["peak_flows"] == 16                     # every open connection is tracked
    assert s["http_requests"] >= s["flows_created"] - 16
    routes = s["packets_per_route"]
    assert len(routes) == 16 and sum(1 for r in routes if r) >= 8          # the URLs spread over the pattern routes


# --------------------------------------------------------------------------
# Traces replayed by the engine

@needs_pcaps
@pytest.mark.parametrize("app", APPS)
@pytest.mark.parametrize("source", ["pcap", "synthetic"])
def test_trace_replays_identically(exe, replayer, tmp_path, app, source):
    trace = tmp_path / "t.hkb"
    inp = ["--pcap", NB6, "--repeat", 20] if source == "pcap" else ["--synthetic", "fat-spikes,packets=5000"]
    for alloc in ("tlsf", "seqfit-first"):
        s = run_json(exe, app, *inp, "--allocator", alloc, "--arena", "1M", "--emit-trace", trace)
        healthy(s)
        res = engine.replay(trace, alloc, arena=1 << 20, series=0, timing=False, binary=replayer)
        assert res["trace"]["peak_live_requested"] == s["peak_live_bytes"]
        assert res["trace"]["records"] == s["trace_records"]
        assert res["trace"]["peak_live_blocks"] == s["peak_live_blocks"]
        r = res["replay"]
        assert r["failures"]["total"] == 0 and r["errors"]["corrupt_blocks"] == 0
        assert r["memory"]["peak_live_requested"] == s["peak_live_bytes"]
        # the same allocator in the same arena makes the same decisions
        assert r["memory"]["peak_live_granted"] == s["peak_live_granted"]


def test_refused_allocations_are_drops_not_records(exe, replayer, tmp_path):
    trace = tmp_path / "t.hkb"
    s = run_json(exe, "drr", "--synthetic", "ramp,packets=4000", "--arena", "200K", "--emit-trace", trace)
    healthy(s)
    assert s["drops"] > 0 and s["alloc_failures"] >= s["drops"]
    res = engine.replay(trace, "tlsf", arena=200 * 1024, series=0, timing=False, binary=replayer)
    assert res["replay"]["failures"]["total"] == 0
    assert res["trace"]["ops"]["malloc"] == s["allocations"]


# --------------------------------------------------------------------------
# DRR

def drr_reference(arrivals, rate, quantum):
    """The driver of main.c with textbook DRR: [(start_ns, flow, len)] of the departures."""
    active, queues, deficit, credited = [], {}, {}, {}
    out, link_free, queued = [], 0, 0

    def depart():
        while active:
            f = active[0]
            if not credited[f]:
                deficit[f] += quantum
                credited[f] = True
            if queues[f][0] <= deficit[f]:
                size = queues[f].pop(0)
                deficit[f] -= size
                if not queues[f]:
                    active.pop(0)
                    del queues[f]
                return f, size
            credited[f] = False
            active.append(active.pop(0))
        return None

    def drain(t):
        nonlocal link_free, queued
        while queued and link_free <= t:
            f, size = depart()
            out.append((link_free, f, size))
            queued -= 1
            link_free += (size * 10**9 + rate - 1) // rate

    for t, f, size in arrivals:
        drain(t)
        if queued == 0 and link_free < t:
            link_free = t
        if f not in queues:
            queues[f], deficit[f], credited[f] = [], 0, False
            active.append(f)
        queues[f].append(size)
        queued += 1
    drain(float("inf"))
    return out


@pytest.mark.parametrize("quantum", [QUANTUM, 1514, 3000])
def test_drr_matches_the_reference_scheduler(exe, tmp_path, quantum):
    # three flows: a long MTU burst, a burst of mixed sizes, then ACK-sized packets
    arrivals = []
    sizes = {0: [1514] * 40, 1: [700, 1514, 90, 1200, 1514, 64] * 6, 2: [60] * 50}
    for i in range(50):
        for f in (0, 1, 2):
            if i < len(sizes[f]):
                arrivals.append((i * 10, f, sizes[f][i]))
    frames = [(t, data_frame(f, n, size)) for n, (t, f, size) in enumerate(arrivals)]
    pcap = write_pcap(tmp_path / "drr.pcap", frames)
    log = tmp_path / "dep.txt"
    rate = 1_000_000
    s = run_json(exe, "drr", "--pcap", pcap, "--rate", rate, "--quantum", quantum, "--departures", log)
    healthy(s)
    got = [ln.split() for ln in log.read_text().splitlines()]
    want = drr_reference([(t * 1000, f, size) for t, f, size in arrivals], rate, quantum)
    labels: dict[str, int] = {}
    for (t, h, size), (wt, wf, wsize) in zip(got, want):
        assert labels.setdefault(h, wf) == wf
        assert (int(t), int(size)) == (wt, wsize)
    assert len(got) == len(want) == len(arrivals)
    if quantum == QUANTUM:
        # runs of one flow while another is backlogged (the last run is flow 0 alone):
        # never more than the quantum plus the carried deficit
        runs, last = [], None
        for _, h, size in got:
            if h != last:
                runs.append(0)
                last = h
            runs[-1] += int(size)
        assert max(runs[:-1]) <= QUANTUM + 1514 and max(runs[:-1]) > 1514 * 5


def test_drr_flows_are_created_and_destroyed_on_demand(exe, tmp_path):
    # flow 0, then 1, then 2, then 0 again, each drained before the next arrives
    spaced = [(k * 1_000_000, data_frame(f, k, 600)) for k, f in enumerate([0, 1, 2, 0])]
    s = run_json(exe, "drr", "--pcap", write_pcap(tmp_path / "a.pcap", spaced), "--rate", 1_000_000)
    healthy(s)
    assert s["flows_created"] == 4 and s["peak_flows"] == 1
    # at once (after flow 9, which the idle link takes as the next packet arrives): three
    # queues live together, flow 0's second packet joins its queue
    burst = [(0, data_frame(f, k, 600)) for k, f in enumerate([9, 0, 1, 2, 0])]
    s = run_json(exe, "drr", "--pcap", write_pcap(tmp_path / "b.pcap", burst), "--rate", 1_000_000)
    healthy(s)
    assert s["flows_created"] == 4 and s["peak_flows"] == 3


def test_drr_allocates_payload_plus_16(exe, tmp_path):
    frames = [(0, data_frame(0, 0, 1514)), (0, mac_ip_tcp(1, 2, 3, 4, b"", 0x10, pad_to=60)),
              (0, data_frame(1, 1, 300))]
    trace = tmp_path / "t.hkb"
    run_json(exe, "drr", "--pcap", write_pcap(tmp_path / "p.pcap", frames), "--emit-trace", trace)
    recs = Trace.load(trace).records
    sizes = Counter(int(x) for x in recs["size"][recs["op"] == ord("m")])
    # 1460 + 16 and 0 + 16 (the seed's dedicated lists), 246 + 16; the table and 3 flow nodes
    assert sizes[1476] == 1 and sizes[16] == 1 and sizes[262] == 1
    assert sum(sizes.values()) == 3 + 1 + 3


def ipv4(proto: int, l4: bytes, *, options: bytes = b"", src: int = 0x0A000001, dst: int = 0x0A000002) -> bytes:
    ihl = (20 + len(options)) // 4
    return struct.pack(">BBHHHBBH4s4s", 0x40 | ihl, 0, ihl * 4 + len(l4), 0, 0, 64, proto, 0,
                       src.to_bytes(4, "big"), dst.to_bytes(4, "big")) + options + l4


def tcp(payload: bytes, sport: int = 1234, dport: int = 80) -> bytes:
    return struct.pack(">HHIIBBHHH", sport, dport, 1, 1, 5 << 4, 0x18, 65535, 0, 0) + payload


def eth(ethertype: int, body: bytes, tags: bytes = b"") -> bytes:
    return b"\x02\0\0\0\0\x01\x02\0\0\0\0\x02" + tags + struct.pack(">H", ethertype) + body


def test_link_and_network_layers_are_parsed(exe, tmp_path):
    """DRR allocates payload + 16: the sizes in its trace show what the parser found."""
    def body(n):
        return bytes(range(n))
    udp = struct.pack(">HHHH", 53, 53, 8 + 103, 0) + body(103)
    ipv6 = struct.pack(">IHBB16s16s", 6 << 28, 8 + 20 + 104, 0, 64, b"\x20" * 16, b"\x21" * 16) + \
        bytes([6, 0, 1, 4, 0, 0, 0, 0]) + tcp(body(104))        # a hop-by-hop header first
    frames = [
        eth(0x0800, ipv4(6, tcp(body(100)))),
        eth(0x0800, ipv4(6, tcp(body(101))), tags=bytes.fromhex("8100 0064")[:2] + b"\0\x64"),
        eth(0x0800, ipv4(6, tcp(body(102))), tags=bytes.fromhex("88a8000a810000 64".replace(" ", ""))),
        eth(0x0800, ipv4(17, udp)),
        eth(0x86DD, ipv6),
        eth(0x8864, bytes.fromhex("1100 0001") + struct.pack(">HH", 2 + 20 + 20 + 105, 0x0021)
            + ipv4(6, tcp(body(105)))),
        eth(0x0800, ipv4(6, tcp(body(106)), options=b"\x01\x01\x01\x00")),
        eth(0x0800, ipv4(6, tcp(body(107)))) + b"\0" * 9,       # trailer beyond the IP length
        eth(0x0806, body(28)),                                  # ARP: no IP, the rest is payload
    ]
    trace = tmp_path / "t.hkb"
    run_json(exe, "drr", "--pcap", write_pcap(tmp_path / "l.pcap", [(k, f) for k, f in enumerate(frames)]),
             "--emit-trace", trace)
    recs = Trace.load(trace).records
    sizes = Counter(int(x) for x in recs["size"][recs["op"] == ord("m")])
    for n in (100, 101, 102, 103, 104, 105, 106, 107, 28):
        assert sizes[n + 16] == 1, (n, sorted(sizes))
    # raw IP and Linux cooked captures
    raw = write_pcap(tmp_path / "raw.pcap", [(0, ipv4(6, tcp(body(110))))], linktype=101)
    sll = write_pcap(tmp_path / "sll.pcap", [(0, b"\0" * 14 + b"\x08\x00" + ipv4(6, tcp(body(111))))],
                     linktype=113)
    for path, n in ((raw, 110), (sll, 111)):
        run_json(exe, "drr", "--pcap", path, "--emit-trace", trace)
        recs = Trace.load(trace).records
        assert n + 16 in recs["size"][recs["op"] == ord("m")]


def test_truncated_packets_keep_their_wire_length(exe, tmp_path):
    frame = eth(0x0800, ipv4(6, tcp(bytes(1400))))
    cut = struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 96, 1) + \
        struct.pack("<IIII", 0, 0, 96, len(frame)) + frame[:96]
    path = tmp_path / "cut.pcap"
    path.write_bytes(cut)
    log, trace = tmp_path / "d.txt", tmp_path / "t.hkb"
    s = run_json(exe, "drr", "--pcap", path, "--departures", log, "--emit-trace", trace)
    healthy(s)
    assert log.read_text().split()[2] == str(len(frame))        # the link sends the wire length
    recs = Trace.load(trace).records
    # the application received the whole frame: DRR stores its whole payload
    assert 1400 + 16 in recs["size"][recs["op"] == ord("m")]
    assert 96 - 54 + 16 not in recs["size"][recs["op"] == ord("m")]


# --------------------------------------------------------------------------
# url-switch and easyport on hand-made traffic

def test_url_switch_routes_connections_by_pattern(exe, tmp_path):
    cli_ip, srv_ip = 0x0A000005, 0xC0A80009
    req = b"GET /images/cats/tabby-42.jpg HTTP/1.1\r\nUser-Agent: t\r\nHost:  WWW.Foo-Bar.Test \r\n\r\n"
    frames = [
        (0, mac_ip_tcp(cli_ip, srv_ip, 4000, 80, b"", 0x02, pad_to=60)),          # SYN
        (10, mac_ip_tcp(cli_ip, srv_ip, 4000, 80, req)),                           # request
        (20, mac_ip_tcp(srv_ip, cli_ip, 80, 4000, b"x" * 1000)),                   # response
        (30, mac_ip_tcp(cli_ip, srv_ip, 4000, 80, b"", 0x11, pad_to=60)),          # FIN
        (40, mac_ip_tcp(srv_ip, cli_ip, 80, 4000, b"", 0x10, pad_to=60)),          # after the close
        (50, mac_ip_tcp(cli_ip, srv_ip, 4001, 80, b"POST /nothing HTTP/1.0\r\n\r\n")),
    ]
    trace = tmp_path / "u.hkb"
    s = run_json(exe, "url-switch", "--pcap", write_pcap(tmp_path / "u.pcap", frames), "--emit-trace", trace)
    healthy(s)
    routes = s["packets_per_route"]
    # SYN: route 0 (not bound yet); request, response, FIN: route 1 (/images/);
    # the late ACK and the unmatched POST: route 0
    assert routes[1] == 3 and routes[0] == 3 and sum(routes) == 6
    assert s["http_requests"] == 2 and s["pattern_matches"] == 1
    assert s["flows_created"] == 2
    recs = Trace.load(trace).records
    sizes = Counter(int(x) for x in recs["size"][recs["op"] == ord("m")])
    # lengths no pattern string or structure shares
    assert sizes[len("/images/cats/tabby-42.jpg") + 1] == 1 and sizes[len("www.foo-bar.test") + 1] == 1
    assert sizes[20] == 6 + 6   # six IPv4 headers, six TCP headers (both 20 bytes)


def test_easyport_buffers_whole_frames_in_order(exe, tmp_path):
    frames = [(k, data_frame(k % 3, k, 60 + 97 * k)) for k in range(15)]
    trace, log = tmp_path / "e.hkb", tmp_path / "d.txt"
    s = run_json(exe, "easyport", "--pcap", write_pcap(tmp_path / "e.pcap", frames), "--rate", 1000,
                 "--emit-trace", trace, "--departures", log)
    healthy(s)
    assert [int(ln.split()[2]) for ln in log.read_text().splitlines()] == [len(f) for _, f in frames]
    recs = Trace.load(trace).records
    assert [int(x) for x in recs["size"][recs["op"] == ord("m")]] == [len(f) for _, f in frames]
    assert s["peak_live_blocks"] == 14     # the slow link lets all but the first pile up


# --------------------------------------------------------------------------
# Bad input

def one_line_error(proc: subprocess.CompletedProcess, *needles: str) -> str:
    assert proc.returncode == 2, proc
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    for n in needles:
        assert n in lines[0], lines[0]
    assert proc.stdout == ""
    return lines[0]


def test_malformed_captures(exe, tmp_path):
    junk = tmp_path / "junk.pcap"
    junk.write_bytes(b"this is not a capture at all" * 4)
    one_line_error(run_raw(exe, "drr", "--pcap", junk), str(junk), "not a readable pcap")
    good = write_pcap(tmp_path / "g.pcap", [(0, data_frame(0, 0, 1514)), (5, data_frame(0, 1, 1514))])
    cut = tmp_path / "cut.pcap"
    cut.write_bytes(good.read_bytes()[:-700])
    trace = tmp_path / "t.hkb"
    trace.write_bytes(b"keep me")
    one_line_error(run_raw(exe, "easyport", "--pcap", cut, "--emit-trace", trace), str(cut), "malformed")
    assert trace.read_bytes() == b"keep me"               # nothing lost
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cut.pcap", "g.pcap", "junk.pcap", "t.hkb"]
    empty = write_pcap(tmp_path / "empty.pcap", [])
    one_line_error(run_raw(exe, "drr", "--pcap", empty), str(empty), "no packet")
    one_line_error(run_raw(exe, "drr", "--pcap", tmp_path / "missing.pcap"), "missing.pcap",
                   "No such file")
    odd = write_pcap(tmp_path / "odd.pcap", [(0, b"\0" * 40)], linktype=147)
    one_line_error(run_raw(exe, "drr", "--pcap", odd), str(odd), "link type 147")


@pytest.mark.parametrize("args,needle", [
    ([], "give the application"),
    (["ftp", "--synthetic", "ramp"], "unknown application 'ftp'"),
    (["drr"], "exactly one input"),
    (["drr", "--synthetic", "ramp", "--pcap", "x"], "exactly one input"),
    (["drr", "--synthetic", "sawtooth"], "unknown shape 'sawtooth'"),
    (["drr", "--synthetic", "ramp,speed=3"], "unknown key 'speed'"),
    (["drr", "--synthetic", "ramp,packets=0"], "packets=0 out of range"),
    (["drr", "--synthetic", "ramp,seed=-1"], "seed: not a number"),
    (["drr", "--synthetic", "ramp", "--repeat", "2"], "--pcap only"),
    (["drr", "--synthetic", "ramp", "--allocator", "nosuch"], "no catalog entry named 'nosuch'"),
    (["drr", "--synthetic", "ramp", "--arena", "12Q"], "--arena: not a number: '12Q'"),
    (["drr", "--synthetic", "ramp", "--arena", "100"], "--arena: 100 is out of range"),
    (["drr", "--synthetic", "ramp", "--arena", "2K"], "cannot hold DRR's flow table"),
    (["url-switch", "--synthetic", "ramp", "--arena", "2K"], "cannot hold the url-switch pattern table"),
    (["drr", "--synthetic", "ramp", "--rate", "5", "--load", "90"], "not both"),
    (["drr", "--synthetic", "ramp", "--quantum", "0"], "--quantum: 0 is out of range"),
    (["drr", "--synthetic", "ramp", "--bogus"], "unknown option '--bogus'"),
    (["drr", "--synthetic"], "needs a value"),
    (["drr", "extra", "--synthetic", "ramp"], "unexpected argument 'extra'"),
])
def test_bad_arguments(exe, args, needle):
    one_line_error(run_raw(exe, *args), needle)


def test_unwritable_outputs(exe, tmp_path):
    missing = tmp_path / "no" / "t.hkb"
    one_line_error(run_raw(exe, "drr", "--synthetic", "ramp,packets=10", "--emit-trace", missing),
                   str(missing), "cannot write")
    missing = tmp_path / "no" / "d.txt"
    one_line_error(run_raw(exe, "drr", "--synthetic", "ramp,packets=10", "--departures", missing),
                   str(missing), "cannot write")
    for opt in ("--emit-trace", "--json"):
        one_line_error(run_raw(exe, "drr", "--synthetic", "ramp,packets=10", opt, tmp_path),
                       str(tmp_path), "Is a directory")
        one_line_error(run_raw(exe, "drr", "--synthetic", "ramp,packets=10", opt, missing),
                       str(missing), "cannot write")
    assert list(tmp_path.iterdir()) == []


# --------------------------------------------------------------------------
# Python side and `heapkit netapp`

def test_run_and_errors_from_python(exe, tmp_path):
    s = netapps.run("drr", synthetic="thin-spikes,packets=500", allocator="buddy", binary=exe)
    assert s["allocator"] == "buddy" and s["packets"] == 500
    with pytest.raises(NetappError, match="unknown shape"):
        netapps.run("drr", synthetic="zigzag", binary=exe)


@needs_pcaps
def test_default_traces(exe, replayer, tmp_path):
    paths = netapps.default_traces(out_dir=tmp_path, binary=exe)
    assert set(paths) == set(APPS)
    for app, path in paths.items():
        assert path == tmp_path / f"{app}.hkb"
        t = Trace.load(path)
        assert len(t) > 5000 and t.stats() is not None
        res = engine.replay(path, "tlsf", series=0, timing=False, binary=replayer)
        assert res["replay"]["failures"]["total"] == 0
    before = paths["drr"].stat().st_mtime_ns
    assert netapps.default_trace("drr", out_dir=tmp_path, binary=exe).stat().st_mtime_ns == before
    args = netapps.default_command("url-switch")
    assert args[:2] == ["url-switch", "--pcap"] and "--repeat" in args


@needs_pcaps
def test_cli_netapp(exe, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("HEAPKIT_NETAPP", str(exe))
    out = tmp_path / "s.json"
    assert cli.main(["netapp", "easyport", "--pcap", str(HTTP), "--json", str(out),
                     "--emit-trace", str(tmp_path / "e.hkt")]) == 0
    text = capsys.readouterr().out
    assert "peak_live_bytes" in text and "easyport" in text
    s = json.loads(out.read_text())
    assert s["packets"] == 43 and s["trace"] == str(tmp_path / "e.hkt")
    assert len(Trace.load(tmp_path / "e.hkt")) == s["trace_records"]
    assert cli.main(["netapp", "url-switch", "--synthetic", "ramp,packets=300", "--json", "-"]) == 0
    assert json.loads(capsys.readouterr().out)["app"] == "url-switch"
    assert cli.main(["netapp", "easyport", "--json", "-"]) == 0      # the default input
    s = json.loads(capsys.readouterr().out)
    assert s["packets"] == 43 * netapps.DEFAULT_INPUTS["easyport"][1] and "http.pcap x100" in s["input"]
    assert cli.main(["netapp", "drr", "--pcap", str(tmp_path / "none.pcap")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("heapkit: error: ") and "none.pcap" in err and "\n" not in err
    assert cli.main(["netapp", "drr", "--synthetic", "ramp", "--pcap", str(HTTP)]) == 2
    capsys.readouterr()
    assert cli.main(["netapp", "--default-traces", "--out-dir", str(tmp_path / "d")]) == 0
    assert {p.name for p in (tmp_path / "d").iterdir()} == {f"{a}.hkb" for a in APPS}


# --------------------------------------------------------------------------
# heapkit's own captures (data/captures, tools/record_captures.sh)

def test_recorded_captures_are_decompressed_into_the_cache(tmp_path, monkeypatch):
    import lzma

    from heapkit import native
    monkeypatch.setattr(native, "CACHE_DIR", tmp_path / "cache")
    src = tmp_path / "captures"
    src.mkdir()
    one = write_pcap(tmp_path / "one.pcap", [(0, eth(0x0800, ipv4(6, tcp(bytes(100)))))])
    pcap = write_pcap(tmp_path / "x.pcap", [(0, eth(0x0800, ipv4(6, tcp(bytes(100))))),
                                            (1, eth(0x0800, ipv4(6, tcp(bytes(7)))))])
    (src / "x.pcap.xz").write_bytes(lzma.compress(pcap.read_bytes()))
    got = netapps.recorded_captures(src)
    assert got == {"x.pcap": tmp_path / "cache" / "captures" / "x.pcap"}
    assert got["x.pcap"].read_bytes() == pcap.read_bytes()
    first = netapps.recorded_captures(src, packets=1)["x.pcap"]     # --quick's prefix
    assert first.name == "x-1.pcap" and first.read_bytes() == one.read_bytes()
    assert netapps.recorded_captures(tmp_path / "nothing") == {}
    (src / "bad.pcap.xz").write_bytes(b"not xz")
    with pytest.raises(NetappError, match=r"bad\.pcap\.xz: not a readable xz file"):
        netapps.recorded_captures(src)


@pytest.mark.skipif(netapps.CAPTURES_DIR is None, reason="an installed lab has no data/captures")
def test_committed_captures_replay_whole(exe, tmp_path):
    """Each committed capture: 50,000 packets cut at their headers, handed to the
    applications at their Ethernet wire lengths (at most 1514 bytes: MTU 1500)."""
    caps = netapps.recorded_captures()
    assert set(caps) == {"http.pcap", "mix.pcap"}
    for name, path in caps.items():
        trace = tmp_path / f"{name}.hkb"
        s = run_json(exe, "easyport", "--pcap", path, "--emit-trace", trace)
        healthy(s)
        assert s["packets"] == 50_000, name
        recs = Trace.load(trace).records
        sizes = recs["size"][recs["op"] == ord("m")]
        assert sizes.max() == 1514 and Counter(sizes.tolist()).most_common(1)[0][0] == 66
        assert s["bytes"] > 3 * path.stat().st_size           # the payloads were cut away


@pytest.mark.skipif(netapps.CAPTURES_DIR is None, reason="tools/ is in a checkout only")
def test_trim_pcap_keeps_headers_and_requests(tmp_path):
    tool = netapps.CAPTURES_DIR.parents[1] / "tools" / "trim_pcap.py"
    req = eth(0x0800, ipv4(6, tcp(b"GET /a HTTP/1.1\r\n\r\n", 40000, 8080)))
    data = eth(0x0800, ipv4(6, tcp(bytes(1400), 8080, 40000)))
    udp = eth(0x0800, ipv4(17, struct.pack(">HHHH", 1, 514, 208, 0) + bytes(200)))
    src = write_pcap(tmp_path / "in.pcap", [(0, req), (1, data), (2, udp)])
    out = tmp_path / "out.pcap"
    subprocess.run([sys.executable, str(tool), "--keep-payload-to", "8080", str(src), str(out)],
                   check=True, capture_output=True)
    raw, off, got = out.read_bytes(), 24, []
    while off < len(raw):
        _, _, caplen, wire = struct.unpack_from("<IIII", raw, off)
        got.append((caplen, wire))
        off += 16 + caplen
    assert got == [(len(req), len(req)), (14 + 20 + 20, len(data)), (14 + 20 + 8, len(udp))]
    (tmp_path / "bad.pcap").write_bytes(b"x" * 30)
    bad = subprocess.run([sys.executable, str(tool), str(tmp_path / "bad.pcap"), str(out)],
                         capture_output=True, text=True)
    assert bad.returncode == 2 and "not a little-endian pcap file" in bad.stderr
