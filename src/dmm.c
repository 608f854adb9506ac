/* SPDX-License-Identifier: MIT */
/*
 * dmm: a configurable allocator, built for the design-space exploration of
 * Mamagkakis et al. (custom dynamic memory managers for network
 * applications). One hk_dmm_config_t picks each de-fragmentation technique
 * and how much it is used.
 *
 * Layout: the arena is a chain of boundary-tagged blocks (tagged.h) ending
 * in the top, the free block that reaches the end of the arena, from which
 * requests are carved as sbrk would grow a heap. Free blocks sit on one
 * of up to HK_DMM_MAX_LISTS + 1 circular doubly linked lists: list 0 is the
 * general pool, list i + 1 is the config's dedicated list i. Each list is
 * closed by a node of its own in the control block, so a block comes off
 * its list without knowing which list that is, and a free block stores
 * nothing but its two links.
 *
 * Filing is by block size. Dedicated list i holds the blocks whose gross
 * size is one its requests get: gross(lo)..gross(hi), or gross(hi) alone
 * with class_round (gross: the tag layout's size for a request). A size two
 * lists share (lists narrower than HK_ALIGN) belongs to the first.
 *
 * malloc(n) routes n to the dedicated list whose lo..hi holds it, or to the
 * pool; the gross size is the tag layout's, rounded up to the list's hi
 * (class_round) or to pool_round. It then takes the first fitting block of
 * the list that files blocks of that size, else searches the pool with the
 * fit policy (first, next, best, worst, exact), else carves the top, else
 * takes the first fitting block of any dedicated list, else fails (with
 * no_pool: a request no list serves fails at once). A block bigger than
 * needed is split when the remainder reaches the split level's threshold
 * (hk_dmm_level_threshold) and can form a block; the remainder goes to the
 * pool. Carving the top always cuts exactly, like sbrk, and is not counted
 * as a split. A block is also split, whatever the level, when it would
 * otherwise waste more than WASTE_MAX bytes, so that a never-split config
 * does not sink a large merged block into a small request (HK_DMM_LIST_MAX
 * and HK_DMM_ROUND_MAX keep rounding well below that).
 *
 * free(p) files the block by its size: onto its dedicated list as it is
 * (free lists never coalesce, the paper's trade-off), or into the pool,
 * merged with its free physical neighbours (one on each side, whatever list
 * holds them, or the top; hk_tag_coalesce) when its gross size reaches the
 * coalesce level's threshold. A free block that ends at the arena's end is
 * always the top. Each list keeps LIFO, FIFO or address order.
 *
 * resize keeps the block when the new size fits its usable size (cutting
 * the rest off by the split level) and otherwise refuses, so hk_realloc
 * moves it and only the configured techniques ever merge blocks.
 *
 * Each list remembers an upper bound of its block sizes (reset when it
 * empties), so a search that cannot succeed examines nothing; that keeps the
 * last-resort scan of every list cheap on a full heap.
 *
 * Time: malloc is O(blocks on the lists searched); free is O(1), or
 * O(list length) for address order; get_stats walks the lists whose size
 * bounds could change its figures.
 *
 * Overhead: the tag per used block (tagged.h: 8 bytes, or 4 with
 * HK_TAG_WIDE 0 for heaps up to 256 KiB; at HK_HARDENING >= 2 4 bytes more
 * for the request and at least 4 bytes of canary room); a free block needs
 * HK_TAG_MIN_BLOCK (its tag and two links). The control block holds the
 * config copy and the list nodes.
 *
 * Misuse and damage detected (HK_HARDENING >= 1), each in constant time per
 * block touched: foreign and interior pointers, double free, and a used
 * block handed to free/resize/usable_size whose size disagrees with its
 * neighbours' (tagged.h). Every link a list search or insert follows must
 * point inside the span at a free block that links back (a list that fails
 * is reported and dropped whole, its blocks never handed out); every block
 * taken off a list or out of the top must be free, agree with both
 * neighbours and be linked both ways (a block that fails is reported and
 * left out of service); a neighbour that fails is not merged. Level 2 adds
 * the canary after each request (checked by free, resize and usable_size)
 * and the poison of free payloads (checked when a block is handed out:
 * writes after free are reported). check() also verifies every list's
 * links, order, filing, size bounds and the block counts.
 *
 * Statistics kept per operation: free bytes and blocks, their low-water
 * mark, the alloc, free, split and merge counts, and at level 2 the
 * requested bytes; get_stats derives the rest (hk_tag_derive_stats).
 *
 * The counters (hk_dmm_counters_t) count work, not time, so exploration gets
 * the same cost for the same trace on any machine.
 */
