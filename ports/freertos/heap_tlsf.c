/* SPDX-License-Identifier: MIT */
/*
 * heap_tlsf.c: a FreeRTOS heap (drop-in for heap_4.c / heap_5.c) on heapkit's
 * TLSF allocator (src/tlsf.c): malloc and free in O(1) whatever the heap's
 * state, immediate coalescing, 8 bytes of header per block. The FreeRTOS API
 * and its configuration are in heapkit_freertos_common.h.
 *
 * Configuration (FreeRTOSConfig.h):
 *   configHEAPKIT_TLSF_SL_LOG2  log2 of the second-level lists per power of
 *                               two (1..5; 0 takes HK_TLSF_SL_LOG2, the
 *                               library's default) (0)
 */
#include "heapkit/tlsf.h"
#include "heapkit_freertos_common.h"

#ifndef configHEAPKIT_TLSF_SL_LOG2
#define configHEAPKIT_TLSF_SL_LOG2 0
#endif

static hk_heap_t *prvHeapkitMake(void *arena, size_t size, hk_status_t *status)
{
    hk_tlsf_config_t xConfig;
    hk_tlsf_t *pxTlsf;
    (void)memset(&xConfig, 0, sizeof(xConfig));
    xConfig.sl_log2 = configHEAPKIT_TLSF_SL_LOG2;
    pxTlsf = hk_tlsf_init(arena, size, &xConfig, status);
    return pxTlsf != NULL ? hk_tlsf_heap(pxTlsf) : NULL;
}
