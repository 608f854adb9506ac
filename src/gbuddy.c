/* SPDX-License-Identifier: MIT */
/*
 * Unequal-split buddy systems: Fibonacci (Hirschberg 1973, Knuth ex.
 * 2.5-31; Peterson & Norman, "Buddy systems", CACM 1977) and weighted (Shen
 * & Peterson, "A weighted buddy method for dynamic storage allocation", CACM
 * 1974). Sizes and splits are in heapkit/gbuddy.h.
 *
 * Layout of the arena:
 *
 *   [hk_gbuddy_t][sentinels][side: one byte per atom][head: one byte per atom][block area ...]
 *                                                                             ^ base, aligned
 *                                                                               to min_block
 *
 * The head bytes end exactly at base, as the binary buddy's control bytes
 * do: head[i] = base[i - atoms]. Head byte of atom i: 0 if no block starts
 * there, otherwise state | size index, state 0x20 free, 0x40 used, 0xC0
 * lost (a free block found damaged, out of service for good).
 *
 * A block's size index alone does not say where its buddy is: the block may
 * be the left or the right part of its parent, and a right part of size t
 * may come from several parent sizes (weighted: 4 = 3 + 1 and 8 = 6 + 2 both
 * have a right part of 1 or 2 atoms). The side byte says which, as a code:
 * ROOT (a top-level block, never merged), LEFT (parent t + 1: in both
 * systems the left part is the next smaller size) or RIGHT + d (parent
 * t + d). Its low nibble is the block's own code, its high nibble a code it
 * keeps for its parent, as Hinds' memory bit (CACM 18(4), 1975): a split
 * gives the left part the parent's own code and the right part the parent's
 * kept code, and a merge takes them back, so no ancestor's code is lost
 * however deep the splits go.
 *
 * The buddy of a LEFT block of size t starts at its end and has size
 * right(t + 1); that of a RIGHT + d block ends at its start and has size
 * t + d - 1. A head of that size there, free and of the opposite side, is
 * the buddy whole (any smaller block starting there is part of it, and a
 * part starting at the buddy's start is a left part, ending at its end a
 * right part), so merging needs no search.
 *
 * Free blocks hold their list links in their first two words; one circular
 * list per size through its sentinel, and a 32-bit map of the non-empty
 * lists. Every list node a call touches is checked against the head bytes
 * and its back links at HK_HARDENING >= 1, as in src/buddy.c; a failure is
 * reported (HK_ERR_CORRUPT), the block whose links led astray is taken out
 * of service and the list rebuilt from the head bytes.
 *
 * Time bounds (s = sizes the arena uses, at most HK_GBUDDY_SIZES):
 *   malloc: a binary search for the size, one bit scan, a checked pop, at
 *     most s splits (the part that fits best is kept, the other pushed).
 *   free: at most s merges, each a checked unlink.
 *   resize: in place when it shrinks (at most s splits, each a checked
 *     push); growing is hk_realloc's move.
 *   Damage repair (error path only): one pass over the head bytes, O(atoms).
 *   init, walk and check: O(atoms) (level 2: O(area) for the patterns).
 *
 * Overhead: no per-block header, two bytes per atom (2/min_block of the
 * area), hk_gbuddy_t and two words per size. Internal fragmentation: a
 * request is rounded up to the next size of the sequence, at level 2 after
 * adding HK_CANARY_ROOM and one size_t (the requested size in the block's
 * last word).
 */
#include "heapkit/gbuddy.h"
#include "hk_tail.h"

#define HEAD_SIZE 0x1Fu
#define HEAD_FREE 0x20u
#define HEAD_USED 0x40u
#define HEAD_KIND 0xE0u
#define HEAD_LOST (0x80u | HEAD_USED)

#define SIDE_ROOT 0u
#define SIDE_LEFT 1u
#define SIDE_RIGHT 1u /* RIGHT + d, d >= 1: the parent is d sizes up */
#define SIDE_MAX_D 4u /* weighted: 1 is the right part of 2, 3 and 4 (d = 1..3); 2^k that of 3*2^k and 2^(k+2) (3, 4) */
#define SIDE_OWN(b) ((unsigned)(b) & 0x0Fu)
#define SIDE_KEPT(b) ((unsigned)(b) >> 4)
#define SIDE_BYTE(own, kept) ((unsigned char)((own) | ((kept) << 4)))

#define GB_ATTEMPTS 4

typedef struct gb_link {
    struct gb_link *next;
    struct gb_link *prev;
} gb_link_t;

#define GB_LINKS ((size_t)sizeof(gb_link_t))

