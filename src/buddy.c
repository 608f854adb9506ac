/*
 * Binary buddy allocator (Knuth, TAOCP vol. 1, 2.5) with control bytes kept
 * out of band in the style of SQLite's mem5, and optional lazy coalescing
 * (DELAY-2, Barkley & Lee 1989).
 *
 * Layout of the arena:
 *
 *   [hk_buddy_t][pad][ctrl: one byte per atom][block area ...]
 *                                             ^ base, aligned to
 *                                               max(min_block, HK_BUDDY_BASE_ALIGN)
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
 * state << 5 | order with state 1 = globally free (on a free list, may be
 * coalesced), 2 = used, 3 = locally free (lazy mode only). Bit 7 is clear.
 * Splitting and merging touch only the head bytes of the halves, so the
 * bytes of atoms inside a block stay 0 at no cost.
 *
 * Free blocks hold their doubly linked list links in their first two words.
 * Each order has a global and a local list, and a 32-bit map per kind says
 * which lists are non-empty.
 *
 * Time bounds (n = atoms in the area):
 *   malloc/aligned_alloc: one bit scan, then at most log2 n splits.
 *   free: at most log2 n merges (lazy mode: at most two merge chains).
 *   realloc in place: at most log2 n splits or absorbed buddies; otherwise a
 *     malloc, a copy and a free.
 *   Lazy mode only: an allocation that finds no global block while locally
 *     free blocks exist flushes all of them to the global lists (L blocks:
 *     O(L log n)) and retries once. It is the only unbounded path.
 *   init, walk and check: O(n).
 *
 * Overhead: no per-block header, one control byte per atom (1/min_block of
 * the area, at most one byte per block) and hk_buddy_t. Internal
 * fragmentation: a request is rounded up to a power of two times min_block.
 * No requested size is recorded, so stats.used_requested = used_granted.
 *
 * Misuse detection, exact on an intact heap (an on-error hook sees the
 * report and the heap is left untouched):
 *   HK_ERR_FOREIGN_PTR   outside the block area;
 *   HK_ERR_INTERIOR_PTR  not on an atom boundary, or no block starts there
 *                        (control byte 0);
 *   HK_ERR_DOUBLE_FREE   the block is free (globally or locally);
 *   HK_ERR_CORRUPT       the head byte is impossible: bit 7 set, state 0 with
 *                        order bits, order above the top order, index not a
 *                        multiple of 2^order, block past the area, or the
 *                        neighbours disagree (the atom halfway through the
 *                        block must not be a head, the atom just after it
 *                        must be one). Those two checks catch any change to
 *                        a head's order.
 * Stray writes into a free block's links (use after free) are not checked on
 * the fast paths; check() finds them.
 *
 * Lazy mode (DELAY-2): per order, D = A - L where A counts used blocks and L
 * locally free ones. Freeing with D >= 2 parks the block locally (D -= 2);
 * D == 1 frees it globally with coalescing; D == 0 frees it globally and
 * also moves one locally free block of that order to the global lists. An
 * allocation takes a local block of the exact order first (D += 2), else a
 * global one (D += 1), else splits. D >= 0 always, so once every block is
 * freed L = 0 and the heap is fully coalesced again. In-place realloc moves
 * a block between orders and applies the same rule to the order it leaves.
 * Locally free blocks count as free in the statistics, walk() and check().
 */
#include "heapkit/buddy.h"
#include "hk_internal.h"

#define CTRL_ORDER 0x1Fu
#define CTRL_STATE 0x60u
#define CTRL_FREE 0x20u
#define CTRL_USED 0x40u
#define CTRL_LOCAL 0x60u
#define CTRL_SPARE 0x80u

#define BUDDY_POW2(x) ((x) != 0 && ((x) & ((x) - 1)) == 0)

typedef struct buddy_free {
    struct buddy_free *next;
    struct buddy_free *prev;
} buddy_free_t;

typedef struct buddy_lists {
    buddy_free_t *head[HK_BUDDY_ORDERS];
    uint32_t map; /* bit k set iff head[k] != NULL */
} buddy_lists_t;

