/* SPDX-License-Identifier: MIT */
/*
 * bump: the fctma-pools seed's SimpleDMA, a pointer that only moves up.
 *
 * Algorithm: the arena after the control struct is one span; `top` splits it
 * into the blocks handed out so far (below) and the untouched tail (above).
 * malloc places a block at top and advances top. free marks the block dead
 * and reclaims nothing: its bytes stay consumed until hk_bump_reset() forgets
 * every block at once. The one exception is the block just below top, which
 * resize may grow into the tail or shrink back into it; any block may shrink
 * in place, and hk_realloc moves one that cannot grow.
 *
 * Time: malloc, aligned_alloc, free, resize, usable_size, reset and
 * get_stats are O(1) (level 2: O(block) for the patterns, reset O(span));
 * a realloc that moves is O(size) for the copy; walk and check are O(blocks).
 * Only the misuse path walks the blocks (to tell an interior pointer from a
 * corrupted header).
 *
 * Per-block overhead: an 8-byte header directly before the payload, plus
 * rounding of the gross size to HK_ALIGN (level 2: after HK_CANARY_ROOM more):
 *   uint32 size_state  gross size (multiple of HK_ALIGN) | LIVE
 *   uint16 slack       room - requested, room = gross - header (below
 *                      HK_ALIGN + 8 + HK_CANARY_ROOM: a shrink that would
 *                      leave more cuts the rest off as a dead block)
 *   uint16 check       hash of the two fields above, the header's address
 *                      and the heap's key (new_key), renewed at every
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
 * Hardening (HK_HARDENING, heapkit.h):
 *   0  nothing is checked on the way in: a pointer handed back is taken at
 *      its word (check() still validates everything).
 *   1  every pointer handed in, in constant time: inside the span
 *      (HK_ERR_FOREIGN_PTR), aligned, below top and not in a block's middle
 *      (HK_ERR_INTERIOR_PTR), a header whose check hash holds
 *      (HK_ERR_CORRUPT: any change to the header, such as an overflow of the
 *      block below running into it, is caught when the block is freed,
 *      resized or measured), live (HK_ERR_DOUBLE_FREE). malloc touches no
 *      block but the tail, which holds no state at this level. The key in
 *      the hash makes pointers from another heap, or from before a reset or
 *      re-init, fail their check instead of matching a stale header.
 *   2  level 1, plus a canary (HK_CANARY_BYTE) from the usable size (the
 *      requested size, at least 1) to the end of the block, checked on free
 *      and resize (reported, the call goes on); dead blocks and the tail
 *      hold HK_POISON_BYTE, checked when tail bytes are handed out (a damaged
 *      stretch is reported, becomes a dead block, and the request is placed
 *      after it) and by check().
 *   3  level 2; hk_check() runs around every uniform call (src/heap.c).
 *   check() returns hk_check_t codes: the span (CONTROL, RANGE, ALIGN), the
 *   header chain (SIZE), the counters (STATS), and at level 2 every canary
 *   (CANARY) and every dead block and the tail (POISON).
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
/* Level 2: bytes every block keeps after its usable size, so a canary always exists. */
#define BUMP_ROOM ((size_t)HK_CANARY_ROOM)
/* Smallest block handed out: malloc(0) still gets a unique, nonempty payload. */
#define BUMP_MIN_BLOCK ((BUMP_HDR + 1u + BUMP_ROOM + HK_ALIGN - 1u) & ~(size_t)(HK_ALIGN - 1u))
/* Block sizes live in 32 bits, so the span does too. */
#define BUMP_MAX_SPAN ((size_t)0xFFFFFFFFu & ~(size_t)(HK_ALIGN - 1u))
/* The largest slack a block keeps: a shrink that would leave more cuts the rest off. */
#define BUMP_MAX_SLACK (HK_ALIGN + BUMP_HDR + BUMP_ROOM)

HK_STATIC_ASSERT(sizeof(bump_hdr_t) == 8, bump_header_is_eight_bytes);
HK_STATIC_ASSERT(BUMP_HDR <= HK_ALIGN, bump_gap_holds_a_header);
HK_STATIC_ASSERT(BUMP_MAX_SLACK <= 0xFFFFu, bump_slack_fits_sixteen_bits);

