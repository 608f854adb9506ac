/* SPDX-License-Identifier: MIT */
/*
 * The fctma-pools seed's FCTMA as the lab replays it, under one name, "pool",
 * in the host engine (lab/engine/pool_alloc.c) and in the target driver
 * (allocs.c): ONE pool whose block is the trace's largest request, carved
 * from a bump allocator (the seed's SimpleDMA) on the arena, with as many
 * blocks as fit, all made at creation as the seed's createPool(BlockSize,
 * MaxBlocks) makes them. heapkit's poolset is not FCTMA: its size classes
 * hand a 127-byte request a 256-byte block.
 */
#ifndef LAB_TARGET_FCTMA_POOL_H
#define LAB_TARGET_FCTMA_POOL_H

#include "heapkit/bump.h"
#include "heapkit/pool.h"

/* The pool on [arena, arena + size), or NULL with *status set when not one block fits. */
static inline hk_pool_t *lab_fctma_pool(void *arena, size_t size, size_t block, hk_status_t *status)
{
    hk_status_t st = HK_OK;
    size_t lo = 0;
    /* A block takes its request plus a header of at least 8 bytes: hi blocks never fit. */
    size_t hi;
    block = block != 0 ? block : 1;
    hi = size / (block + 8u) + 1u;
    while (hi - lo > 1) {
        size_t mid = lo + (hi - lo) / 2;
        hk_bump_t *bump = hk_bump_init(arena, size, &st);
        if (bump != NULL && hk_pool_create(hk_bump_heap(bump), block, mid) != NULL) {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    if (lo != 0) {
        hk_bump_t *bump = hk_bump_init(arena, size, &st);
        hk_pool_t *pool = bump != NULL ? hk_pool_create(hk_bump_heap(bump), block, lo) : NULL;
        if (pool != NULL) {
            *status = HK_OK;
            return pool;
        }
    }
    *status = st != HK_OK ? st : HK_ETOOSMALL;
    return NULL;
}

#endif
