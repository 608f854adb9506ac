/*
 * tlsf: two-level segregated fit (Masmano, Ripoll, Crespo, Real, 2004).
 *
 * Data structure. Free blocks sit on doubly linked lists indexed by two
 * levels: the first level fl is the power of two below the block size, the
 * second level sl splits [2^fl, 2^(fl+1)) into 2^sl_log2 equal ranges. Sizes
 * below 2^(sl_log2 + log2 HK_ALIGN) map linearly into fl = 0. One bit per
 * list, in fl_bitmap (which first levels have any free block) and
 * sl_bitmap[fl] (which of their lists), so
 *
 *   malloc: round the request up to the next list boundary, then at most two
 *           find-first-set instructions find a list whose every block fits;
 *   free:   merge with the two physical neighbours (boundary tags, see
 *           tagged.h) and push the result on its list.
 *
 * Both are O(1): no loop depends on the number of blocks or the heap size.
 * Before rounding up, malloc also tries the head of the request's own list,
 * which saves the rounding waste whenever that block happens to fit.
 *
 * Overhead: 8 bytes per used block (the tag); blocks are at least
 * HK_TAG_MIN_BLOCK; the control block holds fl_count * 2^sl_log2 list heads,
 * sized at init for the arena at hand.
 *
 * Misuse detected: foreign pointers (range), interior pointers and corrupted
 * tags (tag check hash, told apart by a walk on the error path), double free
 * (tag says free, also after the block was merged into a neighbour, as long
 * as its bytes have not been handed out again).
 *
 * get_stats scans the largest and the smallest non-empty list to report the
 * exact largest and smallest free block: O(length of those lists).
 */
#include "heapkit/tlsf.h"

#include "tagged.h"

#define FL_MAX 32u

struct hk_tlsf {
    hk_heap_t heap;
    hk_tag_span_t span;
    unsigned sl_log2;
    unsigned small_shift; /* log2 of the first size that is not in fl = 0 */
    unsigned fl_count;
    uint32_t fl_bitmap;
    uint32_t sl_bitmap[FL_MAX];
    hk_tag_t **heads; /* fl_count << sl_log2 lists, right after this struct */
};

HK_STATIC_ASSERT(HK_TLSF_SL_LOG2 >= 1 && HK_TLSF_SL_LOG2 <= 5, sl_log2_default_in_range);

typedef struct list_index {
    unsigned fl;
    unsigned sl;
} list_index_t;

static unsigned align_log2(void) { return hk_log2_floor(HK_ALIGN); }

/* The list a block of this gross size belongs on. */
static list_index_t list_of(const hk_tlsf_t *t, size_t size)
{
    list_index_t ix;
    if (size < ((size_t)1 << t->small_shift)) {
        ix.fl = 0;
        ix.sl = (unsigned)(size >> align_log2());
    } else {
        unsigned f = hk_log2_floor(size);
        ix.fl = f - t->small_shift + 1u;
        ix.sl = (unsigned)(size >> (f - t->sl_log2)) - (1u << t->sl_log2);
    }
    return ix;
}

/* Round a request up to the first size of the next list, so every block found there fits. */
static size_t round_to_list(const hk_tlsf_t *t, size_t size)
{
    if (size >= ((size_t)1 << t->small_shift)) {
        size_t step = (size_t)1 << (hk_log2_floor(size) - t->sl_log2);
        size = (size + step - 1u) & ~(step - 1u);
    }
    return size;
}

static hk_tag_t **head_of(const hk_tlsf_t *t, list_index_t ix) { return &t->heads[(ix.fl << t->sl_log2) + ix.sl]; }

static void insert_free(hk_tlsf_t *t, hk_tag_t *b)
{
    list_index_t ix = list_of(t, hk_tag_size(b));
    hk_tag_t **head = head_of(t, ix);
    hk_tag_links_t *links = hk_tag_links(b);
    links->prev = NULL;
    links->next = *head;
    if (*head != NULL) {
        hk_tag_links(*head)->prev = b;
    }
    *head = b;
    t->fl_bitmap |= 1u << ix.fl;
    t->sl_bitmap[ix.fl] |= 1u << ix.sl;
    t->heap.stats.free_blocks++;
}