struct hk_bump {
    hk_heap_t heap;
    uintptr_t first; /* header of the first block */
    uintptr_t top;   /* where the next block's header goes: start of the tail */
    uintptr_t end;   /* end of the span */
    uint32_t key;    /* new_key, renewed by init and reset, so older headers fail their check */
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

static bump_hdr_t *bump_hdr_at(uintptr_t at) { return (bump_hdr_t *)at; }

static void hdr_set(const hk_bump_t *h, uintptr_t at, size_t gross, int live, size_t slack)
{
    bump_hdr_t *b = bump_hdr_at(at);
    b->size_state = (uint32_t)gross | (live ? BUMP_LIVE : 0u);
    b->slack = (uint16_t)slack;
    b->check = hdr_hash(h, at, b->size_state, b->slack);
}

static size_t hdr_gross(const bump_hdr_t *b) { return b->size_state & ~(uint32_t)BUMP_LIVE; }
static int hdr_live(const bump_hdr_t *b) { return (b->size_state & BUMP_LIVE) != 0; }
/* Bytes after the header: the payload, its slack and (level 2) the canary. */
static size_t hdr_room(const bump_hdr_t *b) { return hdr_gross(b) - BUMP_HDR; }
static size_t hdr_requested(const bump_hdr_t *b) { return hdr_room(b) - b->slack; }

/* What usable_size says: the whole room, or at level 2 the requested size (at least 1: 0 reads as no block). */
static size_t usable_of(size_t room, size_t requested)
{
#if HK_CANARIES
    (void)room;
    return requested != 0 ? requested : 1u;
#else
    (void)requested;
    return room;
#endif
}

static size_t hdr_usable(const bump_hdr_t *b) { return usable_of(hdr_room(b), hdr_requested(b)); }

/* Header intact and its size plausible for a block below top. */
static int hdr_sane(const hk_bump_t *h, uintptr_t at)
{
    const bump_hdr_t *b = bump_hdr_at(at);
    size_t gross = hdr_gross(b);
    return b->check == hdr_hash(h, at, b->size_state, b->slack) && gross >= BUMP_HDR && gross % HK_ALIGN == 0 &&
           gross <= h->top - at;
}

/* Gross block size for a request, or 0 if no block could ever hold it. */
static size_t gross_for(size_t requested)
{
    if (requested > BUMP_MAX_SPAN - BUMP_HDR - BUMP_ROOM) {
        return 0;
    }
    return requested == 0 ? BUMP_MIN_BLOCK : hk_round_up(requested + BUMP_HDR + BUMP_ROOM, HK_ALIGN);
}

static size_t tail_bytes(const hk_bump_t *h) { return (size_t)(h->end - h->top); }

/* The tail is the only free block: keep free_bytes/free_blocks describing it. */
static void set_tail_stats(hk_bump_t *h)
{
    hk_stats_t *s = &h->heap.stats;
    s->free_bytes = tail_bytes(h);
    s->free_blocks = s->free_bytes != 0 ? 1u : 0u;
    hk_note_low(s);
}

/* ---- level-2 patterns (no-ops below) ---- */

/* Bytes [from, to) leave service (a dead block's payload, the tail): poisoned at level 2. */
static void poison(uintptr_t from, uintptr_t to)
{
#if HK_CANARIES
    hk_fill((void *)from, (const void *)to, HK_POISON_BYTE);
#else
    (void)from;
    (void)to;
#endif
}

static int poisoned(uintptr_t from, uintptr_t to)
{
#if HK_CANARIES
    return hk_filled((const void *)from, (const void *)to, HK_POISON_BYTE);
#else
    (void)from;
    (void)to;
    return 1;
#endif
}

/* A live block's canary: from its usable size to its end. */
static void set_canary(bump_hdr_t *b)
{
#if HK_CANARIES
    unsigned char *payload = (unsigned char *)(b + 1);
    hk_fill(payload + hdr_usable(b), payload + hdr_room(b), HK_CANARY_BYTE);
#else
    (void)b;
#endif
}

static int canary_intact(const bump_hdr_t *b)
{
#if HK_CANARIES
    const unsigned char *payload = (const unsigned char *)(b + 1);
    return hdr_usable(b) <= hdr_room(b) && hk_filled(payload + hdr_usable(b), payload + hdr_room(b), HK_CANARY_BYTE);
#else
    (void)b;
    return 1;
#endif
}

static void *bump_op_aligned(hk_heap_t *heap, size_t alignment, size_t size)
{
    return hk_bump_aligned_alloc((hk_bump_t *)heap, alignment, size);
}

HK_DEFINE_OPS(hk_bump, hk_bump_t, "bump", bump_op_aligned);

/*
 * A header key no earlier heap on this arena used: mixed from where the
 * blocks start and the key found in the control block (the previous heap's
 * there, after a reset or a re-init on the same arena). Held per heap.
 */
static uint32_t new_key(uintptr_t first, uint32_t previous)
{
    uint32_t h = (uint32_t)first ^ (uint32_t)(first >> 16 >> 16) ^ ((previous + 1u) * 0x9E3779B9u);
    h ^= h >> 16;
    h *= 0x85EBCA6Bu;
    h ^= h >> 13;
    h *= 0xC2B2AE35u;
    h ^= h >> 16;
    return h;
}

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
        hk_init_status(status, HK_ETOOBIG); /* the headers' 32-bit sizes: the whole arena or none of it */
        return NULL;
    }
    hk_heap_setup(&h->heap, (size_t)(end - first));
    h->first = first;
    h->top = first;
    h->end = end;
    h->key = new_key(first, h->key); /* h->key: what a heap before this one on the arena left there */
    poison(first, end);
    set_tail_stats(h);
    hk_init_status(status, HK_OK);
    return h;
}

