/* SPDX-License-Identifier: MIT */
/* Boundary-tagged blocks: span set-up, pointer lookup, merging, walk and check (see tagged.h). */
#include "tagged.h"

HK_INTERNAL hk_status_t hk_tag_span_init(hk_tag_span_t *span, uintptr_t lo, uintptr_t end, size_t max_span)
{
    uintptr_t first = hk_align_up_uptr(lo + HK_TAG_HDR, HK_ALIGN) - HK_TAG_HDR;
    uintptr_t sentinel = hk_align_down_uptr(end, HK_ALIGN) - HK_TAG_HDR;
    size_t span_size;

    HK_ASSERT(max_span <= HK_TAG_MAX_BLOCK);
    if (first < lo || sentinel < first || sentinel - first < HK_TAG_MIN_BLOCK) {
        return HK_ETOOSMALL;
    }
    span_size = (size_t)(sentinel - first);
    if (span_size > max_span) {
        return HK_ETOOBIG;
    }
    span->first = hk_tag_at(first);
    span->sentinel = hk_tag_at(sentinel);
    span->first->left = 0;
    span->sentinel->size_used = 1; /* size 0, used: no block merges with it */
    hk_tag_write(span->first, span_size, 0);
    hk_tag_poison(span->first);
    return HK_OK;
}

#if HK_CHECKS
/*
 * A used block whose left neighbour agrees with it but whose right
 * neighbour's left field may not: an overflow out of this block lands there
 * first, so it is that copy that is wrong, as long as the right neighbour is
 * a sound block on its own right side (else this block's size itself may be
 * what changed, and nothing is written). Mends the copy (where it agrees
 * already, it is written unchanged); 0 if it may not.
 */
static int mend_right(const hk_tag_span_t *span, const hk_tag_t *t)
{
    size_t size = hk_tag_size(t);
    hk_tag_t *next = hk_tag_at((uintptr_t)t + size);
    if (size < HK_TAG_MIN_BLOCK || size > (size_t)((uintptr_t)span->sentinel - (uintptr_t)t) ||
        (next != span->sentinel && !hk_tag_right_sound(span, next))) {
        return 0;
    }
    next->left = (hk_tag_word_t)(size / HK_TAG_UNIT);
    return 1;
}

/*
 * Error path only: walk the chain to the block holding t. A pointer into a
 * used block is interior; one at or into a free block was freed already
 * (a block merged into its neighbour leaves its old tag inside); a chain
 * that breaks before reaching t is damage.
 */
static hk_error_t classify(const hk_tag_span_t *span, const hk_tag_t *t)
{
    const hk_tag_t *b = span->first;
    while (b < span->sentinel && hk_tag_sound(span, b)) {
        const hk_tag_t *next = hk_tag_next(b);
        if (t >= b && t < next) {
            return hk_tag_used(b) ? (t == b ? HK_ERR_CORRUPT : HK_ERR_INTERIOR_PTR) : HK_ERR_DOUBLE_FREE;
        }
        b = next;
    }
    return HK_ERR_CORRUPT;
}

/*
 * A used block that reaches the mending test failed lookup on its right
 * side or (level 2) its canary: either way it is damage, whether the copy
 * needed mending or not.
 */
HK_INTERNAL hk_tag_t *hk_tag_refuse(hk_heap_t *heap, const hk_tag_span_t *span, const void *ptr)
{
    hk_tag_t *t = hk_tag_of(ptr);
    hk_error_t error;
    if (!hk_in_range(ptr, hk_tag_payload(span->first), hk_tag_payload(span->sentinel))) {
        error = HK_ERR_FOREIGN_PTR;
    } else if ((uintptr_t)ptr % HK_ALIGN != 0) {
        error = HK_ERR_INTERIOR_PTR;
    } else if (hk_tag_used(t) && hk_tag_left_sound(span, t) && mend_right(span, t)) {
        hk_report(heap, HK_ERR_CORRUPT, ptr);
        return hk_tag_canary_intact(t) ? t : NULL;
    } else {
        error = classify(span, t); /* t == a used block: its canary */
    }
    hk_report(heap, error, ptr);
    return NULL;
}
#endif

/* Take free block b off its list if it is sound; report it otherwise. */
static int detach_sound(hk_heap_t *heap, const hk_tag_span_t *span, const hk_tag_lists_t *lists, hk_tag_t *b)
{
    if (HK_CHECKS && !hk_tag_sound(span, b)) {
        hk_report(heap, HK_ERR_CORRUPT, hk_tag_payload(b));
        return 0;
    }
    return lists->detach(heap, b);
}

