/* SPDX-License-Identifier: MIT */
/*
 * pool: FCTMA, the fctma-pools seed's fast constant-time allocator, and sets
 * of pools serving several size classes.
 *
 * Algorithm: hk_pool_create() takes the pool struct and all its blocks from
 * a backing allocator in one hk_malloc() and threads every block onto a
 * singly linked free list, in address order; from then on malloc pops the
 * list head and free pushes the block back, never calling the backing again.
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
 * A pool set places a bump allocator (the seed's SimpleDMA) on its arena and
 * creates one pool per size class from it, in increasing address order.
 * malloc maps the size to a class without a search: a table indexed by the
 * size's count of leading zeros (its octave) gives the classes that fit
 * every size of the octave and the largest request of the class below them,
 * so one comparison decides whether that class fits too; a bitmap of the
 * classes whose list is not empty, masked with that, gives the class to use
 * (the smallest that fits and has a block: falling through to larger ones)
 * with one bit scan. This picks the smallest fitting class unless two
 * classes' largest requests lie in one octave [2^k, 2^(k+1) - 1]; then sizes
 * that the lower of the two would fit get the class above it.
 *
 * Time: pool malloc, free, release, resize and usable_size are O(1) (one
 * division checks the block boundary); set malloc, free, resize and
 * usable_size are O(1) on valid pointers (the header names the pool) and
 * O(classes) on the misuse path. get_stats is O(log blocks + blocks handed
 * out so far). walk and check are O(blocks), as is creation. Damage found on
 * the free list costs O(blocks) once, to take the list out of service.
 * Level 2 adds O(block size) per call (canary and poison).
 *
 * Fast paths: malloc and free of a lone pool without sync below level 2,
 * and the set's malloc and free below level 2, are written for the
 * instruction count (Cortex-M3, -O2: pool 22/29, set 45/49 at most at
 * level 1); everything else (sync, level 2, errors, damage) branches to
 * general paths kept out of line. A pool whose fast paths must not run has
 * fast_limit and fast_span 0, so the range comparisons the fast paths make
 * anyway send it there at no extra cost.
 *
 * Statistics: per call a pool counts only what cannot be derived later:
 * free_count (alloc_count is free_count plus the blocks whose header says
 * USED) and errors (failures and reallocs are counted by the uniform layer,
 * src/heap.c, and hk_pool_alloc_blocking's failures by the pool and its
 * set); a set keeps its free_bytes and their
 * low-water mark, min_ever_free, current on every call (the high-water mark
 * of a sum of classes cannot be derived afterwards, and the FreeRTOS port
 * reads both fields directly). A pool's own high-water mark comes for free:
 * blocks are handed out from the list head and the never-used blocks wait,
 * in address order, at its tail, so a PRISTINE block leaves the list only
 * once every block before it is in use (or out of service); the count of
 * blocks no longer PRISTINE (a binary search, the tail being a suffix of the
 * blocks) is the most that were ever out of the list at once. Hence
 * min_ever_free; peak_used is capacity - min_ever_free (the high-water mark
 * of gross used bytes). Blocks taken out of service count as used blocks
 * with no usable bytes.
 *
 * Overhead per block: the two-word header (8 bytes on 32-bit targets, as in
 * the seed) plus rounding of header + block_size to HK_ALIGN, plus at level
 * 2 one HK_ALIGN unit for the canary. Per pool: the hk_pool_t (see
 * include/heapkit/pool.h for sizes) and the backing's overhead for one
 * allocation.
 *
 * Locking: as everywhere in heapkit, the direct functions do not lock and
 * the uniform layer takes the heap's lock hooks; the exception is a pool
 * with an hk_pool_sync_t attached, which takes the sync lock in every
 * operation and, as the seed's pool_s does, takes the semaphore before the
 * lock to allocate and gives it after unlocking to free.
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
#include "heapkit/pool.h"

#include "heapkit/bump.h"
#include "hk_internal.h"

typedef struct pool_hdr {
    uintptr_t owner; /* the owning pool's address | TAG_* */
    size_t word;     /* used: the requested size; free: the next free block's index + 1, 0: none */
} pool_hdr_t;

