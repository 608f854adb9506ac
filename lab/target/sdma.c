/* SPDX-License-Identifier: MIT */
/*
 * SDMA as the fctma-pools seed configured it (sdma.h). Written from the
 * seed's description and its reference [2]; no code of either is copied.
 *
 * Layout: the control block at the start of the chunk, then the blocks. A
 * block is an 8-byte header {uint32 gross | LIVE, uint16 requested, uint16
 * check} and its payload; a free block keeps its free-list link in the
 * payload. Blocks never change size: with splitting and merging disabled a
 * block is carved once from the untouched middle of the chunk (the
 * wilderness) and then only moves between its owner and its class's list.
 * Lifetime prediction decides the end it is carved from: short-lived
 * classes from the bottom up, long-lived ones from the top down, so the
 * two never interleave (the point of [2]'s predictor).
 *
 * Classes: a request's gross size g (header included, in HK_ALIGN units)
 * has first-level index fl = floor(log2 g), found through LTB1 (the highest
 * set bit of a byte), and second-level index sl = the 3 bits below that
 * bit (the seed's bit-shifting form). malloc rounds g up to the start of
 * the next class unless it already is one, so every block in a list is at
 * least as large as any request that maps to it: a list is searched in
 * O(1). fl < 15, so the largest block is below 32 KB. LTB2 (the lowest set
 * bit of a byte) finds the first non-empty list above a class in the
 * bitmaps.
 *
 * malloc: the class's own list; else a new block from the wilderness; else
 * the first non-empty larger class, its block handed out whole (no split).
 * free: the block goes on top of its class's list (no merge). Both O(1).
 * Every pointer handed back is checked in constant time (inside the chunk,
 * aligned, not in the wilderness, its header's check and LIVE bit) and
 * misuse is reported through the heap's error hook, never acted on: the
 * lab's contract for its allocators.
 */
#include "sdma.h"

#include <stdint.h>
#include <string.h>

#define SDMA_FL 15u
#define SDMA_SL_LOG2 3u
#define SDMA_SL (1u << SDMA_SL_LOG2)
#define SDMA_HDR 8u
#define SDMA_LIVE 1u
#define SDMA_MAX_GROSS ((1u << SDMA_FL) - 1u)
/* A free block holds its link; payloads stay HK_ALIGN-aligned. */
#define SDMA_MIN_GROSS ((SDMA_HDR + sizeof(void *) + HK_ALIGN - 1u) & ~(size_t)(HK_ALIGN - 1u))

typedef struct sdma_hdr {
    uint32_t size_state;
    uint16_t requested;
    uint16_t check;
} sdma_hdr_t;

typedef struct sdma_free {
    struct sdma_free *next;
} sdma_free_t;

typedef struct sdma {
    hk_heap_t heap;
    uint8_t *first; /* first block's header */
    uint8_t *lo;    /* wilderness [lo, hi): short-lived blocks below, long-lived above */
    uint8_t *hi;
    uint8_t *end;
    uint32_t key;
    uint16_t fl_map;
    uint8_t sl_map[SDMA_FL];
    sdma_free_t *lists[SDMA_FL][SDMA_SL];
} sdma_t;

/* LTB1[x]: the highest set bit of x; LTB2[x]: the lowest (x > 0). In flash, as the seed put them. */
#define SDMA_R2(n) n, n
#define SDMA_R4(n) SDMA_R2(n), SDMA_R2(n)
#define SDMA_R8(n) SDMA_R4(n), SDMA_R4(n)
#define SDMA_R16(n) SDMA_R8(n), SDMA_R8(n)
#define SDMA_R32(n) SDMA_R16(n), SDMA_R16(n)
#define SDMA_R64(n) SDMA_R32(n), SDMA_R32(n)
#define SDMA_R128(n) SDMA_R64(n), SDMA_R64(n)
static const uint8_t LTB1[256] = {0, 0, 1, 1, SDMA_R4(2), SDMA_R8(3), SDMA_R16(4),
                                  SDMA_R32(5), SDMA_R64(6), SDMA_R128(7)};
