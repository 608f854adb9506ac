/* SPDX-License-Identifier: MIT */
/*
 * The instruction counter's measuring window on an ARMv7-M core (Cortex-M3)
 * under QEMU -icount, and the calibration callees.
 *
 * SysTick's current value (SYST_CVR, a 24-bit down-counter clocked by the
 * core clock) is read right before and right after one call. Under
 * -icount shift=7 every instruction advances virtual time by 128 ns and
 * SysTick ticks every 40 ns, so the difference is 3.2 ticks per
 * instruction executed between the two reads. The window is fixed
 * assembly, so its own cost never depends on the compiler:
 *
 *     ldr r6, [r5]      read 1
 *     blx r4            the call
 *     ...               the callee, its return included
 *     ldr r3, [r5]      read 2
 *
 * tgt_measure_empty() is the same window with nothing between the reads;
 * icount.c subtracts it and the blx, so a callee's count is the number of
 * instructions it executed, its return included (a callee that is only
 * `bx lr` reads 1, the empty window reads 0).
 */
    .syntax unified
    .thumb
    .text

/* The counter register read: SysTick's SYST_CVR, or (TGT_COUNTER_REG) another down-counter of the
 * core clock, as the ITC firmware's CMSDK timer (examples/firmware-itc: the kernel owns SysTick). */
#ifndef TGT_COUNTER_REG
#define TGT_COUNTER_REG 0xE000E018
#endif
    .equ SYST_CVR, TGT_COUNTER_REG

/* uint32_t tgt_measure(const void *fn, uint32_t a0, uint32_t a1, uint32_t a2):
 * calls fn(a0, a1, a2); returns the elapsed ticks (24-bit), the callee's
 * return value goes to tgt_measure_result. */
    .global tgt_measure
    .type tgt_measure, %function
    .thumb_func
tgt_measure:
    push {r4, r5, r6, lr}
    mov r4, r0
    mov r0, r1
    mov r1, r2
    mov r2, r3
    ldr r5, =SYST_CVR
    ldr r6, [r5]
    blx r4
    ldr r3, [r5]
    ldr r1, =tgt_measure_result
    str r0, [r1]
    subs r0, r6, r3
    ubfx r0, r0, #0, #24
    pop {r4, r5, r6, pc}
    .size tgt_measure, . - tgt_measure

/* uint32_t tgt_measure_empty(void): the window with nothing in it. */
    .global tgt_measure_empty
    .type tgt_measure_empty, %function
    .thumb_func
tgt_measure_empty:
    push {r4, r5, r6, lr}
    ldr r5, =SYST_CVR
    ldr r6, [r5]
    ldr r3, [r5]
    subs r0, r6, r3
    ubfx r0, r0, #0, #24
    pop {r4, r5, r6, pc}
    .size tgt_measure_empty, . - tgt_measure_empty
    .ltorg

/* Calibration callees of known length: 1 and 1000 instructions. */
    .global tgt_cal_nop
    .type tgt_cal_nop, %function
    .thumb_func
tgt_cal_nop:
    bx lr
    .size tgt_cal_nop, . - tgt_cal_nop

    .global tgt_cal_1000
    .type tgt_cal_1000, %function
    .thumb_func
tgt_cal_1000:
    .rept 999
    nop
    .endr
    bx lr
    .size tgt_cal_1000, . - tgt_cal_1000

    .bss
    .balign 4
    .global tgt_measure_result
tgt_measure_result:
    .space 4
