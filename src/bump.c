/*
 * bump: the fctma-pools seed's SimpleDMA, a pointer that only moves up.
 *
 * Algorithm: the arena after the control struct is one span; `top` splits it
 * into the blocks handed out so far (below) and the untouched tail (above).
 * malloc places a block at top and advances top. free marks the block dead
 * and reclaims nothing: its bytes stay consumed until hk_bump_reset() forgets
 * every block at once. The one exception is the block just below top, which
 * realloc may grow into the tail or shrink back into it.
 *
 * Time: malloc, aligned_alloc, free, realloc in place, usable_size, reset and
 * get_stats are O(1); realloc that moves is O(size) for the copy; walk and
 * check are O(blocks). Only the misuse path walks the blocks (to tell an
 * interior pointer from a corrupted header).
 *
 * Per-block overhead: an 8-byte header directly before the payload, plus
 * rounding of the gross size to HK_ALIGN:
 *   uint32 size_state  gross size (multiple of HK_ALIGN) | LIVE
 *   uint16 slack       usable - requested (below HK_ALIGN + 8: a shrink that
 *                      would leave more cuts the rest off as a dead block)
 *   uint16 check       hash of the two fields above, the header's address
 *                      and the heap's key (hk_heap_key), renewed at every
 *                      init and reset
 * Gaps left by aligned_alloc are dead filler blocks, so the chain from the
 * first block to top stays walkable.
 *
 * Statistics: free_bytes and free_blocks describe only the untouched tail,
 * the memory a request can still get. A dead block counts as overhead: at
 * free the used_* counters drop but free_bytes does not grow, so
 *   capacity = free_bytes + gross(used blocks) + gross(dead blocks).
 * largest_free = smallest_free = the tail. The walk visits the blocks in
 * address order, dead ones with used = 0, then the tail as one more used = 0
 * block. hk_bump_reset() zeroes the live counters and keeps the cumulative
 * ones (alloc/free/realloc/fail/error counts, peak_used, min_ever_free).
 *
 * Misuse detected: foreign pointers (outside the span), interior pointers
 * (misaligned, inside a block, or in the untouched tail), double free (a dead
 * block), corrupted headers (check hash). The key in the hash makes
 * pointers from another heap, or from before a reset or re-init, fail their
 * check instead of matching a stale header.
 */
#include "heapkit/bump.h"

#include "hk_internal.h"

typedef struct bump_hdr {
    uint32_t size_state;
    uint16_t slack;
    uint16_t check;
} bump_hdr_t;

#define BUMP_HDR ((size_t)sizeof(bump_hdr_t))
#define BUMP_LIVE 1u
/* Smallest block handed out: malloc(0) still gets a unique, nonempty payload. */
#define BUMP_MIN_BLOCK ((BUMP_HDR + 1u + HK_ALIGN - 1u) & ~(size_t)(HK_ALIGN - 1u))
/* Block sizes live in 32 bits, so the span does too. */
#define BUMP_MAX_SPAN ((size_t)0xFFFFFFFFu & ~(size_t)(HK_ALIGN - 1u))

HK_STATIC_ASSERT(sizeof(bump_hdr_t) == 8, bump_header_is_eight_bytes);
HK_STATIC_ASSERT(BUMP_HDR <= HK_ALIGN, bump_gap_holds_a_header);

struct hk_bump {
    hk_heap_t heap;
    uintptr_t first; /* header of the first block */
    uintptr_t top;   /* where the next block's header goes: start of the tail */
    uintptr_t end;   /* end of the span */
    uint32_t key;    /* hk_heap_key, renewed by reset, so older headers fail their check */
};

static uint16_t hdr_hash(const hk_bump_t *h, uintptr_t at, uint32_t size_state, uint16_t slack)
{
    uint32_t x = size_state ^ ((uint32_t)slack << 13) ^ (uint32_t)(at >> 3) ^ h->key;
    x ^= x >> 16;
    x *= 0x7FEB352Du;
    x ^= x >> 15;
    x *= 0x846CA68Bu;
    x ^= x >> 16;
    return (uint16_t)x;
}

static bump_hdr_t *hdr_at(uintptr_t at) { return (bump_hdr_t *)at; }

