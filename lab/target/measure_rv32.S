/* SPDX-License-Identifier: MIT */
/*
 * The instruction counter's measuring window on RV32 (QEMU virt, RV32IMAC,
 * machine mode) under QEMU -icount, and the calibration callees; the
 * RISC-V twin of measure_m3.S (see counter_rv32.c for the counter).
 *
 * minstret is read right before and right after one call. Under -icount
 * shift=7 it advances by 128 (ns of virtual time) per instruction and a
 * read counts the instructions up to and including itself, so the
 * difference is 128 times the instructions from the call to the second
 * read, both included. The window is fixed assembly, so its own cost never
 * depends on the compiler:
 *
 *     csrr s0, minstret   read 1
 *     jalr s1             the call
 *     ...                 the callee, its return included
 *     csrr t0, minstret   read 2
 *
 * tgt_measure_empty() is the same window with nothing between the reads
 * (it reads 1 instruction: read 2); icount.c subtracts it and the call, so
 * a callee's count is the number of instructions it executed, its return
 * included (a callee that is only `ret` reads 1, the empty window 0).
 * Zicsr is enabled here only: the libc multilib is chosen by -march, and
 * GCC 12's rv32imac leaves Zicsr out (ports/baremetal/riscv-virt/startup.c).
 */
    .option arch, +zicsr
    .text

/* uint32_t tgt_measure(const void *fn, uint32_t a0, uint32_t a1, uint32_t a2):
 * calls fn(a0, a1, a2); returns the elapsed minstret units, the callee's
 * return value goes to tgt_measure_result. */
    .globl tgt_measure
    .type tgt_measure, @function
    .balign 4
tgt_measure:
    addi sp, sp, -16
    sw ra, 12(sp)
    sw s0, 8(sp)
    sw s1, 4(sp)
    mv s1, a0
    mv a0, a1
    mv a1, a2
    mv a2, a3
    csrr s0, minstret
    jalr s1
    csrr t0, minstret
    la t1, tgt_measure_result
    sw a0, 0(t1)
    sub a0, t0, s0
    lw s1, 4(sp)
    lw s0, 8(sp)
    lw ra, 12(sp)
    addi sp, sp, 16
    ret
    .size tgt_measure, . - tgt_measure

/* uint32_t tgt_measure_empty(void): the window with nothing in it. */
    .globl tgt_measure_empty
    .type tgt_measure_empty, @function
    .balign 4
tgt_measure_empty:
    csrr t1, minstret
    csrr t0, minstret
    sub a0, t0, t1
    ret
    .size tgt_measure_empty, . - tgt_measure_empty

/* Calibration callees of known length: 1 and 1000 instructions. */
    .globl tgt_cal_nop
    .type tgt_cal_nop, @function
    .balign 4
tgt_cal_nop:
    ret
    .size tgt_cal_nop, . - tgt_cal_nop

    .globl tgt_cal_1000
    .type tgt_cal_1000, @function
    .balign 4
tgt_cal_1000:
    .rept 999
    nop
    .endr
    ret
    .size tgt_cal_1000, . - tgt_cal_1000

    .bss
    .balign 4
    .globl tgt_measure_result
tgt_measure_result:
    .space 4