#define POOL_HDR ((size_t)sizeof(pool_hdr_t))
#define TAG_MASK ((uintptr_t)7u)
#define TAG_USED ((uintptr_t)1u)
#define TAG_FREE ((uintptr_t)2u)
#define TAG_DEAD ((uintptr_t)3u)
#define TAG_UNTOUCHED ((uintptr_t)4u)
#define TAG_PRISTINE (TAG_FREE | TAG_UNTOUCHED)
#define POOL_MAGIC ((uintptr_t)0x9001F00Du)
#define SIZE_BITS ((unsigned)(sizeof(size_t) * 8u))
/*
 * Level 2's room for the canary, whole HK_ALIGN units added to the stride,
 * so a block takes the same largest request at every level.
 */
#define CANARY_ROOM ((HK_CANARY_ROOM + HK_ALIGN - 1u) & ~(size_t)(HK_ALIGN - 1u))

/* For the general paths the fast ones branch to: out of line, so the fast ones keep few registers. */
#if defined(__GNUC__) || defined(__clang__)
#define POOL_SLOW_PATH __attribute__((noinline, cold))
#else
#define POOL_SLOW_PATH
#endif

HK_STATIC_ASSERT(sizeof(pool_hdr_t) == 2 * sizeof(void *), pool_header_is_two_words);
HK_STATIC_ASSERT(sizeof(size_t) == sizeof(uintptr_t), a_link_is_a_word);
HK_STATIC_ASSERT(HK_ALIGN > TAG_MASK, the_tag_fits_below_an_aligned_pool_address);
HK_STATIC_ASSERT(HK_POOLSET_MAX_CLASSES < 32, a_class_mask_has_a_bit_above_the_last_class);

struct hk_pool {
    hk_heap_t heap;     /* stats: capacity and the event counters; the rest is derived in get_stats */
    /* The fast paths' fields, in the order they load them. */
    size_t fast_limit;  /* max_request + 1, or 0 to send every malloc down the general path */
    size_t head;        /* first free block's index + 1, 0: the list is empty */
    uintptr_t pbase;    /* payload of block "index + 1 == 0": block i's payload is pbase + (i + 1) * stride */
    size_t stride;      /* header + payload, a multiple of HK_ALIGN */
    size_t count;
    uintptr_t first;    /* block 0's payload */
    size_t fast_span;   /* span, or 0 to send every free down the general path */
    size_t max_request; /* largest request a block takes: its payload, less CANARY_ROOM */
    size_t span;        /* count * stride */
    size_t lost;        /* blocks taken out of service (DEAD) */
    uintptr_t magic;    /* POOL_MAGIC ^ the pool's address while it lives */
    size_t block_size;  /* as created: what hk_pool_alloc requests */
    uint32_t class_bit; /* in a set: this class's bit in the set's avail mask */
    hk_heap_t *backing;
    hk_poolset_t *set;  /* owning set, whose free bytes follow this pool's, or NULL */
    const hk_pool_sync_t *sync;
    void *sem;
};

/*
 * Sizes with k leading zeros, [2^(B-1-k), 2^(B-k) - 1] for B bits (size 0
 * takes size 1's). Classes from the first whose max_request reaches the octave's top
 * fit them all: mask has their bits (none when no class does; the bits
 * above the last class are never set in avail). lim is the max_request of
 * the class below them: a size up to lim fits that one too.
 */
typedef struct pool_bucket {
    size_t lim;
    uint32_t mask;
} pool_bucket_t;

struct hk_poolset {
    hk_heap_t heap;   /* stats: capacity, free_bytes, min_ever_free and the event counters */
    uint32_t avail;   /* bit c: class c's free list is not empty */
    size_t n;
    uintptr_t lo;     /* first pool's blocks */
    size_t span;      /* up to the end of the last pool's blocks */
    uintptr_t ctl;    /* first pool's struct: every pool struct starts in [ctl, ctl + ctl_span] */
    size_t ctl_span;
    hk_pool_t *pools[HK_POOLSET_MAX_CLASSES]; /* by increasing block size, which is also address order */
    pool_bucket_t bucket[sizeof(size_t) * 8u];
};

/* ---- blocks and headers ---- */