struct hk_buddy {
    hk_heap_t heap;
    unsigned char *base; /* block area; control bytes end here */
    size_t atoms;
    unsigned shift; /* log2(min_block) */
    unsigned top;   /* highest order any block can have */
    int lazy;
    buddy_lists_t global;
    buddy_lists_t local;
    size_t slack[HK_BUDDY_ORDERS]; /* DELAY-2's D per order; equals A in eager mode */
};

HK_STATIC_ASSERT(HK_BUDDY_ORDERS >= 1 && HK_BUDDY_ORDERS <= 32, orders_fit_map_and_ctrl_byte);
HK_STATIC_ASSERT(BUDDY_POW2(HK_BUDDY_MIN_BLOCK), min_block_is_power_of_two);
HK_STATIC_ASSERT(HK_BUDDY_MIN_BLOCK >= sizeof(buddy_free_t) && HK_BUDDY_MIN_BLOCK >= HK_ALIGN, min_block_holds_links);
HK_STATIC_ASSERT(BUDDY_POW2(HK_BUDDY_BASE_ALIGN) && HK_BUDDY_BASE_ALIGN >= HK_ALIGN, base_align_is_power_of_two);

static void *hk_buddy_op_aligned(hk_heap_t *h, size_t alignment, size_t size)
{
    return hk_buddy_aligned_alloc((hk_buddy_t *)h, alignment, size);
}

HK_DEFINE_OPS_REALLOC(hk_buddy, hk_buddy_t, "buddy", hk_buddy_op_aligned);

static size_t span(unsigned k) { return (size_t)1 << k; }

static uint32_t order_bit(unsigned k) { return (uint32_t)1u << k; }

static size_t block_bytes(const hk_buddy_t *h, unsigned k) { return (size_t)1 << (h->shift + k); }

static unsigned char *ctrl(const hk_buddy_t *h) { return h->base - h->atoms; }

static unsigned char *block_at(const hk_buddy_t *h, size_t idx) { return h->base + (idx << h->shift); }

static size_t index_of(const hk_buddy_t *h, const void *p)
{
    return (size_t)((uintptr_t)p - (uintptr_t)h->base) >> h->shift;
}

static unsigned char head(unsigned state, unsigned k) { return (unsigned char)(state | k); }

static unsigned order_at(const hk_buddy_t *h, size_t idx) { return ctrl(h)[idx] & CTRL_ORDER; }

static void list_push(buddy_lists_t *l, unsigned k, void *mem)
{
    buddy_free_t *b = (buddy_free_t *)mem;
    b->prev = NULL;
    b->next = l->head[k];
    if (b->next != NULL) {
        b->next->prev = b;
    }
    l->head[k] = b;
    l->map |= order_bit(k);
}

static void list_unlink(buddy_lists_t *l, unsigned k, buddy_free_t *b)
{
    if (b->prev != NULL) {
        b->prev->next = b->next;
    } else {
        l->head[k] = b->next;
    }
    if (b->next != NULL) {
        b->next->prev = b->prev;
    }
    if (l->head[k] == NULL) {
        l->map &= ~order_bit(k);
    }
}

static buddy_free_t *list_pop(buddy_lists_t *l, unsigned k)
{
    buddy_free_t *b = l->head[k];
    list_unlink(l, k, b);
    return b;
}

/*
 * Is b a plausible head byte for atom idx? Besides the byte itself, the atom
 * halfway through the block must not start a block and the atom after it
 * must, which pins the order exactly.
 */
static int head_sane(const hk_buddy_t *h, size_t idx, unsigned b)
{
    const unsigned char *c = ctrl(h);
    unsigned k = b & CTRL_ORDER;
    size_t end;
    if ((b & CTRL_SPARE) != 0 || (b & CTRL_STATE) == 0 || k > h->top || (idx & (span(k) - 1u)) != 0) {
        return 0;
    }
    end = idx + span(k);
    if (end > h->atoms || (k > 0 && c[idx + span(k - 1u)] != 0)) {
        return 0;
    }
    return end == h->atoms || c[end] != 0;
}

