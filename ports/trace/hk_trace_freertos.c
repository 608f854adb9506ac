/* SPDX-License-Identifier: MIT */
/* The FreeRTOS hooks (hk_trace_freertos.h): the task is the one running, 0 before the scheduler starts. */
#include "FreeRTOS.h"
#include "task.h"

#include "hk_trace.h"
#include "hk_trace_freertos.h"

#if (INCLUDE_xTaskGetCurrentTaskHandle != 1) && (configUSE_MUTEXES != 1)
#error "the recorder needs xTaskGetCurrentTaskHandle (INCLUDE_xTaskGetCurrentTaskHandle 1)"
#endif
#if (INCLUDE_xTaskGetSchedulerState != 1) && (configUSE_TIMERS != 1)
#error "the recorder needs xTaskGetSchedulerState (INCLUDE_xTaskGetSchedulerState 1)"
#endif

static uintptr_t current_task(void)
{
    return xTaskGetSchedulerState() == taskSCHEDULER_NOT_STARTED ? 0u : (uintptr_t)xTaskGetCurrentTaskHandle();
}

void hk_trace_freertos_malloc(const void *pv, size_t size, const void *caller)
{
    hk_trace_alloc(hk_trace_active, HK_TRACE_MALLOC, pv, size, 0, caller, current_task());
}

void hk_trace_freertos_free(const void *pv, size_t size, const void *caller)
{
    hk_trace_free(hk_trace_active, pv, size, caller, current_task());
}

void hk_trace_freertos_task(const void *task, const char *name)
{
    hk_trace_task(hk_trace_active, (uintptr_t)task, name);
}
