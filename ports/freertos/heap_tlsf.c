/* SPDX-License-Identifier: MIT */
/*
 * heap_tlsf.c: a FreeRTOS heap (drop-in for heap_4.c / heap_5.c) on heapkit's
 * TLSF allocator (src/tlsf.c): malloc and free in O(1) whatever the heap's
 * state, immediate coalescing, an 8-byte tag per block (4 with HK_TAG_WIDE
 * 0, for heaps up to 256 KiB: src/tagged.h). The FreeRTOS API and its configuration are in
 * heapkit_freertos_common.h; the second-level list count is the library's
 * compile-time HK_TLSF_SL_LOG2 (include/heapkit/tlsf.h).
 */
#include "heapkit/tlsf.h"
#include "heapkit_freertos_common.h"

static hk_heap_t *prvHeapkitMake(void *arena, size_t size, hk_status_t *status)
{
    hk_tlsf_t *pxTlsf = hk_tlsf_init(arena, size, status);
    return pxTlsf != NULL ? hk_tlsf_heap(pxTlsf) : NULL;
}