/* Resolve a pointer given back by the caller to its used block, or report why not. */
static int find_used(hk_buddy_t *h, const void *ptr, size_t *idx)
{
    uintptr_t off = (uintptr_t)ptr - (uintptr_t)h->base;
    unsigned b;
    if (!hk_buddy_owns(h, ptr)) {
        hk_report(&h->heap, HK_ERR_FOREIGN_PTR, ptr);
        return 0;
    }
    if ((off & (((uintptr_t)1 << h->shift) - 1u)) != 0 || ctrl(h)[off >> h->shift] == 0) {
        hk_report(&h->heap, HK_ERR_INTERIOR_PTR, ptr);
        return 0;
    }
    *idx = (size_t)(off >> h->shift);
    b = ctrl(h)[*idx];
    if (!head_sane(h, *idx, b)) {
        hk_report(&h->heap, HK_ERR_CORRUPT, ptr);
        return 0;
    }
    if ((b & CTRL_STATE) != CTRL_USED) {
        hk_report(&h->heap, HK_ERR_DOUBLE_FREE, ptr);
        return 0;
    }
    return 1;
}

/* Smallest order whose block holds size bytes, or HK_BUDDY_ORDERS if none can. */
static unsigned order_for(const hk_buddy_t *h, size_t size)
{
    if (size > block_bytes(h, h->top)) {
        return HK_BUDDY_ORDERS;
    }
    return hk_log2_ceil(size == 0 ? 1u : (size + block_bytes(h, 0) - 1u) >> h->shift);
}

/*
 * Put free block idx of order k on the global lists, merging it with free
 * buddies on the way up. The caller has already counted it in free_blocks.
 */
static void free_global(hk_buddy_t *h, size_t idx, unsigned k)
{
    unsigned char *c = ctrl(h);
    while (k < h->top) {
        size_t buddy = idx ^ span(k);
        if (buddy + span(k) > h->atoms || c[buddy] != head(CTRL_FREE, k)) {
            break;
        }
        list_unlink(&h->global, k, (buddy_free_t *)block_at(h, buddy));
        c[idx | span(k)] = 0;
        idx &= ~span(k);
        k++;
        h->heap.stats.free_blocks--;
        h->heap.stats.coalesce_count++;
    }
    c[idx] = head(CTRL_FREE, k);
    list_push(&h->global, k, block_at(h, idx));
}

static void local_to_global(hk_buddy_t *h, unsigned k)
{
    buddy_free_t *b = list_pop(&h->local, k);
    free_global(h, index_of(h, b), k);
}

/* Lazy mode: every locally free block goes global, D += 1 for each. */
static void flush_local(hk_buddy_t *h)
{
    while (h->local.map != 0) {
        unsigned k = hk_ffs32(h->local.map);
        local_to_global(h, k);
        h->slack[k]++;
    }
}

/*
 * DELAY-2 bookkeeping for a used block leaving order k (freed globally or
 * resized): A drops by one; if that would make D negative, one locally free
 * block of the order goes global too (A and L both drop, D stays 0).
 */
static void leave_order(hk_buddy_t *h, unsigned k)
{
    if (h->slack[k] == 0) {
        local_to_global(h, k);
    } else {
        h->slack[k]--;
    }
}

/* Turn the upper halves of block idx, from order k down to order want, into global free blocks. */
static void split_down(hk_buddy_t *h, size_t idx, unsigned k, unsigned want)
{
    unsigned char *c = ctrl(h);
    while (k > want) {
        k--;
        c[idx + span(k)] = head(CTRL_FREE, k);
        list_push(&h->global, k, block_at(h, idx + span(k)));
        h->heap.stats.split_count++;
        h->heap.stats.free_blocks++;
    }
}

static void *alloc_order(hk_buddy_t *h, unsigned k)
{
    buddy_free_t *b;
    size_t idx;
    size_t bytes = block_bytes(h, k);

    if ((h->local.map & order_bit(k)) != 0) {
        b = list_pop(&h->local, k);
        idx = index_of(h, b);
        h->slack[k] += 2;
    } else {
        uint32_t fit = h->global.map & ~(order_bit(k) - 1u);
        unsigned j;
        if (fit == 0 && h->local.map != 0) {
            flush_local(h);
            fit = h->global.map & ~(order_bit(k) - 1u);
        }
        if (fit == 0) {
            return NULL;
        }
        j = hk_ffs32(fit);
        b = list_pop(&h->global, j);
        idx = index_of(h, b);
        split_down(h, idx, j, k);
        h->slack[k]++;
    }
    ctrl(h)[idx] = head(CTRL_USED, k);
    h->heap.stats.free_blocks--;
    hk_count_alloc(&h->heap, bytes, bytes, bytes);
    return b;
}