struct hk_gbuddy {
    hk_heap_t heap;
    unsigned char *base; /* block area */
    unsigned char *hb;   /* head bytes: base - atoms */
    unsigned char *sb;   /* side bytes: hb - atoms */
    size_t area;
    size_t atoms;
    unsigned shift;
    unsigned top;        /* largest size index any block has */
    hk_gbuddy_kind_t kind;
    uint32_t map;
    gb_link_t *head;     /* top + 1 sentinels */
    uintptr_t links_lo;
    size_t links_words;
    size_t top_blocks;
    size_t lost_blocks;
    size_t lost_bytes;
    size_t size[HK_GBUDDY_SIZES];        /* atoms of each size index */
    unsigned char right[HK_GBUDDY_SIZES]; /* size index of each size's right part (0 for size 0: never split) */
};

HK_STATIC_ASSERT(HK_GBUDDY_SIZES >= 4 && HK_GBUDDY_SIZES <= 32, sizes_fit_map_and_head_byte);
HK_STATIC_ASSERT((HK_GBUDDY_MIN_BLOCK & (HK_GBUDDY_MIN_BLOCK - 1)) == 0, gb_min_block_is_power_of_two);
HK_STATIC_ASSERT(HK_GBUDDY_MIN_BLOCK >= sizeof(gb_link_t) && HK_GBUDDY_MIN_BLOCK >= HK_ALIGN, gb_min_block_holds_links);
HK_STATIC_ASSERT(sizeof(gb_link_t) == 2 * sizeof(void *), gb_links_are_two_words);
HK_STATIC_ASSERT(sizeof(hk_gbuddy_t) % sizeof(void *) == 0, gb_sentinels_stay_aligned);

HK_DEFINE_OPS(hk_gbuddy, hk_gbuddy_t, "gbuddy", NULL);

#define GB_LOG2_PTR (sizeof(void *) == 8 ? 3u : sizeof(void *) == 4 ? 2u : 1u)

/* ---- geometry ---- */

HK_HOT uint32_t size_bit(unsigned t) { return (uint32_t)1u << t; }

HK_HOT size_t bytes_of(const hk_gbuddy_t *h, unsigned t) { return h->size[t] << h->shift; }

HK_HOT unsigned char *block_at(const hk_gbuddy_t *h, size_t idx) { return h->base + (idx << h->shift); }

/* Atom index of x, or a number >= atoms when x is no atom start in the area (see src/buddy.c). */
HK_HOT size_t atom_of(const hk_gbuddy_t *h, const void *x)
{
    return hk_rotr((size_t)((uintptr_t)x - (uintptr_t)h->base), h->shift);
}

/* Smallest size index whose block holds size bytes (plus the level-2 extras), or top + 1 when none does. */
HK_HOT unsigned size_for(const hk_gbuddy_t *h, size_t size)
{
    size_t atoms;
    unsigned lo = 0;
    unsigned hi = h->top + 1u;
#if HK_CANARIES
    if (size > SIZE_MAX - HK_TAIL_EXTRA) {
        return hi;
    }
    size += HK_TAIL_EXTRA;
#endif
    atoms = size == 0 ? 1u : ((size - 1u) >> h->shift) + 1u;
    while (lo < hi) {
        unsigned mid = (lo + hi) / 2u;
        if (h->size[mid] >= atoms) {
            hi = mid;
        } else {
            lo = mid + 1u;
        }
    }
    return lo;
}

/* Is own a side code a block of size t can have? (Its parent exists and has t for that part.) */
static int side_sane(const hk_gbuddy_t *h, unsigned t, unsigned own)
{
    if (own == SIDE_ROOT) {
        return 1;
    }
    if (own == SIDE_LEFT) {
        return t + 1u <= h->top;
    }
    own -= SIDE_RIGHT;
    return own <= SIDE_MAX_D && t + own <= h->top && h->right[t + own] == t;
}

/* ---- statistics ---- */

HK_HOT void take_free_bytes(hk_gbuddy_t *h, size_t bytes)
{
    h->heap.stats.free_bytes -= bytes;
    hk_note_low(&h->heap.stats);
}

/* ---- level-2 patterns ---- */

#if HK_CANARIES
static int poison_intact(const unsigned char *b, size_t bytes)
{
    return hk_filled(b + GB_LINKS, b + bytes, HK_POISON_BYTE);
}
#endif

HK_HOT void poison_block(unsigned char *b, size_t bytes)
{
#if HK_CANARIES
    hk_fill(b, b + bytes, HK_POISON_BYTE);
#else
    (void)b;
    (void)bytes;
#endif
}

/* A merged or split block's links become payload or poisoned space of another block (level 2). */
HK_HOT void poison_links(void *b)
{
#if HK_CANARIES
    hk_fill(b, (unsigned char *)b + GB_LINKS, HK_POISON_BYTE);
#else
    (void)b;
#endif
}

