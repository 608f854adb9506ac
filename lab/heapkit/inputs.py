# SPDX-License-Identifier: MIT
"""The traces a command runs on, as .hkb files: trace files of any supported format and
generated workloads.

Binary traces are validated and used where they are; other files (heapkit text traces,
external allocation logs) are imported, and workloads generated, into a directory the
caller owns. Names come from the file names (``sqlite.hkb`` -> ``sqlite``) and workload
names, made unique with ``#2``, ``#3``...
"""

from __future__ import annotations

import os
import struct
from pathlib import Path
from typing import Sequence

from .importers import import_trace
from .trace import BIN_MAGIC, open_source, read_trace, write_trace
from .workloads import get as get_workload


def prepare(paths: Sequence[str], workloads: Sequence[str], seed: int,
            outdir: str | os.PathLike) -> list[tuple[str, str]]:
    """(name, .hkb path) for every file in *paths*, then every workload (generated with
    *seed* and default parameters), in order."""
    out: list[tuple[str, str]] = []
    names: set[str] = set()

    def unique(name: str) -> str:
        base, k = name, 2
        while name in names:
            name, k = f"{base}#{k}", k + 1
        names.add(name)
        return name

    for path in paths:
        name = unique(Path(path).name.split(".")[0] or "trace")
        with open_source(path) as f:
            binary = f.read(len(BIN_MAGIC)) == BIN_MAGIC
        if binary:
            read_trace(path)            # the file and record of any error, before a run
            out.append((name, str(path)))
        else:
            dst = Path(outdir, f"{name}.hkb")
            dst.parent.mkdir(parents=True, exist_ok=True)
            write_trace(import_trace(path).trace, dst)
            out.append((name, str(dst)))
    for wname in workloads:
        w = get_workload(wname)
        name = unique(w.name)
        dst = Path(outdir, f"{name}.hkb")
        dst.parent.mkdir(parents=True, exist_ok=True)
        write_trace(w.generate(seed), dst)
        out.append((name, str(dst)))
    return out


def records(path: str | os.PathLike) -> int:
    """The record count in a .hkb file's header."""
    with open_source(path) as f:
        head = f.read(24)
    return struct.unpack_from("<Q", head, 16)[0] if len(head) == 24 else 0
