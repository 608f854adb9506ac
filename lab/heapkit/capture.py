# SPDX-License-Identifier: MIT
"""``heapkit trace``: record a program's allocations as a heapkit trace.

::

    heapkit trace -o OUT [--all-processes] -- PROGRAM [ARGS...]

PROGRAM runs with ``LD_PRELOAD`` of ``libhkcapture.so`` (lab/capture/), which
writes one binary trace per process into a scratch directory: the process
heapkit started (whatever it became through exec: a shell wrapper that execs
python keeps its pid) and every process it forked or started, each as its
own trace, because ids and live blocks belong to one address space.

- Without ``--all-processes`` OUT is the trace of the process heapkit
  started; the others are discarded.
- With ``--all-processes`` OUT is still that trace, and every other process's
  trace is kept next to it as OUT with ``.PID`` before the extension
  (``out.hkb`` -> ``out.4242.hkb``). They are not merged: concatenating
  address spaces would invent a live set no process ever had.

OUT's extension picks the encoding (.hkb, .hkt, .hkt.gz). Every trace is
validated through :mod:`heapkit.trace` before it is written. Next to each
goes its side table, OUT.side.npz (:mod:`heapkit.annotations`): the caller
of every record (the return address in the code that called malloc, free,
...) and the process's loaded objects with their load addresses, so that
``heapkit leaks OUT --elf PROGRAM`` names the callers, position-independent
programs and libraries included. One summary line
per written trace goes to stderr (stdout belongs to PROGRAM): events by type,
threads, frees dropped (free(NULL) and frees of blocks allocated before the
recorder was active, e.g. by other libraries' constructors or a fork parent)
and PROGRAM's exit status.

The exit status of ``heapkit trace`` is PROGRAM's (128+N when killed by
signal N), as with strace or time, so scripts can tell a failing program;
heapkit's own errors (no such program, nothing recorded, unwritable OUT) are
one line on stderr and status 2. A process that ended without exit() (killed,
exec of a static program) leaves a trace whose header was not rewritten;
what it flushed (whole 1 MiB chunks) is a valid prefix and is used, and the
summary says so.

The library: ``$HEAPKIT_CAPTURE_LIB`` if set, else the installed one, else
the build tree's ``lab/capture/libhkcapture.so``, built with CMake when
missing (:func:`build` rebuilds on demand); see :mod:`heapkit.native`.
Statically linked and set-user-ID programs ignore LD_PRELOAD and record
nothing.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping, Sequence

import numpy as np

from . import native
from .annotations import Annotations
from .annotations import side_path as side_table_path
from .errors import HeapkitError
from .trace import (BIN_HEADER_SIZE, RECORD_DTYPE, Trace, form_of_path,
                    validate_records, write_trace)

__all__ = ["ENV_LIB", "ENV_OUT", "library_path", "build", "find_library", "ProcessTrace",
           "Capture", "record", "run", "side_path"]

TARGET = "hkcapture"
ENV_LIB = "HEAPKIT_CAPTURE_LIB"
ENV_OUT = "HEAPKIT_TRACE_OUT"
_FILE_PREFIX = "heapkit-"


# --------------------------------------------------------------------------
# The library

def library_path() -> Path:
    """Where libhkcapture.so is installed or built (it may not exist yet)."""
    return native.path(TARGET)


def build() -> Path:
    """Configure (if needed) and build libhkcapture.so with CMake in a checkout; its path."""
    return native.build(TARGET)


def find_library() -> Path:
    """``$HEAPKIT_CAPTURE_LIB``, else the installed library or the build tree's, built if missing."""
    return native.find(ENV_LIB, TARGET)


# --------------------------------------------------------------------------
# Reading what the library wrote

@dataclass
class ProcessTrace:
    """The trace of one process, with the counters from its ``.info`` file."""

    pid: int
    trace: Trace
    exe: str = "?"
    ppid: int | None = None
    free_null: int = 0
    unknown_free: int = 0
    unknown_realloc: int = 0
    clamped: int = 0
    complete: bool = False      # the library finished the file (exit, _exit)
    repaired: bool = False      # the header lagged behind the records: rebuilt
    annotations: Annotations | None = None   # callers and loaded objects, when the library wrote them

    @property
    def dropped_frees(self) -> int:
        return self.free_null + self.unknown_free

    @property
    def name(self) -> str:
        return Path(self.exe).name or "?"

    def summary(self) -> str:
        st = self.trace.stats()
        ops = ", ".join(f"{k} {v}" for k, v in st.by_op.items())
        text = (f"{st.events} events ({ops}), {st.threads} thread{'s' * (st.threads != 1)}, "
                f"{self.dropped_frees} frees dropped ({self.free_null} of NULL, "
                f"{self.unknown_free} of unknown blocks)")
        if self.unknown_realloc:
            text += f", {self.unknown_realloc} reallocs of unknown blocks kept as realloc(NULL)"
        if self.clamped:
            text += f", {self.clamped} values above 32 bits clamped"
        if not self.complete:
            text += (", incomplete: the process did not exit normally, records after "
                     "its last flush are lost" + (" (header rebuilt)" if self.repaired else ""))
        return text


