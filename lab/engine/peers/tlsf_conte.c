/* SPDX-License-Identifier: MIT */
/*
 * Peer "tlsf-conte": Matthew Conte's TLSF 3.1 (BSD-3-Clause) as LVGL 8
 * bundles it, lv_tlsf.c/lv_tlsf.h of the lvgl-sys crate 0.6.2 (fetched by
 * tools/fetch_peers.sh, compiled by peers/CMakeLists.txt with
 * tlsf_conte/lv_tlsf_shim.h force-included: asserts off, no LVGL around
 * it), behind hk_ops_t.
 *
 * Conte's TLSF: two-level segregated fit with 32 second-level lists
 * (SL_INDEX_COUNT_LOG2 5), bitmaps and find-first-set, immediate
 * coalescing. A block is a size word (bit 0: free, bit 1: previous block
 * free) followed by the payload; a free block keeps its free-list links in
 * the payload and its address in the next block's first word
 * (prev_phys_block), so a used block costs one size_t of overhead. Sizes
 * and payloads are aligned to ALIGN_SIZE: 8 bytes on 64-bit hosts, 4 on
 * 32-bit targets. The control_t (bitmaps and list heads) goes first in the
 * arena, as heapkit's control blocks do; then one pool: its first block
 * starts right after the control block and a zero-size sentinel ends it.
 *
 * make() aligns the arena up to lv_tlsf_align_size(), creates the control
 * block with lv_tlsf_create() and adds the rest as one pool with
 * lv_tlsf_add_pool(), clamped to the largest pool the control block can
 * index (lv_tlsf_block_size_max(): LV_MEM_SIZE of the shim, 1 GiB). An
 * arena too small for the control block and a minimum block is refused
 * (HK_ETOOSMALL). The adapter handle is malloc'ed, outside the arena.
 *
 * What the adapter adds, reading TLSF's size word where TLSF has no API:
 *   - malloc(0) asks for 1 byte (heapkit's convention; TLSF returns NULL);
 *   - requests above lv_tlsf_block_size_max() fail before TLSF sees them:
 *     adjust_request_size() rounds up with align_up(), which wraps for
 *     sizes within ALIGN_SIZE of SIZE_MAX and would hand out a minimum
 *     block;
 *   - aligned_alloc is lv_tlsf_memalign();
 *   - realloc is lv_tlsf_realloc() (grows in place into a free successor,
 *     shrinks in place, otherwise malloc + copy + free); size 0 frees;
 *   - usable_size = lv_tlsf_block_size() (the payload, to the next block's
 *     size word);
 *   - walk: lv_tlsf_walk_pool(); a block's start is its size word and its
 *     gross size the payload plus that word, so the blocks tile the pool;
 *   - get_stats: free bytes, free-block geometry and the capacity from a
 *     walk; the low-water mark from the adapter's counters;
 *     used_requested, split_count and coalesce_count are not tracked (0);
 *   - check: lv_tlsf_check() (free lists and bitmaps) and
 *     lv_tlsf_check_pool() (physical blocks), which count failures even
 *     with asserts off, then the walk tiling the pool and agreeing with
 *     the adapter's counters.
 * A pointer outside the pool or not aligned as a payload is reported as
 * HK_ERR_FOREIGN_PTR, and a free of a block whose size word says free as
 * HK_ERR_DOUBLE_FREE, before TLSF sees them (TLSF itself only asserts).
 */
#include "allocators.h"

#ifdef HK_HAVE_PEER_TLSF_CONTE

#include <stdlib.h>
#include <string.h>

/* The shim first: its include guards keep LVGL's configuration headers out of lv_tlsf.h. */
#include "lv_tlsf_shim.h"

#include "lv_tlsf.h"
#include "peer_tally.h"

#define CONTE_FREE_BIT ((size_t)1)
#define CONTE_FLAG_BITS ((size_t)3)
#define CONTE_WORD sizeof(size_t) /* the size word: the overhead of a used block */

typedef struct conte_heap {
    hk_heap_t heap;
    lv_tlsf_t tlsf;
    lv_pool_t pool;
    const uint8_t *lo; /* the arena */
    const uint8_t *hi;
    const uint8_t *first; /* the first block's payload */
    const uint8_t *end;   /* the sentinel's size word: first - CONTE_WORD + capacity */
    size_t used_gross;    /* for the low-water mark */
    size_t peak_gross;
} conte_heap_t;

static size_t size_word(const void *payload)
{
    size_t w;
    memcpy(&w, (const uint8_t *)payload - CONTE_WORD, sizeof(w));
    return w;
}

static size_t gross_of(const void *payload) { return (size_word(payload) & ~CONTE_FLAG_BITS) + CONTE_WORD; }

