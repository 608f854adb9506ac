#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""dropin.py: each allocator as two files, dropin/heapkit_<name>.c and .h.

    python3 tools/dropin.py --write   # regenerate every drop-in from src/ and include/
    python3 tools/dropin.py --check   # exit 1 naming the drop-ins that differ from what the sources give

A firmware takes one allocator by copying its two files, as SQLite's
amalgamation or o1heap. The header is include/heapkit/heapkit.h and the
allocator's public headers, the .c the private headers and the sources below,
one translation unit whose shared helpers (HK_INTERNAL) are static, so that
two drop-ins link into one program.

One translation unit holds several sources' file-scope names at once: a name
two of them declare, at least one of them privately, is a clash the library
never saw. Both modes report each such name with the files that declare it
and refuse that drop-in; --write then also compiles each drop-in it made
($CC, else cc) and reports what the compiler still finds, at the line of the
library source it came from. Exit status 0, 1 (stale, clash or compile
failure), or 2 with one line on stderr.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

# Per drop-in: the public headers (beside heapkit.h, which they include) and
# the allocator's sources, in order. core.c comes first and heap.c (the
# uniform layer) last in every drop-in; private headers are found by
# following the sources' #include "..." lines.
DROPINS: dict[str, tuple[list[str], list[str]]] = {
    "tlsf": (["tlsf.h"], ["tagged.c", "tlsf.c"]),
    # The pool family: a lone pool (hk_pool_init), its blocking layer, and the
    # pool set, which places a bump allocator on its arena, so the pool drop-in
    # holds bump too. A firmware that calls hk_pool_init, malloc and free
    # links the lone pool's paths alone (--gc-sections).
    "pool": (["bump.h", "pool.h"], ["bump.c", "pool.c", "pool_sync.c", "poolset.c"]),
    "lfpool": (["pool.h"], ["pool_lockfree.c"]),
    "buddy": (["buddy.h"], ["buddy.c"]),
    "seqfit": (["seqfit.h"], ["tagged.c", "seqfit.c"]),
    "bump": (["bump.h"], ["bump.c"]),
    "dmm": (["dmm.h"], ["tagged.c", "dmm.c"]),
}
FIRST_SOURCE = "core.c"
UNIFORM_SOURCE = "heap.c"
# The lock-free pool needs C11 atomics; the rest is C99.
C11_SOURCES = {"pool_lockfree.c"}

SPDX = "/* SPDX-License-Identifier: MIT */"
OUT_DIR = "dropin"
INCLUDE_DIR = "include"
SRC_DIR = "src"

INCLUDE_RE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]')
DEFINE_RE = re.compile(r"^\s*#\s*define\s+([A-Za-z_]\w*)")
COND_OPEN_RE = re.compile(r"^\s*#\s*if(n?def)?\b")
COND_CLOSE_RE = re.compile(r"^\s*#\s*endif\b")


class Failure(Exception):
    """A problem the caller must fix (exit status 2)."""


@dataclass
class Line:
    text: str
    origin: tuple[str, int] | None  # library file (relative) and line, None for generated text


def rel(path: Path, root: Path) -> str:
    return path.relative_to(root).as_posix()


def read_lines(path: Path, root: Path) -> list[str]:
    if not path.is_file():
        raise Failure(f"{rel(path, root)} is missing (DROPINS at the top of tools/dropin.py lists it)")
    return path.read_text(encoding="utf-8").splitlines()


def resolve(name: str, including: Path, root: Path) -> Path:
    """A quoted include as the library's build finds it: beside the includer, then include/, then src/."""
    for base in (including.parent, root / INCLUDE_DIR, root / SRC_DIR):
        candidate = base / name
        if candidate.is_file():
            return candidate.resolve()
    raise Failure(f'{rel(including, root)} includes "{name}", found neither beside it nor in include/ or src/')


