#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# check_spdx.sh [REPO]: every tracked source file starts with the MIT SPDX
# line (the second line after a shebang). Sources are C, assembly, linker
# scripts, Python, shell, CMake, make, TOML and the .in templates; documents
# (.md), data (lab/tests/data/) and JSON, which has no comments, are not.
# Prints each offender and exits 1, or prints the count checked and exits 0.
set -euo pipefail
cd "${1:-$(dirname "$0")/../..}"

checked=0
bad=0
while IFS= read -r -d '' f; do
    case "$f" in
        lab/tests/data/*) continue ;;
        *.c|*.h|*.S|*.ld|*.def) want='/* SPDX-License-Identifier: MIT */' ;;
        *.py|*.sh|*.cmake|*.toml|*.in|CMakeLists.txt|*/CMakeLists.txt|Makefile|.ci/run)
            want='# SPDX-License-Identifier: MIT' ;;
        *) continue ;;
    esac
    checked=$((checked + 1))
    { IFS= read -r first || :; IFS= read -r second || :; } <"$f"
    [[ $first == '#!'* ]] && first=$second
    if [[ $first != "$want" ]]; then
        echo "check_spdx.sh: $f: first line (after any shebang) is not '$want'"
        bad=$((bad + 1))
    fi
done < <(git ls-files -z)
if ((checked == 0)); then
    echo "check_spdx.sh: no tracked source files found (not a git checkout?)" >&2
    exit 1
fi
if ((bad)); then
    echo "check_spdx.sh: $bad of $checked source files lack the SPDX line"
    exit 1
fi
echo "check_spdx.sh: $checked source files, all with the SPDX line"
