# SPDX-License-Identifier: MIT
"""The lab's native artefacts (hk-replay, libhkcapture.so, ...): where they are, and building them.

Two layouts, told apart by ``heapkit/bin``:

- **installed** (``pip install ./lab``; scikit-build-core runs the project's
  CMake and lab/cmake/LabWheel.cmake installs into the package): executables
  in ``heapkit/bin``, shared libraries in ``heapkit/lib``, and the C sources
  the lab compiles at run time (the target driver, explore's firmware image)
  under ``heapkit/sources``, laid out as in the repository. Nothing is built
  on demand; files the lab derives go to :data:`CACHE_DIR`.
- **checkout** (``make venv`` installs lab/ editable, without CMake): the
  CMake tree ``build/gcc`` under the repository root, the one ``make build``
  produces. A missing artefact is configured and built on demand.

Either way an environment variable (docs/environment.md) can point at
another build of each artefact.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

from .errors import HeapkitError

PACKAGE_DIR = Path(__file__).resolve().parent
INSTALLED = (PACKAGE_DIR / "bin").is_dir()
# The repository the package runs from, or None when installed.
CHECKOUT = None if INSTALLED else PACKAGE_DIR.parents[1]
# The C sources (src/, include/, lab/target/, ports/baremetal/, tools/fetch_peers.sh).
SOURCE_ROOT = PACKAGE_DIR / "sources" if CHECKOUT is None else CHECKOUT
BUILD_DIR = None if CHECKOUT is None else CHECKOUT / "build" / "gcc"


def _cache_dir() -> Path:
    if os.environ.get("HEAPKIT_CACHE"):
        return Path(os.environ["HEAPKIT_CACHE"]).resolve()
    if CHECKOUT is not None:
        return CHECKOUT / "build"
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "heapkit"


# Files the lab derives and keeps between runs (default network traces, target builds).
CACHE_DIR = _cache_dir()

# CMake target -> its file in the checkout's build tree. An installed lab has
# the same file in heapkit/lib (shared libraries) or heapkit/bin (the rest).
_ARTEFACTS = {
    "hk-replay": "lab/engine/hk-replay",
    "hk-replay-selftest": "lab/engine/hk-replay-selftest",
    "hkcapture": "lab/capture/libhkcapture.so",
    "hk-netapp": "lab/netapps/hk-netapp",
    "hk-explore": "lab/explore/hk-explore",
    "heapkit_malloc": "ports/posix/libheapkit_malloc.so",
    "hk-kth-process": "ports/posix/hk-kth-process",
    "hk-fits-process": "ports/posix/hk-fits-process",
    "heapkit": "libheapkit.a",
    "test_misuse": "tests/test_misuse",
    "test_misuse_l0": "tests/test_misuse_l0",
    "test_corruption": "tests/test_corruption",
}

# Why an installed lab can lack an artefact: what was missing when it was built.
_NOT_INSTALLED = {
    "hk-netapp": "libpcap was missing when the lab was built: install libpcap-dev",
    "hk-replay-selftest": "it is a test binary: run the lab's tests from a checkout",
    "heapkit": "the C library installs with CMake (docs/install.md), not with the lab",
    "test_misuse": "the misuse matrices are test programs: run advise from a checkout to measure them",
    "test_misuse_l0": "the misuse matrices are test programs: run advise from a checkout to measure them",
    "test_corruption": "the misuse matrices are test programs: run advise from a checkout to measure them",
}


def path(target: str) -> Path:
    """Where *target*'s file is (installed) or goes (checkout build tree); it may not exist yet."""
    rel = Path(_ARTEFACTS[target])
    if BUILD_DIR is None:
        return PACKAGE_DIR / ("lib" if rel.suffix in (".so", ".a") else "bin") / rel.name
    return BUILD_DIR / rel


def _run(argv: list[str], what: str) -> None:
    try:
        proc = subprocess.run(argv, cwd=CHECKOUT, capture_output=True, text=True)
    except FileNotFoundError:
        raise HeapkitError(f"cmake not found: install cmake to build {what}") from None
    if proc.returncode != 0:
        tail = (proc.stdout + proc.stderr).strip().splitlines()[-15:]
        raise HeapkitError(f"building {what} failed ({' '.join(argv)}):\n" + "\n".join(tail))


def build(target: str) -> Path:
    """*target*'s file: configured (if needed) and built in a checkout, as installed otherwise.

    A no-op for CMake when the artefact is up to date, so tests call it to be
    sure they run the current sources.
    """
    out = path(target)
    if BUILD_DIR is None:
        if out.exists():
            return out
        why = _NOT_INSTALLED.get(target, "it was not built for this platform")
        raise HeapkitError(f"{out.name} is not part of this heapkit installation ({why}, "
                           f"then reinstall the lab: pip install CHECKOUT/lab)")
    if shutil.which("cmake") is None:
        raise HeapkitError(f"cmake not found: install cmake to build {out.name}")
    if not (BUILD_DIR / "CMakeCache.txt").exists():
        _run(["cmake", "-S", str(CHECKOUT), "-B", str(BUILD_DIR), "-DCMAKE_C_COMPILER=gcc",
              "-DHEAPKIT_LAB=ON", "-DHEAPKIT_LAB_PEERS=ON"], out.name)
    _run(["cmake", "--build", str(BUILD_DIR), "--target", target, "-j2"], out.name)
    if not out.exists():
        raise HeapkitError(f"{out}: the build finished but produced nothing "
                           f"(is HEAPKIT_LAB off in {BUILD_DIR / 'CMakeCache.txt'}?)")
    return out


def find(env: str, target: str) -> Path:
    """``$env`` if set, else *target*'s installed file or the build tree's, built if missing."""
    value = os.environ.get(env)
    if value:
        found = Path(value)
        if not found.is_file():
            raise HeapkitError(f"{env}={value}: no such file")
        return found.resolve()
    out = path(target)
    return out if out.exists() else build(target)


def run_json(argv: list[str], name: str, preload: Path | None = None, env: dict[str, str] | None = None,
             stdin: str | None = None) -> dict:
    """Run one of the lab's measuring processes (*name* in errors) and return the JSON it prints.
    It starts without the caller's HEAPKIT_* and LD_PRELOAD; with *preload*, under that library
    (libheapkit_malloc.so) and the HEAPKIT_* settings in *env*."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith("HEAPKIT_") and k != "LD_PRELOAD"}
    if preload is not None:
        clean.update(LD_PRELOAD=str(preload), **(env or {}))
    proc = subprocess.run(argv, input=stdin, env=clean, capture_output=True, text=True)
    if proc.returncode != 0:
        last = proc.stderr.strip().splitlines()[-1:] or [f"exit status {proc.returncode}"]
        raise HeapkitError(f"{name}: {last[0]}")
    try:
        return json.loads(proc.stdout)
    except json.JSONDecodeError as e:
        raise HeapkitError(f"{name} printed malformed JSON ({e})") from None
