/* SPDX-License-Identifier: MIT */
/*
 * seqfit: sequential fits over an address-ordered free list.
 *
 * The arena is a chain of boundary-tagged blocks (tagged.h) followed by the
 * top: the untouched free block that reaches the end of the arena. A request
 * first searches the free list (a "reuse") with the policy chosen at init:
 *
 *   first  the lowest-addressed block that fits,
 *   next   first fit, resumed where the previous search stopped,
 *   best   the smallest block that fits (an exact fit ends the search),
 *   worst  the largest block;
 *
 * and only when nothing on the list fits does it carve the request from the
 * bottom of the top (a "grow", as sbrk would). A found block is split when
 * the remainder can form a block of its own (HK_TAG_MIN_BLOCK). Free merges
 * the block with both physical neighbours at once; a block that comes to
 * touch the top merges into it, which lowers the top again.
 *
 * With first fit this is the placement of FreeRTOS heap_4 (first fit over an
 * address-ordered list whose last block is the rest of the heap).
 *
 * Time: malloc, free, realloc and aligned_alloc are O(free blocks): the
 * search, and the address-ordered insert of a freed block or a split-off
 * remainder; get_stats walks the free list too. usable_size is O(1).
 * Overhead: the tag per used block (tagged.h: 8 bytes, or 4 with
 * HK_TAG_WIDE 0 for heaps up to 256 KiB; 4 more, and 4 bytes of canary room, at HK_HARDENING
 * >= 2); a free block needs HK_TAG_MIN_BLOCK. Misuse detection is that of
 * tagged.h; with HK_CHECKS a search steps only along links that point at
 * free blocks linking back, and a found block must be sound before it is
 * handed out: damage is reported and the damaged part of the list dropped.
 *
 * The fits-cse3320 seed's counters (reuses, grows, splits, coalesces, free
 * blocks, bytes requested, max heap: hk_seqfit_counters_t) are kept only
 * with HK_SEQFIT_PAPER_COUNTERS (seqfit.h); splits, coalesces and free
 * blocks are hk_stats_t's, the rest is counted for the paper alone.
 */
#include "heapkit/seqfit.h"

#include "tagged.h"

struct hk_seqfit {
    hk_heap_t heap;
    hk_tag_span_t span;
    hk_seqfit_policy_t policy;
    hk_tag_t *head;  /* free blocks below the top, by address */
    hk_tag_t *rover; /* next fit: where the last search stopped */
    hk_tag_t *top;   /* free block ending at the sentinel, or NULL */
#if HK_SEQFIT_PAPER_COUNTERS
    size_t reuses;
    size_t grows;
    size_t requested_total;
    size_t max_heap;
#endif
};

static hk_tag_t *next_free(const hk_tag_t *b) { return hk_tag_links(b)->next; }

static void link_between(hk_seqfit_t *s, hk_tag_t *b, hk_tag_t *prev, hk_tag_t *next)
{
    hk_tag_links(b)->prev = prev;
    hk_tag_links(b)->next = next;
    if (prev != NULL) {
        hk_tag_links(prev)->next = b;
    } else {
        s->head = b;
    }
    if (next != NULL) {
        hk_tag_links(next)->prev = b;
    }
}

/*
 * The free block after b on the list, for a search or an insert. With HK_CHECKS a link
 * that is not placed at a free block linking back ends the list there
 * (reported): the blocks past it are lost, never handed out.
 */
static hk_tag_t *step(hk_seqfit_t *s, hk_tag_t *b)
{
    hk_tag_t *next = next_free(b);
    if (HK_CHECKS && next != NULL && (!hk_tag_link_sound(&s->span, next) || hk_tag_links(next)->prev != b)) {
        hk_report(&s->heap, HK_ERR_CORRUPT, hk_tag_links(b));
        hk_tag_links(b)->next = NULL;
        return NULL;
    }
    return next;
}