static const uint8_t LTB2[256] = {
    0, 0, 1, 0, 2, 0, 1, 0, 3, 0, 1, 0, 2, 0, 1, 0, 4, 0, 1, 0, 2, 0, 1, 0, 3, 0, 1, 0, 2, 0, 1, 0,
    5, 0, 1, 0, 2, 0, 1, 0, 3, 0, 1, 0, 2, 0, 1, 0, 4, 0, 1, 0, 2, 0, 1, 0, 3, 0, 1, 0, 2, 0, 1, 0,
    6, 0, 1, 0, 2, 0, 1, 0, 3, 0, 1, 0, 2, 0, 1, 0, 4, 0, 1, 0, 2, 0, 1, 0, 3, 0, 1, 0, 2, 0, 1, 0,
    5, 0, 1, 0, 2, 0, 1, 0, 3, 0, 1, 0, 2, 0, 1, 0, 4, 0, 1, 0, 2, 0, 1, 0, 3, 0, 1, 0, 2, 0, 1, 0,
    7, 0, 1, 0, 2, 0, 1, 0, 3, 0, 1, 0, 2, 0, 1, 0, 4, 0, 1, 0, 2, 0, 1, 0, 3, 0, 1, 0, 2, 0, 1, 0,
    5, 0, 1, 0, 2, 0, 1, 0, 3, 0, 1, 0, 2, 0, 1, 0, 4, 0, 1, 0, 2, 0, 1, 0, 3, 0, 1, 0, 2, 0, 1, 0,
    6, 0, 1, 0, 2, 0, 1, 0, 3, 0, 1, 0, 2, 0, 1, 0, 4, 0, 1, 0, 2, 0, 1, 0, 3, 0, 1, 0, 2, 0, 1, 0,
    5, 0, 1, 0, 2, 0, 1, 0, 3, 0, 1, 0, 2, 0, 1, 0, 4, 0, 1, 0, 2, 0, 1, 0, 3, 0, 1, 0, 2, 0, 1, 0};

static unsigned msb15(uint32_t x) { return x >> 8 ? 8u + LTB1[x >> 8] : LTB1[x]; }
static unsigned lsb16(uint32_t x) { return x & 0xFFu ? LTB2[x & 0xFFu] : 8u + LTB2[x >> 8]; }

static void class_of(uint32_t gross, unsigned *fl, unsigned *sl)
{
    *fl = msb15(gross);
    *sl = (gross >> (*fl - SDMA_SL_LOG2)) & (SDMA_SL - 1u);
}

static sdma_hdr_t *hdr_of(const void *payload) { return (sdma_hdr_t *)((uintptr_t)payload - SDMA_HDR); }

static uint16_t hdr_check(const sdma_t *s, const sdma_hdr_t *h)
{
    uint32_t x = h->size_state ^ ((uint32_t)h->requested << 15) ^ (uint32_t)((uintptr_t)h >> 3) ^ s->key;
    return (uint16_t)(x ^ (x >> 16));
}

static void note_error(sdma_t *s, hk_error_t error, const void *ptr)
{
    s->heap.stats.error_count++;
    if (s->heap.hooks.on_error != NULL) {
        s->heap.hooks.on_error(s->heap.hooks.ctx, &s->heap, error, ptr);
    }
}

static void push(sdma_t *s, sdma_hdr_t *h)
{
    unsigned fl, sl;
    sdma_free_t *f = (sdma_free_t *)(void *)((uint8_t *)h + SDMA_HDR);
    class_of(h->size_state & ~SDMA_LIVE, &fl, &sl);
    f->next = s->lists[fl][sl];
    s->lists[fl][sl] = f;
    s->sl_map[fl] = (uint8_t)(s->sl_map[fl] | (1u << sl));
    s->fl_map = (uint16_t)(s->fl_map | (1u << fl));
}

static sdma_hdr_t *pop(sdma_t *s, unsigned fl, unsigned sl)
{
    sdma_free_t *f = s->lists[fl][sl];
    s->lists[fl][sl] = f->next;
    if (f->next == NULL) {
        s->sl_map[fl] = (uint8_t)(s->sl_map[fl] & ~(1u << sl));
        if (s->sl_map[fl] == 0) {
            s->fl_map = (uint16_t)(s->fl_map & ~(1u << fl));
        }
    }
    return hdr_of(f);
}

