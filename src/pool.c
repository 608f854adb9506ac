/*
 * pool: FCTMA, the fctma-pools seed's fast constant-time allocator, and sets
 * of pools serving several size classes.
 *
 * Algorithm: hk_pool_create() takes the pool struct and all its blocks from
 * a backing allocator in one hk_malloc() and threads every block onto a
 * singly linked free list; from then on alloc pops the list head and free
 * pushes the block back, never calling the backing again. Each block starts
 * with the seed's memory_s header, directly before the payload:
 *   link   the next free block while free; the requested size while used
 *          (so used_requested is exact)
 *   owner  the owning pool's address, | 1 while the block is used
 * so hk_pool_release() finds the pool from the pointer alone (freeBuffer).
 * A pool set places a bump allocator (the seed's SimpleDMA) on its arena
 * and creates one pool per size class from it, in increasing address order.
 *
 * Time: pool alloc, free, release, realloc and usable_size are O(1) (one
 * division checks the block boundary); set free, realloc and usable_size are
 * O(1) on valid pointers (the header names the pool) and O(classes) on the
 * misuse path; set malloc is O(classes): the first class, in increasing
 * size, that fits the request and has a free block. walk and check are
 * O(blocks). Creation is O(blocks).
 *
 * Overhead per block: the two-word header (8 bytes on 32-bit targets, as in
 * the seed) plus rounding of header + block_size to HK_ALIGN. Per pool: the
 * hk_pool_t (see include/heapkit/pool.h for sizes) and the backing's
 * overhead for one allocation.
 *
 * Locking: as everywhere in heapkit, the direct functions do not lock and
 * the uniform layer takes the heap's lock hooks; the exception is a pool
 * with an hk_pool_sync_t attached, which takes the sync lock in every
 * operation and, as the seed's pool_s does, takes the semaphore before the
 * lock to allocate and gives it after unlocking to free.
 *
 * Misuse detected (reported on the pool's heap, or its set's): foreign
 * pointers (outside the pool's blocks), interior pointers (not at a block's
 * payload), double free (header says free), corrupted headers (owner word
 * not this pool, requested size above the block). hk_pool_release() also
 * checks that the header names a live pool (aligned, magic) before trusting
 * it. check() walks the free list (bounded, so a cycle is caught) and every
 * header, and compares the counters.
 */
#include "heapkit/pool.h"

#include "heapkit/bump.h"
#include "hk_internal.h"

typedef struct pool_hdr {
    union {
        struct pool_hdr *next;
        size_t requested;
    } link;
    uintptr_t owner;
} pool_hdr_t;

#define POOL_HDR ((size_t)sizeof(pool_hdr_t))
#define POOL_USED ((uintptr_t)1u)
#define POOL_MAGIC ((uintptr_t)0x9001F00Du)

HK_STATIC_ASSERT(sizeof(pool_hdr_t) == 2 * sizeof(void *), pool_header_is_two_words);
HK_STATIC_ASSERT(sizeof(size_t) <= sizeof(void *), requested_fits_the_link);

struct hk_pool {
    hk_heap_t heap;
    uintptr_t magic;          /* POOL_MAGIC ^ the pool's address while it lives */
    pool_hdr_t *first_free;
    unsigned char *blocks;    /* header of block 0 */
    size_t stride;            /* header + usable bytes, a multiple of HK_ALIGN */
    size_t count;
    size_t block_size;        /* as created: what hk_pool_alloc requests */
    hk_heap_t *backing;
    hk_poolset_t *set;        /* owning set, whose counters follow this pool's, or NULL */
    const hk_pool_sync_t *sync;
    void *sem;
};

struct hk_poolset {
    hk_heap_t heap;
    hk_pool_t **pools;        /* by increasing block size, which is also address order */
    size_t n;
    uintptr_t lo;             /* first pool's blocks */
    uintptr_t hi;             /* end of the last pool's blocks */
};

