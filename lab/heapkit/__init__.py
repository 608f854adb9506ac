# SPDX-License-Identifier: MIT
"""heapkit lab: allocation traces, importers, workload generators and the CLI.

The trace format is described in docs/trace-format.md; :class:`Trace`
holds one as a numpy structured array of 16-byte records.

The names below load their modules (and numpy) on first use, so the
command line starts, and answers Ctrl-C, before anything heavy is imported.
"""

from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.1.0"

from .errors import HeapkitError, TraceError

_LAZY = {
    "ImportResult": "importers", "detect_format": "importers", "import_trace": "importers",
    "RECORD_DTYPE": "trace", "Trace": "trace", "TraceBuilder": "trace", "TraceStats": "trace",
    "read_trace": "trace", "write_trace": "trace",
    "WORKLOADS": "workloads", "generate": "workloads",
}

__all__ = ["HeapkitError", "TraceError", "__version__", *_LAZY]


def __getattr__(name: str) -> Any:
    if name not in _LAZY:
        raise AttributeError(f"module 'heapkit' has no attribute {name!r}")
    return getattr(importlib.import_module(f".{_LAZY[name]}", __name__), name)
