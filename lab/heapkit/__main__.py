# SPDX-License-Identifier: MIT
"""``heapkit`` and ``python -m heapkit``: the command line (heapkit/cli.py), with a Ctrl-C
that comes while it is still loading reported like any other: one line, status 130."""

from __future__ import annotations

import sys


def main() -> int:
    try:
        from .cli import main as cli_main
    except KeyboardInterrupt:
        print("heapkit: interrupted", file=sys.stderr)
        return 130
    return cli_main()


if __name__ == "__main__":
    sys.exit(main())
