# SPDX-License-Identifier: MIT
"""The lab's layering: data flows one way (traces -> engine -> measurements -> rendering ->
CLI). report.py renders only and imports none of the modules that produce results (they
import it); no import cycles, lazy imports inside functions included; nothing but the
entry point reaches into the CLI."""

from __future__ import annotations

import ast
from pathlib import Path

import heapkit

PKG = Path(heapkit.__file__).parent
MODULES = {p.stem for p in PKG.glob("*.py")} - {"__init__"}

# What report.py may import: modules that produce no results.
RENDERING_DEPS = {"errors", "boards", "progress"}
PRODUCERS = {"engine", "demo", "explore", "dmm_network", "fits", "itc_kernel", "kth_release", "target",
             "netapps", "capture", "importers", "workloads", "inputs", "native", "trace"}


def _named(node: ast.Call) -> str | None:
    """The heapkit module a call loads by name: importlib.import_module("heapkit.x") or the
    CLI's _plugin("x", ...)."""
    f = node.func
    name = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else None
    if not node.args or not isinstance(node.args[0], ast.Constant) \
            or not isinstance(node.args[0].value, str):
        return None
    arg = node.args[0].value
    if name == "import_module" and arg.startswith("heapkit."):
        return arg.split(".")[1]
    if name == "_plugin":
        return arg
    return None


def imports(module: str) -> set[str]:
    """The heapkit modules *module* imports, anywhere in its source."""
    tree = ast.parse((PKG / f"{module}.py").read_text())
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level == 1:
            if node.module:
                out.add(node.module.split(".")[0])
            else:
                out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("heapkit."):
            out.add(node.module.split(".")[1])
        elif isinstance(node, ast.Import):
            out.update(a.name.split(".")[1] for a in node.names if a.name.startswith("heapkit."))
        elif isinstance(node, ast.Call):
            named = _named(node)
            if named:
                out.add(named)
    return (out & MODULES) - {module}


GRAPH = {m: imports(m) for m in MODULES}


def test_the_graph_sees_lazy_and_named_imports():
    assert "demo" in GRAPH["cli"] and "report" in GRAPH["cli"]        # _plugin, from . import
    assert "kth_release" in GRAPH["demo"]                               # inside a function


def test_no_import_cycles():
    state: dict[str, int] = {}
    path: list[str] = []

    def visit(m: str) -> None:
        state[m] = 1
        path.append(m)
        for n in sorted(GRAPH[m]):
            assert state.get(n) != 1, "import cycle: " + " -> ".join(path[path.index(n):] + [n])
            if n not in state:
                visit(n)
        path.pop()
        state[m] = 2

    for m in sorted(MODULES):
        if m not in state:
            visit(m)


def test_report_renders_only():
    assert GRAPH["report"] <= RENDERING_DEPS, GRAPH["report"] - RENDERING_DEPS
    assert not (RENDERING_DEPS & PRODUCERS)


def test_producers_render_through_report():
    for m in ("demo", "explore", "kth_release"):
        assert "report" in GRAPH[m], m


def test_only_the_entry_point_imports_the_cli():
    assert {m for m, deps in GRAPH.items() if "cli" in deps} == {"__main__"}
