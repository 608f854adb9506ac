/* SPDX-License-Identifier: MIT */
/*
 * pool: FCTMA, the fctma-pools seed's fast constant-time allocator: one pool
 * of equal-sized blocks. Its sets of pools are in poolset.c, its blocking
 * allocation in pool_sync.c; what the three share is in pool_internal.h.
 *
 * Algorithm: the pool struct and all its blocks are laid out in one piece
 * of memory, the caller's arena (hk_pool_init(), with as many blocks as fit)
 * or one hk_malloc() from a backing allocator (hk_pool_create(), the seed's
 * createPool), and every block is threaded onto a singly linked free list,
 * in address order; from then on malloc pops the list head and free pushes
 * the block back, never calling a backing again.
 * Each block starts with the seed's memory_s header, directly before the
 * payload, owner word first so that an overrun out of the block below hits
 * it before anything else:
 *   owner  the owning pool's address | a 3-bit state tag (the pool is
 *          HK_ALIGN-aligned): USED, FREE, PRISTINE (free and never handed
 *          out since creation) or DEAD (taken out of service after damage)
 *   word   used: the requested size; free: the next free block's index + 1,
 *          0 ending the list
 * so hk_pool_release() finds the pool from the pointer alone (freeBuffer),
 * and every header names its pool and its state redundantly: a stray write
 * has to produce this pool's exact address and a valid tag to pass.
 *
 * Time: malloc, free, resize and usable_size are O(1) (one division checks
 * the block boundary). get_stats is O(log blocks + blocks handed out so
 * far). walk and check are O(blocks), as is creation. Damage found on the
 * free list costs O(blocks) once, to take the list out of service. Level 2
 * adds O(block size) per call (canary and poison).
 *
 * Fast paths: malloc and free of a lone pool without sync below level 2
 * are written for the instruction count (Cortex-M3, -O2: 22/29 at most at
 * level 1); everything else (a set's pool, sync, level 2, errors, damage)
 * branches to general paths kept out of line. A pool whose fast paths must
 * not run has fast_limit and fast_span 0, so the range comparisons the fast
 * paths make anyway send it there at no extra cost. A lone pool's general
 * paths below level 2 are short and its own (fail, or drop a damaged list;
 * report a pointer in error); the pool's general field, which only a set
 * and hk_pool_set_sync() fill in, leads to the ones that keep a set's
 * counters and take the sync hooks, so a program with one plain pool
 * links none of that.
 *
 * Statistics: per call a pool counts only what cannot be derived later:
 * free_count (alloc_count is free_count plus the blocks whose header says
 * USED) and errors (failures and reallocs are counted by the uniform layer,
 * src/heap.c, and hk_pool_alloc_blocking's failures by the pool and its
 * set). Its high-water mark comes for free: blocks are handed out from the
 * list head and the never-used blocks wait, in address order, at its tail,
 * so a PRISTINE block leaves the list only once every block before it is in
 * use (or out of service); the count of blocks no longer PRISTINE (a binary
 * search, the tail being a suffix of the blocks) is the most that were ever
 * out of the list at once. Hence min_ever_free; peak_used is capacity -
 * min_ever_free (the high-water mark of gross used bytes). Blocks taken out
 * of service count as used blocks with no usable bytes. A pool of a set
 * also keeps the set's free bytes current on its general paths.
 *
 * Overhead per block: the two-word header (8 bytes on 32-bit targets, as in
 * the seed) plus rounding of header + block_size to HK_ALIGN, plus at level
 * 2 one HK_ALIGN unit for the canary. Per pool: the hk_pool_t (see
 * include/heapkit/pool.h for sizes), up to HK_ALIGN - 1 bytes to align an
 * arena, and for hk_pool_create the backing's overhead for one allocation.
 *
 * Locking: as everywhere in heapkit, the direct functions do not lock and
 * the uniform layer takes the heap's lock hooks; the exception is a pool
 * with an hk_pool_sync_t attached (pool_sync.c), which takes the sync lock
 * in every operation and, as the seed's pool_s does, takes the semaphore
 * before the lock to allocate and gives it after unlocking to free. The
 * general paths here do that through the pool's sync pointer, so a pool
 * without one links nothing of pool_sync.c.
 *
 * Hardening (HK_HARDENING, heapkit.h):
 *   0  no checks: the fast paths pop and push, nothing else.
 *   1  every pointer handed in: range (foreign), boundary (interior), state
 *      (double free), header (owner word naming another pool or no valid
 *      state: corrupted; requested size above the block); every block malloc
 *      takes: its header must say FREE or PRISTINE for this pool and its link
 *      must be an index within the pool, else the list is damaged (an overrun
 *      or a write after free reached it): HK_ERR_CORRUPT is reported, every
 *      block that is neither in use nor in the untouched tail is taken out of
 *      service (DEAD: walked and counted as used, with no usable bytes) and
 *      the list starts again with the untouched tail, so the damaged links
 *      are never followed and no block is handed out twice.
 *   2  level 1, plus a canary: usable_size() is the requested size, the
 *      bytes from there to the end of the block (at least HK_CANARY_ROOM)
 *      hold HK_CANARY_BYTE and are checked on free, resize and usable_size;
 *      and poison: free payloads hold HK_POISON_BYTE (from creation, and
 *      refilled on every free), checked when malloc takes the block; a
 *      poisoned block found written is reported and taken out of service.
 *   3  as 2 (heap.c adds a full check around every uniform call).
 * Misuse on a pointer handed in is reported (on the pool's heap, or its
 * set's) and leaves the heap unchanged. check() walks the free list (bounded,
 * so a cycle is caught), every header, the untouched tail, at level 2 every
 * canary and poison, and compares the counters.
 */
