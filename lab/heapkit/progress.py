# SPDX-License-Identifier: MIT
"""Progress of the lab's long commands: tqdm bars on stderr, drawn only when stderr is a
terminal (so logs and pipes get the results alone), and the child processes that report
how far they are.

    from heapkit import progress
    with progress.bar(total=n, desc="bench", unit="rec") as b:
        proc = progress.run(argv, "hk-replay: ", progress.reporter(b))

A child reports with lines ``<prefix>progress N`` on stderr, N counting the work it has
done so far (hk-replay and hk-netapp with ``--progress``); :func:`run` hands each N to a
callback and returns the other stderr lines as the child's stderr.
"""

from __future__ import annotations

import subprocess
import sys
import threading
from typing import Any, Callable, Sequence


def enabled() -> bool:
    """Whether bars are drawn: stderr is a terminal."""
    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):
        return False


def bar(total: float | None = None, desc: str = "", unit: str = "it", show: bool = True,
        **kw: Any):
    """A tqdm bar on stderr, drawn only on a terminal and when *show* (tqdm's other options
    in *kw*); a context manager, and a no-op object when not drawn."""
    from tqdm import tqdm
    return tqdm(total=total, desc=desc, unit=unit, file=sys.stderr,
                disable=not (show and enabled()), dynamic_ncols=True, **kw)


def reporter(b) -> Callable[[int], None]:
    """A callback for :func:`run` that advances bar *b* by what each report of one child adds."""
    last = 0

    def seen(n: int) -> None:
        nonlocal last
        b.update(n - last)
        last = n
    return seen


def run(argv: Sequence[str], prefix: str, on_progress: Callable[[int], None] | None,
        env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """Run *argv* to the end, stdout captured; its ``<prefix>progress N`` lines on stderr go
    to *on_progress* (N an int), the rest into the result's stderr."""
    proc = subprocess.Popen(list(argv), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=env)
    out: list[str] = []
    reader = threading.Thread(target=lambda: out.append(proc.stdout.read()), daemon=True)
    reader.start()
    kept: list[str] = []
    mark = prefix + "progress "
    try:
        for line in proc.stderr:
            if line.startswith(mark):
                if on_progress is not None:
                    on_progress(int(line[len(mark):]))
            else:
                kept.append(line)
        proc.wait()
    except BaseException:
        proc.kill()
        proc.wait()
        raise
    finally:
        reader.join()
        proc.stdout.close()
        proc.stderr.close()
    return subprocess.CompletedProcess(list(argv), proc.returncode, "".join(out), "".join(kept))