def guard_lines(lines: list[str]) -> int:
    """How many of the file's #if nestings are its include guard (0 or 1)."""
    directives = [line for line in lines if line.lstrip().startswith("#")]
    if len(directives) >= 2 and re.match(r"^\s*#\s*ifndef\s+(\w+)", directives[0]):
        name = directives[0].split()[-1]
        if re.match(rf"^\s*#\s*define\s+{name}\s*$", directives[1]):
            return 1
    return 0


class Unit:
    """One generated file: its lines, where each came from, and the includes it already holds."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.lines: list[Line] = []
        self.system: set[str] = set()  # system headers included unconditionally so far

    def text(self, text: str = "") -> None:
        self.lines.append(Line(text, None))

    def part(self, path: Path) -> None:
        """Append one library file, dropping its SPDX line, its quoted includes (the
        drop-in holds every file they name), repeated system includes and repeated blank lines."""
        name = rel(path, self.root)
        lines = read_lines(path, self.root)
        guarded = guard_lines(lines)
        depth = 0
        self.text(f"/* ---- {name} ---- */")
        for number, line in enumerate(lines, 1):
            if number == 1 and line == SPDX:
                continue
            include = INCLUDE_RE.match(line)
            if include and include.group(1) == '"':
                continue
            if not line.strip() and not self.lines[-1].text.strip():
                continue  # the lines dropped leave one blank line where they stood
            if include:
                header = include.group(2)
                if header in self.system:
                    continue
                if depth <= guarded:
                    self.system.add(header)
            if COND_OPEN_RE.match(line):
                depth += 1
            elif COND_CLOSE_RE.match(line):
                depth -= 1
            self.lines.append(Line(line, (name, number)))

    def headers_of(self, path: Path, seen: list[Path], stack: tuple[Path, ...] = ()) -> None:
        """The quoted headers path needs, dependencies first, each once (appended to seen)."""
        for line in read_lines(path, self.root):
            include = INCLUDE_RE.match(line)
            if not include or include.group(1) != '"':
                continue
            target = resolve(include.group(2), path, self.root)
            if target in stack:
                raise Failure(f"{rel(target, self.root)} includes itself through {rel(path, self.root)}")
            if target not in seen:
                self.headers_of(target, seen, stack + (target,))
                if target not in seen:
                    seen.append(target)

    def render(self) -> str:
        return "\n".join(line.text for line in self.lines) + "\n"


def banner(unit: Unit, what: list[str], sources: list[Path]) -> None:
    unit.text(SPDX)
    unit.text("/*")
    for line in what:
        unit.text(f" * {line}" if line else " *")
    unit.text(" *")
    unit.text(" * Generated by heapkit's tools/dropin.py from")
    for path in sources:
        unit.text(f" *   {rel(path, unit.root)}")
    unit.text(" * Do not edit: change those and regenerate with `python3 tools/dropin.py --write`.")
    unit.text(" */")


def generate(name: str, root: Path) -> tuple[Unit, Unit, list[Path], list[Path]]:
    """The header and the source of one drop-in, its .c files and the headers inlined."""
    public, own = DROPINS[name]
    wanted = [root / INCLUDE_DIR / "heapkit" / h for h in public]
    sources = [root / SRC_DIR / s for s in [FIRST_SOURCE, *own, UNIFORM_SOURCE]]

    h = Unit(root)
    headers: list[Path] = []
    for path in wanted:
        h.headers_of(path, headers)
        if path.resolve() not in headers:
            headers.append(path.resolve())
    banner(
        h,
        [
            f"heapkit_{name}.h: heapkit's {name} allocator, the uniform interface and the",
            f"configuration macros; with heapkit_{name}.c all a program needs of heapkit.",
            "Define HK_ALIGN, HK_HARDENING and the allocator's own macros (-D...) as",
            "for the library, alike for every file that includes this header.",
        ],
        headers,
    )
    guard = f"HEAPKIT_DROPIN_{name.upper()}_H"
    h.text(f"#ifndef {guard}")
    h.text(f"#define {guard}")
    for path in headers:
        h.text()
        h.part(path)
    h.text()
    h.text(f"#endif /* {guard} */")

    c = Unit(root)
    c.system = set(h.system)
    private: list[Path] = []
    for path in sources:
        c.headers_of(path, private)
    private = [p for p in private if p not in headers]
    for path in private:
        if path.is_relative_to((root / INCLUDE_DIR).resolve()):
            raise Failure(f"heapkit_{name}'s sources include {rel(path, root)}: add it to its headers in DROPINS")
    banner(
        c,
        [
            f"heapkit_{name}.c: heapkit's {name} allocator in one translation unit: compile it",
            f"with heapkit_{name}.h beside it (C{'11' if set(own) & C11_SOURCES else '99'}, freestanding).",
        ],
        private + sources,
    )
    c.text(f'#include "heapkit_{name}.h"')
    c.text()
    c.text("/*")
    c.text(" * The helpers the library's sources share stay inside this file: another")
    c.text(" * drop-in has its own. In the library they are external, so one that this")
    c.text(" * allocator leaves uncalled, or a level leaves undefined, is no warning there;")
    c.text(" * nor is it here.")
    c.text(" */")
    c.text("#define HK_INTERNAL static")
    c.text("#if defined(__GNUC__) || defined(__clang__)")
    c.text('#pragma GCC diagnostic ignored "-Wunused-function"')
    c.text("#endif")
    for path in private:
        c.text()
        c.part(path)
    for path in sources:
        c.text()
        if path.name == UNIFORM_SOURCE:
            c.text("/*")
            c.text(" * The uniform interface (hk_malloc, hk_free, ... hk_error_name). A program")
            c.text(" * that links two drop-ins sets HK_DROPIN_UNIFORM=0 in all but one of them:")
            c.text(" * these functions would otherwise be defined twice. One drop-in's serve")
            c.text(" * every heap, each reaching its allocator through its own hk_ops_t table.")
            c.text(" */")
            c.text("#ifndef HK_DROPIN_UNIFORM")
            c.text("#define HK_DROPIN_UNIFORM 1")
            c.text("#endif")
            c.text("#if HK_DROPIN_UNIFORM")
        c.part(path)
        if path.name == UNIFORM_SOURCE:
            c.text("#endif /* HK_DROPIN_UNIFORM */")
    return h, c, sources, headers + private


# ---- clashes: file-scope names two sources of one drop-in declare ----

KEYWORDS = set(
    """auto break case char const continue default do double else enum extern float for goto if inline int long
    register restrict return short signed sizeof static struct switch typedef union unsigned void volatile while
    _Alignas _Alignof _Atomic _Bool _Complex _Generic _Imaginary _Noreturn _Static_assert _Thread_local
    __attribute__ __inline __inline__ __restrict __restrict__ __extension__ __typeof__ __asm__""".split()
)
TOKEN_RE = re.compile(r"[A-Za-z_]\w*|\d[\w.]*|->|\+\+|--|<<=|>>=|\.\.\.|[<>=!+\-*/%&|^]=|&&|\|\||<<|>>|\S")


def uncommented(text: str) -> str:
    """C text with comments and literals blanked."""
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    text = re.sub(r"//[^\n]*", " ", text)
    text = re.sub(r'"(\\.|[^"\\\n])*"', '""', text)
    return re.sub(r"'(\\.|[^'\\\n])*'", "0", text)


def c_tokens(text: str) -> list[str]:
    """The tokens of a C file with comments, literals and preprocessor lines removed."""
    return TOKEN_RE.findall(re.sub(r"^\s*#(.*\\\n)*.*$", " ", uncommented(text), flags=re.M))


def skip_group(tokens: list[str], i: int) -> int:
    """Index past the bracketed group opening at tokens[i]."""
    pairs = {"(": ")", "[": "]", "{": "}"}
    depth = 0
    for j in range(i, len(tokens)):
        if tokens[j] in pairs:
            depth += 1
        elif tokens[j] in pairs.values():
            depth -= 1
            if depth == 0:
                return j + 1
    return len(tokens)


def declared(tokens: list[str], macros: dict[str, str]) -> tuple[list[str], bool]:
    """The names one file-scope declaration introduces, and whether they are private to the file
    (static, also through a macro such as HK_HOT, a typedef or a tag)."""
    private = any(t in ("static", "typedef") or "static" in macros.get(t, "") for t in tokens)
    names: list[str] = []
    candidate = None  # the current declarator's last identifier so far
    named = False  # its name is known: parameters or an initializer follow

    def settle() -> None:
        nonlocal candidate
        if candidate is not None and not named and candidate not in macros:
            names.append(candidate)
        candidate = None

    i = 0
    while i < len(tokens):
        t = tokens[i]
        after = tokens[i + 1] if i + 1 < len(tokens) else ""
        if t in ("__attribute__", "_Alignas", "_Atomic", "__typeof__") and after == "(":
            i = skip_group(tokens, i + 1)
            continue
        if t in ("struct", "union", "enum"):
            body = i + 1 if after == "{" else i + 2
            if tokens[body : body + 1] == ["{"]:
                if after != "{":
                    names.append(f"{t} {after}")
                    private = True
                i = skip_group(tokens, body)
            else:
                i += 2
            continue
        if t == "(" and after == "*":  # a parenthesised declarator, (*name)(...)
            i += 2
            continue
        if t in ("(", "="):
            settle()
            named = True
        if t in ("(", "[", "{"):
            i = skip_group(tokens, i)
            continue
        if t == ",":
            settle()
            named = False
        elif re.match(r"[A-Za-z_]\w*$", t) and t not in KEYWORDS and not named:
            candidate = t
        i += 1
    settle()
    return names, private


def file_scope_names(text: str, macros: dict[str, str]) -> dict[str, bool]:
    """Every name a file declares at file scope, and whether it is private there."""
    tokens = c_tokens(text)
    result: dict[str, bool] = {}
    decl: list[str] = []
    i = 0
    while i < len(tokens):
        t = tokens[i]
        if t == "{":
            end = skip_group(tokens, i)
            if decl and decl[-1] == ")":  # a function body ends the definition
                for name, private in [(n, p) for ns, p in [declared(decl, macros)] for n in ns]:
                    result[name] = result.get(name, False) or private
                decl = []
            else:
                decl.extend(tokens[i:end])
            i = end
            continue
        if t == ";":
            if decl:
                names, private = declared(decl, macros)
                for name in names:
                    result[name] = result.get(name, False) or private
            decl = []
        else:
            decl.append(t)
        i += 1
    return result


def macro_table(paths: list[Path]) -> dict[str, str]:
    """Every macro the files define, with its replacement text; HK_INTERNAL as a drop-in defines it."""
    table: dict[str, str] = {"HK_INTERNAL": "static"}
    for path in paths:
        for line in path.read_text(encoding="utf-8").splitlines():
            m = re.match(r"^\s*#\s*define\s+(\w+)(\([^)]*\))?\s*(.*)$", line)
            if m:
                table[m.group(1)] = table.get(m.group(1), "") + " " + m.group(3)
    return table


def clashes(name: str, root: Path, sources: list[Path], headers: list[Path]) -> list[str]:
    """One line per name two of the drop-in's sources declare at file scope, one of them privately."""
    macros = macro_table(headers + sources)
    where: dict[str, list[tuple[str, bool]]] = {}
    for path in sources:
        for ident, private in file_scope_names(path.read_text(encoding="utf-8"), macros).items():
            where.setdefault(ident, []).append((rel(path, root), private))
    report = []
    for ident in sorted(where):
        files = where[ident]
        if len(files) > 1 and any(private for _, private in files):
            report.append(f"heapkit_{name}.c: '{ident}' is declared at file scope in {' and '.join(f for f, _ in files)}")
    # A source's macro stays defined for the sources after it.
    texts = {rel(path, root): path.read_text(encoding="utf-8") for path in sources}
    words = {src: set(TOKEN_RE.findall(uncommented(text))) for src, text in texts.items()}
    for src, text in texts.items():
        for line in text.splitlines():
            define = DEFINE_RE.match(line)
            if not define:
                continue
            others = [other for other in texts if other != src and define.group(1) in words[other]]
            if others:
                report.append(f"heapkit_{name}.c: macro '{define.group(1)}' of {src} is also a name in {' and '.join(others)}")
    return sorted(set(report))


