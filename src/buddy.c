/* SPDX-License-Identifier: MIT */
/*
 * Binary buddy allocator (Knuth, TAOCP vol. 1, 2.5) with control bytes kept
 * out of band in the style of SQLite's mem5, and optional lazy coalescing
 * (DELAY-2, Barkley & Lee 1989) with a bounded cost per call.
 *
 * Layout of the arena:
 *
 *   [hk_buddy_t][sentinels][pad][ctrl: one byte per atom][block area ...]
 *                                                        ^ base, aligned to
 *                                          max(min_block, HK_BUDDY_BASE_ALIGN)
 *
 * The sentinels are one list head per order the arena can use for the
 * global lists, and in lazy mode as many for the local lists and one DELAY-2
 * slack word per order.
 *
 * The block area is cut into atoms of min_block bytes and the control bytes
 * end exactly at base, so ctrl[i] = base[i - atoms]. A block of order k spans
 * 2^k atoms and starts at an atom index that is a multiple of 2^k; the block
 * of the same order at index i XOR 2^k is its buddy. An area that is not a
 * power of two is covered by several top-level blocks, the binary
 * decomposition of the atom count (each piece aligned to its own size, none
 * above order HK_BUDDY_ORDERS - 1). Any aligned power-of-two range inside the
 * area lies inside one piece, so merging only when the buddy lies inside the
 * area and is a free head of the same order never builds a block across two
 * pieces.
 *
 * Control byte of atom i: 0 if no block starts there, otherwise
 * state | order with state 0x20 = globally free (on a global list, merged
 * with its buddy whenever both are globally free), 0x40 = used, 0x60 =
 * locally free (lazy mode: on a local list, never merged), 0xC0 = lost (a
 * free block found damaged and taken out of service: never handed out,
 * merged or freed again). Splitting and merging touch only the head bytes of
 * the halves, so the bytes of atoms inside a block stay 0 at no cost. The
 * control bytes are the allocator's state of record; the free lists are an
 * index into them, and every list node a call touches is checked against
 * them (HK_CHECKS, below).
 *
 * Free blocks hold their list links in their first two words. The lists are
 * circular through their sentinel, so unlinking never branches on the ends.
 * Each order has a global and (lazy mode) a local list, and a 32-bit map per
 * kind says which lists are non-empty.
 *
 * Time bounds (n = atoms in the area, so log2 n <= top < HK_BUDDY_ORDERS):
 *   malloc/aligned_alloc: one bit scan, a checked pop, at most log2 n splits.
 *     The lists the splits feed are known to be empty (the scan found no
 *     block below the one split), so a split writes four words and reads
 *     none.
 *   free: at most log2 n merges, each a checked unlink.
 *   resize (in place only): at most log2 n splits or absorbed buddies (lazy
 *     mode absorbs parked buddies too); otherwise it refuses and hk_realloc
 *     moves the block (a malloc, a copy and a free).
 *   Lazy mode: free performs at most two merge chains (DELAY-2's rule);
 *     malloc takes a local block of the exact order, else the smallest
 *     global one that fits, else the smallest larger local one, else merges
 *     HK_BUDDY_LAZY_FLUSH (1) locally free blocks and looks once more; in
 *     the worst case that is one free's merge chain plus one malloc, so no
 *     call costs more than a plain buddy's free and malloc together. The
 *     price: a request may fail while merging more parked blocks would have
 *     served it (each such failure merges one more). DELAY-2 keeps D = A - L
 *     >= 0 per order, so once every block is freed no block is locally free
 *     and the heap is fully coalesced again.
 *   Damage repair (error path only): one pass over the damaged order's
 *     control bytes, O(n / 2^order).
 *   init, walk and check: O(n) (level 2: O(area) for the patterns).
 *
 * Overhead: no per-block header, one control byte per atom (1/min_block of
 * the area) and hk_buddy_t (two words per order and list kind, one word per
 * order of DELAY-2 slack). Internal fragmentation: a request is rounded up to
 * a power of two times min_block; at HK_HARDENING >= 2 after adding
 * HK_CANARY_ROOM and one size_t (the requested size, kept in the block's last
 * word).
 *
 * Statistics kept per call are only those get_stats cannot derive:
 * free_bytes, min_ever_free, used_granted (kept because ports read it from
 * the handle), the alloc/free/split/coalesce/error counts (realloc_count and
 * fail_count are the uniform layer's, src/heap.c). get_stats derives
 * used_blocks = alloc - free, free_blocks = top-level blocks + splits -
 * merges - used - lost, used_requested = used_granted, and the
 * largest/smallest free block from the list maps; peak_used is the gross
 * high-water mark, capacity - min_ever_free, at every level.
 *
 * Hardening (HK_HARDENING, heapkit.h):
 *   0  nothing is checked: misuse is undefined behaviour.
 *   1  constant-time checks. A pointer handed in must lie in the area
 *      (HK_ERR_FOREIGN_PTR), start a block (HK_ERR_INTERIOR_PTR), be used
 *      (HK_ERR_DOUBLE_FREE for a free or locally free block), and its head
 *      byte must be sane and pinned by its neighbours (the atom halfway
 *      through the block is no head, the atom just after it is one), which
 *      catches any change to a head's order (HK_ERR_CORRUPT); such a call
 *      leaves the heap untouched. Every free block a call takes from a list
 *      must be an atom start in the area whose control byte is that list's
 *      kind and order (heads of order k sit only at multiples of 2^k, so the
 *      byte vouches for the rest) and whose back link agrees; so must its
 *      successor, which becomes the list head (a link outside the heap,
 *      misaligned, at a block the control bytes do not call free, or whose
 *      back link disagrees). Every node an unlink or a push writes through
 *      must lie in the allocator's own memory, pointer-aligned, and link
 *      back. A failure is reported (HK_ERR_CORRUPT), the block whose
 *      links led astray is taken out of service (lost) if the control bytes
 *      say it is a free block of that list, the list is rebuilt from the
 *      control bytes, and the call carries on: no block is handed out twice
 *      and no write goes through a bad link. A buddy keeps no in-band header,
 *      so an overflow into a used neighbour changes no allocator state and is
 *      not seen at this level; one into a free neighbour's links is caught
 *      when a call touches that block.
 *   2  level 1, plus the requested size in the block's last word and a canary
 *      (HK_CANARY_BYTE) from the requested size up to it, checked on free and
 *      resize (reported, the call goes on); usable_size is the requested size
 *      (malloc(0) is served as malloc(1): callers read usable size 0 as "no
 *      block"). Free blocks are filled with HK_POISON_BYTE beyond their links,
 *      checked when a block is handed out (malloc, or absorbed by resize); a
 *      poisoned block found written is reported and taken out of service.
 *      Both cost O(block size). An overflow long enough to cross the canary
 *      and overwrite the size word leaves used_granted inexact (check() then
 *      says HK_CHECK_STATS): no copy of a block's size lies out of its
 *      reach.
 *   3  level 2; hk_check() runs around every uniform call (src/heap.c).
 *   check() validates everything (hk_check_t codes): the control structure
 *   (CONTROL), every head byte (STATE, ALIGN, RANGE, NEIGHBOUR, UNMERGED),
 *   the lists against them (RANGE, ALIGN, LIST, LINK, COUNT), the maps
 *   (LIST), DELAY-2's slack (CONTROL), the counters (STATS) and, at level 2,
 *   every canary (CANARY) and every poisoned free block (POISON).
 *
 * Cost at level 1 on a Cortex-M3 (-O2, instructions per call with the call):
 * a malloc that splits nothing takes about 80, each split 12 more; a free
 * that merges nothing about 115, each merge about 32 (18 of which the
 * unchecked loop needs, 14 the link checks). The fast paths are built from
 * always-inline helpers into one function each, lazy mode's parking and
 * unparking included, so that DELAY-2 and the plain buddy are measured on the
 * same code; the error, flush and level-2 paths are kept out of them.
 */
