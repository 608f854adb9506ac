/* SPDX-License-Identifier: MIT */
/*
 * heap_pools.c: a FreeRTOS heap (drop-in for heap_4.c / heap_5.c) made of
 * fixed-size block pools, the fctma-pools seed's FCTMA (src/pool.c): one pool
 * per size class, malloc takes a block from the smallest class that fits
 * (falling through to larger classes when it is empty) and free puts it
 * back, both O(1) with no splitting or merging, so timing never depends on
 * the heap's history. A request above the largest class fails. The FreeRTOS
 * API and its configuration are in heapkit_freertos_common.h.
 *
 * Configuration (FreeRTOSConfig.h):
 *   configHEAPKIT_POOL_CLASSES  the size classes as an initializer of
 *                               { block size, weight } pairs, block sizes
 *                               strictly increasing. Each region (ucHeap,
 *                               or each of vPortDefineHeapRegions) is
 *                               divided among the classes in proportion to
 *                               the weights: class i gets weight_i * k
 *                               blocks, k as large as the region allows.
 *                               The default suits the kernel's own objects
 *                               (TCBs, stacks, queues) and small messages:
 *     { { 32, 16 }, { 64, 16 }, { 128, 32 }, { 256, 8 }, { 512, 8 },
 *       { 1024, 4 }, { 2048, 4 }, { 4096, 2 }, { 8192, 1 } }
 * Pick classes from the application's allocation sizes (the lab's traces
 * show them); a block size is the largest request the class serves. At most
 * HK_POOLSET_MAX_CLASSES (31) classes; a request goes to the smallest class
 * that fits unless two block sizes lie in one octave [2^k, 2^(k+1) - 1],
 * where requests the lower would take may get the class above it
 * (heapkit/pool.h).
 */
#include "heapkit/pool.h"
#include "heapkit_freertos_common.h"

#ifndef configHEAPKIT_POOL_CLASSES
#define configHEAPKIT_POOL_CLASSES                                                                                     \
    {                                                                                                                  \
        {32, 16}, {64, 16}, {128, 32}, {256, 8}, {512, 8}, {1024, 4}, {2048, 4}, {4096, 2}, { 8192, 1 }                 \
    }
#endif

/* One class as configured: block size and weight. */
typedef struct HeapkitPoolClass {
    size_t xBlockSize;
    size_t xWeight;
} HeapkitPoolClass_t;

static const HeapkitPoolClass_t xHeapkitClasses[] = configHEAPKIT_POOL_CLASSES;

#define heapkitCLASS_COUNT (sizeof(xHeapkitClasses) / sizeof(xHeapkitClasses[0]))

/* The pool set with weight * k blocks per class, or NULL when it does not fit. */
static hk_heap_t *prvPoolsTry(void *arena, size_t size, size_t k, hk_status_t *status)
{
    hk_pool_class_t xClasses[heapkitCLASS_COUNT];
    hk_poolset_t *pxSet;
    size_t i;
    for (i = 0; i < heapkitCLASS_COUNT; i++) {
        xClasses[i].block_size = xHeapkitClasses[i].xBlockSize;
        xClasses[i].count = xHeapkitClasses[i].xWeight * k;
    }
    pxSet = hk_poolset_init(arena, size, xClasses, heapkitCLASS_COUNT, status);
    return pxSet != NULL ? hk_poolset_heap(pxSet) : NULL;
}

static hk_heap_t *prvHeapkitMake(void *arena, size_t size, hk_status_t *status)
{
    size_t xPerK = 0;
    size_t lo = 0;
    size_t hi;
    size_t i;
    hk_status_t xStatus;
    for (i = 0; i < heapkitCLASS_COUNT; i++) {
        xPerK += xHeapkitClasses[i].xBlockSize * xHeapkitClasses[i].xWeight;
    }
    /* Binary search for the largest k that fits; hi never fits (headers come on top). */
    hi = size / xPerK + 1u;
    while (hi - lo > 1u) {
        size_t mid = lo + (hi - lo) / 2u;
        if (prvPoolsTry(arena, size, mid, &xStatus) != NULL) {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    return prvPoolsTry(arena, size, lo != 0u ? lo : 1u, status);
}
