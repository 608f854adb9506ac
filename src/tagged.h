/*
 * Boundary-tagged blocks, the physical layout shared by seqfit and tlsf.
 *
 * The managed span is a chain of blocks, each starting with an 8-byte tag:
 *
 *   uint32 size_flags  gross block size (multiple of HK_ALIGN) | USED | PREV_USED
 *   uint16 slack       usable - requested, for used blocks (bounded by
 *                      HK_TAG_MIN_BLOCK + HK_ALIGN, so 16 bits always suffice,
 *                      except in dmm, which bounds it itself); free blocks
 *                      hold 0, or dmm's number of the list holding them
 *   uint16 check       hash of size_flags, slack, the tag's own address and
 *                      the heap's key (hk_heap_key), so a tag written by
 *                      another heap, or an earlier heap on the same arena,
 *                      does not pass for one of this heap's
 *
 * The payload follows the tag and is HK_ALIGN-aligned, so blocks start at
 * addresses that are HK_TAG_HDR short of an alignment boundary. A free block
 * keeps two free-list links at the start of its payload and its size in its
 * last four bytes (the footer), which lets the next block find it when
 * coalescing; PREV_USED in the next block's tag says whether that footer is
 * valid. A used block has no footer, so the per-block overhead is the 8-byte
 * tag alone. A zero-size USED sentinel tag ends the chain.
 *
 * The check field catches stray writes over a tag and pointers that do not
 * point at a block: a lookup that fails it walks the chain once (error path
 * only) to tell a corrupted header from an interior pointer.
 */
#ifndef HEAPKIT_TAGGED_H
#define HEAPKIT_TAGGED_H

#include "hk_internal.h"

typedef struct hk_tag {
    uint32_t size_flags;
    uint16_t slack;
    uint16_t check;
} hk_tag_t;

typedef struct hk_tag_links {
    hk_tag_t *next;
    hk_tag_t *prev;
} hk_tag_links_t;

#define HK_TAG_HDR ((size_t)sizeof(hk_tag_t))
#define HK_TAG_USED 1u
#define HK_TAG_PREV_USED 2u
#define HK_TAG_FLAGS 3u
/* Smallest block: tag, two links and a footer, rounded to the alignment. */
#define HK_TAG_MIN_BLOCK ((HK_TAG_HDR + sizeof(hk_tag_links_t) + sizeof(uint32_t) + HK_ALIGN - 1u) & ~(size_t)(HK_ALIGN - 1u))
/* Block sizes live in 32 bits. */
#define HK_TAG_MAX_SPAN ((size_t)0xFFFFFFFFu & ~(size_t)(HK_ALIGN - 1u))

HK_STATIC_ASSERT(sizeof(hk_tag_t) == 8, tag_is_eight_bytes);
HK_STATIC_ASSERT(HK_TAG_MIN_BLOCK + HK_ALIGN < 65536u, slack_fits_sixteen_bits);

/* The span of blocks a tagged heap manages: first block, end sentinel, and the heap's tag key. */
typedef struct hk_tag_span {
    hk_tag_t *first;
    hk_tag_t *sentinel;
    uint32_t key;
} hk_tag_span_t;

static inline uint16_t hk_tag_hash(const hk_tag_span_t *span, const hk_tag_t *t, uint32_t size_flags, uint16_t slack)
{
    uint32_t a = (uint32_t)((uintptr_t)t >> 3);
    uint32_t h = size_flags ^ ((uint32_t)slack << 7) ^ a ^ span->key;
    h ^= h >> 16;
    h *= 0x7FEB352Du;
    h ^= h >> 15;
    return (uint16_t)h;
}

static inline void hk_tag_set(const hk_tag_span_t *span, hk_tag_t *t, uint32_t size_flags, uint16_t slack)
{
    t->size_flags = size_flags;
    t->slack = slack;
    t->check = hk_tag_hash(span, t, size_flags, slack);
}

static inline int hk_tag_intact(const hk_tag_span_t *span, const hk_tag_t *t)
{
    return t->check == hk_tag_hash(span, t, t->size_flags, t->slack);
}

static inline size_t hk_tag_size(const hk_tag_t *t) { return t->size_flags & ~(uint32_t)HK_TAG_FLAGS; }
static inline int hk_tag_used(const hk_tag_t *t) { return (t->size_flags & HK_TAG_USED) != 0; }
static inline int hk_tag_prev_used(const hk_tag_t *t) { return (t->size_flags & HK_TAG_PREV_USED) != 0; }
static inline size_t hk_tag_usable(const hk_tag_t *t) { return hk_tag_size(t) - HK_TAG_HDR; }
static inline size_t hk_tag_requested(const hk_tag_t *t) { return hk_tag_usable(t) - t->slack; }

static inline hk_tag_t *hk_tag_next(const hk_tag_t *t) { return (hk_tag_t *)((uintptr_t)t + hk_tag_size(t)); }

static inline void *hk_tag_payload(const hk_tag_t *t) { return (void *)((uintptr_t)t + HK_TAG_HDR); }