static void list_insert(hk_seqfit_t *s, hk_tag_t *b)
{
    hk_tag_t *prev = NULL;
    hk_tag_t *next = s->head;
    while (next != NULL && next < b) {
        prev = next;
        next = step(s, next);
    }
    link_between(s, b, prev, next);
}

static void list_remove(hk_seqfit_t *s, hk_tag_t *b)
{
    hk_tag_links_t *links = hk_tag_links(b);
    if (links->prev != NULL) {
        hk_tag_links(links->prev)->next = links->next;
    } else {
        s->head = links->next;
    }
    if (links->next != NULL) {
        hk_tag_links(links->next)->prev = links->prev;
    }
    if (s->rover == b) {
        s->rover = links->next;
    }
}

static hk_tag_t *search(hk_seqfit_t *s, size_t size)
{
    hk_tag_t *b;
    hk_tag_t *pick = NULL;
    switch (s->policy) {
    case HK_SEQFIT_FIRST:
        for (b = s->head; b != NULL && hk_tag_size(b) < size; b = step(s, b)) {
        }
        return b;
    case HK_SEQFIT_NEXT: {
        hk_tag_t *start = (s->rover != NULL) ? s->rover : s->head;
        b = start;
        while (b != NULL) {
            if (hk_tag_size(b) >= size) {
                s->rover = b;
                return b;
            }
            b = step(s, b);
            if (b == NULL && start != s->head) {
                b = s->head;
            }
            if (b == start) {
                break;
            }
        }
        return NULL;
    }
    case HK_SEQFIT_BEST:
        for (b = s->head; b != NULL; b = step(s, b)) {
            if (hk_tag_size(b) >= size && (pick == NULL || hk_tag_size(b) < hk_tag_size(pick))) {
                pick = b;
                if (hk_tag_size(b) == size) {
                    break;
                }
            }
        }
        return pick;
    case HK_SEQFIT_WORST:
        for (b = s->head; b != NULL; b = step(s, b)) {
            if (pick == NULL || hk_tag_size(b) > hk_tag_size(pick)) {
                pick = b;
            }
        }
        return (pick != NULL && hk_tag_size(pick) >= size) ? pick : NULL;
    }
    return NULL;
}

/* A listed block's links are placed and link back to it (HK_CHECKS). */
static int links_sound(const hk_seqfit_t *s, const hk_tag_t *b)
{
    const hk_tag_links_t *links = hk_tag_links(b);
    return !HK_CHECKS ||
           (hk_tag_link_sound(&s->span, links->next) && hk_tag_link_sound(&s->span, links->prev) &&
            (links->next == NULL || hk_tag_links(links->next)->prev == b) &&
            (links->prev != NULL ? hk_tag_links(links->prev)->next == b : s->head == b));
}

/*
 * Take free block b off the list, or out of the top; 0 (reported, left
 * alone) if its links are damaged. A block counts as free while it is
 * filed: detach and file keep the counters, the list operations do not.
 */
static int detach(hk_seqfit_t *s, hk_tag_t *b)
{
    if (b == s->top) {
        s->top = NULL;
    } else if (links_sound(s, b)) {
        list_remove(s, b);
    } else {
        hk_report(&s->heap, HK_ERR_CORRUPT, hk_tag_payload(b));
        return 0;
    }
    s->heap.stats.free_blocks--;
    s->heap.stats.free_bytes -= hk_tag_size(b);
    return 1;
}

/* File free block b: it becomes the top if it reaches the sentinel, else goes on the list. */
static void file(hk_seqfit_t *s, hk_tag_t *b)
{
    if (hk_tag_next(b) == s->span.sentinel) {
        s->top = b;
    } else {
        list_insert(s, b);
    }
    s->heap.stats.free_blocks++;
    s->heap.stats.free_bytes += hk_tag_size(b);
}