#include "heapkit/dmm.h"

#include "tagged.h"

#define POOL 0u
/* Where hand_out's block came from when it is the top rather than a list. */
#define TOP (HK_DMM_MAX_LISTS + 1u)
/* A block handed out never wastes more than this many bytes: the rest is split off whatever the level. */
#define WASTE_MAX 0xFFFFu

/* Without a pool there is nowhere to file a forced split's rest: no_pool blocks must never need one. */
HK_STATIC_ASSERT(HK_DMM_LIST_MAX + HK_TAG_HDR + HK_CANARY_ROOM + 2u * HK_TAG_MIN_BLOCK < WASTE_MAX,
                 no_pool_never_forces_a_split);
HK_STATIC_ASSERT(HK_DMM_LIST_MAX + HK_TAG_HDR + HK_CANARY_ROOM + HK_ALIGN <= HK_TAG_MAX_BLOCK,
                 every_list_size_fits_a_block);

/*
 * A list: its node closes the circle (links.next is the head, links.prev the
 * tail; both are the node itself when the list is empty). The node is used
 * through a tag pointer HK_TAG_HDR bytes before it, so hk_tag_links() reaches
 * it like any block's links; its tag is never read.
 */
typedef struct dmm_list {
    hk_tag_links_t links;
    size_t max_size; /* no block on the list is larger (reset when it empties) */
} dmm_list_t;

struct hk_dmm {
    hk_heap_t heap;
    hk_tag_span_t span;
    hk_dmm_config_t cfg;
    dmm_list_t lists[HK_DMM_MAX_LISTS + 1u];
    hk_tag_t *rover;     /* next fit: where the last pool search stopped, or NULL (the head) */
    hk_tag_t *top;       /* free block ending at the sentinel, or NULL */
    size_t span_bytes;   /* sentinel - first */
    size_t split_min;    /* smallest remainder the split level splits off */
    size_t coalesce_min; /* smallest freed block the coalesce level merges */
    hk_dmm_counters_t counters;
};

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

/* ---- routing and filing ---- */

/* The list a request of this many bytes is routed to: a dedicated list's number, or POOL. */
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
        if (gross == 0 || gross > HK_TAG_MAX_BLOCK) {
            return 0;
        }
    }
    return gross;
}

/* Smallest and largest block dedicated list `list` (1-based) files. */
static size_t block_lo(const hk_dmm_t *d, unsigned list)
{
    const hk_dmm_range_t *r = &d->cfg.lists[list - 1u];
    return hk_tag_gross(d->cfg.class_round ? r->hi : r->lo);
}

static size_t block_hi(const hk_dmm_t *d, unsigned list) { return hk_tag_gross(d->cfg.lists[list - 1u].hi); }

/*
 * The dedicated list that files free blocks of this gross size, or POOL.
 * The lists' size ranges ascend with their request ranges, so the first one
 * that reaches the size decides.
 */
static unsigned home(const hk_dmm_t *d, size_t size)
{
    unsigned list;
    for (list = 1; list <= d->cfg.nlists; list++) {
        if (size <= block_hi(d, list)) {
            return size >= block_lo(d, list) ? list : POOL;
        }
    }
    return POOL;
}

/*
 * Without a pool, a block no list files (the top taken whole, a block
 * shrunk in place) goes to the last list whose smallest block it can stand
 * in for (the first always qualifies: every block was carved for some list).
 */
static unsigned list_by_size(const hk_dmm_t *d, size_t size)
{
    unsigned list = d->cfg.nlists;
    while (list > 1u && block_lo(d, list) > size) {
        list--;
    }
    return list;
}

/* The list a freed block of this size goes to. */
static unsigned filed_list(const hk_dmm_t *d, size_t size)
{
    unsigned list = home(d, size);
    return (list == POOL && d->cfg.no_pool) ? list_by_size(d, size) : list;
}

/* ---- lists ---- */

/* The node closing list, as a tag pointer whose hk_tag_links() is the node's links. */
static hk_tag_t *node(const hk_dmm_t *d, unsigned list)
{
    return hk_tag_at((uintptr_t)&d->lists[list].links - HK_TAG_HDR);
}