hk_heap_t *hk_bump_heap(hk_bump_t *heap) { return hk_bind(&heap->heap, &hk_bump_ops); }

void hk_bump_reset(hk_bump_t *heap)
{
    hk_stats_t *s = &heap->heap.stats;
    heap->top = heap->first;
    heap->key = new_key(heap->first, heap->key);
    s->used_blocks = 0;
    s->used_granted = 0;
    s->used_requested = 0;
    poison(heap->first, heap->end);
    set_tail_stats(heap);
}

#if HK_CHECKS
/* Error path only: walk the blocks to tell a pointer into one from a broken header. */
static hk_error_t bump_classify_bad_header(const hk_bump_t *h, uintptr_t at)
{
    uintptr_t b = h->first;
    while (b < h->top && hdr_sane(h, b)) {
        uintptr_t next = b + hdr_gross(bump_hdr_at(b));
        if (at > b && at < next) {
            return HK_ERR_INTERIOR_PTR;
        }
        b = next;
    }
    return HK_ERR_CORRUPT;
}
#endif

/* The live block ptr names, or NULL after reporting why it names none (level 0: taken at its word). */
static bump_hdr_t *bump_lookup(hk_bump_t *h, const void *ptr)
{
    uintptr_t p = (uintptr_t)ptr;
    uintptr_t at = p - BUMP_HDR;
#if HK_CHECKS
    hk_error_t error;
    bump_hdr_t *b;

    if (p < h->first || p >= h->end) {
        error = HK_ERR_FOREIGN_PTR;
    } else if (p % HK_ALIGN != 0 || p < h->first + BUMP_HDR || at >= h->top) {
        error = HK_ERR_INTERIOR_PTR;
    } else if (!hdr_sane(h, at)) {
        error = bump_classify_bad_header(h, at);
    } else {
        b = bump_hdr_at(at);
        if (!hdr_live(b)) {
            error = HK_ERR_DOUBLE_FREE;
        } else if (b->slack > hdr_room(b)) {
            error = HK_ERR_CORRUPT;
        } else {
            return b;
        }
    }
    hk_report(&h->heap, error, ptr);
    return NULL;
#else
    (void)h;
    return bump_hdr_at(at);
#endif
}

/* Level 2: report a live block whose canary was overwritten (the call goes on). */
static void check_canary(hk_bump_t *h, const bump_hdr_t *b)
{
    if (!canary_intact(b)) {
        hk_report(&h->heap, HK_ERR_CORRUPT, b + 1);
    }
}

