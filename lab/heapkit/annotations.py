# SPDX-License-Identifier: MIT
"""What a trace knows beyond its records: the side table next to a trace file.

A heapkit trace (.hkt/.hkb) holds what a replay needs.  Where the source
knew more -- the on-target recorder (heapkit.fwtrace) and the Linux capture
(`heapkit trace`) record each call's caller -- that goes into ``TRACE.side.npz``
next to the trace (docs/trace-format.md, "Side table"): one caller address
and one stamp per record, task names by thread id, checkpoints and drops by
record position, the loaded objects of a Linux process (where its callers'
addresses came from), and a few key/value strings.  Readers of the trace itself
never need it; ``heapkit leaks`` does.  A numpy .npz without pickles.
"""

from __future__ import annotations

import os
import zipfile
from dataclasses import dataclass, field

import numpy as np

from .errors import HeapkitError

SIDE_SUFFIX = ".side.npz"


def side_path(trace_path: str | os.PathLike) -> str:
    return str(trace_path) + SIDE_SUFFIX


@dataclass
class Annotations:
    callers: np.ndarray = field(default_factory=lambda: np.zeros(0, np.uint64))
    stamps: np.ndarray = field(default_factory=lambda: np.zeros(0, np.uint64))
    tasks: dict[int, str] = field(default_factory=dict)
    marks: list[tuple[int, str]] = field(default_factory=list)   # (record position, label)
    drops: list[tuple[int, int]] = field(default_factory=list)   # (record position, count)
    # Executable segments of a process's loaded objects: (start, end, bias, path); a caller in
    # [start, end) is at address caller - bias in the file. Empty: callers are link addresses.
    modules: list[tuple[int, int, int, str]] = field(default_factory=list)
    meta: dict[str, str] = field(default_factory=dict)

    def save(self, path: str | os.PathLike) -> None:
        tids = sorted(self.tasks)
        try:
            with open(path, "wb") as f:
                np.savez_compressed(
                    f, callers=self.callers.astype(np.uint64), stamps=self.stamps.astype(np.uint64),
                    task_tids=np.array(tids, np.uint32), task_names=np.array([self.tasks[t] for t in tids], str),
                    mark_pos=np.array([m[0] for m in self.marks], np.uint64),
                    mark_labels=np.array([m[1] for m in self.marks], str),
                    drop_pos=np.array([d[0] for d in self.drops], np.uint64),
                    drop_counts=np.array([d[1] for d in self.drops], np.uint64),
                    module_ranges=np.array([m[:3] for m in self.modules], np.uint64).reshape(-1, 3),
                    module_paths=np.array([m[3] for m in self.modules], str),
                    meta_keys=np.array(list(self.meta), str), meta_values=np.array(list(self.meta.values()), str))
        except OSError as e:
            raise HeapkitError(f"{path}: cannot write: {e.strerror or e}") from None

    @classmethod
    def load(cls, path: str | os.PathLike, records: int) -> "Annotations":
        """Read a side table for a trace of *records* records."""
        try:
            with np.load(path, allow_pickle=False) as z:
                a = cls(callers=z["callers"].astype(np.uint64), stamps=z["stamps"].astype(np.uint64),
                        tasks={int(t): str(n) for t, n in zip(z["task_tids"], z["task_names"])},
                        marks=[(int(p), str(l)) for p, l in zip(z["mark_pos"], z["mark_labels"])],
                        drops=[(int(p), int(c)) for p, c in zip(z["drop_pos"], z["drop_counts"])],
                        modules=[(int(r[0]), int(r[1]), int(r[2]), str(m)) for r, m in
                                 zip(z["module_ranges"], z["module_paths"])] if "module_paths" in z.files else [],
                        meta={str(k): str(v) for k, v in zip(z["meta_keys"], z["meta_values"])})
        except FileNotFoundError:
            raise HeapkitError(f"{path}: no such file") from None
        except (OSError, KeyError, ValueError, zipfile.BadZipFile) as e:
            raise HeapkitError(f"{path}: not a heapkit side table ({e})") from None
        for name, arr in (("callers", a.callers), ("stamps", a.stamps)):
            if len(arr) not in (0, records):
                raise HeapkitError(f"{path}: {len(arr)} {name} for a trace of {records} records")
        return a
