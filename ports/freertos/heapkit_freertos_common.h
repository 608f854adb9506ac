/* SPDX-License-Identifier: MIT */
/*
 * The FreeRTOS heap API (FreeRTOS-Kernel V11 include/portable.h) on a heapkit
 * allocator: the part heap_buddy.c, heap_tlsf.c and heap_pools.c share. Each
 * of them defines prvHeapkitMake(), which builds the chosen allocator in one
 * region, and includes this file, which provides
 *
 *   pvPortMalloc, vPortFree, pvPortCalloc, xPortGetFreeHeapSize,
 *   xPortGetMinimumEverFreeHeapSize, xPortResetHeapMinimumEverFreeHeapSize,
 *   vPortGetHeapStats, vPortDefineHeapRegions, vPortInitialiseBlocks,
 *   vPortHeapResetState, and two extensions: pvPortRealloc (see below) and
 *   pxPortGetHeapkitHeap (the heapkit handle, for hk_check/hk_walk).
 *
 * With one region the heap is the allocator itself; with several, a heapkit
 * regions heap (heapkit/regions.h) with one allocator per region. Either the
 * application calls vPortDefineHeapRegions() before the
 * first allocation, with regions as heap_5 takes them (any number up to
 * configHEAPKIT_MAX_REGIONS, non-contiguous, ended by { NULL, 0 }), or the
 * first allocation puts the heap in ucHeap[ configTOTAL_HEAP_SIZE ] as
 * heap_4 does (ucHeap defined here, or by the application when
 * configAPPLICATION_ALLOCATED_HEAP is 1).
 *
 * As in heap_4: every call runs with the scheduler suspended
 * (vTaskSuspendAll/xTaskResumeAll), pvPortMalloc(0) returns NULL, a NULL
 * return calls vApplicationMallocFailedHook() when configUSE_MALLOC_FAILED_HOOK
 * is 1, configHEAP_CLEAR_MEMORY_ON_FREE zeroes blocks as they are freed,
 * traceMALLOC/traceFREE receive the block's gross size (the bytes it takes
 * from / gives back to xPortGetFreeHeapSize()), and every pointer is aligned
 * to portBYTE_ALIGNMENT. Byte counts are heapkit's exact statistics: free
 * bytes are the gross bytes of the free blocks, as heap_4 counts them.
 * vPortGetHeapStats reports a smallest free block of 0 when there is no free
 * block (heap_4 leaves portMAX_DELAY there).
 *
 * Misuse (double free, a pointer that is not a live block, a corrupted
 * header) leaves the heap unchanged and is reported: by default through
 * configASSERT(), or, with configHEAPKIT_USE_ERROR_HOOK set to 1, by calling
 * vApplicationHeapkitErrorHook( error, pointer ), which the application
 * defines (error is an hk_error_t, heapkit/heapkit.h).
 *
 * Configuration (FreeRTOSConfig.h), beyond the kernel's own:
 *   configHEAPKIT_MAX_REGIONS     regions vPortDefineHeapRegions accepts (8)
 *   configHEAPKIT_UCHEAP          1: ucHeap is the heap unless regions are
 *                                 defined first; 0: no ucHeap, the heap_5
 *                                 way (an allocation before
 *                                 vPortDefineHeapRegions() asserts) (1)
 *   configHEAPKIT_USE_ERROR_HOOK  see above (0)
 * The heap files read a few more (see each file).
 *
 * Build: compile the heap file with the kernel (it is what FREERTOS_HEAP
 * names) with heapkit's include/ on the include path, and link the heapkit
 * library (the allocator core, CMake target heapkit), built with an HK_ALIGN
 * that the compiler sees here too.
 */
#ifndef HEAPKIT_FREERTOS_COMMON_H
#define HEAPKIT_FREERTOS_COMMON_H

#include <stdint.h>
#include <string.h>

/* As the kernel's heaps do: task.h must not map the API to the MPU wrappers here. */
#define MPU_WRAPPERS_INCLUDED_FROM_API_FILE

#include "FreeRTOS.h"
#include "task.h"

#undef MPU_WRAPPERS_INCLUDED_FROM_API_FILE

#include "heapkit/regions.h"

#if (configSUPPORT_DYNAMIC_ALLOCATION == 0)
#error This file must not be used if configSUPPORT_DYNAMIC_ALLOCATION is 0
#endif