/*
 * Level 2: the tail bytes [top, to) about to be handed out must still hold
 * their poison. A stretch that does not (written past the last block, or by a
 * stray pointer) is reported and becomes a dead block, poisoned afresh, so
 * nothing that may still write there is handed out; 0 tells the caller to
 * place its block after it.
 */
static int tail_intact(hk_bump_t *h, uintptr_t to)
{
    if (poisoned(h->top, to)) {
        return 1;
    }
    hk_report(&h->heap, HK_ERR_CORRUPT, (const void *)(h->top + BUMP_HDR));
    hdr_set(h, h->top, (size_t)(to - h->top), 0, 0);
    poison(h->top + BUMP_HDR, to);
    h->top = to;
    set_tail_stats(h);
    return 0;
}

/*
 * Make a live block of gross size at `at` (top, or past a filler) and move
 * top past it. The tail's bytes are accounted by set_tail_stats, hence the
 * zero gross passed to the shared counter helpers here and below.
 */
static void *place(hk_bump_t *h, uintptr_t at, size_t size, size_t gross)
{
    bump_hdr_t *b = bump_hdr_at(at);
    hdr_set(h, at, gross, 1, gross - BUMP_HDR - size);
    h->top = at + gross;
    set_canary(b);
    hk_count_alloc(&h->heap, size, hdr_usable(b), 0);
    set_tail_stats(h);
    return (void *)(at + BUMP_HDR);
}

void *hk_bump_malloc(hk_bump_t *heap, size_t size)
{
    size_t gross = gross_for(size);
    int attempt;
    for (attempt = 0; attempt < 2 && gross != 0 && gross <= tail_bytes(heap); attempt++) {
        if (tail_intact(heap, heap->top + gross)) {
            return place(heap, heap->top, size, gross);
        }
    }
    return NULL;
}

void *hk_bump_aligned_alloc(hk_bump_t *heap, size_t alignment, size_t size)
{
    uintptr_t want;
    uintptr_t at;
    size_t gross;
    int attempt;

    if (!hk_is_pow2(alignment)) {
        return NULL;
    }
    if (alignment <= HK_ALIGN) {
        return hk_bump_malloc(heap, size);
    }
    gross = gross_for(size);
    for (attempt = 0; attempt < 2; attempt++) {
        want = heap->top + BUMP_HDR;
        if (gross == 0 || alignment - 1u > UINTPTR_MAX - want) {
            return NULL;
        }
        at = hk_align_up_uptr(want, alignment) - BUMP_HDR;
        if (at > heap->end || gross > heap->end - at) {
            return NULL;
        }
        if (tail_intact(heap, at + gross)) {
            if (at != heap->top) {
                /* Both ends sit HK_ALIGN-aligned minus a header, so the gap holds at least a header. */
                hdr_set(heap, heap->top, (size_t)(at - heap->top), 0, 0);
            }
            return place(heap, at, size, gross);
        }
    }
    return NULL;
}

void hk_bump_free(hk_bump_t *heap, void *ptr)
{
    bump_hdr_t *b;
    if (ptr == NULL) {
        return;
    }
    b = bump_lookup(heap, ptr);
    if (b == NULL) {
        return;
    }
    check_canary(heap, b);
    /* The bytes stay consumed: free_bytes does not grow. */
    hk_count_free(&heap->heap, hdr_requested(b), hdr_usable(b), 0);
    hdr_set(heap, (uintptr_t)b, hdr_gross(b), 0, 0);
    poison((uintptr_t)(b + 1), (uintptr_t)b + hdr_gross(b));
}