/* ---- blocks and headers ---- */

static size_t usable_of(const hk_pool_t *p) { return p->stride - POOL_HDR; }
static uintptr_t magic_of(const hk_pool_t *p) { return POOL_MAGIC ^ (uintptr_t)p; }
static uintptr_t blocks_end(const hk_pool_t *p) { return (uintptr_t)p->blocks + p->count * p->stride; }
static pool_hdr_t *hdr_of(const void *ptr) { return (pool_hdr_t *)((uintptr_t)ptr - POOL_HDR); }
static pool_hdr_t *block_at(const hk_pool_t *p, size_t i) { return (pool_hdr_t *)(p->blocks + i * p->stride); }
static void *payload_of(pool_hdr_t *h) { return (unsigned char *)h + POOL_HDR; }
static hk_heap_t *report_heap(hk_pool_t *p) { return p->set != NULL ? &p->set->heap : &p->heap; }

/* Gross bytes per block, or 0 if that overflows. */
static size_t stride_for(size_t block_size)
{
    return block_size > SIZE_MAX - POOL_HDR ? 0 : hk_round_up(block_size + POOL_HDR, HK_ALIGN);
}

static int is_block(const hk_pool_t *p, const pool_hdr_t *h)
{
    uintptr_t a = (uintptr_t)h;
    return a >= (uintptr_t)p->blocks && a < blocks_end(p) && (a - (uintptr_t)p->blocks) % p->stride == 0;
}

/* ---- counters: a pool's and, for a pool of a set, the set's move together ---- */

static void count_pop(hk_heap_t *heap, const hk_pool_t *p, size_t requested)
{
    hk_count_alloc(heap, requested, usable_of(p), p->stride);
    heap->stats.free_blocks--;
}

static void count_push(hk_heap_t *heap, const hk_pool_t *p, size_t requested)
{
    hk_count_free(heap, requested, usable_of(p), p->stride);
    heap->stats.free_blocks++;
}

static void count_resize(hk_heap_t *heap, const hk_pool_t *p, size_t old_requested, size_t requested)
{
    hk_count_resize(heap, old_requested, usable_of(p), p->stride, requested, usable_of(p), p->stride);
    heap->stats.realloc_count++;
}

static void count_fail(hk_pool_t *p)
{
    p->heap.stats.fail_count++;
    if (p->set != NULL) {
        p->set->heap.stats.fail_count++;
    }
}

static void *pop(hk_pool_t *p, size_t requested)
{
    pool_hdr_t *h = p->first_free;
    if (h == NULL) {
        return NULL;
    }
    p->first_free = h->link.next;
    h->link.requested = requested;
    h->owner = (uintptr_t)p | POOL_USED;
    count_pop(&p->heap, p, requested);
    if (p->set != NULL) {
        count_pop(&p->set->heap, p, requested);
    }
    return payload_of(h);
}

static void push(hk_pool_t *p, pool_hdr_t *h)
{
    size_t requested = h->link.requested;
    h->link.next = p->first_free;
    h->owner = (uintptr_t)p;
    p->first_free = h;
    count_push(&p->heap, p, requested);
    if (p->set != NULL) {
        count_push(&p->set->heap, p, requested);
    }
}

static void resize(hk_pool_t *p, pool_hdr_t *h, size_t requested)
{
    count_resize(&p->heap, p, h->link.requested, requested);
    if (p->set != NULL) {
        count_resize(&p->set->heap, p, h->link.requested, requested);
    }
    h->link.requested = requested;
}

