/* SPDX-License-Identifier: MIT */
/*
 * regions: one heap over up to N separate regions, each holding a sub-heap.
 *
 * Layout. The control struct sits at the start of the caller's buffer and is
 * followed by N slots {start, end, sub-heap}, kept sorted by start; regions
 * never overlap each other nor the buffer. Each sub-heap is built by the
 * caller's make function at the start of its region, so any catalog
 * allocator can serve (one whose counters live in hk_heap_t.stats: every
 * entry but lfpool).
 *
 * Dispatch. malloc and aligned_alloc try the sub-heaps in address order,
 * skipping those whose free bytes cannot hold the request; free,
 * usable_size and resize find the owner by binary search on the region
 * starts. resize asks the owner to resize in place; hk_realloc moves the
 * block otherwise, to any region with room. Sub-heaps are called through their own
 * ops, unlocked: the uniform layer locks the regions heap as a whole.
 *
 * Time: malloc O(regions x sub-heap malloc) in the worst case, O(sub-heap)
 * when the first region with room serves it; free, usable_size and owns
 * O(log regions) plus the sub-heap's cost; add and remove O(regions)
 * (the slots shift); get_stats, walk and check visit every region.
 *
 * Statistics are the sums of the sub-heaps' get_stats, except fail_count and
 * realloc_count, the regions heap's own as hk_malloc and hk_realloc count
 * them (a sub-heap that cannot serve a request is no failure while another
 * one can), and the free bytes and
 * their low-water mark, which the regions heap follows call by call (see
 * call_end). Adding a region raises capacity, free_bytes and min_ever_free
 * by its free bytes; removing one lowers them again (the mark never above
 * free_bytes).
 *
 * Overhead: the control struct plus 3 words per slot, and each region's own
 * sub-heap control data.
 *
 * Misuse detected: a pointer outside every region is reported as
 * HK_ERR_FOREIGN_PTR; the sub-heaps detect the rest (interior pointers,
 * double free, corrupted headers) and their reports are forwarded to the
 * regions heap's hooks. Either way the heap is left unchanged.
 */
#include "heapkit/regions.h"

#include "hk_internal.h"

typedef struct region_slot {
    uintptr_t start;
    uintptr_t end;
    hk_heap_t *heap;
} region_slot_t;

struct hk_regions {
    hk_heap_t heap;
    hk_make_fn make;
    uintptr_t mem_lo; /* the control buffer, which no region may overlap */
    uintptr_t mem_hi;
    size_t count;
    size_t cap;
    region_slot_t slot[];
};

HK_STATIC_ASSERT(sizeof(region_slot_t) == 3u * sizeof(void *), slot_is_three_words);
HK_STATIC_ASSERT(sizeof(hk_regions_t) == HK_REGIONS_FOOTPRINT(0), footprint_macro_matches);

static void *regions_op_aligned(hk_heap_t *heap, size_t alignment, size_t size)
{
    return hk_regions_aligned_alloc((hk_regions_t *)heap, alignment, size);
}

HK_DEFINE_OPS(hk_regions, hk_regions_t, "regions", regions_op_aligned);

size_t hk_regions_footprint(size_t max_regions)
{
    if (max_regions > (SIZE_MAX - sizeof(hk_regions_t)) / sizeof(region_slot_t)) {
        return SIZE_MAX;
    }
    return sizeof(hk_regions_t) + max_regions * sizeof(region_slot_t);
}

hk_regions_t *hk_regions_init(void *mem, size_t mem_size, hk_make_fn make, hk_status_t *status)
{
    uintptr_t lo = (uintptr_t)mem;
    uintptr_t hi;
    uintptr_t at;
    hk_regions_t *r;

    if (mem == NULL || make == NULL) {
        return hk_init_status(status, HK_EINVAL);
    }
    hi = hk_arena_end(mem, mem_size);
    at = hk_align_up_uptr(lo, HK_ALIGN);
    if (at < lo || at > hi || hi - at < hk_regions_footprint(1)) {
        return hk_init_status(status, HK_ETOOSMALL);
    }
    r = (hk_regions_t *)at;
    hk_heap_setup(&r->heap, 0);
    r->make = make;
    r->mem_lo = lo;
    r->mem_hi = hi;
    r->count = 0;
    r->cap = (size_t)(hi - at - sizeof(hk_regions_t)) / sizeof(region_slot_t);
    hk_init_status(status, HK_OK);
    return r;
}

