/* SPDX-License-Identifier: MIT */
/*
 * FreeRTOSConfig.h of the ITC benchmark (app.c): FreeRTOS-Kernel V11.2.0,
 * portable/GCC/ARM_CM3 on QEMU mps2-an385 (25 MHz Cortex-M3), heapkit's
 * bare-metal startup. The kernel's own heap is heap_4.c in every build
 * (tasks, stacks, the queue); the heap_4 build also takes the benchmark's
 * blocks from it, as the seed's Heap4 candidate did.
 */
#ifndef FREERTOS_CONFIG_H
#define FREERTOS_CONFIG_H

#define configUSE_PREEMPTION 1
#define configUSE_IDLE_HOOK 0
#define configUSE_TICK_HOOK 0
#define configCPU_CLOCK_HZ 25000000
#define configTICK_RATE_HZ 1000
#define configMAX_PRIORITIES 5
#define configMINIMAL_STACK_SIZE 256
#define configMAX_TASK_NAME_LEN 16
#define configTICK_TYPE_WIDTH_IN_BITS TICK_TYPE_WIDTH_32_BITS
#define configUSE_MUTEXES 1
#define configUSE_COUNTING_SEMAPHORES 1
#define configUSE_TIMERS 0
#define configUSE_TASK_NOTIFICATIONS 1
#define configSUPPORT_DYNAMIC_ALLOCATION 1
#define configSUPPORT_STATIC_ALLOCATION 0
#define configUSE_MALLOC_FAILED_HOOK 1
#define configCHECK_FOR_STACK_OVERFLOW 0
#define configAPPLICATION_ALLOCATED_HEAP 0
/* Twenty tasks' stacks and TCBs, the queue, and (heap_4 build) up to ~400 live 127-byte blocks. */
#define configTOTAL_HEAP_SIZE ((size_t)(96u * 1024u))
#define configKERNEL_INTERRUPT_PRIORITY 255
#define configMAX_SYSCALL_INTERRUPT_PRIORITY 160 /* (5 << 5): QEMU implements 8 priority bits, bit 0 must be clear */
#define configCHECK_HANDLER_INSTALLATION 0
#define INCLUDE_vTaskDelay 1
#define INCLUDE_vTaskDelete 1

#define configASSERT(x)                                                                                                \
    do {                                                                                                               \
        if (!(x)) {                                                                                                    \
            app_assert_failed(__FILE__, __LINE__);                                                                     \
        }                                                                                                              \
    } while (0)
void app_assert_failed(const char *file, int line);

/* The port's handlers under the names heapkit's startup puts in the vector table. */
#define vPortSVCHandler hk_svcall_handler
#define xPortPendSVHandler hk_pendsv_handler
#define xPortSysTickHandler hk_systick_handler

#ifdef ITC_TRACE
/* itc_trace only: the recorder's hooks (ports/trace/) in heap_4, for data/traces/embedded. */
#define INCLUDE_xTaskGetSchedulerState 1
#include "hk_trace_freertos.h"
#endif

#endif
