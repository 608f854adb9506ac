# SPDX-License-Identifier: MIT
"""The network case studies (lab/netapps/, the ``hk-netapp`` binary) from Python.

Three applications of the custom-dmm-network seed, Section 6, run on a
packet capture or on the synthetic traffic model against any catalog
allocator: ``drr`` (Deficit Round Robin, per-flow queues, quantum 9 KB),
``easyport`` (FIFO frame buffering) and ``url-switch`` (URL-based switching,
small header allocations)::

    from heapkit import netapps
    s = netapps.run("drr", pcap="x.pcap", repeat=10, allocator="tlsf")
    s["peak_live_bytes"], s["drops"], s["corruptions"]
    netapps.run("url-switch", synthetic="plateau,seed=3", emit_trace="u.hkb")
    netapps.default_trace("drr")        # Path of the default .hkb, built if missing
    netapps.default_traces()            # {"drr": Path, "easyport": Path, "url-switch": Path}

Default traces: each application on a real capture from Debian's
python3-dpkt (REFERENCE.md), replayed N times with shifted flows and
timestamps (see lab/netapps/source.c), the link at 100% of the mean input
rate. They are written to netapps/ in the lab's cache (build/ in a
checkout, see :mod:`heapkit.native`) and rebuilt when missing or older than
the binary (the run is deterministic, so a rebuild gives the same bytes
unless the application changed).

heapkit's own recordings (data/captures/ in a checkout, tools/record_captures.sh):
:func:`recorded_captures` gives them decompressed in the lab's cache; the
custom-dmm-network section of ``heapkit demo`` runs the applications on them.

Where the binary comes from: ``$HEAPKIT_NETAPP`` if set, else the installed
one, else the build tree's ``lab/netapps/hk-netapp``, built with CMake when
missing. The captures' directory: ``$HEAPKIT_PCAP_DIR`` if set, else
python3-dpkt's.
"""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
from pathlib import Path
from typing import Any, Callable

from . import native
from . import progress as _progress
from .cliargs import ListAction, byte_size, positive_int
from .errors import HeapkitError

__all__ = [
    "APPS", "SHAPES", "DEFAULT_INPUTS", "NetappError", "binary_path", "find_binary", "pcap_dir",
    "run", "default_trace", "default_traces", "default_command", "CAPTURES_DIR", "recorded_captures",
]

APPS = ("drr", "easyport", "url-switch")
SHAPES = ("thin-spikes", "fat-spikes", "plateau", "ramp")
TARGET = "hk-netapp"
ENV_BINARY = "HEAPKIT_NETAPP"
ENV_PCAP_DIR = "HEAPKIT_PCAP_DIR"
DPKT_PCAP_DIR = Path("/usr/share/doc/python3-dpkt/examples/data")
TRACE_DIR = native.CACHE_DIR / "netapps"
# heapkit's own captures (data/captures/PROVENANCE.md); an installed lab has none.
CAPTURES_DIR = None if native.CHECKOUT is None else native.CHECKOUT / "data" / "captures"

# app -> (capture in the pcap directory, copies). Sizes as in the seed's
# runs where they are small enough for an exploration of 10,000
# configurations: easyport 4,300 packets (the seed: 4,200); DRR and
# url-switch about 10,000 (the seed: 50,000).
DEFAULT_INPUTS: dict[str, tuple[str, int]] = {
    "drr": ("http.pcap", 250),
    "easyport": ("http.pcap", 100),
    "url-switch": ("nb6-http.pcap", 160),
}


class NetappError(HeapkitError):
    """hk-netapp refused its input or failed; ``str(e)`` is its one-line message."""


def binary_path() -> Path:
    """Where hk-netapp is installed or built (it may not exist yet)."""
    return native.path(TARGET)


def find_binary() -> Path:
    """``$HEAPKIT_NETAPP``, else the installed hk-netapp or the build tree's, built if missing."""
    try:
        return native.find(ENV_BINARY, TARGET)
    except HeapkitError as e:
        raise NetappError(str(e)) from None


def pcap_dir() -> Path:
    """The directory of the real captures (python3-dpkt's unless ``$HEAPKIT_PCAP_DIR``)."""
    return Path(os.environ.get(ENV_PCAP_DIR) or DPKT_PCAP_DIR)


