# SPDX-License-Identifier: MIT
"""check_demo_advice.py DEMO_DIR TRACES_DIR: the demo's advice covers every real trace.

For every trace under TRACES_DIR (heapkit.demo.real_traces), results.json's advice names
one allocator with the heap to configure and its worst case on the Cortex-M3 and on RV32,
and report.html's first section has that trace's row. Exit 1 with one line per trace that
falls short; run by tests/repo/check_bare_clone.sh on a clone with nothing beside it."""

from __future__ import annotations

import html
import json
import sys
from pathlib import Path

from heapkit.demo import real_traces

TARGETS = ("cortex-m3", "rv32")


def problems(demo: Path, traces: Path) -> list[str]:
    names = [p.name.split(".")[0] for _, p in real_traces(traces)]
    if not names:
        return [f"{traces}: no real traces found"]
    data = json.loads((demo / "results.json").read_text())
    advice = {t["trace"]: t for t in (data.get("advice") or {}).get("traces", [])}
    page = html.unescape((demo / "report.html").read_text())
    first = page.split("<h2", 2)[1] if page.count("<h2") >= 2 else ""
    out = []
    for name in names:
        t = advice.get(name)
        if t is None:
            out.append(f"{name}: no advice")
            continue
        pick = t.get("recommendation")
        row = next((r for r in t.get("rows", []) if r["allocator"] == pick), None)
        if row is None or not row.get("heap"):
            out.append(f"{name}: no allocator with a heap recommended ({t.get('why_none')})")
            continue
        for tgt in TARGETS:
            if (row.get("targets", {}).get(tgt) or {}).get("worst") is None:
                out.append(f"{name}: {pick} has no {tgt} worst case")
        if name not in first or pick not in first:
            out.append(f"{name}: the report's first section has no row for it")
    return out


def main() -> int:
    demo, traces = Path(sys.argv[1]), Path(sys.argv[2])
    bad = problems(demo, traces)
    for line in bad:
        print(f"bare clone: advice: {line}", file=sys.stderr)
    if not bad:
        print(f"bare clone: advice for all {len(real_traces(traces))} real traces, "
              f"worst cases on {' and '.join(TARGETS)}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
