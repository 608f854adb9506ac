# SPDX-License-Identifier: MIT
"""Argument types and actions shared by every ``heapkit`` subcommand (heapkit/cli.py and
the subcommands other modules define, such as ``netapp``).

Byte sizes are read the same way everywhere, and as hk-replay and hk-netapp read them: a
decimal number with an optional K, M or G suffix (KiB, MiB, GiB; either case), e.g.
65536, 64K, 3M, 1G. Every option that takes names has ``--list``.
"""

from __future__ import annotations

import argparse
import re
from typing import Callable, Sequence

_BYTES = re.compile(r"([0-9]+)([KMG]?)", re.IGNORECASE)
_SCALE = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30}


def parse_bytes(text: str) -> int:
    """*text* as a byte count; ValueError naming the syntax when it is not one."""
    m = _BYTES.fullmatch(text.strip())
    if m is None:
        raise ValueError(f"expected a byte size (N, NK, NM or NG, e.g. 64K), got {text!r}")
    return int(m.group(1)) * _SCALE[m.group(2).upper()]


def byte_size(text: str) -> int:
    """argparse type: a positive byte size."""
    try:
        v = parse_bytes(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None
    if v <= 0:
        raise argparse.ArgumentTypeError(f"expected a positive byte size, got {text!r}")
    return v


def percent(text: str) -> float:
    """argparse type: a percentage from 0 to 1000."""
    try:
        v = float(text)
    except ValueError:
        v = -1.0
    if not 0 <= v <= 1000:
        raise argparse.ArgumentTypeError(f"expected a percentage from 0 to 1000, got {text!r}")
    return v


def positive_int(text: str) -> int:
    """argparse type: a positive decimal integer."""
    try:
        v = int(text, 10)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if v <= 0:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return v


class ListAction(argparse.Action):
    """``--list [OPTION]``: print the names each of the command's name-taking options
    accepts (``OPTION: name name ...`` per line), or only OPTION's, one per line; then exit,
    like --help, before the other arguments are checked.

    Options and positionals with ``choices`` are listed by themselves; *names* adds the
    others, as option -> a function returning the names (called only when listed).
    """

    def __init__(self, option_strings: Sequence[str], dest: str,
                 names: dict[str, Callable[[], Sequence[str]]] | None = None, **kw) -> None:
        super().__init__(option_strings, dest, nargs="?", default=argparse.SUPPRESS,
                         metavar="OPTION", help="print the names the name-taking options "
                         "accept (with OPTION, only its names, one per line) and exit; "
                         "'--OPTION --list' works too")
        self.names = names or {}

    def lists(self, parser: argparse.ArgumentParser) -> dict[str, Callable[[], Sequence[str]]]:
        out: dict[str, Callable[[], Sequence[str]]] = {}
        for a in parser._actions:
            if a.choices is None or isinstance(a, argparse._SubParsersAction):
                continue
            key = max(a.option_strings, key=len) if a.option_strings else a.metavar or a.dest
            out[key] = lambda a=a: [str(c) for c in a.choices]
        out.update(self.names)
        return out

    def __call__(self, parser, namespace, value, option_string=None):
        lists = self.lists(parser)
        if value:
            key = value if value in lists else "--" + value.lstrip("-")
            if key not in lists:
                parser.error(f"--list: {value} takes no names (those that do: "
                             f"{', '.join(lists)})")
            print("\n".join(lists[key]()))
        else:
            for key, names in lists.items():
                print(f"{key}: {' '.join(names())}")
        parser.exit()


def list_first(argv: Sequence[str]) -> list[str]:
    """*argv* with ``--OPTION --list`` written as ``--list=--OPTION``, which ListAction reads
    (up to a ``--``: what follows it is another program's)."""
    out: list[str] = []
    for i, a in enumerate(argv):
        if a == "--":
            return out + list(argv[i:])
        if a == "--list" and out and out[-1].startswith("--") and "=" not in out[-1] \
                and out[-1] != "--list":
            out[-1] = f"--list={out[-1]}"
        else:
            out.append(a)
    return out
