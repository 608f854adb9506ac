/*
 * dmm: a configurable allocator, built for the design-space exploration of
 * Mamagkakis et al. (custom dynamic memory managers for network
 * applications). One hk_dmm_config_t picks each de-fragmentation technique
 * and how much it is used.
 *
 * Layout: the arena is a chain of boundary-tagged blocks (tagged.h) ending
 * in the top, the free block that reaches the end of the arena, from which
 * requests are carved as sbrk would grow a heap. Free blocks sit on one
 * of up to HK_DMM_MAX_LISTS + 1 doubly linked lists: list 0 is the general
 * pool, list i + 1 is the config's dedicated list i. A free block keeps its
 * list number in its tag's slack field (unused in free blocks), so the tag's
 * check covers it and unlinking needs no search.
 *
 * malloc(n) routes n to the dedicated list whose lo..hi holds it, or to the
 * pool; the gross size is the tag layout's, rounded up to the list's hi
 * (class_round) or to pool_round. It then takes the first fitting block of
 * that list, else searches the pool with the fit policy (first, next, best,
 * worst, exact), else carves the top, else takes the first fitting block of
 * any dedicated list, else fails (with no_pool: a request no list serves
 * fails at once). A block bigger than needed is split when
 * the remainder reaches the split level's threshold (hk_dmm_level_threshold)
 * and can form a block; the remainder goes to the pool. Carving the top
 * always cuts exactly, like sbrk, and is not counted as a split.
 *
 * free(p) routes the block by the size its caller requested: into that
 * dedicated list as it is (free lists never coalesce, the paper's
 * trade-off), or into the pool, merged with its free physical neighbours
 * (one on each side, whatever list holds them, or the top; hk_tag_coalesce)
 * when its gross size reaches the coalesce level's threshold. A free block
 * that ends at the arena's end is always the top. Each list keeps LIFO, FIFO
 * or address order.
 *
 * realloc keeps the block when the new size fits its usable size (cutting
 * the rest off by the split level) and otherwise moves it, so only the
 * configured techniques ever merge blocks.
 *
 * Each list remembers an upper bound of its block sizes (reset when it
 * empties), so a search that cannot succeed examines nothing; that keeps the
 * last-resort scan of every list cheap on a full heap.
 *
 * A used block's tag records at most 64 KiB of slack, so a block that would
 * waste more is split whatever the level (HK_DMM_LIST_MAX and
 * HK_DMM_ROUND_MAX keep rounding well below that).
 *
 * Time: malloc is O(blocks on the lists searched); free is O(1), or
 * O(list length) for address order; realloc as malloc plus free; get_stats
 * walks the lists whose size bounds could change its figures. Overhead: the
 * 8-byte tag per used block; a free block needs HK_TAG_MIN_BLOCK. Misuse
 * detection is that of tagged.h (double free, foreign and interior pointers,
 * corrupted tags); check() also verifies every list's links, order,
 * membership, size bounds and the block counts.
 *
 * The counters (hk_dmm_counters_t) count work, not time, so exploration gets
 * the same cost for the same trace on any machine.
 */
#include "heapkit/dmm.h"

#include "tagged.h"

#define POOL 0u
#define SLACK_MAX 0xFFFFu

HK_STATIC_ASSERT(HK_DMM_MAX_LISTS < SLACK_MAX, list_number_fits_the_slack_field);
/* Without a pool there is nowhere to file a forced split's rest: no_pool blocks must never need one. */
HK_STATIC_ASSERT(HK_DMM_LIST_MAX + HK_TAG_HDR + 2u * HK_TAG_MIN_BLOCK < SLACK_MAX, no_pool_never_forces_a_split);

typedef struct dmm_list {
    hk_tag_t *head;
    hk_tag_t *tail;
    size_t max_size; /* no block on the list is larger (reset when it empties) */
} dmm_list_t;