#include "heapkit/buddy.h"
#include "hk_tail.h"

#define CTRL_ORDER 0x1Fu
#define CTRL_FREE 0x20u
#define CTRL_USED 0x40u
#define CTRL_LOCAL 0x60u
#define CTRL_SPARE 0x80u
/* State bits plus the spare bit: what a head's kind is compared on. */
#define CTRL_KIND 0xE0u
#define CTRL_LOST (CTRL_SPARE | CTRL_USED)

#define BUDDY_POW2(x) ((x) != 0 && ((x) & ((x) - 1)) == 0)

/* Parked blocks an allocation may merge before it gives up (lazy mode). */
#ifndef HK_BUDDY_LAZY_FLUSH
#define HK_BUDDY_LAZY_FLUSH 1
#endif

/* Repairs one call may meet before it gives up: each takes a damaged block or list state away. */
#define BUDDY_ATTEMPTS 4


typedef struct buddy_link {
    struct buddy_link *next;
    struct buddy_link *prev;
} buddy_link_t;

#define BUDDY_LINKS ((size_t)sizeof(buddy_link_t))

typedef struct buddy_lists {
    uint32_t map;       /* bit k set iff list k is not empty */
    buddy_link_t *head; /* `orders` sentinels of circular lists, in the arena (NULL: no such lists) */
} buddy_lists_t;

struct hk_buddy {
    hk_heap_t heap;
    unsigned char *base; /* block area */
    unsigned char *cb;   /* control bytes: base - atoms */
    size_t area;         /* atoms << shift */
    size_t atoms;
    unsigned shift;      /* log2(min_block) */
    unsigned top;        /* highest order any block can have */
    uintptr_t links_lo;  /* every valid link lies in [links_lo, links_lo + links_span): */
    size_t links_words;  /* from the first sentinel to the end of the block area, in pointers */
    buddy_lists_t global;
    buddy_lists_t local; /* lazy mode only */
    size_t *slack;       /* lazy mode: DELAY-2's D = A - L per order */
    int lazy;
    unsigned orders;     /* sentinels per list kind: top + 1, or one more */
    size_t top_blocks;   /* blocks init made: free_blocks is derived from it */
    size_t lost_blocks;  /* damaged free blocks taken out of service */
    size_t lost_bytes;
};

HK_STATIC_ASSERT(HK_BUDDY_ORDERS >= 1 && HK_BUDDY_ORDERS <= 32, orders_fit_map_and_ctrl_byte);
HK_STATIC_ASSERT(BUDDY_POW2(HK_BUDDY_MIN_BLOCK), min_block_is_power_of_two);
HK_STATIC_ASSERT(HK_BUDDY_MIN_BLOCK >= sizeof(buddy_link_t) && HK_BUDDY_MIN_BLOCK >= HK_ALIGN, min_block_holds_links);
HK_STATIC_ASSERT(BUDDY_POW2(HK_BUDDY_BASE_ALIGN) && HK_BUDDY_BASE_ALIGN >= HK_ALIGN, base_align_is_power_of_two);
/* A control byte holds an order in its low five bits and a kind in the high three. */
HK_STATIC_ASSERT((CTRL_ORDER & CTRL_KIND) == 0 && (CTRL_ORDER + 1u) >= HK_BUDDY_ORDERS, order_fits_ctrl_byte);
/* The sentinels (arrays of links) and the slack words follow the struct, aligned for both. */
HK_STATIC_ASSERT(sizeof(buddy_link_t) == 2 * sizeof(void *), links_are_two_words);
HK_STATIC_ASSERT(sizeof(hk_buddy_t) % sizeof(void *) == 0 && sizeof(size_t) <= sizeof(buddy_link_t),
                 control_data_stays_aligned);
HK_STATIC_ASSERT(HK_BUDDY_LAZY_FLUSH >= 1, lazy_flush_makes_progress);

static void *hk_buddy_op_aligned(hk_heap_t *h, size_t alignment, size_t size)
{
    return hk_buddy_aligned_alloc((hk_buddy_t *)h, alignment, size);
}

HK_DEFINE_OPS(hk_buddy, hk_buddy_t, "buddy", hk_buddy_op_aligned);

/* ---- geometry ---- */

HK_HOT size_t span(unsigned k) { return (size_t)1 << k; }

HK_HOT uint32_t order_bit(unsigned k) { return (uint32_t)1u << k; }

HK_HOT size_t block_bytes(const hk_buddy_t *h, unsigned k) { return (size_t)1 << (h->shift + k); }

HK_HOT unsigned char *block_at(const hk_buddy_t *h, size_t idx) { return h->base + (idx << h->shift); }

HK_HOT size_t index_of(const hk_buddy_t *h, const void *p)
{
    return (size_t)((uintptr_t)p - (uintptr_t)h->base) >> h->shift;
}

HK_HOT unsigned char head(unsigned kind, unsigned k) { return (unsigned char)(kind | k); }

#define BUDDY_LOG2_PTR (sizeof(void *) == 8 ? 3u : sizeof(void *) == 4 ? 2u : 1u)
HK_STATIC_ASSERT(sizeof(void *) == 8 || sizeof(void *) == 4 || sizeof(void *) == 2, pointer_size_known);
HK_STATIC_ASSERT(sizeof(uintptr_t) == sizeof(size_t), offsets_fit_size_t);

/*
 * The atom index of address x, or a number >= atoms when x is no atom start
 * inside the area. Rotating the offset right by log2(min_block) gives the
 * index when the low bits are clear and a huge number when they are not, so
 * one compare with atoms checks the range and the alignment together.
 */
HK_HOT size_t atom_of(const hk_buddy_t *h, const void *x)
{
    return hk_rotr((size_t)((uintptr_t)x - (uintptr_t)h->base), h->shift);
}

/*
 * Smallest order whose block holds size bytes (plus the level-2 extras), or
 * an order above top when none can: ceil(size / min_block) - 1 is
 * (size - 1) >> shift, whose bit length is the order.
 */
HK_HOT unsigned order_for(const hk_buddy_t *h, size_t size)
{
    size_t atoms_minus_one;
#if HK_CANARIES
    if (size > SIZE_MAX - HK_TAIL_EXTRA) {
        return HK_BUDDY_ORDERS;
    }
    size += HK_TAIL_EXTRA;
#endif
    atoms_minus_one = (size - 1u) >> h->shift;
    if (size == 0 || atoms_minus_one == 0) {
        return 0;
    }
    return hk_log2_floor(atoms_minus_one) + 1u;
}