static uintptr_t magic_of(const hk_pool_t *p) { return POOL_MAGIC ^ (uintptr_t)p; }
static uintptr_t tagged(const hk_pool_t *p, uintptr_t tag) { return (uintptr_t)p | tag; }
/* The header's tag if its owner word names p; otherwise a value with bits above TAG_MASK. */
static uintptr_t tag_of(const hk_pool_t *p, const pool_hdr_t *h) { return h->owner ^ (uintptr_t)p; }
static int tag_is_free(uintptr_t tag) { return (tag & ~TAG_UNTOUCHED) == TAG_FREE; }
/* The payload and header of the block whose index + 1 is e (0: none). */
static unsigned char *payload_at(const hk_pool_t *p, size_t e) { return (unsigned char *)(p->pbase + e * p->stride); }
static pool_hdr_t *hdr_at(const hk_pool_t *p, size_t e) { return (pool_hdr_t *)(void *)payload_at(p, e) - 1; }
static pool_hdr_t *block_at(const hk_pool_t *p, size_t i) { return hdr_at(p, i + 1u); }
static size_t index_of(const hk_pool_t *p, const pool_hdr_t *h) { return ((uintptr_t)h + POOL_HDR - p->first) / p->stride; }
static pool_hdr_t *hdr_of(const void *ptr) { return (pool_hdr_t *)((uintptr_t)ptr - POOL_HDR); }
static unsigned char *payload_of(pool_hdr_t *h) { return (unsigned char *)h + POOL_HDR; }
static unsigned char *payload_end(const hk_pool_t *p, pool_hdr_t *h) { return (unsigned char *)h + p->stride; }
static uintptr_t blocks_of(const hk_pool_t *p) { return p->first - POOL_HDR; }
static uintptr_t blocks_end(const hk_pool_t *p) { return blocks_of(p) + p->span; }
static hk_heap_t *report_heap(hk_pool_t *p) { return p->set != NULL ? &p->set->heap : &p->heap; }

/* Gross bytes per block, or 0 if that overflows. */
static size_t stride_for(size_t block_size)
{
    return block_size > SIZE_MAX - POOL_HDR - CANARY_ROOM - HK_ALIGN
               ? 0
               : hk_round_up(block_size + POOL_HDR, HK_ALIGN) + CANARY_ROOM;
}

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

static size_t free_blocks_of(const hk_pool_t *p) { return p->count - census(p).live - p->lost; }

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

/* n free blocks went out of service: the counters, the set and the semaphore follow. */
static void lose(hk_pool_t *p, size_t n)
{
    size_t i;
    p->lost += n;
    set_took(p, n);
    if (p->sync != NULL) {
        for (i = 0; i < n; i++) {
            (void)p->sync->sem_take(p->sem, 0); /* without waiting: the lock is held */
        }
    }
}

/* ---- damage on the free list ---- */

/*
 * The list head bad fails free_hdr_ok: nothing reached through the list can
 * be trusted. Report it, take the free blocks out of service (those whose
 * header says so, and bad itself unless it says USED: the list led there)
 * except the untouched tail, and start the list again with the tail, its
 * links rewritten. A block whose header is damaged otherwise may be in
 * someone's hands: it is left for check() to report. O(blocks), on the
 * error path only.
 */
static void drop_list(hk_pool_t *p, pool_hdr_t *bad)
{
    size_t tail = p->count;
    size_t lost = 0;
    size_t i;
    hk_report(report_heap(p), HK_ERR_CORRUPT, payload_of(bad));
    while (tail > 0 && tag_of(p, block_at(p, tail - 1u)) == TAG_PRISTINE) {
        tail--;
    }
    for (i = 0; i < tail; i++) {
        pool_hdr_t *h = block_at(p, i);
        uintptr_t tag = tag_of(p, h);
        if (tag_is_free(tag) || (h == bad && tag != TAG_USED && tag != TAG_DEAD)) {
            h->owner = tagged(p, TAG_DEAD);
            lost++;
        }
    }
    for (i = tail; i < p->count; i++) {
        block_at(p, i)->word = i + 1u < p->count ? i + 2u : 0;
    }
    p->head = tail < p->count ? tail + 1u : 0;
    lose(p, lost);
}

/* Level 2: the list head h was written while free. Report it and take it alone out of service. */
static void quarantine(hk_pool_t *p, pool_hdr_t *h)
{
    hk_report(report_heap(p), HK_ERR_CORRUPT, payload_of(h));
    p->head = h->word; /* checked by free_hdr_ok */
    h->owner = tagged(p, TAG_DEAD);
    lose(p, 1);
}

/* ---- the general paths: any pool, any level ---- */