/* The used block of p that ptr names, or NULL with the misuse in *error. */
static pool_hdr_t *find_used(const hk_pool_t *p, const void *ptr, hk_error_t *error)
{
    uintptr_t a = (uintptr_t)ptr;
    pool_hdr_t *h;
    if (a < (uintptr_t)p->blocks || a >= blocks_end(p)) {
        *error = HK_ERR_FOREIGN_PTR;
        return NULL;
    }
    h = hdr_of(ptr);
    if (!is_block(p, h)) {
        *error = HK_ERR_INTERIOR_PTR;
        return NULL;
    }
    if (h->owner == ((uintptr_t)p | POOL_USED) && h->link.requested <= usable_of(p)) {
        return h;
    }
    *error = h->owner == (uintptr_t)p ? HK_ERR_DOUBLE_FREE : HK_ERR_CORRUPT;
    return NULL;
}

/* As find_used, reporting the misuse. */
static pool_hdr_t *lookup(hk_pool_t *p, const void *ptr)
{
    hk_error_t error = HK_ERR_CORRUPT;
    pool_hdr_t *h = find_used(p, ptr, &error);
    if (h == NULL) {
        hk_report(report_heap(p), error, ptr);
    }
    return h;
}

/* ---- sync ---- */

static void pool_lock(const hk_pool_t *p)
{
    if (p->sync != NULL) {
        p->sync->lock(p->sync->ctx);
    }
}

static void pool_unlock(const hk_pool_t *p)
{
    if (p->sync != NULL) {
        p->sync->unlock(p->sync->ctx);
    }
}

/* allocBuffer: the semaphore first (it guarantees a block), then the lock. */
static void *take(hk_pool_t *p, size_t size, uint32_t timeout_ticks)
{
    void *ptr = NULL;
    int ready = size <= usable_of(p) && (p->sync == NULL || p->sync->sem_take(p->sem, timeout_ticks));
    pool_lock(p);
    if (ready) {
        ptr = pop(p, size);
    }
    if (ptr == NULL) {
        count_fail(p);
    }
    pool_unlock(p);
    return ptr;
}

/* freeBuffer: push under the lock, give the semaphore after unlocking. Returns 0 or the misuse. */
static int give(hk_pool_t *p, void *ptr)
{
    hk_error_t error = HK_ERR_CORRUPT;
    pool_hdr_t *h;
    pool_lock(p);
    h = find_used(p, ptr, &error);
    if (h != NULL) {
        push(p, h);
    } else {
        hk_report(report_heap(p), error, ptr);
    }
    pool_unlock(p);
    if (h == NULL) {
        return (int)error;
    }
    if (p->sync != NULL) {
        p->sync->sem_give(p->sem);
    }
    return 0;
}

/* ---- one pool ---- */

HK_DEFINE_OPS_REALLOC(hk_pool, hk_pool_t, "pool", NULL);

hk_pool_t *hk_pool_create(hk_heap_t *backing, size_t block_size, size_t max_blocks)
{
    /* Header of block 0 placed so its payload is HK_ALIGN-aligned, like every hk_malloc result. */
    size_t offset = hk_round_up(sizeof(hk_pool_t) + POOL_HDR, HK_ALIGN) - POOL_HDR;
    size_t stride = stride_for(block_size);
    hk_pool_t *p;
    size_t i;

    if (backing == NULL || block_size == 0 || max_blocks == 0 || stride == 0 ||
        max_blocks > (SIZE_MAX - offset) / stride) {
        return NULL;
    }
    p = (hk_pool_t *)hk_malloc(backing, offset + max_blocks * stride);
    if (p == NULL) {
        return NULL;
    }
    hk_heap_setup(&p->heap, &hk_pool_ops, max_blocks * stride);
    p->heap.stats.free_blocks = max_blocks;
    p->magic = magic_of(p);
    p->blocks = (unsigned char *)p + offset;
    p->stride = stride;
    p->count = max_blocks;
    p->block_size = block_size;
    p->backing = backing;
    p->set = NULL;
    p->sync = NULL;
    p->sem = NULL;
    for (i = 0; i < max_blocks; i++) {
        pool_hdr_t *h = block_at(p, i);
        h->link.next = i + 1 < max_blocks ? block_at(p, i + 1) : NULL;
        h->owner = (uintptr_t)p;
    }
    p->first_free = block_at(p, 0);
    return p;
}