/* Which list's node t is, or -1 when it is none. */
static int node_index(const hk_dmm_t *d, const hk_tag_t *t)
{
    uintptr_t off = (uintptr_t)t + HK_TAG_HDR - (uintptr_t)&d->lists[0].links;
    if (off % sizeof(dmm_list_t) != 0 || off / sizeof(dmm_list_t) > d->cfg.nlists) {
        return -1;
    }
    return (int)(off / sizeof(dmm_list_t));
}

/* A link may name a block: inside the span, where a free block's tag can start (no dereference). */
static int link_placed(const hk_dmm_t *d, const hk_tag_t *t)
{
    uintptr_t off = (uintptr_t)t - (uintptr_t)d->span.first;
    return off <= d->span_bytes - HK_TAG_MIN_BLOCK && off % HK_ALIGN == 0;
}

/*
 * The block after `from` on list (the list's node after its tail). With
 * HK_CHECKS the link must name the node, or a placed free block, that links
 * back to `from`; NULL when it does not. Following only such links, a walk
 * never revisits a block, so it ends even on a damaged list.
 */
static hk_tag_t *step(const hk_dmm_t *d, unsigned list, const hk_tag_t *from)
{
    hk_tag_t *to = hk_tag_links(from)->next;
#if HK_CHECKS
    if (to == node(d, list) ? hk_tag_links(to)->prev != from
                            : !link_placed(d, to) || hk_tag_used(to) || hk_tag_links(to)->prev != from) {
        return NULL;
    }
#else
    (void)d;
    (void)list;
#endif
    return to;
}

/* Empty list: at init, or to take a damaged list out of service (its blocks are never handed out again). */
static void drop_list(hk_dmm_t *d, unsigned list)
{
    hk_tag_t *n = node(d, list);
    hk_tag_links(n)->next = n;
    hk_tag_links(n)->prev = n;
    d->lists[list].max_size = 0;
    if (list == POOL) {
        d->rover = NULL;
    }
}

/* A search met a broken link after `from`: report, drop the list, find nothing there. */
static hk_tag_t *broken(hk_dmm_t *d, unsigned list, const hk_tag_t *from)
{
    hk_report(&d->heap, HK_ERR_CORRUPT, hk_tag_payload(from));
    drop_list(d, list);
    return NULL;
}

#if HK_CHECKS
/* A listed block's links name the node or placed free blocks (of one list) that link back to it. */
static int links_sound(const hk_dmm_t *d, const hk_tag_t *b)
{
    const hk_tag_t *next = hk_tag_links(b)->next;
    const hk_tag_t *prev = hk_tag_links(b)->prev;
    int next_node = node_index(d, next);
    int prev_node = node_index(d, prev);
    if ((next_node < 0 && (!link_placed(d, next) || hk_tag_used(next))) ||
        (prev_node < 0 && (!link_placed(d, prev) || hk_tag_used(prev))) ||
        (next_node >= 0 && prev_node >= 0 && next_node != prev_node)) {
        return 0;
    }
    return hk_tag_links(next)->prev == b && hk_tag_links(prev)->next == b;
}
#endif

/* Unlink listed block b from its neighbours (no counting). */
static void unlink_block(hk_dmm_t *d, hk_tag_t *b)
{
    hk_tag_t *next = hk_tag_links(b)->next;
    hk_tag_t *prev = hk_tag_links(b)->prev;
    int emptied = next == prev ? node_index(d, next) : -1;
    hk_tag_links(prev)->next = next;
    hk_tag_links(next)->prev = prev;
    if (d->rover == b) {
        d->rover = node_index(d, next) < 0 ? next : NULL;
    }
    if (emptied >= 0) {
        d->lists[emptied].max_size = 0;
    }
}

