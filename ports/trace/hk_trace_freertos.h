/* SPDX-License-Identifier: MIT */
/*
 * The recorder's FreeRTOS hooks: include this file at the end of
 * FreeRTOSConfig.h and compile hk_trace.c and hk_trace_freertos.c with the
 * kernel. Every heap file that calls traceMALLOC/traceFREE is traced: the
 * kernel's heap_1..5 and heapkit's ports/freertos/heap_*.c. Each record gets
 * the current task's handle; each task's name is recorded once, when it is
 * created (tasks created before hk_trace_init() stay nameless).
 *
 * The caller is __builtin_return_address(0) where the macro expands: inside
 * pvPortMalloc/vPortFree, so it is the return address in the function that
 * called them (for pvPortCalloc's blocks, in pvPortCalloc). The size is what
 * the heap passes: the block's gross size, header included (heap_4 and
 * heapkit's heaps alike), docs/firmware-trace.md says how the lab treats it.
 *
 * The FreeRTOS heaps run with the scheduler suspended and are not callable
 * from interrupts, so the hooks need no lock of their own (an application
 * that also records from an ISR gives hk_trace_init lock hooks that mask
 * interrupts).
 */
#ifndef HEAPKIT_HK_TRACE_FREERTOS_H
#define HEAPKIT_HK_TRACE_FREERTOS_H

#include <stddef.h>

void hk_trace_freertos_malloc(const void *pv, size_t size, const void *caller);
void hk_trace_freertos_free(const void *pv, size_t size, const void *caller);
void hk_trace_freertos_task(const void *task, const char *name);

#define traceMALLOC(pvAddress, uiSize) hk_trace_freertos_malloc((pvAddress), (uiSize), __builtin_return_address(0))
#define traceFREE(pvAddress, uiSize) hk_trace_freertos_free((pvAddress), (uiSize), __builtin_return_address(0))
#define traceTASK_CREATE(pxNewTCB) hk_trace_freertos_task((pxNewTCB), (pxNewTCB)->pcTaskName)

#endif
