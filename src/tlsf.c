/* SPDX-License-Identifier: MIT */
/*
 * tlsf: two-level segregated fit (Masmano, Ripoll, Crespo, Real, 2004).
 *
 * Data structure. Free blocks sit on doubly linked lists indexed by two
 * levels: the first level is the power of two below the block size, the
 * second splits [2^f, 2^(f+1)) into 2^SL equal ranges (SL is
 * HK_TLSF_SL_LOG2, fixed at compile time as in every production TLSF: the
 * shifts and masks below are then constants). Sizes below 2^SMALL_SHIFT
 * (SMALL_SHIFT = SL + log2 HK_ALIGN) map linearly into the first level 0.
 * One formula covers both (list_of): with f = log2(size | 2^SMALL_SHIFT),
 * the flat list number is
 *
 *   ((f - SMALL_SHIFT) << SL) + (size >> (f - SL))
 *
 * whose high bits are the first level and low SL bits the second. One
 * bit per list, in fl_bitmap (which first levels have a free block) and
 * sl_bitmap[fl] (which of their lists), so
 *
 *   malloc: one 32-bit bit scan maps the request to its list; if the head of
 *           that list fits it is taken (no rounding waste), else at most two
 *           find-first-set instructions find the first list above whose
 *           every block fits; the block is split and the rest goes straight
 *           on its list (its right neighbour is used: TLSF never leaves two
 *           free blocks side by side);
 *   free:   merge with the free physical neighbours (boundary tags, see
 *           tagged.h: each neighbour is unlinked from its list) and push
 *           the result on its list.
 *
 * Both are O(1): no loop depends on the number of blocks or the heap size.
 *
 * Overhead: the tag per used block (tagged.h: 8 bytes, or 4 with
 * HK_TAG_WIDE 0 for heaps up to 256 KiB; 4 more at HK_HARDENING >= 2, which
 * also keeps 4 bytes of canary room); blocks are at least HK_TAG_MIN_BLOCK;
 * the control block holds one list head per (first, second) level, sized
 * at init for the arena at hand.
 *
 * Misuse detected (HK_HARDENING >= 1), all in constant time: foreign
 * pointers (range), interior pointers (alignment, and a block that fails
 * its structural check is told from one by a walk on the error path
 * only), double free (the tag says free), and damage: a block handed to
 * free must agree with both neighbours on its size, a block taken off a
 * list with its right neighbour, and the links followed must point inside
 * the span at free blocks that link back. Damage is reported and the
 * damaged block is left out of service: a damaged neighbour is not merged,
 * a damaged list is dropped whole (its blocks are lost, never handed out);
 * a right neighbour whose copy of a freed block's size alone is wrong is
 * mended (tagged.h). Level 2 adds the canary and the poison (tagged.h).
 *
 * Statistics kept per operation: free bytes and their low-water mark, the
 * alloc, free and merge counts, and the splits other than an allocation's
 * own (an allocation counts the blocks it hands out whole, the cheaper
 * branch). get_stats derives the rest (the splits, and the free blocks
 * from those counts, see free_blocks()), and scans the largest and the
 * smallest non-empty list for the exact largest and smallest free block:
 * O(length of those lists).
 */
#include "heapkit/tlsf.h"

#include "tagged.h"

HK_STATIC_ASSERT(HK_TLSF_SL_LOG2 >= 1 && HK_TLSF_SL_LOG2 <= 5, sl_log2_in_range);

#define SL HK_TLSF_SL_LOG2
#define SL_MASK ((1u << SL) - 1u)
#define ALIGN_LOG2 (HK_ALIGN == 16 ? 4u : 3u)
/* Sizes below 2^SMALL_SHIFT share the first first level, HK_ALIGN bytes a list. */
#define SMALL_SHIFT (SL + ALIGN_LOG2)
/*
 * Every block is smaller than 2^SIZE_LOG2: the tag's size field bounds it
 * (tagged.h), and 32-bit arithmetic indexes the lists, so a wide-tag span
 * is cut to 2 GiB.
 */