struct hk_dmm {
    hk_heap_t heap;
    hk_tag_span_t span;
    hk_dmm_config_t cfg;
    dmm_list_t lists[HK_DMM_MAX_LISTS + 1u];
    hk_tag_t *rover;     /* next fit: where the last pool search stopped */
    hk_tag_t *top;       /* free block ending at the sentinel, or NULL */
    size_t split_min;    /* smallest remainder the split level splits off */
    size_t coalesce_min; /* smallest freed block the coalesce level merges */
    hk_dmm_counters_t counters;
};

static const hk_tag_lists_t dmm_lists;

size_t hk_dmm_level_threshold(unsigned level)
{
    if (level == HK_DMM_LEVEL_ALWAYS) {
        return 0;
    }
    if (level == HK_DMM_LEVEL_NEVER || level > HK_DMM_LEVEL_ALWAYS) {
        return SIZE_MAX;
    }
    return (size_t)1 << (14u - level);
}

hk_dmm_config_error_t hk_dmm_validate(const hk_dmm_config_t *cfg)
{
    unsigned i;
    if (cfg == NULL) {
        return HK_DMM_CFG_NULL;
    }
    if (cfg->fit > (unsigned)HK_DMM_FIT_EXACT) {
        return HK_DMM_CFG_FIT;
    }
    if (cfg->order > (unsigned)HK_DMM_ORDER_ADDRESS) {
        return HK_DMM_CFG_ORDER;
    }
    if (cfg->split > HK_DMM_LEVEL_ALWAYS) {
        return HK_DMM_CFG_SPLIT;
    }
    if (cfg->coalesce > HK_DMM_LEVEL_ALWAYS) {
        return HK_DMM_CFG_COALESCE;
    }
    if (cfg->no_pool > 1u || cfg->class_round > 1u) {
        return HK_DMM_CFG_FLAG;
    }
    if (cfg->nlists > HK_DMM_MAX_LISTS) {
        return HK_DMM_CFG_NLISTS;
    }
    for (i = 0; i < cfg->nlists; i++) {
        if (cfg->lists[i].lo > cfg->lists[i].hi || cfg->lists[i].hi > HK_DMM_LIST_MAX) {
            return HK_DMM_CFG_RANGE;
        }
        if (i > 0 && cfg->lists[i].lo <= cfg->lists[i - 1u].hi) {
            return HK_DMM_CFG_OVERLAP;
        }
    }
    if (cfg->pool_round != 0 && (!hk_is_pow2(cfg->pool_round) || cfg->pool_round > HK_DMM_ROUND_MAX)) {
        return HK_DMM_CFG_POOL_ROUND;
    }
    if (cfg->no_pool && cfg->nlists == 0) {
        return HK_DMM_CFG_NO_POOL_LISTS;
    }
    if (cfg->no_pool && (cfg->split != HK_DMM_LEVEL_NEVER || cfg->coalesce != HK_DMM_LEVEL_NEVER)) {
        return HK_DMM_CFG_NO_POOL_SPLIT;
    }
    return HK_DMM_CFG_OK;
}

const char *hk_dmm_config_error_name(hk_dmm_config_error_t error)
{
    static const char *const names[] = {"ok",
                                        "no config",
                                        "fit is not first/next/best/worst/exact (0..4)",
                                        "order is not lifo/fifo/address (0..2)",
                                        "split level above 9",
                                        "coalesce level above 9",
                                        "more than HK_DMM_MAX_LISTS lists",
                                        "a list has lo > hi or hi above HK_DMM_LIST_MAX",
                                        "lists are not sorted by lo or overlap",
                                        "pool_round is not 0 or a power of two up to HK_DMM_ROUND_MAX",
                                        "no_pool needs at least one list",
                                        "no_pool needs split and coalesce levels 0",
                                        "no_pool and class_round must be 0 or 1"};
    return ((unsigned)error < sizeof(names) / sizeof(names[0])) ? names[error] : "?";
}

