/* SPDX-License-Identifier: MIT */
/*
 * "pool": the fctma-pools seed's FCTMA, one pool sized to the trace's
 * largest request (lab/target/fctma_pool.h, shared with the target driver,
 * which calls it by the same name).
 */
#include "allocators.h"

#include "../target/fctma_pool.h"

static hk_heap_t *make_sized(void *arena, size_t size, size_t block, hk_status_t *status)
{
    hk_pool_t *pool = lab_fctma_pool(arena, size, block, status);
    return pool != NULL ? hk_pool_heap(pool) : NULL;
}

static hk_heap_t *make(void *arena, size_t size, hk_status_t *status) { return make_sized(arena, size, 0, status); }

const lab_alloc_t lab_pool_alloc = {"pool", LAB_FAMILY_HEAPKIT, make, NULL, LAB_IN_ARENA, make_sized};
