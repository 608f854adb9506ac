/* SPDX-License-Identifier: MIT */
/*
 * FreeRTOSConfig.h for the instruction counter's FreeRTOS peers
 * (lab/target/allocs.c): portable/MemMang/heap_4.c and heap_5.c of
 * FreeRTOS-Kernel V11.2.0, compiled bare metal against the kernel's
 * include/ and the port header an application on that core uses:
 * portable/GCC/ARM_CM3/portmacro.h on the Cortex-M3, portable/GCC/RISC-V on
 * RV32 (portBYTE_ALIGNMENT 8 and 16). No scheduler is linked: the heaps'
 * vTaskSuspendAll()/xTaskResumeAll() are the no-op stubs of allocs.c, what
 * a bare-metal application without a kernel supplies.
 *
 * Two heaps in one image: each heap file is compiled with TGT_FREERTOS_HEAP
 * set to 4 or 5 and every public name becomes tgt_freertos_heap<N>_<name>.
 * heap_4's ucHeap is the driver's arena, tgt_arena, of the compile-time size
 * configTOTAL_HEAP_SIZE = TGT_ARENA_SIZE (configAPPLICATION_ALLOCATED_HEAP:
 * the application supplies the array, as it would on a real board).
 * configASSERT is left undefined, as in a release build: no checks are
 * counted.
 */
#ifndef TGT_FREERTOS_CONFIG_H
#define TGT_FREERTOS_CONFIG_H

#include <stddef.h>

/* Required by FreeRTOS.h and the ARM_CM3 port header; irrelevant to the heaps. */
#define configUSE_PREEMPTION 1
#define configUSE_IDLE_HOOK 0
#define configUSE_TICK_HOOK 0
#define configCPU_CLOCK_HZ 25000000
#define configTICK_RATE_HZ 1000
#define configMAX_PRIORITIES 5
#define configMINIMAL_STACK_SIZE 128
#define configMAX_TASK_NAME_LEN 16
#define configTICK_TYPE_WIDTH_IN_BITS TICK_TYPE_WIDTH_32_BITS
#define configUSE_TIMERS 0
#define configKERNEL_INTERRUPT_PRIORITY 255
#define configMAX_SYSCALL_INTERRUPT_PRIORITY 191
/* The RISC-V port header insists on these: QEMU virt's CLINT mtime and mtimecmp (hart 0). */
#define configMTIME_BASE_ADDRESS 0x0200BFF8UL
#define configMTIMECMP_BASE_ADDRESS 0x02004000UL

/* What the heaps read. */
#define configSUPPORT_DYNAMIC_ALLOCATION 1
#define configSUPPORT_STATIC_ALLOCATION 0
#define configUSE_MALLOC_FAILED_HOOK 0
#define configHEAP_CLEAR_MEMORY_ON_FREE 0
#define configENABLE_HEAP_PROTECTOR 0
#define configAPPLICATION_ALLOCATED_HEAP 1
#ifndef TGT_ARENA_SIZE
#error "TGT_ARENA_SIZE (the driver's arena size) must be defined"
#endif
#define configTOTAL_HEAP_SIZE ((size_t)(TGT_ARENA_SIZE))

#ifdef TGT_FREERTOS_HEAP
#define TGT_FREERTOS_PASTE(heap, name) tgt_freertos_heap##heap##_##name
#define TGT_FREERTOS_NAME(heap, name) TGT_FREERTOS_PASTE(heap, name)
#define ucHeap tgt_arena
#define pvPortMalloc TGT_FREERTOS_NAME(TGT_FREERTOS_HEAP, pvPortMalloc)
#define pvPortCalloc TGT_FREERTOS_NAME(TGT_FREERTOS_HEAP, pvPortCalloc)
#define vPortFree TGT_FREERTOS_NAME(TGT_FREERTOS_HEAP, vPortFree)
#define vPortInitialiseBlocks TGT_FREERTOS_NAME(TGT_FREERTOS_HEAP, vPortInitialiseBlocks)
#define xPortGetFreeHeapSize TGT_FREERTOS_NAME(TGT_FREERTOS_HEAP, xPortGetFreeHeapSize)
#define xPortGetMinimumEverFreeHeapSize TGT_FREERTOS_NAME(TGT_FREERTOS_HEAP, xPortGetMinimumEverFreeHeapSize)
#define xPortResetHeapMinimumEverFreeHeapSize TGT_FREERTOS_NAME(TGT_FREERTOS_HEAP, xPortResetHeapMinimumEverFreeHeapSize)
#define vPortGetHeapStats TGT_FREERTOS_NAME(TGT_FREERTOS_HEAP, vPortGetHeapStats)
#define vPortHeapResetState TGT_FREERTOS_NAME(TGT_FREERTOS_HEAP, vPortHeapResetState)
#define vPortDefineHeapRegions TGT_FREERTOS_NAME(TGT_FREERTOS_HEAP, vPortDefineHeapRegions)
#endif

#endif