#define SIZE_LOG2 (HK_TAG_WIDE ? 31u : 15u + ALIGN_LOG2)
#define MAX_SPAN (HK_TAG_MAX_BLOCK < ((size_t)1 << SIZE_LOG2) - HK_ALIGN ? HK_TAG_MAX_BLOCK : ((size_t)1 << SIZE_LOG2) - HK_ALIGN)
/* First levels: those of sizes up to the largest block, and one spare that stays empty (see pop_fit). */
#define FL_COUNT (SIZE_LOG2 - SMALL_SHIFT + 2u)
#define NO_LIST (~0u)

struct hk_tlsf {
    hk_heap_t heap;
    hk_tag_span_t span;
    size_t span_bytes;              /* sentinel - first: one compare checks a block's range */
    size_t span_units;              /* span_bytes / HK_ALIGN: one compare checks a link's range and alignment */
    size_t max_request;             /* the largest request whose block fits the span */
    size_t whole_takes;             /* blocks malloc handed out unsplit (see free_blocks) */
    unsigned lists;                 /* lists this arena can use: its first levels << SL */
    uint32_t fl_bitmap;             /* bit fl: some list of first level fl is non-empty */
    uint32_t sl_bitmap[FL_COUNT];   /* bit sl of [fl]: list (fl, sl) is non-empty */
    hk_tag_t *heads[];              /* the list heads, `lists` of them, sized at init */
};

HK_STATIC_ASSERT(FL_COUNT <= 32u, first_levels_fit_the_bitmap);

/*
 * A block size's list in two steps: the shift that takes a size of its
 * first level to its second level, f - SL, then the flat list number (first
 * level << SL | second level). pop_fit needs the shift itself (a size with
 * bits below it is past its list's first size, so a block on that list may
 * be too small); the other callers want only the number, and at -Os share
 * one out-of-line list_of, a plain integer in and out.
 */
HK_HOT unsigned list_shift(size_t size)
{
    HK_ASSERT(size < ((size_t)1 << SIZE_LOG2));
    return hk_fls32((uint32_t)size | (1u << SMALL_SHIFT)) - SL;
}

HK_HOT unsigned list_at(size_t size, unsigned shift)
{
    return ((shift - ALIGN_LOG2) << SL) + (unsigned)((uint32_t)size >> shift);
}

HK_HOT unsigned list_of(size_t size) { return list_at(size, list_shift(size)); }

#if HK_CHECKS
/* Whether off, a distance into the span, is a multiple of HK_ALIGN inside it: one compare. */
HK_HOT int unit_inside(const hk_tlsf_t *t, uintptr_t off) { return hk_rotr((size_t)off, ALIGN_LOG2) < t->span_units; }

/* A forward link is NULL or points at a tag position inside the span (no dereference). */
HK_HOT int link_placed(const hk_tlsf_t *t, const hk_tag_t *b)
{
    return b == NULL || unit_inside(t, (uintptr_t)b - (uintptr_t)t->span.first);
}
#endif

/*
 * Free bytes change where blocks change hands, as o1heap counts them: take()
 * hands bytes out, hk_tlsf_free() takes them back, hk_tlsf_resize() moves
 * the difference. The list operations never count: a block split, merged or
 * moved between lists stays free, so aligned_alloc's front gap and realloc's
 * merges need no correction.
 */

/* Push free block b, of size bytes (its tag written), on its list. */
HK_HOT void list_push(hk_tlsf_t *t, hk_tag_t *b, size_t size)
{
    hk_tag_links_t *links = hk_tag_links(b);
    unsigned ix = list_of(size);
    hk_tag_t *next = t->heads[ix];
    HK_ASSERT(ix < t->lists && !hk_tag_used(b) && hk_tag_size(b) == size);
    links->prev = NULL;
    links->next = next;
    if (next != NULL) {
        hk_tag_links(next)->prev = b;
    }
    t->heads[ix] = b;
    t->fl_bitmap |= 1u << (ix >> SL);
    t->sl_bitmap[ix >> SL] |= 1u << (ix & SL_MASK);
}

