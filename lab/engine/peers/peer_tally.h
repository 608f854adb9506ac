/* SPDX-License-Identifier: MIT */
/*
 * What every peer adapter learns from a walk of its heap: the counts and
 * free-block geometry that the peer's own API does not give, and whether
 * the blocks tile the heap from its first block with no gap. The adapters'
 * get_stats and check compare these with the peer's diagnostics.
 */
#ifndef HK_LAB_PEER_TALLY_H
#define HK_LAB_PEER_TALLY_H

#include <stdint.h>
#include <string.h>

#include "heapkit/heapkit.h"

typedef struct peer_tally {
    const uint8_t *expect; /* where the next block should start */
    int gap;               /* a block started elsewhere */
    size_t covered;        /* gross bytes of all blocks */
    size_t used_blocks, used_gross, used_usable;
    size_t free_blocks, free_bytes, largest, smallest;
    int adjacent_free; /* two free blocks side by side */
    int prev_free;
} peer_tally_t;

/* hk_walk_fn: count block b into the peer_tally_t at ctx. */
static inline void peer_tally_block(void *ctx, const hk_block_info_t *b)
{
    peer_tally_t *t = ctx;
    t->gap |= (const uint8_t *)b->start != t->expect;
    t->expect = (const uint8_t *)b->start + b->size;
    t->covered += b->size;
    if (b->used) {
        t->used_blocks++;
        t->used_gross += b->size;
        t->used_usable += b->usable;
        t->prev_free = 0;
        return;
    }
    t->free_blocks++;
    t->free_bytes += b->size;
    if (b->size > t->largest) {
        t->largest = b->size;
    }
    if (t->smallest == 0 || b->size < t->smallest) {
        t->smallest = b->size;
    }
    t->adjacent_free |= t->prev_free;
    t->prev_free = 1;
}

/* An empty tally of a heap whose blocks start at first. */
static inline void peer_tally_start(peer_tally_t *t, const void *first)
{
    memset(t, 0, sizeof(*t));
    t->expect = first;
}

/* Walk heap with walk() from its first block, into t. */
static inline void peer_tally(hk_heap_t *heap, void (*walk)(hk_heap_t *, hk_walk_fn, void *), const void *first,
                              peer_tally_t *t)
{
    peer_tally_start(t, first);
    walk(heap, peer_tally_block, t);
}

/* The free-block geometry of a tally, into out. */
static inline void peer_tally_geometry(const peer_tally_t *t, hk_stats_t *out)
{
    out->largest_free = t->largest;
    out->smallest_free = t->smallest;
    out->free_blocks = t->free_blocks;
}

/* The walk agrees with the adapter's own counters of used blocks and their usable bytes. */
static inline int peer_tally_counts_agree(const peer_tally_t *t, const hk_heap_t *heap)
{
    return t->used_blocks == heap->stats.used_blocks && t->used_usable == heap->stats.used_granted;
}

/* owns(): inside the arena [lo, hi). */
static inline int peer_in_arena(const uint8_t *lo, const uint8_t *hi, const void *ptr)
{
    return (const uint8_t *)ptr >= lo && (const uint8_t *)ptr < hi;
}

#endif