/*
 * Highest order the block at idx can merge up to: that of the top-level
 * piece holding it. The pieces follow the binary decomposition of the atom
 * count, so idx lies in the piece whose order is the highest bit where idx
 * and the atom count differ (capped at top). Bounding the merge loop by it
 * also keeps every buddy it looks at inside the area.
 */
HK_HOT unsigned piece_order(const hk_buddy_t *h, size_t idx)
{
    unsigned q = hk_log2_floor(h->atoms ^ idx);
    return q < h->top ? q : h->top;
}

/* ---- statistics ---- */

HK_HOT void take_free_bytes(hk_buddy_t *h, size_t bytes)
{
    hk_stats_t *s = &h->heap.stats;
    s->free_bytes -= bytes;
    hk_note_low(s);
}

HK_HOT void grant(hk_buddy_t *h, size_t usable)
{
    hk_stats_t *s = &h->heap.stats;
    s->used_granted += usable;
}

/* ---- level-2 patterns ---- */

#if HK_CANARIES
static int poison_intact(const unsigned char *b, size_t bytes)
{
    return hk_filled(b + BUDDY_LINKS, b + bytes, HK_POISON_BYTE);
}
#endif

/* A freed block holds HK_POISON_BYTE (level 2; nothing otherwise). */
HK_HOT void poison_block(unsigned char *b, size_t bytes)
{
#if HK_CANARIES
    hk_fill(b, b + bytes, HK_POISON_BYTE);
#else
    (void)b;
    (void)bytes;
#endif
}

/* A merged buddy's links become payload of the merged block: poison them too (level 2). */
HK_HOT void poison_links(void *b)
{
#if HK_CANARIES
    hk_fill(b, (unsigned char *)b + BUDDY_LINKS, HK_POISON_BYTE);
#else
    (void)b;
#endif
}

/* ---- checked list operations ---- */

/*
 * Is x the start of a block of order k whose head byte says `kind`? An atom
 * in the area whose control byte is that head: heads of order k sit only at
 * multiples of 2^k (the control bytes are the state of record, check()
 * verifies them), so the byte vouches for the rest of the alignment.
 */
HK_HOT int is_block_of(const hk_buddy_t *h, const void *x, unsigned k, unsigned kind)
{
    size_t i = atom_of(h, x);
    return i < h->atoms && h->cb[i] == head(kind, k);
}

/*
 * May a call read the nodes n and p point at? Both must lie in the
 * allocator's own memory (sentinels, control bytes, block area), where any
 * read is harmless, and be pointer-aligned. Whether they are the right nodes
 * is for their back links to say.
 */
HK_HOT int links_readable(uintptr_t lo, size_t lwords, const buddy_link_t *n, const buddy_link_t *p)
{
#if HK_CHECKS
    /* The rotation puts misaligned low bits on top, as in atom_of. */
    return hk_rotr((size_t)((uintptr_t)n - lo), BUDDY_LOG2_PTR) < lwords &&
           hk_rotr((size_t)((uintptr_t)p - lo), BUDDY_LOG2_PTR) < lwords;
#else
    (void)lo;
    (void)lwords;
    (void)n;
    (void)p;
    return 1;
#endif
}

static void rebuild_list(hk_buddy_t *h, buddy_lists_t *l, unsigned k, unsigned kind);

/* A damaged free block found by a check: out of service, its bytes no longer free. */
static void lose(hk_buddy_t *h, void *b, unsigned k, unsigned kind)
{
    size_t bytes = block_bytes(h, k);
    h->cb[index_of(h, b)] = head(CTRL_LOST, k);
    take_free_bytes(h, bytes);
    h->lost_blocks++;
    h->lost_bytes += bytes;
    if (kind == CTRL_LOCAL) {
        h->slack[k]++; /* L drops by one */
    }
}

/*
 * List k failed a check at block bad: report it, take bad out of service if
 * the control bytes say it is a free block of this list (its links are what
 * led astray, or its payload was written), and rebuild the list from the
 * control bytes.
 */
HK_COLD void list_damaged(hk_buddy_t *h, buddy_lists_t *l, unsigned k, unsigned kind, void *bad)
{
    hk_report(&h->heap, HK_ERR_CORRUPT, bad);
    if (is_block_of(h, bad, k, kind)) {
        lose(h, bad, k, kind);
    }
    rebuild_list(h, l, k, kind);
}

HK_HOT unsigned kind_of(const hk_buddy_t *h, const buddy_lists_t *l) { return l == &h->local ? CTRL_LOCAL : CTRL_FREE; }

/*
 * Put free block mem (its head byte already set) first on list k. The node
 * it writes through, the old first one, must be readable and link back to
 * the sentinel; if not, the list is rebuilt from the control bytes, which
 * takes mem in.
 */
HK_HOT void push(hk_buddy_t *h, buddy_lists_t *l, unsigned k, void *mem)
{
    buddy_link_t *s = &l->head[k];
    buddy_link_t *b = (buddy_link_t *)mem;
    buddy_link_t *n = s->next;
    if (!links_readable(h->links_lo, h->links_words, n, n) || (HK_CHECKS && n->prev != s)) {
        list_damaged(h, l, k, kind_of(h, l), n);
        return;
    }
    b->next = n;
    b->prev = s;
    n->prev = b;
    s->next = b;
    l->map |= order_bit(k);
}

HK_COLD void push_cold(hk_buddy_t *h, buddy_lists_t *l, unsigned k, void *mem) { push(h, l, k, mem); }

/* Take free block b off list k, after checking that both its neighbours are readable and link back to it. */
HK_HOT int unlink_checked(hk_buddy_t *h, buddy_lists_t *l, unsigned k, buddy_link_t *b)
{
    buddy_link_t *n = b->next;
    buddy_link_t *p = b->prev;
    if (!links_readable(h->links_lo, h->links_words, n, p) || (HK_CHECKS && (n->prev != b || p->next != b))) {
        return 0;
    }
    n->prev = p;
    p->next = n;
    if (n == p) {
        l->map &= ~order_bit(k); /* both are the sentinel: b was the only node */
    }
    return 1;
}

/*
 * The first block of list k, taken off it. At level 1 it must be a block of
 * the list's kind and order linking back to the sentinel, and so must its
 * successor (the new first node) unless that is the sentinel; otherwise the
 * damage is repaired and NULL returned (the caller looks again).
 */
HK_HOT buddy_link_t *pop(hk_buddy_t *h, buddy_lists_t *l, unsigned k, unsigned kind, size_t *idx)
{
    buddy_link_t *s = &l->head[k];
    buddy_link_t *b = s->next;
    buddy_link_t *n;
#if HK_CHECKS
    *idx = atom_of(h, b);
    if (*idx >= h->atoms || h->cb[*idx] != head(kind, k) || b->prev != s) {
        list_damaged(h, l, k, kind, b);
        return NULL;
    }
    n = b->next;
    if (n != s && (!is_block_of(h, n, k, kind) || n->prev != b)) {
        list_damaged(h, l, k, kind, b);
        return NULL;
    }
#else
    (void)kind;
    *idx = index_of(h, b);
    n = b->next;
#endif
    s->next = n;
    n->prev = s;
    if (n == s) {
        l->map &= ~order_bit(k);
    }
    return b;
}

