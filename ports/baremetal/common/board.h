/* SPDX-License-Identifier: MIT */
/*
 * What a bare-metal board port (ports/baremetal/<board>/) provides to the
 * shared runtime (common/runtime.c), and the semihosting calls they share.
 *
 * Semihosting is the debugger-call convention (Arm "Semihosting for AArch32
 * and AArch64" v2, adopted unchanged by RISC-V): the guest puts an operation
 * number and a pointer to its argument block in two registers and executes a
 * trap sequence; QEMU (-semihosting-config enable=on,target=native) performs
 * the call on the host. The ports use it for stdio, the command line (so a
 * test gets argv) and the exit status (so QEMU exits with it).
 */
#ifndef HEAPKIT_PORTS_BOARD_H
#define HEAPKIT_PORTS_BOARD_H

#include <stdint.h>

#define HK_SH_SYS_WRITE0 0x04u        /* write a NUL-terminated string to the console */
#define HK_SH_SYS_GET_CMDLINE 0x15u   /* the command line QEMU was given (arg=...) */
#define HK_SH_SYS_EXIT_EXTENDED 0x20u /* stop with a reason and a status code */
#define HK_SH_APPLICATION_EXIT 0x20026u

/* One semihosting call: the trap sequence of the board's architecture. */
uintptr_t hk_semihost(uintptr_t op, void *arg);

/* Board-specific libc set-up before main (e.g. newlib's semihosting handles). */
void hk_board_init_io(void);

/* Copies .data, zeroes .bss, builds argv from the semihosting command line, runs main and exits with its status. */
void hk_runtime_start(void) __attribute__((noreturn));

/* Stops QEMU with this exit status (after a message, for faults). */
void hk_board_exit(int status) __attribute__((noreturn));
void hk_board_fail(const char *message) __attribute__((noreturn));

#endif
