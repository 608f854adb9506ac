# SPDX-License-Identifier: MIT
"""Progress bars: on stderr, only when stderr is a terminal; the results go to stdout either
way. The terminal is a pseudo-terminal of 100 columns."""

from __future__ import annotations

import fcntl
import os
import pty
import struct
import subprocess
import sys
import termios

import pytest

from heapkit import engine, progress


def run(args: list[str], tty: bool) -> tuple[int, str, str]:
    argv = [sys.executable, "-m", "heapkit", *args]
    if not tty:
        p = subprocess.run(argv, capture_output=True, text=True, timeout=300)
        return p.returncode, p.stdout, p.stderr
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 100, 0, 0))
    p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=slave)
    os.close(slave)
    err = b""
    while True:
        try:
            chunk = os.read(master, 4096)
        except OSError:           # the child closed the terminal
            break
        if not chunk:
            break
        err += chunk
    os.close(master)
    out = p.stdout.read()
    p.stdout.close()
    return p.wait(timeout=300), out.decode(), err.decode()


@pytest.fixture(scope="module", autouse=True)
def built():
    engine.find_binary()


@pytest.mark.parametrize("args, bar", [
    (["bench", "--alloc", "tlsf,buddy", "--workload", "cse3320", "ramp"], "bench: 100%|"),
    (["size", "--alloc", "tlsf", "--workload", "cse3320"], "size: "),
    (["netapp", "easyport", "--synthetic", "plateau,packets=3000"], "easyport: "),
])
def test_bars_only_on_a_terminal(args, bar):
    code, out, err = run(args, tty=True)
    assert code == 0, err
    assert bar in err and ("rec" in err or "pkt" in err)
    code2, out2, err2 = run(args, tty=False)
    assert code2 == 0 and err2 == ""
    # the same results on stdout (timings aside), and no bar there
    assert "\r" not in out and out.splitlines()[0] == out2.splitlines()[0]


def test_reporter_turns_running_totals_into_steps():
    steps = []

    class Bar:
        def update(self, n):
            steps.append(n)
    seen = progress.reporter(Bar())
    for total in (10, 25, 25, 40):
        seen(total)
    assert steps == [10, 15, 0, 15]


def test_run_separates_progress_from_the_other_stderr_lines():
    script = ("import sys; print('p: progress 5', file=sys.stderr); print('warning', file=sys.stderr);"
              "print('p: progress 9', file=sys.stderr); print('result'); sys.exit(3)")
    seen = []
    proc = progress.run([sys.executable, "-c", script], "p: ", seen.append)
    assert seen == [5, 9] and proc.returncode == 3
    assert proc.stdout == "result\n" and proc.stderr == "warning\n"