/* The list a request of this many bytes belongs to: a dedicated list's number, or POOL. */
static unsigned route(const hk_dmm_t *d, size_t request)
{
    unsigned i;
    for (i = 0; i < d->cfg.nlists && d->cfg.lists[i].lo <= request; i++) {
        if (request <= d->cfg.lists[i].hi) {
            return i + 1u;
        }
    }
    return POOL;
}

/* Gross block size for a request routed to list, or 0 if no block could hold it. */
static size_t gross_for(const hk_dmm_t *d, size_t request, unsigned list)
{
    size_t gross;
    if (list != POOL && d->cfg.class_round) {
        request = d->cfg.lists[list - 1u].hi;
    }
    gross = hk_tag_gross(request);
    if (list == POOL && d->cfg.pool_round > HK_ALIGN && gross != 0) {
        gross = hk_round_up(gross, d->cfg.pool_round);
        if (gross > HK_TAG_MAX_SPAN) {
            return 0;
        }
    }
    return gross;
}

static hk_tag_t *next_free(const hk_tag_t *b) { return hk_tag_links(b)->next; }

static unsigned list_of(const hk_tag_t *b) { return b->slack; }

static void list_push(hk_dmm_t *d, unsigned list, hk_tag_t *b)
{
    dmm_list_t *l = &d->lists[list];
    hk_tag_t *prev = NULL;
    hk_tag_t *next = l->head;
    if (d->cfg.order == HK_DMM_ORDER_FIFO) {
        prev = l->tail;
        next = NULL;
    } else if (d->cfg.order == HK_DMM_ORDER_ADDRESS) {
        while (next != NULL && next < b) {
            prev = next;
            next = next_free(next);
            d->counters.insert_steps++;
        }
    }
    hk_tag_links(b)->prev = prev;
    hk_tag_links(b)->next = next;
    if (prev != NULL) {
        hk_tag_links(prev)->next = b;
    } else {
        l->head = b;
    }
    if (next != NULL) {
        hk_tag_links(next)->prev = b;
    } else {
        l->tail = b;
    }
    if (hk_tag_size(b) > l->max_size) {
        l->max_size = hk_tag_size(b);
    }
    d->heap.stats.free_blocks++;
}

static void list_remove(hk_dmm_t *d, hk_tag_t *b)
{
    dmm_list_t *l = &d->lists[list_of(b)];
    hk_tag_links_t *links = hk_tag_links(b);
    if (links->prev != NULL) {
        hk_tag_links(links->prev)->next = links->next;
    } else {
        l->head = links->next;
    }
    if (links->next != NULL) {
        hk_tag_links(links->next)->prev = links->prev;
    } else {
        l->tail = links->prev;
    }
    if (d->rover == b) {
        d->rover = links->next;
    }
    if (l->head == NULL) {
        l->max_size = 0;
    }
    d->heap.stats.free_blocks--;
}

/* Take free block b off its list, or out of the top. */
static void detach(hk_dmm_t *d, hk_tag_t *b)
{
    if (b == d->top) {
        d->top = NULL;
        d->heap.stats.free_blocks--;
    } else {
        list_remove(d, b);
    }
}

/* File free block b (tag and footer written): the top if it reaches the sentinel, else on list. */
static void file(hk_dmm_t *d, hk_tag_t *b, unsigned list)
{
    if (hk_tag_next(b) == d->span.sentinel) {
        d->top = b;
        d->heap.stats.free_blocks++;
        return;
    }
    if (list != POOL) {
        hk_tag_set(&d->span, b, b->size_flags, (uint16_t)list);
    }
    list_push(d, list, b);
}

/* Free block b (on no list) into the pool, merged with its free neighbours if the coalesce level allows. */
static void release(hk_dmm_t *d, hk_tag_t *b)
{
    if (hk_tag_size(b) >= d->coalesce_min) {
        b = hk_tag_coalesce(&d->heap, &d->span, &dmm_lists, b);
    } else {
        hk_tag_make_free(&d->span, b, hk_tag_size(b));
    }
    file(d, b, POOL);
}