/* Shrink used block idx from order k to want in place. */
static void shrink(hk_buddy_t *h, size_t idx, unsigned k, unsigned want)
{
    split_down(h, idx, k, want);
    ctrl(h)[idx] = head(CTRL_USED, want);
    leave_order(h, k);
    h->slack[want]++;
}

/* Grow used block idx from order k to want in place if it is the lower buddy of globally free blocks. */
static int grow(hk_buddy_t *h, size_t idx, unsigned k, unsigned want)
{
    unsigned char *c = ctrl(h);
    unsigned j;
    if ((idx & (span(want) - 1u)) != 0 || idx + span(want) > h->atoms) {
        return 0;
    }
    for (j = k; j < want; j++) {
        if (c[idx + span(j)] != head(CTRL_FREE, j)) {
            return 0;
        }
    }
    for (j = k; j < want; j++) {
        list_unlink(&h->global, j, (buddy_free_t *)block_at(h, idx + span(j)));
        c[idx + span(j)] = 0;
        h->heap.stats.free_blocks--;
        h->heap.stats.coalesce_count++;
    }
    c[idx] = head(CTRL_USED, want);
    leave_order(h, k);
    h->slack[want]++;
    return 1;
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

hk_buddy_t *hk_buddy_init(void *arena, size_t size, const hk_buddy_config_t *cfg, hk_status_t *status)
{
    size_t min_block = (cfg != NULL && cfg->min_block != 0) ? cfg->min_block : (size_t)HK_BUDDY_MIN_BLOCK;
    uintptr_t lo = (uintptr_t)arena;
    uintptr_t start;
    uintptr_t hi;
    uintptr_t base = 0;
    unsigned shift;
    size_t atoms;
    size_t idx;
    hk_buddy_t *h;

    if (arena == NULL || !hk_is_pow2(min_block) || min_block < sizeof(buddy_free_t) || min_block < HK_ALIGN) {
        return hk_init_status(status, HK_EINVAL);
    }
    size = hk_arena_room(lo, size);
    hi = lo + size;
    shift = hk_log2_floor(min_block);
    start = hk_align_up_uptr(lo, HK_ALIGN);
    atoms = 0;
    if (start >= lo && start <= hi && hi - start > sizeof(hk_buddy_t)) {
        uintptr_t base_align = min_block > HK_BUDDY_BASE_ALIGN ? min_block : HK_BUDDY_BASE_ALIGN;
        atoms = fit_atoms(start + sizeof(hk_buddy_t), hi, shift, base_align, &base);
    }
    if (atoms == 0) {
        return hk_init_status(status, HK_ETOOSMALL);
    }

    h = (hk_buddy_t *)start;
    hk_heap_setup(&h->heap, &hk_buddy_ops, atoms << shift);
    h->base = (unsigned char *)base;
    h->atoms = atoms;
    h->shift = shift;
    h->top = hk_log2_floor(atoms);
    if (h->top > HK_BUDDY_ORDERS - 1u) {
        h->top = HK_BUDDY_ORDERS - 1u;
    }
    h->lazy = cfg != NULL && cfg->lazy;
    hk_memset(&h->global, 0, sizeof(h->global));
    hk_memset(&h->local, 0, sizeof(h->local));
    hk_memset(h->slack, 0, sizeof(h->slack));
    hk_memset(ctrl(h), 0, atoms);
    for (idx = 0; idx < atoms;) {
        unsigned k = hk_log2_floor(atoms - idx);
        if (k > h->top) {
            k = h->top;
        }
        ctrl(h)[idx] = head(CTRL_FREE, k);
        list_push(&h->global, k, block_at(h, idx));
        h->heap.stats.free_blocks++;
        idx += span(k);
    }
    hk_init_status(status, HK_OK);
    return h;
}

hk_heap_t *hk_buddy_heap(hk_buddy_t *heap) { return &heap->heap; }

void *hk_buddy_malloc(hk_buddy_t *heap, size_t size)
{
    unsigned k = order_for(heap, size);
    void *p = (k <= heap->top) ? alloc_order(heap, k) : NULL;
    return (p != NULL) ? p : hk_fail(&heap->heap);
}

void *hk_buddy_aligned_alloc(hk_buddy_t *heap, size_t alignment, size_t size)
{
    /* A block at least as large as the alignment sits at a multiple of its size from base. */
    if (!hk_is_pow2(alignment) || ((uintptr_t)heap->base & (alignment - 1u)) != 0) {
        return hk_fail(&heap->heap);
    }
    return hk_buddy_malloc(heap, size < alignment ? alignment : size);
}

/* grow, after parking no buddy locally: lazy mode coalesces before it gives up on the place. */
static int grow_in_place(hk_buddy_t *h, size_t idx, unsigned k, unsigned want)
{
    if (grow(h, idx, k, want)) {
        return 1;
    }
    if (h->local.map == 0) {
        return 0;
    }
    flush_local(h);
    return grow(h, idx, k, want);
}

static void release(hk_buddy_t *h, size_t idx)
{
    unsigned k = order_at(h, idx);
    size_t bytes = block_bytes(h, k);
    hk_count_free(&h->heap, bytes, bytes, bytes);
    h->heap.stats.free_blocks++;
    if (h->lazy && h->slack[k] >= 2) {
        h->slack[k] -= 2;
        ctrl(h)[idx] = head(CTRL_LOCAL, k);
        list_push(&h->local, k, block_at(h, idx));
    } else {
        free_global(h, idx, k);
        leave_order(h, k);
    }
}

void hk_buddy_free(hk_buddy_t *heap, void *ptr)
{
    size_t idx;
    if (ptr != NULL && find_used(heap, ptr, &idx)) {
        release(heap, idx);
    }
}

void *hk_buddy_realloc(hk_buddy_t *heap, void *ptr, size_t size)
{
    size_t idx;
    unsigned k;
    unsigned want;
    size_t old_bytes;
    size_t new_bytes;

    if (ptr == NULL) {
        return hk_buddy_malloc(heap, size);
    }
    if (!find_used(heap, ptr, &idx)) {
        return NULL;
    }
    if (size == 0) {
        release(heap, idx);
        return NULL;
    }
    k = order_at(heap, idx);
    want = order_for(heap, size);
    if (want > heap->top) {
        return hk_fail(&heap->heap);
    }
    old_bytes = block_bytes(heap, k);
    if (want < k) {
        shrink(heap, idx, k, want);
    } else if (want > k && !grow_in_place(heap, idx, k, want)) {
        void *moved = hk_realloc_by_move(&heap->heap, ptr, old_bytes, size);
        if (moved != NULL) {
            heap->heap.stats.realloc_count++;
        }
        return moved;
    }
    new_bytes = block_bytes(heap, want);
    hk_count_resize(&heap->heap, old_bytes, old_bytes, old_bytes, new_bytes, new_bytes, new_bytes);
    heap->heap.stats.realloc_count++;
    return ptr;
}

size_t hk_buddy_usable_size(hk_buddy_t *heap, const void *ptr)
{
    size_t idx;
    if (ptr == NULL || !find_used(heap, ptr, &idx)) {
        return 0;
    }
    return block_bytes(heap, order_at(heap, idx));
}

void hk_buddy_get_stats(hk_buddy_t *heap, hk_stats_t *out)
{
    uint32_t any = heap->global.map | heap->local.map;
    *out = heap->heap.stats;
    out->largest_free = any != 0 ? block_bytes(heap, hk_fls32(any)) : 0;
    out->smallest_free = any != 0 ? block_bytes(heap, hk_ffs32(any)) : 0;
}

void hk_buddy_walk(hk_buddy_t *heap, hk_walk_fn visit, void *ctx)
{
    const unsigned char *c = ctrl(heap);
    size_t idx = 0;
    while (idx < heap->atoms) {
        hk_block_info_t info;
        unsigned k = c[idx] & CTRL_ORDER;
        info.start = block_at(heap, idx);
        info.payload = info.start;
        info.size = block_bytes(heap, k);
        info.usable = info.size;
        info.used = (c[idx] & CTRL_STATE) == CTRL_USED;
        visit(ctx, &info);
        idx += span(k);
    }
}

/*
 * Walk one kind of free list against the control bytes: every node is a head
 * of that state and order, back links match, and the list is no longer than
 * the number of such heads (so a cycle cannot loop), and together the lists
 * hold all of them. Fills per_order (if not NULL) with the list lengths.
 * Returns 0 or a check() code.
 */
static int check_lists(const hk_buddy_t *h, const buddy_lists_t *l, unsigned state, size_t heads, size_t *per_order)
{
    size_t count = 0;
    unsigned k;
    for (k = 0; k < HK_BUDDY_ORDERS; k++) {
        const buddy_free_t *prev = NULL;
        const buddy_free_t *b;
        size_t n = 0;
        if (((l->map & order_bit(k)) != 0) != (l->head[k] != NULL)) {
            return 5;
        }
        for (b = l->head[k]; b != NULL; b = b->next) {
            if (++n > heads || !hk_buddy_owns(h, b) || ((uintptr_t)b - (uintptr_t)h->base) % block_bytes(h, 0) != 0 ||
                ctrl(h)[index_of(h, b)] != head(state, k) || b->prev != prev) {
                return 4;
            }
            prev = b;
        }
        if (per_order != NULL) {
            per_order[k] = n;
        }
        count += n;
    }
    return (count == heads && (HK_BUDDY_ORDERS == 32 || (l->map >> (HK_BUDDY_ORDERS % 32u)) == 0)) ? 0 : 5;
}

/*
 * Codes: 1 a control byte is not a sane head or a block's interior is not
 * all zero; 2 two globally free buddies left unmerged; 3 a locally free
 * block in eager mode; 4 a list node or link is wrong; 5 a map bit or a list
 * total disagrees with the control bytes; 6 a DELAY-2 slack differs from
 * A - L or would be negative; 7 a stats counter differs from the walk.
 */
int hk_buddy_check(hk_buddy_t *heap)
{
    const unsigned char *c = ctrl(heap);
    const hk_stats_t *s = &heap->heap.stats;
    size_t used_per_order[HK_BUDDY_ORDERS];
    size_t local_per_order[HK_BUDDY_ORDERS];
    size_t global_heads = 0;
    size_t local_heads = 0;
    size_t used_blocks = 0;
    size_t used_bytes = 0;
    size_t free_bytes = 0;
    size_t idx = 0;
    unsigned k;
    int rc;

    hk_memset(used_per_order, 0, sizeof(used_per_order));
    while (idx < heap->atoms) {
        unsigned b = c[idx];
        size_t i;
        if (!head_sane(heap, idx, b)) {
            return 1;
        }
        k = b & CTRL_ORDER;
        for (i = 1; i < span(k); i++) {
            if (c[idx + i] != 0) {
                return 1;
            }
        }
        if ((b & CTRL_STATE) == CTRL_USED) {
            used_per_order[k]++;
            used_blocks++;
            used_bytes += block_bytes(heap, k);
        } else if ((b & CTRL_STATE) == CTRL_FREE) {
            size_t buddy = idx ^ span(k);
            if (k < heap->top && buddy + span(k) <= heap->atoms && c[buddy] == head(CTRL_FREE, k)) {
                return 2; /* two global buddies left unmerged */
            }
            global_heads++;
            free_bytes += block_bytes(heap, k);
        } else {
            if (!heap->lazy) {
                return 3;
            }
            local_heads++;
            free_bytes += block_bytes(heap, k);
        }
        idx += span(k);
    }

    rc = check_lists(heap, &heap->global, CTRL_FREE, global_heads, NULL);
    if (rc == 0) {
        rc = check_lists(heap, &heap->local, CTRL_LOCAL, local_heads, local_per_order);
    }
    if (rc != 0) {
        return rc;
    }
    for (k = 0; k < HK_BUDDY_ORDERS; k++) {
        if (used_per_order[k] < local_per_order[k] || heap->slack[k] != used_per_order[k] - local_per_order[k]) {
            return 6;
        }
    }
    if (s->capacity != heap->atoms << heap->shift || s->free_bytes != free_bytes || s->used_blocks != used_blocks ||
        s->used_granted != used_bytes || s->used_requested != used_bytes ||
        s->free_blocks != global_heads + local_heads || free_bytes + used_bytes != s->capacity) {
        return 7;
    }
    return 0;
}

int hk_buddy_owns(const hk_buddy_t *heap, const void *ptr)
{
    return hk_in_range(ptr, heap->base, heap->base + (heap->atoms << heap->shift));
}