# ---- compiling what was written ----


def compile_check(name: str, units: dict[str, Unit], out: Path) -> list[str]:
    """The compiler's complaints about one drop-in, each at the library line it came from."""
    compiler = os.environ.get("CC", "cc")
    if shutil.which(compiler) is None:
        raise Failure(f"no C compiler '{compiler}' to check the drop-ins with (set CC)")
    std = "-std=c11" if set(DROPINS[name][1]) & C11_SOURCES else "-std=c99"
    with tempfile.TemporaryDirectory() as tmp:
        for suffix in (".c", ".h"):
            shutil.copy(out / f"heapkit_{name}{suffix}", tmp)
        for level in ("0", "1", "2"):
            run = subprocess.run(
                [compiler, std, "-Wall", "-Wextra", "-Werror", "-ffreestanding", f"-DHK_HARDENING={level}",
                 "-fsyntax-only", f"heapkit_{name}.c"],
                cwd=tmp, capture_output=True, text=True, check=False,
            )
            if run.returncode != 0:
                return [f"heapkit_{name} (HK_HARDENING={level}): {where(units, line)}"
                        for line in run.stderr.splitlines()]
    return []


def where(units: dict[str, Unit], diagnostic: str) -> str:
    """A diagnostic about heapkit_<name>.c:N or .h:N pointed at the library line it came from."""
    m = re.match(r"(heapkit_\w+\.[ch]):(\d+):(?:\d+:)?(.*)$", diagnostic)
    origin = units[m.group(1)].lines[int(m.group(2)) - 1].origin if m else None
    return f"{origin[0]}:{origin[1]}:{m.group(3)}" if m and origin else diagnostic


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    mode = parser.add_mutually_exclusive_group(required=True)
    mode.add_argument("--write", action="store_true", help="regenerate every drop-in")
    mode.add_argument("--check", action="store_true", help="exit 1 if a committed drop-in is stale")
    args = parser.parse_args()
    root = Path(__file__).resolve().parent.parent
    out = root / OUT_DIR
    status = 0
    try:
        for name in DROPINS:
            h, c, sources, headers = generate(name, root)
            found = clashes(name, root, sources, headers)
            if found:
                print("\n".join(found))
                print(f"dropin.py: heapkit_{name} not {'written' if args.write else 'checked'}: "
                      "rename the names above in src/ (one translation unit cannot hold both)")
                status = 1
                continue
            for unit, suffix in ((h, ".h"), (c, ".c")):
                path = out / f"heapkit_{name}{suffix}"
                text = unit.render()
                current = path.read_text(encoding="utf-8") if path.is_file() else None
                if args.write and current != text:
                    out.mkdir(exist_ok=True)
                    path.write_text(text, encoding="utf-8")
                    print(f"dropin.py: wrote {rel(path, root)}")
                elif args.check and current != text:
                    print(f"dropin.py: {rel(path, root)} is stale (python3 tools/dropin.py --write)")
                    status = 1
            if args.write:
                complaints = compile_check(name, {f"heapkit_{name}.h": h, f"heapkit_{name}.c": c}, out)
                if complaints:
                    print("\n".join(complaints))
                    status = 1
        for path in sorted(out.glob("heapkit_*.[ch]")):
            if path.stem.removeprefix("heapkit_") in DROPINS:
                continue
            if args.write:
                path.unlink()
                print(f"dropin.py: removed {rel(path, root)} (no drop-in of that name)")
            else:
                print(f"dropin.py: {rel(path, root)} is no drop-in of DROPINS (python3 tools/dropin.py --write removes it)")
                status = 1
    except Failure as failure:
        print(f"dropin.py: {failure}", file=sys.stderr)
        return 2
    return status


if __name__ == "__main__":
    sys.exit(main())