static void remove_free(hk_tlsf_t *t, hk_tag_t *b)
{
    list_index_t ix = list_of(t, hk_tag_size(b));
    hk_tag_links_t *links = hk_tag_links(b);
    if (links->prev != NULL) {
        hk_tag_links(links->prev)->next = links->next;
    } else {
        *head_of(t, ix) = links->next;
        if (links->next == NULL) {
            t->sl_bitmap[ix.fl] &= ~(1u << ix.sl);
            if (t->sl_bitmap[ix.fl] == 0) {
                t->fl_bitmap &= ~(1u << ix.fl);
            }
        }
    }
    if (links->next != NULL) {
        hk_tag_links(links->next)->prev = links->prev;
    }
    t->heap.stats.free_blocks--;
}

/* A free block of at least `size` gross bytes, or NULL; the block stays listed. */
static hk_tag_t *find_fit(const hk_tlsf_t *t, size_t size)
{
    list_index_t ix = list_of(t, size);
    hk_tag_t *own = (ix.fl < t->fl_count) ? *head_of(t, ix) : NULL;
    size_t rounded;
    uint32_t sl_map;
    uint32_t fl_map;

    if (own != NULL && hk_tag_size(own) >= size) {
        return own;
    }
    rounded = round_to_list(t, size);
    if (rounded < size) {
        return NULL;
    }
    ix = list_of(t, rounded);
    if (ix.fl >= t->fl_count) {
        return NULL;
    }
    sl_map = t->sl_bitmap[ix.fl] & (~0u << ix.sl);
    if (sl_map == 0) {
        fl_map = (ix.fl + 1u < 32u) ? (t->fl_bitmap & (~0u << (ix.fl + 1u))) : 0u;
        if (fl_map == 0) {
            return NULL;
        }
        ix.fl = hk_ffs32(fl_map);
        sl_map = t->sl_bitmap[ix.fl];
    }
    ix.sl = hk_ffs32(sl_map);
    return *head_of(t, ix);
}

static const hk_tag_lists_t tlsf_lists;

/* Free block b (off every list): merge it with free neighbours and list the result. */
static void release(hk_tlsf_t *t, hk_tag_t *b) { insert_free(t, hk_tag_coalesce(&t->heap, &t->span, &tlsf_lists, b)); }

static void detach_block(hk_heap_t *h, hk_tag_t *b) { remove_free((hk_tlsf_t *)h, b); }
static void release_block(hk_heap_t *h, hk_tag_t *b) { release((hk_tlsf_t *)h, b); }
static const hk_tag_lists_t tlsf_lists = {detach_block, release_block};

/* Hand out free block b, already off its list, for `requested` bytes (gross size `size`). */
static void *take(hk_tlsf_t *t, hk_tag_t *b, size_t size, size_t requested)
{
    hk_tag_set(&t->span, b, b->size_flags | HK_TAG_USED, 0);
    hk_tag_trim(&t->heap, &t->span, &tlsf_lists, b, size);
    hk_tag_make_used(&t->span, b, hk_tag_size(b), requested);
    hk_count_alloc(&t->heap, requested, hk_tag_usable(b), hk_tag_size(b));
    return hk_tag_payload(b);
}

void *hk_tlsf_malloc(hk_tlsf_t *t, size_t size)
{
    size_t gross = hk_tag_gross(size);
    hk_tag_t *b = (gross != 0) ? find_fit(t, gross) : NULL;
    if (b == NULL) {
        return hk_fail(&t->heap);
    }
    remove_free(t, b);
    return take(t, b, gross, size);
}

