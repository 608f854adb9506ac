/* SPDX-License-Identifier: MIT */
/*
 * The Cortex-M3 counter behind measure_m3.S (see icount.h): SysTick's
 * current value, SYST_CVR, a 24-bit down-counter clocked by the core clock.
 *
 * Under QEMU -icount shift=7 (ports/baremetal/run-qemu.sh) every instruction
 * advances virtual time by 128 ns and SysTick (mps2-an385: 25 MHz) ticks
 * every 40 ns, so n instructions read 3.2 n ticks give or take one;
 * rounding ticks / 3.2 gives n exactly. SysTick is reloaded (SYST_CVR
 * written) before every window; a window longer than 2^24 ticks (5.2
 * million instructions) wraps it, and COUNTFLAG, read after the window,
 * says so.
 *
 * The arena sits at a fixed address, the start of the board's 16 MiB PSRAM
 * (tgt_arena, given to the linker as --defsym by lab/heapkit/target.py,
 * which also moves the C library's heap into RAM with __heap_in_ram), so
 * it may take all 16 MiB; tgt_arena_placed() checks the placement.
 */
#include <stdint.h>
#include <stdio.h>

#include "icount.h"

#ifndef TGT_ARENA_SIZE
#error "TGT_ARENA_SIZE must be defined"
#endif

extern char __psram_end[], __psram_top[], __heap_end[];

#define SYST_CSR (*(volatile uint32_t *)0xE000E010u)
#define SYST_RVR (*(volatile uint32_t *)0xE000E014u)
#define SYST_CVR (*(volatile uint32_t *)0xE000E018u)
#define SYST_ENABLE_CORE_CLOCK 5u
#define SYST_COUNTFLAG (1u << 16)
#define SYST_MAX 0xFFFFFFu

void tgt_counter_start(void)
{
    SYST_RVR = SYST_MAX;
    SYST_CVR = 0;
    SYST_CSR = SYST_ENABLE_CORE_CLOCK;
}

void tgt_counter_arm(void)
{
    SYST_CVR = 0;
    (void)SYST_CSR; /* clears COUNTFLAG */
}

int tgt_counter_overflowed(void) { return (SYST_CSR & SYST_COUNTFLAG) != 0; }

/* round(ticks / 3.2): 16 ticks every 5 instructions. */
uint32_t tgt_counter_insns(uint32_t raw) { return (raw * 5u + 8u) / 16u; }

void tgt_counter_describe(uint32_t empty_raw, uint32_t raw_1000)
{
    printf("\"counter\":\"SYST_CVR\",\"unit\":\"SysTick tick (40 ns)\",\"units_per_insn\":3.2,"
           "\"ticks_per_insn\":3.2,\"empty_ticks\":%lu,\"ticks_1000\":%lu",
           (unsigned long)empty_raw, (unsigned long)raw_1000);
}

int tgt_arena_placed(void)
{
    return (uintptr_t)__psram_end <= (uintptr_t)tgt_arena && (uintptr_t)__heap_end <= (uintptr_t)tgt_arena &&
           TGT_ARENA_SIZE <= (uintptr_t)__psram_top - (uintptr_t)tgt_arena;
}
