/* SPDX-License-Identifier: MIT */
/*
 * pool: the fctma-pools seed's FCTMA. Pools of equal-sized blocks laid out
 * in an arena or carved from any backing allocator at creation, so alloc
 * and free only pop and push a free list. See src/pool.c (one pool),
 * src/poolset.c (sets), src/pool_sync.c (blocking allocation) and
 * src/pool_lockfree.c; a program links only the ones it calls.
 *
 *   hk_pool_t     one pool (the seed's pool_s): a full heapkit allocator
 *                 that serves requests up to its block size. Each block
 *                 carries the seed's memory_s header, so hk_pool_release()
 *                 frees without naming the pool (freeBuffer). An optional
 *                 counting semaphore and lock (hk_pool_sync_t) make
 *                 hk_pool_alloc_blocking() wait for a block.
 *   hk_poolset_t  pools of several size classes on one arena (on a bump
 *                 allocator): malloc(size) takes the smallest class that
 *                 fits, falling through to larger classes when it is empty;
 *                 class and fall-through come from a table lookup and a bit
 *                 scan, not a search.
 *   hk_lfpool_t   an ISR-safe pool: lock-free, ABA-safe alloc and free on a
 *                 single 32-bit atomic head word (the seed's future work).
 *
 * Guarantees: malloc, free, resize and usable_size are O(1) with valid
 * pointers (lfpool: lock-free, O(1) per attempt); measured on the emulated
 * Cortex-M3 at -O2 by direct calls, HK_HARDENING 1, every call of the lab's
 * traces and directed worst case (heapkit bench --target cortex-m3):
 *                 malloc  free   (instructions, at most)
 *   hk_pool_t       22     29
 *   hk_poolset_t    45     49
 *   hk_lfpool_t     39     44
 * (HK_HARDENING 0: 16 / 21, 39 / 32, 34 / 40). get_stats is O(log blocks +
 * blocks handed out so far): only what cannot be derived is counted per
 * call, the rest is read from the headers (requested bytes, blocks in use)
 * and from the never-used blocks at the list's tail (the high-water mark).
 * peak_used is capacity - min_ever_free, the high-water mark of gross used
 * bytes. walk and check are O(blocks).
 *
 * Hardening (HK_HARDENING, heapkit.h), what each level detects:
 *   0  nothing: misuse is undefined behaviour; fast paths pop and push only.
 *   1  on every pointer handed in: foreign (outside the blocks), interior
 *      (not a block start), double free, a header written over (pool,
 *      poolset: an owner word that is not this pool's USED word, a requested
 *      size above the block; lfpool: a state word that is not USED); on
 *      every block malloc takes: its header (state word) must say free for
 *      this pool and its link must be a block of the pool, so an overrun
 *      into a free block, a write over a freed block's header or a broken
 *      link is reported (HK_ERR_CORRUPT) before the link is followed; the
 *      damaged list is then taken out of service (its blocks walked and
 *      counted as used, with no usable bytes) and the never-used blocks
 *      carry on. An overrun of any length into a used neighbour's header is
 *      caught when that block is freed (the owner word comes first).
 *   2  level 1, plus a canary after each block's request (usable_size is
 *      the request) checked on free, realloc and usable_size, and poison in
 *      free payloads, checked when malloc takes the block: writes past the
 *      request and writes after free. O(block size) per call.
 *   3  as 2; heap.c checks the whole heap around every uniform call.
 * Misuse on a pointer handed in is reported and leaves the heap unchanged;
 * check() validates everything and returns the first broken hk_check_t.
 *
 * Overheads on Cortex-M3 (32-bit pointers, HK_ALIGN 8); the seed's FCTMA
 * has an 8-byte header per block and 32 bytes per pool. Per block:
 *   hk_pool_t,    levels 0-1: an 8-byte header (two words: 16 bytes on
 *   hk_poolset_t  64-bit hosts), header + block_size rounded up to
 *                 HK_ALIGN; levels 2-3: HK_ALIGN more (the canary's room),
 *                 so a block takes the same largest request at every level.
 *   hk_lfpool_t   levels 0-1: no in-band header, a 4-byte state word per
 *                 block in a side table, the block rounded up to HK_ALIGN;
 *                 levels 2-3: HK_ALIGN more per block.
 * Per pool or set:
 *   hk_pool_t     160 bytes of control (88 of them the hk_heap_t that makes
 *                 the pool a heap in its own right); hk_pool_create
 *                 adds the backing allocator's overhead for that one
 *                 allocation (bump: 8).
 *   hk_poolset_t  its pools, 492 bytes of set control (a pool pointer per
 *                 possible class and the 32-entry size table) and the
 *                 bump's 104.
 *   hk_lfpool_t   132 bytes of control.
 */
#ifndef HEAPKIT_POOL_H
#define HEAPKIT_POOL_H

#include "heapkit/heapkit.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- one pool ---- */

typedef struct hk_pool hk_pool_t;