#ifndef configHEAP_CLEAR_MEMORY_ON_FREE
#define configHEAP_CLEAR_MEMORY_ON_FREE 0
#endif

#ifndef configHEAPKIT_MAX_REGIONS
#define configHEAPKIT_MAX_REGIONS 8
#endif

#ifndef configHEAPKIT_UCHEAP
#define configHEAPKIT_UCHEAP 1
#endif

#ifndef configHEAPKIT_USE_ERROR_HOOK
#define configHEAPKIT_USE_ERROR_HOOK 0
#endif

/* Builds the allocator in [arena, arena + size): defined by the file that includes this one. */
static hk_heap_t *prvHeapkitMake(void *arena, size_t size, hk_status_t *status);

void *pvPortRealloc(void *pv, size_t xWantedSize);
hk_heap_t *pxPortGetHeapkitHeap(void);

#if (configHEAPKIT_USE_ERROR_HOOK == 1)
void vApplicationHeapkitErrorHook(hk_error_t xError, const void *pv);
#endif

#if (configHEAPKIT_UCHEAP == 1)
#if (configAPPLICATION_ALLOCATED_HEAP == 1)
extern uint8_t ucHeap[configTOTAL_HEAP_SIZE];
#else
PRIVILEGED_DATA static uint8_t ucHeap[configTOTAL_HEAP_SIZE];
#endif
#endif

/* Pointers the allocator returns are HK_ALIGN-aligned; a port that wants more asks for it. */
#define heapkitALIGNMENT ((portBYTE_ALIGNMENT) > (HK_ALIGN) ? (size_t)(portBYTE_ALIGNMENT) : (size_t)(HK_ALIGN))

/* The regions heap's control data: its struct and one slot per region (HK_ALIGN spare to align it). */
PRIVILEGED_DATA static union {
    uint8_t ucBytes[HK_REGIONS_FOOTPRINT(configHEAPKIT_MAX_REGIONS) + HK_ALIGN];
    void *pvAlign;
    uint64_t ullAlign;
} xHeapkitControl;

PRIVILEGED_DATA static hk_regions_t *pxHeapkitRegions = NULL;
PRIVILEGED_DATA static hk_heap_t *pxHeapkitHeap = NULL;

static void prvHeapkitError(void *pvCtx, hk_heap_t *pxHeap, hk_error_t xError, const void *pv)
{
    (void)pvCtx;
    (void)pxHeap;
#if (configHEAPKIT_USE_ERROR_HOOK == 1)
    vApplicationHeapkitErrorHook(xError, pv);
#else
    (void)pv;
    configASSERT(xError == (hk_error_t)0);
    (void)xError;
#endif
}

static void prvHeapkitUse(hk_heap_t *pxHeap)
{
    hk_hooks_t xHooks;
    pxHeapkitHeap = pxHeap;
    (void)memset(&xHooks, 0, sizeof(xHooks));
    xHooks.on_error = prvHeapkitError;
    hk_set_hooks(pxHeapkitHeap, &xHooks);
}

/* A region's bounds with its start moved up to heapkit's alignment; 0 when nothing is left. */
static size_t prvHeapkitAlignRegion(uint8_t *pucStart, size_t xSize, void **ppvArena)
{
    uintptr_t uxStart = (uintptr_t)pucStart;
    uintptr_t uxAligned = (uxStart + (HK_ALIGN - 1u)) & ~(uintptr_t)(HK_ALIGN - 1u);
    *ppvArena = (void *)uxAligned;
    return xSize > (size_t)(uxAligned - uxStart) ? xSize - (size_t)(uxAligned - uxStart) : 0u;
}

/*
 * The heap over one region: the allocator itself, without the regions
 * layer in between (one call less on every operation). A region that holds
 * no heap asserts.
 */
static void prvHeapkitSingle(uint8_t *pucStart, size_t xSize)
{
    void *pvArena;
    hk_status_t xStatus = HK_EINVAL;
    hk_heap_t *pxHeap = NULL;
    size_t xRoom = prvHeapkitAlignRegion(pucStart, xSize, &pvArena);
    if (xRoom > 0u) {
        pxHeap = prvHeapkitMake(pvArena, xRoom, &xStatus);
    }
    configASSERT(pxHeap != NULL);
    (void)xStatus;
    if (pxHeap != NULL) {
        prvHeapkitUse(pxHeap);
    }
}

