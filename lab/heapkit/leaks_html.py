# SPDX-License-Identifier: MIT
"""The HTML page of ``heapkit leaks --html``: rendering only.

It takes what :mod:`heapkit.leaks` computed -- the report of
:func:`~heapkit.leaks.analyse` and the per-task series of
:func:`~heapkit.leaks.task_series` -- and draws it with the report's own
helpers (:mod:`heapkit.render`): the leak groups, the per-task table and a
plot of each task's live bytes over the trace. One self-contained page,
the plot embedded as a PNG.
"""

from __future__ import annotations

import os
from pathlib import Path

from . import render
from .errors import HeapkitError


def fig_task_usage(series: dict) -> str | None:
    """Live bytes per task, stacked, against the stamp (seconds) or the record number: a PNG data URI."""
    if not series["tasks"] or len(series["x"]) < 2:
        return None
    plt = render._plt()
    fig, ax = plt.subplots(figsize=(11, 4.2))
    ax.stackplot(series["x"], [t["y"] for t in series["tasks"]], labels=[t["task"] for t in series["tasks"]],
                 step="post", alpha=0.85)
    ax.set_xlabel("time (s, the recorder's stamps)" if series["axis"] == "seconds" else "record")
    ax.set_ylabel("live bytes")
    ax.set_title("Heap use per task over the trace (stacked: the top edge is the whole heap's live bytes)")
    render._legend_below(fig, ax, bottom=0.22)
    return render._png(fig)


def _groups_table(section: dict) -> str:
    rows = [[g["count"], g["bytes"], g["task"] or (f"t{g['tid']}" if g["tid"] else "-"), g["where"]]
            for g in section["groups"]]
    if not rows:
        return '<p class="na">none</p>'
    return render.table(["count", "bytes", "task", "caller"], rows, numeric_from=0, text_cols=(2, 3))


def page(report: dict, series: dict, title: str) -> str:
    out = [f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>{render.esc(title)}'
           f"</title><style>{render.CSS}</style></head><body>", f"<h1>{render.esc(title)}</h1>",
           f'<p class="meta">{render.esc(report["trace"])}: {report["records"]:,} records, '
           f'{report["ids"]:,} blocks' + ("" if report["callers"] else " (no callers recorded)") + "</p>"]
    if report["dropped"]:
        out.append(f'<div class="warn">The recorder dropped {report["dropped"]:,} records: frees may '
                   "be missing, and blocks may show as live that were freed.</div>")
    for sec in report["sections"]:
        out.append(f"<h2>{render.esc(sec['title'])}: {sec['blocks']:,} blocks, {sec['bytes']:,} bytes</h2>")
        out.append(_groups_table(sec))
    out.append("<h2>Per task</h2>")
    out.append(render.table(["task", "allocations", "peak live bytes", "live blocks at end", "live bytes at end"],
                            [[t["task"] or f"t{t['tid']}", t["allocations"], t["peak_live_bytes"],
                              t["live_blocks_at_end"], t["live_bytes_at_end"]] for t in report["tasks"]]))
    out.append(render.img(fig_task_usage(series), "live bytes per task over the trace"))
    out.append(render.cap("A block counts for the task that allocated it until it is freed, whoever frees "
                          "it. Sizes are what the trace records (the FreeRTOS hooks: gross block sizes). "
                          f"Of each 1/{series['points']} of the trace the plot keeps the moment the tasks "
                          "together held the most."))
    out.append("</body></html>\n")
    return "\n".join(out)


def write(report: dict, series: dict, path: str | os.PathLike, title: str = "heapkit leaks") -> Path:
    path = Path(path)
    try:
        path.write_text(page(report, series, title), encoding="utf-8")
    except OSError as e:
        raise HeapkitError(f"{path}: cannot write: {e.strerror or e}") from None
    return path
