/* SPDX-License-Identifier: MIT */
/* The README's example: a TLSF heap on a static arena, used directly and through the uniform handle. */
#include <stdio.h>
#include <string.h>

#include "heapkit/tlsf.h"

static unsigned char arena[16 * 1024];

static void on_error(void *ctx, hk_heap_t *heap, hk_error_t error, const void *ptr)
{
    (void)ctx;
    printf("%s: %s at %p\n", hk_name(heap), hk_error_name(error), ptr);
}

int main(void)
{
    hk_status_t status;
    hk_tlsf_t *tlsf = hk_tlsf_init(arena, sizeof arena, &status);
    hk_heap_t *heap;
    hk_hooks_t hooks = {NULL, NULL, on_error, NULL};
    hk_stats_t stats;
    char *msg;

    if (tlsf == NULL) {
        printf("init failed: %d\n", (int)status);
        return 1;
    }
    heap = hk_tlsf_heap(tlsf);
    hk_set_hooks(heap, &hooks);

    msg = hk_malloc(heap, 32);           /* or hk_tlsf_malloc(tlsf, 32): no lock, no indirection */
    strcpy(msg, "hello from heapkit");
    msg = hk_realloc(heap, msg, 200);    /* grows in place when the neighbour is free */
    printf("%s (usable %zu bytes)\n", msg, hk_usable_size(heap, msg));

    hk_free(heap, msg);
    hk_free(heap, msg);                  /* double free: reported, heap untouched */

    hk_get_stats(heap, &stats);
    printf("capacity %zu, free %zu, largest free %zu, errors %zu, check %d\n", stats.capacity,
           stats.free_bytes, stats.largest_free, stats.error_count, hk_check(heap));
    return stats.free_bytes == stats.capacity && stats.error_count == 1 && hk_check(heap) == 0 ? 0 : 1;
}