def _read_info(path: Path) -> dict[str, str]:
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return {}
    info = {}
    for line in text.splitlines():
        key, _, value = line.partition(" ")
        info[key] = value
    return info


def _int(info: Mapping[str, str], key: str, default: int = 0) -> int:
    try:
        return int(info.get(key, default))
    except ValueError:
        return default


def load_process_trace(path: str | os.PathLike, pid: int) -> ProcessTrace:
    """One process's trace as the library left it, header repaired if stale."""
    path = Path(path)
    data = path.read_bytes()
    name = str(path)
    repaired = False
    try:
        trace = Trace.from_bytes(data, name)
    except HeapkitError:
        # The header is rewritten at exit only: after a crash, kill or exec
        # it lags behind the records flushed so far, which form a valid prefix.
        if len(data) < BIN_HEADER_SIZE or not data.startswith(b"HKTRACE\0"):
            raise
        n = (len(data) - BIN_HEADER_SIZE) // RECORD_DTYPE.itemsize
        rec = np.frombuffer(data, dtype=RECORD_DTYPE, count=n, offset=BIN_HEADER_SIZE).copy()
        validate_records(rec, name, binary=True)
        trace = Trace(rec, name, validate=False)
        repaired = True
    info = _read_info(path.with_name(path.name + ".info"))
    exe = info.get("exe", "?") or "?"
    return ProcessTrace(pid=pid, trace=trace, exe=exe,
                        ppid=_int(info, "ppid", -1) if "ppid" in info else None,
                        free_null=_int(info, "free_null"),
                        unknown_free=_int(info, "unknown_free"),
                        unknown_realloc=_int(info, "unknown_realloc"),
                        clamped=_int(info, "clamped"),
                        complete=_int(info, "complete") == 1 and not repaired,
                        repaired=repaired, annotations=_annotations(path, len(trace), pid, exe))


def _annotations(path: Path, records: int, pid: int, exe: str) -> Annotations | None:
    """The callers (FILE.callers) and loaded objects (FILE.modules) of a process trace."""
    try:
        callers = np.fromfile(path.with_name(path.name + ".callers"), dtype="<u8")
    except OSError:
        return None
    # A process that ended abruptly may have written callers for records its trace lost, or not
    # all of them: those are unknown (0).
    callers = np.concatenate((callers[:records], np.zeros(max(0, records - len(callers)), np.uint64)))
    modules = []
    try:
        lines = path.with_name(path.name + ".modules").read_text(encoding="utf-8",
                                                                 errors="replace").splitlines()
    except OSError:
        lines = []
    for line in lines:
        parts = line.split(" ", 4)
        if len(parts) == 5 and parts[0] == "module":
            try:
                bias, start, end = (int(x, 16) for x in parts[1:4])
            except ValueError:
                continue
            modules.append((start, end, bias, parts[4]))
    return Annotations(callers=callers.astype(np.uint64), modules=modules,
                       tasks={pid & 0xFFFF: "main"},
                       meta={"source": "linux capture", "exe": exe, "pid": str(pid)})


@dataclass
class Capture:
    """The outcome of :func:`record`."""

    command: list[str]
    returncode: int             # subprocess convention: -N when killed by signal N
    pid: int
    processes: list[ProcessTrace] = field(default_factory=list)   # by pid

    @property
    def main(self) -> ProcessTrace | None:
        """The trace of the process heapkit started, if it recorded one."""
        for p in self.processes:
            if p.pid == self.pid:
                return p
        return None

    @property
    def others(self) -> list[ProcessTrace]:
        return [p for p in self.processes if p.pid != self.pid]

    def status_text(self) -> str:
        prog = Path(self.command[0]).name
        if self.returncode < 0:
            try:
                sig = signal.Signals(-self.returncode).name
            except ValueError:
                sig = f"signal {-self.returncode}"
            return f"{prog} was killed by {sig}"
        return f"{prog} exited with status {self.returncode}"

    @property
    def exit_status(self) -> int:
        """The shell's view of the program's status: 128+N for signal N."""
        return 128 - self.returncode if self.returncode < 0 else self.returncode


def _resolve_program(argv0: str, env: Mapping[str, str]) -> None:
    if "/" in argv0:
        p = Path(argv0)
        if not p.exists():
            raise HeapkitError(f"{argv0}: no such file")
        if p.is_dir() or not os.access(p, os.X_OK):
            raise HeapkitError(f"{argv0}: not an executable file")
    elif shutil.which(argv0, path=env.get("PATH", os.defpath)) is None:
        raise HeapkitError(f"{argv0}: command not found")