/* Take the head of p's free list, or NULL when there is none; damage found there is reported and contained. */
static pool_hdr_t *pop(hk_pool_t *p)
{
    for (;;) {
        pool_hdr_t *h;
        if (p->head == 0) {
            return NULL;
        }
        h = hdr_at(p, p->head);
        if (HK_CHECKS && !free_hdr_ok(p, h)) {
            drop_list(p, h);
        } else if (!poison_ok(p, h)) {
            quarantine(p, h);
        } else {
            p->head = h->word;
            return h;
        }
    }
}

/* Hand out h, just popped from p, for a request of size bytes. */
static void *grant(hk_pool_t *p, pool_hdr_t *h, size_t size)
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

static void push(hk_pool_t *p, pool_hdr_t *h)
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

/* Used block h of p now holds a request of size bytes (at most max_request). */
static void set_request(const hk_pool_t *p, pool_hdr_t *h, size_t size)
{
    h->word = size;
    if (HK_CANARIES) {
        hk_fill(payload_of(h) + size, payload_end(p, h), HK_CANARY_BYTE);
    }
}

/* The used block of p that ptr names, or NULL with the misuse in *error. */
static pool_hdr_t *find_used(const hk_pool_t *p, const void *ptr, hk_error_t *error)
{
    uintptr_t a = (uintptr_t)ptr;
    uintptr_t off = a - p->first;
    pool_hdr_t *h = hdr_of(ptr);
    uintptr_t tag;
    if (!HK_CHECKS) {
        return h;
    }
    if (a - blocks_of(p) >= p->span) {
        *error = HK_ERR_FOREIGN_PTR;
        return NULL;
    }
    if (off >= p->span || off % p->stride != 0) {
        *error = HK_ERR_INTERIOR_PTR;
        return NULL;
    }
    tag = tag_of(p, h);
    if (tag == TAG_USED && h->word <= p->max_request && canary_ok(p, h)) {
        return h;
    }
    *error = tag_is_free(tag) ? HK_ERR_DOUBLE_FREE : HK_ERR_CORRUPT;
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

/*
 * allocBuffer: the semaphore first (it guarantees a block), then the lock.
 * counted: count a failure (hk_pool_alloc_blocking; the uniform layer counts
 * malloc's).
 */
static POOL_SLOW_PATH void *take(hk_pool_t *p, size_t size, uint32_t timeout_ticks, int counted)
{
    void *ptr = NULL;
    int ready = size <= p->max_request && (p->sync == NULL || p->sync->sem_take(p->sem, timeout_ticks));
    pool_lock(p);
    if (ready) {
        pool_hdr_t *h = pop(p);
        if (h != NULL) {
            ptr = grant(p, h, size);
        }
    }
    if (ptr == NULL && counted) {
        count_fail(p);
    }
    pool_unlock(p);
    return ptr;
}

/* freeBuffer: push under the lock, give the semaphore after unlocking. Returns 0 or the misuse. */
static POOL_SLOW_PATH int give(hk_pool_t *p, void *ptr)
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

/* Whether the fast paths may serve p: a lone pool without sync, below level 2. */
static void set_fast_paths(hk_pool_t *p)
{
    int fast = !HK_CANARIES && p->set == NULL && p->sync == NULL;
    p->fast_limit = fast ? p->max_request + 1u : 0;
    p->fast_span = fast ? p->span : 0;
}

/* ---- one pool ---- */

HK_DEFINE_OPS(hk_pool, hk_pool_t, "pool", NULL);

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
    HK_ASSERT((uintptr_t)p % HK_ALIGN == 0);
    hk_heap_setup(&p->heap, max_blocks * stride);
    p->head = 1;
    p->stride = stride;
    p->count = max_blocks;
    p->first = (uintptr_t)p + offset + POOL_HDR;
    p->pbase = p->first - stride;
    p->span = max_blocks * stride;
    p->max_request = stride - POOL_HDR - CANARY_ROOM;
    p->lost = 0;
    p->magic = magic_of(p);
    p->block_size = block_size;
    p->class_bit = 0;
    p->backing = backing;
    p->set = NULL;
    p->sync = NULL;
    p->sem = NULL;
    set_fast_paths(p);
    for (i = 0; i < max_blocks; i++) {
        pool_hdr_t *h = block_at(p, i);
        h->owner = tagged(p, TAG_PRISTINE);
        h->word = i + 1u < max_blocks ? i + 2u : 0;
        if (HK_CANARIES) {
            hk_fill(payload_of(h), payload_end(p, h), HK_POISON_BYTE);
        }
    }
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

hk_heap_t *hk_pool_heap(hk_pool_t *pool) { return hk_bind(&pool->heap, &hk_pool_ops); }

size_t hk_pool_block_size(const hk_pool_t *pool) { return pool->max_request; }

size_t hk_pool_available(const hk_pool_t *pool) { return free_blocks_of(pool); }

hk_status_t hk_pool_set_sync(hk_pool_t *pool, const hk_pool_sync_t *sync)
{
    void *sem;
    if (sync == NULL || pool->sync != NULL || pool->set != NULL || sync->sem_create == NULL ||
        sync->sem_take == NULL || sync->sem_give == NULL || sync->lock == NULL || sync->unlock == NULL) {
        return HK_EINVAL;
    }
    sem = sync->sem_create(sync->ctx, free_blocks_of(pool));
    if (sem == NULL) {
        return HK_EINVAL;
    }
    pool->sem = sem;
    pool->sync = sync;
    set_fast_paths(pool);
    return HK_OK;
}

void *hk_pool_alloc(hk_pool_t *pool) { return hk_pool_malloc(pool, pool->block_size); }

void *hk_pool_alloc_blocking(hk_pool_t *pool, uint32_t timeout_ticks)
{
    return take(pool, pool->block_size, timeout_ticks, 1);
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
    return give((hk_pool_t *)owner, ptr);
}

/*
 * malloc's general path (damage on the list included). A lone pool whose
 * request is too large or whose list is empty fails here at once.
 */
static POOL_SLOW_PATH void *malloc_slow(hk_pool_t *p, size_t size)
{
    if (p->fast_limit != 0 && (size >= p->fast_limit || p->head == 0)) {
        return NULL;
    }
    return take(p, size, 0, 0);
}

/*
 * The fast path: a lone pool without sync below level 2 (fast_limit is 0
 * otherwise), a size that fits, a block on the list whose header checks out
 * (level 1). An empty lone pool fails here too. Anything else goes down the
 * general path, which also reports.
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
    if (HK_CHECKS && (!tag_is_free(tag_of(pool, h)) || next > pool->count)) {
        return malloc_slow(pool, size);
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
    h = lookup(pool, ptr);
    if (h != NULL && size > pool->max_request) {
        h = NULL; /* no block is larger: hk_realloc's malloc fails too */
    } else if (h != NULL) {
        set_request(pool, h, size);
    }
    pool_unlock(pool);
    return h != NULL ? ptr : NULL;
}

