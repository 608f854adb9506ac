/* Boundary-tagged blocks: span set-up, pointer lookup, walk and check (see tagged.h). */
#include "tagged.h"

size_t hk_tag_span_init(hk_tag_span_t *span, void *mem, size_t size)
{
    uintptr_t lo = (uintptr_t)mem;
    uintptr_t hi;
    uintptr_t first;
    uintptr_t sentinel;
    size_t span_size;

    size = hk_arena_room(lo, size);
    hi = lo + size;
    first = hk_align_up_uptr(lo + HK_TAG_HDR, HK_ALIGN) - HK_TAG_HDR;
    sentinel = hk_align_down_uptr(hi, HK_ALIGN) - HK_TAG_HDR;
    if (sentinel < first + HK_TAG_MIN_BLOCK || first < lo) {
        return 0;
    }
    span_size = (size_t)(sentinel - first);
    if (span_size > HK_TAG_MAX_SPAN) {
        span_size = HK_TAG_MAX_SPAN;
        sentinel = first + span_size;
    }
    span->key = hk_heap_key((void *)first);
    span->first = (hk_tag_t *)first;
    span->sentinel = (hk_tag_t *)sentinel;
    hk_tag_set(span, span->sentinel, HK_TAG_USED, 0);
    hk_tag_set(span, span->first, HK_TAG_PREV_USED, 0);
    hk_tag_make_free(span, span->first, span_size);
    return span_size;
}

static int tag_sane(const hk_tag_span_t *span, const hk_tag_t *t)
{
    size_t size;
    if (!hk_tag_intact(span, t)) {
        return 0;
    }
    size = hk_tag_size(t);
    return size >= HK_TAG_MIN_BLOCK && size % HK_ALIGN == 0 &&
           size <= (size_t)((uintptr_t)span->sentinel - (uintptr_t)t);
}

/*
 * Error path only: walk the chain to tell a pointer into a block from a
 * broken tag (the walk stops at a tag that fails, t's own included).
 */
static hk_error_t classify_bad_tag(const hk_tag_span_t *span, const hk_tag_t *t)
{
    const hk_tag_t *b = span->first;
    while (b < span->sentinel && tag_sane(span, b)) {
        const hk_tag_t *next = hk_tag_next(b);
        if ((uintptr_t)t > (uintptr_t)b && (uintptr_t)t < (uintptr_t)next) {
            return HK_ERR_INTERIOR_PTR;
        }
        b = next;
    }
    return HK_ERR_CORRUPT;
}

hk_tag_t *hk_tag_lookup(hk_heap_t *heap, const hk_tag_span_t *span, const void *ptr)
{
    hk_tag_t *t;
    hk_tag_t *next;
    if (!hk_in_range(ptr, hk_tag_payload(span->first), span->sentinel)) {
        hk_report(heap, HK_ERR_FOREIGN_PTR, ptr);
        return NULL;
    }
    if ((uintptr_t)ptr % HK_ALIGN != 0) {
        hk_report(heap, HK_ERR_INTERIOR_PTR, ptr);
        return NULL;
    }
    t = hk_tag_of(ptr);
    if (!tag_sane(span, t)) {
        hk_report(heap, classify_bad_tag(span, t), ptr);
        return NULL;
    }
    if (!hk_tag_used(t)) {
        hk_report(heap, HK_ERR_DOUBLE_FREE, ptr);
        return NULL;
    }
    next = hk_tag_next(t);
    if (!hk_tag_intact(span, next) || !hk_tag_prev_used(next) || t->slack > hk_tag_usable(t)) {
        hk_report(heap, HK_ERR_CORRUPT, ptr);
        return NULL;
    }
    return t;
}

hk_tag_t *hk_tag_coalesce(hk_heap_t *heap, const hk_tag_span_t *span, const hk_tag_lists_t *lists, hk_tag_t *b)
{
    size_t size = hk_tag_size(b);
    hk_tag_t *next = hk_tag_next(b);
    hk_tag_set(span, b, (uint32_t)size | (b->size_flags & HK_TAG_PREV_USED), 0);
    if (!hk_tag_prev_used(b)) {
        b = hk_tag_prev(b);
        lists->detach(heap, b);
        size += hk_tag_size(b);
        heap->stats.coalesce_count++;
    }
    if (!hk_tag_used(next)) {
        lists->detach(heap, next);
        size += hk_tag_size(next);
        heap->stats.coalesce_count++;
    }
    hk_tag_make_free(span, b, size);
    return b;
}

void hk_tag_trim(hk_heap_t *heap, const hk_tag_span_t *span, const hk_tag_lists_t *lists, hk_tag_t *b, size_t size)
{
    size_t rest = hk_tag_size(b) - size;
    hk_tag_t *r;
    if (rest < HK_TAG_MIN_BLOCK) {
        return;
    }
    r = (hk_tag_t *)((uintptr_t)b + size);
    hk_tag_set(span, b, (uint32_t)size | (b->size_flags & HK_TAG_FLAGS), b->slack);
    hk_tag_set(span, r, (uint32_t)rest | (hk_tag_used(b) ? HK_TAG_PREV_USED : 0u), 0);
    heap->stats.split_count++;
    lists->release(heap, r);
}

