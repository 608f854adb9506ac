/* SPDX-License-Identifier: MIT */
/*
 * heap_buddy.c: a FreeRTOS heap (drop-in for heap_4.c / heap_5.c) on heapkit's
 * binary buddy allocator (src/buddy.c), the buddy-freertos seed's
 * heap_buddy.c: power-of-two blocks split on demand and merged with their
 * buddy on free, so a fully freed heap is always back to its largest blocks.
 * malloc and free take O(log heap size); blocks carry no header (a control
 * byte per smallest block instead). The FreeRTOS API and its configuration
 * are in heapkit_freertos_common.h.
 *
 * Configuration (FreeRTOSConfig.h):
 *   configHEAPKIT_BUDDY_MIN_BLOCK  smallest block, a power of two (0 takes
 *                                  HK_BUDDY_MIN_BLOCK, 16) (0)
 *   configHEAPKIT_BUDDY_LAZY       1: DELAY-2 lazy coalescing (Barkley and
 *                                  Lee), the seed's future work (0)
 */
#include "heapkit/buddy.h"
#include "heapkit_freertos_common.h"

#ifndef configHEAPKIT_BUDDY_MIN_BLOCK
#define configHEAPKIT_BUDDY_MIN_BLOCK 0
#endif

#ifndef configHEAPKIT_BUDDY_LAZY
#define configHEAPKIT_BUDDY_LAZY 0
#endif

static hk_heap_t *prvHeapkitMake(void *arena, size_t size, hk_status_t *status)
{
    hk_buddy_config_t xConfig;
    hk_buddy_t *pxBuddy;
    (void)memset(&xConfig, 0, sizeof(xConfig));
    xConfig.min_block = configHEAPKIT_BUDDY_MIN_BLOCK;
    xConfig.lazy = configHEAPKIT_BUDDY_LAZY;
    pxBuddy = hk_buddy_init(arena, size, &xConfig, status);
    return pxBuddy != NULL ? hk_buddy_heap(pxBuddy) : NULL;
}
