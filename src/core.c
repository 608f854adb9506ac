/* SPDX-License-Identifier: MIT */
/*
 * What every allocator's own paths need of the shared layer, and nothing of
 * the uniform interface (heap.c): a direct-API program links this file and
 * its allocator alone.
 */
#include "hk_internal.h"

HK_INTERNAL void hk_heap_setup(hk_heap_t *heap, size_t capacity)
{
    hk_memset(heap, 0, sizeof(*heap));
    heap->stats.capacity = capacity;
    heap->stats.free_bytes = capacity;
    heap->stats.min_ever_free = capacity;
}

HK_INTERNAL void hk_report(hk_heap_t *heap, hk_error_t error, const void *ptr)
{
    heap->stats.error_count++;
    if (heap->hooks.on_error != NULL) {
        heap->hooks.on_error(heap->hooks.ctx, heap, error, ptr);
        return;
    }
    HK_ASSERT(!"heapkit: misuse detected (see hk_error_t)");
}

HK_INTERNAL void hk_stats_read(const hk_heap_t *heap, hk_stats_t *out)
{
    const hk_stats_t *s = &heap->stats;
    out->capacity = s->capacity;
    out->free_bytes = s->free_bytes;
    out->min_ever_free = s->min_ever_free;
    out->used_requested = s->used_requested;
    out->used_granted = s->used_granted;
    out->peak_used = s->capacity - s->min_ever_free;
    out->largest_free = s->largest_free;
    out->smallest_free = s->smallest_free;
    out->free_blocks = s->free_blocks;
    out->used_blocks = s->used_blocks;
    out->alloc_count = s->alloc_count;
    out->free_count = s->free_count;
    out->realloc_count = s->realloc_count;
    out->fail_count = s->fail_count;
    out->split_count = s->split_count;
    out->coalesce_count = s->coalesce_count;
    out->error_count = s->error_count;
}