#if HK_SEQFIT_PAPER_COUNTERS
static void note_top(hk_seqfit_t *s)
{
    const hk_tag_t *top = (s->top != NULL) ? s->top : s->span.sentinel;
    size_t used = (size_t)((uintptr_t)top - (uintptr_t)s->span.first);
    if (used > s->max_heap) {
        s->max_heap = used;
    }
}
#endif

/* Turn free block b (the top, or on the list) into a used block of `size` gross bytes. */
static void *hand_out(hk_seqfit_t *s, hk_tag_t *b, size_t size, size_t requested)
{
    size_t rest = hk_tag_size(b) - size;
    int from_top = (b == s->top);
    int was_rover = (b == s->rover);

    if (!hk_tag_poison_intact_upto(b, hk_tag_at((uintptr_t)b + size))) {
        hk_report(&s->heap, HK_ERR_CORRUPT, hk_tag_payload(b)); /* written after free */
    }
    if (!detach(s, b)) {
        return NULL;
    }
    if (rest >= HK_TAG_MIN_BLOCK) {
        hk_tag_t *r = hk_tag_at((uintptr_t)b + size);
        hk_tag_write(b, size, 1);
        hk_tag_write(r, rest, 0);
        file(s, r);
        if (!from_top) {
            s->heap.stats.split_count++; /* carving the top is a grow, not a split */
        }
        if (was_rover) {
            s->rover = r; /* next fit resumes at the remainder, where b stood */
        }
    } else {
        b->size_used |= 1u;
    }
    hk_tag_arm_canary(b, requested);
#if HK_CANARIES
    s->heap.stats.used_requested += requested;
#endif
    s->heap.stats.alloc_count++;
    hk_note_low(&s->heap.stats);
#if HK_SEQFIT_PAPER_COUNTERS
    if (from_top) {
        s->grows++;
    } else {
        s->reuses++;
    }
    s->requested_total += requested;
    note_top(s);
#endif
    return hk_tag_payload(b);
}

/*
 * A found block must be a sound free block before it is handed out
 * (HK_CHECKS): one that is not is reported and unlinked where its links
 * allow, and never handed out.
 */
static int fit_sound(hk_seqfit_t *s, hk_tag_t *b)
{
    if (!HK_CHECKS || (!hk_tag_used(b) && hk_tag_right_sound(&s->span, b))) {
        return 1;
    }
    hk_report(&s->heap, HK_ERR_CORRUPT, hk_tag_payload(b));
    if (b == s->top) {
        s->top = NULL;
    } else if (!links_sound(s, b)) {
        s->head = NULL; /* the list cannot be walked past b: drop it whole */
        s->rover = NULL;
    } else {
        detach(s, b); /* its links hold: no second report */
    }
    return 0;
}

/* A free block of at least size gross bytes: from the list, else the top. */
static hk_tag_t *find_fit(hk_seqfit_t *s, size_t size)
{
    hk_tag_t *b = search(s, size);
    if (b == NULL && s->top != NULL && hk_tag_size(s->top) >= size) {
        b = s->top;
    }
    return b;
}

void *hk_seqfit_malloc(hk_seqfit_t *s, size_t size)
{
    size_t gross = hk_tag_gross(size);
    hk_tag_t *b;
    if (gross == 0) {
        return NULL;
    }
    while ((b = find_fit(s, gross)) != NULL && !fit_sound(s, b)) {
    }
    return (b != NULL) ? hand_out(s, b, gross, size) : NULL;
}

