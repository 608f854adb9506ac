/* SPDX-License-Identifier: MIT */
/*
 * FreeRTOSConfig.h for the lab's FreeRTOS heap peers (freertos_heaps.c):
 * just enough configuration for portable/MemMang/heap_2.c, heap_4.c and
 * heap_5.c from FreeRTOS-Kernel V11.2.0 to compile against the kernel's own
 * include/ and the POSIX port's portmacro.h (portBYTE_ALIGNMENT 8). No
 * scheduler is built: the heaps' vTaskSuspendAll()/xTaskResumeAll() and
 * critical sections are the no-ops of freertos/stubs.c.
 *
 * Renaming: the three heaps define the same public names (pvPortMalloc,
 * vPortFree, ...). Each is compiled with LAB_FREERTOS_HEAP set to 2, 4 or 5,
 * and this header, which FreeRTOS.h includes before any prototype, turns
 * every public name of that heap into lab_freertos_heap<N>_<name>, so the
 * three link into one binary. The adapter includes it without
 * LAB_FREERTOS_HEAP and names the renamed functions itself.
 */
#ifndef LAB_FREERTOS_CONFIG_H
#define LAB_FREERTOS_CONFIG_H

#include <stddef.h>

/* Required by FreeRTOS.h; irrelevant to the heaps. */
#define configUSE_PREEMPTION 1
#define configUSE_IDLE_HOOK 0
#define configUSE_TICK_HOOK 0
#define configTICK_RATE_HZ 1000
#define configMAX_PRIORITIES 5
#define configMINIMAL_STACK_SIZE 128
#define configMAX_TASK_NAME_LEN 16
#define configTICK_TYPE_WIDTH_IN_BITS TICK_TYPE_WIDTH_64_BITS
#define configUSE_TIMERS 0

/* What the heaps read. */
#define configSUPPORT_DYNAMIC_ALLOCATION 1
#define configSUPPORT_STATIC_ALLOCATION 0
#define configUSE_MALLOC_FAILED_HOOK 0
#define configHEAP_CLEAR_MEMORY_ON_FREE 0
#define configENABLE_HEAP_PROTECTOR 0
/* heap_2/heap_4: ucHeap is the application's (see freertos_heaps.c for how it becomes the caller's arena). */
#define configAPPLICATION_ALLOCATED_HEAP 1

#ifdef LAB_FREERTOS_HEAP
#define LAB_FREERTOS_PASTE(heap, name) lab_freertos_heap##heap##_##name
#define LAB_FREERTOS_NAME(heap, name) LAB_FREERTOS_PASTE(heap, name)

/* The arena: address and size are run-time values the adapter sets before each heap reset. */
#define ucHeap LAB_FREERTOS_NAME(LAB_FREERTOS_HEAP, ucHeap)
#define configTOTAL_HEAP_SIZE LAB_FREERTOS_NAME(LAB_FREERTOS_HEAP, total_heap_size)
extern size_t configTOTAL_HEAP_SIZE;

/* A failed assertion is misuse or corruption seen by the heap: the adapter counts it and check() reports it. */
void LAB_FREERTOS_NAME(LAB_FREERTOS_HEAP, assert_failed)(int line);
#define configASSERT(x)                                                     \
    do {                                                                    \
        if (!(x)) {                                                         \
            LAB_FREERTOS_NAME(LAB_FREERTOS_HEAP, assert_failed)(__LINE__); \
        }                                                                   \
    } while (0)

#define pvPortMalloc LAB_FREERTOS_NAME(LAB_FREERTOS_HEAP, pvPortMalloc)
#define pvPortCalloc LAB_FREERTOS_NAME(LAB_FREERTOS_HEAP, pvPortCalloc)
#define vPortFree LAB_FREERTOS_NAME(LAB_FREERTOS_HEAP, vPortFree)
#define vPortInitialiseBlocks LAB_FREERTOS_NAME(LAB_FREERTOS_HEAP, vPortInitialiseBlocks)
#define xPortGetFreeHeapSize LAB_FREERTOS_NAME(LAB_FREERTOS_HEAP, xPortGetFreeHeapSize)
#define xPortGetMinimumEverFreeHeapSize LAB_FREERTOS_NAME(LAB_FREERTOS_HEAP, xPortGetMinimumEverFreeHeapSize)
#define xPortResetHeapMinimumEverFreeHeapSize LAB_FREERTOS_NAME(LAB_FREERTOS_HEAP, xPortResetHeapMinimumEverFreeHeapSize)
#define vPortGetHeapStats LAB_FREERTOS_NAME(LAB_FREERTOS_HEAP, vPortGetHeapStats)
#define vPortHeapResetState LAB_FREERTOS_NAME(LAB_FREERTOS_HEAP, vPortHeapResetState)
#define vPortDefineHeapRegions LAB_FREERTOS_NAME(LAB_FREERTOS_HEAP, vPortDefineHeapRegions)
#endif

#endif