HK_HOT void clear_list_bit(hk_tlsf_t *t, unsigned ix)
{
    HK_ASSERT(ix < t->lists && t->heads[ix] == NULL);
    unsigned fl = ix >> SL;
    uint32_t map = t->sl_bitmap[fl] & ~(1u << (ix & SL_MASK));
    t->sl_bitmap[fl] = map;
    if (map == 0) {
        t->fl_bitmap &= ~(1u << fl);
    }
}

/*
 * Free blocks are not counted as they come and go: every one is the first
 * block, or was made by a free or a split, and went by an allocation or a
 * merge, so get_stats derives the count from those counters. The splits
 * take() makes are the allocations less those handed out whole, so
 * stats.split_count holds only the others (aligned_alloc's front gaps,
 * realloc's). A dropped list's blocks stay counted, in free_bytes too:
 * they are lost, not used, and never handed out.
 */
static size_t free_blocks(const hk_tlsf_t *t)
{
    const hk_stats_t *s = &t->heap.stats;
    return 1u + s->free_count + s->split_count - t->whole_takes - s->coalesce_count;
}

#if HK_CHECKS
/* Take a damaged list out of service: its blocks are never handed out again. */
static void drop_list(hk_tlsf_t *t, unsigned ix, const hk_tag_t *culprit)
{
    t->heads[ix] = NULL;
    clear_list_bit(t, ix);
    hk_report(&t->heap, HK_ERR_CORRUPT, hk_tag_payload(culprit));
}
#endif

/*
 * Unlink free block b from its list. With HK_CHECKS its links must be
 * placed and link back to it; returns 0 (b left alone, reported) if they
 * do not.
 */
HK_HOT int list_unlink(hk_tlsf_t *t, hk_tag_t *b)
{
    hk_tag_links_t *links = hk_tag_links(b);
    hk_tag_t *next = links->next;
    hk_tag_t *prev = links->prev;
    unsigned ix = list_of(hk_tag_size(b));
    /*
     * What points at b from the front: its predecessor's link (next is a
     * free block's first word: no member access of a link not yet checked),
     * or its list's head.
     */
    hk_tag_t **front = (prev != NULL) ? (hk_tag_t **)hk_tag_payload(prev) : &t->heads[ix];
    HK_ASSERT(!hk_tag_used(b));
#if HK_CHECKS
    if (!link_placed(t, next) || !link_placed(t, prev) || *front != b ||
        (next != NULL && hk_tag_links(next)->prev != b)) {
        hk_report(&t->heap, HK_ERR_CORRUPT, links);
        return 0;
    }
#endif
    *front = next;
    if (next != NULL) {
        hk_tag_links(next)->prev = prev;
    } else if (prev == NULL) {
        clear_list_bit(t, ix);
    }
    return 1;
}

/*
 * Whether free neighbour n of a block being freed can be merged: its size
 * agrees with its own right neighbour (its left side was checked with the
 * block being freed) and its links hold. Unlinks it if so.
 */
HK_HOT int take_neighbour(hk_tlsf_t *t, hk_tag_t *n)
{
#if HK_CHECKS
    size_t size = hk_tag_size(n);
    if (size > t->span_bytes - (size_t)((uintptr_t)n - (uintptr_t)t->span.first) ||
        hk_tag_next(n)->left != n->size_used >> 1) {
        hk_report(&t->heap, HK_ERR_CORRUPT, hk_tag_payload(n));
        return 0;
    }
#endif
    return list_unlink(t, n);
}

/*
 * The block operations, each written once and shared by malloc,
 * aligned_alloc, resize and free, as in Conte's TLSF: split a block in two,
 * merge a block with its free right neighbour, and trim a used block's tail
 * back to the lists. Only free merges with the left neighbour, so that is
 * written there, where a helper taking the size by pointer cost the worst
 * free two instructions.
 */