static inline hk_tag_t *hk_tag_of(const void *payload) { return (hk_tag_t *)((uintptr_t)payload - HK_TAG_HDR); }

static inline hk_tag_links_t *hk_tag_links(const hk_tag_t *t) { return (hk_tag_links_t *)hk_tag_payload(t); }

static inline uint32_t *hk_tag_footer(const hk_tag_t *t)
{
    return (uint32_t *)((uintptr_t)t + hk_tag_size(t) - sizeof(uint32_t));
}

/* The physical predecessor; valid only when PREV_USED is clear. */
static inline hk_tag_t *hk_tag_prev(const hk_tag_t *t)
{
    return (hk_tag_t *)((uintptr_t)t - *(const uint32_t *)((uintptr_t)t - sizeof(uint32_t)));
}

static inline void hk_tag_set_prev_used(const hk_tag_span_t *span, hk_tag_t *t, int prev_used)
{
    uint32_t sf = (t->size_flags & ~(uint32_t)HK_TAG_PREV_USED) | (prev_used ? HK_TAG_PREV_USED : 0u);
    hk_tag_set(span, t, sf, t->slack);
}

/* Mark t free with the given gross size: footer written, next block told. */
static inline void hk_tag_make_free(const hk_tag_span_t *span, hk_tag_t *t, size_t size)
{
    hk_tag_set(span, t, (uint32_t)size | (t->size_flags & HK_TAG_PREV_USED), 0);
    *hk_tag_footer(t) = (uint32_t)size;
    hk_tag_set_prev_used(span, hk_tag_next(t), 0);
}

/* Mark t used with the given gross size and request; next block told. */
static inline void hk_tag_make_used(const hk_tag_span_t *span, hk_tag_t *t, size_t size, size_t requested)
{
    uint32_t sf = (uint32_t)size | HK_TAG_USED | (t->size_flags & HK_TAG_PREV_USED);
    hk_tag_set(span, t, sf, (uint16_t)(size - HK_TAG_HDR - requested));
    hk_tag_set_prev_used(span, hk_tag_next(t), 1);
}

/* Gross block size for a request, or 0 if no block could ever hold it. */
static inline size_t hk_tag_gross(size_t requested)
{
    size_t gross;
    if (requested > HK_TAG_MAX_SPAN - HK_TAG_HDR) {
        return 0;
    }
    gross = hk_round_up(requested + HK_TAG_HDR, HK_ALIGN);
    return gross < HK_TAG_MIN_BLOCK ? HK_TAG_MIN_BLOCK : gross;
}

/*
 * Lay out a span inside [mem, mem + size): one free block covering it and
 * the sentinel. Returns the free block's size, 0 if too small for one block.
 */
size_t hk_tag_span_init(hk_tag_span_t *span, void *mem, size_t size);

/*
 * Resolve a pointer handed to free/realloc/usable_size to its used block.
 * Returns NULL after reporting the misuse through heap.
 */
hk_tag_t *hk_tag_lookup(hk_heap_t *heap, const hk_tag_span_t *span, const void *ptr);

/*
 * How an allocator files free blocks, for the code shared below. The heap
 * argument is the allocator's control block (it starts with its hk_heap_t).
 */
typedef struct hk_tag_lists {
    void (*detach)(hk_heap_t *heap, hk_tag_t *b);  /* take a listed free block off its list */
    void (*release)(hk_heap_t *heap, hk_tag_t *b); /* free b (on no list), merging its free neighbours */
} hk_tag_lists_t;

/*
 * Turn block b (off every list) into a free block merged with its free
 * physical neighbours, which are detached from their lists; returns the
 * merged block for the caller to file. b's own tag is left saying "free",
 * which is what catches a later double free of it.
 */
hk_tag_t *hk_tag_coalesce(hk_heap_t *heap, const hk_tag_span_t *span, const hk_tag_lists_t *lists, hk_tag_t *b);

/* Cut block b to size bytes when the rest can form a block of its own; the rest is released. */
void hk_tag_trim(hk_heap_t *heap, const hk_tag_span_t *span, const hk_tag_lists_t *lists, hk_tag_t *b, size_t size);

/*
 * realloc for a tagged heap: shrink in place, grow into a free successor,
 * or move (hk_realloc_by_move); the conventions of heapkit.h for NULL and 0.
 */
void *hk_tag_realloc(hk_heap_t *heap, const hk_tag_span_t *span, const hk_tag_lists_t *lists, void *ptr, size_t size);

/* Visit every block of the span. */
void hk_tag_walk(const hk_tag_span_t *span, hk_walk_fn visit, void *ctx);

/*
 * Check the physical chain, and the counters in heap->stats against it
 * (free_blocks included, so the caller need only match its free lists to
 * that count). Returns 0 or a positive code naming the broken invariant.
 */
int hk_tag_check(const hk_heap_t *heap, const hk_tag_span_t *span);

/* hk_tag_check for an allocator that may leave free neighbours unmerged. */
int hk_tag_check_unmerged(const hk_heap_t *heap, const hk_tag_span_t *span);

#endif