/* ---- checked list operations (as in src/buddy.c) ---- */

HK_HOT int is_free_head(const hk_gbuddy_t *h, const void *x, unsigned t)
{
    size_t i = atom_of(h, x);
    return i < h->atoms && h->hb[i] == (HEAD_FREE | t);
}

/* Both nodes lie in the allocator's own memory and are pointer-aligned: reading them is harmless. */
HK_HOT int links_readable(const hk_gbuddy_t *h, const gb_link_t *n, const gb_link_t *p)
{
#if HK_CHECKS
    return hk_rotr((size_t)((uintptr_t)n - h->links_lo), GB_LOG2_PTR) < h->links_words &&
           hk_rotr((size_t)((uintptr_t)p - h->links_lo), GB_LOG2_PTR) < h->links_words;
#else
    (void)h;
    (void)n;
    (void)p;
    return 1;
#endif
}

static void rebuild_list(hk_gbuddy_t *h, unsigned t);

static void lose(hk_gbuddy_t *h, void *b, unsigned t)
{
    size_t bytes = bytes_of(h, t);
    h->hb[atom_of(h, b)] = (unsigned char)(HEAD_LOST | t);
    take_free_bytes(h, bytes);
    h->lost_blocks++;
    h->lost_bytes += bytes;
}

/* List t failed a check at block bad: report, take bad out of service if it is a free block of size t, rebuild. */
HK_COLD void list_damaged(hk_gbuddy_t *h, unsigned t, void *bad)
{
    hk_report(&h->heap, HK_ERR_CORRUPT, bad);
    if (is_free_head(h, bad, t)) {
        lose(h, bad, t);
    }
    rebuild_list(h, t);
}

/* Put free block mem (head byte set) first on list t, through a checked first node. */
static void push(hk_gbuddy_t *h, unsigned t, void *mem)
{
    gb_link_t *s = &h->head[t];
    gb_link_t *b = (gb_link_t *)mem;
    gb_link_t *n = s->next;
    if (!links_readable(h, n, n) || (HK_CHECKS && n->prev != s)) {
        list_damaged(h, t, n);
        return;
    }
    b->next = n;
    b->prev = s;
    n->prev = b;
    s->next = b;
    h->map |= size_bit(t);
}

static int unlink_checked(hk_gbuddy_t *h, unsigned t, gb_link_t *b)
{
    gb_link_t *n = b->next;
    gb_link_t *p = b->prev;
    if (!links_readable(h, n, p) || (HK_CHECKS && (n->prev != b || p->next != b))) {
        return 0;
    }
    n->prev = p;
    p->next = n;
    if (n == p) {
        h->map &= ~size_bit(t);
    }
    return 1;
}

/* The first block of list t, taken off it; NULL after a repair (the caller looks again). */
static gb_link_t *pop(hk_gbuddy_t *h, unsigned t, size_t *idx)
{
    gb_link_t *s = &h->head[t];
    gb_link_t *b = s->next;
    gb_link_t *n;
#if HK_CHECKS
    *idx = atom_of(h, b);
    if (*idx >= h->atoms || h->hb[*idx] != (HEAD_FREE | t) || b->prev != s) {
        list_damaged(h, t, b);
        return NULL;
    }
    n = b->next;
    if (n != s && (!is_free_head(h, n, t) || n->prev != b)) {
        list_damaged(h, t, b);
        return NULL;
    }
#else
    *idx = (size_t)((uintptr_t)b - (uintptr_t)h->base) >> h->shift;
    n = b->next;
#endif
    s->next = n;
    n->prev = s;
    if (n == s) {
        h->map &= ~size_bit(t);
    }
    return b;
}

/* Error path: list t holds exactly the free heads of size t again. O(atoms). */
static void rebuild_list(hk_gbuddy_t *h, unsigned t)
{
    gb_link_t *s = &h->head[t];
    size_t idx;
    s->next = s;
    s->prev = s;
    h->map &= ~size_bit(t);
    for (idx = 0; idx < h->atoms;) {
        unsigned b = h->hb[idx];
        if (b == (HEAD_FREE | t)) {
            push(h, t, block_at(h, idx));
        }
        /* A damaged byte's size may be out of range: step one atom over it. */
        idx += (b & HEAD_SIZE) <= h->top ? h->size[b & HEAD_SIZE] : 1u;
    }
}

/* ---- the core moves ---- */

/*
 * Free block idx of size t (its bytes counted free, its side byte set) goes
 * on its list after merging with free buddies as far as they go.
 */