void hk_pool_destroy(hk_pool_t *pool)
{
    if (pool == NULL || pool->set != NULL) {
        return;
    }
    pool->magic = 0; /* so a stale hk_pool_release() finds no pool */
    hk_free(pool->backing, pool);
}

hk_heap_t *hk_pool_heap(hk_pool_t *pool) { return &pool->heap; }

size_t hk_pool_block_size(const hk_pool_t *pool) { return usable_of(pool); }

size_t hk_pool_available(const hk_pool_t *pool) { return pool->heap.stats.free_blocks; }

hk_status_t hk_pool_set_sync(hk_pool_t *pool, const hk_pool_sync_t *sync)
{
    void *sem;
    if (sync == NULL || pool->sync != NULL || pool->set != NULL || sync->sem_create == NULL ||
        sync->sem_take == NULL || sync->sem_give == NULL || sync->lock == NULL || sync->unlock == NULL) {
        return HK_EINVAL;
    }
    sem = sync->sem_create(sync->ctx, pool->heap.stats.free_blocks);
    if (sem == NULL) {
        return HK_EINVAL;
    }
    pool->sem = sem;
    pool->sync = sync;
    return HK_OK;
}

void *hk_pool_alloc(hk_pool_t *pool) { return take(pool, pool->block_size, 0); }

void *hk_pool_alloc_blocking(hk_pool_t *pool, uint32_t timeout_ticks)
{
    return take(pool, pool->block_size, timeout_ticks);
}

int hk_pool_release(void *ptr)
{
    uintptr_t owner;
    if (ptr == NULL) {
        return 0;
    }
    if ((uintptr_t)ptr % HK_ALIGN != 0 || (uintptr_t)ptr < POOL_HDR) {
        return (int)HK_ERR_FOREIGN_PTR;
    }
    owner = hdr_of(ptr)->owner & ~POOL_USED;
    if (owner == 0 || owner % HK_ALIGN != 0 || ((const hk_pool_t *)owner)->magic != (POOL_MAGIC ^ owner)) {
        return (int)HK_ERR_FOREIGN_PTR;
    }
    return give((hk_pool_t *)owner, ptr);
}

void *hk_pool_malloc(hk_pool_t *pool, size_t size) { return take(pool, size, 0); }

void *hk_pool_realloc(hk_pool_t *pool, void *ptr, size_t size)
{
    pool_hdr_t *h;
    if (ptr == NULL) {
        return hk_pool_malloc(pool, size);
    }
    if (size == 0) {
        hk_pool_free(pool, ptr);
        return NULL;
    }
    pool_lock(pool);
    h = lookup(pool, ptr);
    if (h != NULL && size > usable_of(pool)) {
        count_fail(pool); /* there is no larger block to move to */
        h = NULL;
    } else if (h != NULL) {
        resize(pool, h, size);
    }
    pool_unlock(pool);
    return h != NULL ? ptr : NULL;
}

void hk_pool_free(hk_pool_t *pool, void *ptr)
{
    if (ptr != NULL) {
        (void)give(pool, ptr);
    }
}

size_t hk_pool_usable_size(hk_pool_t *pool, const void *ptr)
{
    pool_hdr_t *h;
    if (ptr == NULL) {
        return 0;
    }
    pool_lock(pool);
    h = lookup(pool, ptr);
    pool_unlock(pool);
    return h != NULL ? usable_of(pool) : 0;
}

static size_t free_block_size(const hk_pool_t *p) { return p->first_free != NULL ? p->stride : 0; }

void hk_pool_get_stats(hk_pool_t *pool, hk_stats_t *out)
{
    pool_lock(pool);
    *out = pool->heap.stats;
    out->largest_free = free_block_size(pool);
    out->smallest_free = free_block_size(pool);
    pool_unlock(pool);
}