void *hk_bump_resize(hk_bump_t *heap, void *ptr, size_t size)
{
    bump_hdr_t *b;
    uintptr_t at;
    size_t old_gross;
    size_t new_gross;
    size_t old_requested;
    size_t old_usable;

    b = bump_lookup(heap, ptr);
    if (b == NULL) {
        return NULL;
    }
    check_canary(heap, b);
    at = (uintptr_t)b;
    old_gross = hdr_gross(b);
    old_requested = hdr_requested(b);
    old_usable = hdr_usable(b);
    new_gross = gross_for(size);
    if (new_gross == 0) {
        return NULL; /* no block is that large: hk_realloc's malloc fails too */
    }
    if (at + old_gross == heap->top && new_gross <= old_gross + tail_bytes(heap)) {
        /* The last block grows into the tail or gives bytes back to it. */
        if (new_gross > old_gross && !poisoned(heap->top, at + new_gross)) {
            hk_report(&heap->heap, HK_ERR_CORRUPT, (const void *)heap->top); /* written past the block: reported */
        }
        if (new_gross < old_gross) {
            poison(at + new_gross, heap->top);
        }
        heap->top = at + new_gross;
    } else if (new_gross < old_gross) {
        /* Cut the rest off as a dead block so the slack stays small. */
        hdr_set(heap, at + new_gross, old_gross - new_gross, 0, 0);
        poison(at + new_gross + BUMP_HDR, at + old_gross);
        heap->heap.stats.split_count++;
    } else if (new_gross > old_gross) {
        return NULL; /* cannot grow in place: hk_realloc moves it */
    }
    hdr_set(heap, at, new_gross, 1, new_gross - BUMP_HDR - size);
    set_canary(b);
    hk_count_resize(&heap->heap, old_requested, old_usable, 0, size, hdr_usable(b), 0);
    set_tail_stats(heap);
    return ptr;
}

size_t hk_bump_usable_size(hk_bump_t *heap, const void *ptr)
{
    const bump_hdr_t *b;
    if (ptr == NULL) {
        return 0;
    }
    b = bump_lookup(heap, ptr);
    return b != NULL ? hdr_usable(b) : 0;
}

void hk_bump_get_stats(hk_bump_t *heap, hk_stats_t *out)
{
    hk_stats_read(&heap->heap, out);
    out->largest_free = tail_bytes(heap);
    out->smallest_free = tail_bytes(heap);
}

void hk_bump_walk(hk_bump_t *heap, hk_walk_fn visit, void *ctx)
{
    hk_block_info_t info;
    uintptr_t at = heap->first;
    /* A broken header ends the chain: its size cannot be trusted to find the next one. */
    while (at < heap->top && hdr_sane(heap, at)) {
        const bump_hdr_t *b = bump_hdr_at(at);
        info.start = b;
        info.size = hdr_gross(b);
        info.payload = (const void *)(at + BUMP_HDR);
        info.usable = hdr_live(b) ? hdr_usable(b) : hdr_room(b);
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

hk_check_t hk_bump_check(hk_bump_t *heap)
{
    const hk_stats_t *s = &heap->heap.stats;
    uintptr_t at = heap->first;
    size_t used = 0;
    size_t granted = 0;
    size_t requested = 0;

    if (heap->first > heap->top || heap->top > heap->end || s->capacity != heap->end - heap->first) {
        return HK_CHECK_CONTROL;
    }
    if ((heap->top - heap->first) % HK_ALIGN != 0) {
        return HK_CHECK_ALIGN;
    }
    while (at < heap->top) {
        const bump_hdr_t *b = bump_hdr_at(at);
        if (!hdr_sane(heap, at)) {
            return HK_CHECK_SIZE;
        }
        if (hdr_live(b)) {
            if (b->slack > hdr_room(b)) {
                return HK_CHECK_SIZE;
            }
            if (!canary_intact(b)) {
                return HK_CHECK_CANARY;
            }
            used++;
            granted += hdr_usable(b);
            requested += hdr_requested(b);
        } else if (!poisoned(at + BUMP_HDR, at + hdr_gross(b))) {
            return HK_CHECK_POISON;
        }
        at += hdr_gross(b);
    }
    if (!poisoned(heap->top, heap->end)) {
        return HK_CHECK_POISON;
    }
    if (used != s->used_blocks || granted != s->used_granted || requested != s->used_requested ||
        s->free_bytes != tail_bytes(heap) || s->free_blocks != (s->free_bytes != 0 ? 1u : 0u) ||
        s->min_ever_free > s->free_bytes) {
        return HK_CHECK_STATS;
    }
    return HK_CHECK_OK;
}

int hk_bump_owns(const hk_bump_t *heap, const void *ptr)
{
    return (uintptr_t)ptr >= heap->first && (uintptr_t)ptr < heap->end;
}