/* Cut block b at size bytes: b keeps size (marked used or not), the rest becomes a free block, returned unlisted. */
HK_HOT hk_tag_t *split(hk_tag_t *b, size_t size, unsigned used)
{
    size_t rest = hk_tag_size(b) - size;
    hk_tag_t *r = hk_tag_at((uintptr_t)b + size);
    HK_ASSERT(size >= HK_TAG_MIN_BLOCK && rest >= HK_TAG_MIN_BLOCK && size % HK_TAG_UNIT == 0);
    hk_tag_write(b, size, used);
    hk_tag_write(r, rest, 0);
    return r;
}

/*
 * b's size once its right neighbour is merged in: that neighbour must be
 * free and pass take_neighbour (then it is unlinked and its tag and links
 * join b's payload, poisoned at level 2); size otherwise. b's tag is the
 * caller's to write.
 */
HK_HOT size_t merge_right(hk_tlsf_t *t, const hk_tag_t *b, size_t size)
{
    hk_tag_t *next = hk_tag_at((uintptr_t)b + size);
    HK_ASSERT(size == hk_tag_size(b));
    if (!hk_tag_used(next) && take_neighbour(t, next)) {
        size += hk_tag_size(next);
        t->heap.stats.coalesce_count++;
        hk_tag_poison_range(next, hk_tag_poison_start(next));
    }
    return size;
}

/* Give used block b's bytes beyond size back to the lists, merged with a free right neighbour, where they form a block. */
static void trim(hk_tlsf_t *t, hk_tag_t *b, size_t size)
{
    size_t rest = hk_tag_size(b) - size;
    hk_tag_t *r;
    HK_ASSERT(hk_tag_used(b) && size <= hk_tag_size(b));
    if (rest < HK_TAG_MIN_BLOCK) {
        return;
    }
    r = split(b, size, 1);
    t->heap.stats.split_count++;
    hk_tag_poison_range(hk_tag_payload(r), hk_tag_at((uintptr_t)r + rest));
    rest = merge_right(t, r, rest);
    hk_tag_write(r, rest, 0);
    list_push(t, r, rest);
}

/* The first non-empty list at or above ix whose first level is ix's or higher, or NO_LIST. */
HK_HOT unsigned find_list(const hk_tlsf_t *t, unsigned ix)
{
    unsigned fl = ix >> SL;
    uint32_t sl_map = t->sl_bitmap[fl] & (~0u << (ix & SL_MASK));
    if (sl_map == 0) {
        uint32_t fl_map = t->fl_bitmap & (~1u << fl);
        if (fl_map == 0) {
            return NO_LIST;
        }
        fl = hk_ffs32(fl_map);
        sl_map = t->sl_bitmap[fl];
    }
    return (fl << SL) + hk_ffs32(sl_map);
}

/*
 * Pop a free block of at least gross bytes (0 < gross <= span_bytes: its
 * list exists; the one after it may be the spare first level's), or NULL.
 * With HK_CHECKS the head taken must be a free block that holds gross
 * bytes (its list says so only while its tag is intact), whose size its
 * right neighbour confirms (its left field matters only when it is freed
 * again, and is mended when its left neighbour is) and whose successor
 * links back; a head that is not is reported and its whole list dropped,
 * and the search goes on.
 */
HK_HOT hk_tag_t *pop_fit(hk_tlsf_t *t, size_t gross)
{
    unsigned shift = list_shift(gross);
    unsigned ix = list_at(gross, shift);
    hk_tag_t *b;
    HK_ASSERT(gross >= HK_TAG_MIN_BLOCK && gross <= t->span_bytes);
    if (((uint32_t)gross & ((1u << shift) - 1u)) != 0) {
        /* A block on ix may be too small: its head saves the rounding waste when it happens to fit. */
        b = t->heads[ix];
        if (b == NULL || hk_tag_size(b) < gross) {
            ix++;
        }
    }
    for (;;) {
        hk_tag_t *next;
        ix = find_list(t, ix);
        if (ix == NO_LIST) {
            return NULL;
        }
        b = t->heads[ix];
        next = hk_tag_links(b)->next;
#if HK_CHECKS
        if (hk_tag_used(b) || !hk_tag_right_sound_min(&t->span, b, gross) || hk_tag_links(b)->prev != NULL ||
            !link_placed(t, next) || (next != NULL && (hk_tag_used(next) || hk_tag_links(next)->prev != b))) {
            drop_list(t, ix, b);
            continue;
        }
#endif
        t->heads[ix] = next;
        if (next != NULL) {
            hk_tag_links(next)->prev = NULL;
        } else {
            clear_list_bit(t, ix);
        }
        return b;
    }
}

