/* SPDX-License-Identifier: MIT */
/*
 * poolset: FCTMA pools (pool.c) serving several size classes from one arena.
 *
 * Algorithm: the set places a bump allocator (the seed's SimpleDMA) on its
 * arena and lays one pool per size class out on it, in increasing address
 * order. malloc maps the size to a class without a search: a table indexed
 * by the size's count of leading zeros (its octave) gives the classes that
 * fit every size of the octave and the largest request of the class below
 * them, so one comparison decides whether that class fits too; a bitmap of
 * the classes whose list is not empty, masked with that, gives the class to
 * use (the smallest that fits and has a block: falling through to larger
 * ones) with one bit scan. This picks the smallest fitting class unless two
 * classes' largest requests lie in one octave [2^k, 2^(k+1) - 1]; then
 * sizes that the lower of the two would fit get the class above it. free
 * finds the pool from the block's header, which names it; the header is
 * trusted only if it names a live pool of this set that contains the block.
 *
 * Time: malloc, free, resize and usable_size are O(1) on valid pointers
 * and O(classes) on the misuse path. get_stats sums the pools' (each
 * O(log blocks + blocks handed out so far)); walk and check are O(blocks),
 * as is init.
 *
 * Fast paths: malloc and free below level 2 are written for the
 * instruction count (Cortex-M3, -O2: 45/49 at most at level 1); level 2 and
 * damage branch to the pools' general paths, out of line.
 *
 * Statistics: the set keeps its free_bytes and their low-water mark,
 * min_ever_free, current on every call (the high-water mark of a sum of
 * classes cannot be derived afterwards, and the FreeRTOS port reads both
 * fields directly); the pools' general paths keep them too, so a pool of
 * the set may be used directly (hk_poolset_pool). The rest is the pools'.
 *
 * Overhead: the set struct (a pool pointer per possible class and the size
 * table), the bump's control and per-allocation overhead, and each pool's.
 * Hardening is the pools' (pool.c); misuse is reported on the set's heap.
 */
#include "heapkit/bump.h"
#include "pool_internal.h"

#define SIZE_BITS ((unsigned)(sizeof(size_t) * 8u))

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
        /* The bump's own malloc, not hk_malloc on its heap: the set links none of bump's other operations. */
        size_t stride = stride_for(classes[i].block_size);
        size_t bytes = pool_bytes(stride, classes[i].count);
        void *mem = bytes != 0 ? hk_bump_malloc(bump, bytes) : NULL;
        hk_pool_t *p;
        if (mem == NULL) {
            hk_init_status(status, HK_ETOOSMALL);
            return NULL;
        }
        p = hk_pool_lay_out(mem, classes[i].block_size, stride, classes[i].count, NULL);
        p->set = set;
        p->class_bit = (uint32_t)1u << i;
        hk_pool_go_general(p);
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
        pool_hdr_t *h = hk_pool_pop(p);
        if (h != NULL) {
            return hk_pool_grant(p, h, size);
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
    hk_take_free(&set->heap.stats, p->stride);
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
static hk_error_t classify_bad_owner(const hk_poolset_t *set, const void *ptr)
{
    size_t i;
    for (i = 0; i < set->n; i++) {
        const hk_pool_t *p = set->pools[i];
        if (pool_owns(p, ptr)) {
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
    if (!HK_CHECKS || (pool_of_set(set, p) && pool_owns(p, ptr))) {
        return p;
    }
    *error = classify_bad_owner(set, ptr);
    return NULL;
}

/* The used block ptr names and its pool, or NULL after reporting the misuse. */
static pool_hdr_t *set_lookup(hk_poolset_t *set, const void *ptr, hk_pool_t **pool)
{
    hk_error_t error = HK_ERR_CORRUPT;
    hk_pool_t *p = pool_of(set, ptr, &error);
    pool_hdr_t *h = p != NULL ? hk_pool_find_used(p, ptr, &error) : NULL;
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
        hk_pool_push(p, h);
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
    hk_pool_resize_block(p, h, size);
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
        hk_pool_stats_of(set->pools[i], &ps);
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
}

void hk_poolset_walk(hk_poolset_t *set, hk_walk_fn visit, void *ctx)
{
    size_t i;
    for (i = 0; i < set->n; i++) {
        hk_pool_walk_blocks(set->pools[i], visit, ctx);
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
        rc = hk_pool_check_blocks(p);
        if (rc != HK_CHECK_OK) {
            return rc;
        }
        capacity += p->span;
        free_bytes += hk_pool_free_blocks(p) * p->stride;
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
