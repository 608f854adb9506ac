# SPDX-License-Identifier: MIT
"""heapkit lab: allocation traces, importers, workload generators and the CLI.

The trace format is described in docs/trace-format.md; :class:`Trace`
holds one as a numpy structured array of 16-byte records.
"""

__version__ = "0.1.0"

from .errors import HeapkitError, TraceError
from .importers import ImportResult, detect_format, import_trace
from .trace import RECORD_DTYPE, Trace, TraceBuilder, TraceStats, read_trace, write_trace
from .workloads import WORKLOADS, generate

__all__ = [
    "HeapkitError", "TraceError", "ImportResult", "detect_format", "import_trace",
    "RECORD_DTYPE", "Trace", "TraceBuilder", "TraceStats", "read_trace", "write_trace",
    "WORKLOADS", "generate", "__version__",
]