void *hk_tlsf_aligned_alloc(hk_tlsf_t *t, size_t alignment, size_t size)
{
    size_t gross = hk_tag_gross(size);
    size_t slack = alignment + HK_TAG_MIN_BLOCK;
    hk_tag_t *b;
    uintptr_t payload;
    uintptr_t aligned;

    if (!hk_is_pow2(alignment) || alignment > HK_TAG_MAX_SPAN / 2u) {
        return hk_fail(&t->heap);
    }
    if (alignment <= HK_ALIGN) {
        return hk_tlsf_malloc(t, size);
    }
    if (gross == 0 || gross > HK_TAG_MAX_SPAN - slack || (b = find_fit(t, gross + slack)) == NULL) {
        return hk_fail(&t->heap);
    }
    remove_free(t, b);
    payload = (uintptr_t)hk_tag_payload(b);
    aligned = hk_align_up_uptr(payload, alignment);
    if (aligned != payload && aligned - payload < HK_TAG_MIN_BLOCK) {
        aligned = hk_align_up_uptr(payload + HK_TAG_MIN_BLOCK, alignment);
    }
    if (aligned != payload) {
        /* Give the gap in front back as a free block of its own. */
        size_t gap = (size_t)(aligned - payload);
        hk_tag_t *front = b;
        b = (hk_tag_t *)((uintptr_t)front + gap);
        hk_tag_set(&t->span, b, (uint32_t)(hk_tag_size(front) - gap), 0);
        hk_tag_make_free(&t->span, front, gap);
        insert_free(t, front);
        t->heap.stats.split_count++;
    }
    return take(t, b, gross, size);
}

void hk_tlsf_free(hk_tlsf_t *t, void *ptr)
{
    hk_tag_t *b;
    if (ptr == NULL || (b = hk_tag_lookup(&t->heap, &t->span, ptr)) == NULL) {
        return;
    }
    hk_count_free(&t->heap, hk_tag_requested(b), hk_tag_usable(b), hk_tag_size(b));
    release(t, b);
}

void *hk_tlsf_realloc(hk_tlsf_t *t, void *ptr, size_t size)
{
    return hk_tag_realloc(&t->heap, &t->span, &tlsf_lists, ptr, size);
}

size_t hk_tlsf_usable_size(hk_tlsf_t *t, const void *ptr)
{
    const hk_tag_t *b;
    if (ptr == NULL || (b = hk_tag_lookup(&t->heap, &t->span, ptr)) == NULL) {
        return 0;
    }
    return hk_tag_usable(b);
}

/* Largest (want_max) or smallest block on one list. */
static size_t list_extreme(const hk_tag_t *b, int want_max)
{
    size_t best = hk_tag_size(b);
    for (b = hk_tag_links(b)->next; b != NULL; b = hk_tag_links(b)->next) {
        size_t s = hk_tag_size(b);
        if (want_max ? s > best : s < best) {
            best = s;
        }
    }
    return best;
}

void hk_tlsf_get_stats(hk_tlsf_t *t, hk_stats_t *out)
{
    *out = t->heap.stats;
    out->largest_free = 0;
    out->smallest_free = 0;
    if (t->fl_bitmap != 0) {
        list_index_t hi;
        list_index_t lo;
        hi.fl = hk_fls32(t->fl_bitmap);
        hi.sl = hk_fls32(t->sl_bitmap[hi.fl]);
        lo.fl = hk_ffs32(t->fl_bitmap);
        lo.sl = hk_ffs32(t->sl_bitmap[lo.fl]);
        out->largest_free = list_extreme(*head_of(t, hi), 1);
        out->smallest_free = list_extreme(*head_of(t, lo), 0);
    }
}

void hk_tlsf_walk(hk_tlsf_t *t, hk_walk_fn visit, void *ctx) { hk_tag_walk(&t->span, visit, ctx); }

int hk_tlsf_owns(const hk_tlsf_t *t, const void *ptr) { return hk_in_range(ptr, t->span.first, t->span.sentinel); }