/* A new block of gross bytes from the wilderness, at the end its lifetime class says; NULL when it is too small. */
static sdma_hdr_t *carve(sdma_t *s, uint32_t gross, unsigned fl)
{
    sdma_hdr_t *h;
    if ((size_t)(s->hi - s->lo) < gross) {
        return NULL;
    }
    if (fl < 8u && (LAB_SDMA_PRED_MASK >> fl) & 1u) {
        h = (sdma_hdr_t *)(void *)s->lo;
        s->lo += gross;
    } else {
        s->hi -= gross;
        h = (sdma_hdr_t *)(void *)s->hi;
    }
    h->size_state = gross;
    return h;
}

/* The first non-empty list of a class above (fl, sl), its block whole; NULL when there is none. */
static sdma_hdr_t *larger(sdma_t *s, unsigned fl, unsigned sl)
{
    uint32_t above = sl + 1u < SDMA_SL ? s->sl_map[fl] & (0xFFu << (sl + 1u)) : 0u;
    if (above != 0) {
        return pop(s, fl, LTB2[above]);
    }
    above = s->fl_map & (0xFFFFu << (fl + 1u)) & 0xFFFFu;
    if (above == 0) {
        return NULL;
    }
    fl = lsb16(above);
    return pop(s, fl, LTB2[s->sl_map[fl]]);
}

void *lab_sdma_malloc(hk_heap_t *heap, size_t size)
{
    sdma_t *s = (sdma_t *)heap;
    hk_stats_t *st = &heap->stats;
    uint32_t gross, step;
    unsigned fl, sl;
    sdma_hdr_t *h;
    if (size > SDMA_MAX_GROSS - SDMA_HDR) {
        return NULL;
    }
    gross = (uint32_t)((size + SDMA_HDR + HK_ALIGN - 1u) & ~(size_t)(HK_ALIGN - 1u));
    gross = gross < SDMA_MIN_GROSS ? (uint32_t)SDMA_MIN_GROSS : gross;
    step = 1u << (msb15(gross) - SDMA_SL_LOG2);
    gross = (gross + step - 1u) & ~(step - 1u);
    if (gross > SDMA_MAX_GROSS) {
        return NULL;
    }
    class_of(gross, &fl, &sl);
    if (s->lists[fl][sl] != NULL) {
        h = pop(s, fl, sl);
    } else if ((h = carve(s, gross, fl)) == NULL && (h = larger(s, fl, sl)) == NULL) {
        return NULL;
    }
    gross = h->size_state;
    h->size_state = gross | SDMA_LIVE;
    h->requested = (uint16_t)size;
    h->check = hdr_check(s, h);
    st->free_bytes -= gross;
    if (st->free_bytes < st->min_ever_free) {
        st->min_ever_free = st->free_bytes;
    }
    st->alloc_count++;
    st->used_blocks++;
    st->used_requested += size;
    st->used_granted += gross - SDMA_HDR;
    return (uint8_t *)h + SDMA_HDR;
}

/* The live block at ptr, or NULL with the misuse reported. */
static sdma_hdr_t *live_block(sdma_t *s, const void *ptr)
{
    const uint8_t *p = ptr;
    sdma_hdr_t *h;
    if (p < s->first + SDMA_HDR || p >= s->end) {
        note_error(s, HK_ERR_FOREIGN_PTR, ptr);
        return NULL;
    }
    if (((uintptr_t)p & (HK_ALIGN - 1u)) != 0 || (p - SDMA_HDR >= s->lo && p - SDMA_HDR < s->hi)) {
        note_error(s, HK_ERR_INTERIOR_PTR, ptr);
        return NULL;
    }
    h = hdr_of(p);
    if (h->check != hdr_check(s, h)) {
        note_error(s, HK_ERR_INTERIOR_PTR, ptr);
        return NULL;
    }
    if (!(h->size_state & SDMA_LIVE)) {
        note_error(s, HK_ERR_DOUBLE_FREE, ptr);
        return NULL;
    }
    return h;
}

