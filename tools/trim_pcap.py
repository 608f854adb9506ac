#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Cut a pcap's packets to their headers (tools/record_captures.sh uses it).

    tools/trim_pcap.py [--keep-payload-to PORT,...] IN.pcap OUT.pcap

Each Ethernet/IPv4 packet keeps its Ethernet, IP and TCP/UDP headers (ICMP: 8 bytes);
a TCP packet sent to one of the PORTs also keeps its payload (the HTTP requests). Other
bytes are dropped; every record keeps its original (wire) length, as a snaplen would.
"""

from __future__ import annotations

import argparse
import struct
import sys

MAGIC_US, MAGIC_NS = 0xA1B2C3D4, 0xA1B23C4D
LINKTYPE_ETHERNET = 1


def fail(msg: str) -> None:
    print(f"trim_pcap: {msg}", file=sys.stderr)
    sys.exit(2)


def header_bytes(frame: bytes, keep_ports: set[int]) -> int:
    """How many leading bytes of *frame* to keep."""
    if len(frame) < 34 or frame[12:14] != b"\x08\x00" or frame[14] >> 4 != 4:
        return min(len(frame), 64)
    ihl = (frame[14] & 0xF) * 4
    l4 = 14 + ihl
    proto = frame[23]
    if proto == 6 and len(frame) >= l4 + 20:
        doff = (frame[l4 + 12] >> 4) * 4
        dport = struct.unpack_from(">H", frame, l4 + 2)[0]
        return len(frame) if dport in keep_ports else min(len(frame), l4 + doff)
    if proto == 17:
        return min(len(frame), l4 + 8)
    if proto == 1:
        return min(len(frame), l4 + 8)
    return min(len(frame), l4)


def trim(src: str, dst: str, keep_ports: set[int]) -> int:
    with open(src, "rb") as f:
        data = f.read()
    if len(data) < 24:
        fail(f"{src}: not a pcap file (too short)")
    magic, = struct.unpack_from("<I", data, 0)
    if magic not in (MAGIC_US, MAGIC_NS):
        fail(f"{src}: not a little-endian pcap file (magic {magic:#x})")
    linktype, = struct.unpack_from("<I", data, 20)
    if linktype != LINKTYPE_ETHERNET:
        fail(f"{src}: link type {linktype}, expected Ethernet (1)")
    out = [data[:16] + struct.pack("<II", 65535, linktype)]
    off, n = 24, 0
    while off < len(data):
        if off + 16 > len(data):
            fail(f"{src}: record {n + 1}: truncated header")
        sec, frac, caplen, wire = struct.unpack_from("<IIII", data, off)
        frame = data[off + 16:off + 16 + caplen]
        if len(frame) != caplen:
            fail(f"{src}: record {n + 1}: truncated packet")
        keep = header_bytes(frame, keep_ports)
        out.append(struct.pack("<IIII", sec, frac, keep, wire) + frame[:keep])
        off += 16 + caplen
        n += 1
    with open(dst, "wb") as f:
        f.write(b"".join(out))
    return n


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--keep-payload-to", default="", metavar="PORT,...")
    ap.add_argument("src")
    ap.add_argument("dst")
    a = ap.parse_args(argv)
    ports = {int(p) for p in a.keep_payload_to.split(",") if p}
    n = trim(a.src, a.dst, ports)
    print(f"trim_pcap: {n} packets -> {a.dst}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