static void detach_block(hk_heap_t *h, hk_tag_t *b) { detach((hk_dmm_t *)h, b); }
static void release_block(hk_heap_t *h, hk_tag_t *b) { release((hk_dmm_t *)h, b); }
static const hk_tag_lists_t dmm_lists = {detach_block, release_block};

/* Whether a block about to hold slack spare bytes splits off a remainder of rest bytes. */
static int should_split(const hk_dmm_t *d, size_t rest, size_t slack)
{
    return rest >= HK_TAG_MIN_BLOCK && (rest >= d->split_min || slack > SLACK_MAX);
}

/* First block of list, in list order, of at least gross bytes. */
static hk_tag_t *first_fit(hk_dmm_t *d, unsigned list, size_t gross)
{
    hk_tag_t *b;
    if (d->lists[list].max_size < gross) {
        return NULL;
    }
    for (b = d->lists[list].head; b != NULL; b = next_free(b)) {
        d->counters.examined++;
        if (hk_tag_size(b) >= gross) {
            return b;
        }
    }
    return NULL;
}

static hk_tag_t *next_fit(hk_dmm_t *d, size_t gross)
{
    hk_tag_t *head = d->lists[POOL].head;
    hk_tag_t *start = (d->rover != NULL) ? d->rover : head;
    hk_tag_t *b = start;
    while (b != NULL) {
        d->counters.examined++;
        if (hk_tag_size(b) >= gross) {
            d->rover = b;
            return b;
        }
        b = next_free(b);
        if (b == NULL) {
            b = head;
        }
        if (b == start) {
            break;
        }
    }
    return NULL;
}

/* Best (smallest fitting, exact ends the search), worst (largest) or exact-size block of the pool. */
static hk_tag_t *scan_pool(hk_dmm_t *d, size_t gross, unsigned fit)
{
    hk_tag_t *b;
    hk_tag_t *pick = NULL;
    for (b = d->lists[POOL].head; b != NULL; b = next_free(b)) {
        size_t size = hk_tag_size(b);
        d->counters.examined++;
        if (fit == HK_DMM_FIT_WORST) {
            if (pick == NULL || size > hk_tag_size(pick)) {
                pick = b;
            }
        } else if (size == gross) {
            return b;
        } else if (fit == HK_DMM_FIT_BEST && size > gross && (pick == NULL || size < hk_tag_size(pick))) {
            pick = b;
        }
    }
    return (pick != NULL && hk_tag_size(pick) >= gross) ? pick : NULL;
}

static hk_tag_t *search_pool(hk_dmm_t *d, size_t gross)
{
    if (d->lists[POOL].max_size < gross) {
        return NULL;
    }
    switch (d->cfg.fit) {
    case HK_DMM_FIT_FIRST:
        return first_fit(d, POOL, gross);
    case HK_DMM_FIT_NEXT:
        return next_fit(d, gross);
    default:
        return scan_pool(d, gross, d->cfg.fit);
    }
}

/* Last resort before failing: the first fitting block of any dedicated list but skip. */
static hk_tag_t *any_list(hk_dmm_t *d, unsigned skip, size_t gross)
{
    unsigned list;
    hk_tag_t *b;
    for (list = 1; list <= d->cfg.nlists; list++) {
        if (list != skip && (b = first_fit(d, list, gross)) != NULL) {
            return b;
        }
    }
    return NULL;
}

static void note_peaks(hk_dmm_t *d)
{
    const hk_tag_t *top = (d->top != NULL) ? d->top : d->span.sentinel;
    size_t touched = (size_t)((uintptr_t)top - (uintptr_t)d->span.first);
    if (touched > d->counters.max_top) {
        d->counters.max_top = touched;
    }
    if (d->heap.stats.used_requested > d->counters.peak_requested) {
        d->counters.peak_requested = d->heap.stats.used_requested;
    }
}