static void walk_blocks(const hk_pool_t *p, hk_walk_fn visit, void *ctx)
{
    size_t i;
    for (i = 0; i < p->count; i++) {
        pool_hdr_t *h = block_at(p, i);
        hk_block_info_t info;
        info.start = h;
        info.size = p->stride;
        info.payload = payload_of(h);
        info.usable = usable_of(p);
        info.used = (h->owner & POOL_USED) != 0;
        visit(ctx, &info);
    }
}

void hk_pool_walk(hk_pool_t *pool, hk_walk_fn visit, void *ctx)
{
    pool_lock(pool);
    walk_blocks(pool, visit, ctx);
    pool_unlock(pool);
}

static int check_blocks(const hk_pool_t *p)
{
    const hk_stats_t *s = &p->heap.stats;
    const pool_hdr_t *h;
    size_t listed = 0;
    size_t free_count = 0;
    size_t used = 0;
    size_t requested = 0;
    size_t i;

    if (p->magic != magic_of(p) || p->stride < POOL_HDR || p->stride % HK_ALIGN != 0) {
        return 1;
    }
    for (h = p->first_free; h != NULL; h = h->link.next) {
        if (++listed > p->count || !is_block(p, h)) {
            return 2; /* a cycle, or a link out of the pool */
        }
        if (h->owner != (uintptr_t)p) {
            return 3;
        }
    }
    for (i = 0; i < p->count; i++) {
        h = block_at(p, i);
        if (h->owner == (uintptr_t)p) {
            free_count++;
        } else if (h->owner == ((uintptr_t)p | POOL_USED) && h->link.requested <= usable_of(p)) {
            used++;
            requested += h->link.requested;
        } else {
            return 4;
        }
    }
    if (free_count != listed) {
        return 5;
    }
    if (s->capacity != p->count * p->stride || s->used_blocks != used || s->free_blocks != free_count ||
        s->used_granted != used * usable_of(p) || s->used_requested != requested ||
        s->free_bytes != free_count * p->stride) {
        return 6;
    }
    return 0;
}

int hk_pool_check(hk_pool_t *pool)
{
    int rc;
    pool_lock(pool);
    rc = check_blocks(pool);
    pool_unlock(pool);
    return rc;
}

int hk_pool_owns(const hk_pool_t *pool, const void *ptr)
{
    return (uintptr_t)ptr >= (uintptr_t)pool->blocks && (uintptr_t)ptr < blocks_end(pool);
}

/* ---- a set of pools ---- */

HK_DEFINE_OPS_REALLOC(hk_poolset, hk_poolset_t, "poolset", NULL);

static int classes_valid(const hk_pool_class_t *classes, size_t n_classes)
{
    size_t i;
    if (classes == NULL || n_classes == 0) {
        return 0;
    }
    for (i = 0; i < n_classes; i++) {
        if (classes[i].block_size == 0 || classes[i].count == 0 ||
            (i > 0 && classes[i].block_size <= classes[i - 1].block_size)) {
            return 0;
        }
    }
    return 1;
}

