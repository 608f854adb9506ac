/* SPDX-License-Identifier: MIT */
/*
 * Startup for QEMU's mps2-an385 (Cortex-M3): the vector table at 0x0, the
 * reset handler and fault handlers that stop QEMU with a message and exit
 * status 70 instead of hanging until a timeout. Semihosting uses the
 * M-profile trap, BKPT 0xAB; stdio goes through newlib's librdimon
 * (--specs=rdimon.specs), whose handles are opened before main.
 */
#include <stdint.h>

#include "board.h"

extern char __stack_top[];
extern void initialise_monitor_handles(void);

void hk_reset_handler(void) __attribute__((noreturn));

uintptr_t hk_semihost(uintptr_t op, void *arg)
{
    register uintptr_t r0 __asm__("r0") = op;
    register void *r1 __asm__("r1") = arg;
    __asm__ volatile("bkpt 0xab" : "+r"(r0) : "r"(r1) : "memory");
    return r0;
}

void hk_board_init_io(void)
{
    initialise_monitor_handles();
}

void hk_reset_handler(void)
{
    hk_runtime_start();
}

static void nmi_handler(void) { hk_board_fail("mps2-an385: NMI\n"); }
static void hardfault_handler(void) { hk_board_fail("mps2-an385: HardFault\n"); }
static void memmanage_handler(void) { hk_board_fail("mps2-an385: MemManage fault\n"); }
static void busfault_handler(void) { hk_board_fail("mps2-an385: BusFault\n"); }
static void usagefault_handler(void) { hk_board_fail("mps2-an385: UsageFault\n"); }
static void unexpected_handler(void) { hk_board_fail("mps2-an385: unexpected exception\n"); }

/*
 * Weak so that a program taking SysTick or an external interrupt can define
 * its own handler under this name, and an RTOS its SVCall and PendSV
 * handlers (FreeRTOS: #define vPortSVCHandler hk_svcall_handler, ...).
 */
void hk_systick_handler(void) __attribute__((weak, alias("unexpected_handler")));
void hk_svcall_handler(void) __attribute__((weak, alias("unexpected_handler")));
void hk_pendsv_handler(void) __attribute__((weak, alias("unexpected_handler")));

typedef void (*vector_t)(void);

/* The architectural 16 entries: initial MSP, then the system exceptions. */
__attribute__((section(".vectors"), used)) static const vector_t vectors[16] = {
    (vector_t)(uintptr_t)__stack_top,
    hk_reset_handler,
    nmi_handler,
    hardfault_handler,
    memmanage_handler,
    busfault_handler,
    usagefault_handler,
    0,
    0,
    0,
    0,
    hk_svcall_handler,
    unexpected_handler, /* DebugMonitor */
    0,
    hk_pendsv_handler,
    hk_systick_handler,
};