/* Cut exactly gross bytes off the bottom of the top; the rest stays the top. */
static void carve_top(hk_dmm_t *d, hk_tag_t *b, size_t gross)
{
    size_t rest = hk_tag_size(b) - gross;
    detach(d, b);
    if (rest >= HK_TAG_MIN_BLOCK) {
        hk_tag_t *r = (hk_tag_t *)((uintptr_t)b + gross);
        hk_tag_set(&d->span, b, (uint32_t)gross | (b->size_flags & HK_TAG_PREV_USED), 0);
        hk_tag_set(&d->span, r, (uint32_t)rest | HK_TAG_PREV_USED, 0);
        hk_tag_make_free(&d->span, r, rest);
        file(d, r, POOL);
    }
    d->counters.top_carves++;
}

/* Turn free block b (the top, or listed) into a used block for request, at least gross bytes. */
static void *hand_out(hk_dmm_t *d, hk_tag_t *b, size_t gross, size_t request)
{
    size_t size = hk_tag_size(b);
    if (b == d->top) {
        carve_top(d, b, gross);
    } else {
        detach(d, b);
        hk_tag_set(&d->span, b, (uint32_t)size | HK_TAG_USED | (b->size_flags & HK_TAG_PREV_USED), 0);
        if (should_split(d, size - gross, size - HK_TAG_HDR - request)) {
            hk_tag_trim(&d->heap, &d->span, &dmm_lists, b, gross);
        }
    }
    hk_tag_make_used(&d->span, b, hk_tag_size(b), request);
    hk_count_alloc(&d->heap, request, hk_tag_usable(b), hk_tag_size(b));
    note_peaks(d);
    return hk_tag_payload(b);
}

void *hk_dmm_malloc(hk_dmm_t *d, size_t size)
{
    unsigned list = route(d, size);
    size_t gross = gross_for(d, size, list);
    hk_tag_t *b = NULL;

    if (gross == 0 || (list == POOL && d->cfg.no_pool)) {
        return hk_fail(&d->heap);
    }
    if (list != POOL && (b = first_fit(d, list, gross)) != NULL) {
        d->counters.list_hits++;
    } else if (!d->cfg.no_pool && (b = search_pool(d, gross)) != NULL) {
        d->counters.pool_hits++;
    } else if (d->top != NULL && hk_tag_size(d->top) >= gross) {
        b = d->top;
    } else if (d->cfg.fit == HK_DMM_FIT_EXACT && !d->cfg.no_pool && (b = first_fit(d, POOL, gross)) != NULL) {
        d->counters.pool_hits++;
    } else if ((b = any_list(d, list, gross)) != NULL) {
        d->counters.list_hits++;
    } else {
        return hk_fail(&d->heap);
    }
    return hand_out(d, b, gross, size);
}

/*
 * Without a pool, a block shrunk in place to a size no list serves goes to
 * the last list whose smallest block it can stand in for (the first always
 * qualifies: every block was carved for some list).
 */
static unsigned list_by_size(const hk_dmm_t *d, size_t size)
{
    unsigned list = d->cfg.nlists;
    while (list > 1u && hk_tag_gross(d->cfg.lists[list - 1u].lo) > size) {
        list--;
    }
    return list;
}

void hk_dmm_free(hk_dmm_t *d, void *ptr)
{
    hk_tag_t *b;
    unsigned list;
    if (ptr == NULL || (b = hk_tag_lookup(&d->heap, &d->span, ptr)) == NULL) {
        return;
    }
    hk_count_free(&d->heap, hk_tag_requested(b), hk_tag_usable(b), hk_tag_size(b));
    list = route(d, hk_tag_requested(b));
    if (list == POOL && d->cfg.no_pool) {
        list = list_by_size(d, hk_tag_size(b));
    }
    if (list == POOL) {
        release(d, b);
    } else {
        hk_tag_make_free(&d->span, b, hk_tag_size(b));
        file(d, b, list);
    }
}

