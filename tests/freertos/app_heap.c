/* SPDX-License-Identifier: MIT */
/*
 * The heap under test, as the applications see it: built once per heap with
 *   APP_HEAP_NAME     its name
 *   APP_HEAP_KIND     4 (heap_4.c), 5 (heap_5.c) or 0 (a heapkit file)
 * and configAPPLICATION_ALLOCATED_HEAP (1: ucHeap is defined here).
 */
#include <stdint.h>

#include "FreeRTOS.h"
#include "task.h"
#include "app.h"

#if APP_HEAP_KIND == 0
#include "heapkit/heapkit.h"
hk_heap_t *pxPortGetHeapkitHeap(void);
void *pvPortRealloc(void *pv, size_t xWantedSize);
#endif

#if defined(configHEAPKIT_USE_ERROR_HOOK) && configHEAPKIT_USE_ERROR_HOOK == 1
#include <stdio.h>
#include <unistd.h>

/* The documented alternative to configASSERT: the application hears about misuse and goes on. */
void vApplicationHeapkitErrorHook(hk_error_t xError, const void *pv)
{
    printf("%s: heapkit error hook: %s at %p\n", APP_HEAP_NAME, hk_error_name(xError), pv);
    fflush(stdout);
    _exit(xError == HK_ERR_DOUBLE_FREE ? 0 : 2);
}
#endif

#if configAPPLICATION_ALLOCATED_HEAP == 1 && APP_HEAP_KIND != 5
uint8_t ucHeap[configTOTAL_HEAP_SIZE];
#endif

/* Three regions of a quarter, three eighths and three eighths of configTOTAL_HEAP_SIZE, 4 KiB apart. */
#define REGION_GAP 4096u
static union {
    uint8_t bytes[configTOTAL_HEAP_SIZE + 3u * REGION_GAP + 64u];
    uint64_t align;
} regions_mem;

const char *app_heap_name(void) { return APP_HEAP_NAME; }

int app_heap_setup(int regions)
{
#if APP_HEAP_KIND == 4
    return regions ? -1 : 0;
#else
    if (regions) {
        uint8_t *p = regions_mem.bytes;
        size_t quarter = configTOTAL_HEAP_SIZE / 4u;
        /* Starts off the alignment on purpose: the heap aligns them itself, as heap_5 does. */
        HeapRegion_t r[4] = {{NULL, 0}, {NULL, 0}, {NULL, 0}, {NULL, 0}};
        r[0].pucStartAddress = p + 3;
        r[0].xSizeInBytes = quarter - 3u;
        r[1].pucStartAddress = p + quarter + REGION_GAP + 5u;
        r[1].xSizeInBytes = 3u * quarter / 2u - 5u;
        r[2].pucStartAddress = p + 5u * quarter / 2u + 2u * REGION_GAP;
        r[2].xSizeInBytes = 3u * quarter / 2u;
        vPortDefineHeapRegions(r);
        return 0;
    }
#if APP_HEAP_KIND == 5
    {
        HeapRegion_t r[2] = {{NULL, 0}, {NULL, 0}};
        r[0].pucStartAddress = regions_mem.bytes;
        r[0].xSizeInBytes = configTOTAL_HEAP_SIZE;
        vPortDefineHeapRegions(r);
    }
#endif
    return 0;
#endif
}

int app_heap_check(void)
{
#if APP_HEAP_KIND == 0
    int rc;
    vTaskSuspendAll();
    rc = hk_check(pxPortGetHeapkitHeap());
    (void)xTaskResumeAll();
    return rc;
#else
    return 0;
#endif
}

#if APP_HEAP_KIND == 0
typedef struct free_walk {
    size_t bytes;
    size_t blocks;
    size_t largest;
    size_t smallest;
} free_walk_t;

static void count_free(void *ctx, const hk_block_info_t *b)
{
    free_walk_t *w = ctx;
    if (!b->used) {
        w->bytes += b->size;
        w->blocks++;
        w->largest = b->size > w->largest ? b->size : w->largest;
        w->smallest = (w->smallest == 0 || b->size < w->smallest) ? b->size : w->smallest;
    }
}
#endif

int app_heap_stats_check(void)
{
#if APP_HEAP_KIND == 0
    HeapStats_t s;
    hk_stats_t k;
    free_walk_t w = {0, 0, 0, 0};
    int rc = 0;
    vTaskSuspendAll();
    vPortGetHeapStats(&s);
    hk_walk(pxPortGetHeapkitHeap(), count_free, &w);
    hk_get_stats(pxPortGetHeapkitHeap(), &k);
    (void)xTaskResumeAll();
    if (s.xAvailableHeapSpaceInBytes != w.bytes) {
        rc = 1;
    } else if (s.xNumberOfFreeBlocks != w.blocks) {
        rc = 2;
    } else if (s.xSizeOfLargestFreeBlockInBytes != w.largest) {
        rc = 3;
    } else if (s.xSizeOfSmallestFreeBlockInBytes != w.smallest) {
        rc = 4;
    } else if (s.xNumberOfSuccessfulAllocations != k.alloc_count || s.xNumberOfSuccessfulFrees != k.free_count) {
        rc = 5;
    } else if (s.xMinimumEverFreeBytesRemaining != k.min_ever_free || k.min_ever_free > w.bytes) {
        rc = 6;
    } else if (xPortGetFreeHeapSize() != w.bytes) {
        rc = 7;
    }
    return rc;
#else
    return 0;
#endif
}

int app_heap_has_realloc(void) { return APP_HEAP_KIND == 0; }

void *app_heap_realloc(void *pv, size_t size)
{
#if APP_HEAP_KIND == 0
    return pvPortRealloc(pv, size);
#else
    (void)pv;
    (void)size;
    return NULL;
#endif
}

void app_heap_initialise_blocks(void)
{
#if APP_HEAP_KIND != 5
    vPortInitialiseBlocks();
#endif
}