void lab_sdma_free(hk_heap_t *heap, void *ptr)
{
    sdma_t *s = (sdma_t *)heap;
    hk_stats_t *st = &heap->stats;
    sdma_hdr_t *h;
    uint32_t gross;
    if (ptr == NULL || (h = live_block(s, ptr)) == NULL) {
        return;
    }
    gross = h->size_state & ~SDMA_LIVE;
    st->used_requested -= h->requested;
    h->size_state = gross;
    h->check = hdr_check(s, h);
    push(s, h);
    st->free_bytes += gross;
    st->free_count++;
    st->used_blocks--;
    st->used_granted -= gross - SDMA_HDR;
}

/* No split: a block holds what fits its gross size, or the caller moves it. */
static void *sdma_resize(hk_heap_t *heap, void *ptr, size_t size)
{
    sdma_t *s = (sdma_t *)heap;
    sdma_hdr_t *h = live_block(s, ptr);
    if (h == NULL || size > (h->size_state & ~SDMA_LIVE) - SDMA_HDR) {
        return NULL;
    }
    heap->stats.used_requested += size - h->requested;
    h->requested = (uint16_t)size;
    h->check = hdr_check(s, h);
    return ptr;
}

static size_t sdma_usable(hk_heap_t *heap, const void *ptr)
{
    sdma_hdr_t *h = ptr != NULL ? live_block((sdma_t *)heap, ptr) : NULL;
    return h != NULL ? (h->size_state & ~SDMA_LIVE) - SDMA_HDR : 0u;
}

/* Blocks from first to lo, the wilderness as one free block, then hi to end; stops at a broken header. */
static void sdma_walk(hk_heap_t *heap, hk_walk_fn visit, void *ctx)
{
    sdma_t *s = (sdma_t *)heap;
    uint8_t *at = s->first;
    int past_lo = 0;
    while (at < s->end) {
        hk_block_info_t info;
        const sdma_hdr_t *h = (const sdma_hdr_t *)(void *)at;
        uint8_t *stop = past_lo ? s->end : s->lo;
        size_t gross;
        if (at == s->lo && !past_lo) {
            past_lo = 1;
            if (s->hi > s->lo) {
                info.start = at;
                info.size = (size_t)(s->hi - s->lo);
                info.payload = at + SDMA_HDR;
                info.usable = info.size >= SDMA_HDR ? info.size - SDMA_HDR : 0u;
                info.used = 0;
                visit(ctx, &info);
            }
            at = s->hi;
            continue;
        }
        gross = h->size_state & ~SDMA_LIVE;
        if (gross < SDMA_MIN_GROSS || gross % HK_ALIGN != 0 || gross > (size_t)(stop - at)) {
            return;
        }
        info.start = at;
        info.size = gross;
        info.payload = at + SDMA_HDR;
        info.usable = gross - SDMA_HDR;
        info.used = (h->size_state & SDMA_LIVE) != 0;
        visit(ctx, &info);
        at += gross;
    }
}

typedef struct sdma_tally {
    const uint8_t *expect;
    int gap;
    size_t used_blocks, used_granted, free_blocks, free_bytes, largest, smallest;
} sdma_tally_t;

static void tally_block(void *ctx, const hk_block_info_t *b)
{
    sdma_tally_t *t = ctx;
    t->gap |= (const uint8_t *)b->start != t->expect;
    t->expect = (const uint8_t *)b->start + b->size;
    if (b->used) {
        t->used_blocks++;
        t->used_granted += b->usable;
        return;
    }
    t->free_blocks++;
    t->free_bytes += b->size;
    t->largest = b->size > t->largest ? b->size : t->largest;
    t->smallest = t->smallest == 0 || b->size < t->smallest ? b->size : t->smallest;
}

static void tally(sdma_t *s, sdma_tally_t *t)
{
    memset(t, 0, sizeof(*t));
    t->expect = s->first;
    sdma_walk(&s->heap, tally_block, t);
}