/* Hand out free block b (popped) for `requested` bytes in gross bytes: split, mark, count. */
HK_HOT void *take(hk_tlsf_t *t, hk_tag_t *b, size_t gross, size_t requested)
{
    size_t rest = hk_tag_size(b) - gross;
    hk_stats_t *s = &t->heap.stats;
    HK_ASSERT(!hk_tag_used(b) && hk_tag_size(b) >= gross);
#if HK_CANARIES
    if (!hk_tag_poison_intact_upto(b, hk_tag_at((uintptr_t)b + gross))) {
        hk_report(&t->heap, HK_ERR_CORRUPT, hk_tag_payload(b)); /* written after free */
    }
    s->used_requested += requested;
#endif
    if (rest >= HK_TAG_MIN_BLOCK) {
        /* The rest goes straight on its list: its right neighbour is in use (TLSF merges at once). */
        list_push(t, split(b, gross, 1), rest);
    } else {
        b->size_used |= 1u;
        t->whole_takes++;
        gross += rest;
    }
    hk_tag_arm_canary(b, requested);
    s->free_bytes -= gross;
    s->alloc_count++;
    hk_note_low(s);
    return hk_tag_payload(b);
}

void *hk_tlsf_malloc(hk_tlsf_t *t, size_t size)
{
    size_t gross;
    hk_tag_t *b;
    if (size > t->max_request) {
        return NULL;
    }
    gross = hk_tag_gross_of(size);
    b = pop_fit(t, gross);
    return (b != NULL) ? take(t, b, gross, size) : NULL;
}

void *hk_tlsf_aligned_alloc(hk_tlsf_t *t, size_t alignment, size_t size)
{
    size_t gross;
    size_t room = alignment + HK_TAG_MIN_BLOCK;
    hk_tag_t *b;
    uintptr_t payload;
    uintptr_t aligned;

    HK_ASSERT(hk_is_pow2(alignment) && alignment > HK_ALIGN);
    if (size > t->max_request || alignment > t->span_bytes) {
        return NULL;
    }
    /* The sum cannot overflow: gross and room are both below the span size (tagged.h bounds it). */
    gross = hk_tag_gross_of(size);
    if (gross + room > t->span_bytes || (b = pop_fit(t, gross + room)) == NULL) {
        return NULL;
    }
    payload = (uintptr_t)hk_tag_payload(b);
    aligned = hk_align_up_uptr(payload, alignment);
    if (aligned != payload && aligned - payload < HK_TAG_MIN_BLOCK) {
        aligned = hk_align_up_uptr(payload + HK_TAG_MIN_BLOCK, alignment);
    }
    if (aligned != payload) {
        /* Give the gap in front back as a free block of its own (its left neighbour is used). */
        size_t gap = (size_t)(aligned - payload);
        hk_tag_t *front = b;
        b = split(front, gap, 0);
        hk_tag_poison(front);
        list_push(t, front, gap);
        t->heap.stats.split_count++;
    }
    return take(t, b, gross, size);
}

