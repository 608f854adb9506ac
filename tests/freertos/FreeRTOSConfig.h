/* SPDX-License-Identifier: MIT */
/*
 * FreeRTOSConfig.h for heapkit's FreeRTOS applications (tests/freertos/): the
 * real kernel (V11.2.0) on its POSIX port, with heap_4.c, heap_5.c or one of
 * heapkit's heap files (ports/freertos/). One configuration for every heap,
 * so the applications see the same kernel whichever heap they run on.
 */
#ifndef HEAPKIT_TEST_FREERTOS_CONFIG_H
#define HEAPKIT_TEST_FREERTOS_CONFIG_H

#include <stddef.h>

#define configUSE_PREEMPTION 1
#define configUSE_TIME_SLICING 1
#define configUSE_PORT_OPTIMISED_TASK_SELECTION 0
#define configUSE_IDLE_HOOK 0
#define configUSE_TICK_HOOK 0
#define configTICK_RATE_HZ 1000
#define configMAX_PRIORITIES 8
#define configMINIMAL_STACK_SIZE 256
#define configMAX_TASK_NAME_LEN 16
#define configTICK_TYPE_WIDTH_IN_BITS TICK_TYPE_WIDTH_64_BITS
#define configUSE_TASK_NOTIFICATIONS 1
#define configUSE_MUTEXES 1
#define configUSE_COUNTING_SEMAPHORES 1
#define configQUEUE_REGISTRY_SIZE 0
#define configUSE_TRACE_FACILITY 1
#define configCHECK_FOR_STACK_OVERFLOW 0

#define configUSE_TIMERS 1
#define configTIMER_TASK_PRIORITY (configMAX_PRIORITIES - 1)
#define configTIMER_QUEUE_LENGTH 32
#define configTIMER_TASK_STACK_DEPTH configMINIMAL_STACK_SIZE

/* The heap. heap_4 and heapkit's files take ucHeap from the application (app_heap.c). */
#define configSUPPORT_DYNAMIC_ALLOCATION 1
#define configSUPPORT_STATIC_ALLOCATION 0
#define configTOTAL_HEAP_SIZE ((size_t)(1024u * 1024u))
#ifndef configAPPLICATION_ALLOCATED_HEAP
#define configAPPLICATION_ALLOCATED_HEAP 1
#endif
#define configUSE_MALLOC_FAILED_HOOK 1
#define configHEAP_CLEAR_MEMORY_ON_FREE 1
#define configENABLE_HEAP_PROTECTOR 0
/* Every size class the kernel and the applications ask for (heap_pools.c). */
#define configHEAPKIT_POOL_CLASSES                                                                                     \
    {                                                                                                                  \
        {32, 8}, {64, 8}, {128, 64}, {256, 8}, {512, 8}, {1024, 8}, {2048, 8}, {4096, 12}, { 8192, 3 }                  \
    }

#define INCLUDE_vTaskDelete 1
#define INCLUDE_vTaskDelay 1
#define INCLUDE_vTaskDelayUntil 1
#define INCLUDE_vTaskSuspend 1
#define INCLUDE_xTaskGetSchedulerState 1
#define INCLUDE_xTaskGetCurrentTaskHandle 1
#define INCLUDE_uxTaskGetStackHighWaterMark 0

/* A failed assertion ends the application with exit status 3 (app_common.c). */
void app_assert_failed(const char *file, int line);
#define configASSERT(x)                                                                                                \
    do {                                                                                                               \
        if (!(x)) {                                                                                                    \
            app_assert_failed(__FILE__, __LINE__);                                                                     \
        }                                                                                                              \
    } while (0)

/* The heap's trace macros feed counters that the applications compare with vPortGetHeapStats. */
void app_trace_malloc(void *pv, size_t size);
void app_trace_free(void *pv, size_t size);
#define traceMALLOC(pvAddress, uiSize) app_trace_malloc((pvAddress), (size_t)(uiSize))
#define traceFREE(pvAddress, uiSize) app_trace_free((pvAddress), (size_t)(uiSize))

#endif