static void merge_up(hk_gbuddy_t *h, size_t idx, unsigned t)
{
    unsigned char *hb = h->hb;
    unsigned char *sb = h->sb;
    hb[idx] = 0;
    for (;;) {
        unsigned own = SIDE_OWN(sb[idx]);
        unsigned p;
        unsigned bt;
        size_t b;
        if (own == SIDE_ROOT) {
            break;
        }
        if (own == SIDE_LEFT) {
            p = t + 1u;
            bt = h->right[p];
            b = idx + h->size[t];
            if (b >= h->atoms || hb[b] != (HEAD_FREE | bt) || SIDE_OWN(sb[b]) != SIDE_RIGHT + (p - bt)) {
                break;
            }
        } else {
            p = t + (own - SIDE_RIGHT);
            bt = p - 1u;
            if (idx < h->size[bt]) {
                break;
            }
            b = idx - h->size[bt];
            if (hb[b] != (HEAD_FREE | bt) || SIDE_OWN(sb[b]) != SIDE_LEFT) {
                break;
            }
        }
        if (!unlink_checked(h, bt, (gb_link_t *)block_at(h, b))) {
            list_damaged(h, bt, block_at(h, b));
            break;
        }
        poison_links(block_at(h, b));
        hb[b] = 0;
        /* The parent takes the left part's kept code as its own, the right part's as its kept one. */
        if (own == SIDE_LEFT) {
            sb[idx] = SIDE_BYTE(SIDE_KEPT(sb[idx]), SIDE_KEPT(sb[b]));
        } else {
            sb[b] = SIDE_BYTE(SIDE_KEPT(sb[b]), SIDE_KEPT(sb[idx]));
            poison_links(block_at(h, idx));
            idx = b;
        }
        h->heap.stats.coalesce_count++;
        t = p;
    }
    hb[idx] = (unsigned char)(HEAD_FREE | t);
    push(h, t, block_at(h, idx));
}

/*
 * Split free block idx of size j (off every list) down to size t: at each
 * step the part that holds t with the least room to spare is kept, the other
 * goes on its list. Returns the kept block's index.
 */
static size_t split_down(hk_gbuddy_t *h, size_t idx, unsigned j, unsigned t)
{
    unsigned char *sb = h->sb;
    while (j > t) {
        unsigned l = j - 1u;
        unsigned r = h->right[j];
        size_t ridx = idx + h->size[l];
        unsigned char parent = sb[idx];
        sb[idx] = SIDE_BYTE(SIDE_LEFT, SIDE_OWN(parent));
        sb[ridx] = SIDE_BYTE(SIDE_RIGHT + (j - r), SIDE_KEPT(parent));
        h->heap.stats.split_count++;
        if (r >= t) {
            h->hb[idx] = (unsigned char)(HEAD_FREE | l);
            push(h, l, block_at(h, idx));
            idx = ridx;
            j = r;
        } else {
            h->hb[ridx] = (unsigned char)(HEAD_FREE | r);
            push(h, r, block_at(h, ridx));
            j = l;
        }
    }
    return idx;
}

/* A block of size t >= what the request needs, its head set used and counted. */
static void *alloc(hk_gbuddy_t *h, size_t requested, unsigned t)
{
    int attempt;
    if (t > h->top) {
        return NULL;
    }
    for (attempt = 0; attempt < GB_ATTEMPTS; attempt++) {
        uint32_t fit = h->map & ~(size_bit(t) - 1u);
        unsigned j;
        size_t idx;
        unsigned char *b;
        if (fit == 0) {
            return NULL;
        }
        j = hk_ffs32(fit);
        if (pop(h, j, &idx) == NULL) {
            continue;
        }
        idx = split_down(h, idx, j, t);
        b = block_at(h, idx);
#if HK_CANARIES
        if (!poison_intact(b, bytes_of(h, t))) {
            /* Written after it was freed: a stale pointer may still write there. */
            hk_report(&h->heap, HK_ERR_CORRUPT, b);
            h->hb[idx] = (unsigned char)(HEAD_FREE | t);
            lose(h, b, t);
            continue;
        }
        hk_tail_set(b, bytes_of(h, t), requested);
        h->heap.stats.used_granted += requested;
#else
        (void)requested;
        h->heap.stats.used_granted += bytes_of(h, t);
#endif
        h->hb[idx] = (unsigned char)(HEAD_USED | t);
        take_free_bytes(h, bytes_of(h, t));
        h->heap.stats.alloc_count++;
        return b;
    }
    return NULL;
}

/* ---- init ---- */

