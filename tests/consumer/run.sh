#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# run.sh [WORK]: build tests/consumer/app, a project outside heapkit, against
# heapkit each way a user can take it, and run it (make consumer-test):
#
#   find_package      heapkit installed (cmake --install) into WORK/prefix
#   add_subdirectory  heapkit's source tree
#   FetchContent      a source archive of this tree (URL file://, SHA256 checked)
#   pkg-config        a plain cc command line from `pkg-config --cflags --libs heapkit`
#   Cortex-M4F        heapkit cross-built and installed with a toolchain file,
#                     the app cross-built against it (find_package) and linked
#
# heapkit is built with HEAPKIT_ALIGN=16 and HEAPKIT_HARDENING=2, not the
# defaults, so a consumer that does not receive HK_ALIGN and HK_HARDENING
# from the package fails to compile (main.c). Needs cmake, a C compiler,
# pkg-config, and arm-none-eabi-gcc with newlib (make deps installs them).
set -euo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
work=${1:-$root/build/consumer}
jobs=${JOBS:-2}
app=$root/tests/consumer/app
align=16
hardening=2
expect=(-DCONSUMER_EXPECT_ALIGN=$align -DCONSUMER_EXPECT_HARDENING=$hardening)
# The library alone: the other parts are on by default in a top-level build.
lib_only=(-DHEAPKIT_TESTS=OFF -DHEAPKIT_LAB=OFF -DHEAPKIT_MALLOC=OFF
          -DHEAPKIT_ALIGN=$align -DHEAPKIT_HARDENING=$hardening -DCMAKE_BUILD_TYPE=Release)

for tool in cmake cc git tar pkg-config arm-none-eabi-gcc arm-none-eabi-readelf arm-none-eabi-nm; do
    command -v "$tool" >/dev/null 2>&1 || { echo "run.sh: $tool not found (make deps installs it)" >&2; exit 1; }
done

rm -rf "$work"
mkdir -p "$work"
work=$(cd "$work" && pwd)
# shellcheck source=../support/steps.sh
. "$root/tests/support/steps.sh"

configure_build() { # SRC BUILD ARGS...
    local src=$1 build=$2
    shift 2
    cmake -S "$src" -B "$build" "$@" && cmake --build "$build" -j "$jobs"
}

install_heapkit() {
    configure_build "$root" "$work/heapkit" "${lib_only[@]}" &&
        cmake --install "$work/heapkit" --prefix "$work/prefix"
}

find_package_way() {
    configure_build "$app" "$work/find_package" -DCONSUME=find_package \
        -DCMAKE_PREFIX_PATH="$work/prefix" "${expect[@]}" &&
        "$work/find_package/consumer"
}

# The version file: 0.2 accepted above; an older minor series refused.
version_refused() {
    local out
    if out=$(cmake -S "$app" -B "$work/find_package_0.1" -DCONSUME=find_package -DCONSUMER_HEAPKIT_VERSION=0.1 \
        -DCMAKE_PREFIX_PATH="$work/prefix" 2>&1); then
        echo "find_package(heapkit 0.1) accepted heapkit 0.2"
        return 1
    fi
    echo "$out"
    grep -q 'heapkitConfig.cmake, version: 0.2' <<<"$out"
}

add_subdirectory_way() {
    configure_build "$app" "$work/add_subdirectory" -DCONSUME=add_subdirectory \
        -DHEAPKIT_SOURCE_DIR="$root" -DHEAPKIT_ALIGN=$align -DHEAPKIT_HARDENING=$hardening "${expect[@]}" &&
        "$work/add_subdirectory/consumer"
}

# An archive of the files git tracks or would track, as a release tarball
# holds them (so uncommitted edits are tested too), under one top directory.
fetchcontent_way() {
    local archive=$work/heapkit-src.tar.gz sha
    (cd "$root" && git ls-files -z --cached --others --exclude-standard |
        while IFS= read -r -d '' f; do [ -e "$f" ] && printf '%s\0' "$f"; done |
        tar --null -T - --transform 's,^,heapkit/,' -czf "$archive")
    sha=$(sha256sum "$archive" | cut -d' ' -f1)
    configure_build "$app" "$work/FetchContent" -DCONSUME=FetchContent \
        -DHEAPKIT_URL="file://$archive" -DHEAPKIT_URL_HASH="SHA256=$sha" \
        -DHEAPKIT_ALIGN=$align -DHEAPKIT_HARDENING=$hardening "${expect[@]}" &&
        "$work/FetchContent/consumer"
}

pkg_config_way() {
    local flags
    flags=$(PKG_CONFIG_PATH="$work/prefix/lib/pkgconfig" pkg-config --cflags --libs heapkit)
    echo "pkg-config --cflags --libs heapkit: $flags"
    # shellcheck disable=SC2086
    cc -std=c99 -Wall -Wextra -Wpedantic -Werror -DCONSUMER_EXPECT_ALIGN=$align \
        -DCONSUMER_EXPECT_HARDENING=$hardening "$app/main.c" $flags -o "$work/pkg-config-consumer" &&
        "$work/pkg-config-consumer"
}

# Cross: heapkit as the top-level project under the toolchain file builds the
# library alone (its host parts default to off when cross-compiling).
cortex_m4f_way() {
    local tc=$root/tests/consumer/arm-cortex-m4f.cmake elf
    configure_build "$root" "$work/heapkit-m4f" -DCMAKE_TOOLCHAIN_FILE="$tc" \
        -DHEAPKIT_ALIGN=$align -DHEAPKIT_HARDENING=$hardening -DCMAKE_BUILD_TYPE=MinSizeRel &&
        cmake --install "$work/heapkit-m4f" --prefix "$work/prefix-m4f" &&
        configure_build "$app" "$work/m4f" -DCMAKE_TOOLCHAIN_FILE="$tc" -DCONSUME=find_package \
            -DCMAKE_PREFIX_PATH="$work/prefix-m4f" -DCMAKE_BUILD_TYPE=MinSizeRel "${expect[@]}" || return 1
    elf=$work/m4f/consumer
    # A Cortex-M4 (ARMv7E-M) hard-float program: the linker accepted the
    # library's objects, so they share the ABI.
    arm-none-eabi-readelf -A "$elf" | tee "$work/m4f-attributes.txt"
    grep -q 'Tag_CPU_arch: v7E-M' "$work/m4f-attributes.txt" &&
        grep -q 'Tag_ABI_VFP_args: VFP registers' "$work/m4f-attributes.txt" &&
        arm-none-eabi-nm "$elf" | grep -q ' T hk_tlsf_init$'
}

step "install (library only, HK_ALIGN=$align, HK_HARDENING=$hardening)" install_heapkit
step "find_package(heapkit 0.2 CONFIG)" find_package_way
step "find_package(heapkit 0.1) refused by the version file" version_refused
step "add_subdirectory" add_subdirectory_way
step "FetchContent (URL file://, SHA256)" fetchcontent_way
step "pkg-config --cflags --libs heapkit, plain cc" pkg_config_way
step "Cortex-M4F cross build (toolchain file, find_package)" cortex_m4f_way
steps_summary consumer
