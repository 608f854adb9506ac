/* SPDX-License-Identifier: MIT */
/*
 * Peer "umm": Ralph Hempel's umm_malloc (MIT; umm_malloc/src/ from the
 * umm-malloc-sys crate 0.3.2, fetched by tools/fetch_peers.sh, configured by
 * umm/umm_malloc_cfgport.h: best fit, UMM_INFO, UMM_INTEGRITY_CHECK),
 * behind hk_ops_t.
 *
 * umm_malloc carves the heap into 8-byte blocks addressed by 15-bit indices.
 * Every block run starts with a 4-byte header {next, prev} (block indices;
 * the top bit of next marks a free run); a free run keeps its free-list
 * links in the next 4 bytes, a used one hands them out, so a request of n
 * bytes takes ceil((n + 4) / 8) blocks. Block 0 heads the free list and the
 * last block ends the heap: 16 bytes of control data inside the arena.
 * Allocation is best fit over the whole free list (O(free runs)); free
 * coalesces with both neighbours; realloc grows in place into free
 * neighbours when it can. umm_malloc keeps one heap per program (its state
 * is a global), so one live instance at a time: make() refuses a second.
 *
 * The arena: umm_init_heap(base, size) on the caller's memory. Payloads sit
 * 4 bytes into a block, so base is placed 4 bytes past an 8-byte boundary
 * (at most 7 bytes skipped) to give 8-byte aligned pointers, heapkit's
 * convention (on its usual 32-bit targets umm's pointers are only 4-byte
 * aligned). 15-bit block indices cap a heap at 32768 blocks = 256 KiB: a
 * larger arena is clamped to its first 256 KiB (plus the alignment skip),
 * the way o1heap clamps its capacity; memory.capacity in the engine's
 * report shows it, and a trace that needs more fails its allocations
 * there. Arenas too small for block 0, one block and the end block are
 * refused (HK_ETOOSMALL).
 *
 * What the adapter adds, reading umm's block header where umm has no API:
 *   - usable_size = run length * 8 - 4 (what umm_realloc calls curSize);
 *   - malloc(0) asks for 1 byte (heapkit's convention; umm returns NULL);
 *   - realloc is umm_realloc() (a size of 0 frees, as heapkit wants);
 *   - walk: block runs from block 1 through their next indices;
 *   - get_stats: free bytes, the largest free run and the number of free
 *     runs from umm_info(); the smallest free run from a walk; the low-water
 *     mark from the adapter's counters; used_requested, split_count and
 *     coalesce_count are not tracked (0);
 *   - check: umm_integrity_check() (which prints "Heap Corruption!" when it
 *     fails), then the walk tiling the heap and agreeing with umm_info()
 *     and the adapter's counters.
 * A pointer outside the heap is reported as HK_ERR_FOREIGN_PTR, and a free
 * of a run not marked used as HK_ERR_DOUBLE_FREE, before umm sees them
 * (umm itself does not check).
 */
#include "allocators.h"

#ifdef HK_HAVE_PEER_UMM

#include <string.h>

#include "umm_malloc.h"
#include "umm_malloc_cfg.h"
#include "peer_tally.h"

/* umm_init() would read these link-time values; the adapter uses umm_init_heap() instead. */
void *UMM_MALLOC_CFG_HEAP_ADDR;
uint32_t UMM_MALLOC_CFG_HEAP_SIZE;

#define UMM_BLOCK 8u
#define UMM_HEADER 4u
#define UMM_FREE_BIT 0x8000u
#define UMM_INDEX_MASK 0x7FFFu
#define UMM_MAX_BLOCKS 32768u

typedef struct umm_heap {
    hk_heap_t heap;
    const uint8_t *lo; /* the arena */
    const uint8_t *hi;
    uint8_t *base;     /* block 0 */
    size_t blocks;     /* umm's numblocks */
    size_t used_gross; /* for the low-water mark */
    size_t peak_gross;
    int live;
} umm_heap_t;

static umm_heap_t umm_instance;

/* A block's header words, read as umm's packed struct lays them out. */
static unsigned next_of(const umm_heap_t *h, size_t c)
{
    uint16_t v;
    memcpy(&v, h->base + c * UMM_BLOCK, sizeof(v));
    return v;
}

static size_t block_of(const umm_heap_t *h, const void *payload)
{
    return (size_t)((const uint8_t *)payload - h->base) / UMM_BLOCK;
}