/* The sizes of kind's sequence in atoms, as far as they fit in n atoms and HK_GBUDDY_SIZES; returns the top index. */
static unsigned make_sizes(hk_gbuddy_t *h, hk_gbuddy_kind_t kind, size_t n)
{
    unsigned t;
    h->size[0] = 1;
    h->right[0] = 0;
    for (t = 1; t < HK_GBUDDY_SIZES; t++) {
        size_t s;
        unsigned r;
        if (kind == HK_GBUDDY_FIBONACCI) {
            r = t >= 2u ? t - 2u : 0u;
        } else if (t <= 3u) {
            r = 0; /* 2 = 1 + 1, 3 = 2 + 1, 4 = 3 + 1 */
        } else {
            r = (t & 1u) != 0 ? t - 4u : t - 3u; /* 2^k = 3*2^(k-2) + 2^(k-2); 3*2^k = 2^(k+1) + 2^k */
        }
        s = h->size[t - 1u] + h->size[r];
        if (s > n) {
            break;
        }
        h->size[t] = s;
        h->right[t] = (unsigned char)r;
    }
    return t - 1u;
}

static size_t control_bytes(void) { return sizeof(hk_gbuddy_t) + HK_GBUDDY_SIZES * sizeof(gb_link_t); }

hk_gbuddy_t *hk_gbuddy_init(void *arena, size_t size, const hk_gbuddy_config_t *cfg, hk_status_t *status)
{
    size_t min_block = (cfg != NULL && cfg->min_block != 0) ? cfg->min_block : (size_t)HK_GBUDDY_MIN_BLOCK;
    hk_gbuddy_kind_t kind = cfg != NULL ? cfg->kind : HK_GBUDDY_FIBONACCI;
    uintptr_t lo = (uintptr_t)arena;
    uintptr_t start;
    uintptr_t hi;
    uintptr_t base;
    unsigned shift;
    unsigned t;
    size_t atoms;
    size_t idx;
    hk_gbuddy_t *h;

    if (arena == NULL || !hk_is_pow2(min_block) || min_block < sizeof(gb_link_t) || min_block < HK_ALIGN ||
        (kind != HK_GBUDDY_FIBONACCI && kind != HK_GBUDDY_WEIGHTED)) {
        return hk_init_status(status, HK_EINVAL);
    }
    size = hk_arena_room(lo, size);
    hi = lo + size;
    shift = hk_log2_floor(min_block);
    start = hk_align_up_uptr(lo, HK_ALIGN);
    if (start < lo || start > hi || hi - start <= control_bytes() + 2u * min_block) {
        return hk_init_status(status, HK_ETOOSMALL);
    }
    /* n atoms need 2n bytes of head and side bytes before base; alignment padding is below min_block. */
    atoms = (size_t)(hi - start - control_bytes()) / (min_block + 2u);
    for (; atoms > 0; atoms--) {
        base = hk_align_up_uptr(start + control_bytes() + 2u * atoms, min_block);
        if (base <= hi && ((hi - base) >> shift) >= atoms) {
            break;
        }
    }
    if (atoms == 0) {
        return hk_init_status(status, HK_ETOOSMALL);
    }
    base = hk_align_up_uptr(start + control_bytes() + 2u * atoms, min_block);

    h = (hk_gbuddy_t *)start;
    hk_heap_setup(&h->heap, atoms << shift);
    h->kind = kind;
    h->top = make_sizes(h, kind, atoms);
    h->base = (unsigned char *)base;
    h->hb = h->base - atoms;
    h->sb = h->hb - atoms;
    h->atoms = atoms;
    h->area = atoms << shift;
    h->shift = shift;
    h->head = (gb_link_t *)(h + 1);
    h->map = 0;
    h->links_lo = (uintptr_t)h->head;
    h->links_words = (size_t)(base + h->area - h->links_lo) >> GB_LOG2_PTR;
    h->top_blocks = 0;
    h->lost_blocks = 0;
    h->lost_bytes = 0;
    for (t = 0; t <= h->top; t++) {
        h->head[t].next = &h->head[t];
        h->head[t].prev = &h->head[t];
    }
    hk_memset(h->sb, 0, 2u * atoms);
    poison_block(h->base, h->area);
    /* Top-level blocks: the largest size that fits what is left, first. */
    for (idx = 0, t = h->top; idx < atoms; idx += h->size[t]) {
        while (h->size[t] > atoms - idx) {
            t--;
        }
        h->hb[idx] = (unsigned char)(HEAD_FREE | t);
        h->sb[idx] = SIDE_BYTE(SIDE_ROOT, SIDE_ROOT);
        push(h, t, block_at(h, idx));
        h->top_blocks++;
    }
    hk_init_status(status, HK_OK);
    return h;
}

hk_heap_t *hk_gbuddy_heap(hk_gbuddy_t *heap) { return hk_bind(&heap->heap, &hk_gbuddy_ops); }

/* Level 2 serves malloc(0) as malloc(1): callers read usable size 0 as "no block". */
HK_HOT size_t served(size_t size) { return (HK_CANARIES && size == 0) ? 1u : size; }

