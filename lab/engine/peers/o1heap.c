/* SPDX-License-Identifier: MIT */
/*
 * Peer "o1heap": Pavel Kirienko's o1heap v2 (MIT; o1heap.c/o1heap.h from the
 * o1heap crate 0.0.2, fetched by tools/fetch_peers.sh and compiled with its
 * default configuration by peers/CMakeLists.txt), behind hk_ops_t.
 *
 * o1heap is half-fit: fragments are powers of two (request + O1HEAP_ALIGNMENT
 * of header, rounded up), binned by log2, split and coalesced in constant
 * time. O1HEAP_ALIGNMENT is 4 pointers: 32 bytes on x86-64, which is both
 * the header size and the alignment of every returned pointer. The
 * O1HeapInstance (bins, mask, diagnostics) sits at the start of the arena,
 * as heapkit's control blocks do, so footprint and smallest-arena figures
 * mean the same thing for both.
 *
 * make() aligns the arena up to O1HEAP_ALIGNMENT (o1heapInit() insists on
 * it) and hands the rest to o1heapInit(); o1heap rounds its capacity down to
 * a multiple of 2 * O1HEAP_ALIGNMENT, so up to 63 bytes at the top stay
 * unused. The adapter handle itself is malloc'ed, outside the arena.
 *
 * What the adapter adds, reading o1heap's fragment header (a mirror of its
 * FragmentHeader {next, prev, size, used}) where o1heap has no API:
 *   - usable_size = fragment size - O1HEAP_ALIGNMENT;
 *   - realloc: o1heap has none, so malloc + copy + free (always moves);
 *   - malloc(0) asks for 1 byte (heapkit's convention; o1heap returns NULL);
 *   - aligned_alloc for alignments up to O1HEAP_ALIGNMENT, which every
 *     block already has; larger ones fail;
 *   - walk: fragments in address order through their next links;
 *   - get_stats: capacity, free bytes and the low-water mark from
 *     o1heapGetDiagnostics() (capacity - allocated, capacity -
 *     peak_allocated); free-block geometry from a walk; used_requested,
 *     split_count and coalesce_count are not tracked (0);
 *   - check: o1heapDoInvariantsHold(), then the walk tiling the capacity
 *     exactly and agreeing with the diagnostics and the adapter's counters.
 * A pointer outside the arena is reported as HK_ERR_FOREIGN_PTR before it
 * reaches o1heap; other misuse is o1heap's business (its assertions, which
 * NDEBUG builds compile out).
 */
#include "allocators.h"

#ifdef HK_HAVE_PEER_O1HEAP

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "o1heap.h"
#include "peer_tally.h"

typedef struct o1_fragment {
    struct o1_fragment *next;
    struct o1_fragment *prev;
    size_t size;
    bool used;
} o1_fragment_t;

typedef struct o1_heap {
    hk_heap_t heap;
    O1HeapInstance *o1;
    const uint8_t *lo; /* the arena */
    const uint8_t *hi;
    uint8_t *first;    /* the root fragment, right after the instance */
    uint8_t *end;      /* first + capacity */
} o1_heap_t;

static o1_fragment_t *fragment_of(const void *payload)
{
    return (o1_fragment_t *)((uintptr_t)payload - O1HEAP_ALIGNMENT);
}

static int in_heap(const o1_heap_t *h, const void *p)
{
    const uint8_t *q = p;
    return q >= h->first + O1HEAP_ALIGNMENT && q < h->end;
}

static void note_error(o1_heap_t *h, hk_error_t error, const void *ptr)
{
    h->heap.stats.error_count++;
    if (h->heap.hooks.on_error != NULL) {
        h->heap.hooks.on_error(h->heap.hooks.ctx, &h->heap, error, ptr);
    }
}

static void *o1_malloc(hk_heap_t *heap, size_t size)
{
    o1_heap_t *h = (o1_heap_t *)heap;
    hk_stats_t *s = &heap->stats;
    void *p = o1heapAllocate(h->o1, size == 0 ? 1 : size);
    if (p == NULL) {
        s->fail_count++;
        return NULL;
    }
    s->alloc_count++;
    s->used_blocks++;
    s->used_granted += fragment_of(p)->size - O1HEAP_ALIGNMENT;
    if (s->used_granted > s->peak_used) {
        s->peak_used = s->used_granted;
    }
    return p;
}

static void *o1_aligned(hk_heap_t *heap, size_t alignment, size_t size)
{
    if (alignment > O1HEAP_ALIGNMENT) {
        heap->stats.fail_count++;
        return NULL;
    }
    return o1_malloc(heap, size);
}

static void o1_free(hk_heap_t *heap, void *ptr)
{
    o1_heap_t *h = (o1_heap_t *)heap;
    hk_stats_t *s = &heap->stats;
    const o1_fragment_t *f;
    size_t usable;
    if (ptr == NULL) {
        return;
    }
    if (!in_heap(h, ptr)) {
        note_error(h, HK_ERR_FOREIGN_PTR, ptr);
        return;
    }
    f = fragment_of(ptr);
    usable = f->size - O1HEAP_ALIGNMENT;
    if (!f->used) {
        note_error(h, HK_ERR_DOUBLE_FREE, ptr);
        return;
    }
    o1heapFree(h->o1, ptr);
    s->free_count++;
    s->used_blocks--;
    s->used_granted -= usable;
}