/*
 * Port hooks for blocking allocation: a counting semaphore of free blocks
 * and the pool lock (the seed's BlocksAvailable and PoolLock). Every member
 * is required. sem_take returns nonzero when it took one unit within
 * timeout_ticks (0: do not wait; the meaning of a tick and of
 * HK_POOL_WAIT_FOREVER is the port's). The struct must outlive the pool.
 */
typedef struct hk_pool_sync {
    void *ctx;
    void *(*sem_create)(void *ctx, size_t count);
    int (*sem_take)(void *sem, uint32_t timeout_ticks);
    void (*sem_give)(void *sem);
    void (*lock)(void *ctx);
    void (*unlock)(void *ctx);
} hk_pool_sync_t;

#define HK_POOL_WAIT_FOREVER 0xFFFFFFFFu

/*
 * Place the pool at the start of arena and fill the rest with as many blocks
 * of at least block_size bytes as fit. HK_EINVAL for a NULL arena,
 * block_size 0 or so large that a block's size overflows; HK_ETOOSMALL
 * when not one block fits. Links no backing allocator.
 */
hk_pool_t *hk_pool_init(void *arena, size_t size, size_t block_size, hk_status_t *status);
/*
 * Carve a pool of max_blocks blocks of at least block_size bytes from
 * backing with one hk_malloc(): the pool struct, then the blocks, laid out
 * as hk_pool_init() lays out its arena. NULL if block_size or max_blocks is
 * 0, backing is NULL, or backing cannot supply the memory. The pool's
 * misuse reports and lock hooks are its own heap's.
 */
hk_pool_t *hk_pool_create(hk_heap_t *backing, size_t block_size, size_t max_blocks);
/*
 * Retire a pool: a stale hk_pool_release() then finds no pool. A pool from
 * hk_pool_create goes back to its backing; one from hk_pool_init has
 * nothing to give back (its arena is the caller's again). Pools of a set
 * are left alone.
 */
void hk_pool_destroy(hk_pool_t *pool);
hk_heap_t *hk_pool_heap(hk_pool_t *pool);
/*
 * The largest request a block takes: block_size rounded up so that header
 * and payload fill whole HK_ALIGN units; the same at every HK_HARDENING.
 * usable_size() reports it for every block, or at level 2 the request.
 */
size_t hk_pool_block_size(const hk_pool_t *pool);
/* Blocks free now (O(blocks handed out so far): the blocks in use are counted from their headers). */
size_t hk_pool_available(const hk_pool_t *pool);

/*
 * Attach the semaphore and lock: the semaphore is created with the number
 * of free blocks. From then on every operation on the pool takes its lock
 * itself (leave the pool heap's lock hooks unset), allocations first take
 * the semaphore and frees give it after unlocking. HK_EINVAL for a missing
 * hook, a pool that already has one, a pool of a set (the set's counters
 * are guarded by the set's lock hooks) or a failed sem_create.
 */
hk_status_t hk_pool_set_sync(hk_pool_t *pool, const hk_pool_sync_t *sync);

/* allocBuffer: one block, requested size block_size. NULL when the pool is empty. */
void *hk_pool_alloc(hk_pool_t *pool);
/*
 * As hk_pool_alloc, but wait up to timeout_ticks on the semaphore for a
 * block; without a sync attached it does not wait. A timeout counts a failure.
 */
void *hk_pool_alloc_blocking(hk_pool_t *pool, uint32_t timeout_ticks);
/*
 * freeBuffer: free a block of any pool, found through its header. Returns 0,
 * or the hk_error_t of the misuse. Misuse is reported on the owning pool's
 * heap (its set's, for a pool of a set). A header that names no live pool
 * returns HK_ERR_FOREIGN_PTR without a report: there is no heap to tell.
 * Reading that header and the pool it names must be safe: a wild pointer
 * can fault here, where hk_pool_free() and the set's free would not.
 * Like every direct call it takes no lock: for a pool of a set, whose
 * counters it also updates, hold the set's lock (or free through the set).
 */
int hk_pool_release(void *ptr);

/* The uniform set: malloc(size <= block size). */
void *hk_pool_malloc(hk_pool_t *pool, size_t size);
/*
 * Resize in place (ptr not NULL, size not 0): ptr, or NULL with nothing changed. hk_realloc() moves.
 * A pool has no larger block: NULL above the block size, where hk_realloc() fails too.
 */
void *hk_pool_resize(hk_pool_t *pool, void *ptr, size_t size);
void hk_pool_free(hk_pool_t *pool, void *ptr);
size_t hk_pool_usable_size(hk_pool_t *pool, const void *ptr);
void hk_pool_get_stats(hk_pool_t *pool, hk_stats_t *out);
void hk_pool_walk(hk_pool_t *pool, hk_walk_fn visit, void *ctx);
hk_check_t hk_pool_check(hk_pool_t *pool);
int hk_pool_owns(const hk_pool_t *pool, const void *ptr);

/* ---- a set of pools ---- */