void *hk_gbuddy_malloc(hk_gbuddy_t *heap, size_t size)
{
    return alloc(heap, served(size), size_for(heap, served(size)));
}

/* ---- pointers handed in ---- */

#if HK_CHECKS
/*
 * A head byte whose size fits its place: a known state, a sane side code,
 * the block inside the area, its last atom no head and the atom after it
 * one (or the end), which pins the size against a change to the byte.
 */
static int head_sane(const hk_gbuddy_t *h, size_t idx, unsigned b)
{
    unsigned kind = b & HEAD_KIND;
    unsigned t = b & HEAD_SIZE;
    size_t end;
    if ((kind != HEAD_FREE && kind != HEAD_USED && kind != HEAD_LOST) || t > h->top ||
        !side_sane(h, t, SIDE_OWN(h->sb[idx]))) {
        return 0;
    }
    end = idx + h->size[t];
    return end <= h->atoms && (h->size[t] == 1u || h->hb[end - 1u] == 0) && (end == h->atoms || h->hb[end] != 0);
}

HK_COLD void report_bad_pointer(hk_gbuddy_t *h, const void *ptr)
{
    hk_error_t error = HK_ERR_CORRUPT;
    uintptr_t off = (uintptr_t)ptr - (uintptr_t)h->base;
    if (off >= h->area) {
        error = HK_ERR_FOREIGN_PTR;
    } else {
        size_t idx = (size_t)(off >> h->shift);
        unsigned b = h->hb[idx];
        if ((off & (bytes_of(h, 0) - 1u)) != 0 || b == 0) {
            error = HK_ERR_INTERIOR_PTR;
        } else if (head_sane(h, idx, b) && (b & HEAD_KIND) == HEAD_FREE) {
            error = HK_ERR_DOUBLE_FREE;
        }
    }
    hk_report(&h->heap, error, ptr);
}
#endif

/* Resolve a pointer handed in to its used block, or report why it names none (level 1). */
static int find_used(hk_gbuddy_t *h, const void *ptr, size_t *idx, unsigned *t)
{
#if HK_CHECKS
    unsigned b;
    *idx = atom_of(h, ptr);
    if (*idx < h->atoms) {
        b = h->hb[*idx];
        *t = b & HEAD_SIZE;
        if ((b & HEAD_KIND) == HEAD_USED && head_sane(h, *idx, b)) {
            return 1;
        }
    }
    report_bad_pointer(h, ptr);
    return 0;
#else
    *idx = (size_t)((uintptr_t)ptr - (uintptr_t)h->base) >> h->shift;
    *t = h->hb[*idx] & HEAD_SIZE;
    return 1;
#endif
}

/* Usable size; level 2: the requested size, after checking the canary (reported, not fatal). */
static size_t checked_usable(hk_gbuddy_t *h, void *ptr, unsigned t)
{
#if HK_CANARIES
    size_t bytes = bytes_of(h, t);
    if (!hk_tail_intact((unsigned char *)ptr, bytes)) {
        hk_report(&h->heap, HK_ERR_CORRUPT, ptr);
    }
    return hk_tail_request((unsigned char *)ptr, bytes);
#else
    (void)ptr;
    return bytes_of(h, t);
#endif
}

void hk_gbuddy_free(hk_gbuddy_t *heap, void *ptr)
{
    size_t idx;
    unsigned t;
    size_t bytes;
    if (ptr == NULL || !find_used(heap, ptr, &idx, &t)) {
        return;
    }
    bytes = bytes_of(heap, t);
    heap->heap.stats.used_granted -= checked_usable(heap, ptr, t);
    heap->heap.stats.free_count++;
    heap->heap.stats.free_bytes += bytes;
    poison_block((unsigned char *)ptr, bytes);
    merge_up(heap, idx, t);
}

/*
 * Shrink used block idx from size t to want in place: it keeps its left
 * part (the next smaller size) at each step, the right part's buddy is that
 * used left part, so it goes on its list unmerged.
 */
static void shrink(hk_gbuddy_t *h, size_t idx, unsigned t, unsigned want)
{
    unsigned char *sb = h->sb;
    while (t > want) {
        unsigned r = h->right[t];
        size_t ridx = idx + h->size[t - 1u];
        unsigned char parent = sb[idx];
        sb[idx] = SIDE_BYTE(SIDE_LEFT, SIDE_OWN(parent));
        sb[ridx] = SIDE_BYTE(SIDE_RIGHT + (t - r), SIDE_KEPT(parent));
        poison_block(block_at(h, ridx), bytes_of(h, r));
        h->hb[ridx] = (unsigned char)(HEAD_FREE | r);
        push(h, r, block_at(h, ridx));
        h->heap.stats.free_bytes += bytes_of(h, r);
        h->heap.stats.split_count++;
        t--;
    }
    h->hb[idx] = (unsigned char)(HEAD_USED | want);
}