void *hk_dmm_realloc(hk_dmm_t *d, void *ptr, size_t size)
{
    hk_tag_t *b;
    size_t gross;
    size_t old_size;
    size_t old_requested;
    size_t old_usable;

    if (ptr == NULL) {
        return hk_dmm_malloc(d, size);
    }
    if ((b = hk_tag_lookup(&d->heap, &d->span, ptr)) == NULL) {
        return NULL;
    }
    if (size == 0) {
        hk_dmm_free(d, ptr);
        return NULL;
    }
    old_size = hk_tag_size(b);
    old_requested = hk_tag_requested(b);
    old_usable = hk_tag_usable(b);
    if (size > old_usable) {
        void *moved = hk_realloc_by_move(&d->heap, ptr, old_usable, size);
        d->heap.stats.realloc_count += (moved != NULL);
        return moved;
    }
    gross = gross_for(d, size, route(d, size));
    if (gross < old_size && should_split(d, old_size - gross, old_usable - size)) {
        hk_tag_trim(&d->heap, &d->span, &dmm_lists, b, gross);
    }
    hk_tag_make_used(&d->span, b, hk_tag_size(b), size);
    hk_count_resize(&d->heap, old_requested, old_usable, old_size, size, hk_tag_usable(b), hk_tag_size(b));
    d->heap.stats.realloc_count++;
    note_peaks(d);
    return ptr;
}

size_t hk_dmm_usable_size(hk_dmm_t *d, const void *ptr)
{
    const hk_tag_t *b;
    if (ptr == NULL || (b = hk_tag_lookup(&d->heap, &d->span, ptr)) == NULL) {
        return 0;
    }
    return hk_tag_usable(b);
}

/* Smallest gross size a block filed on list may have. */
static size_t list_min_gross(const hk_dmm_t *d, unsigned list)
{
    return (list == POOL) ? HK_TAG_MIN_BLOCK : hk_tag_gross(d->cfg.lists[list - 1u].lo);
}

void hk_dmm_get_stats(hk_dmm_t *d, hk_stats_t *out)
{
    unsigned list;
    const hk_tag_t *b;
    *out = d->heap.stats;
    out->largest_free = (d->top != NULL) ? hk_tag_size(d->top) : 0;
    out->smallest_free = out->largest_free;
    for (list = 0; list <= d->cfg.nlists; list++) {
        if (out->smallest_free != 0 && out->smallest_free <= list_min_gross(d, list) &&
            d->lists[list].max_size <= out->largest_free) {
            continue; /* the list's bounds say it cannot change either figure */
        }
        for (b = d->lists[list].head; b != NULL; b = next_free(b)) {
            size_t size = hk_tag_size(b);
            if (size > out->largest_free) {
                out->largest_free = size;
            }
            if (out->smallest_free == 0 || size < out->smallest_free) {
                out->smallest_free = size;
            }
        }
    }
}

void hk_dmm_get_counters(const hk_dmm_t *d, hk_dmm_counters_t *out)
{
    *out = d->counters;
    out->splits = d->heap.stats.split_count;
    out->coalesces = d->heap.stats.coalesce_count;
}

void hk_dmm_walk(hk_dmm_t *d, hk_walk_fn visit, void *ctx) { hk_tag_walk(&d->span, visit, ctx); }

int hk_dmm_owns(const hk_dmm_t *d, const void *ptr) { return hk_in_range(ptr, d->span.first, d->span.sentinel); }

