/* SPDX-License-Identifier: MIT */
/*
 * FreeRTOSConfig.h of the traced firmware (app.c): FreeRTOS-Kernel V11.2.0,
 * with heapkit's bare-metal startup, on one of two boards:
 *   - portable/GCC/ARM_CM3 on QEMU mps2-an385 (25 MHz Cortex-M3): the
 *     startup's weak SVCall/PendSV/SysTick entries are taken over by the
 *     port's handlers by name;
 *   - portable/GCC/RISC-V on QEMU virt (RV32IMAC, machine mode): the tick
 *     is the CLINT's mtime/mtimecmp (10 MHz), app.c points mtvec at the
 *     port's trap handler, interrupts run on their own stack.
 * The heap is heap_4.c or ports/freertos/heap_tlsf.c, APP_HEAP_SIZE bytes
 * (the build sets it: the sizing check rebuilds with the size the lab
 * advises).
 */
#ifndef FREERTOS_CONFIG_H
#define FREERTOS_CONFIG_H

#define configUSE_PREEMPTION 1
#define configUSE_IDLE_HOOK 0
#define configUSE_TICK_HOOK 0
#if defined(__riscv)
#define configCPU_CLOCK_HZ 10000000 /* the port counts the tick in mtime's units: virt's timebase */
#define configMTIME_BASE_ADDRESS 0x200BFF8UL
#define configMTIMECMP_BASE_ADDRESS 0x2004000UL
#define configISR_STACK_SIZE_WORDS 512
#else
#define configCPU_CLOCK_HZ 25000000
#endif
#define configTICK_RATE_HZ 1000
#define configMAX_PRIORITIES 5
#define configMINIMAL_STACK_SIZE 256
#define configMAX_TASK_NAME_LEN 16
#define configTICK_TYPE_WIDTH_IN_BITS TICK_TYPE_WIDTH_32_BITS
#define configUSE_MUTEXES 1
#define configUSE_TIMERS 1
#define configTIMER_TASK_PRIORITY 3
#define configTIMER_QUEUE_LENGTH 8
#define configTIMER_TASK_STACK_DEPTH 512
#define configUSE_TASK_NOTIFICATIONS 1
#define configSUPPORT_DYNAMIC_ALLOCATION 1
#define configSUPPORT_STATIC_ALLOCATION 0
#define configUSE_MALLOC_FAILED_HOOK 1
#define configCHECK_FOR_STACK_OVERFLOW 0
#define configAPPLICATION_ALLOCATED_HEAP 0
#ifndef APP_HEAP_SIZE
#define APP_HEAP_SIZE 32768
#endif
#define configTOTAL_HEAP_SIZE ((size_t)(APP_HEAP_SIZE))
#if defined(__arm__)
#define configKERNEL_INTERRUPT_PRIORITY 255
#define configMAX_SYSCALL_INTERRUPT_PRIORITY 160 /* (5 << 5): QEMU implements 8 priority bits, bit 0 must be clear */
#endif
#define configCHECK_HANDLER_INSTALLATION 0
#define INCLUDE_vTaskDelay 1
#define INCLUDE_vTaskDelete 1
#define INCLUDE_xTaskGetCurrentTaskHandle 1
#define INCLUDE_xTaskGetSchedulerState 1

#define configASSERT(x)                                                                                                \
    do {                                                                                                               \
        if (!(x)) {                                                                                                    \
            app_assert_failed(__FILE__, __LINE__);                                                                     \
        }                                                                                                              \
    } while (0)
void app_assert_failed(const char *file, int line);

#if defined(__arm__)
/* The port's handlers under the names heapkit's startup puts in the vector table. */
#define vPortSVCHandler hk_svcall_handler
#define xPortPendSVHandler hk_pendsv_handler
#define xPortSysTickHandler hk_systick_handler
#endif

/* The recorder's hooks (ports/trace/). */
#include "hk_trace_freertos.h"

#endif