#include "pool_internal.h"

/* ---- blocks and headers ---- */

static pool_hdr_t *link_hdr(const hk_pool_t *p, size_t e) { return (pool_hdr_t *)(void *)payload_at(p, e) - 1; }
static pool_hdr_t *block_at(const hk_pool_t *p, size_t i) { return link_hdr(p, i + 1u); }
static size_t index_of(const hk_pool_t *p, const pool_hdr_t *h) { return ((uintptr_t)h + POOL_HDR - p->first) / p->stride; }
static unsigned char *payload_of(pool_hdr_t *h) { return (unsigned char *)h + POOL_HDR; }
static unsigned char *payload_end(const hk_pool_t *p, pool_hdr_t *h) { return (unsigned char *)h + p->stride; }
static hk_heap_t *report_heap(hk_pool_t *p) { return p->set != NULL ? &p->set->heap : &p->heap; }

/*
 * A free block's header as malloc must find it before following its link:
 * FREE or PRISTINE for this pool, and a link that is a block of the pool.
 */
static int free_hdr_ok(const hk_pool_t *p, const pool_hdr_t *h)
{
    return tag_is_free(tag_of(p, h)) && h->word <= p->count;
}

/* Level 2: the canary after a used block's request, the poison in a free block. */
static int canary_ok(const hk_pool_t *p, pool_hdr_t *h)
{
    return !HK_CANARIES || hk_filled(payload_of(h) + h->word, payload_end(p, h), HK_CANARY_BYTE);
}

static int poison_ok(const hk_pool_t *p, pool_hdr_t *h)
{
    return !HK_CANARIES || hk_filled(payload_of(h), payload_end(p, h), HK_POISON_BYTE);
}

/*
 * Blocks [touched, count) have never been handed out: the PRISTINE tail of
 * the free list, a suffix of the blocks, so a binary search finds where it
 * starts. touched is the most blocks ever out of the list at once.
 */
static size_t touched_blocks(const hk_pool_t *p)
{
    size_t lo = 0;
    size_t hi = p->count;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2u;
        if (tag_of(p, block_at(p, mid)) == TAG_PRISTINE) {
            hi = mid;
        } else {
            lo = mid + 1u;
        }
    }
    return lo;
}

/*
 * What the headers say: the blocks in use (with the free count, the
 * allocations made), the bytes they requested, and the most ever out of the
 * list at once. O(log blocks + blocks handed out so far).
 */
typedef struct pool_census {
    size_t live;
    size_t requested;
    size_t touched;
} pool_census_t;

static pool_census_t census(const hk_pool_t *p)
{
    pool_census_t c;
    size_t i;
    c.live = 0;
    c.requested = 0;
    c.touched = touched_blocks(p);
    for (i = 0; i < c.touched; i++) {
        const pool_hdr_t *h = block_at(p, i);
        if (tag_of(p, h) == TAG_USED) {
            c.live++;
            c.requested += h->word;
        }
    }
    return c;
}