HK_COLD buddy_link_t *pop_cold(hk_buddy_t *h, buddy_lists_t *l, unsigned k, unsigned kind, size_t *idx)
{
    return pop(h, l, k, kind, idx);
}

/* Error path: list k holds exactly the blocks whose head byte says kind|k again. O(atoms / 2^k). */
static void rebuild_list(hk_buddy_t *h, buddy_lists_t *l, unsigned k, unsigned kind)
{
    buddy_link_t *s = &l->head[k];
    unsigned char want = head(kind, k);
    size_t idx;
    s->next = s;
    s->prev = s;
    l->map &= ~order_bit(k);
    for (idx = 0; idx + span(k) <= h->atoms; idx += span(k)) {
        if (h->cb[idx] == want) {
            push(h, l, k, block_at(h, idx));
        }
    }
}

/* ---- the core moves ---- */

/*
 * Put free block idx of order k on the global lists, merging it with
 * globally free buddies on the way up (at most to its piece's order). Its
 * bytes are already counted free. The loop keeps the heap's fields in
 * locals: the control byte stores could alias them otherwise.
 */
HK_HOT void merge_up(hk_buddy_t *h, size_t idx, unsigned k)
{
    unsigned char *c = h->cb;
    unsigned char *base = h->base;
    unsigned shift = h->shift;
    uintptr_t lo = h->links_lo;
    size_t lwords = h->links_words;
    unsigned fk = head(CTRL_FREE, k);
    unsigned fk_max = head(CTRL_FREE, piece_order(h, idx));
    unsigned fk0 = fk;
    size_t half = span(k);
    /* Every merged half's head is cleared: the block's own now, each buddy's as it goes. */
    c[idx] = 0;
    while (fk < fk_max) {
        size_t buddy = idx ^ half;
        buddy_link_t *b;
        buddy_link_t *n;
        buddy_link_t *p;
        if (c[buddy] != fk) {
            break;
        }
        b = (buddy_link_t *)(base + (buddy << shift));
        n = b->next;
        p = b->prev;
        if (!links_readable(lo, lwords, n, p) || (HK_CHECKS && (n->prev != b || p->next != b))) {
            list_damaged(h, &h->global, fk & CTRL_ORDER, CTRL_FREE, b);
            break;
        }
        n->prev = p;
        p->next = n;
        if (n == p) {
            h->global.map &= ~order_bit(fk & CTRL_ORDER);
        }
        poison_links(b);
        c[buddy] = 0;
        idx &= ~half;
        half <<= 1;
        fk++;
    }
    if (fk != fk0) {
        h->heap.stats.coalesce_count += fk - fk0;
    }
    c[idx] = (unsigned char)fk;
    push(h, &h->global, fk & CTRL_ORDER, base + (idx << shift));
}

/* Lazy mode: one locally free block of order k goes global (and merges); L drops, so D rises by one. */
HK_COLD void local_to_global(hk_buddy_t *h, unsigned k)
{
    int attempt;
    for (attempt = 0; attempt < BUDDY_ATTEMPTS && (h->local.map & order_bit(k)) != 0; attempt++) {
        size_t idx;
        buddy_link_t *b = pop_cold(h, &h->local, k, CTRL_LOCAL, &idx);
        if (b != NULL) {
            h->slack[k]++;
            poison_links(b); /* may become the middle of a merged block */
            merge_up(h, idx, k);
            return;
        }
    }
}

/*
 * DELAY-2 bookkeeping for a used block leaving order k (freed globally or
 * resized): A drops by one; if that would make D negative, one locally free
 * block of the order goes global too (A and L both drop, D stays 0).
 */
HK_HOT void leave_order(hk_buddy_t *h, unsigned k)
{
    if (h->slack[k] == 0) {
        local_to_global(h, k); /* raises D by one for the L that drops */
    }
    if (h->slack[k] != 0) {
        h->slack[k]--;
    }
}

/* A node whose both links point at x: the only node of a list, and that list's sentinel. */
HK_HOT buddy_link_t self_link(buddy_link_t *x)
{
    buddy_link_t l;
    l.next = x;
    l.prev = x;
    return l;
}

/*
 * Split free block b (index idx, order j, off every list) down to order k:
 * the upper halves become free blocks on the global lists k..j-1. The caller
 * found those lists empty, so each half becomes its list's only node without
 * reading anything.
 */
HK_HOT void split_fresh(hk_buddy_t *h, unsigned char *b, unsigned char *cp, unsigned j, unsigned k)
{
    buddy_link_t *s = h->global.head + j;
    buddy_link_t *stop = h->global.head + k;
    size_t bytes = block_bytes(h, j);
    size_t half = span(j);
    unsigned fk = head(CTRL_FREE, j);
    HK_ASSERT((h->global.map & (order_bit(j) - order_bit(k))) == 0);
    h->global.map |= order_bit(j) - order_bit(k); /* bits k..j-1 */
    h->heap.stats.split_count += j - k;
    while (s != stop) {
        buddy_link_t *u;
        bytes >>= 1;
        half >>= 1;
        s--;
        fk--;
        u = (buddy_link_t *)(b + bytes);
        cp[half] = (unsigned char)fk;
        *u = self_link(s);
        *s = self_link(u);
    }
}

/* Turn the upper halves of used block idx, from order k down to order want, into global free blocks. */
static void split_used(hk_buddy_t *h, size_t idx, unsigned k, unsigned want)
{
    while (k > want) {
        unsigned char *u;
        k--;
        u = block_at(h, idx + span(k));
        poison_block(u, block_bytes(h, k));
        h->cb[idx + span(k)] = head(CTRL_FREE, k);
        push_cold(h, &h->global, k, u);
        h->heap.stats.split_count++;
    }
}

/* Mark block b (order k, control byte *cp) used and count it; usable is what usable_size will say. */
HK_HOT void *hand_out(hk_buddy_t *h, void *b, unsigned char *cp, unsigned k, size_t usable)
{
    *cp = head(CTRL_USED, k);
    take_free_bytes(h, block_bytes(h, k));
    grant(h, usable);
    h->heap.stats.alloc_count++;
    if (h->lazy) {
        h->slack[k]++; /* A rises (a parked block taken back adds one more, below) */
    }
    return b;
}

/*
 * A free block of order k, off every list, its head byte not yet set: the
 * smallest that fits, split down. Lazy mode follows DELAY-2 (a local block
 * of order k first, D += 2), falls back on a larger local block and, when
 * nothing fits, merges HK_BUDDY_LAZY_FLUSH parked blocks (the highest order
 * first: the fewest merges to reach k) before it looks once more. The
 * caller's hand_out adds A's one to D.
 */