def recorded_captures(directory: str | os.PathLike | None = None,
                      packets: int | None = None) -> dict[str, Path]:
    """heapkit's recorded captures (``NAME.pcap.xz`` in *directory*, default
    :data:`CAPTURES_DIR`): name -> the pcap decompressed into the lab's cache (redone when
    the .xz is newer), only its first *packets* packets when given. Empty when there are none."""
    import lzma
    src = Path(directory) if directory is not None else CAPTURES_DIR
    if src is None or not src.is_dir():
        return {}
    out = {}
    for xz in sorted(src.glob("*.pcap.xz")):
        name = xz.name.removesuffix(".xz")
        dst = native.CACHE_DIR / "captures" / (name if packets is None else f"{Path(name).stem}-{packets}.pcap")
        if not dst.is_file() or dst.stat().st_mtime_ns < xz.stat().st_mtime_ns:
            dst.parent.mkdir(parents=True, exist_ok=True)
            tmp = dst.with_suffix(".part")
            try:
                with lzma.open(xz) as f:
                    data = f.read()
            except (lzma.LZMAError, EOFError) as e:
                raise NetappError(f"{xz}: not a readable xz file ({e})") from None
            tmp.write_bytes(data if packets is None else _pcap_prefix(data, packets, xz))
            tmp.replace(dst)
        out[name] = dst
    return out


def _pcap_prefix(data: bytes, packets: int, what: Path) -> bytes:
    """The pcap file *data* cut after its first *packets* records."""
    import struct
    if len(data) < 24 or data[:4] not in (b"\xd4\xc3\xb2\xa1", b"\x4d\x3c\xb2\xa1"):
        raise NetappError(f"{what}: not a little-endian pcap file")
    off = 24
    for _ in range(packets):
        if off + 16 > len(data):
            break
        off += 16 + struct.unpack_from("<I", data, off + 8)[0]
    return data[:off]


def _argv(app: str, *, pcap: str | os.PathLike | None = None, synthetic: str | None = None,
          repeat: int | None = None, stagger_us: int | None = None, allocator: str | None = None,
          arena: int | str | None = None, rate: int | None = None, load: int | None = None,
          quantum: int | None = None, emit_trace: str | os.PathLike | None = None,
          departures: str | os.PathLike | None = None) -> list[str]:
    argv = [app]
    if pcap is not None:
        argv += ["--pcap", os.fspath(pcap)]
    if synthetic is not None:
        argv += ["--synthetic", synthetic]
    for opt, value in (("--repeat", repeat), ("--stagger", stagger_us), ("--allocator", allocator),
                       ("--arena", arena), ("--rate", rate), ("--load", load),
                       ("--quantum", quantum), ("--emit-trace", emit_trace),
                       ("--departures", departures)):
        if value is not None:
            argv += [opt, os.fspath(value) if isinstance(value, os.PathLike) else str(value)]
    return argv


def run(app: str, *, binary: str | os.PathLike | None = None,
        progress: Callable[[int], None] | None = None, **options: Any) -> dict:
    """Run *app* once; hk-netapp's summary (its ``--json``) as a dict.

    options: pcap, synthetic (``SHAPE[,seed=..,packets=..,flows=..,modes=..,flowlen=..,rate=..]``),
    repeat, stagger_us, allocator, arena, rate, load, quantum, emit_trace (a .hkb path),
    departures (a file for the departure log: ``TIME_NS FLOW_HASH WIRE_LEN`` per packet).
    progress: called with the packets read so far.
    """
    exe = str(binary) if binary is not None else str(find_binary())
    full = [exe] + _argv(app, **options) + ["--json", "-"] + (["--progress"] if progress else [])
    proc = _progress.run(full, "hk-netapp: ", progress)
    if proc.returncode != 0:
        lines = [ln for ln in proc.stderr.strip().splitlines() if ln.strip()]
        if proc.returncode < 0:
            msg = f"hk-netapp died from signal {-proc.returncode} ({' '.join(full[1:])})"
        else:
            msg = lines[-1].removeprefix("hk-netapp: ") if lines else \
                f"hk-netapp exited with status {proc.returncode}"
        raise NetappError(msg)
    try:
        return json.loads(proc.stdout)
    except json.JSONDecodeError as e:
        raise NetappError(f"hk-netapp printed malformed JSON ({e})") from None