HK_INTERNAL size_t hk_pool_free_blocks(const hk_pool_t *p) { return p->count - census(p).live - p->lost; }

/* ---- set bookkeeping: a pool of a set keeps the set's free bytes and avail bit current ---- */

static void set_avail(hk_pool_t *p)
{
    if (p->head != 0) {
        p->set->avail |= p->class_bit;
    } else {
        p->set->avail &= ~p->class_bit;
    }
}

/* n blocks of p left the free list (handed out, or taken out of service). */
static void set_took(hk_pool_t *p, size_t n)
{
    hk_stats_t *s;
    if (p->set == NULL) {
        return;
    }
    s = &p->set->heap.stats;
    s->free_bytes -= n * p->stride;
    hk_note_low(s);
    set_avail(p);
}

static void set_gave(hk_pool_t *p)
{
    if (p->set != NULL) {
        p->set->heap.stats.free_bytes += p->stride;
        p->set->avail |= p->class_bit;
    }
}

/* hk_pool_alloc_blocking failed: no uniform call counts it, so the pool and its set do. */
static void count_fail(hk_pool_t *p)
{
    p->heap.stats.fail_count++;
    if (p->set != NULL) {
        p->set->heap.stats.fail_count++;
    }
}

/* n free blocks went out of service (drop_list, quarantine): the set and the semaphore follow. */
static void lost_blocks(hk_pool_t *p, size_t n)
{
    size_t i;
    set_took(p, n);
    if (p->sync != NULL) {
        for (i = 0; i < n; i++) {
            (void)p->sync->sem_take(p->sem, 0); /* without waiting: the lock is held */
        }
    }
}

/* ---- damage on the free list ---- */

/*
 * The list head, bad, fails free_hdr_ok: nothing reached through the list can
 * be trusted. Report it, take the free blocks out of service (those whose
 * header says so, and bad itself unless it says USED: the list led there)
 * except the untouched tail, and start the list again with the tail, its
 * links rewritten. A block whose header is damaged otherwise may be in
 * someone's hands: it is left for check() to report. O(blocks), on the
 * error path only. Returns the blocks taken out of service.
 */
static size_t drop_list(hk_pool_t *p)
{
    pool_hdr_t *bad = link_hdr(p, p->head);
    size_t head = 0; /* the new list: the untouched tail, linked from the top down */
    size_t lost = 0;
    size_t i = p->count;
    int tail = 1;
    hk_report(report_heap(p), HK_ERR_CORRUPT, payload_of(bad));
    while (i-- > 0) {
        pool_hdr_t *h = block_at(p, i);
        uintptr_t tag = tag_of(p, h);
        tail = tail && tag == TAG_PRISTINE;
        if (tail) {
            h->word = head;
            head = i + 1u;
        } else if (tag_is_free(tag) || (h == bad && tag != TAG_USED && tag != TAG_DEAD)) {
            h->owner = tagged(p, TAG_DEAD);
            lost++;
        }
    }
    p->head = head;
    p->lost += lost;
    return lost;
}

/* Level 2: the list head h was written while free. Report it and take it alone out of service. */
static size_t quarantine(hk_pool_t *p, pool_hdr_t *h)
{
    hk_report(report_heap(p), HK_ERR_CORRUPT, payload_of(h));
    p->head = h->word; /* checked by free_hdr_ok */
    h->owner = tagged(p, TAG_DEAD);
    p->lost++;
    return 1;
}

/* ---- the general paths: any pool, any level ---- */

HK_INTERNAL pool_hdr_t *hk_pool_pop(hk_pool_t *p)
{
    for (;;) {
        pool_hdr_t *h;
        if (p->head == 0) {
            return NULL;
        }
        h = link_hdr(p, p->head);
        if (HK_CHECKS && !free_hdr_ok(p, h)) {
            lost_blocks(p, drop_list(p));
        } else if (!poison_ok(p, h)) {
            lost_blocks(p, quarantine(p, h));
        } else {
            p->head = h->word;
            return h;
        }
    }
}

HK_INTERNAL void *hk_pool_grant(hk_pool_t *p, pool_hdr_t *h, size_t size)
{
    HK_ASSERT(size <= p->max_request);
    h->owner = tagged(p, TAG_USED);
    h->word = size;
    if (HK_CANARIES) {
        hk_fill(payload_of(h) + size, payload_end(p, h), HK_CANARY_BYTE);
    }
    set_took(p, 1);
    return payload_of(h);
}