static unsigned char *take_block(hk_buddy_t *h, unsigned k, size_t *idx)
{
    uint32_t at_least_k = ~(order_bit(k) - 1u);
    int flushed = 0;
    int attempt;
    for (attempt = 0; attempt < BUDDY_ATTEMPTS; attempt++) {
        uint32_t fit;
        unsigned j;
        buddy_link_t *b;
        if ((h->local.map & order_bit(k)) != 0) {
            b = pop_cold(h, &h->local, k, CTRL_LOCAL, idx);
            if (b != NULL) {
                h->slack[k]++; /* L drops */
                return (unsigned char *)b;
            }
            continue;
        }
        fit = h->global.map & at_least_k;
        if (fit != 0) {
            j = hk_ffs32(fit);
            b = pop_cold(h, &h->global, j, CTRL_FREE, idx);
        } else if ((fit = h->local.map & at_least_k) != 0) {
            j = hk_ffs32(fit);
            b = pop_cold(h, &h->local, j, CTRL_LOCAL, idx);
            if (b != NULL) {
                h->slack[j]++; /* L drops: the block is split, not reused at its order */
            }
        } else {
            if (h->local.map == 0 || flushed == HK_BUDDY_LAZY_FLUSH) {
                return NULL;
            }
            local_to_global(h, hk_fls32(h->local.map));
            flushed++;
            continue;
        }
        if (b != NULL) {
            if (j > k) {
                split_fresh(h, (unsigned char *)b, h->cb + *idx, j, k);
            }
            return (unsigned char *)b;
        }
    }
    return NULL;
}

/* The general allocation path: lazy mode, damaged lists, level-2 patterns. k <= top. */
HK_COLD void *alloc_slow(hk_buddy_t *h, size_t requested, unsigned k)
{
    int attempt;
    for (attempt = 0; attempt < BUDDY_ATTEMPTS; attempt++) {
        size_t idx;
        unsigned char *b = take_block(h, k, &idx);
        if (b == NULL) {
            return NULL;
        }
#if HK_CANARIES
        if (!poison_intact(b, block_bytes(h, k))) {
            /* Written after it was freed: a stale pointer may still write there. */
            hk_report(&h->heap, HK_ERR_CORRUPT, b);
            lose(h, b, k, CTRL_FREE);
            continue;
        }
        hk_tail_set(b, block_bytes(h, k), requested);
        return hand_out(h, b, h->cb + idx, k, requested);
#else
        (void)requested;
        return hand_out(h, b, h->cb + idx, k, block_bytes(h, k));
#endif
    }
    return NULL;
}

/*
 * An allocation of order k. The fast path (levels 0 and 1), lazy mode's
 * included so that DELAY-2 and the plain buddy run the same code: a parked
 * block of order k (lazy mode: D += 2, L drops here and A rises in
 * hand_out), else the smallest global block of order k or above, split
 * down; its list intact. Everything else is alloc_slow's.
 */
HK_HOT void *alloc(hk_buddy_t *h, size_t requested, unsigned k)
{
    unsigned j = k;
    size_t idx;
    unsigned char *cp;
    buddy_link_t *b;
    if (k > h->top) {
        return NULL;
    }
    if (HK_CANARIES) {
        return alloc_slow(h, requested, k);
    }
    if ((h->local.map & order_bit(k)) != 0) {
        b = pop(h, &h->local, k, CTRL_LOCAL, &idx);
        if (b != NULL) {
            h->slack[k]++;
        }
    } else {
        uint32_t fit = h->global.map & ~(order_bit(k) - 1u);
        if (fit == 0) {
            return alloc_slow(h, requested, k);
        }
        j = hk_ffs32(fit);
        b = pop(h, &h->global, j, CTRL_FREE, &idx);
    }
    if (b == NULL) {
        return alloc_slow(h, requested, k);
    }
    cp = h->cb + idx;
    if (j > k) {
        split_fresh(h, (unsigned char *)b, cp, j, k);
    }
    return hand_out(h, b, cp, k, block_bytes(h, k));
}

/* Largest atom count n such that n control bytes from ctrl_lo, then base, then n atoms fit below hi. */
static size_t fit_atoms(uintptr_t ctrl_lo, uintptr_t hi, unsigned shift, uintptr_t base_align, uintptr_t *base)
{
    size_t n;
    if (ctrl_lo >= hi) {
        return 0;
    }
    n = (size_t)((hi - ctrl_lo) / (((uintptr_t)1 << shift) + 1u));
    /* Alignment padding costs less than base_align bytes, so this runs a bounded number of times. */
    for (; n > 0; n--) {
        uintptr_t t = ctrl_lo + n;
        if (t <= UINTPTR_MAX - (base_align - 1u)) {
            *base = hk_align_up_uptr(t, base_align);
            if (*base <= hi && ((hi - *base) >> shift) >= n) {
                break;
            }
        }
    }
    return n;
}

static void lists_init(buddy_lists_t *l, buddy_link_t *sentinels, unsigned orders)
{
    unsigned k;
    l->map = 0;
    l->head = sentinels;
    for (k = 0; k < orders; k++) {
        sentinels[k].next = &sentinels[k];
        sentinels[k].prev = &sentinels[k];
    }
}

/*
 * List sentinels per kind for an area of at most `room` bytes: enough for its
 * highest order. They are sized before the atom count is known, from this
 * bound, so at most one order more than the heap uses.
 */
static unsigned orders_for_room(size_t room, unsigned shift)
{
    size_t most_atoms = room >> shift;
    unsigned top = most_atoms == 0 ? 0u : hk_log2_floor(most_atoms);
    return (top > HK_BUDDY_ORDERS - 1u ? HK_BUDDY_ORDERS - 1u : top) + 1u;
}

/* Bytes of control data before the control bytes: the struct, the sentinels and (lazy) the slack. */
static size_t control_bytes(unsigned orders, int lazy)
{
    size_t per_order = sizeof(buddy_link_t) + (lazy ? sizeof(buddy_link_t) + sizeof(size_t) : 0u);
    return sizeof(hk_buddy_t) + orders * per_order;
}

hk_buddy_t *hk_buddy_init(void *arena, size_t size, const hk_buddy_config_t *cfg, hk_status_t *status)
{
    size_t min_block = (cfg != NULL && cfg->min_block != 0) ? cfg->min_block : (size_t)HK_BUDDY_MIN_BLOCK;
    int lazy = cfg != NULL && cfg->lazy;
    uintptr_t lo = (uintptr_t)arena;
    uintptr_t start;
    uintptr_t hi;
    uintptr_t base = 0;
    unsigned shift;
    unsigned orders = 0;
    size_t atoms;
    size_t idx;
    hk_buddy_t *h;
    buddy_link_t *sentinels;

    if (arena == NULL || !hk_is_pow2(min_block) || min_block < sizeof(buddy_link_t) || min_block < HK_ALIGN) {
        return hk_init_status(status, HK_EINVAL);
    }
    size = hk_arena_room(lo, size);
    hi = lo + size;
    shift = hk_log2_floor(min_block);
    start = hk_align_up_uptr(lo, HK_ALIGN);
    atoms = 0;
    if (start >= lo && start <= hi) {
        orders = orders_for_room((size_t)(hi - start), shift);
        if (hi - start > control_bytes(orders, lazy)) {
            uintptr_t base_align = min_block > HK_BUDDY_BASE_ALIGN ? min_block : HK_BUDDY_BASE_ALIGN;
            atoms = fit_atoms(start + control_bytes(orders, lazy), hi, shift, base_align, &base);
        }
    }
    if (atoms == 0) {
        return hk_init_status(status, HK_ETOOSMALL);
    }

    h = (hk_buddy_t *)start;
    sentinels = (buddy_link_t *)(h + 1);
    hk_heap_setup(&h->heap, atoms << shift);
    h->base = (unsigned char *)base;
    h->cb = h->base - atoms;
    h->atoms = atoms;
    h->area = atoms << shift;
    h->shift = shift;
    h->top = hk_log2_floor(atoms);
    if (h->top > HK_BUDDY_ORDERS - 1u) {
        h->top = HK_BUDDY_ORDERS - 1u;
    }
    HK_ASSERT(h->top < orders);
    h->orders = orders;
    h->lazy = lazy;
    h->links_lo = (uintptr_t)sentinels;
    h->links_words = (size_t)(base + h->area - h->links_lo) >> BUDDY_LOG2_PTR;
    h->top_blocks = 0;
    h->lost_blocks = 0;
    h->lost_bytes = 0;
    lists_init(&h->global, sentinels, orders);
    if (lazy) {
        lists_init(&h->local, sentinels + orders, orders);
        h->slack = (size_t *)(void *)(sentinels + 2u * orders);
        hk_memset(h->slack, 0, orders * sizeof(size_t));
    } else {
        h->local.map = 0;
        h->local.head = NULL;
        h->slack = NULL;
    }
    hk_memset(h->cb, 0, atoms);
    poison_block(h->base, h->area);
    for (idx = 0; idx < atoms;) {
        unsigned k = hk_log2_floor(atoms - idx);
        if (k > h->top) {
            k = h->top;
        }
        h->cb[idx] = head(CTRL_FREE, k);
        push_cold(h, &h->global, k, block_at(h, idx));
        h->top_blocks++;
        idx += span(k);
    }
    hk_init_status(status, HK_OK);
    return h;
}