/* Put free block b on list in the config's order; the list is dropped if an address-order walk meets damage. */
static void push(hk_dmm_t *d, unsigned list, hk_tag_t *b)
{
    dmm_list_t *l = &d->lists[list];
    hk_tag_t *n = node(d, list);
    hk_tag_t *prev = n;
    hk_tag_t *next = hk_tag_links(n)->next;
    if (d->cfg.order == HK_DMM_ORDER_FIFO) {
        prev = hk_tag_links(n)->prev;
        next = n;
    } else if (d->cfg.order == HK_DMM_ORDER_ADDRESS) {
        next = step(d, list, n);
        while (next != NULL && next != n && next < b) {
            prev = next;
            next = step(d, list, prev);
            d->counters.insert_steps++;
        }
        if (next == NULL) {
            broken(d, list, prev);
            prev = n;
            next = n;
        }
    }
    hk_tag_links(b)->prev = prev;
    hk_tag_links(b)->next = next;
    hk_tag_links(prev)->next = b;
    hk_tag_links(next)->prev = b;
    if (hk_tag_size(b) > l->max_size) {
        l->max_size = hk_tag_size(b);
    }
}

/* File free block b (tag written, poisoned): the top if it reaches the sentinel, else on list. */
static void file(hk_dmm_t *d, hk_tag_t *b, unsigned list)
{
    d->heap.stats.free_blocks++;
    d->heap.stats.free_bytes += hk_tag_size(b);
    if (hk_tag_next(b) == d->span.sentinel) {
        d->top = b;
    } else {
        push(d, list, b);
    }
}

/* Take filed block b off its list, or out of the top; 0 (reported, b left alone) if its links are damaged. */
static int detach(hk_dmm_t *d, hk_tag_t *b)
{
    if (b == d->top) {
        d->top = NULL;
    } else {
#if HK_CHECKS
        if (!links_sound(d, b)) {
            hk_report(&d->heap, HK_ERR_CORRUPT, hk_tag_payload(b));
            return 0;
        }
#endif
        unlink_block(d, b);
    }
    d->heap.stats.free_blocks--;
    d->heap.stats.free_bytes -= hk_tag_size(b);
    return 1;
}

static int detach_cb(hk_heap_t *h, hk_tag_t *b) { return detach((hk_dmm_t *)h, b); }
static void file_cb(hk_heap_t *h, hk_tag_t *b) { file((hk_dmm_t *)h, b, POOL); }
static const hk_tag_lists_t dmm_lists = {detach_cb, file_cb};

/* Free block b (on no list, tagged used) into the pool, merged with its free neighbours if the level allows. */
static void release(hk_dmm_t *d, hk_tag_t *b)
{
    if (hk_tag_size(b) >= d->coalesce_min) {
        b = hk_tag_coalesce(&d->heap, &d->span, &dmm_lists, b);
    } else {
        hk_tag_write(b, hk_tag_size(b), 0);
        hk_tag_poison(b);
    }
    file(d, b, POOL);
}

/* Cut used block b to gross bytes; the rest is released into the pool. */
static void cut(hk_dmm_t *d, hk_tag_t *b, size_t gross)
{
    size_t rest = hk_tag_size(b) - gross;
    hk_tag_t *r = hk_tag_at((uintptr_t)b + gross);
    hk_tag_write(b, gross, 1);
    hk_tag_write(r, rest, 1);
    d->heap.stats.split_count++;
    release(d, r);
}

/* Whether a block about to hold `waste` spare bytes splits off a remainder of rest bytes. */
static int should_split(const hk_dmm_t *d, size_t rest, size_t waste)
{
    return rest >= HK_TAG_MIN_BLOCK && (rest >= d->split_min || waste > WASTE_MAX);
}

/* ---- searches ---- */

/* First block of list, in list order, of at least gross bytes. */
static hk_tag_t *first_fit(hk_dmm_t *d, unsigned list, size_t gross)
{
    hk_tag_t *n = node(d, list);
    hk_tag_t *from = n;
    if (d->lists[list].max_size < gross) {
        return NULL;
    }
    for (;;) {
        hk_tag_t *b = step(d, list, from);
        if (b == NULL) {
            return broken(d, list, from);
        }
        if (b == n) {
            return NULL;
        }
        d->counters.examined++;
        if (hk_tag_size(b) >= gross) {
            return b;
        }
        from = b;
    }
}