/* The heap over several regions: a regions heap in xHeapkitControl, one allocator per region. */
static void prvHeapkitMulti(const HeapRegion_t *pxRegions)
{
    hk_status_t xStatus = HK_EINVAL;
    const HeapRegion_t *pxRegion;
    pxHeapkitRegions = hk_regions_init(xHeapkitControl.ucBytes, sizeof(xHeapkitControl.ucBytes), prvHeapkitMake,
                                       &xStatus);
    configASSERT(pxHeapkitRegions != NULL);
    if (pxHeapkitRegions == NULL) {
        return;
    }
    for (pxRegion = pxRegions; pxRegion->xSizeInBytes > 0; pxRegion++) {
        void *pvArena;
        size_t xRoom = prvHeapkitAlignRegion(pxRegion->pucStartAddress, pxRegion->xSizeInBytes, &pvArena);
        xStatus = xRoom > 0u ? hk_regions_add(pxHeapkitRegions, pvArena, xRoom) : HK_ETOOSMALL;
        configASSERT(xStatus == HK_OK);
    }
    prvHeapkitUse(hk_regions_heap(pxHeapkitRegions));
}

/* First use without vPortDefineHeapRegions(): the heap_4 way, in ucHeap. */
static void prvHeapkitInitDefault(void)
{
#if (configHEAPKIT_UCHEAP == 1)
    prvHeapkitSingle(ucHeap, (size_t)configTOTAL_HEAP_SIZE);
#else
    /* heap_5: vPortDefineHeapRegions() must come before any allocation. */
    configASSERT(pxHeapkitHeap != NULL);
#endif
}

void vPortDefineHeapRegions(const HeapRegion_t *const pxHeapRegions)
{
    /* Once, before any allocation, as heap_5 requires, and at least one region. */
    configASSERT(pxHeapkitHeap == NULL);
    configASSERT(pxHeapRegions[0].xSizeInBytes > 0);
    if (pxHeapkitHeap != NULL || pxHeapRegions[0].xSizeInBytes == 0) {
        return;
    }
    if (pxHeapRegions[1].xSizeInBytes == 0) {
        prvHeapkitSingle(pxHeapRegions[0].pucStartAddress, pxHeapRegions[0].xSizeInBytes);
    } else {
        prvHeapkitMulti(pxHeapRegions);
    }
}

static void *prvHeapkitAlloc(size_t xWantedSize)
{
    if (heapkitALIGNMENT > HK_ALIGN) {
        return hk_aligned_alloc(pxHeapkitHeap, heapkitALIGNMENT, xWantedSize);
    }
    return hk_malloc(pxHeapkitHeap, xWantedSize);
}

void *pvPortMalloc(size_t xWantedSize)
{
    void *pvReturn = NULL;
    size_t xTaken = 0;

    vTaskSuspendAll();
    {
        if (pxHeapkitHeap == NULL) {
            prvHeapkitInitDefault();
        }
        if (xWantedSize > 0 && pxHeapkitHeap != NULL) {
            size_t xFreeBefore = pxHeapkitHeap->stats.free_bytes;
            pvReturn = prvHeapkitAlloc(xWantedSize);
            xTaken = xFreeBefore - pxHeapkitHeap->stats.free_bytes;
        }
        traceMALLOC(pvReturn, xTaken);
        (void)xTaken;
    }
    (void)xTaskResumeAll();

#if (configUSE_MALLOC_FAILED_HOOK == 1)
    if (pvReturn == NULL) {
        vApplicationMallocFailedHook();
    }
#endif

    configASSERT((((size_t)pvReturn) & (size_t)portBYTE_ALIGNMENT_MASK) == 0);
    return pvReturn;
}

void vPortFree(void *pv)
{
    if (pv == NULL) {
        return;
    }
    vTaskSuspendAll();
    {
        /* Freeing before any allocation is misuse: there is no heap to own pv. */
        configASSERT(pxHeapkitHeap != NULL);
        if (pxHeapkitHeap != NULL) {
            size_t xFreeBefore = pxHeapkitHeap->stats.free_bytes;
            int xFree = 1;
#if (configHEAP_CLEAR_MEMORY_ON_FREE == 1)
            {
                /* 0 means pv is no live block (already reported): leave it to that report. */
                size_t xUsable = hk_usable_size(pxHeapkitHeap, pv);
                xFree = xUsable != 0;
                (void)memset(pv, 0, xUsable);
            }
#endif
            if (xFree) {
                hk_free(pxHeapkitHeap, pv);
            }
            traceFREE(pv, pxHeapkitHeap->stats.free_bytes - xFreeBefore);
            (void)xFreeBefore;
        }
    }
    (void)xTaskResumeAll();
}

