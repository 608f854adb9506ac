# SPDX-License-Identifier: MIT
"""The lab's layering: data flows one way (traces -> engine -> measurements -> rendering ->
CLI). The rendering modules (render.py, the seed sections in seeds/, report.py) import
none of the modules that produce results (they import them), and among themselves only
one way: render <- seeds.* <- report; no import cycles, lazy imports inside functions
included; nothing but the entry point reaches into the CLI."""

from __future__ import annotations

import ast
from pathlib import Path

import heapkit

PKG = Path(heapkit.__file__).parent


def _name(path: Path) -> str:
    """A module's dotted name inside heapkit: "report", "seeds.buddy_kth"; a package's
    __init__ is the package ("seeds")."""
    parts = path.relative_to(PKG).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


FILES = {_name(p): p for p in PKG.rglob("*.py")}
FILES.pop("")                                   # heapkit/__init__.py
MODULES = set(FILES)

# The rendering modules; among themselves render <- seeds.* <- report (test_rendering_goes_one_way).
SEEDS = {m for m in MODULES if m.startswith("seeds.")}
RENDERING = {"render", "seeds", *SEEDS, "report"}
# What the rendering modules may import besides each other: modules that produce no results.
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
        return arg.removeprefix("heapkit.")
    if name == "_plugin":
        return arg
    return None


def _found(base: list[str], names: list[str]) -> set[str]:
    """The heapkit modules an import of *names* from the module or package *base* loads."""
    out = {".".join(base)} if base else set()
    out.update(".".join(base + [n]) for n in names)
    return out & MODULES


def imports(module: str) -> set[str]:
    """The heapkit modules *module* imports, anywhere in its source."""
    path = FILES[module]
    package = module.split(".")[:-1] if path.name != "__init__.py" else module.split(".")
    tree = ast.parse(path.read_text())
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level:
            base = package[:len(package) - (node.level - 1)]
            base += node.module.split(".") if node.module else []
            out |= _found(base, [a.name for a in node.names])
        elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "heapkit":
            out |= _found(node.module.split(".")[1:], [a.name for a in node.names])
        elif isinstance(node, ast.Import):
            out.update(a.name.removeprefix("heapkit.") for a in node.names
                       if a.name.startswith("heapkit."))
        elif isinstance(node, ast.Call):
            named = _named(node)
            if named:
                out.add(named)
    return (out & MODULES) - {module}


GRAPH = {m: imports(m) for m in MODULES}


def test_the_graph_sees_lazy_and_named_imports():
    assert "demo" in GRAPH["cli"] and "report" in GRAPH["cli"]        # _plugin, from . import
    assert "kth_release" in GRAPH["demo"]                               # inside a function
    assert "seeds.fctma_pools" in GRAPH["itc_kernel"]                   # a subpackage, lazily
    assert "render" in GRAPH["seeds.buddy_kth"]                         # from .. import
    assert "seeds.buddy_kth" in GRAPH["report"]                         # from .seeds.x import


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


def test_rendering_renders_only():
    for m in RENDERING:
        assert GRAPH[m] <= RENDERING_DEPS | RENDERING, (m, GRAPH[m] - RENDERING_DEPS - RENDERING)
    assert not (RENDERING_DEPS & PRODUCERS) and not (RENDERING & PRODUCERS)


def test_rendering_goes_one_way():
    """render knows no section, a seed's section knows render only (not the other seeds,
    not the page), the page knows them all."""
    assert GRAPH["render"] <= RENDERING_DEPS, GRAPH["render"] - RENDERING_DEPS
    for m in SEEDS | {"seeds"}:
        assert GRAPH[m] <= RENDERING_DEPS | {"render", "seeds"}, (m, GRAPH[m])
    assert GRAPH["report"] <= RENDERING_DEPS | RENDERING


def test_producers_render_through_the_rendering_modules():
    for m in ("demo", "explore", "kth_release", "fits", "itc_kernel"):
        assert GRAPH[m] & RENDERING, m


def test_only_the_entry_point_imports_the_cli():
    assert {m for m, deps in GRAPH.items() if "cli" in deps} == {"__main__"}