void *hk_gbuddy_resize(hk_gbuddy_t *heap, void *ptr, size_t size)
{
    size_t idx;
    unsigned t;
    unsigned want;
    size_t old_usable;
    if (!find_used(heap, ptr, &idx, &t)) {
        return NULL;
    }
    old_usable = checked_usable(heap, ptr, t);
    want = size_for(heap, size);
    if (want > t) {
        return NULL; /* no growing in place: hk_realloc moves the block */
    }
    shrink(heap, idx, t, want);
    heap->heap.stats.used_granted -= old_usable;
#if HK_CANARIES
    hk_tail_set((unsigned char *)ptr, bytes_of(heap, want), size);
    heap->heap.stats.used_granted += size;
#else
    heap->heap.stats.used_granted += bytes_of(heap, want);
#endif
    return ptr;
}

size_t hk_gbuddy_usable_size(hk_gbuddy_t *heap, const void *ptr)
{
    size_t idx;
    unsigned t;
    if (ptr == NULL || !find_used(heap, ptr, &idx, &t)) {
        return 0;
    }
#if HK_CANARIES
    return hk_tail_request((const unsigned char *)ptr, bytes_of(heap, t));
#else
    return bytes_of(heap, t);
#endif
}

/* ---- statistics, walk, check ---- */

void hk_gbuddy_get_stats(hk_gbuddy_t *heap, hk_stats_t *out)
{
    hk_stats_read(&heap->heap, out);
    out->used_requested = out->used_granted;
    out->used_blocks = out->alloc_count - out->free_count;
    out->free_blocks =
        heap->top_blocks + out->split_count - out->coalesce_count - out->used_blocks - heap->lost_blocks;
    out->largest_free = heap->map != 0 ? bytes_of(heap, hk_fls32(heap->map)) : 0;
    out->smallest_free = heap->map != 0 ? bytes_of(heap, hk_ffs32(heap->map)) : 0;
}

void hk_gbuddy_walk(hk_gbuddy_t *heap, hk_walk_fn visit, void *ctx)
{
    size_t idx = 0;
    while (idx < heap->atoms) {
        hk_block_info_t info;
        unsigned kind = heap->hb[idx] & HEAD_KIND;
        unsigned t = heap->hb[idx] & HEAD_SIZE;
        info.start = block_at(heap, idx);
        info.size = bytes_of(heap, t);
        info.used = kind != HEAD_FREE;
        info.payload = kind == HEAD_LOST ? NULL : info.start;
        info.usable = kind == HEAD_LOST ? 0 : info.size;
#if HK_CANARIES
        if (kind == HEAD_USED) {
            info.usable = hk_tail_request((const unsigned char *)info.start, info.size);
        }
#endif
        visit(ctx, &info);
        idx += heap->size[t];
    }
}

/* Would free block idx of size t merge with its buddy (both free, whole)? check() calls that UNMERGED. */
static int mergeable(const hk_gbuddy_t *h, size_t idx, unsigned t)
{
    unsigned own = SIDE_OWN(h->sb[idx]);
    if (own == SIDE_LEFT) {
        unsigned bt = h->right[t + 1u];
        size_t b = idx + h->size[t];
        return b < h->atoms && h->hb[b] == (HEAD_FREE | bt) && SIDE_OWN(h->sb[b]) == SIDE_RIGHT + (t + 1u - bt);
    }
    return 0; /* a free right part's buddy is a left part: seen from there */
}

static hk_check_t check_control(const hk_gbuddy_t *h)
{
    unsigned t;
    if (h->atoms == 0 || h->area != h->atoms << h->shift || h->hb != h->base - h->atoms || h->sb != h->hb - h->atoms ||
        h->top >= HK_GBUDDY_SIZES || h->size[0] != 1u || h->size[h->top] > h->atoms ||
        h->head != (gb_link_t *)(h + 1) || h->links_lo != (uintptr_t)h->head ||
        h->links_words != (size_t)((uintptr_t)h->base + h->area - h->links_lo) >> GB_LOG2_PTR ||
        (uintptr_t)h->base % bytes_of(h, 0) != 0 || h->heap.stats.capacity != h->area ||
        (h->top < 31u && (h->map >> (h->top + 1u)) != 0)) {
        return HK_CHECK_CONTROL;
    }
    for (t = 1; t <= h->top; t++) {
        if (h->right[t] >= t || h->size[t] != h->size[t - 1u] + h->size[h->right[t]]) {
            return HK_CHECK_CONTROL;
        }
    }
    return HK_CHECK_OK;
}