static void hdr_set(const hk_bump_t *h, uintptr_t at, size_t gross, int live, size_t slack)
{
    bump_hdr_t *b = hdr_at(at);
    b->size_state = (uint32_t)gross | (live ? BUMP_LIVE : 0u);
    b->slack = (uint16_t)slack;
    b->check = hdr_hash(h, at, b->size_state, b->slack);
}

static size_t hdr_gross(const bump_hdr_t *b) { return b->size_state & ~(uint32_t)BUMP_LIVE; }
static int hdr_live(const bump_hdr_t *b) { return (b->size_state & BUMP_LIVE) != 0; }
static size_t hdr_usable(const bump_hdr_t *b) { return hdr_gross(b) - BUMP_HDR; }
static size_t hdr_requested(const bump_hdr_t *b) { return hdr_usable(b) - b->slack; }

/* Header intact and its size plausible for a block below top. */
static int hdr_sane(const hk_bump_t *h, uintptr_t at)
{
    const bump_hdr_t *b = hdr_at(at);
    size_t gross = hdr_gross(b);
    return b->check == hdr_hash(h, at, b->size_state, b->slack) && gross >= BUMP_HDR && gross % HK_ALIGN == 0 &&
           gross <= h->top - at;
}

/* Gross block size for a request, or 0 if no block could ever hold it. */
static size_t gross_for(size_t requested)
{
    if (requested > BUMP_MAX_SPAN - BUMP_HDR) {
        return 0;
    }
    return requested == 0 ? BUMP_MIN_BLOCK : hk_round_up(requested + BUMP_HDR, HK_ALIGN);
}

static size_t tail_bytes(const hk_bump_t *h) { return (size_t)(h->end - h->top); }

/* The tail is the only free block: keep free_bytes/free_blocks describing it. */
static void set_tail_stats(hk_bump_t *h)
{
    hk_stats_t *s = &h->heap.stats;
    s->free_bytes = tail_bytes(h);
    s->free_blocks = s->free_bytes != 0 ? 1u : 0u;
    if (s->free_bytes < s->min_ever_free) {
        s->min_ever_free = s->free_bytes;
    }
}

static void *bump_op_aligned(hk_heap_t *heap, size_t alignment, size_t size)
{
    return hk_bump_aligned_alloc((hk_bump_t *)heap, alignment, size);
}

HK_DEFINE_OPS_REALLOC(hk_bump, hk_bump_t, "bump", bump_op_aligned);

hk_bump_t *hk_bump_init(void *arena, size_t size, hk_status_t *status)
{
    uintptr_t lo = (uintptr_t)arena;
    uintptr_t hi;
    uintptr_t first;
    uintptr_t end;
    hk_bump_t *h;

    if (arena == NULL) {
        hk_init_status(status, HK_EINVAL);
        return NULL;
    }
    size = hk_arena_room(lo, size);
    /* Too small for the control struct, alignment padding and one block: refuse before any sum can wrap. */
    if (size < sizeof(hk_bump_t) + 2u * HK_ALIGN + BUMP_MIN_BLOCK) {
        hk_init_status(status, HK_ETOOSMALL);
        return NULL;
    }
    hi = lo + size;
    h = (hk_bump_t *)hk_align_up_uptr(lo, HK_ALIGN);
    first = hk_align_up_uptr((uintptr_t)h + sizeof(hk_bump_t) + BUMP_HDR, HK_ALIGN) - BUMP_HDR;
    /* The span ends where a next header would sit, so every gross size is a multiple of HK_ALIGN. */
    end = hk_align_down_uptr(hi - (HK_ALIGN - BUMP_HDR), HK_ALIGN) + (HK_ALIGN - BUMP_HDR);
    if (end < first || end - first < BUMP_MIN_BLOCK) {
        hk_init_status(status, HK_ETOOSMALL);
        return NULL;
    }
    if (end - first > BUMP_MAX_SPAN) {
        end = first + BUMP_MAX_SPAN;
    }
    hk_heap_setup(&h->heap, &hk_bump_ops, (size_t)(end - first));
    h->first = first;
    h->top = first;
    h->end = end;
    h->key = hk_heap_key((void *)first);
    set_tail_stats(h);
    hk_init_status(status, HK_OK);
    return h;
}

hk_heap_t *hk_bump_heap(hk_bump_t *heap) { return &heap->heap; }