void *hk_seqfit_aligned_alloc(hk_seqfit_t *s, size_t alignment, size_t size)
{
    size_t gross = hk_tag_gross(size);
    size_t room = alignment + HK_TAG_MIN_BLOCK;
    hk_tag_t *b;
    uintptr_t payload;
    uintptr_t aligned;

    HK_ASSERT(hk_is_pow2(alignment) && alignment > HK_ALIGN);
    if (gross == 0 || alignment > HK_TAG_MAX_BLOCK / 2u || gross > HK_TAG_MAX_BLOCK - room) {
        return NULL;
    }
    while ((b = find_fit(s, gross + room)) != NULL && !fit_sound(s, b)) {
    }
    if (b == NULL) {
        return NULL;
    }
    payload = (uintptr_t)hk_tag_payload(b);
    aligned = hk_align_up_uptr(payload, alignment);
    if (aligned != payload && aligned - payload < HK_TAG_MIN_BLOCK) {
        aligned = hk_align_up_uptr(payload + HK_TAG_MIN_BLOCK, alignment);
    }
    if (aligned != payload) {
        /* The gap in front stays (or, cut from the top, becomes) a listed free block. */
        size_t gap = (size_t)(aligned - payload);
        size_t whole = hk_tag_size(b);
        hk_tag_t *front = b;
        if (!detach(s, front)) {
            return NULL;
        }
        b = hk_tag_at((uintptr_t)front + gap);
        hk_tag_write(front, gap, 0);
        hk_tag_write(b, whole - gap, 0);
        hk_tag_poison(front);
        file(s, front); /* b follows it: it goes on the list */
        file(s, b);
        s->heap.stats.split_count++;
    }
    return hand_out(s, b, gross, size);
}

static const hk_tag_lists_t seqfit_lists;

static int detach_cb(hk_heap_t *h, hk_tag_t *b) { return detach((hk_seqfit_t *)h, b); }
static void file_cb(hk_heap_t *h, hk_tag_t *b) { file((hk_seqfit_t *)h, b); }
static const hk_tag_lists_t seqfit_lists = {detach_cb, file_cb};

void hk_seqfit_free(hk_seqfit_t *s, void *ptr)
{
    hk_tag_t *b = hk_tag_lookup(&s->heap, &s->span, ptr);
    if (b == NULL) {
        return;
    }
#if HK_CANARIES
    s->heap.stats.used_requested -= b->requested;
#endif
    s->heap.stats.free_count++;
    file(s, hk_tag_coalesce(&s->heap, &s->span, &seqfit_lists, b));
}

void *hk_seqfit_resize(hk_seqfit_t *s, void *ptr, size_t size)
{
    hk_tag_t *b = hk_tag_lookup(&s->heap, &s->span, ptr);
    if (b == NULL || !hk_tag_resize(&s->heap, &s->span, &seqfit_lists, b, size)) {
        return NULL;
    }
#if HK_SEQFIT_PAPER_COUNTERS
    note_top(s);
#endif
    return ptr;
}

size_t hk_seqfit_usable_size(hk_seqfit_t *s, const void *ptr)
{
    const hk_tag_t *b = hk_tag_lookup(&s->heap, &s->span, ptr);
    return (b != NULL) ? hk_tag_usable_size(b) : 0;
}

void hk_seqfit_get_stats(hk_seqfit_t *s, hk_stats_t *out)
{
    const hk_tag_t *b;
    hk_stats_read(&s->heap, out);
    hk_tag_derive_stats(out);
    out->largest_free = (s->top != NULL) ? hk_tag_size(s->top) : 0;
    out->smallest_free = out->largest_free;
    for (b = s->head; b != NULL && hk_tag_link_sound(&s->span, b); b = next_free(b)) {
        size_t size = hk_tag_size(b);
        if (size > out->largest_free) {
            out->largest_free = size;
        }
        if (out->smallest_free == 0 || size < out->smallest_free) {
            out->smallest_free = size;
        }
    }
}

#if HK_SEQFIT_PAPER_COUNTERS
void hk_seqfit_get_counters(const hk_seqfit_t *s, hk_seqfit_counters_t *out)
{
    out->reuses = s->reuses;
    out->grows = s->grows;
    out->splits = s->heap.stats.split_count;
    out->coalesces = s->heap.stats.coalesce_count;
    out->free_blocks = s->heap.stats.free_blocks - (s->top != NULL);
    out->requested = s->requested_total;
    out->max_heap = s->max_heap;
}
#endif