/* The fast path, as hk_pool_malloc's: a used block of a lone pool whose header checks out (level 1). */
void hk_pool_free(hk_pool_t *pool, void *ptr)
{
    uintptr_t off = (uintptr_t)ptr - pool->first;
    pool_hdr_t *h = hdr_of(ptr);
    size_t i;
    if (off >= pool->fast_span) {
        if (ptr != NULL) {
            (void)give(pool, ptr);
        }
        return;
    }
    i = off / pool->stride;
    /* The boundary first: only then is the header known to be aligned and in the pool. */
    if (HK_CHECKS && (off != i * pool->stride || h->owner != tagged(pool, TAG_USED) || h->word > pool->max_request)) {
        (void)give(pool, ptr);
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
    h = lookup(pool, ptr);
    pool_unlock(pool);
    return h == NULL ? 0 : HK_CANARIES ? h->word : pool->max_request;
}

/* The stats of a pool, derived from its counters and blocks. */
static void pool_stats(const hk_pool_t *p, hk_stats_t *out)
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
    pool_stats(pool, out);
    pool_unlock(pool);
}

static void walk_blocks(const hk_pool_t *p, hk_walk_fn visit, void *ctx)
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
    walk_blocks(pool, visit, ctx);
    pool_unlock(pool);
}

