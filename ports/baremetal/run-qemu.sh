#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Runs a bare-metal heapkit program in QEMU and exits with its exit status.
#
#   ports/baremetal/run-qemu.sh <board> <program.elf> [args...]
#
# board: mps2-an385 (Cortex-M3) or riscv-virt (RV32IMAC). Output and argv go
# through semihosting; the program's stdout arrives on QEMU's stdout (the
# semihosting console is bound to a stdio chardev: picolibc writes through
# the console, newlib through ":tt" handles). Its stderr arrives on QEMU's
# stderr on mps2-an385 (newlib opens ":tt" for appending) and on stdout on
# riscv-virt (picolibc has only the console). stdin is /dev/null, so QEMU
# never touches the terminal from the background. The program's exit
# status (main's return or exit()) becomes QEMU's.
# -icount shift=7 makes the run deterministic: each guest instruction is
# 128 ns of virtual time. HK_QEMU_TIMEOUT (seconds, default
# 600) stops a hung program with status 124. This is the
# CMAKE_CROSSCOMPILING_EMULATOR of the toolchain files in cmake/.
set -euo pipefail

if [ $# -lt 2 ]; then
  echo "usage: $0 <mps2-an385|riscv-virt> <program.elf> [args...]" >&2
  exit 2
fi
board=$1
elf=$2
shift 2
if [ ! -f "$elf" ]; then
  echo "$0: no such program: $elf" >&2
  exit 2
fi

case "$board" in
  mps2-an385) machine=(qemu-system-arm -machine mps2-an385 -cpu cortex-m3) ;;
  riscv-virt) machine=(qemu-system-riscv32 -machine virt -cpu rv32 -bios none -m 128M) ;;
  *) echo "$0: unknown board '$board' (mps2-an385, riscv-virt)" >&2; exit 2 ;;
esac

# Semihosting's command line: one arg= per word; QEMU reads ',,' as a literal comma. The
# program gets one string and splits it at spaces, so an argument may not hold one.
config="enable=on,target=native,chardev=hkout,arg=$(basename "$elf")"
for a in "$@"; do
  if [[ "$a" == *" "* || -z "$a" ]]; then
    echo "$0: argument '$a' is empty or holds a space; semihosting's command line cannot carry it" >&2
    exit 2
  fi
  config+=",arg=${a//,/,,}"
done

exec timeout -k 5 "${HK_QEMU_TIMEOUT:-600}" "${machine[@]}" -nographic -monitor none -serial none \
  -chardev stdio,id=hkout,signal=off -semihosting-config "$config" -icount shift=7 -kernel "$elf" </dev/null
