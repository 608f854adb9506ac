# SPDX-License-Identifier: MIT
"""The lab's native artefacts (hk-replay, libhkcapture.so): where they are, and building them.

They live in the CMake tree ``build/gcc`` under the repository root, the one
``make build`` produces. A missing artefact is configured and built on
demand; an environment variable can point at another build instead.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from .errors import HeapkitError

REPO_ROOT = Path(__file__).resolve().parents[2]
BUILD_DIR = REPO_ROOT / "build" / "gcc"


def _run(argv: list[str], what: str) -> None:
    try:
        proc = subprocess.run(argv, cwd=REPO_ROOT, capture_output=True, text=True)
    except FileNotFoundError:
        raise HeapkitError(f"cmake not found: install cmake to build {what}") from None
    if proc.returncode != 0:
        tail = (proc.stdout + proc.stderr).strip().splitlines()[-15:]
        raise HeapkitError(f"building {what} failed ({' '.join(argv)}):\n" + "\n".join(tail))


def build(target: str, path: Path) -> Path:
    """Configure (if needed) and build CMake *target*, expected at *path*; returns *path*.

    A no-op for CMake when the artefact is up to date, so tests call it to be
    sure they run the current sources.
    """
    if shutil.which("cmake") is None:
        raise HeapkitError(f"cmake not found: install cmake to build {path.name}")
    if not (BUILD_DIR / "CMakeCache.txt").exists():
        _run(["cmake", "-S", str(REPO_ROOT), "-B", str(BUILD_DIR), "-DCMAKE_C_COMPILER=gcc",
              "-DHEAPKIT_LAB=ON", "-DHEAPKIT_LAB_PEERS=ON"], path.name)
    _run(["cmake", "--build", str(BUILD_DIR), "--target", target, "-j2"], path.name)
    if not path.exists():
        raise HeapkitError(f"{path}: the build finished but produced nothing "
                           f"(is HEAPKIT_LAB off in {BUILD_DIR / 'CMakeCache.txt'}?)")
    return path


def find(env: str, target: str, path: Path) -> Path:
    """``$env`` if set, else *path* from the build tree, built if missing."""
    value = os.environ.get(env)
    if value:
        found = Path(value)
        if not found.is_file():
            raise HeapkitError(f"{env}={value}: no such file")
        return found.resolve()
    return path if path.exists() else build(target, path)