/* Resize used block b to gross bytes without moving it; 0 if its successor does not allow it. */
static int resize_in_place(hk_heap_t *heap, const hk_tag_span_t *span, const hk_tag_lists_t *lists, hk_tag_t *b,
                           size_t gross, size_t requested)
{
    size_t size = hk_tag_size(b);
    hk_tag_t *next = hk_tag_next(b);
    if (gross > size) {
        if (hk_tag_used(next) || size + hk_tag_size(next) < gross) {
            return 0;
        }
        lists->detach(heap, next);
        hk_tag_set(span, b, (uint32_t)(size + hk_tag_size(next)) | (b->size_flags & HK_TAG_FLAGS), 0);
        hk_tag_set_prev_used(span, hk_tag_next(b), 1);
        heap->stats.coalesce_count++;
    }
    hk_tag_trim(heap, span, lists, b, gross);
    hk_tag_make_used(span, b, hk_tag_size(b), requested);
    return 1;
}

void *hk_tag_realloc(hk_heap_t *heap, const hk_tag_span_t *span, const hk_tag_lists_t *lists, void *ptr, size_t size)
{
    hk_tag_t *b;
    size_t gross;
    size_t old_size;
    size_t old_requested;
    size_t old_usable;

    if (ptr == NULL) {
        return heap->ops->malloc(heap, size);
    }
    if ((b = hk_tag_lookup(heap, span, ptr)) == NULL) {
        return NULL;
    }
    if (size == 0) {
        heap->ops->free(heap, ptr);
        return NULL;
    }
    gross = hk_tag_gross(size);
    if (gross == 0) {
        return hk_fail(heap);
    }
    old_size = hk_tag_size(b);
    old_requested = hk_tag_requested(b);
    old_usable = hk_tag_usable(b);
    if (!resize_in_place(heap, span, lists, b, gross, size)) {
        void *moved = hk_realloc_by_move(heap, ptr, old_usable, size);
        heap->stats.realloc_count += (moved != NULL);
        return moved;
    }
    hk_count_resize(heap, old_requested, old_usable, old_size, size, hk_tag_usable(b), hk_tag_size(b));
    heap->stats.realloc_count++;
    return ptr;
}

void hk_tag_walk(const hk_tag_span_t *span, hk_walk_fn visit, void *ctx)
{
    const hk_tag_t *b;
    for (b = span->first; b < span->sentinel; b = hk_tag_next(b)) {
        hk_block_info_t info;
        info.start = b;
        info.size = hk_tag_size(b);
        info.payload = hk_tag_payload(b);
        info.usable = hk_tag_usable(b);
        info.used = hk_tag_used(b);
        visit(ctx, &info);
        if (info.size == 0) {
            break;
        }
    }
}

static int check_chain(const hk_heap_t *heap, const hk_tag_span_t *span, int free_neighbours_ok)
{
    const hk_tag_t *b = span->first;
    int prev_used = 1;
    size_t free_count = 0;
    size_t free_bytes = 0;
    size_t used_count = 0;
    size_t granted = 0;
    size_t requested = 0;

    while (b != span->sentinel) {
        if (b < span->first || b > span->sentinel) {
            return 1;
        }
        if (!tag_sane(span, b)) {
            return 2;
        }
        if (hk_tag_prev_used(b) != prev_used) {
            return 3;
        }
        if (hk_tag_used(b)) {
            if (b->slack > hk_tag_usable(b)) {
                return 4;
            }
            used_count++;
            granted += hk_tag_usable(b);
            requested += hk_tag_requested(b);
        } else {
            if (!prev_used && !free_neighbours_ok) {
                return 5; /* two free neighbours: a missed coalesce */
            }
            if (*hk_tag_footer(b) != hk_tag_size(b)) {
                return 6;
            }
            free_count++;
            free_bytes += hk_tag_size(b);
        }
        prev_used = hk_tag_used(b);
        b = hk_tag_next(b);
    }
    if (!hk_tag_intact(span, b) || hk_tag_size(b) != 0 || !hk_tag_used(b) || hk_tag_prev_used(b) != prev_used) {
        return 7;
    }
    if (free_bytes != heap->stats.free_bytes || used_count != heap->stats.used_blocks ||
        granted != heap->stats.used_granted || requested != heap->stats.used_requested ||
        free_count != heap->stats.free_blocks) {
        return 8;
    }
    return 0;
}

int hk_tag_check(const hk_heap_t *heap, const hk_tag_span_t *span) { return check_chain(heap, span, 0); }

int hk_tag_check_unmerged(const hk_heap_t *heap, const hk_tag_span_t *span) { return check_chain(heap, span, 1); }