void hk_bump_reset(hk_bump_t *heap)
{
    hk_stats_t *s = &heap->heap.stats;
    heap->top = heap->first;
    heap->key = hk_heap_key((void *)heap->first);
    s->used_blocks = 0;
    s->used_granted = 0;
    s->used_requested = 0;
    set_tail_stats(heap);
}

/* Error path only: walk the blocks to tell a pointer into one from a broken header. */
static hk_error_t classify_bad_header(const hk_bump_t *h, uintptr_t at)
{
    uintptr_t b = h->first;
    while (b < h->top && hdr_sane(h, b)) {
        uintptr_t next = b + hdr_gross(hdr_at(b));
        if (at > b && at < next) {
            return HK_ERR_INTERIOR_PTR;
        }
        b = next;
    }
    return HK_ERR_CORRUPT;
}

/* The live block ptr names, or NULL after reporting why it names none. */
static bump_hdr_t *lookup(hk_bump_t *h, const void *ptr)
{
    uintptr_t p = (uintptr_t)ptr;
    uintptr_t at = p - BUMP_HDR;
    hk_error_t error;
    bump_hdr_t *b;

    if (p < h->first || p >= h->end) {
        error = HK_ERR_FOREIGN_PTR;
    } else if (p % HK_ALIGN != 0 || p < h->first + BUMP_HDR || at >= h->top) {
        error = HK_ERR_INTERIOR_PTR;
    } else if (!hdr_sane(h, at)) {
        error = classify_bad_header(h, at);
    } else {
        b = hdr_at(at);
        if (!hdr_live(b)) {
            error = HK_ERR_DOUBLE_FREE;
        } else if (b->slack > hdr_usable(b)) {
            error = HK_ERR_CORRUPT;
        } else {
            return b;
        }
    }
    hk_report(&h->heap, error, ptr);
    return NULL;
}

/*
 * Make a live block of gross size at `at` (top, or past a filler) and move
 * top past it. The tail's bytes are accounted by set_tail_stats, hence the
 * zero gross passed to the shared counter helpers here and below.
 */
static void *place(hk_bump_t *h, uintptr_t at, size_t size, size_t gross)
{
    hdr_set(h, at, gross, 1, gross - BUMP_HDR - size);
    h->top = at + gross;
    hk_count_alloc(&h->heap, size, gross - BUMP_HDR, 0);
    set_tail_stats(h);
    return (void *)(at + BUMP_HDR);
}

void *hk_bump_malloc(hk_bump_t *heap, size_t size)
{
    size_t gross = gross_for(size);
    if (gross == 0 || gross > tail_bytes(heap)) {
        return hk_fail(&heap->heap);
    }
    return place(heap, heap->top, size, gross);
}

void *hk_bump_aligned_alloc(hk_bump_t *heap, size_t alignment, size_t size)
{
    uintptr_t want = heap->top + BUMP_HDR;
    uintptr_t at;
    size_t gross;

    if (!hk_is_pow2(alignment)) {
        return hk_fail(&heap->heap);
    }
    if (alignment <= HK_ALIGN) {
        return hk_bump_malloc(heap, size);
    }
    gross = gross_for(size);
    if (gross == 0 || alignment - 1u > UINTPTR_MAX - want) {
        return hk_fail(&heap->heap);
    }
    at = hk_align_up_uptr(want, alignment) - BUMP_HDR;
    if (at > heap->end || gross > heap->end - at) {
        return hk_fail(&heap->heap);
    }
    if (at != heap->top) {
        /* Both ends sit HK_ALIGN-aligned minus a header, so the gap holds at least a header. */
        hdr_set(heap, heap->top, (size_t)(at - heap->top), 0, 0);
    }
    return place(heap, at, size, gross);
}

void hk_bump_free(hk_bump_t *heap, void *ptr)
{
    bump_hdr_t *b;
    if (ptr == NULL) {
        return;
    }
    b = lookup(heap, ptr);
    if (b == NULL) {
        return;
    }
    /* The bytes stay consumed: free_bytes does not grow. */
    hk_count_free(&heap->heap, hdr_requested(b), hdr_usable(b), 0);
    hdr_set(heap, (uintptr_t)b, hdr_gross(b), 0, 0);
}

