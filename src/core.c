/* SPDX-License-Identifier: MIT */
/*
 * What every allocator's own paths need of the shared layer, and nothing of
 * the uniform interface (heap.c): a direct-API program links this file and
 * its allocator alone.
 */
#include "hk_internal.h"

/*
 * Below level 2 field by field, not hk_memset: a program whose allocator
 * needs no memset otherwise links none (newlib-nano's is 160 bytes). Level
 * 2's fills link it anyway, and there one call is the shorter.
 */
HK_STATIC_ASSERT(sizeof(hk_stats_t) == 17 * sizeof(size_t), hk_heap_setup_sets_every_stats_field);
HK_STATIC_ASSERT(sizeof(hk_hooks_t) == 4 * sizeof(void *), hk_heap_setup_sets_every_hook);

HK_INTERNAL void hk_heap_setup(hk_heap_t *heap, size_t capacity)
{
    hk_stats_t *s = &heap->stats;
    if (HK_CANARIES) {
        hk_memset(heap, 0, sizeof(*heap));
        hk_heap_ready(heap, capacity);
        return;
    }
    heap->ops = NULL;
    heap->hooks.lock = NULL;
    heap->hooks.unlock = NULL;
    heap->hooks.on_error = NULL;
    heap->hooks.ctx = NULL;
    hk_heap_ready(heap, capacity);
    s->used_requested = 0;
    s->used_granted = 0;
    s->peak_used = 0;
    s->largest_free = 0;
    s->smallest_free = 0;
    s->free_blocks = 0;
    s->used_blocks = 0;
    s->alloc_count = 0;
    s->free_count = 0;
    s->realloc_count = 0;
    s->fail_count = 0;
    s->split_count = 0;
    s->coalesce_count = 0;
    s->error_count = 0;
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