HK_INTERNAL hk_tag_t *hk_tag_coalesce(hk_heap_t *heap, const hk_tag_span_t *span, const hk_tag_lists_t *lists, hk_tag_t *b)
{
    hk_tag_t *freed = b;
    hk_tag_t *next = hk_tag_next(b);
    size_t size = hk_tag_size(b);
    int merge_next = !hk_tag_used(next) && detach_sound(heap, span, lists, next);
    if (b->left != 0 && !hk_tag_used(hk_tag_prev(b)) && detach_sound(heap, span, lists, hk_tag_prev(b))) {
        b = hk_tag_prev(b);
        size += hk_tag_size(b);
        heap->stats.coalesce_count++;
    }
    freed->size_used &= (hk_tag_word_t)~1u; /* a later free of it, merged away or not, is a double free */
    hk_tag_poison_range(b != freed ? (void *)freed : hk_tag_payload(freed), next);
    if (merge_next) {
        size += hk_tag_size(next);
        hk_tag_poison_range(next, hk_tag_poison_start(next));
        heap->stats.coalesce_count++;
    }
    hk_tag_write(b, size, 0);
    return b;
}

HK_INTERNAL void hk_tag_trim(hk_heap_t *heap, const hk_tag_span_t *span, const hk_tag_lists_t *lists, hk_tag_t *b, size_t size)
{
    size_t rest = hk_tag_size(b) - size;
    hk_tag_t *r;
    if (rest < HK_TAG_MIN_BLOCK) {
        return;
    }
    r = hk_tag_at((uintptr_t)b + size);
    hk_tag_write(b, size, (unsigned)hk_tag_used(b));
    hk_tag_write(r, rest, 1);
    heap->stats.split_count++;
    lists->file(heap, hk_tag_coalesce(heap, span, lists, r));
}

HK_INTERNAL int hk_tag_resize(hk_heap_t *heap, const hk_tag_span_t *span, const hk_tag_lists_t *lists, hk_tag_t *b,
                  size_t requested)
{
    size_t gross = hk_tag_gross(requested);
    size_t size = hk_tag_size(b);
    hk_tag_t *next = hk_tag_next(b);
    if (gross == 0) {
        return 0;
    }
    if (gross > size) {
        if (hk_tag_used(next) || size + hk_tag_size(next) < gross || !detach_sound(heap, span, lists, next)) {
            return 0;
        }
        hk_tag_write(b, size + hk_tag_size(next), 1);
        heap->stats.coalesce_count++;
    }
    hk_tag_trim(heap, span, lists, b, gross);
#if HK_CANARIES
    heap->stats.used_requested = heap->stats.used_requested - b->requested + requested;
#endif
    hk_tag_arm_canary(b, requested);
    hk_note_low(&heap->stats);
    return 1;
}

HK_INTERNAL void hk_tag_walk(const hk_tag_span_t *span, hk_walk_fn visit, void *ctx)
{
    const hk_tag_t *b;
    for (b = span->first; b < span->sentinel; b = hk_tag_next(b)) {
        hk_block_info_t info;
        info.start = b;
        info.size = hk_tag_size(b);
        info.payload = hk_tag_payload(b);
        info.usable = hk_tag_used(b) ? hk_tag_usable_size(b) : hk_tag_usable(b);
        info.used = hk_tag_used(b);
        visit(ctx, &info);
        /* A damaged size ends the walk: on a 32-bit target a 31-bit unit count can wrap past the span's end. */
        if (info.size == 0 || info.size > (size_t)((uintptr_t)span->sentinel - (uintptr_t)b)) {
            break;
        }
    }
}

HK_INTERNAL hk_check_t hk_tag_check(const hk_heap_t *heap, const hk_tag_span_t *span, int merged, size_t free_blocks)
{
    const hk_tag_t *b = span->first;
    int prev_used = 1;
    size_t free_count = 0;
    size_t free_bytes = 0;
    size_t used_count = 0;
    size_t requested = 0;

    if (b->left != 0) {
        return HK_CHECK_NEIGHBOUR;
    }
    while (b != span->sentinel) {
        if (!hk_tag_placed(span, b)) {
            return HK_CHECK_RANGE;
        }
        if (!hk_tag_sound(span, b)) {
            return hk_tag_size(b) < HK_TAG_MIN_BLOCK ? HK_CHECK_SIZE : HK_CHECK_NEIGHBOUR;
        }
        if (hk_tag_used(b)) {
            if (!hk_tag_canary_intact(b)) {
                return HK_CHECK_CANARY;
            }
            used_count++;
            requested += hk_tag_requested(b);
        } else {
            if (!prev_used && merged) {
                return HK_CHECK_UNMERGED;
            }
            if (!hk_tag_poison_intact(b)) {
                return HK_CHECK_POISON;
            }
            free_count++;
            free_bytes += hk_tag_size(b);
        }
        prev_used = hk_tag_used(b);
        b = hk_tag_next(b);
    }
    if (b->size_used != 1) {
        return HK_CHECK_STATE;
    }
    if (free_bytes != heap->stats.free_bytes || used_count != heap->stats.alloc_count - heap->stats.free_count ||
        (HK_CANARIES && requested != heap->stats.used_requested) || free_count != free_blocks) {
        return HK_CHECK_STATS;
    }
    return HK_CHECK_OK;
}