static void sdma_stats(hk_heap_t *heap, hk_stats_t *out)
{
    sdma_tally_t t;
    tally((sdma_t *)heap, &t);
    *out = heap->stats;
    out->peak_used = out->capacity - out->min_ever_free;
    out->largest_free = t.largest;
    out->smallest_free = t.smallest;
    out->free_blocks = t.free_blocks;
}

static hk_check_t sdma_check(hk_heap_t *heap)
{
    sdma_t *s = (sdma_t *)heap;
    sdma_tally_t t;
    size_t listed = 0;
    unsigned fl, sl;
    if (s->first > s->lo || s->lo > s->hi || s->hi > s->end) {
        return HK_CHECK_CONTROL;
    }
    tally(s, &t);
    if (t.gap || t.expect != s->end) {
        return HK_CHECK_SIZE;
    }
    for (fl = 0; fl < SDMA_FL; fl++) {
        for (sl = 0; sl < SDMA_SL; sl++) {
            const sdma_free_t *f;
            unsigned want_fl, want_sl;
            if (((s->sl_map[fl] >> sl) & 1u) != (s->lists[fl][sl] != NULL) ||
                ((s->fl_map >> fl) & 1u) != (s->sl_map[fl] != 0)) {
                return HK_CHECK_LIST;
            }
            for (f = s->lists[fl][sl]; f != NULL; f = f->next) {
                const uint8_t *p = (const uint8_t *)f;
                const sdma_hdr_t *h = hdr_of(f);
                if (p < s->first + SDMA_HDR || p >= s->end || (p - SDMA_HDR >= s->lo && p - SDMA_HDR < s->hi)) {
                    return HK_CHECK_RANGE;
                }
                class_of(h->size_state & ~SDMA_LIVE, &want_fl, &want_sl);
                if ((h->size_state & SDMA_LIVE) || want_fl != fl || want_sl != sl || h->check != hdr_check(s, h)) {
                    return HK_CHECK_LIST;
                }
                if (++listed > t.free_blocks) {
                    return HK_CHECK_LINK;
                }
            }
        }
    }
    if (listed + (s->hi > s->lo) != t.free_blocks) {
        return HK_CHECK_COUNT;
    }
    if (t.used_blocks != heap->stats.used_blocks || t.used_granted != heap->stats.used_granted ||
        t.free_bytes != heap->stats.free_bytes) {
        return HK_CHECK_STATS;
    }
    return HK_CHECK_OK;
}

static int sdma_owns(const hk_heap_t *heap, const void *ptr)
{
    const sdma_t *s = (const sdma_t *)heap;
    return (const uint8_t *)ptr >= s->first && (const uint8_t *)ptr < s->end;
}

static const hk_ops_t sdma_ops = {"sdma",      lab_sdma_malloc, NULL,       NULL,       sdma_resize, lab_sdma_free,
                                  sdma_usable, sdma_stats,      sdma_walk, sdma_check, sdma_owns};

hk_heap_t *lab_sdma_init(void *chunk, size_t size, hk_status_t *status)
{
    uintptr_t base = (uintptr_t)chunk, first, end;
    sdma_t *s;
    if (chunk == NULL) {
        *status = HK_EINVAL;
        return NULL;
    }
    first = ((base + sizeof(sdma_t) + SDMA_HDR + HK_ALIGN - 1u) & ~(uintptr_t)(HK_ALIGN - 1u)) - SDMA_HDR;
    if (size < first - base + SDMA_MIN_GROSS) {
        *status = HK_ETOOSMALL;
        return NULL;
    }
    end = first + ((base + size - first) & ~(uintptr_t)(HK_ALIGN - 1u));
    s = (sdma_t *)chunk;
    memset(s, 0, sizeof(*s));
    s->heap.ops = &sdma_ops;
    s->first = s->lo = (uint8_t *)first;
    s->hi = s->end = (uint8_t *)end;
    /* The check mixes in the chunk: a header copied from another heap fails it. */
    s->key = (uint32_t)(base >> 4) * 2654435761u ^ (uint32_t)size;
    s->heap.stats.capacity = s->heap.stats.free_bytes = s->heap.stats.min_ever_free = end - first;
    *status = HK_OK;
    return &s->heap;
}
