/* SPDX-License-Identifier: MIT */
/*
 * pool_sync: the fctma-pools seed's blocking interface to an FCTMA pool
 * (pool.c). hk_pool_set_sync() attaches a port's counting semaphore of free
 * blocks and its lock (the seed's BlocksAvailable and PoolLock); then
 * hk_pool_alloc_blocking() waits on the semaphore for a block (allocBuffer)
 * and hk_pool_release() frees a block of any pool, found through its
 * header (freeBuffer).
 *
 * The waiting itself is the pool's general path (hk_pool_take: semaphore,
 * then lock; hk_pool_give: lock, then semaphore after unlocking), which
 * every operation of a synced pool takes: attaching turns the pool's fast
 * paths off and points its malloc and free at the general paths. pool.c
 * calls the hooks through the pool's sync pointer and nothing in this file,
 * so a program that never attaches one links none of it, nor the general
 * paths.
 *
 * Time: as the pool's, plus the port's semaphore and lock; the wait is the
 * caller's timeout at most.
 */
#include "pool_internal.h"

hk_status_t hk_pool_set_sync(hk_pool_t *pool, const hk_pool_sync_t *sync)
{
    void *sem;
    if (sync == NULL || pool->sync != NULL || pool->set != NULL || sync->sem_create == NULL ||
        sync->sem_take == NULL || sync->sem_give == NULL || sync->lock == NULL || sync->unlock == NULL) {
        return HK_EINVAL;
    }
    sem = sync->sem_create(sync->ctx, hk_pool_free_blocks(pool));
    if (sem == NULL) {
        return HK_EINVAL;
    }
    pool->sem = sem;
    pool->sync = sync;
    hk_pool_go_general(pool);
    return HK_OK;
}

void *hk_pool_alloc_blocking(hk_pool_t *pool, uint32_t timeout_ticks)
{
    return hk_pool_take(pool, pool->block_size, timeout_ticks, 1);
}

int hk_pool_release(void *ptr)
{
    uintptr_t owner;
    if (ptr == NULL) {
        return 0;
    }
    if (HK_CHECKS && ((uintptr_t)ptr % HK_ALIGN != 0 || (uintptr_t)ptr < POOL_HDR)) {
        return (int)HK_ERR_FOREIGN_PTR;
    }
    owner = hdr_of(ptr)->owner & ~TAG_MASK;
    if (HK_CHECKS &&
        (owner == 0 || owner % HK_ALIGN != 0 || ((const hk_pool_t *)owner)->magic != (POOL_MAGIC ^ owner))) {
        return (int)HK_ERR_FOREIGN_PTR;
    }
    return hk_pool_give((hk_pool_t *)owner, ptr);
}
