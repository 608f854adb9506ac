# SPDX-License-Identifier: MIT
"""tools/readme_tables.py on stand-in measurements: the README's generated blocks are
rewritten from the run, --check fails on a stale figure and names the command, and a
README without one of the blocks is an error. (`make readme-test` runs the tool for real.)"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture()
def tool():
    spec = importlib.util.spec_from_file_location("readme_tables", ROOT / "tools" / "readme_tables.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _target_doc(tool, base: int) -> dict:
    """A heapkit-target document: every README row at every level, distinct counts."""
    runs, pooled, builds = [], {}, []
    for k, alloc in enumerate(tool.ALLOCS + tool.PEERS):
        for level in ([0] if alloc in tool.PEERS else tool.LEVELS):
            build = f"-O2/h{level}"
            if build not in builds:
                builds.append(build)
            n = base + 100 * k + 10 * level
            family = "peer" if alloc in tool.PEERS else "heapkit"
            res = {"failures": {"total": 0}, "errors": {"corrupt": 0}}
            runs.append({"build": build, "opt": "-O2", "hardening": level, "allocator": alloc,
                         "family": family, "trace": "itc", "result": res})
            runs.append({"build": build, "opt": "-O2", "hardening": level, "allocator": alloc,
                         "family": family, "trace": "worst-x", "directed": True, "result": res,
                         "stats": {"malloc": {"max": n + 7}, "free": {"max": n + 3}}})
            pooled.setdefault(build, {})[alloc] = {"malloc": {"p50": n, "max": n + 5},
                                                   "free": {"p50": n + 1, "max": n + 9}}
    return {"builds": builds, "runs": runs, "pooled": pooled, "text_bytes": {}}


def _size_doc(tool) -> dict:
    runs = []
    for a in tool.SIZE_ALLOCS:
        for t, r in (("ls", 1.25), ("find", 1.0 if a != "freertos-heap4" else None)):
            runs.append({"allocator": a, "trace": t, "ratio": r})
    return {"runs": runs}


@pytest.fixture()
def readme(tool, monkeypatch, tmp_path):
    path = tmp_path / "README.md"
    path.write_text("# x\n\n<!-- readme_tables: summary -->\nold\n<!-- /readme_tables -->\n\ntext\n\n"
                    "<!-- readme_tables: levels -->\n<!-- /readme_tables -->\n")
    monkeypatch.setattr(tool, "README", path)
    monkeypatch.setattr(tool, "measure_costs", lambda jobs: {"cortex-m3": _target_doc(tool, 1000),
                                                             "rv32": _target_doc(tool, 5000)})
    monkeypatch.setattr(tool, "measure_heap", lambda out: _size_doc(tool))
    return path


def test_write_then_check(tool, readme, capsys):
    assert tool.main(["--check"]) == 1            # "old" is stale
    assert "readme_tables.py --write" in capsys.readouterr().err
    assert tool.main(["--write"]) == 0
    text = readme.read_text()
    assert "old" not in text and text.startswith("# x\n") and "\ntext\n" in text
    # tlsf (row 0) at level 1 on the Cortex-M3: p50 1010 / 1011, worst max(1015, 1017) / max(1019, 1013)
    assert "| **tlsf** | 1,017 / 1,019 | 5,017 / 5,019 | 1,010 / 1,011 | 1.118 |" in text
    # heap_4 completes one trace of two; peers are measured once, unlabelled by level
    assert "| freertos-heap4 (peer) |" in text and "1.250 (1 of 2)" in text
    assert "| tlsf | 3 | 1,030 / 1,031 | 1,037 / 1,039 | 5,030 / 5,031 | 5,037 / 5,039 |" in text
    assert tool.main(["--check"]) == 0
    readme.write_text(text.replace("1,017 / 1,019", "1,016 / 1,019"))
    assert tool.main(["--check"]) == 1
    assert "+| **tlsf** | 1,017 / 1,019" in capsys.readouterr().out


def test_a_missing_block_is_an_error(tool, readme, capsys):
    readme.write_text("<!-- readme_tables: summary -->\n<!-- /readme_tables -->\n")
    assert tool.main(["--check"]) == 2
    assert "<!-- readme_tables: levels -->" in capsys.readouterr().err


def test_the_readme_has_every_block(tool):
    names = [m.group(2) for m in tool.BLOCK.finditer((ROOT / "README.md").read_text())]
    assert sorted(names) == ["levels", "summary"]
