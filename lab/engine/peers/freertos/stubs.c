/* SPDX-License-Identifier: MIT */
/*
 * The scheduler calls FreeRTOS's heaps make, as no-ops: the lab replays a
 * trace from one thread and the uniform layer (src/heap.c) does any locking.
 * Shared by heap_2, heap_4 and heap_5 (these names are not renamed).
 */
#include "FreeRTOS.h"
#include "task.h"

void vTaskSuspendAll(void) {}

BaseType_t xTaskResumeAll(void) { return pdFALSE; }

void vPortEnterCritical(void) {}

void vPortExitCritical(void) {}