/* A payload TLSF could have handed out: inside the pool, on the alignment grid. */
static int in_pool(const conte_heap_t *h, const void *p)
{
    const uint8_t *q = p;
    return q >= h->first && q < h->end && (uintptr_t)q % lv_tlsf_align_size() == 0;
}

static void note_error(conte_heap_t *h, hk_error_t error, const void *ptr)
{
    h->heap.stats.error_count++;
    if (h->heap.hooks.on_error != NULL) {
        h->heap.hooks.on_error(h->heap.hooks.ctx, &h->heap, error, ptr);
    }
}

static void count_used(conte_heap_t *h, const void *p)
{
    hk_stats_t *s = &h->heap.stats;
    size_t gross = gross_of(p);
    s->used_granted += gross - CONTE_WORD;
    if (s->used_granted > s->peak_used) {
        s->peak_used = s->used_granted;
    }
    h->used_gross += gross;
    if (h->used_gross > h->peak_gross) {
        h->peak_gross = h->used_gross;
    }
}

static void count_released(conte_heap_t *h, size_t gross)
{
    h->heap.stats.used_granted -= gross - CONTE_WORD;
    h->used_gross -= gross;
}

static void *conte_malloc(hk_heap_t *heap, size_t size)
{
    conte_heap_t *h = (conte_heap_t *)heap;
    void *p = size < lv_tlsf_block_size_max() ? lv_tlsf_malloc(h->tlsf, size == 0 ? 1 : size) : NULL;
    if (p == NULL) {
        heap->stats.fail_count++;
        return NULL;
    }
    heap->stats.alloc_count++;
    heap->stats.used_blocks++;
    count_used(h, p);
    return p;
}

static void *conte_aligned(hk_heap_t *heap, size_t alignment, size_t size)
{
    conte_heap_t *h = (conte_heap_t *)heap;
    size_t max = lv_tlsf_block_size_max();
    void *p = NULL;
    if (alignment < max && size < max - alignment) {
        p = lv_tlsf_memalign(h->tlsf, alignment, size == 0 ? 1 : size);
    }
    if (p == NULL) {
        heap->stats.fail_count++;
        return NULL;
    }
    heap->stats.alloc_count++;
    heap->stats.used_blocks++;
    count_used(h, p);
    return p;
}

/* 1 when ptr is a used block TLSF may be handed; otherwise the misuse is reported. */
static int usable_ptr(conte_heap_t *h, const void *ptr)
{
    if (!in_pool(h, ptr)) {
        note_error(h, HK_ERR_FOREIGN_PTR, ptr);
        return 0;
    }
    if (size_word(ptr) & CONTE_FREE_BIT) {
        note_error(h, HK_ERR_DOUBLE_FREE, ptr);
        return 0;
    }
    return 1;
}

static void conte_free(hk_heap_t *heap, void *ptr)
{
    conte_heap_t *h = (conte_heap_t *)heap;
    size_t gross;
    if (ptr == NULL || !usable_ptr(h, ptr)) {
        return;
    }
    gross = gross_of(ptr);
    lv_tlsf_free(h->tlsf, ptr);
    heap->stats.free_count++;
    heap->stats.used_blocks--;
    count_released(h, gross);
}

static void *conte_realloc(hk_heap_t *heap, void *ptr, size_t size)
{
    conte_heap_t *h = (conte_heap_t *)heap;
    size_t old;
    void *q;
    if (ptr == NULL) {
        return conte_malloc(heap, size);
    }
    if (size == 0) {
        conte_free(heap, ptr);
        return NULL;
    }
    if (!usable_ptr(h, ptr)) {
        return NULL;
    }
    old = gross_of(ptr);
    q = size < lv_tlsf_block_size_max() ? lv_tlsf_realloc(h->tlsf, ptr, size) : NULL;
    if (q == NULL) {
        heap->stats.fail_count++;
        return NULL;
    }
    heap->stats.realloc_count++;
    if (q != ptr) {
        heap->stats.alloc_count++;
        heap->stats.free_count++;
    }
    count_released(h, old);
    count_used(h, q);
    return q;
}

static size_t conte_usable(hk_heap_t *heap, const void *ptr)
{
    if (ptr == NULL || !in_pool((conte_heap_t *)heap, ptr)) {
        return 0;
    }
    return lv_tlsf_block_size((void *)(uintptr_t)ptr);
}

typedef struct conte_walk {
    hk_walk_fn visit;
    void *ctx;
} conte_walk_t;