static hk_check_t check_pool(const hk_pool_t *p)
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
    if (p->fast_limit != 0 && (p->fast_limit != p->max_request + 1u || p->fast_span != p->span)) {
        return HK_CHECK_CONTROL;
    }
    for (e = p->head; e != 0; e = hdr_at(p, e)->word) {
        if (e > p->count) {
            return HK_CHECK_RANGE;
        }
        if (++listed > p->count) {
            return HK_CHECK_LINK; /* a cycle */
        }
        if (!tag_is_free(tag_of(p, hdr_at(p, e)))) {
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
    rc = check_pool(pool);
    pool_unlock(pool);
    return rc;
}

int hk_pool_owns(const hk_pool_t *pool, const void *ptr)
{
    return (uintptr_t)ptr - blocks_of(pool) < pool->span;
}

/* ---- a set of pools ---- */

HK_DEFINE_OPS(hk_poolset, hk_poolset_t, "poolset", NULL);

static int classes_valid(const hk_pool_class_t *classes, size_t n_classes)
{
    size_t i;
    if (classes == NULL || n_classes == 0 || n_classes > HK_POOLSET_MAX_CLASSES) {
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

/* Leading zero bits of x > 0: the index of its octave's bucket. */
static unsigned leading_zeros(size_t x)
{
    HK_ASSERT(x != 0);
#if defined(__GNUC__) || defined(__clang__)
    if (sizeof(size_t) == sizeof(unsigned)) {
        return (unsigned)__builtin_clz((unsigned)x);
    }
    return (unsigned)__builtin_clzll((unsigned long long)x);
#else
    return SIZE_BITS - 1u - hk_log2_floor(x);
#endif
}

static pool_bucket_t bucket_for(const hk_poolset_t *set, unsigned k)
{
    size_t top = SIZE_MAX >> k; /* the octave's largest size, 2^(B-k) - 1 */
    size_t c = 0;
    pool_bucket_t b;
    while (c < set->n && set->pools[c]->max_request < top) {
        c++;
    }
    b.mask = ~(uint32_t)0 << c;
    b.lim = c > 0 ? set->pools[c - 1u]->max_request : 0;
    return b;
}

/* The classes a request of size can take, as a mask of class bits (pool_bucket_t). */
static uint32_t classes_fitting(const hk_poolset_t *set, size_t size)
{
    const pool_bucket_t *b = &set->bucket[leading_zeros(size | 1u)]; /* size 0 goes where 1 does */
    uint32_t mask = b->mask;
    if (size <= b->lim) {
        mask |= mask >> 1;
    }
    return mask;
}

hk_poolset_t *hk_poolset_init(void *arena, size_t size, const hk_pool_class_t *classes, size_t n_classes,
                              hk_status_t *status)
{
    uintptr_t lo = (uintptr_t)arena;
    hk_poolset_t *set;
    hk_bump_t *bump;
    size_t control;
    size_t capacity = 0;
    size_t i;
    unsigned k;

    if (arena == NULL || !classes_valid(classes, n_classes)) {
        hk_init_status(status, HK_EINVAL);
        return NULL;
    }
    size = hk_arena_room(lo, size);
    set = (hk_poolset_t *)hk_align_up_uptr(lo, HK_ALIGN);
    control = (size_t)((uintptr_t)set - lo) + sizeof(hk_poolset_t);
    bump = size > control ? hk_bump_init((unsigned char *)arena + control, size - control, NULL) : NULL;
    if (bump == NULL) {
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
        p->class_bit = (uint32_t)1u << i;
        set_fast_paths(p);
        set->pools[i] = p;
        capacity += p->span;
    }
    hk_heap_setup(&set->heap, capacity);
    set->n = n_classes;
    set->avail = ((uint32_t)1u << n_classes) - 1u; /* every class starts with blocks; n_classes < 32 */
    set->lo = blocks_of(set->pools[0]);
    set->span = blocks_end(set->pools[n_classes - 1u]) - set->lo;
    set->ctl = (uintptr_t)set->pools[0];
    set->ctl_span = set->lo + set->span - sizeof(hk_pool_t) - set->ctl;
    for (k = 0; k < SIZE_BITS; k++) {
        set->bucket[k] = bucket_for(set, k);
    }
    hk_init_status(status, HK_OK);
    return set;
}

hk_heap_t *hk_poolset_heap(hk_poolset_t *set) { return hk_bind(&set->heap, &hk_poolset_ops); }

hk_pool_t *hk_poolset_pool(hk_poolset_t *set, size_t i) { return i < set->n ? set->pools[i] : NULL; }

/* The general path: level 2, or damage found on a list (contained by pop, which may empty the class). */
static POOL_SLOW_PATH void *set_take(hk_poolset_t *set, uint32_t fits, size_t size)
{
    uint32_t mask;
    while ((mask = fits & set->avail) != 0) {
        hk_pool_t *p = set->pools[hk_ffs32(mask)];
        pool_hdr_t *h = pop(p);
        if (h != NULL) {
            return grant(p, h, size);
        }
    }
    return NULL;
}

void *hk_poolset_malloc(hk_poolset_t *set, size_t size)
{
    uint32_t fits = classes_fitting(set, size);
    uint32_t mask = fits & set->avail;
    hk_pool_t *p;
    unsigned char *payload;
    pool_hdr_t *h;
    size_t next;
    if (mask == 0) {
        return NULL;
    }
    p = set->pools[hk_ffs32(mask)];
    HK_ASSERT(p->head != 0); /* the class's avail bit is set */
    payload = payload_at(p, p->head);
    h = hdr_of(payload);
    next = h->word;
    if (HK_CANARIES || (HK_CHECKS && (!tag_is_free(tag_of(p, h)) || next > p->count))) {
        return set_take(set, fits, size);
    }
    p->head = next;
    if (next == 0) {
        set->avail &= ~p->class_bit;
    }
    h->word = size;
    h->owner = tagged(p, TAG_USED);
    set->heap.stats.free_bytes -= p->stride;
    hk_note_low(&set->heap.stats);
    return payload;
}

void *hk_poolset_aligned_alloc(hk_poolset_t *set, size_t alignment, size_t size)
{
    if (!hk_is_pow2(alignment) || alignment > HK_ALIGN) {
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
            return (uintptr_t)ptr - p->first < p->span && ((uintptr_t)ptr - p->first) % p->stride == 0
                       ? HK_ERR_CORRUPT
                       : HK_ERR_INTERIOR_PTR;
        }
    }
    return HK_ERR_INTERIOR_PTR; /* between pools: a pool's control struct */
}

/* The owner word in front of ptr, read without assuming ptr is aligned. */
static uintptr_t owner_word(const void *ptr)
{
    uintptr_t owner;
    hk_memcpy(&owner, hdr_of(ptr), sizeof(owner));
    return owner;
}

/* Whether p, taken from a header, is a pool of set: in its span, aligned, alive and naming set. */
static int pool_of_set(const hk_poolset_t *set, const hk_pool_t *p)
{
    return (uintptr_t)p % HK_ALIGN == 0 && (uintptr_t)p - set->ctl <= set->ctl_span && p->set == set &&
           p->magic == magic_of(p);
}

/*
 * The pool of set holding ptr, or NULL with the misuse in *error. The header
 * names the pool; it is trusted only if that address lies in the set's span
 * and holds a live pool of this set that contains ptr.
 */
static hk_pool_t *pool_of(const hk_poolset_t *set, const void *ptr, hk_error_t *error)
{
    hk_pool_t *p;
    if ((uintptr_t)ptr - set->lo >= set->span) {
        *error = HK_ERR_FOREIGN_PTR;
        return NULL;
    }
    p = (hk_pool_t *)(owner_word(ptr) & ~TAG_MASK);
    if (!HK_CHECKS || (pool_of_set(set, p) && hk_pool_owns(p, ptr))) {
        return p;
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

static POOL_SLOW_PATH void set_give(hk_poolset_t *set, void *ptr)
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

/*
 * The fast path: ptr in the set's span, its owner word naming a pool of
 * this set with the USED tag, at a block boundary of that pool, with a
 * plausible requested size (level 1). Anything else, and level 2, goes down
 * the general path, which also reports.
 */
void hk_poolset_free(hk_poolset_t *set, void *ptr)
{
    uintptr_t a = (uintptr_t)ptr;
    uintptr_t off;
    hk_pool_t *p;
    pool_hdr_t *h;
    size_t i;
    if (HK_CANARIES || a - set->lo >= set->span) {
        set_give(set, ptr);
        return;
    }
    h = hdr_of(ptr);
    p = (hk_pool_t *)(owner_word(ptr) ^ TAG_USED);
    if (HK_CHECKS && (((uintptr_t)p & TAG_MASK) != 0 || (uintptr_t)p - set->ctl > set->ctl_span || p->set != set)) {
        set_give(set, ptr);
        return;
    }
    off = a - p->first;
    i = off / p->stride;
    if (HK_CHECKS && (off >= p->span || off != i * p->stride || h->word > p->max_request)) {
        set_give(set, ptr);
        return;
    }
    h->owner = tagged(p, TAG_FREE);
    h->word = p->head;
    p->head = i + 1u;
    p->heap.stats.free_count++;
    set->avail |= p->class_bit;
    set->heap.stats.free_bytes += p->stride;
}

void *hk_poolset_resize(hk_poolset_t *set, void *ptr, size_t size)
{
    hk_pool_t *p;
    pool_hdr_t *h = set_lookup(set, ptr, &p);
    if (h == NULL || size > p->max_request) {
        return NULL; /* misuse, reported; or the class is too small: hk_realloc moves it */
    }
    set_request(p, h, size);
    return ptr;
}

size_t hk_poolset_usable_size(hk_poolset_t *set, const void *ptr)
{
    hk_pool_t *p;
    pool_hdr_t *h;
    if (ptr == NULL) {
        return 0;
    }
    h = set_lookup(set, ptr, &p);
    return h == NULL ? 0 : HK_CANARIES ? h->word : p->max_request;
}

void hk_poolset_get_stats(hk_poolset_t *set, hk_stats_t *out)
{
    size_t i;
    hk_stats_read(&set->heap, out);
    out->alloc_count = 0;
    out->free_count = 0;
    out->used_blocks = 0;
    out->free_blocks = 0;
    out->used_requested = 0;
    out->used_granted = 0;
    out->largest_free = 0;
    out->smallest_free = 0;
    for (i = 0; i < set->n; i++) {
        hk_stats_t ps;
        pool_stats(set->pools[i], &ps);
        out->alloc_count += ps.alloc_count;
        out->free_count += ps.free_count;
        out->used_blocks += ps.used_blocks;
        out->free_blocks += ps.free_blocks;
        out->used_requested += ps.used_requested;
        out->used_granted += ps.used_granted;
        if (ps.largest_free > out->largest_free) {
            out->largest_free = ps.largest_free;
        }
        if (ps.smallest_free != 0 && (out->smallest_free == 0 || ps.smallest_free < out->smallest_free)) {
            out->smallest_free = ps.smallest_free;
        }
    }
    out->peak_used = out->capacity - out->min_ever_free;
}

void hk_poolset_walk(hk_poolset_t *set, hk_walk_fn visit, void *ctx)
{
    size_t i;
    for (i = 0; i < set->n; i++) {
        walk_blocks(set->pools[i], visit, ctx);
    }
}

hk_check_t hk_poolset_check(hk_poolset_t *set)
{
    const hk_stats_t *s = &set->heap.stats;
    size_t capacity = 0;
    size_t free_bytes = 0;
    uint32_t avail = 0;
    size_t i;
    unsigned k;
    if (set->n == 0 || set->n > HK_POOLSET_MAX_CLASSES) {
        return HK_CHECK_CONTROL;
    }
    for (i = 0; i < set->n; i++) {
        const hk_pool_t *p = set->pools[i];
        hk_check_t rc;
        if (p == NULL || p->set != set || p->class_bit != (uint32_t)1u << i || p->fast_limit != 0 ||
            p->fast_span != 0 ||
            (i > 0 && ((uintptr_t)p < blocks_end(set->pools[i - 1u]) ||
                       p->max_request <= set->pools[i - 1u]->max_request))) {
            return HK_CHECK_CONTROL;
        }
        rc = check_pool(p);
        if (rc != HK_CHECK_OK) {
            return rc;
        }
        capacity += p->span;
        free_bytes += free_blocks_of(p) * p->stride;
        if (p->head != 0) {
            avail |= p->class_bit;
        }
    }
    if (set->lo != blocks_of(set->pools[0]) || set->span != blocks_end(set->pools[set->n - 1u]) - set->lo ||
        set->ctl != (uintptr_t)set->pools[0] || set->ctl_span != set->lo + set->span - sizeof(hk_pool_t) - set->ctl) {
        return HK_CHECK_CONTROL;
    }
    for (k = 0; k < SIZE_BITS; k++) {
        pool_bucket_t b = bucket_for(set, k);
        if (set->bucket[k].mask != b.mask || set->bucket[k].lim != b.lim) {
            return HK_CHECK_CONTROL;
        }
    }
    if (avail != set->avail) {
        return HK_CHECK_LIST;
    }
    if (s->capacity != capacity || s->free_bytes != free_bytes || s->min_ever_free > s->free_bytes) {
        return HK_CHECK_STATS;
    }
    return HK_CHECK_OK;
}

int hk_poolset_owns(const hk_poolset_t *set, const void *ptr) { return (uintptr_t)ptr - set->lo < set->span; }