HK_INTERNAL void hk_pool_push(hk_pool_t *p, pool_hdr_t *h)
{
    HK_ASSERT(!HK_CHECKS || tag_of(p, h) == TAG_USED);
    if (HK_CANARIES) {
        hk_fill(payload_of(h), payload_end(p, h), HK_POISON_BYTE);
    }
    h->owner = tagged(p, TAG_FREE);
    h->word = p->head;
    p->head = index_of(p, h) + 1u;
    p->heap.stats.free_count++;
    set_gave(p);
}

HK_INTERNAL void hk_pool_resize_block(const hk_pool_t *p, pool_hdr_t *h, size_t size)
{
    h->word = size;
    if (HK_CANARIES) {
        hk_fill(payload_of(h) + size, payload_end(p, h), HK_CANARY_BYTE);
    }
}

/* What is wrong with ptr, which names no used block of p. */
static hk_error_t misuse_of(const hk_pool_t *p, const void *ptr)
{
    uintptr_t off = (uintptr_t)ptr - p->first;
    if (off + POOL_HDR >= p->span) { /* ptr - blocks_of(p), from off */
        return HK_ERR_FOREIGN_PTR;
    }
    if (off >= p->span || off % p->stride != 0) {
        return HK_ERR_INTERIOR_PTR;
    }
    return tag_is_free(tag_of(p, hdr_of(ptr))) ? HK_ERR_DOUBLE_FREE : HK_ERR_CORRUPT;
}

HK_INTERNAL pool_hdr_t *hk_pool_find_used(const hk_pool_t *p, const void *ptr, hk_error_t *error)
{
    uintptr_t off = (uintptr_t)ptr - p->first;
    pool_hdr_t *h = hdr_of(ptr);
    if (!HK_CHECKS || (off < p->span && off % p->stride == 0 && tag_of(p, h) == TAG_USED &&
                       h->word <= p->max_request && canary_ok(p, h))) {
        return h;
    }
    *error = misuse_of(p, ptr);
    return NULL;
}

/* As hk_pool_find_used, reporting the misuse. */
static pool_hdr_t *pool_lookup(hk_pool_t *p, const void *ptr)
{
    hk_error_t error = HK_ERR_CORRUPT;
    pool_hdr_t *h = hk_pool_find_used(p, ptr, &error);
    if (h == NULL) {
        hk_report(report_heap(p), error, ptr);
    }
    return h;
}

/* ---- the sync lock, when pool_sync.c attached one ---- */

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
HK_INTERNAL POOL_SLOW_PATH void *hk_pool_take(hk_pool_t *p, size_t size, uint32_t timeout_ticks, int counted)
{
    void *ptr = NULL;
    int ready = size <= p->max_request && (p->sync == NULL || p->sync->sem_take(p->sem, timeout_ticks));
    pool_lock(p);
    if (ready) {
        pool_hdr_t *h = hk_pool_pop(p);
        if (h != NULL) {
            ptr = hk_pool_grant(p, h, size);
        }
    }
    if (ptr == NULL && counted) {
        count_fail(p);
    }
    pool_unlock(p);
    return ptr;
}