hk_poolset_t *hk_poolset_init(void *arena, size_t size, const hk_pool_class_t *classes, size_t n_classes,
                              hk_status_t *status)
{
    uintptr_t lo = (uintptr_t)arena;
    hk_poolset_t *set;
    hk_bump_t *bump;
    size_t control;
    size_t capacity = 0;
    size_t blocks = 0;
    size_t i;

    if (arena == NULL || !classes_valid(classes, n_classes)) {
        hk_init_status(status, HK_EINVAL);
        return NULL;
    }
    size = hk_arena_room(lo, size);
    set = (hk_poolset_t *)hk_align_up_uptr(lo, HK_ALIGN);
    control = (size_t)((uintptr_t)set - lo) + sizeof(hk_poolset_t);
    bump = size > control ? hk_bump_init((unsigned char *)arena + control, size - control, NULL) : NULL;
    if (bump == NULL || n_classes > SIZE_MAX / sizeof(hk_pool_t *)) {
        hk_init_status(status, HK_ETOOSMALL);
        return NULL;
    }
    set->pools = (hk_pool_t **)hk_bump_malloc(bump, n_classes * sizeof(hk_pool_t *));
    if (set->pools == NULL) {
        hk_init_status(status, HK_ETOOSMALL);
        return NULL;
    }
    for (i = 0; i < n_classes; i++) {
        hk_pool_t *p = hk_pool_create(hk_bump_heap(bump), classes[i].block_size, classes[i].count);
        if (p == NULL) {
            hk_init_status(status, HK_ETOOSMALL);
            return NULL;
        }
        p->set = set;
        set->pools[i] = p;
        capacity += p->heap.stats.capacity;
        blocks += p->count;
    }
    hk_heap_setup(&set->heap, &hk_poolset_ops, capacity);
    set->heap.stats.free_blocks = blocks;
    set->n = n_classes;
    set->lo = (uintptr_t)set->pools[0]->blocks;
    set->hi = blocks_end(set->pools[n_classes - 1]);
    hk_init_status(status, HK_OK);
    return set;
}

hk_heap_t *hk_poolset_heap(hk_poolset_t *set) { return &set->heap; }

hk_pool_t *hk_poolset_pool(hk_poolset_t *set, size_t i) { return i < set->n ? set->pools[i] : NULL; }

void *hk_poolset_malloc(hk_poolset_t *set, size_t size)
{
    size_t i;
    for (i = 0; i < set->n; i++) {
        hk_pool_t *p = set->pools[i];
        if (size <= usable_of(p) && p->first_free != NULL) {
            return pop(p, size);
        }
    }
    set->heap.stats.fail_count++;
    return NULL;
}

void *hk_poolset_aligned_alloc(hk_poolset_t *set, size_t alignment, size_t size)
{
    if (!hk_is_pow2(alignment) || alignment > HK_ALIGN) {
        set->heap.stats.fail_count++;
        return NULL;
    }
    return hk_poolset_malloc(set, size);
}

/* Error path only: why ptr, inside the set's span, names no pool of the set. */
static hk_error_t classify_bad_header(const hk_poolset_t *set, const void *ptr)
{
    size_t i;
    for (i = 0; i < set->n; i++) {
        const hk_pool_t *p = set->pools[i];
        if (hk_pool_owns(p, ptr)) {
            return is_block(p, hdr_of(ptr)) ? HK_ERR_CORRUPT : HK_ERR_INTERIOR_PTR;
        }
    }
    return HK_ERR_INTERIOR_PTR; /* between pools: a pool's control struct */
}

/*
 * The pool of set holding ptr, or NULL with the misuse in *error. The header
 * names the pool; it is trusted only if that address lies in the set's span
 * and holds a live pool of this set that contains ptr.
 */
static hk_pool_t *pool_of(const hk_poolset_t *set, const void *ptr, hk_error_t *error)
{
    uintptr_t a = (uintptr_t)ptr;
    uintptr_t span = (uintptr_t)set->pools[0];
    uintptr_t owner;
    const hk_pool_t *p;

    if (a < set->lo || a >= set->hi) {
        *error = HK_ERR_FOREIGN_PTR;
        return NULL;
    }
    if (a % HK_ALIGN == 0) {
        owner = hdr_of(ptr)->owner & ~POOL_USED;
        p = (const hk_pool_t *)owner;
        if (owner >= span && owner <= set->hi - sizeof(hk_pool_t) && owner % HK_ALIGN == 0 &&
            p->magic == magic_of(p) && p->set == set && hk_pool_owns(p, ptr)) {
            return (hk_pool_t *)owner;
        }
    }
    *error = classify_bad_header(set, ptr);
    return NULL;
}