/* Links, order, membership and tail of one list; adds its length to *listed. */
static int check_list(const hk_dmm_t *d, unsigned list, size_t *listed, int *rover_seen)
{
    const hk_tag_t *prev = NULL;
    const hk_tag_t *b;
    for (b = d->lists[list].head; b != NULL; prev = b, b = next_free(b)) {
        if (!hk_in_range(b, d->span.first, d->span.sentinel) || hk_tag_used(b) || b == d->top ||
            list_of(b) != list || hk_tag_size(b) < list_min_gross(d, list) ||
            hk_tag_size(b) > d->lists[list].max_size) {
            return 32;
        }
        if (hk_tag_links(b)->prev != prev ||
            (d->cfg.order == HK_DMM_ORDER_ADDRESS && prev != NULL && prev >= b)) {
            return 33;
        }
        if (++*listed > d->heap.stats.free_blocks) {
            return 34;
        }
        *rover_seen |= (b == d->rover);
    }
    return (d->lists[list].tail == prev) ? 0 : 37;
}

int hk_dmm_check(hk_dmm_t *d)
{
    size_t listed = 0;
    unsigned list;
    int rover_seen = (d->rover == NULL);
    int merged = (d->cfg.coalesce == HK_DMM_LEVEL_ALWAYS && d->cfg.nlists == 0);
    int rc = merged ? hk_tag_check(&d->heap, &d->span) : hk_tag_check_unmerged(&d->heap, &d->span);

    if (rc != 0) {
        return rc;
    }
    if (d->top != NULL && (hk_tag_used(d->top) || hk_tag_next(d->top) != d->span.sentinel || d->top->slack != 0)) {
        return 30;
    }
    if (d->top == NULL && !hk_tag_prev_used(d->span.sentinel)) {
        return 31;
    }
    for (list = 0; list <= d->cfg.nlists; list++) {
        if ((rc = check_list(d, list, &listed, &rover_seen)) != 0) {
            return rc;
        }
    }
    if (listed + (d->top != NULL) != d->heap.stats.free_blocks) {
        return 35;
    }
    return rover_seen ? 0 : 36;
}

HK_DEFINE_OPS(hk_dmm, hk_dmm_t, "dmm", NULL);

hk_heap_t *hk_dmm_heap(hk_dmm_t *d) { return &d->heap; }

const hk_dmm_config_t *hk_dmm_config(const hk_dmm_t *d) { return &d->cfg; }

/*
 * The paper's Table 1, as far as its text goes (docs/dmm.md lists what each
 * preset approximates), and the paper's recommended shape for DRR.
 */
static const hk_dmm_config_t preset_wince = {.fit = HK_DMM_FIT_FIRST,
                                             .order = HK_DMM_ORDER_LIFO,
                                             .split = 1,
                                             .coalesce = HK_DMM_LEVEL_ALWAYS};

static const hk_dmm_config_t preset_winxp = {
    .fit = HK_DMM_FIT_FIRST,
    .order = HK_DMM_ORDER_FIFO,
    .split = HK_DMM_LEVEL_ALWAYS,
    .coalesce = HK_DMM_LEVEL_ALWAYS,
    .nlists = 16,
    .lists = {{0, 64}, {65, 128}, {129, 192}, {193, 256}, {257, 320}, {321, 384}, {385, 448}, {449, 512},
              {513, 576}, {577, 640}, {641, 704}, {705, 768}, {769, 832}, {833, 896}, {897, 960}, {961, 1024}}};

static const hk_dmm_config_t preset_lea = {
    .fit = HK_DMM_FIT_BEST,
    .order = HK_DMM_ORDER_FIFO,
    .split = 8,
    .coalesce = HK_DMM_LEVEL_ALWAYS,
    .nlists = 8,
    .lists = {{0, 8}, {9, 16}, {17, 24}, {25, 32}, {33, 40}, {41, 48}, {49, 56}, {57, 64}}};