def _default_options(app: str) -> dict[str, Any]:
    if app not in DEFAULT_INPUTS:
        raise NetappError(f"unknown application {app!r} (one of: {', '.join(APPS)})")
    name, copies = DEFAULT_INPUTS[app]
    pcap = pcap_dir() / name
    if not pcap.is_file():
        raise NetappError(f"{pcap}: no such file (install the Debian package python3-dpkt, "
                          f"or point ${ENV_PCAP_DIR} at a directory holding {name})")
    return {"pcap": pcap, "repeat": copies}


def default_command(app: str) -> list[str]:
    """The hk-netapp arguments that make *app*'s default trace (without --emit-trace)."""
    return _argv(app, **_default_options(app))


def default_trace(app: str, *, out_dir: str | os.PathLike | None = None,
                  binary: str | os.PathLike | None = None) -> Path:
    """The default .hkb trace of *app* (``drr``, ``easyport`` or ``url-switch``).

    Built when missing or older than the hk-netapp binary; the path is
    ``TRACE_DIR/<app>.hkb`` unless *out_dir* is given.
    """
    options = _default_options(app)
    exe = Path(binary) if binary is not None else find_binary()
    out = Path(out_dir) if out_dir is not None else TRACE_DIR
    path = out / f"{app}.hkb"
    if path.is_file() and path.stat().st_mtime_ns >= exe.stat().st_mtime_ns:
        return path
    out.mkdir(parents=True, exist_ok=True)
    run(app, binary=exe, emit_trace=path, **options)
    return path


def default_traces(*, out_dir: str | os.PathLike | None = None,
                   binary: str | os.PathLike | None = None) -> dict[str, Path]:
    """Every application's default trace: app name -> .hkb path (built if missing)."""
    return {app: default_trace(app, out_dir=out_dir, binary=binary) for app in APPS}


# --------------------------------------------------------------------------
# `heapkit netapp`

_SUMMARY_ORDER = (
    "app", "input", "allocator", "arena", "rate", "packets", "bytes", "enqueued", "drops", "departed",
    "corruptions", "peak_queued_bytes", "flows_created", "flows_destroyed", "peak_flows",
    "http_requests", "pattern_matches", "packets_per_route", "allocations", "frees",
    "alloc_failures", "small_allocations", "peak_live_bytes", "peak_live_granted",
    "peak_live_blocks", "heap_peak_used", "heap_splits", "heap_coalesces", "heap_errors",
    "heap_check", "trace", "trace_records",
)


def _emit(summary: dict, out: str | None) -> None:
    if out is not None:
        text = json.dumps(summary, indent=2) + "\n"
        if out == "-":
            print(text, end="")
            return
        try:
            Path(out).write_text(text)
        except OSError as e:
            raise NetappError(f"{out}: cannot write: {e.strerror or e}") from None
    if out == "-":
        return
    for key in _SUMMARY_ORDER:
        if key in summary:
            value = summary[key]
            if isinstance(value, list):
                value = " ".join(map(str, value))
            print(f"{key:<20} {'-' if value is None else value}")


def run_cli(args) -> int:
    """``heapkit netapp``: run one application, or (re)build the default traces."""
    if args.default_traces:
        out_dir = Path(args.out_dir) if args.out_dir else None
        for app in APPS:
            if out_dir is None and (TRACE_DIR / f"{app}.hkb").exists():
                (TRACE_DIR / f"{app}.hkb").unlink()
            path = default_trace(app, out_dir=out_dir)
            print(f"{app:<11} {path}  (hk-netapp {' '.join(default_command(app))} --emit-trace {path})")
        return 0
    if args.app is None:
        raise NetappError("netapp: give the application (drr, easyport, url-switch) "
                          "or --default-traces")
    options: dict[str, Any] = {}
    if args.pcap is None and args.synthetic is None:
        options.update(_default_options(args.app))
    for key in ("pcap", "synthetic", "repeat", "stagger_us", "allocator", "arena", "rate", "load",
                "quantum", "departures"):
        value = getattr(args, key)
        if value is not None:
            options[key] = value
    emit = args.emit_trace
    converted = None
    if emit is not None and not str(emit).endswith(".hkb"):
        # .hkt / .hkt.gz: the binary writes .hkb, heapkit.trace converts
        fd, tmp = tempfile.mkstemp(suffix=".hkb")
        os.close(fd)
        converted, emit = emit, tmp
    try:
        with _progress.bar(desc=args.app, unit="pkt", unit_scale=True) as bar:
            summary = run(args.app, emit_trace=emit, progress=_progress.reporter(bar), **options)
        if converted is not None:
            from .trace import Trace

            Trace.load(emit).save(converted)
            summary["trace"] = converted
    finally:
        if converted is not None:
            Path(emit).unlink(missing_ok=True)
    _emit(summary, args.json)
    return 0