hk_heap_t *hk_buddy_heap(hk_buddy_t *heap) { return hk_bind(&heap->heap, &hk_buddy_ops); }

/*
 * The size a request is served as. Level 2's usable_size is the requested
 * size, and callers take usable_size 0 for "no live block": malloc(0) gets
 * one usable byte there.
 */
HK_HOT size_t served(size_t size) { return (HK_CANARIES && size == 0) ? 1u : size; }

void *hk_buddy_malloc(hk_buddy_t *heap, size_t size)
{
    return alloc(heap, served(size), order_for(heap, served(size)));
}

void *hk_buddy_aligned_alloc(hk_buddy_t *heap, size_t alignment, size_t size)
{
    unsigned k;
    unsigned k_align;
    /* A block at least as large as the alignment sits at a multiple of its size from base. */
    if (!hk_is_pow2(alignment) || ((uintptr_t)heap->base & (alignment - 1u)) != 0) {
        return NULL;
    }
    k = order_for(heap, served(size));
    k_align = alignment > block_bytes(heap, 0) ? hk_log2_floor(alignment) - heap->shift : 0u;
    k = k > k_align ? k : k_align;
    /* Rare enough to take the general path rather than a second copy of malloc's. */
    return k <= heap->top ? alloc_slow(heap, served(size), k) : NULL;
}

/* ---- pointers handed in ---- */

#if HK_CHECKS
/*
 * Does the head at idx have order k for certain? The atom halfway through the
 * block must not start a block and the atom after it must (or be the end),
 * which pins the order exactly.
 */
HK_HOT int order_pinned(const hk_buddy_t *h, size_t idx, unsigned k)
{
    const unsigned char *c = h->cb;
    size_t end = idx + span(k);
    return end <= h->atoms && (k == 0 || c[idx + span(k - 1u)] == 0) && (end == h->atoms || c[end] != 0);
}

/* A head byte that check() and the misuse reports accept: a known kind, an order that fits its place. */
static int head_sane(const hk_buddy_t *h, size_t idx, unsigned b)
{
    unsigned kind = b & CTRL_KIND;
    unsigned k = b & CTRL_ORDER;
    if ((kind != CTRL_FREE && kind != CTRL_USED && kind != CTRL_LOCAL && kind != CTRL_LOST) || k > h->top ||
        (idx & (span(k) - 1u)) != 0) {
        return 0;
    }
    return order_pinned(h, idx, k);
}

/* Error path: report why ptr (offset off into the heap) names no used block. */
HK_COLD void report_bad_pointer(hk_buddy_t *h, const void *ptr, uintptr_t off)
{
    hk_error_t error = HK_ERR_CORRUPT;
    if (off >= h->area) {
        error = HK_ERR_FOREIGN_PTR;
    } else {
        size_t idx = (size_t)(off >> h->shift);
        unsigned b = h->cb[idx];
        if ((off & (block_bytes(h, 0) - 1u)) != 0 || b == 0) {
            error = HK_ERR_INTERIOR_PTR;
        } else if (head_sane(h, idx, b) && ((b & CTRL_KIND) == CTRL_FREE || (b & CTRL_KIND) == CTRL_LOCAL)) {
            error = HK_ERR_DOUBLE_FREE;
        }
    }
    hk_report(&h->heap, error, ptr);
}
#endif

/*
 * Resolve a pointer given back by the caller to its used block (index,
 * order), or report why it names none. Level 1: in the area, a used head
 * byte whose order fits the offset and is pinned by its neighbours.
 */
HK_HOT int find_used(hk_buddy_t *h, const void *ptr, size_t *idx, unsigned *k)
{
#if HK_CHECKS
    unsigned b;
    *idx = atom_of(h, ptr);
    if (*idx < h->atoms) {
        b = h->cb[*idx];
        *k = b & CTRL_ORDER;
        /* An order above top cannot be pinned: its halfway atom starts another block. */
        if ((b & CTRL_KIND) == CTRL_USED && (*idx & (span(*k) - 1u)) == 0 && order_pinned(h, *idx, *k)) {
            return 1;
        }
    }
    report_bad_pointer(h, ptr, (uintptr_t)ptr - (uintptr_t)h->base);
    return 0;
#else
    *idx = (size_t)((uintptr_t)ptr - (uintptr_t)h->base) >> h->shift;
    *k = h->cb[*idx] & CTRL_ORDER;
    return 1;
#endif
}

/* The block's usable size; level 2: its requested size, after checking its canary (reported, not fatal). */
HK_HOT size_t checked_usable(hk_buddy_t *h, void *ptr, unsigned k)
{
#if HK_CANARIES
    size_t bytes = block_bytes(h, k);
    if (!hk_tail_intact((unsigned char *)ptr, bytes)) {
        hk_report(&h->heap, HK_ERR_CORRUPT, ptr);
    }
    return hk_tail_request((unsigned char *)ptr, bytes);
#else
    (void)ptr;
    return block_bytes(h, k);
#endif
}

/*
 * Used block idx of order k (usable bytes granted) becomes free. Lazy mode
 * follows DELAY-2's rule on D for the order: park the block (D -= 2) while
 * D >= 2, else free it globally as the plain buddy does, with the same
 * merge code, and settle D.
 */
HK_HOT void release(hk_buddy_t *h, size_t idx, unsigned k, size_t usable)
{
    hk_stats_t *s = &h->heap.stats;
    size_t bytes = block_bytes(h, k);
    s->free_count++;
    s->free_bytes += bytes;
    s->used_granted -= usable;
    poison_block(block_at(h, idx), bytes);
    if (h->lazy && h->slack[k] >= 2) {
        h->slack[k] -= 2;
        h->cb[idx] = head(CTRL_LOCAL, k);
        push(h, &h->local, k, block_at(h, idx));
        return;
    }
    merge_up(h, idx, k);
    if (h->lazy) {
        leave_order(h, k);
    }
}