static size_t gross_at(const umm_heap_t *h, size_t c) { return ((next_of(h, c) & UMM_INDEX_MASK) - c) * UMM_BLOCK; }

/* A payload umm could have handed out: the data field of a block between the first and the end block. */
static int in_heap(const umm_heap_t *h, const void *p)
{
    const uint8_t *q = p;
    return q >= h->base + UMM_BLOCK + UMM_HEADER && q < h->base + (h->blocks - 1) * UMM_BLOCK &&
           (size_t)(q - h->base) % UMM_BLOCK == UMM_HEADER;
}

static void note_error(umm_heap_t *h, hk_error_t error, const void *ptr)
{
    h->heap.stats.error_count++;
    if (h->heap.hooks.on_error != NULL) {
        h->heap.hooks.on_error(h->heap.hooks.ctx, &h->heap, error, ptr);
    }
}

static void count_used(umm_heap_t *h, size_t gross)
{
    hk_stats_t *s = &h->heap.stats;
    s->used_granted += gross - UMM_HEADER;
    if (s->used_granted > s->peak_used) {
        s->peak_used = s->used_granted;
    }
    h->used_gross += gross;
    if (h->used_gross > h->peak_gross) {
        h->peak_gross = h->used_gross;
    }
}

static void *umm_hk_malloc(hk_heap_t *heap, size_t size)
{
    umm_heap_t *h = (umm_heap_t *)heap;
    void *p = umm_malloc(size == 0 ? 1 : size);
    if (p == NULL) {
        heap->stats.fail_count++;
        return NULL;
    }
    heap->stats.alloc_count++;
    heap->stats.used_blocks++;
    count_used(h, gross_at(h, block_of(h, p)));
    return p;
}

/* 1 when ptr is a used block umm may be handed; otherwise the misuse is reported. */
static int usable_ptr(umm_heap_t *h, const void *ptr)
{
    if (!in_heap(h, ptr)) {
        note_error(h, HK_ERR_FOREIGN_PTR, ptr);
        return 0;
    }
    if (next_of(h, block_of(h, ptr)) & UMM_FREE_BIT) {
        note_error(h, HK_ERR_DOUBLE_FREE, ptr);
        return 0;
    }
    return 1;
}

static void umm_hk_free(hk_heap_t *heap, void *ptr)
{
    umm_heap_t *h = (umm_heap_t *)heap;
    size_t gross;
    if (ptr == NULL || !usable_ptr(h, ptr)) {
        return;
    }
    gross = gross_at(h, block_of(h, ptr));
    umm_free(ptr);
    heap->stats.free_count++;
    heap->stats.used_blocks--;
    heap->stats.used_granted -= gross - UMM_HEADER;
    h->used_gross -= gross;
}

static void *umm_hk_realloc(hk_heap_t *heap, void *ptr, size_t size)
{
    umm_heap_t *h = (umm_heap_t *)heap;
    size_t old;
    void *q;
    if (ptr == NULL) {
        return umm_hk_malloc(heap, size);
    }
    if (size == 0) {
        umm_hk_free(heap, ptr);
        return NULL;
    }
    if (!usable_ptr(h, ptr)) {
        return NULL;
    }
    old = gross_at(h, block_of(h, ptr));
    q = umm_realloc(ptr, size);
    if (q == NULL) {
        heap->stats.fail_count++;
        return NULL;
    }
    heap->stats.realloc_count++;
    if (q != ptr) {
        heap->stats.alloc_count++;
        heap->stats.free_count++;
    }
    heap->stats.used_granted -= old - UMM_HEADER;
    h->used_gross -= old;
    count_used(h, gross_at(h, block_of(h, q)));
    return q;
}

static size_t umm_hk_usable(hk_heap_t *heap, const void *ptr)
{
    umm_heap_t *h = (umm_heap_t *)heap;
    if (ptr == NULL || !in_heap(h, ptr)) {
        return 0;
    }
    return gross_at(h, block_of(h, ptr)) - UMM_HEADER;
}