/* Every listed block is free, on the list its size maps to, doubly linked; bitmaps match. */
static int check_lists(const hk_tlsf_t *t)
{
    size_t listed = 0;
    unsigned fl;
    for (fl = 0; fl < FL_MAX; fl++) {
        unsigned sl;
        if (fl >= t->fl_count) {
            if (t->sl_bitmap[fl] != 0 || (t->fl_bitmap >> fl) & 1u) {
                return 20;
            }
            continue;
        }
        if (((t->fl_bitmap >> fl) & 1u) != (t->sl_bitmap[fl] != 0)) {
            return 21;
        }
        for (sl = 0; sl < (1u << t->sl_log2); sl++) {
            list_index_t ix;
            const hk_tag_t *prev = NULL;
            const hk_tag_t *b;
            ix.fl = fl;
            ix.sl = sl;
            b = *head_of(t, ix);
            if (((t->sl_bitmap[fl] >> sl) & 1u) != (b != NULL)) {
                return 22;
            }
            for (; b != NULL; prev = b, b = hk_tag_links(b)->next) {
                list_index_t at;
                if (!hk_in_range(b, t->span.first, t->span.sentinel) || !hk_tag_intact(&t->span, b) || hk_tag_used(b)) {
                    return 23;
                }
                at = list_of(t, hk_tag_size(b));
                if (at.fl != fl || at.sl != sl || hk_tag_links(b)->prev != prev) {
                    return 24;
                }
                if (++listed > t->heap.stats.free_blocks) {
                    return 25;
                }
            }
        }
    }
    return listed == t->heap.stats.free_blocks ? 0 : 26;
}

int hk_tlsf_check(hk_tlsf_t *t)
{
    int rc = hk_tag_check(&t->heap, &t->span);
    return rc != 0 ? rc : check_lists(t);
}

static void *tlsf_op_aligned(hk_heap_t *h, size_t alignment, size_t size)
{
    return hk_tlsf_aligned_alloc((hk_tlsf_t *)h, alignment, size);
}

HK_DEFINE_OPS(hk_tlsf, hk_tlsf_t, "tlsf", tlsf_op_aligned);

hk_heap_t *hk_tlsf_heap(hk_tlsf_t *t) { return &t->heap; }

hk_tlsf_t *hk_tlsf_init(void *arena, size_t size, const hk_tlsf_config_t *cfg, hk_status_t *status)
{
    unsigned sl_log2 = (cfg != NULL && cfg->sl_log2 != 0) ? cfg->sl_log2 : HK_TLSF_SL_LOG2;
    uintptr_t base = hk_align_up_uptr((uintptr_t)arena, sizeof(void *));
    uintptr_t end = hk_arena_end(arena, size);
    hk_tlsf_t *t;
    size_t lists;
    size_t span_size;
    uintptr_t blocks;

    if (arena == NULL || sl_log2 > 5u) {
        return hk_init_status(status, HK_EINVAL);
    }
    if (end < base || end - base < sizeof(hk_tlsf_t)) {
        return hk_init_status(status, HK_ETOOSMALL);
    }
    t = (hk_tlsf_t *)base;
    hk_memset(t, 0, sizeof(*t));
    t->sl_log2 = sl_log2;
    t->small_shift = sl_log2 + align_log2();
    /* Size the list heads for the largest block this arena could hold. */
    {
        list_index_t top;
        size_t most = (size_t)(end - base);
        if (most > HK_TAG_MAX_SPAN) {
            most = HK_TAG_MAX_SPAN;
        }
        if (most < ((size_t)1 << t->small_shift)) {
            most = ((size_t)1 << t->small_shift);
        }
        top = list_of(t, most);
        t->fl_count = top.fl + 1u;
    }
    lists = (size_t)t->fl_count << sl_log2;
    t->heads = (hk_tag_t **)(base + sizeof(hk_tlsf_t));
    blocks = (uintptr_t)(t->heads + lists);
    if (blocks > end) {
        return hk_init_status(status, HK_ETOOSMALL);
    }
    hk_memset(t->heads, 0, lists * sizeof(hk_tag_t *));
    span_size = hk_tag_span_init(&t->span, (void *)blocks, (size_t)(end - blocks));
    if (span_size == 0) {
        return hk_init_status(status, HK_ETOOSMALL);
    }
    hk_heap_setup(&t->heap, &hk_tlsf_ops, span_size);
    insert_free(t, t->span.first);
    if (status != NULL) {
        *status = HK_OK;
    }
    return t;
}