void hk_buddy_free(hk_buddy_t *heap, void *ptr)
{
    size_t idx;
    unsigned k;
    if (ptr != NULL && find_used(heap, ptr, &idx, &k)) {
        release(heap, idx, k, checked_usable(heap, ptr, k));
    }
}

/* ---- resize ---- */

/* Shrink used block idx from order k to want in place. */
static void shrink(hk_buddy_t *h, size_t idx, unsigned k, unsigned want)
{
    split_used(h, idx, k, want);
    h->cb[idx] = head(CTRL_USED, want);
    if (h->lazy) {
        leave_order(h, k);
        h->slack[want]++;
    }
}

/* Is the free buddy at index b (order j) one resize may absorb? Lazy mode takes parked ones too. */
static unsigned absorbable(const hk_buddy_t *h, size_t b, unsigned j)
{
    unsigned c = h->cb[b];
    if (c == head(CTRL_FREE, j)) {
        return CTRL_FREE;
    }
    return (h->lazy && c == head(CTRL_LOCAL, j)) ? CTRL_LOCAL : 0u;
}

static buddy_lists_t *lists_of(hk_buddy_t *h, unsigned kind) { return kind == CTRL_LOCAL ? &h->local : &h->global; }

/*
 * Grow used block idx from order k to want in place if it is the lower buddy
 * of free blocks of orders k..want-1 (a parked buddy in lazy mode is taken
 * off its local list: L drops). A list that fails its checks is repaired and
 * the block left as it was.
 */
static int grow(hk_buddy_t *h, size_t idx, unsigned k, unsigned want)
{
    unsigned j;
    if ((idx & (span(want) - 1u)) != 0 || idx + span(want) > h->atoms) {
        return 0;
    }
    for (j = k; j < want; j++) {
        size_t b = idx + span(j);
        if (absorbable(h, b, j) == 0) {
            return 0;
        }
#if HK_CANARIES
        if (!poison_intact(block_at(h, b), block_bytes(h, j))) {
            unsigned kind = absorbable(h, b, j);
            hk_report(&h->heap, HK_ERR_CORRUPT, block_at(h, b));
            lose(h, block_at(h, b), j, kind);
            rebuild_list(h, lists_of(h, kind), j, kind);
            return 0;
        }
#endif
    }
    for (j = k; j < want; j++) {
        size_t b = idx + span(j);
        unsigned kind = absorbable(h, b, j);
        if (!unlink_checked(h, lists_of(h, kind), j, (buddy_link_t *)block_at(h, b))) {
            unsigned i;
            for (i = k; i < j; i++) { /* put back the buddies already taken: their head bytes still say where */
                push_cold(h, lists_of(h, absorbable(h, idx + span(i), i)), i, block_at(h, idx + span(i)));
            }
            list_damaged(h, lists_of(h, kind), j, kind, block_at(h, b));
            return 0;
        }
    }
    for (j = k; j < want; j++) {
        if (absorbable(h, idx + span(j), j) == CTRL_LOCAL) {
            h->slack[j]++; /* L drops */
        }
        h->cb[idx + span(j)] = 0;
    }
    h->heap.stats.coalesce_count += want - k;
    h->cb[idx] = head(CTRL_USED, want);
    if (h->lazy) {
        leave_order(h, k);
        h->slack[want]++;
    }
    return 1;
}

void *hk_buddy_resize(hk_buddy_t *heap, void *ptr, size_t size)
{
    size_t idx;
    unsigned k;
    unsigned want;
    size_t old_usable;
    size_t old_bytes;
    size_t new_bytes;

    if (!find_used(heap, ptr, &idx, &k)) {
        return NULL;
    }
    old_usable = checked_usable(heap, ptr, k);
    want = order_for(heap, size);
    if (want > heap->top) {
        return NULL; /* no block is that large: hk_realloc's malloc fails too */
    }
    old_bytes = block_bytes(heap, k);
    if (want < k) {
        shrink(heap, idx, k, want);
    } else if (want > k && !grow(heap, idx, k, want)) {
        return NULL; /* cannot stay put: hk_realloc moves it */
    }
    new_bytes = block_bytes(heap, want);
    if (new_bytes > old_bytes) {
        take_free_bytes(heap, new_bytes - old_bytes);
    } else {
        heap->heap.stats.free_bytes += old_bytes - new_bytes;
    }
    heap->heap.stats.used_granted -= old_usable;
#if HK_CANARIES
    hk_tail_set((unsigned char *)ptr, new_bytes, size);
    grant(heap, size);
#else
    grant(heap, new_bytes);
#endif
    return ptr;
}

size_t hk_buddy_usable_size(hk_buddy_t *heap, const void *ptr)
{
    size_t idx;
    unsigned k;
    if (ptr == NULL || !find_used(heap, ptr, &idx, &k)) {
        return 0;
    }
#if HK_CANARIES
    return hk_tail_request((const unsigned char *)ptr, block_bytes(heap, k));
#else
    return block_bytes(heap, k);
#endif
}

/* ---- statistics, walk, check ---- */

void hk_buddy_get_stats(hk_buddy_t *heap, hk_stats_t *out)
{
    uint32_t any = heap->global.map | heap->local.map;
    hk_stats_read(&heap->heap, out);
    out->used_requested = out->used_granted;
    out->used_blocks = out->alloc_count - out->free_count;
    out->free_blocks =
        heap->top_blocks + out->split_count - out->coalesce_count - out->used_blocks - heap->lost_blocks;
    out->largest_free = any != 0 ? block_bytes(heap, hk_fls32(any)) : 0;
    out->smallest_free = any != 0 ? block_bytes(heap, hk_ffs32(any)) : 0;
}

void hk_buddy_walk(hk_buddy_t *heap, hk_walk_fn visit, void *ctx)
{
    const unsigned char *c = heap->cb;
    size_t idx = 0;
    while (idx < heap->atoms) {
        hk_block_info_t info;
        unsigned kind = c[idx] & CTRL_KIND;
        unsigned k = c[idx] & CTRL_ORDER;
        info.start = block_at(heap, idx);
        info.size = block_bytes(heap, k);
        info.used = kind == CTRL_USED || kind == CTRL_LOST;
        info.payload = kind == CTRL_LOST ? NULL : info.start;
        info.usable = kind == CTRL_LOST ? 0 : info.size;
#if HK_CANARIES
        if (kind == CTRL_USED) {
            info.usable = hk_tail_request((const unsigned char *)info.start, info.size);
        }
#endif
        visit(ctx, &info);
        idx += span(k);
    }
}

/* What check() counts while it walks the control bytes. */
typedef struct buddy_census {
    size_t used[HK_BUDDY_ORDERS];
    size_t local[HK_BUDDY_ORDERS];
    size_t global_heads;
    size_t local_heads;
    size_t used_blocks;
    size_t usable;
    size_t free_bytes;
    size_t lost_blocks;
    size_t lost_bytes;
} buddy_census_t;