static void umm_hk_walk(hk_heap_t *heap, hk_walk_fn visit, void *ctx)
{
    umm_heap_t *h = (umm_heap_t *)heap;
    size_t c = next_of(h, 0) & UMM_INDEX_MASK;
    size_t last = h->blocks - 1;
    while (c != 0 && c < last) {
        unsigned next = next_of(h, c);
        size_t n = next & UMM_INDEX_MASK;
        hk_block_info_t info;
        if (n <= c || n > last) {
            return; /* corrupt: check() says so */
        }
        info.start = h->base + c * UMM_BLOCK;
        info.size = (n - c) * UMM_BLOCK;
        info.payload = h->base + c * UMM_BLOCK + UMM_HEADER;
        info.usable = info.size - UMM_HEADER;
        info.used = (next & UMM_FREE_BIT) == 0;
        visit(ctx, &info);
        c = n;
    }
}

/* Where the walk starts: the first run after umm's head block. */
static const uint8_t *first_run(const umm_heap_t *h) { return h->base + (next_of(h, 0) & UMM_INDEX_MASK) * UMM_BLOCK; }

static void umm_hk_stats(hk_heap_t *heap, hk_stats_t *out)
{
    umm_heap_t *h = (umm_heap_t *)heap;
    peer_tally_t t;
    umm_info(NULL, false);
    peer_tally(heap, umm_hk_walk, first_run(h), &t);
    *out = heap->stats;
    out->free_bytes = (size_t)ummHeapInfo.freeBlocks * UMM_BLOCK;
    out->min_ever_free = out->capacity - h->peak_gross;
    out->largest_free = (size_t)ummHeapInfo.maxFreeContiguousBlocks * UMM_BLOCK;
    out->smallest_free = t.smallest;
    out->free_blocks = ummHeapInfo.freeEntries;
}

static hk_check_t umm_hk_check(hk_heap_t *heap)
{
    umm_heap_t *h = (umm_heap_t *)heap;
    peer_tally_t t;
    if (!umm_integrity_check()) {
        return 1;
    }
    peer_tally(heap, umm_hk_walk, first_run(h), &t);
    if (t.covered != heap->stats.capacity) {
        return 2; /* the runs do not tile the heap */
    }
    umm_info(NULL, false);
    if (t.free_bytes != (size_t)ummHeapInfo.freeBlocks * UMM_BLOCK || t.free_blocks != ummHeapInfo.freeEntries) {
        return 3;
    }
    if (!peer_tally_counts_agree(&t, heap)) {
        return 4;
    }
    return 0;
}

static int umm_hk_owns(const hk_heap_t *heap, const void *ptr)
{
    const umm_heap_t *h = (const umm_heap_t *)heap;
    return peer_in_arena(h->lo, h->hi, ptr);
}

static const hk_ops_t umm_ops = {"umm",         umm_hk_malloc, NULL,         umm_hk_realloc, NULL, umm_hk_free,
                                 umm_hk_usable, umm_hk_stats,  umm_hk_walk, umm_hk_check,   umm_hk_owns};

static hk_heap_t *umm_make(void *arena, size_t size, hk_status_t *status)
{
    umm_heap_t *h = &umm_instance;
    size_t skip = (size_t)((UMM_BLOCK + UMM_HEADER - (uintptr_t)arena % UMM_BLOCK) % UMM_BLOCK);
    size_t blocks = size > skip ? (size - skip) / UMM_BLOCK : 0;
    hk_status_t st = HK_OK;
    if (arena == NULL || h->live) {
        st = HK_EINVAL;
    } else if (blocks < 3) {
        st = HK_ETOOSMALL;
    }
    if (status != NULL) {
        *status = st;
    }
    if (st != HK_OK) {
        return NULL;
    }
    if (blocks > UMM_MAX_BLOCKS) {
        blocks = UMM_MAX_BLOCKS;
    }
    memset(h, 0, sizeof(*h));
    h->heap.ops = &umm_ops;
    h->lo = arena;
    h->hi = (const uint8_t *)arena + size;
    h->base = (uint8_t *)arena + skip;
    h->blocks = blocks;
    umm_init_heap(h->base, blocks * UMM_BLOCK);
    h->heap.stats.capacity = (blocks - 2) * UMM_BLOCK;
    h->heap.stats.free_bytes = h->heap.stats.capacity;
    h->heap.stats.min_ever_free = h->heap.stats.capacity;
    h->live = 1;
    return &h->heap;
}

static void umm_destroy(hk_heap_t *heap) { ((umm_heap_t *)heap)->live = 0; }

const lab_alloc_t lab_peer_umm = {"umm", LAB_FAMILY_PEER, umm_make, umm_destroy, LAB_IN_ARENA, NULL};

#endif