void *pvPortCalloc(size_t xNum, size_t xSize)
{
    void *pv;
    if (xSize != 0 && xNum > SIZE_MAX / xSize) {
        return NULL;
    }
    pv = pvPortMalloc(xNum * xSize);
    if (pv != NULL) {
        (void)memset(pv, 0, xNum * xSize);
    }
    return pv;
}

/*
 * Extension: realloc. NULL pv allocates, size 0 frees and returns NULL. A
 * size that fits the block's usable size keeps the block; a larger one
 * moves it as pvPortMalloc, copy, vPortFree (each counted and traced as
 * such, so the trace macros and vPortGetHeapStats stay in step). A failure
 * returns NULL, leaves pv as it was and calls the malloc-failed hook; a pv
 * that is no live block is reported as misuse and gets NULL.
 */
void *pvPortRealloc(void *pv, size_t xWantedSize)
{
    void *pvReturn;
    size_t xOld = 0;

    if (pv == NULL) {
        return pvPortMalloc(xWantedSize);
    }
    if (xWantedSize == 0) {
        vPortFree(pv);
        return NULL;
    }
    vTaskSuspendAll();
    {
        configASSERT(pxHeapkitHeap != NULL);
        if (pxHeapkitHeap != NULL) {
            xOld = hk_usable_size(pxHeapkitHeap, pv);
        }
    }
    (void)xTaskResumeAll();
    if (xOld == 0) {
        return NULL;
    }
    if (xWantedSize <= xOld) {
        return pv;
    }
    pvReturn = pvPortMalloc(xWantedSize);
    if (pvReturn != NULL) {
        (void)memcpy(pvReturn, pv, xOld);
        vPortFree(pv);
    }
    return pvReturn;
}

size_t xPortGetFreeHeapSize(void) { return pxHeapkitHeap != NULL ? pxHeapkitHeap->stats.free_bytes : 0u; }

size_t xPortGetMinimumEverFreeHeapSize(void)
{
    return pxHeapkitHeap != NULL ? pxHeapkitHeap->stats.min_ever_free : 0u;
}

void xPortResetHeapMinimumEverFreeHeapSize(void)
{
    vTaskSuspendAll();
    if (pxHeapkitHeap != NULL) {
        hk_restart_low_water(pxHeapkitHeap);
    }
    (void)xTaskResumeAll();
}

void vPortGetHeapStats(HeapStats_t *pxHeapStats)
{
    hk_stats_t xStats;
    (void)memset(&xStats, 0, sizeof(xStats));
    vTaskSuspendAll();
    if (pxHeapkitHeap != NULL) {
        hk_get_stats(pxHeapkitHeap, &xStats);
    }
    (void)xTaskResumeAll();
    pxHeapStats->xAvailableHeapSpaceInBytes = xStats.free_bytes;
    pxHeapStats->xSizeOfLargestFreeBlockInBytes = xStats.largest_free;
    pxHeapStats->xSizeOfSmallestFreeBlockInBytes = xStats.smallest_free;
    pxHeapStats->xNumberOfFreeBlocks = xStats.free_blocks;
    pxHeapStats->xMinimumEverFreeBytesRemaining = xStats.min_ever_free;
    pxHeapStats->xNumberOfSuccessfulAllocations = xStats.alloc_count;
    pxHeapStats->xNumberOfSuccessfulFrees = xStats.free_count;
}

/* heap_4 and heap_5 have nothing to do here either: the heap is set up on first use. */
void vPortInitialiseBlocks(void) {}

/*
 * Forget the heap and its counters (for applications that restart the
 * kernel): the next allocation sets it up again, or vPortDefineHeapRegions()
 * may be called again.
 */
void vPortHeapResetState(void)
{
    pxHeapkitRegions = NULL;
    pxHeapkitHeap = NULL;
}

hk_heap_t *pxPortGetHeapkitHeap(void) { return pxHeapkitHeap; }

#endif
