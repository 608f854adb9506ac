/* SPDX-License-Identifier: MIT */
/*
 * FreeRTOSConfig.h for lab/tests/test_advise.py: the kernel (V11.2.0, POSIX
 * port) around the heap configuration a heapkit advise snippet writes
 * (advice_config.h, which sets configTOTAL_HEAP_SIZE and the heap file's
 * options). Kernel objects are static, so the heap serves the trace alone.
 */
#ifndef ADVISE_TEST_FREERTOS_CONFIG_H
#define ADVISE_TEST_FREERTOS_CONFIG_H

#include "advice_config.h"

#define configUSE_PREEMPTION 1
#define configUSE_IDLE_HOOK 0
#define configUSE_TICK_HOOK 0
#define configTICK_RATE_HZ 1000
#define configMAX_PRIORITIES 4
#define configMINIMAL_STACK_SIZE 256
#define configMAX_TASK_NAME_LEN 16
#define configTICK_TYPE_WIDTH_IN_BITS TICK_TYPE_WIDTH_64_BITS
#define configUSE_TIMERS 0
#define configUSE_MUTEXES 1
#define configCHECK_FOR_STACK_OVERFLOW 0

#define configSUPPORT_DYNAMIC_ALLOCATION 1
#define configSUPPORT_STATIC_ALLOCATION 1
#define configKERNEL_PROVIDED_STATIC_MEMORY 1
#define configUSE_MALLOC_FAILED_HOOK 1

#define INCLUDE_vTaskDelete 1
#define INCLUDE_vTaskSuspend 1
#define INCLUDE_xTaskGetSchedulerState 1

void adv_assert_failed(const char *file, int line);
#define configASSERT(x)                                                                                                \
    do {                                                                                                               \
        if (!(x)) {                                                                                                    \
            adv_assert_failed(__FILE__, __LINE__);                                                                     \
        }                                                                                                              \
    } while (0)

#endif