hk_heap_t *hk_regions_heap(hk_regions_t *regions) { return hk_bind(&regions->heap, &hk_regions_ops); }

size_t hk_regions_count(const hk_regions_t *regions) { return regions->count; }

size_t hk_regions_capacity(const hk_regions_t *regions) { return regions->cap; }

/* Index of the first region starting above p (0..count): p's owner, if any, is the one before. */
static size_t first_above(const hk_regions_t *r, uintptr_t p)
{
    size_t lo = 0;
    size_t hi = r->count;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (r->slot[mid].start <= p) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    return lo;
}

size_t hk_regions_index_of(const hk_regions_t *regions, const void *ptr)
{
    uintptr_t p = (uintptr_t)ptr;
    size_t i = first_above(regions, p);
    if (i == 0 || p >= regions->slot[i - 1].end) {
        return regions->count;
    }
    return i - 1;
}

int hk_regions_owns(const hk_regions_t *regions, const void *ptr)
{
    return hk_regions_index_of(regions, ptr) < regions->count;
}

int hk_regions_at(const hk_regions_t *regions, size_t i, hk_region_info_t *info)
{
    if (i >= regions->count) {
        return 0;
    }
    info->arena = (void *)regions->slot[i].start;
    info->size = (size_t)(regions->slot[i].end - regions->slot[i].start);
    info->heap = regions->slot[i].heap;
    return 1;
}

/* A sub-heap's misuse report becomes the regions heap's. */
static void forward_error(void *ctx, hk_heap_t *sub, hk_error_t error, const void *ptr)
{
    (void)sub;
    hk_report(&((hk_regions_t *)ctx)->heap, error, ptr);
}

static int overlaps(uintptr_t a_lo, uintptr_t a_hi, uintptr_t b_lo, uintptr_t b_hi)
{
    return a_lo < b_hi && b_lo < a_hi;
}

hk_status_t hk_regions_add(hk_regions_t *regions, void *arena, size_t size)
{
    uintptr_t lo = (uintptr_t)arena;
    uintptr_t hi;
    size_t i;
    size_t j;
    hk_status_t st = HK_EINVAL;
    hk_heap_t *sub;
    hk_hooks_t hooks;
    hk_stats_t *s = &regions->heap.stats;

    if (arena == NULL || lo % HK_ALIGN != 0 || regions->count == regions->cap) {
        return HK_EINVAL;
    }
    hi = hk_arena_end(arena, size);
    i = first_above(regions, lo);
    if ((i > 0 && regions->slot[i - 1].end > lo) || (i < regions->count && regions->slot[i].start < hi) ||
        overlaps(lo, hi, regions->mem_lo, regions->mem_hi)) {
        return HK_EINVAL;
    }
    sub = regions->make(arena, (size_t)(hi - lo), &st);
    if (sub == NULL) {
        return st != HK_OK ? st : HK_EINVAL;
    }
    hooks.lock = NULL;
    hooks.unlock = NULL;
    hooks.on_error = forward_error;
    hooks.ctx = regions;
    hk_set_hooks(sub, &hooks);
    for (j = regions->count; j > i; j--) {
        regions->slot[j] = regions->slot[j - 1];
    }
    regions->slot[i].start = lo;
    regions->slot[i].end = hi;
    regions->slot[i].heap = sub;
    regions->count++;
    s->capacity += sub->stats.capacity;
    s->free_bytes += sub->stats.free_bytes;
    s->min_ever_free += sub->stats.free_bytes;
    return HK_OK;
}