void hk_tlsf_free(hk_tlsf_t *t, void *ptr)
{
    hk_tag_t *b = hk_tag_lookup(&t->heap, &t->span, ptr);
    hk_tag_t *freed = b;
    size_t freed_size;
    size_t size;
    if (b == NULL) {
        return;
    }
    freed_size = hk_tag_size(b);
#if HK_CANARIES
    t->heap.stats.used_requested -= b->requested;
#endif
    t->heap.stats.free_count++;
    t->heap.stats.free_bytes += freed_size;
    size = merge_right(t, b, freed_size);
    b->size_used &= (hk_tag_word_t)~1u; /* a later free of b, merged away or not, is a double free */
    if (b->left != 0) { /* b's left side is sound: hk_tag_lookup checked it */
        hk_tag_t *prev = hk_tag_prev(b);
        if (!hk_tag_used(prev) && list_unlink(t, prev)) {
            hk_tag_poison_range(b, b + 1); /* b's tag joins prev's payload */
            size += hk_tag_size(prev);
            b = prev;
            t->heap.stats.coalesce_count++;
        }
    }
    hk_tag_poison_range(hk_tag_payload(freed), hk_tag_at((uintptr_t)freed + freed_size));
    hk_tag_write(b, size, 0);
    list_push(t, b, size);
}

void *hk_tlsf_resize(hk_tlsf_t *t, void *ptr, size_t size)
{
    hk_tag_t *b = hk_tag_lookup(&t->heap, &t->span, ptr);
    size_t gross;
    size_t have;
    if (b == NULL || size > t->max_request) {
        return NULL;
    }
    gross = hk_tag_gross_of(size);
    have = hk_tag_size(b);
    if (gross > have) {
        const hk_tag_t *next = hk_tag_at((uintptr_t)b + have);
        size_t grown;
        if (hk_tag_used(next) || have + hk_tag_size(next) < gross || (grown = merge_right(t, b, have)) == have) {
            return NULL;
        }
        hk_tag_write(b, grown, 1);
    }
    trim(t, b, gross);
    t->heap.stats.free_bytes = t->heap.stats.free_bytes + have - hk_tag_size(b);
#if HK_CANARIES
    t->heap.stats.used_requested = t->heap.stats.used_requested - b->requested + size;
#endif
    hk_tag_arm_canary(b, size);
    hk_note_low(&t->heap.stats);
    return ptr;
}

size_t hk_tlsf_usable_size(hk_tlsf_t *t, const void *ptr)
{
    const hk_tag_t *b = hk_tag_lookup(&t->heap, &t->span, ptr);
    return (b != NULL) ? hk_tag_usable_size(b) : 0;
}

/* Largest (want_max) or smallest block on one list; a damaged link ends the list. */
static size_t list_extreme(const hk_tlsf_t *t, const hk_tag_t *b, int want_max)
{
    size_t best = hk_tag_size(b);
    size_t steps = free_blocks(t);
    for (b = hk_tag_links(b)->next; b != NULL && hk_tag_link_sound(&t->span, b) && steps-- > 0;
         b = hk_tag_links(b)->next) {
        size_t s = hk_tag_size(b);
        if (want_max ? s > best : s < best) {
            best = s;
        }
    }
    return best;
}

void hk_tlsf_get_stats(hk_tlsf_t *t, hk_stats_t *out)
{
    hk_stats_read(&t->heap, out);
    out->split_count += out->alloc_count - t->whole_takes;
    out->free_blocks = free_blocks(t);
    hk_tag_derive_stats(out);
    if (t->fl_bitmap != 0) {
        unsigned hi = hk_fls32(t->fl_bitmap);
        unsigned lo = hk_ffs32(t->fl_bitmap);
        out->largest_free = list_extreme(t, t->heads[(hi << SL) + hk_fls32(t->sl_bitmap[hi])], 1);
        out->smallest_free = list_extreme(t, t->heads[(lo << SL) + hk_ffs32(t->sl_bitmap[lo])], 0);
    }
}

void hk_tlsf_walk(hk_tlsf_t *t, hk_walk_fn visit, void *ctx) { hk_tag_walk(&t->span, visit, ctx); }

int hk_tlsf_owns(const hk_tlsf_t *t, const void *ptr) { return hk_in_range(ptr, t->span.first, t->span.sentinel); }

