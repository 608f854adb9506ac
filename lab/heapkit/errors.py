# SPDX-License-Identifier: MIT
"""Exceptions raised by the heapkit package.

Every error a user can cause (a bad argument, a missing file, a malformed
trace) is a :class:`HeapkitError`; the CLI prints its message on one line
and exits with status 2.
"""

from __future__ import annotations


class HeapkitError(Exception):
    """Base class of the errors the CLI reports without a traceback."""


class TraceError(HeapkitError):
    """A trace (heapkit or external format) is malformed or inconsistent.

    The message names the place: ``FILE:LINE: reason`` for text formats,
    ``FILE: record N: reason`` for the binary form (N counts records from 0),
    or ``FILE: reason`` when no single place is to blame (a bad header).
    """

    def __init__(self, source: str, reason: str, *, line: int | None = None,
                 record: int | None = None):
        self.source = source
        self.reason = reason
        self.line = line
        self.record = record
        if line is not None:
            where = f"{source}:{line}"
        elif record is not None:
            where = f"{source}: record {record}"
        else:
            where = source
        super().__init__(f"{where}: {reason}")