static size_t o1_usable(hk_heap_t *heap, const void *ptr)
{
    if (ptr == NULL || !in_heap((o1_heap_t *)heap, ptr)) {
        return 0;
    }
    return fragment_of(ptr)->size - O1HEAP_ALIGNMENT;
}

static void *o1_realloc(hk_heap_t *heap, void *ptr, size_t size)
{
    void *moved;
    size_t old;
    if (ptr == NULL) {
        return o1_malloc(heap, size);
    }
    if (size == 0) {
        o1_free(heap, ptr);
        return NULL;
    }
    if (!in_heap((o1_heap_t *)heap, ptr)) {
        note_error((o1_heap_t *)heap, HK_ERR_FOREIGN_PTR, ptr);
        return NULL;
    }
    old = o1_usable(heap, ptr);
    moved = o1_malloc(heap, size);
    if (moved != NULL) {
        memcpy(moved, ptr, old < size ? old : size);
        o1_free(heap, ptr);
        heap->stats.realloc_count++;
    }
    return moved;
}

static void o1_walk(hk_heap_t *heap, hk_walk_fn visit, void *ctx)
{
    o1_heap_t *h = (o1_heap_t *)heap;
    const uint8_t *end = h->end;
    const o1_fragment_t *f = (const o1_fragment_t *)(void *)h->first;
    while (f != NULL) {
        hk_block_info_t info;
        const uint8_t *p = (const uint8_t *)f;
        if (p < h->first || p >= end || f->size < 2 * O1HEAP_ALIGNMENT || f->size > (size_t)(end - p)) {
            return; /* corrupt: check() says so */
        }
        info.start = p;
        info.size = f->size;
        info.payload = p + O1HEAP_ALIGNMENT;
        info.usable = f->size - O1HEAP_ALIGNMENT;
        info.used = f->used;
        visit(ctx, &info);
        f = f->next;
    }
}

static void o1_stats(hk_heap_t *heap, hk_stats_t *out)
{
    o1_heap_t *h = (o1_heap_t *)heap;
    O1HeapDiagnostics d = o1heapGetDiagnostics(h->o1);
    peer_tally_t t;
    peer_tally(heap, o1_walk, h->first, &t);
    *out = heap->stats;
    out->capacity = d.capacity;
    out->free_bytes = d.capacity - d.allocated;
    out->min_ever_free = d.capacity - d.peak_allocated;
    peer_tally_geometry(&t, out);
}

static hk_check_t o1_check(hk_heap_t *heap)
{
    o1_heap_t *h = (o1_heap_t *)heap;
    O1HeapDiagnostics d = o1heapGetDiagnostics(h->o1);
    peer_tally_t t;
    if (!o1heapDoInvariantsHold(h->o1)) {
        return 1;
    }
    peer_tally(heap, o1_walk, h->first, &t);
    if (t.gap || t.expect != h->end || h->end != h->first + d.capacity) {
        return 2; /* the fragments do not tile the capacity */
    }
    if (t.used_gross != d.allocated) {
        return 3;
    }
    if (!peer_tally_counts_agree(&t, heap)) {
        return 4;
    }
    return 0;
}

static int o1_owns(const hk_heap_t *heap, const void *ptr)
{
    const o1_heap_t *h = (const o1_heap_t *)heap;
    return peer_in_arena(h->lo, h->hi, ptr);
}

static const hk_ops_t o1_ops = {"o1heap", o1_malloc, o1_aligned, o1_realloc, NULL, o1_free,
                                o1_usable, o1_stats,  o1_walk,    o1_check,   o1_owns};

static hk_heap_t *o1_make(void *arena, size_t size, hk_status_t *status)
{
    uintptr_t base = ((uintptr_t)arena + (O1HEAP_ALIGNMENT - 1u)) & ~(uintptr_t)(O1HEAP_ALIGNMENT - 1u);
    size_t skip = (size_t)(base - (uintptr_t)arena);
    hk_status_t st = HK_OK;
    O1HeapInstance *o1 = NULL;
    o1_heap_t *h = NULL;
    if (arena == NULL) {
        st = HK_EINVAL;
    } else if (size < skip || (o1 = o1heapInit((void *)base, size - skip)) == NULL) {
        st = HK_ETOOSMALL;
    } else if ((h = calloc(1, sizeof(*h))) == NULL) {
        st = HK_EINVAL;
    }
    if (status != NULL) {
        *status = st;
    }
    if (st != HK_OK) {
        return NULL;
    }
    h->heap.ops = &o1_ops;
    h->o1 = o1;
    h->lo = arena;
    h->hi = (const uint8_t *)arena + size;
    /* o1heapMinArenaSize is the padded instance plus one smallest fragment of 2 * O1HEAP_ALIGNMENT. */
    h->first = (uint8_t *)base + (o1heapMinArenaSize - 2u * O1HEAP_ALIGNMENT);
    h->heap.stats.capacity = o1heapGetDiagnostics(o1).capacity;
    h->end = h->first + h->heap.stats.capacity;
    h->heap.stats.free_bytes = h->heap.stats.capacity;
    h->heap.stats.min_ever_free = h->heap.stats.capacity;
    return &h->heap;
}

static void o1_destroy(hk_heap_t *heap) { free(heap); }

const lab_alloc_t lab_peer_o1heap = {"o1heap", LAB_FAMILY_PEER, o1_make, o1_destroy, LAB_IN_ARENA, NULL};

#endif
