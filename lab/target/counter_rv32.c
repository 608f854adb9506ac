/* SPDX-License-Identifier: MIT */
/*
 * The RV32 counter behind measure_rv32.S (see icount.h): the minstret CSR
 * of QEMU's riscv virt machine (RV32IMAC, machine mode).
 *
 * With -icount, QEMU does not count retired instructions in minstret: it
 * returns the icount virtual clock in nanoseconds (mcycle, cycle and
 * instret read the same). At shift=7 (ports/baremetal/run-qemu.sh) every
 * instruction is 128 ns, so a window of n instructions reads exactly
 * 128 n; the CSR read is an I/O instruction for QEMU's icount, which ends
 * its translation block there, so the value counts every instruction up to
 * and including the read. lab/tests/test_target.py checks the mapping on
 * the calibration callees and against the disassembly.
 *
 * Only the low 32 bits are read inside the window: 2^32 ns is 33.5 million
 * instructions. minstreth is no help against a wrap (QEMU derives the two
 * halves separately, no carry reaches minstreth when the low half is
 * written), so the wrap check uses the CLINT's mtime instead, a 64-bit
 * 10 MHz counter on the same virtual clock: read before and after the
 * window, outside it; a window of 2^32 - 2^24 ns or more (42.78 million
 * mtime ticks, about 33.4 million instructions) counts as overflowed.
 *
 * The arena is a .bss array (RAM is one 128 MiB region; nothing of the
 * image lies in the way), zeroed by the runtime at start like all of .bss;
 * the C library's heap is what RAM has left.
 */
#include <stdint.h>
#include <stdio.h>

#include "icount.h"

#ifndef TGT_ARENA_SIZE
#error "TGT_ARENA_SIZE must be defined"
#endif

#define NS_PER_INSN 128u                                 /* -icount shift=7 */
#define MTIME_LO (*(volatile uint32_t *)0x0200BFF8u)    /* CLINT mtime, low word; 100 ns per tick */
#define MTIME_WRAP_TICKS ((0xFFFFFFFFu - 0xFFFFFFu) / 100u)

uint8_t tgt_arena[TGT_ARENA_SIZE] __attribute__((aligned(4096)));

static uint32_t mtime_armed;

void tgt_counter_start(void) {}

void tgt_counter_arm(void) { mtime_armed = MTIME_LO; }

int tgt_counter_overflowed(void) { return (uint32_t)(MTIME_LO - mtime_armed) >= MTIME_WRAP_TICKS; }

uint32_t tgt_counter_insns(uint32_t raw) { return (raw + NS_PER_INSN / 2u) / NS_PER_INSN; }

void tgt_counter_describe(uint32_t empty_raw, uint32_t raw_1000)
{
    (void)empty_raw;
    (void)raw_1000;
    printf("\"counter\":\"minstret\",\"unit\":\"ns of icount virtual time\",\"units_per_insn\":%u",
           (unsigned)NS_PER_INSN);
}

int tgt_arena_placed(void) { return 1; }