/* freeBuffer: push under the lock, give the semaphore after unlocking. */
HK_INTERNAL POOL_SLOW_PATH int hk_pool_give(hk_pool_t *p, void *ptr)
{
    hk_error_t error = HK_ERR_CORRUPT;
    pool_hdr_t *h;
    pool_lock(p);
    h = hk_pool_find_used(p, ptr, &error);
    if (h != NULL) {
        hk_pool_push(p, h);
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

static const pool_general_t general_paths = {hk_pool_take, hk_pool_give};

HK_INTERNAL void hk_pool_go_general(hk_pool_t *p)
{
    p->general = &general_paths;
    p->fast_limit = 0;
    p->fast_span = 0;
}

/* ---- one pool ---- */

HK_DEFINE_OPS(hk_pool, hk_pool_t, "pool", NULL);

HK_INTERNAL hk_pool_t *hk_pool_lay_out(void *mem, size_t block_size, size_t stride, size_t count, hk_heap_t *backing)
{
    hk_pool_t *p = (hk_pool_t *)mem;
    size_t i;
    HK_ASSERT((uintptr_t)p % HK_ALIGN == 0 && pool_bytes(stride, count) != 0);
    hk_heap_setup(&p->heap, count * stride);
    p->head = 1;
    p->stride = stride;
    p->count = count;
    p->first = (uintptr_t)p + POOL_BLOCKS_AT + POOL_HDR;
    p->pbase = p->first - stride;
    p->span = count * stride;
    p->max_request = stride - POOL_HDR - CANARY_ROOM;
    p->lost = 0;
    p->magic = magic_of(p);
    p->block_size = block_size;
    p->class_bit = 0;
    p->backing = backing;
    p->set = NULL;
    p->sync = NULL;
    p->sem = NULL;
    p->general = NULL;
    /* Level 2's canaries and poison are the general paths' alone. */
    p->fast_limit = HK_CANARIES ? 0 : p->max_request + 1u;
    p->fast_span = HK_CANARIES ? 0 : p->span;
    for (i = 0; i < count; i++) {
        pool_hdr_t *h = block_at(p, i);
        h->owner = tagged(p, TAG_PRISTINE);
        h->word = i + 1u < count ? i + 2u : 0;
        if (HK_CANARIES) {
            hk_fill(payload_of(h), payload_end(p, h), HK_POISON_BYTE);
        }
    }
    return p;
}

hk_pool_t *hk_pool_init(void *arena, size_t size, size_t block_size, hk_status_t *status)
{
    uintptr_t lo = (uintptr_t)arena;
    size_t stride = stride_for(block_size);
    uintptr_t at;
    size_t control;

    if (arena == NULL || block_size == 0 || stride == 0) {
        return hk_init_status(status, HK_EINVAL);
    }
    size = hk_arena_room(lo, size);
    at = hk_align_up_uptr(lo, HK_ALIGN);
    control = (size_t)(at - lo) + POOL_BLOCKS_AT;
    if (size < control || (size - control) / stride == 0) {
        return hk_init_status(status, HK_ETOOSMALL);
    }
    hk_init_status(status, HK_OK);
    return hk_pool_lay_out((void *)at, block_size, stride, (size - control) / stride, NULL);
}

hk_pool_t *hk_pool_create(hk_heap_t *backing, size_t block_size, size_t max_blocks)
{
    size_t stride = stride_for(block_size);
    size_t bytes = pool_bytes(stride, max_blocks);
    void *mem;

    if (backing == NULL || block_size == 0 || bytes == 0) {
        return NULL;
    }
    mem = hk_malloc(backing, bytes);
    return mem != NULL ? hk_pool_lay_out(mem, block_size, stride, max_blocks, backing) : NULL;
}

void hk_pool_destroy(hk_pool_t *pool)
{
    if (pool == NULL || pool->set != NULL) {
        return;
    }
    pool->magic = 0; /* so a stale hk_pool_release() finds no pool */
    if (pool->backing != NULL) {
        hk_free(pool->backing, pool);
    }
}

hk_heap_t *hk_pool_heap(hk_pool_t *pool) { return hk_bind(&pool->heap, &hk_pool_ops); }

size_t hk_pool_block_size(const hk_pool_t *pool) { return pool->max_request; }

size_t hk_pool_available(const hk_pool_t *pool) { return hk_pool_free_blocks(pool); }

void *hk_pool_alloc(hk_pool_t *pool) { return hk_pool_malloc(pool, pool->block_size); }

/*
 * A lone pool's list head failed the check (level 1): once drop_list has
 * set the list again to the untouched tail, whose head (if any) checks out,
 * the fast path serves the request. Apart from malloc_slow, so that its
 * other exits save no registers.
 */
static POOL_SLOW_PATH void *malloc_damaged(hk_pool_t *p, size_t size)
{
    (void)drop_list(p);
    return hk_pool_malloc(p, size);
}

/*
 * Whatever the fast path leaves (one target for both its branches: two
 * cost it registers): level 2 and a pool of a set or with sync go down the
 * general path; a lone pool fails a request too large or an empty list at
 * once, and otherwise its list is damaged.
 */
static POOL_SLOW_PATH void *malloc_slow(hk_pool_t *p, size_t size)
{
    if (HK_CANARIES) {
        return hk_pool_take(p, size, 0, 0);
    }
    /* Below level 2 fast_limit is 0 just when general is set; tested first, a failing lone pool's malloc is shortest. */
    if (p->fast_limit == 0) {
        return p->general->take(p, size, 0, 0);
    }
    if (!HK_CHECKS || size >= p->fast_limit || p->head == 0) {
        return NULL;
    }
    return malloc_damaged(p, size);
}

/*
 * The fast path: a lone pool without sync below level 2 (fast_limit is 0
 * otherwise), a size that fits, a block on the list whose header checks out
 * (level 1). Anything else goes to malloc_slow.
 */
void *hk_pool_malloc(hk_pool_t *pool, size_t size)
{
    /* Both loaded at once; written so, the compiler finds the short sequence (one ldrd, one mla). */
    size_t limit = pool->fast_limit;
    size_t e = pool->head;
    unsigned char *payload;
    pool_hdr_t *h;
    size_t next;
    if (size >= limit || e == 0) {
        return malloc_slow(pool, size);
    }
    payload = payload_at(pool, e);
    h = hdr_of(payload);
    next = h->word;
    if (HK_CHECKS && !HK_CANARIES && (!tag_is_free(tag_of(pool, h)) || next > pool->count)) {
        return malloc_slow(pool, size); /* level 1: level 2 never gets past fast_limit 0 */
    }
    pool->head = next;
    h->word = size;
    h->owner = tagged(pool, TAG_USED);
    return payload;
}

void *hk_pool_resize(hk_pool_t *pool, void *ptr, size_t size)
{
    pool_hdr_t *h;
    pool_lock(pool);
    h = pool_lookup(pool, ptr);
    if (h != NULL && size > pool->max_request) {
        h = NULL; /* no block is larger: hk_realloc's malloc fails too */
    } else if (h != NULL) {
        hk_pool_resize_block(pool, h, size);
    }
    pool_unlock(pool);
    return h != NULL ? ptr : NULL;
}

/*
 * Whatever the fast path leaves but NULL: level 2 and a pool of a set or
 * with sync go down the general path; for a lone pool ptr names no used
 * block (level 1: report it; level 0 leaves misuse undefined).
 */
static POOL_SLOW_PATH void free_slow(hk_pool_t *p, void *ptr)
{
    if (HK_CANARIES) {
        (void)hk_pool_give(p, ptr);
    } else if (p->general != NULL) {
        (void)p->general->give(p, ptr);
    } else if (HK_CHECKS) {
        hk_report(&p->heap, misuse_of(p, ptr), ptr);
    }
}

/* The fast path, as hk_pool_malloc's: a used block of a lone pool whose header checks out (level 1). */
void hk_pool_free(hk_pool_t *pool, void *ptr)
{
    uintptr_t off = (uintptr_t)ptr - pool->first;
    pool_hdr_t *h = hdr_of(ptr);
    size_t i;
    if (off >= pool->fast_span) {
        if (ptr != NULL) {
            free_slow(pool, ptr);
        }
        return;
    }
    i = off / pool->stride;
    /* The boundary first: only then is the header known to be aligned and in the pool. */
    if (HK_CHECKS && (off != i * pool->stride || h->owner != tagged(pool, TAG_USED) || h->word > pool->max_request)) {
        free_slow(pool, ptr);
        return;
    }
    h->word = pool->head;
    h->owner = tagged(pool, TAG_FREE);
    pool->head = i + 1u;
    pool->heap.stats.free_count++;
}

size_t hk_pool_usable_size(hk_pool_t *pool, const void *ptr)
{
    pool_hdr_t *h;
    if (ptr == NULL) {
        return 0;
    }
    pool_lock(pool);
    h = pool_lookup(pool, ptr);
    pool_unlock(pool);
    return h == NULL ? 0 : HK_CANARIES ? h->word : pool->max_request;
}

HK_INTERNAL void hk_pool_stats_of(const hk_pool_t *p, hk_stats_t *out)
{
    pool_census_t c = census(p);
    hk_stats_read(&p->heap, out);
    out->alloc_count = out->free_count + c.live;
    out->used_blocks = c.live + p->lost;
    out->free_blocks = p->count - out->used_blocks;
    out->free_bytes = out->free_blocks * p->stride;
    out->min_ever_free = (p->count - c.touched) * p->stride;
    out->used_requested = c.requested;
    out->used_granted = HK_CANARIES ? c.requested : c.live * p->max_request;
    out->peak_used = out->capacity - out->min_ever_free;
    out->largest_free = p->head != 0 ? p->stride : 0;
    out->smallest_free = out->largest_free;
}

void hk_pool_get_stats(hk_pool_t *pool, hk_stats_t *out)
{
    pool_lock(pool);
    hk_pool_stats_of(pool, out);
    pool_unlock(pool);
}

HK_INTERNAL void hk_pool_walk_blocks(const hk_pool_t *p, hk_walk_fn visit, void *ctx)
{
    size_t i;
    for (i = 0; i < p->count; i++) {
        pool_hdr_t *h = block_at(p, i);
        uintptr_t tag = tag_of(p, h);
        hk_block_info_t info;
        info.start = h;
        info.size = p->stride;
        info.payload = payload_of(h);
        info.used = !tag_is_free(tag);
        /* Dead or damaged blocks count as used, with nothing usable. */
        info.usable = tag != TAG_USED && info.used ? 0 : HK_CANARIES && info.used ? h->word : p->max_request;
        visit(ctx, &info);
    }
}

void hk_pool_walk(hk_pool_t *pool, hk_walk_fn visit, void *ctx)
{
    pool_lock(pool);
    hk_pool_walk_blocks(pool, visit, ctx);
    pool_unlock(pool);
}

HK_INTERNAL hk_check_t hk_pool_check_blocks(const hk_pool_t *p)
{
    const hk_stats_t *s = &p->heap.stats;
    size_t listed = 0;
    size_t free_count = 0;
    size_t dead = 0;
    size_t tail = p->count;
    size_t e;
    size_t i;

    if (p->magic != magic_of(p) || p->count == 0 || p->stride < POOL_HDR + CANARY_ROOM ||
        p->max_request != p->stride - POOL_HDR - CANARY_ROOM || p->span / p->stride != p->count ||
        p->span % p->stride != 0 || p->pbase != p->first - p->stride || p->head > p->count) {
        return HK_CHECK_CONTROL;
    }
    if (p->stride % HK_ALIGN != 0 || p->first % HK_ALIGN != 0) {
        return HK_CHECK_ALIGN;
    }
    if (p->general != NULL ? p->general != &general_paths || p->fast_limit != 0 || p->fast_span != 0
                           : p->fast_limit != (HK_CANARIES ? 0 : p->max_request + 1u) ||
                                 p->fast_span != (HK_CANARIES ? 0 : p->span)) {
        return HK_CHECK_CONTROL;
    }
    for (e = p->head; e != 0; e = link_hdr(p, e)->word) {
        if (e > p->count) {
            return HK_CHECK_RANGE;
        }
        if (++listed > p->count) {
            return HK_CHECK_LINK; /* a cycle */
        }
        if (!tag_is_free(tag_of(p, link_hdr(p, e)))) {
            return HK_CHECK_STATE;
        }
    }
    for (i = 0; i < p->count; i++) {
        pool_hdr_t *h = block_at(p, i);
        uintptr_t tag = tag_of(p, h);
        if (tag == TAG_PRISTINE) {
            /* The untouched tail: a suffix of the blocks, linked in address order. */
            tail = tail < i ? tail : i;
            if (h->word != (i + 1u < p->count ? i + 2u : 0)) {
                return HK_CHECK_LINK;
            }
        } else if (tail != p->count) {
            return HK_CHECK_STATE;
        }
        if (tag_is_free(tag)) {
            if (!poison_ok(p, h)) {
                return HK_CHECK_POISON;
            }
            free_count++;
        } else if (tag == TAG_USED) {
            if (h->word > p->max_request) {
                return HK_CHECK_SIZE;
            }
            if (!canary_ok(p, h)) {
                return HK_CHECK_CANARY;
            }
        } else if (tag == TAG_DEAD) {
            dead++;
        } else {
            return HK_CHECK_STATE;
        }
    }
    if (free_count != listed) {
        return HK_CHECK_COUNT;
    }
    if (s->capacity != p->span || p->lost != dead) {
        return HK_CHECK_STATS;
    }
    return HK_CHECK_OK;
}

hk_check_t hk_pool_check(hk_pool_t *pool)
{
    hk_check_t rc;
    pool_lock(pool);
    rc = hk_pool_check_blocks(pool);
    pool_unlock(pool);
    return rc;
}

int hk_pool_owns(const hk_pool_t *pool, const void *ptr) { return pool_owns(pool, ptr); }