/* Every listed block is free, on the list its size maps to, doubly linked; bitmaps match. */
static hk_check_t check_lists(const hk_tlsf_t *t)
{
    size_t listed = 0;
    unsigned fl;
    for (fl = 0; fl < FL_COUNT; fl++) {
        unsigned sl;
        if (fl >= (t->lists >> SL)) {
            if (t->sl_bitmap[fl] != 0 || (t->fl_bitmap >> fl) & 1u) {
                return HK_CHECK_LIST;
            }
            continue;
        }
        if (((t->fl_bitmap >> fl) & 1u) != (t->sl_bitmap[fl] != 0)) {
            return HK_CHECK_LIST;
        }
        for (sl = 0; sl <= SL_MASK; sl++) {
            unsigned ix = (fl << SL) + sl;
            const hk_tag_t *prev = NULL;
            const hk_tag_t *b = t->heads[ix];
            if (((t->sl_bitmap[fl] >> sl) & 1u) != (b != NULL)) {
                return HK_CHECK_LIST;
            }
            for (; b != NULL; prev = b, b = hk_tag_links(b)->next) {
                if (!hk_tag_link_sound(&t->span, b)) {
                    return HK_CHECK_LINK;
                }
                if (list_of(hk_tag_size(b)) != ix) {
                    return HK_CHECK_LIST;
                }
                if (hk_tag_links(b)->prev != prev) {
                    return HK_CHECK_LINK;
                }
                if (++listed > free_blocks(t)) {
                    return HK_CHECK_COUNT;
                }
            }
        }
    }
    return listed == free_blocks(t) ? HK_CHECK_OK : HK_CHECK_COUNT;
}

hk_check_t hk_tlsf_check(hk_tlsf_t *t)
{
    hk_check_t rc = hk_tag_check(&t->heap, &t->span, 1, free_blocks(t));
    return rc != HK_CHECK_OK ? rc : check_lists(t);
}

static void *tlsf_op_aligned(hk_heap_t *h, size_t alignment, size_t size)
{
    return hk_tlsf_aligned_alloc((hk_tlsf_t *)h, alignment, size);
}

HK_DEFINE_OPS(hk_tlsf, hk_tlsf_t, "tlsf", tlsf_op_aligned);

hk_heap_t *hk_tlsf_heap(hk_tlsf_t *t) { return hk_bind(&t->heap, &hk_tlsf_ops); }

hk_tlsf_t *hk_tlsf_init(void *arena, size_t size, hk_status_t *status)
{
    uintptr_t base = hk_align_up_uptr((uintptr_t)arena, sizeof(void *));
    uintptr_t end = hk_arena_end(arena, size);
    hk_tlsf_t *t = (hk_tlsf_t *)base;
    hk_tag_span_t span;
    hk_status_t rc = HK_EINVAL;
    unsigned lists = 0;
    uintptr_t blocks = base;

    if (arena != NULL) {
        rc = HK_ETOOSMALL;
        if (end >= base && end - base >= sizeof(hk_tlsf_t)) {
            /* Size the list heads for the largest block this arena could hold (a larger one is refused below). */
            lists = ((list_of((size_t)(end - base) < MAX_SPAN ? (size_t)(end - base) : MAX_SPAN) >> SL) + 1u) << SL;
            blocks = (uintptr_t)(t->heads + lists);
            if (blocks <= end) {
                rc = hk_tag_span_init(&span, blocks, end, MAX_SPAN);
            }
        }
    }
    if (status != NULL) {
        *status = rc;
    }
    if (rc != HK_OK) {
        return NULL;
    }
    hk_memset(t, 0, (size_t)(blocks - base)); /* the control block, its handle and heads: every list empty */
    hk_heap_ready(&t->heap, hk_tag_span_bytes(&span));
    t->span = span;
    t->lists = lists;
    t->span_bytes = t->heap.stats.capacity;
    t->span_units = t->span_bytes / HK_ALIGN;
    t->max_request = t->span_bytes - HK_TAG_HDR - HK_CANARY_ROOM;
    list_push(t, span.first, t->span_bytes);
    return t;
}