hk_status_t hk_regions_remove(hk_regions_t *regions, size_t i, hk_region_info_t *info)
{
    hk_stats_t *s = &regions->heap.stats;
    hk_stats_t sub;
    size_t shortfall;

    if (i >= regions->count) {
        return HK_EINVAL;
    }
    regions->slot[i].heap->ops->get_stats(regions->slot[i].heap, &sub);
    if (sub.used_blocks != 0) {
        return HK_EINVAL;
    }
    if (info != NULL) {
        hk_regions_at(regions, i, info);
    }
    /* The counts of what the region served stay in the regions heap's own. */
    s->alloc_count += sub.alloc_count;
    s->free_count += sub.free_count;
    s->split_count += sub.split_count;
    s->coalesce_count += sub.coalesce_count;
    s->capacity -= sub.capacity;
    s->free_bytes -= sub.free_bytes;
    shortfall = sub.free_bytes < s->min_ever_free ? sub.free_bytes : s->min_ever_free;
    s->min_ever_free -= shortfall;
    if (s->min_ever_free > s->free_bytes) {
        s->min_ever_free = s->free_bytes;
    }
    regions->count--;
    for (; i < regions->count; i++) {
        regions->slot[i] = regions->slot[i + 1];
    }
    return HK_OK;
}

/*
 * Around each sub-heap call: the sum of the sub-heaps' free bytes (which
 * every allocator keeps current) follows the sub-heap's change, and its
 * low-water mark is taken after every call, so a realloc that moves a
 * block is seen holding both.
 */
static void call_end(hk_regions_t *r, const hk_heap_t *sub, size_t free_before)
{
    hk_stats_t *s = &r->heap.stats;
    s->free_bytes = s->free_bytes - free_before + sub->stats.free_bytes;
    hk_note_low(s);
}

static void *sub_malloc(hk_regions_t *r, hk_heap_t *sub, size_t size)
{
    size_t free_before = sub->stats.free_bytes;
    void *p = sub->ops->malloc(sub, size);
    call_end(r, sub, free_before);
    return p;
}

static void *sub_aligned(hk_regions_t *r, hk_heap_t *sub, size_t alignment, size_t size)
{
    size_t free_before = sub->stats.free_bytes;
    void *p = sub->ops->aligned_alloc(sub, alignment, size);
    call_end(r, sub, free_before);
    return p;
}

static void sub_free(hk_regions_t *r, hk_heap_t *sub, void *ptr)
{
    size_t free_before = sub->stats.free_bytes;
    sub->ops->free(sub, ptr);
    call_end(r, sub, free_before);
}

/* Could this sub-heap serve size bytes at all? Its free bytes are a bound every allocator keeps. */
static int may_fit(const hk_heap_t *sub, size_t size)
{
    return sub->stats.free_bytes != 0 && sub->stats.free_bytes >= size;
}

/* malloc from any region but `skip` (count: none skipped). */
static void *malloc_elsewhere(hk_regions_t *r, size_t size, size_t skip)
{
    size_t i;
    for (i = 0; i < r->count; i++) {
        hk_heap_t *sub = r->slot[i].heap;
        if (i != skip && may_fit(sub, size)) {
            void *p = sub_malloc(r, sub, size);
            if (p != NULL) {
                return p;
            }
        }
    }
    return NULL;
}

void *hk_regions_malloc(hk_regions_t *regions, size_t size) { return malloc_elsewhere(regions, size, regions->count); }

void *hk_regions_aligned_alloc(hk_regions_t *regions, size_t alignment, size_t size)
{
    size_t i;
    HK_ASSERT(hk_is_pow2(alignment) && alignment > HK_ALIGN);
    for (i = 0; i < regions->count; i++) {
        hk_heap_t *sub = regions->slot[i].heap;
        if (sub->ops->aligned_alloc != NULL && may_fit(sub, size)) {
            void *p = sub_aligned(regions, sub, alignment, size);
            if (p != NULL) {
                return p;
            }
        }
    }
    return NULL;
}

/* The sub-heap owning ptr, or NULL after reporting a foreign pointer. */
static hk_heap_t *owner(hk_regions_t *r, const void *ptr, size_t *index)
{
    size_t i = hk_regions_index_of(r, ptr);
    if (i == r->count) {
        hk_report(&r->heap, HK_ERR_FOREIGN_PTR, ptr);
        return NULL;
    }
    *index = i;
    return r->slot[i].heap;
}