/* One size class: blocks of block_size bytes, count of them. */
typedef struct hk_pool_class {
    size_t block_size;
    size_t count;
} hk_pool_class_t;

typedef struct hk_poolset hk_poolset_t;

/* Most classes a set takes: one bit each in the set's mask of non-empty classes. */
#define HK_POOLSET_MAX_CLASSES 31u

/*
 * Place the set at the start of arena, a bump allocator after it, and one
 * pool per class on the bump. classes must be sorted by strictly increasing
 * block_size, each with block_size and count nonzero, at most
 * HK_POOLSET_MAX_CLASSES of them (else HK_EINVAL); HK_ETOOSMALL when they do
 * not all fit. Bytes left on the bump stay unused. malloc picks the
 * smallest class that fits unless two classes' largest requests lie in one
 * octave [2^k, 2^(k+1) - 1]: then requests the lower of the two would take
 * get the class above it (the size table holds one step per octave).
 */
hk_poolset_t *hk_poolset_init(void *arena, size_t size, const hk_pool_class_t *classes, size_t n_classes,
                              hk_status_t *status);
hk_heap_t *hk_poolset_heap(hk_poolset_t *set);
/*
 * The pool of class i (NULL past the last), for its per-class stats or to
 * allocate from one class directly; its operations keep the set's counters.
 */
hk_pool_t *hk_poolset_pool(hk_poolset_t *set, size_t i);

void *hk_poolset_malloc(hk_poolset_t *set, size_t size);
/* Alignments up to HK_ALIGN only (the ops table has no aligned_alloc). */
void *hk_poolset_aligned_alloc(hk_poolset_t *set, size_t alignment, size_t size);
/*
 * Resize in place (ptr not NULL, size not 0): ptr, or NULL with nothing changed. hk_realloc() moves.
 * In place while the block's class holds size; hk_realloc() moves it to the class malloc picks.
 */
void *hk_poolset_resize(hk_poolset_t *set, void *ptr, size_t size);
void hk_poolset_free(hk_poolset_t *set, void *ptr);
size_t hk_poolset_usable_size(hk_poolset_t *set, const void *ptr);
void hk_poolset_get_stats(hk_poolset_t *set, hk_stats_t *out);
void hk_poolset_walk(hk_poolset_t *set, hk_walk_fn visit, void *ctx);
hk_check_t hk_poolset_check(hk_poolset_t *set);
int hk_poolset_owns(const hk_poolset_t *set, const void *ptr);

/* ---- the lock-free pool ---- */

/* Largest block count: links are block indices + 1 in 16 bits, 0 meaning none. */
#define HK_LFPOOL_MAX_BLOCKS 65535u
/*
 * Largest block size: the unused tail of a block is kept in 16 bits (at
 * HK_HARDENING 2 and above each block also keeps room for its canary).
 */
#define HK_LFPOOL_MAX_BLOCK_SIZE ((0xFFFFu & ~(unsigned)(HK_ALIGN - 1)) - (HK_HARDENING >= 2 ? (unsigned)HK_ALIGN : 0u))

typedef struct hk_lfpool hk_lfpool_t;

/*
 * Place the pool at the start of arena and fill the rest with as many blocks
 * of block_size bytes (rounded up to HK_ALIGN; the largest request a block
 * takes, and its usable size below level 2) as fit, at most
 * HK_LFPOOL_MAX_BLOCKS. HK_EINVAL for a NULL arena, block_size 0 or above
 * HK_LFPOOL_MAX_BLOCK_SIZE; HK_ETOOSMALL when not one block fits.
 */
hk_lfpool_t *hk_lfpool_init(void *arena, size_t size, size_t block_size, hk_status_t *status);
hk_heap_t *hk_lfpool_heap(hk_lfpool_t *pool);

/* One block, requested size block_size; NULL when empty. Lock-free, callable from an ISR. */
void *hk_lfpool_alloc(hk_lfpool_t *pool);

/*
 * The uniform set. malloc, free, resize and usable_size are lock-free and
 * may run concurrently from tasks and ISRs; get_stats is a snapshot that is
 * exact when nothing runs concurrently; walk and check need the pool quiet.
 */
void *hk_lfpool_malloc(hk_lfpool_t *pool, size_t size);
/* Resize in place (ptr not NULL, size not 0): ptr, or NULL with nothing changed. hk_realloc() moves. */
void *hk_lfpool_resize(hk_lfpool_t *pool, void *ptr, size_t size);
void hk_lfpool_free(hk_lfpool_t *pool, void *ptr);
size_t hk_lfpool_usable_size(hk_lfpool_t *pool, const void *ptr);
void hk_lfpool_get_stats(hk_lfpool_t *pool, hk_stats_t *out);
void hk_lfpool_walk(hk_lfpool_t *pool, hk_walk_fn visit, void *ctx);
hk_check_t hk_lfpool_check(hk_lfpool_t *pool);
int hk_lfpool_owns(const hk_lfpool_t *pool, const void *ptr);

#ifdef __cplusplus
}
#endif

#endif