static hk_tag_t *next_fit(hk_dmm_t *d, size_t gross)
{
    hk_tag_t *n = node(d, POOL);
    hk_tag_t *start = (d->rover != NULL) ? d->rover : step(d, POOL, n);
    hk_tag_t *b = start;
    int wrapped = 0;
    if (b == NULL) {
        return broken(d, POOL, n);
    }
    while (b != n) {
        hk_tag_t *from = b;
        d->counters.examined++;
        if (hk_tag_size(b) >= gross) {
            d->rover = b;
            return b;
        }
        b = step(d, POOL, from);
        if (b == n && !wrapped) {
            wrapped = 1;
            from = n;
            b = step(d, POOL, n);
        }
        if (b == NULL) {
            return broken(d, POOL, from);
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
    hk_tag_t *n = node(d, POOL);
    hk_tag_t *from = n;
    hk_tag_t *pick = NULL;
    for (;;) {
        hk_tag_t *b = step(d, POOL, from);
        size_t size;
        if (b == NULL) {
            return broken(d, POOL, from);
        }
        if (b == n) {
            break;
        }
        size = hk_tag_size(b);
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
        from = b;
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

/* Last resort before failing: the first fitting block of any dedicated list but skip; *from says which. */
static hk_tag_t *any_list(hk_dmm_t *d, unsigned skip, size_t gross, unsigned *from)
{
    unsigned list;
    hk_tag_t *b;
    for (list = 1; list <= d->cfg.nlists; list++) {
        if (list != skip && (b = first_fit(d, list, gross)) != NULL) {
            *from = list;
            return b;
        }
    }
    return NULL;
}

/* ---- handing out ---- */

/*
 * Take block b, found on list `from` (or the top), out of the free pool for
 * handing out. With HK_CHECKS it must be free, agree with both neighbours
 * and be linked both ways; one that is not is reported and left out of
 * service (unlinked if its links allow, else its whole list dropped; a
 * damaged top is forgotten), and 0 sends the caller searching again.
 */
static int claim(hk_dmm_t *d, hk_tag_t *b, unsigned from)
{
#if HK_CHECKS
    if (hk_tag_used(b) || !hk_tag_sound(&d->span, b) ||
        (from == TOP ? hk_tag_next(b) != d->span.sentinel : !links_sound(d, b))) {
        hk_report(&d->heap, HK_ERR_CORRUPT, hk_tag_payload(b));
        if (from == TOP) {
            d->top = NULL;
        } else if (links_sound(d, b)) {
            unlink_block(d, b);
        } else {
            drop_list(d, from);
        }
        return 0;
    }
#else
    (void)from;
#endif
    return detach(d, b);
}

/* Level 2: the poison of free block b up to `end` must be intact (a write after free otherwise). */
static void check_poison(hk_dmm_t *d, const hk_tag_t *b, const void *end)
{
#if HK_CANARIES
    if (!hk_filled(hk_tag_poison_start(b), end, HK_POISON_BYTE)) {
        hk_report(&d->heap, HK_ERR_CORRUPT, hk_tag_payload(b));
    }
#else
    (void)d;
    (void)b;
    (void)end;
#endif
}

static void note_top(hk_dmm_t *d)
{
    const hk_tag_t *top = (d->top != NULL) ? d->top : d->span.sentinel;
    size_t touched = (size_t)((uintptr_t)top - (uintptr_t)d->span.first);
    if (touched > d->counters.max_top) {
        d->counters.max_top = touched;
    }
}

/*
 * Turn claimed block b into a used block for request, at least gross bytes.
 * The top is cut exactly (its rest stays the top, still poisoned: only the
 * part handed out is checked); a listed block is split by the level.
 */
static void *hand_out(hk_dmm_t *d, hk_tag_t *b, size_t gross, size_t request, int from_top)
{
    size_t size = hk_tag_size(b);
    size_t rest = size - gross;
    hk_stats_t *s = &d->heap.stats;
    if (from_top) {
        hk_tag_t *r = hk_tag_at((uintptr_t)b + gross);
        if (rest >= HK_TAG_MIN_BLOCK) {
            check_poison(d, b, hk_tag_poison_start(r));
            hk_tag_write(b, gross, 1);
            hk_tag_write(r, rest, 0);
            file(d, r, POOL);
        } else {
            check_poison(d, b, hk_tag_next(b));
            hk_tag_write(b, size, 1);
        }
        d->counters.top_carves++;
    } else {
        check_poison(d, b, hk_tag_next(b));
        hk_tag_write(b, size, 1);
        if (should_split(d, rest, size - HK_TAG_HDR - request)) {
            cut(d, b, gross);
        }
    }
#if HK_CANARIES
    s->used_requested += request;
#endif
    hk_tag_arm_canary(b, request);
    s->alloc_count++;
    hk_note_low(s);
    note_top(d);
    return hk_tag_payload(b);
}

void *hk_dmm_malloc(hk_dmm_t *d, size_t size)
{
    unsigned routed = route(d, size);
    size_t gross = gross_for(d, size, routed);
    unsigned list;

    if (gross == 0 || (routed == POOL && d->cfg.no_pool)) {
        return NULL;
    }
    list = home(d, gross);
    for (;;) {
        unsigned from = list;
        size_t *hits = &d->counters.list_hits;
        hk_tag_t *b;
        if (list != POOL && (b = first_fit(d, list, gross)) != NULL) {
            /* the list that files blocks of this size */
        } else if (!d->cfg.no_pool && (b = search_pool(d, gross)) != NULL) {
            from = POOL;
            hits = &d->counters.pool_hits;
        } else if (d->top != NULL && hk_tag_size(d->top) >= gross) {
            b = d->top;
            from = TOP;
            hits = NULL;
        } else if (d->cfg.fit == HK_DMM_FIT_EXACT && !d->cfg.no_pool && (b = first_fit(d, POOL, gross)) != NULL) {
            from = POOL;
            hits = &d->counters.pool_hits;
        } else if ((b = any_list(d, list, gross, &from)) == NULL) {
            return NULL;
        }
        if (claim(d, b, from)) {
            if (hits != NULL) {
                ++*hits;
            }
            return hand_out(d, b, gross, size, from == TOP);
        }
    }
}

void hk_dmm_free(hk_dmm_t *d, void *ptr)
{
    hk_tag_t *b;
    unsigned list;
    if (ptr == NULL || (b = hk_tag_lookup(&d->heap, &d->span, ptr)) == NULL) {
        return;
    }
#if HK_CANARIES
    d->heap.stats.used_requested -= b->requested;
#endif
    d->heap.stats.free_count++;
    list = filed_list(d, hk_tag_size(b));
    if (list == POOL) {
        release(d, b);
    } else {
        hk_tag_write(b, hk_tag_size(b), 0);
        hk_tag_poison(b);
        file(d, b, list);
    }
}

void *hk_dmm_resize(hk_dmm_t *d, void *ptr, size_t size)
{
    hk_tag_t *b = hk_tag_lookup(&d->heap, &d->span, ptr);
    size_t old_size;
    size_t need = hk_tag_gross(size);
    size_t gross;

    if (b == NULL) {
        return NULL;
    }
    old_size = hk_tag_size(b);
    if (need == 0 || need > old_size) {
        return NULL; /* does not fit: hk_realloc moves it */
    }
    gross = gross_for(d, size, route(d, size));
    if (gross != 0 && gross < old_size && should_split(d, old_size - gross, old_size - HK_TAG_HDR - size)) {
        cut(d, b, gross);
    }
#if HK_CANARIES
    d->heap.stats.used_requested = d->heap.stats.used_requested - b->requested + size;
#endif
    hk_tag_arm_canary(b, size);
    return ptr;
}

size_t hk_dmm_usable_size(hk_dmm_t *d, const void *ptr)
{
    const hk_tag_t *b;
    if (ptr == NULL || (b = hk_tag_lookup(&d->heap, &d->span, ptr)) == NULL) {
        return 0;
    }
    return hk_tag_usable_size(b);
}

/* Smallest gross size a block filed on list may have. */
static size_t list_min_gross(const hk_dmm_t *d, unsigned list)
{
    return (list == POOL) ? HK_TAG_MIN_BLOCK : block_lo(d, list);
}

void hk_dmm_get_stats(hk_dmm_t *d, hk_stats_t *out)
{
    unsigned list;
    hk_stats_read(&d->heap, out);
    hk_tag_derive_stats(out);
    out->largest_free = (d->top != NULL) ? hk_tag_size(d->top) : 0;
    out->smallest_free = out->largest_free;
    for (list = 0; list <= d->cfg.nlists; list++) {
        const hk_tag_t *n = node(d, list);
        const hk_tag_t *b;
        if (out->smallest_free != 0 && out->smallest_free <= list_min_gross(d, list) &&
            d->lists[list].max_size <= out->largest_free) {
            continue; /* the list's bounds say it cannot change either figure */
        }
        for (b = step(d, list, n); b != NULL && b != n; b = step(d, list, b)) {
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

/* Links, order, filing and size bound of one list; adds its length to *listed. */
static hk_check_t check_list(const hk_dmm_t *d, unsigned list, size_t *listed, int *rover_seen)
{
    const hk_tag_t *n = node(d, list);
    const hk_tag_t *prev = n;
    const hk_tag_t *b;
    for (b = hk_tag_links(n)->next; b != n; prev = b, b = hk_tag_links(b)->next) {
        size_t size;
        if (!link_placed(d, b)) {
            return HK_CHECK_RANGE;
        }
        if (hk_tag_used(b)) {
            return HK_CHECK_STATE;
        }
        if (!hk_tag_sound(&d->span, b)) {
            return HK_CHECK_NEIGHBOUR;
        }
        if (hk_tag_links(b)->prev != prev) {
            return HK_CHECK_LINK;
        }
        size = hk_tag_size(b);
        if (b == d->top || size > d->lists[list].max_size || (list != POOL && filed_list(d, size) != list) ||
            (d->cfg.order == HK_DMM_ORDER_ADDRESS && prev != n && prev >= b)) {
            return HK_CHECK_LIST;
        }
        if (++*listed > d->heap.stats.free_blocks) {
            return HK_CHECK_COUNT;
        }
        *rover_seen |= (list == POOL && b == d->rover);
    }
    return (hk_tag_links(n)->prev == prev) ? HK_CHECK_OK : HK_CHECK_LINK;
}

hk_check_t hk_dmm_check(hk_dmm_t *d)
{
    size_t listed = 0;
    unsigned list;
    int rover_seen = (d->rover == NULL);
    int merged = (d->cfg.coalesce == HK_DMM_LEVEL_ALWAYS && d->cfg.nlists == 0);
    hk_check_t rc = hk_tag_check(&d->heap, &d->span, merged, d->heap.stats.free_blocks);

    if (rc != HK_CHECK_OK) {
        return rc;
    }
    if (d->top != NULL) {
        if (!link_placed(d, d->top)) {
            return HK_CHECK_RANGE;
        }
        if (hk_tag_used(d->top)) {
            return HK_CHECK_STATE;
        }
        if (hk_tag_next(d->top) != d->span.sentinel) {
            return HK_CHECK_LIST;
        }
    } else if (!hk_tag_prev_used(d->span.sentinel)) {
        return HK_CHECK_LIST; /* the last block is free but not the top */
    }
    for (list = 0; list <= d->cfg.nlists; list++) {
        if ((rc = check_list(d, list, &listed, &rover_seen)) != HK_CHECK_OK) {
            return rc;
        }
    }
    if (listed + (d->top != NULL) != d->heap.stats.free_blocks) {
        return HK_CHECK_COUNT;
    }
    return rover_seen ? HK_CHECK_OK : HK_CHECK_LIST;
}

HK_DEFINE_OPS(hk_dmm, hk_dmm_t, "dmm", NULL);

hk_heap_t *hk_dmm_heap(hk_dmm_t *d) { return hk_bind(&d->heap, &hk_dmm_ops); }

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
    hk_status_t rc;
    size_t span_size;
    unsigned list;

    if (arena == NULL || hk_dmm_validate(cfg) != HK_DMM_CFG_OK) {
        return hk_init_status(status, HK_EINVAL);
    }
    if (end < base || end - base < sizeof(hk_dmm_t)) {
        return hk_init_status(status, HK_ETOOSMALL);
    }
    d = (hk_dmm_t *)base;
    rc = hk_tag_span_init(&d->span, base + sizeof(hk_dmm_t), end, HK_TAG_MAX_BLOCK);
    if (rc != HK_OK) {
        return hk_init_status(status, rc);
    }
    span_size = hk_tag_span_bytes(&d->span);
    hk_heap_setup(&d->heap, span_size);
    d->cfg = *cfg;
    for (list = 0; list <= HK_DMM_MAX_LISTS; list++) {
        drop_list(d, list);
    }
    hk_memset(&d->counters, 0, sizeof(d->counters));
    d->rover = NULL;
    d->top = NULL;
    d->span_bytes = span_size;
    d->split_min = hk_dmm_level_threshold(cfg->split);
    d->coalesce_min = hk_dmm_level_threshold(cfg->coalesce);
    d->heap.stats.free_bytes = 0;
    file(d, d->span.first, POOL); /* the whole span: the top */
    hk_init_status(status, HK_OK);
    return d;
}