/* The used block ptr names and its pool, or NULL after reporting the misuse. */
static pool_hdr_t *set_lookup(hk_poolset_t *set, const void *ptr, hk_pool_t **pool)
{
    hk_error_t error = HK_ERR_CORRUPT;
    hk_pool_t *p = pool_of(set, ptr, &error);
    pool_hdr_t *h = p != NULL ? find_used(p, ptr, &error) : NULL;
    if (h == NULL) {
        hk_report(&set->heap, error, ptr);
    }
    *pool = p;
    return h;
}

void hk_poolset_free(hk_poolset_t *set, void *ptr)
{
    hk_pool_t *p;
    pool_hdr_t *h;
    if (ptr == NULL) {
        return;
    }
    h = set_lookup(set, ptr, &p);
    if (h != NULL) {
        push(p, h);
    }
}

void *hk_poolset_realloc(hk_poolset_t *set, void *ptr, size_t size)
{
    hk_pool_t *p;
    pool_hdr_t *h;
    void *moved;
    if (ptr == NULL) {
        return hk_poolset_malloc(set, size);
    }
    if (size == 0) {
        hk_poolset_free(set, ptr);
        return NULL;
    }
    h = set_lookup(set, ptr, &p);
    if (h == NULL) {
        return NULL;
    }
    if (size <= usable_of(p)) {
        resize(p, h, size);
        return ptr;
    }
    moved = hk_realloc_by_move(&set->heap, ptr, usable_of(p), size);
    if (moved != NULL) {
        set->heap.stats.realloc_count++;
    }
    return moved;
}

size_t hk_poolset_usable_size(hk_poolset_t *set, const void *ptr)
{
    hk_pool_t *p;
    if (ptr == NULL) {
        return 0;
    }
    return set_lookup(set, ptr, &p) != NULL ? usable_of(p) : 0;
}

void hk_poolset_get_stats(hk_poolset_t *set, hk_stats_t *out)
{
    size_t i;
    *out = set->heap.stats;
    out->largest_free = 0;
    out->smallest_free = 0;
    for (i = 0; i < set->n; i++) {
        size_t size = free_block_size(set->pools[i]);
        if (size > out->largest_free) {
            out->largest_free = size;
        }
        if (size != 0 && (out->smallest_free == 0 || size < out->smallest_free)) {
            out->smallest_free = size;
        }
    }
}

void hk_poolset_walk(hk_poolset_t *set, hk_walk_fn visit, void *ctx)
{
    size_t i;
    for (i = 0; i < set->n; i++) {
        walk_blocks(set->pools[i], visit, ctx);
    }
}

int hk_poolset_check(hk_poolset_t *set)
{
    const hk_stats_t *s = &set->heap.stats;
    hk_stats_t sum;
    size_t i;
    hk_memset(&sum, 0, sizeof(sum));
    for (i = 0; i < set->n; i++) {
        const hk_pool_t *p = set->pools[i];
        const hk_stats_t *ps = &p->heap.stats;
        int rc;
        if (p->set != set || (i > 0 && (uintptr_t)p->blocks < blocks_end(set->pools[i - 1]))) {
            return 7;
        }
        rc = check_blocks(p);
        if (rc != 0) {
            return rc;
        }
        sum.capacity += ps->capacity;
        sum.free_bytes += ps->free_bytes;
        sum.free_blocks += ps->free_blocks;
        sum.used_blocks += ps->used_blocks;
        sum.used_granted += ps->used_granted;
        sum.used_requested += ps->used_requested;
    }
    if (s->capacity != sum.capacity || s->free_bytes != sum.free_bytes || s->free_blocks != sum.free_blocks ||
        s->used_blocks != sum.used_blocks || s->used_granted != sum.used_granted ||
        s->used_requested != sum.used_requested) {
        return 8;
    }
    return 0;
}

int hk_poolset_owns(const hk_poolset_t *set, const void *ptr)
{
    return (uintptr_t)ptr >= set->lo && (uintptr_t)ptr < set->hi;
}
