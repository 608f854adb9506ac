/* Boundary-tagged blocks: span set-up, pointer lookup, walk and check (see tagged.h). */
#include "tagged.h"

size_t hk_tag_span_init(hk_tag_span_t *span, void *mem, size_t size)
{
    uintptr_t lo = (uintptr_t)mem;
    uintptr_t hi;
    uintptr_t first;
    uintptr_t sentinel;
    size_t span_size;

    if (size > UINTPTR_MAX - lo) {
        size = (size_t)(UINTPTR_MAX - lo);
    }
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
    span->first = (hk_tag_t *)first;
    span->sentinel = (hk_tag_t *)sentinel;
    hk_tag_set(span->sentinel, HK_TAG_USED, 0);
    hk_tag_set(span->first, HK_TAG_PREV_USED, 0);
    hk_tag_make_free(span->first, span_size);
    return span_size;
}

static int tag_sane(const hk_tag_span_t *span, const hk_tag_t *t)
{
    size_t size;
    if (!hk_tag_intact(t)) {
        return 0;
    }
    size = hk_tag_size(t);
    return size >= HK_TAG_MIN_BLOCK && size % HK_ALIGN == 0 &&
           size <= (size_t)((uintptr_t)span->sentinel - (uintptr_t)t);
}

/* Error path only: walk the chain to tell a broken tag from a pointer into a block. */
static hk_error_t classify_bad_tag(const hk_tag_span_t *span, const hk_tag_t *t)
{
    const hk_tag_t *b = span->first;
    while (b < span->sentinel && tag_sane(span, b)) {
        const hk_tag_t *next = hk_tag_next(b);
        if (b == t) {
            return HK_ERR_CORRUPT;
        }
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
    if (!hk_tag_intact(next) || !hk_tag_prev_used(next) || t->slack > hk_tag_usable(t)) {
        hk_report(heap, HK_ERR_CORRUPT, ptr);
        return NULL;
    }
    return t;
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

int hk_tag_check(const hk_heap_t *heap, const hk_tag_span_t *span)
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
            if (!prev_used) {
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
    if (!hk_tag_intact(b) || hk_tag_size(b) != 0 || !hk_tag_used(b) || hk_tag_prev_used(b) != prev_used) {
        return 7;
    }
    if (free_bytes != heap->stats.free_bytes || used_count != heap->stats.used_blocks ||
        granted != heap->stats.used_granted || requested != heap->stats.used_requested ||
        free_count != heap->stats.free_blocks) {
        return 8;
    }
    return 0;
}
