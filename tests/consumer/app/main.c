/* SPDX-License-Identifier: MIT */
/*
 * A firmware-shaped heapkit user: a TLSF heap in a static arena, blocks
 * handed out and back, the statistics checked. No stdio, so the same file
 * links on a bare-metal target; the exit status says what failed.
 *
 * CONSUMER_EXPECT_ALIGN and CONSUMER_EXPECT_HARDENING are the values the
 * library was built with: the build fails unless they reached this file
 * through the package (CMake target, pkg-config Cflags), as they must, since
 * the headers size and check blocks with them.
 */
#include <stdint.h>

#include "heapkit/tlsf.h"

#if defined(CONSUMER_EXPECT_ALIGN) && HK_ALIGN != CONSUMER_EXPECT_ALIGN
#error "HK_ALIGN differs from the library's: the package did not pass it on"
#endif
#if defined(CONSUMER_EXPECT_HARDENING) && HK_HARDENING != CONSUMER_EXPECT_HARDENING
#error "HK_HARDENING differs from the library's: the package did not pass it on"
#endif

#define BLOCKS 8

static unsigned char arena[8 * 1024];

int main(void)
{
    hk_status_t status;
    hk_tlsf_t *tlsf = hk_tlsf_init(arena, sizeof arena, &status);
    hk_heap_t *heap;
    hk_stats_t stats;
    unsigned char *block[BLOCKS];
    unsigned i;

    if (tlsf == NULL)
        return 10;
    heap = hk_tlsf_heap(tlsf);
    for (i = 0; i < BLOCKS; i++) {
        block[i] = hk_malloc(heap, 24 + 40 * i);
        if (block[i] == NULL || (uintptr_t)block[i] % HK_ALIGN != 0)
            return 11;
        block[i][0] = (unsigned char)i;
    }
    hk_get_stats(heap, &stats);
    if (stats.used_blocks != BLOCKS || stats.alloc_count != BLOCKS || stats.free_bytes >= stats.capacity)
        return 12;
    for (i = 0; i < BLOCKS; i += 2)
        hk_free(heap, block[i]);
    for (i = 1; i < BLOCKS; i += 2)
        hk_free(heap, block[i]);
    hk_get_stats(heap, &stats);
    if (stats.used_blocks != 0 || stats.free_count != BLOCKS || stats.free_bytes != stats.capacity ||
        stats.free_blocks != 1 || stats.error_count != 0 || hk_check(heap) != HK_CHECK_OK)
        return 13;
#if HK_HARDENING >= 2
    /* The library must be the level-2 build the header says: a write one byte
       past the request hits the canary, and free reports it. */
    block[0] = hk_malloc(heap, 20);
    if (block[0] == NULL)
        return 14;
    block[0][20] = 0x5a;
    hk_free(heap, block[0]);
    hk_get_stats(heap, &stats);
    if (stats.error_count != 1)
        return 15;
#endif
    return 0;
}