/* The control structure's own fields agree with each other. */
static hk_check_t check_control(const hk_buddy_t *h)
{
    unsigned top = h->atoms == 0 ? 0u : hk_log2_floor(h->atoms);
    if (top > HK_BUDDY_ORDERS - 1u) {
        top = HK_BUDDY_ORDERS - 1u;
    }
    if (h->atoms == 0 || h->area != h->atoms << h->shift || h->top != top || h->cb != h->base - h->atoms ||
        h->top >= h->orders || h->links_lo != (uintptr_t)(h + 1) || h->global.head != (buddy_link_t *)(h + 1) ||
        (h->lazy ? h->local.head != h->global.head + h->orders ||
                       h->slack != (size_t *)(void *)(h->global.head + 2u * h->orders)
                 : h->local.head != NULL || h->slack != NULL || h->local.map != 0) ||
        h->links_words != (size_t)((uintptr_t)h->base + h->area - h->links_lo) >> BUDDY_LOG2_PTR ||
        (uintptr_t)h->base % block_bytes(h, 0) != 0 || h->heap.stats.capacity != h->area) {
        return HK_CHECK_CONTROL;
    }
    return HK_CHECK_OK;
}

/* One head byte and its block: sane, interior atoms clear, counted; level 2: its pattern intact. */
static hk_check_t check_block(const hk_buddy_t *h, size_t idx, buddy_census_t *n)
{
    const unsigned char *c = h->cb;
    unsigned b = c[idx];
    unsigned kind = b & CTRL_KIND;
    unsigned k = b & CTRL_ORDER;
    size_t bytes;
    size_t i;
    if (b == 0 || (kind != CTRL_FREE && kind != CTRL_USED && kind != CTRL_LOCAL && kind != CTRL_LOST)) {
        return HK_CHECK_STATE;
    }
    if (k > h->top || (idx & (span(k) - 1u)) != 0) {
        return HK_CHECK_ALIGN;
    }
    if (idx + span(k) > h->atoms) {
        return HK_CHECK_RANGE;
    }
    for (i = 1; i < span(k); i++) {
        if (c[idx + i] != 0) {
            return HK_CHECK_NEIGHBOUR;
        }
    }
    bytes = block_bytes(h, k);
    if (kind == CTRL_USED) {
#if HK_CANARIES
        if (!hk_tail_intact(block_at(h, idx), bytes)) {
            return HK_CHECK_CANARY;
        }
        n->usable += hk_tail_request(block_at(h, idx), bytes);
#else
        n->usable += bytes;
#endif
        n->used[k]++;
        n->used_blocks++;
        return HK_CHECK_OK;
    }
    if (kind == CTRL_LOST) {
        n->lost_blocks++;
        n->lost_bytes += bytes;
        return HK_CHECK_OK;
    }
    if (kind == CTRL_LOCAL) {
        if (!h->lazy) {
            return HK_CHECK_STATE;
        }
        n->local[k]++;
        n->local_heads++;
    } else {
        size_t buddy = idx ^ span(k);
        if (k < h->top && buddy < h->atoms && c[buddy] == head(CTRL_FREE, k)) {
            return HK_CHECK_UNMERGED;
        }
        n->global_heads++;
    }
#if HK_CANARIES
    if (!poison_intact(block_at(h, idx), bytes)) {
        return HK_CHECK_POISON;
    }
#endif
    n->free_bytes += bytes;
    return HK_CHECK_OK;
}

/*
 * Walk one kind of free list against the control bytes: every node lies in
 * the area at a multiple of its size (RANGE, ALIGN), is a head of that kind
 * and order (LIST), links back (LINK), the list is no longer than the number
 * of such heads (so a cycle cannot loop) and ends at its sentinel, whose
 * back link is the last node; the map bits match the lists (LIST) and the
 * lists together hold every head of that kind (COUNT). per_order (may be
 * NULL) receives the lengths.
 */
static hk_check_t check_lists(const hk_buddy_t *h, const buddy_lists_t *l, unsigned kind, size_t heads,
                              size_t *per_order)
{
    size_t count = 0;
    unsigned k;
    if (l->head == NULL || (h->orders < 32u && (l->map >> h->orders) != 0)) {
        return (l->head == NULL && l->map == 0 && heads == 0) ? HK_CHECK_OK : HK_CHECK_LIST;
    }
    for (k = 0; k < h->orders; k++) {
        const buddy_link_t *s = &l->head[k];
        const buddy_link_t *prev = s;
        const buddy_link_t *b;
        size_t n = 0;
        if (((l->map & order_bit(k)) != 0) != (s->next != s)) {
            return HK_CHECK_LIST;
        }
        for (b = s->next; b != s; b = b->next) {
            uintptr_t off = (uintptr_t)b - (uintptr_t)h->base;
            if (off >= h->area) {
                return HK_CHECK_RANGE;
            }
            if (k > h->top || (off & (block_bytes(h, k) - 1u)) != 0) {
                return HK_CHECK_ALIGN;
            }
            if (h->cb[off >> h->shift] != head(kind, k)) {
                return HK_CHECK_LIST;
            }
            if (b->prev != prev || ++n > heads) {
                return HK_CHECK_LINK;
            }
            prev = b;
        }
        if (s->prev != prev) {
            return HK_CHECK_LINK;
        }
        if (per_order != NULL) {
            per_order[k] = n;
        }
        count += n;
    }
    return count == heads ? HK_CHECK_OK : HK_CHECK_COUNT;
}

hk_check_t hk_buddy_check(hk_buddy_t *heap)
{
    const hk_stats_t *s = &heap->heap.stats;
    buddy_census_t n;
    size_t local_per_order[HK_BUDDY_ORDERS];
    size_t idx = 0;
    unsigned k;
    hk_check_t rc = check_control(heap);

    if (rc != HK_CHECK_OK) {
        return rc;
    }
    hk_memset(&n, 0, sizeof(n));
    hk_memset(local_per_order, 0, sizeof(local_per_order));
    while (idx < heap->atoms) {
        rc = check_block(heap, idx, &n);
        if (rc != HK_CHECK_OK) {
            return rc;
        }
        idx += span(heap->cb[idx] & CTRL_ORDER);
    }
    rc = check_lists(heap, &heap->global, CTRL_FREE, n.global_heads, NULL);
    if (rc == HK_CHECK_OK) {
        rc = check_lists(heap, &heap->local, CTRL_LOCAL, n.local_heads, local_per_order);
    }
    if (rc != HK_CHECK_OK) {
        return rc;
    }
    for (k = 0; heap->lazy && k < heap->orders; k++) {
        if (n.used[k] < local_per_order[k] || heap->slack[k] != n.used[k] - local_per_order[k]) {
            return HK_CHECK_CONTROL;
        }
    }
    if (s->free_bytes != n.free_bytes || s->used_granted != n.usable || s->alloc_count - s->free_count != n.used_blocks ||
        heap->lost_blocks != n.lost_blocks || heap->lost_bytes != n.lost_bytes ||
        heap->top_blocks + s->split_count - s->coalesce_count !=
            n.used_blocks + n.lost_blocks + n.global_heads + n.local_heads ||
        s->min_ever_free > s->free_bytes) {
        return HK_CHECK_STATS;
    }
    return HK_CHECK_OK;
}

int hk_buddy_owns(const hk_buddy_t *heap, const void *ptr)
{
    return hk_in_range(ptr, heap->base, heap->base + heap->area);
}
