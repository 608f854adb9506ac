/* SPDX-License-Identifier: MIT */
/*
 * Startup for QEMU's riscv virt machine, one RV32IMAC hart in machine mode
 * (-bios none: the reset vector jumps to _start at the base of DRAM). _start
 * sets the stack, the thread pointer (picolibc's errno is thread-local; the
 * TLS template is used in place) and the trap vector, then runs the shared
 * runtime. A trap (illegal instruction, access fault, ...) stops QEMU with
 * its cause and exit status 70 instead of hanging until a timeout.
 * Semihosting uses the RISC-V trap sequence slli/ebreak/srai (uncompressed,
 * within one page); the CSR accesses enable Zicsr locally (GCC 12's
 * -march=rv32imac leaves it out, and the libc multilib is chosen by that
 * string). stdio goes through picolibc's libsemihost (--oslib=semihost).
 */
#include <stdint.h>
#include <stdio.h>

#include "board.h"

void hk_riscv_trap(void) __attribute__((noreturn, aligned(4)));

__asm__(".section .text.init, \"ax\", @progbits\n"
        ".globl _start\n"
        "_start:\n"
        ".option push\n"
        ".option norelax\n"
        "    la sp, __stack_top\n"
        "    la tp, __tls_base\n"
        "    la t0, hk_riscv_trap\n"
        ".option arch, +zicsr\n"
        "    csrw mtvec, t0\n"
        ".option pop\n"
        "    call hk_runtime_start\n"
        ".previous\n");

uintptr_t hk_semihost(uintptr_t op, void *arg)
{
    register uintptr_t a0 __asm__("a0") = op;
    register void *a1 __asm__("a1") = arg;
    __asm__ volatile(".option push\n"
                     ".option norvc\n"
                     ".balign 16\n"
                     "slli x0, x0, 0x1f\n"
                     "ebreak\n"
                     "srai x0, x0, 7\n"
                     ".option pop\n"
                     : "+r"(a0)
                     : "r"(a1)
                     : "memory");
    return a0;
}

void hk_board_init_io(void) {}

void hk_riscv_trap(void)
{
    static char message[80];
    uintptr_t cause;
    uintptr_t epc;
    uintptr_t tval;
    __asm__ volatile(".option push\n.option arch, +zicsr\ncsrr %0, mcause\n.option pop" : "=r"(cause));
    __asm__ volatile(".option push\n.option arch, +zicsr\ncsrr %0, mepc\n.option pop" : "=r"(epc));
    __asm__ volatile(".option push\n.option arch, +zicsr\ncsrr %0, mtval\n.option pop" : "=r"(tval));
    snprintf(message, sizeof(message), "riscv-virt: trap mcause=%lu mepc=0x%lx mtval=0x%lx\n", (unsigned long)cause,
             (unsigned long)epc, (unsigned long)tval);
    hk_board_fail(message);
}