def record(command: Sequence[str], *, library: str | os.PathLike | None = None,
           env: Mapping[str, str] | None = None, cwd: str | os.PathLike | None = None,
           timeout: float | None = None, stdin=None, stdout=None, stderr=None) -> Capture:
    """Run *command* under the recorder; the traces of all its processes.

    stdin/stdout/stderr are passed to subprocess (default: inherited).
    Raises HeapkitError when the program cannot be started.
    """
    command = [str(c) for c in command]
    if not command:
        raise HeapkitError("no program to run")
    lib = Path(library).resolve() if library is not None else find_library()
    child_env = dict(os.environ if env is None else env)
    _resolve_program(command[0], child_env)
    with tempfile.TemporaryDirectory(prefix="heapkit-trace-") as tmp:
        child_env[ENV_OUT] = os.path.join(tmp, _FILE_PREFIX + "%p.hkb")
        old = child_env.get("LD_PRELOAD", "")
        child_env["LD_PRELOAD"] = str(lib) + (":" + old if old else "")
        # Ctrl-C goes to the whole foreground group: let the program decide,
        # then keep what it recorded.
        old_int = signal.getsignal(signal.SIGINT)
        in_main_thread = _is_main_thread()
        if in_main_thread:
            signal.signal(signal.SIGINT, signal.SIG_IGN)
        try:
            try:
                proc = subprocess.Popen(command, env=child_env, cwd=cwd, stdin=stdin,
                                        stdout=stdout, stderr=stderr)
            except FileNotFoundError:
                raise HeapkitError(f"{command[0]}: no such file") from None
            except PermissionError:
                raise HeapkitError(f"{command[0]}: permission denied") from None
            except OSError as e:
                raise HeapkitError(f"{command[0]}: cannot run: {e.strerror or e}") from None
            try:
                returncode = proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
                raise HeapkitError(f"{command[0]}: still running after {timeout} s; "
                                   "killed") from None
        finally:
            if in_main_thread:
                signal.signal(signal.SIGINT, old_int)
        cap = Capture(command=command, returncode=returncode, pid=proc.pid)
        for path in sorted(Path(tmp).glob(_FILE_PREFIX + "*.hkb"),
                           key=lambda p: _pid_of(p) or 0):
            pid = _pid_of(path)
            if pid is not None:
                cap.processes.append(load_process_trace(path, pid))
    return cap


def _is_main_thread() -> bool:
    import threading
    return threading.current_thread() is threading.main_thread()


def _pid_of(path: Path) -> int | None:
    stem = path.name[len(_FILE_PREFIX):-len(".hkb")]
    return int(stem) if stem.isdigit() else None


def side_path(output: str | os.PathLike, pid: int) -> str:
    """OUT with ``.PID`` before its extension: out.hkb -> out.4242.hkb."""
    out = str(output)
    for ext in (".hkt.gz", ".hkb", ".hkt"):
        if out.lower().endswith(ext):
            return f"{out[:-len(ext)]}.{pid}{out[-len(ext):]}"
    return f"{out}.{pid}"


# --------------------------------------------------------------------------
# The subcommand

def run(args: argparse.Namespace) -> int:
    """``heapkit trace``: see the module docstring."""
    output = args.output
    if form_of_path(output) is None:
        raise HeapkitError(f"{output}: output name must end in .hkb, .hkt or .hkt.gz")
    parent = Path(output).parent
    if not parent.is_dir():
        raise HeapkitError(f"{output}: cannot write: no directory {str(parent)!r}")
    command = list(args.command)
    if command and command[0] == "--":
        command = command[1:]
    if not command:
        raise HeapkitError("trace: give the program to run after --")
    cap = record(command)
    main = cap.main
    if main is None:
        raise HeapkitError(f"{command[0]}: no trace was recorded ({cap.status_text()}; "
                           "statically linked and set-user-ID programs ignore LD_PRELOAD)")
    written = [(output, main)]
    if getattr(args, "all_processes", False):
        written += [(side_path(output, p.pid), p) for p in cap.others]
    for path, p in written:
        write_trace(p.trace, path)
        if p.annotations is not None:
            p.annotations.save(side_table_path(path))
    status = cap.status_text()
    if len(written) == 1 and cap.others:
        n = len(cap.others)
        status += f"; {n} other process{'es' * (n != 1)} not kept (see --all-processes)"
    for path, p in written:
        who = "" if p is main else f" [pid {p.pid}, {p.name}]"
        print(f"wrote {path}{who}: {p.summary()}; {status}", file=sys.stderr)
    return cap.exit_status