void hk_seqfit_walk(hk_seqfit_t *s, hk_walk_fn visit, void *ctx) { hk_tag_walk(&s->span, visit, ctx); }

int hk_seqfit_owns(const hk_seqfit_t *s, const void *ptr) { return hk_in_range(ptr, s->span.first, s->span.sentinel); }

hk_check_t hk_seqfit_check(hk_seqfit_t *s)
{
    const hk_tag_t *prev = NULL;
    const hk_tag_t *b;
    size_t listed = 0;
    hk_check_t rc = hk_tag_check(&s->heap, &s->span, 1, s->heap.stats.free_blocks);
    int rover_listed = (s->rover == NULL);

    if (rc != HK_CHECK_OK) {
        return rc;
    }
    if (s->top != NULL && (hk_tag_used(s->top) || hk_tag_next(s->top) != s->span.sentinel)) {
        return HK_CHECK_LIST;
    }
    if (s->top == NULL && !hk_tag_prev_used(s->span.sentinel)) {
        return HK_CHECK_LIST;
    }
    for (b = s->head; b != NULL; prev = b, b = next_free(b)) {
        if (!hk_tag_link_sound(&s->span, b) || b == s->top) {
            return HK_CHECK_LINK;
        }
        if (hk_tag_links(b)->prev != prev || (prev != NULL && prev >= b)) {
            return HK_CHECK_LINK;
        }
        if (++listed > s->heap.stats.free_blocks) {
            return HK_CHECK_COUNT;
        }
        rover_listed |= (b == s->rover);
    }
    if (listed + (s->top != NULL) != s->heap.stats.free_blocks) {
        return HK_CHECK_COUNT;
    }
    return rover_listed ? HK_CHECK_OK : HK_CHECK_LIST;
}

static void *seqfit_op_aligned(hk_heap_t *h, size_t alignment, size_t size)
{
    return hk_seqfit_aligned_alloc((hk_seqfit_t *)h, alignment, size);
}

HK_DEFINE_OPS(hk_seqfit, hk_seqfit_t, "seqfit", seqfit_op_aligned);

hk_heap_t *hk_seqfit_heap(hk_seqfit_t *s) { return hk_bind(&s->heap, &hk_seqfit_ops); }

const char *hk_seqfit_policy_name(hk_seqfit_policy_t policy)
{
    static const char *const names[] = {"first", "next", "best", "worst"};
    return ((unsigned)policy < 4u) ? names[policy] : "?";
}

hk_seqfit_t *hk_seqfit_init(void *arena, size_t size, hk_seqfit_policy_t policy, hk_status_t *status)
{
    uintptr_t base = hk_align_up_uptr((uintptr_t)arena, sizeof(void *));
    uintptr_t end = hk_arena_end(arena, size);
    hk_seqfit_t *s;
    hk_status_t rc;
    size_t span_size;

    if (arena == NULL || (unsigned)policy > (unsigned)HK_SEQFIT_WORST) {
        return hk_init_status(status, HK_EINVAL);
    }
    if (end < base || end - base < sizeof(hk_seqfit_t)) {
        return hk_init_status(status, HK_ETOOSMALL);
    }
    s = (hk_seqfit_t *)base;
    rc = hk_tag_span_init(&s->span, base + sizeof(hk_seqfit_t), end, HK_TAG_MAX_BLOCK);
    if (rc != HK_OK) {
        return hk_init_status(status, rc);
    }
    span_size = hk_tag_span_bytes(&s->span);
    hk_heap_setup(&s->heap, span_size);
    s->policy = policy;
    s->head = NULL;
    s->rover = NULL;
    s->top = s->span.first;
    s->heap.stats.free_blocks = 1;
#if HK_SEQFIT_PAPER_COUNTERS
    s->reuses = 0;
    s->grows = 0;
    s->requested_total = 0;
    s->max_heap = 0;
#endif
    hk_init_status(status, HK_OK);
    return s;
}
