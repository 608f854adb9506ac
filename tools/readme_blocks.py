# SPDX-License-Identifier: MIT
"""readme_blocks.py: the README's generated blocks, for the tools that own them.

A tool owns the blocks between ``<!-- TOOL: NAME -->`` and ``<!-- /TOOL -->``
(readme_tables.py its ``readme_tables`` blocks, flash_table.py its
``flash_table`` one): ``pattern`` finds them, ``render`` fills them from a fresh
run, and ``finish`` writes the README (``--write``) or checks it (``--check``:
exit 1 with a unified diff where it is stale).
"""

from __future__ import annotations

import difflib
import re
import sys
from pathlib import Path


class BlockError(Exception):
    """The README's blocks do not match what the tool generates; the message says how."""


def pattern(tool: str) -> re.Pattern[str]:
    return re.compile(rf"(<!-- {tool}: (\w[\w-]*) -->\n)(.*?)(<!-- /{tool} -->)", re.S)


def render(text: str, tool: str, blocks: dict[str, str]) -> str:
    """text with each of tool's blocks replaced by blocks[name]; every block present, none unknown."""
    seen: set[str] = set()

    def fill(m: re.Match[str]) -> str:
        name = m.group(2)
        if name not in blocks:
            raise BlockError(f"README.md: unknown generated block {name!r} (have: {', '.join(blocks)})")
        seen.add(name)
        return m.group(1) + blocks[name] + m.group(4)

    out = pattern(tool).sub(fill, text)
    if missing := set(blocks) - seen:
        raise BlockError("README.md lacks " + ", ".join(f"<!-- {tool}: {name} -->" for name in sorted(missing))
                         + f" ... <!-- /{tool} -->")
    return out


def finish(readme: Path, text: str, new: str, write: bool, tool: str, what: str, fresh: str) -> int:
    """Write new over readme (write), or compare: 0 when current, 1 with a diff when stale."""
    if write:
        readme.write_text(new, encoding="utf-8")
        print(f"{tool}: README.md's {what} regenerated", file=sys.stderr)
        return 0
    if new != text:
        sys.stdout.writelines(difflib.unified_diff(text.splitlines(True), new.splitlines(True),
                                                   "README.md", f"README.md ({fresh})"))
        print(f"{tool}: README.md's {what} differs from {fresh}: run tools/{tool} --write", file=sys.stderr)
        return 1
    print(f"{tool}: README.md's {what} matches {fresh}", file=sys.stderr)
    return 0