void *hk_bump_realloc(hk_bump_t *heap, void *ptr, size_t size)
{
    bump_hdr_t *b;
    uintptr_t at;
    size_t old_gross;
    size_t new_gross;

    if (ptr == NULL) {
        return hk_bump_malloc(heap, size);
    }
    if (size == 0) {
        hk_bump_free(heap, ptr);
        return NULL;
    }
    b = lookup(heap, ptr);
    if (b == NULL) {
        return NULL;
    }
    at = (uintptr_t)b;
    old_gross = hdr_gross(b);
    new_gross = gross_for(size);
    if (new_gross == 0) {
        return hk_fail(&heap->heap);
    }
    if (at + old_gross == heap->top && new_gross <= old_gross + tail_bytes(heap)) {
        heap->top = at + new_gross; /* the last block grows into the tail or gives bytes back to it */
    } else if (new_gross < old_gross) {
        /* Cut the rest off as a dead block so the slack stays small. */
        hdr_set(heap, at + new_gross, old_gross - new_gross, 0, 0);
        heap->heap.stats.split_count++;
    } else if (new_gross > old_gross) {
        void *moved = hk_realloc_by_move(&heap->heap, ptr, hdr_usable(b), size);
        if (moved != NULL) {
            heap->heap.stats.realloc_count++;
        }
        return moved;
    }
    hk_count_resize(&heap->heap, hdr_requested(b), hdr_usable(b), 0, size, new_gross - BUMP_HDR, 0);
    hdr_set(heap, at, new_gross, 1, new_gross - BUMP_HDR - size);
    heap->heap.stats.realloc_count++;
    set_tail_stats(heap);
    return ptr;
}

size_t hk_bump_usable_size(hk_bump_t *heap, const void *ptr)
{
    const bump_hdr_t *b;
    if (ptr == NULL) {
        return 0;
    }
    b = lookup(heap, ptr);
    return b != NULL ? hdr_usable(b) : 0;
}

void hk_bump_get_stats(hk_bump_t *heap, hk_stats_t *out)
{
    *out = heap->heap.stats;
    out->largest_free = tail_bytes(heap);
    out->smallest_free = tail_bytes(heap);
}

void hk_bump_walk(hk_bump_t *heap, hk_walk_fn visit, void *ctx)
{
    hk_block_info_t info;
    uintptr_t at = heap->first;
    /* A broken header ends the chain: its size cannot be trusted to find the next one. */
    while (at < heap->top && hdr_sane(heap, at)) {
        const bump_hdr_t *b = hdr_at(at);
        info.start = b;
        info.size = hdr_gross(b);
        info.payload = (const void *)(at + BUMP_HDR);
        info.usable = hdr_usable(b);
        info.used = hdr_live(b);
        visit(ctx, &info);
        at += info.size;
    }
    if (heap->top < heap->end) {
        info.start = (const void *)heap->top;
        info.size = tail_bytes(heap);
        info.payload = (const void *)(heap->top + BUMP_HDR);
        info.usable = info.size - BUMP_HDR;
        info.used = 0;
        visit(ctx, &info);
    }
}

int hk_bump_check(hk_bump_t *heap)
{
    const hk_stats_t *s = &heap->heap.stats;
    uintptr_t at = heap->first;
    size_t used = 0;
    size_t granted = 0;
    size_t requested = 0;

    if (heap->first > heap->top || heap->top > heap->end || s->capacity != heap->end - heap->first ||
        (heap->top - heap->first) % HK_ALIGN != 0) {
        return 1;
    }
    while (at < heap->top) {
        const bump_hdr_t *b = hdr_at(at);
        if (!hdr_sane(heap, at)) {
            return 2;
        }
        if (hdr_live(b)) {
            if (b->slack > hdr_usable(b)) {
                return 3;
            }
            used++;
            granted += hdr_usable(b);
            requested += hdr_requested(b);
        }
        at += hdr_gross(b);
    }
    if (used != s->used_blocks || granted != s->used_granted || requested != s->used_requested) {
        return 4;
    }
    if (s->free_bytes != tail_bytes(heap) || s->free_blocks != (s->free_bytes != 0 ? 1u : 0u)) {
        return 5;
    }
    if (s->min_ever_free > s->free_bytes || s->peak_used < s->used_granted) {
        return 6;
    }
    return 0;
}

int hk_bump_owns(const hk_bump_t *heap, const void *ptr)
{
    return (uintptr_t)ptr >= heap->first && (uintptr_t)ptr < heap->end;
}