static void walk_block(void *ptr, size_t size, int used, void *user)
{
    conte_walk_t *w = user;
    hk_block_info_t info;
    info.start = (const uint8_t *)ptr - CONTE_WORD;
    info.size = size + CONTE_WORD;
    info.payload = ptr;
    info.usable = size;
    info.used = used != 0;
    w->visit(w->ctx, &info);
}

static void conte_walk(hk_heap_t *heap, hk_walk_fn visit, void *ctx)
{
    conte_heap_t *h = (conte_heap_t *)heap;
    conte_walk_t w = {visit, ctx};
    lv_tlsf_walk_pool(h->pool, walk_block, &w);
}

static void conte_stats(hk_heap_t *heap, hk_stats_t *out)
{
    conte_heap_t *h = (conte_heap_t *)heap;
    peer_tally_t t;
    peer_tally(heap, conte_walk, h->first - CONTE_WORD, &t);
    *out = heap->stats;
    out->free_bytes = t.free_bytes;
    out->min_ever_free = out->capacity - h->peak_gross;
    peer_tally_geometry(&t, out);
}

static hk_check_t conte_check(hk_heap_t *heap)
{
    conte_heap_t *h = (conte_heap_t *)heap;
    peer_tally_t t;
    if (lv_tlsf_check(h->tlsf) != 0) {
        return 1; /* free lists or bitmaps */
    }
    if (lv_tlsf_check_pool(h->pool) != 0) {
        return 2; /* physical blocks: sizes, free flags */
    }
    peer_tally(heap, conte_walk, h->first - CONTE_WORD, &t);
    if (t.gap || t.expect != h->end) {
        return 3; /* the blocks do not tile the pool */
    }
    if (!peer_tally_counts_agree(&t, heap) ||
        t.free_bytes + h->used_gross != heap->stats.capacity) {
        return 4;
    }
    return 0;
}

static int conte_owns(const hk_heap_t *heap, const void *ptr)
{
    const conte_heap_t *h = (const conte_heap_t *)heap;
    return peer_in_arena(h->lo, h->hi, ptr);
}

static const hk_ops_t conte_ops = {"tlsf-conte", conte_malloc, conte_aligned, conte_realloc, NULL, conte_free,
                                   conte_usable, conte_stats,  conte_walk,    conte_check,   conte_owns};

static hk_heap_t *conte_make(void *arena, size_t size, hk_status_t *status)
{
    size_t align = lv_tlsf_align_size();
    uintptr_t base = ((uintptr_t)arena + (align - 1u)) & ~(uintptr_t)(align - 1u);
    size_t skip = (size_t)(base - (uintptr_t)arena);
    size_t control = lv_tlsf_size();
    size_t overhead = lv_tlsf_pool_overhead();
    size_t pool_bytes;
    hk_status_t st = HK_OK;
    conte_heap_t *h = NULL;
    if (arena == NULL) {
        st = HK_EINVAL;
    } else if (size < skip || size - skip < control + overhead + lv_tlsf_block_size_min()) {
        st = HK_ETOOSMALL;
    } else if ((h = calloc(1, sizeof(*h))) == NULL) {
        st = HK_EINVAL;
    }
    if (st == HK_OK) {
        pool_bytes = size - skip - control;
        if (pool_bytes - overhead > lv_tlsf_block_size_max()) {
            pool_bytes = lv_tlsf_block_size_max() + overhead;
        }
        h->tlsf = lv_tlsf_create((void *)base);
        h->pool = h->tlsf != NULL ? lv_tlsf_add_pool(h->tlsf, (uint8_t *)base + control, pool_bytes) : NULL;
        if (h->pool == NULL) {
            free(h);
            h = NULL;
            st = HK_ETOOSMALL;
        }
    }
    if (status != NULL) {
        *status = st;
    }
    if (st != HK_OK) {
        return NULL;
    }
    h->heap.ops = &conte_ops;
    h->lo = arena;
    h->hi = (const uint8_t *)arena + size;
    h->first = (const uint8_t *)h->pool + CONTE_WORD;
    /* The one free block covers the pool up to the sentinel's size word. */
    h->heap.stats.capacity = lv_tlsf_block_size((void *)(uintptr_t)h->first) + CONTE_WORD;
    h->end = h->first - CONTE_WORD + h->heap.stats.capacity;
    h->heap.stats.free_bytes = h->heap.stats.capacity;
    h->heap.stats.min_ever_free = h->heap.stats.capacity;
    return &h->heap;
}

static void conte_destroy(hk_heap_t *heap) { free(heap); }

const lab_alloc_t lab_peer_tlsf_conte = {"tlsf-conte", LAB_FAMILY_PEER, conte_make, conte_destroy, LAB_IN_ARENA, NULL};

#endif