static const hk_dmm_config_t preset_ose = {
    .fit = HK_DMM_FIT_BEST,
    .order = HK_DMM_ORDER_LIFO,
    .split = HK_DMM_LEVEL_NEVER,
    .coalesce = HK_DMM_LEVEL_NEVER,
    .no_pool = 1,
    .class_round = 1,
    .nlists = 8,
    .lists = {{0, 32}, {33, 64}, {65, 128}, {129, 256}, {257, 512}, {513, 1024}, {1025, 2048}, {2049, 4096}}};

static const hk_dmm_config_t preset_uclinux = {
    .fit = HK_DMM_FIT_BEST,
    .order = HK_DMM_ORDER_LIFO,
    .split = HK_DMM_LEVEL_NEVER,
    .coalesce = HK_DMM_LEVEL_NEVER,
    .class_round = 1,
    .pool_round = 4096,
    .nlists = 9,
    .lists = {{0, 16}, {17, 32}, {33, 64}, {65, 128}, {129, 256}, {257, 512}, {513, 1024}, {1025, 2048}, {2049, 4096}}};

static const hk_dmm_config_t preset_net = {.fit = HK_DMM_FIT_FIRST,
                                           .order = HK_DMM_ORDER_LIFO,
                                           .split = HK_DMM_LEVEL_ALWAYS,
                                           .coalesce = HK_DMM_LEVEL_ALWAYS,
                                           .nlists = 2,
                                           .lists = {{16, 16}, {1476, 1476}}};

typedef struct dmm_preset {
    const char *name;
    const hk_dmm_config_t *cfg;
} dmm_preset_t;

static const dmm_preset_t presets[] = {{"wince", &preset_wince}, {"winxp", &preset_winxp},
                                       {"lea", &preset_lea},     {"ose", &preset_ose},
                                       {"uclinux", &preset_uclinux}, {"net", &preset_net}};

#define PRESET_COUNT (sizeof(presets) / sizeof(presets[0]))

static int same_name(const char *a, const char *b)
{
    while (*a != '\0' && *a == *b) {
        a++;
        b++;
    }
    return *a == *b;
}

const hk_dmm_config_t *hk_dmm_preset(const char *name)
{
    size_t i;
    for (i = 0; name != NULL && i < PRESET_COUNT; i++) {
        if (same_name(presets[i].name, name)) {
            return presets[i].cfg;
        }
    }
    return NULL;
}

const char *hk_dmm_preset_name(size_t i) { return i < PRESET_COUNT ? presets[i].name : NULL; }

hk_dmm_t *hk_dmm_init(void *arena, size_t size, const hk_dmm_config_t *cfg, hk_status_t *status)
{
    uintptr_t base = hk_align_up_uptr((uintptr_t)arena, sizeof(void *));
    uintptr_t end = hk_arena_end(arena, size);
    hk_dmm_t *d;
    size_t span_size;

    if (arena == NULL || hk_dmm_validate(cfg) != HK_DMM_CFG_OK) {
        return hk_init_status(status, HK_EINVAL);
    }
    if (end < base || end - base < sizeof(hk_dmm_t)) {
        return hk_init_status(status, HK_ETOOSMALL);
    }
    d = (hk_dmm_t *)base;
    span_size = hk_tag_span_init(&d->span, (void *)(base + sizeof(hk_dmm_t)), (size_t)(end - base - sizeof(hk_dmm_t)));
    if (span_size == 0) {
        return hk_init_status(status, HK_ETOOSMALL);
    }
    hk_heap_setup(&d->heap, &hk_dmm_ops, span_size);
    d->cfg = *cfg;
    hk_memset(d->lists, 0, sizeof(d->lists));
    hk_memset(&d->counters, 0, sizeof(d->counters));
    d->rover = NULL;
    d->top = d->span.first;
    d->heap.stats.free_blocks = 1;
    d->split_min = hk_dmm_level_threshold(cfg->split);
    d->coalesce_min = hk_dmm_level_threshold(cfg->coalesce);
    hk_init_status(status, HK_OK);
    return d;
}