void hk_regions_free(hk_regions_t *regions, void *ptr)
{
    size_t i;
    hk_heap_t *sub;
    if (ptr == NULL) {
        return;
    }
    sub = owner(regions, ptr, &i);
    if (sub != NULL) {
        sub_free(regions, sub, ptr);
    }
}

void *hk_regions_resize(hk_regions_t *regions, void *ptr, size_t size)
{
    size_t i;
    size_t free_before;
    hk_heap_t *sub = owner(regions, ptr, &i);
    void *p;
    if (sub == NULL || sub->ops->resize == NULL) {
        return NULL; /* misuse, reported; or a sub-heap that cannot resize in place: hk_realloc moves */
    }
    free_before = sub->stats.free_bytes;
    p = sub->ops->resize(sub, ptr, size);
    call_end(regions, sub, free_before);
    return p;
}

size_t hk_regions_usable_size(hk_regions_t *regions, const void *ptr)
{
    size_t i;
    hk_heap_t *sub;
    if (ptr == NULL) {
        return 0;
    }
    sub = owner(regions, ptr, &i);
    return sub != NULL ? sub->ops->usable_size(sub, ptr) : 0;
}

void hk_regions_get_stats(hk_regions_t *regions, hk_stats_t *out)
{
    size_t i;
    hk_stats_read(&regions->heap, out);
    for (i = 0; i < regions->count; i++) {
        hk_stats_t s;
        regions->slot[i].heap->ops->get_stats(regions->slot[i].heap, &s);
        out->used_requested += s.used_requested;
        out->used_granted += s.used_granted;
        out->used_blocks += s.used_blocks;
        out->alloc_count += s.alloc_count;
        out->free_count += s.free_count;
        out->split_count += s.split_count;
        out->coalesce_count += s.coalesce_count;
        out->free_blocks += s.free_blocks;
        if (s.largest_free > out->largest_free) {
            out->largest_free = s.largest_free;
        }
        if (s.smallest_free != 0 && (out->smallest_free == 0 || s.smallest_free < out->smallest_free)) {
            out->smallest_free = s.smallest_free;
        }
    }
}

void hk_regions_walk(hk_regions_t *regions, hk_walk_fn visit, void *ctx)
{
    size_t i;
    for (i = 0; i < regions->count; i++) {
        regions->slot[i].heap->ops->walk(regions->slot[i].heap, visit, ctx);
    }
}

/*
 * Every invariant: slots sorted, disjoint and outside the control buffer,
 * each sub-heap's own check, the sums of capacity and free bytes equal to
 * the sub-heaps', the low-water mark at or below the free bytes.
 */
hk_check_t hk_regions_check(hk_regions_t *regions)
{
    const hk_stats_t *s = &regions->heap.stats;
    size_t capacity = 0;
    size_t free_bytes = 0;
    size_t i;

    for (i = 0; i < regions->count; i++) {
        const region_slot_t *slot = &regions->slot[i];
        hk_check_t rc;
        if (slot->start >= slot->end || (i > 0 && regions->slot[i - 1].end > slot->start) ||
            overlaps(slot->start, slot->end, regions->mem_lo, regions->mem_hi) ||
            !hk_in_range(slot->heap, (const void *)slot->start, (const void *)slot->end)) {
            return HK_CHECK_CONTROL;
        }
        rc = slot->heap->ops->check(slot->heap);
        if (rc != HK_CHECK_OK) {
            return rc;
        }
        capacity += slot->heap->stats.capacity;
        free_bytes += slot->heap->stats.free_bytes;
    }
    if (regions->count > regions->cap) {
        return HK_CHECK_CONTROL;
    }
    if (s->capacity != capacity || s->free_bytes != free_bytes || s->min_ever_free > s->free_bytes) {
        return HK_CHECK_STATS;
    }
    return HK_CHECK_OK;
}
