#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Code size of every library source on four embedded targets, as a markdown
# table of .text/.data/.bss bytes (Berkeley `size`: text includes rodata).
#   tools/cross_sizes.sh [output-dir]     (objects go to output-dir, default build/sizes)
# Flags: -Os -Werror with the library's warnings, -ffunction-sections
# -fdata-sections, freestanding C99 (C11 for the lock-free pool), no C
# library headers at all; a compile error fails the script.
set -euo pipefail
cd "$(dirname "$0")/.."

out=${1:-build/sizes}
mkdir -p "$out"

targets=("Cortex-M0+" "Cortex-M3" "Cortex-M4F" "RV32IMAC")
declare -A cc=(
    ["Cortex-M0+"]=arm-none-eabi-gcc ["Cortex-M3"]=arm-none-eabi-gcc
    ["Cortex-M4F"]=arm-none-eabi-gcc ["RV32IMAC"]=riscv64-unknown-elf-gcc)
declare -A size=(
    ["Cortex-M0+"]=arm-none-eabi-size ["Cortex-M3"]=arm-none-eabi-size
    ["Cortex-M4F"]=arm-none-eabi-size ["RV32IMAC"]=riscv64-unknown-elf-size)
declare -A arch=(
    ["Cortex-M0+"]="-mcpu=cortex-m0plus -mthumb"
    ["Cortex-M3"]="-mcpu=cortex-m3 -mthumb"
    ["Cortex-M4F"]="-mcpu=cortex-m4 -mthumb -mfpu=fpv4-sp-d16 -mfloat-abi=hard"
    ["RV32IMAC"]="-march=rv32imac -mabi=ilp32")
common=(-Os -Werror -Wall -Wextra -Wpedantic -Wshadow -Wconversion -ffreestanding
        -ffunction-sections -fdata-sections -Iinclude -Isrc -c)

sources=(src/*.c)
declare -A total_text total_data total_bss

header="| source |"
rule="|---|"
for t in "${targets[@]}"; do
    header+=" $t text / data / bss |"
    rule+="---|"
    total_text[$t]=0; total_data[$t]=0; total_bss[$t]=0
done
rows=()
for src in "${sources[@]}"; do
    name=$(basename "$src" .c)
    row="| $name.c |"
    std=-std=c99
    [[ $name == pool_lockfree ]] && std=-std=c11
    for t in "${targets[@]}"; do
        obj="$out/${name}.$(echo "$t" | tr -cd 'A-Za-z0-9').o"
        # shellcheck disable=SC2086
        if ! "${cc[$t]}" $std ${arch[$t]} "${common[@]}" "$src" -o "$obj" 2>"$obj.err"; then
            echo "cross_sizes: $src does not build for $t:" >&2
            cat "$obj.err" >&2
            exit 1
        fi
        read -r text data bss _ < <("${size[$t]}" -B "$obj" | tail -n 1)
        row+=" $text / $data / $bss |"
        total_text[$t]=$((total_text[$t] + text))
        total_data[$t]=$((total_data[$t] + data))
        total_bss[$t]=$((total_bss[$t] + bss))
    done
    rows+=("$row")
done
total="| **all** |"
for t in "${targets[@]}"; do total+=" ${total_text[$t]} / ${total_data[$t]} / ${total_bss[$t]} |"; done

echo "Code size in bytes (-Os -ffunction-sections -fdata-sections; whole sources: an application links"
echo "core.c, tagged.c for seqfit/tlsf/dmm, heap.c for the uniform API, and what it calls of its allocators)"
echo
echo "$header"
echo "$rule"
printf '%s\n' "${rows[@]}"
echo "$total"