def add_parser(sub) -> None:
    """The ``netapp`` subcommand, for heapkit/cli.py."""
    s = sub.add_parser(
        "netapp", help="run a network case study (drr, easyport, url-switch) on a capture",
        description="Run one of the custom-dmm-network case studies (DRR scheduler, Easyport "
        "FIFO buffering, URL-based switching) on a pcap file or the synthetic traffic model, "
        "against a catalog allocator, and print its summary (packets, drops, peak live bytes, "
        "allocator figures, corruptions). Without an input it runs the application's default "
        "input (a python3-dpkt capture replayed N times). --emit-trace writes the run's "
        "allocation trace for 'heapkit bench', 'heapkit size' and 'heapkit explore'.")
    s.add_argument("app", nargs="?", choices=APPS, metavar="APP", help="drr, easyport or url-switch")
    src = s.add_mutually_exclusive_group()
    src.add_argument("--pcap", metavar="FILE", help="packet capture to feed (libpcap formats)")
    src.add_argument("--synthetic", metavar="SHAPE[,KEY=VALUE...]",
                     help="synthetic traffic: thin-spikes, fat-spikes, plateau or ramp; keys seed, "
                     "packets, flows, modes (%% of packets at the ACK/MTU modes), flowlen, rate")
    s.add_argument("--repeat", type=positive_int, metavar="N",
                   help="replay the capture N times with shifted flows and timestamps")
    s.add_argument("--stagger", dest="stagger_us", type=positive_int, metavar="US",
                   help="time shift between copies, microseconds (default: a quarter of the capture)")
    s.add_argument("--allocator", metavar="NAME", help="catalog allocator (default tlsf)")
    s.add_argument("--arena", type=byte_size, metavar="BYTES",
                   help="arena size, e.g. 64M (default 64M)")
    rate = s.add_mutually_exclusive_group()
    rate.add_argument("--rate", type=byte_size, metavar="BYTES_PER_S",
                      help="output link rate, e.g. 10M")
    rate.add_argument("--load", type=positive_int, metavar="PCT",
                      help="output link rate as the input's mean rate over PCT%% (default 100)")
    s.add_argument("--quantum", type=byte_size, metavar="BYTES", help="DRR quantum (default 9216)")
    s.add_argument("--emit-trace", metavar="OUT", help="write the allocation trace (.hkb, .hkt, .hkt.gz)")
    s.add_argument("--departures", metavar="FILE",
                   help="log every departure: TIME_NS FLOW_HASH WIRE_LEN")
    s.add_argument("--json", metavar="OUT", help="save the summary as JSON ('-': print it instead)")
    s.add_argument("--default-traces", action="store_true",
                   help="(re)build every application's default trace and print the paths")
    s.add_argument("--out-dir", metavar="DIR",
                   help="with --default-traces: where to write them (default: the lab's cache, "
                   "build/netapps in a checkout)")
    s.add_argument("--list", action=ListAction, names={"--allocator": allocators,
                                                        "--synthetic": lambda: list(SHAPES)})


def allocators() -> list[str]:
    """The catalog allocators hk-netapp runs (its --list)."""
    proc = subprocess.run([str(find_binary()), "--list"], capture_output=True, text=True)
    for line in proc.stdout.splitlines():
        if line.startswith("allocators:"):
            return line.split()[1:]
    raise NetappError(f"hk-netapp --list printed no allocators (status {proc.returncode})")