typedef struct gb_census {
    size_t free_heads[HK_GBUDDY_SIZES];
    size_t used_blocks;
    size_t usable;
    size_t free_bytes;
    size_t lost_blocks;
    size_t lost_bytes;
    size_t blocks;
} gb_census_t;

static hk_check_t check_block(const hk_gbuddy_t *h, size_t idx, gb_census_t *n)
{
    unsigned b = h->hb[idx];
    unsigned kind = b & HEAD_KIND;
    unsigned t = b & HEAD_SIZE;
    size_t bytes;
    size_t i;
    if (kind != HEAD_FREE && kind != HEAD_USED && kind != HEAD_LOST) {
        return HK_CHECK_STATE;
    }
    if (t > h->top || !side_sane(h, t, SIDE_OWN(h->sb[idx]))) {
        return HK_CHECK_ALIGN;
    }
    if (idx + h->size[t] > h->atoms) {
        return HK_CHECK_RANGE;
    }
    for (i = 1; i < h->size[t]; i++) {
        if (h->hb[idx + i] != 0) {
            return HK_CHECK_NEIGHBOUR;
        }
    }
    bytes = bytes_of(h, t);
    n->blocks++;
    if (kind == HEAD_USED) {
#if HK_CANARIES
        if (!hk_tail_intact(block_at(h, idx), bytes)) {
            return HK_CHECK_CANARY;
        }
        n->usable += hk_tail_request(block_at(h, idx), bytes);
#else
        n->usable += bytes;
#endif
        n->used_blocks++;
        return HK_CHECK_OK;
    }
    if (kind == HEAD_LOST) {
        n->lost_blocks++;
        n->lost_bytes += bytes;
        return HK_CHECK_OK;
    }
    if (mergeable(h, idx, t)) {
        return HK_CHECK_UNMERGED;
    }
#if HK_CANARIES
    if (!poison_intact(block_at(h, idx), bytes)) {
        return HK_CHECK_POISON;
    }
#endif
    n->free_heads[t]++;
    n->free_bytes += bytes;
    return HK_CHECK_OK;
}

/* Every list against the head bytes: nodes in the area on free heads of their size, linked both ways, counted. */
static hk_check_t check_lists(const hk_gbuddy_t *h, const gb_census_t *n)
{
    unsigned t;
    for (t = 0; t <= h->top; t++) {
        const gb_link_t *s = &h->head[t];
        const gb_link_t *prev = s;
        const gb_link_t *b;
        size_t count = 0;
        if (((h->map & size_bit(t)) != 0) != (s->next != s)) {
            return HK_CHECK_LIST;
        }
        for (b = s->next; b != s; b = b->next) {
            uintptr_t off = (uintptr_t)b - (uintptr_t)h->base;
            if (off >= h->area) {
                return HK_CHECK_RANGE;
            }
            if ((off & (bytes_of(h, 0) - 1u)) != 0) {
                return HK_CHECK_ALIGN;
            }
            if (h->hb[off >> h->shift] != (HEAD_FREE | t)) {
                return HK_CHECK_LIST;
            }
            if (b->prev != prev || ++count > n->free_heads[t]) {
                return HK_CHECK_LINK;
            }
            prev = b;
        }
        if (s->prev != prev) {
            return HK_CHECK_LINK;
        }
        if (count != n->free_heads[t]) {
            return HK_CHECK_COUNT;
        }
    }
    return HK_CHECK_OK;
}

hk_check_t hk_gbuddy_check(hk_gbuddy_t *heap)
{
    const hk_stats_t *s = &heap->heap.stats;
    gb_census_t n;
    size_t idx = 0;
    hk_check_t rc = check_control(heap);
    if (rc != HK_CHECK_OK) {
        return rc;
    }
    hk_memset(&n, 0, sizeof(n));
    while (idx < heap->atoms) {
        if (heap->hb[idx] == 0) {
            return HK_CHECK_STATE;
        }
        rc = check_block(heap, idx, &n);
        if (rc != HK_CHECK_OK) {
            return rc;
        }
        idx += heap->size[heap->hb[idx] & HEAD_SIZE];
    }
    rc = check_lists(heap, &n);
    if (rc != HK_CHECK_OK) {
        return rc;
    }
    if (s->free_bytes != n.free_bytes || s->used_granted != n.usable || s->alloc_count - s->free_count != n.used_blocks ||
        heap->lost_blocks != n.lost_blocks || heap->lost_bytes != n.lost_bytes ||
        heap->top_blocks + s->split_count - s->coalesce_count != n.blocks || s->min_ever_free > s->free_bytes) {
        return HK_CHECK_STATS;
    }
    return HK_CHECK_OK;
}

int hk_gbuddy_owns(const hk_gbuddy_t *heap, const void *ptr)
{
    return hk_in_range(ptr, heap->base, heap->base + heap->area);
}
