/* SPDX-License-Identifier: MIT */
/*
 * Boundary-tagged blocks, the physical layout shared by tlsf, seqfit and dmm.
 *
 * The managed span is a chain of blocks. Each starts with a tag that records
 * its own size and its left neighbour's size, as Zephyr's sys_heap chunks do:
 *
 *   left      gross size of the block before it, in HK_ALIGN units (0: first)
 *   size_used gross size of this block in HK_ALIGN units << 1 | used
 *   requested (HK_HARDENING >= 2 only) the caller's request, which places
 *             the canary
 *
 * The fields are 32 bits (HK_TAG_WIDE 1, the default: an 8-byte tag, a
 * span of any size the allocator can index), or 16 bits with HK_TAG_WIDE 0:
 * a 4-byte tag, for a firmware whose every tagged heap is at most
 * HK_TAG_MAX_BLOCK (256 KiB at HK_ALIGN 8); init refuses a larger arena with
 * HK_ETOOBIG rather than use part of it. The width is a build option, not
 * chosen per heap as Zephyr's sys_heap does, because a per-heap choice costs
 * a test on every tag access of the hot paths; the wide tag costs no
 * instruction (a 32-bit load or store is one, as a 16-bit one is), only 4
 * bytes of RAM per block.
 *
 * The payload follows the tag and is HK_ALIGN-aligned, so blocks start
 * HK_TAG_HDR bytes short of an alignment boundary. A free block keeps its
 * free-list links at the start of its payload. A zero-size used sentinel tag
 * ends the chain.
 *
 * Integrity is structural redundancy, not a checksum: every size is stored
 * twice, in the block's own tag and in its right neighbour's left field, so
 * next(b).left == b.size and prev(b).size == b.left must hold for every
 * block b. An overflow out of a block lands first in its right neighbour's
 * left field and so breaks the first of these, which the next operation
 * touching either block sees (HK_CHECKS). Free-list links must point inside
 * the span at free blocks that link back.
 */
#ifndef HEAPKIT_TAGGED_H
#define HEAPKIT_TAGGED_H

#include "hk_internal.h"

#ifndef HK_TAG_WIDE
#define HK_TAG_WIDE 1
#endif

#if HK_TAG_WIDE
typedef uint32_t hk_tag_word_t;
#else
typedef uint16_t hk_tag_word_t;
#endif

typedef struct hk_tag {
    hk_tag_word_t left;      /* left neighbour's size in units; 0 for the first block */
    hk_tag_word_t size_used; /* own size in units << 1 | 1 when used */
#if HK_CANARIES
    uint32_t requested; /* the request, so the canary sits right after it */
#endif
} hk_tag_t;

typedef struct hk_tag_links {
    struct hk_tag *next;
    struct hk_tag *prev;
} hk_tag_links_t;

HK_STATIC_ASSERT(offsetof(hk_tag_links_t, next) == 0, a_free_blocks_first_word_is_its_next_link);

#define HK_TAG_HDR ((size_t)sizeof(hk_tag_t))
#define HK_TAG_UNIT ((size_t)HK_ALIGN)
/* Smallest block: a tag and two links, rounded to the alignment. */
#define HK_TAG_MIN_BLOCK ((HK_TAG_HDR + sizeof(hk_tag_links_t) + HK_ALIGN - 1u) & ~(size_t)(HK_ALIGN - 1u))
/*
 * Largest block: its size in units must fit the 31 or 15 bits next to the
 * used bit, and its size in bytes a size_t (a 32-bit target's 31-bit unit
 * count would not).
 */
#define HK_TAG_MAX_UNITS ((size_t)((hk_tag_word_t)~(hk_tag_word_t)0) >> 1)
#define HK_TAG_MAX_BLOCK                                                                                    \
    (HK_TAG_MAX_UNITS > SIZE_MAX / HK_TAG_UNIT ? (SIZE_MAX & ~(HK_TAG_UNIT - 1u)) : HK_TAG_MAX_UNITS * HK_TAG_UNIT)

HK_STATIC_ASSERT(HK_TAG_HDR % 4u == 0 && HK_TAG_HDR < HK_ALIGN * 2u, tag_fits_before_the_payload);
HK_STATIC_ASSERT(sizeof(hk_tag_t) == (HK_TAG_WIDE ? 8u : 4u) + (HK_CANARIES ? 4u : 0u), tag_is_its_fields);

/* The span of blocks a tagged heap manages. */
typedef struct hk_tag_span {
    hk_tag_t *first;
    hk_tag_t *sentinel;
} hk_tag_span_t;

static inline size_t hk_tag_size(const hk_tag_t *t) { return (size_t)(t->size_used >> 1) * HK_TAG_UNIT; }
static inline int hk_tag_used(const hk_tag_t *t) { return t->size_used & 1u; }
static inline size_t hk_tag_left_size(const hk_tag_t *t) { return (size_t)t->left * HK_TAG_UNIT; }
static inline size_t hk_tag_usable(const hk_tag_t *t) { return hk_tag_size(t) - HK_TAG_HDR; }

static inline hk_tag_t *hk_tag_at(uintptr_t addr) { return (hk_tag_t *)addr; }
static inline hk_tag_t *hk_tag_next(const hk_tag_t *t) { return hk_tag_at((uintptr_t)t + hk_tag_size(t)); }
static inline hk_tag_t *hk_tag_prev(const hk_tag_t *t) { return hk_tag_at((uintptr_t)t - hk_tag_left_size(t)); }
static inline void *hk_tag_payload(const hk_tag_t *t) { return (void *)((uintptr_t)t + HK_TAG_HDR); }
static inline hk_tag_t *hk_tag_of(const void *payload) { return hk_tag_at((uintptr_t)payload - HK_TAG_HDR); }
static inline hk_tag_links_t *hk_tag_links(const hk_tag_t *t) { return (hk_tag_links_t *)hk_tag_payload(t); }

/* Whether the block before t is in use (the first block has none: treated as used). */
static inline int hk_tag_prev_used(const hk_tag_t *t) { return t->left == 0 || hk_tag_used(hk_tag_prev(t)); }

/* The request a used block was handed out for (the usable size below level 2, which does not store it). */
static inline size_t hk_tag_requested(const hk_tag_t *t)
{
#if HK_CANARIES
    return t->requested;
#else
    return hk_tag_usable(t);
#endif
}

/* Write t's own tag and tell its right neighbour its size: both copies of the size agree. */
static inline void hk_tag_write(hk_tag_t *t, size_t size, unsigned used)
{
    HK_ASSERT(size % HK_TAG_UNIT == 0 && size / HK_TAG_UNIT <= HK_TAG_MAX_UNITS);
    t->size_used = (hk_tag_word_t)((size / HK_TAG_UNIT) << 1 | used);
    hk_tag_at((uintptr_t)t + size)->left = (hk_tag_word_t)(size / HK_TAG_UNIT);
}

/*
 * Level 2: a used block's canary fills the bytes after its request; a free
 * block's poison fills its payload after the links.
 */
static inline void hk_tag_arm_canary(hk_tag_t *t, size_t requested)
{
#if HK_CANARIES
    t->requested = (uint32_t)requested;
    hk_fill((unsigned char *)hk_tag_payload(t) + requested, hk_tag_next(t), HK_CANARY_BYTE);
#else
    (void)t;
    (void)requested;
#endif
}

static inline int hk_tag_canary_intact(const hk_tag_t *t)
{
#if HK_CANARIES
    return t->requested + HK_CANARY_ROOM <= hk_tag_usable(t) &&
           hk_filled((const unsigned char *)hk_tag_payload(t) + t->requested, hk_tag_next(t), HK_CANARY_BYTE);
#else
    (void)t;
    return 1;
#endif
}

static inline void *hk_tag_poison_start(const hk_tag_t *t) { return hk_tag_links(t) + 1; }

/* Level 2: poison free block t's payload after its links. */
static inline void hk_tag_poison(hk_tag_t *t)
{
#if HK_CANARIES
    hk_fill(hk_tag_poison_start(t), hk_tag_next(t), HK_POISON_BYTE);
#else
    (void)t;
#endif
}

/*
 * Level 2: poison [from, to), the bytes that join a free block's payload
 * when a block is freed (all of it: its tag too, which is then no block's)
 * or merged away (its tag and links). Only the new bytes: the rest of a
 * free neighbour is poisoned already, so freeing costs the freed block's
 * size, not the merged one's.
 */
static inline void hk_tag_poison_range(void *from, const void *to)
{
#if HK_CANARIES
    hk_fill(from, to, HK_POISON_BYTE);
#else
    (void)from;
    (void)to;
#endif
}

/* Level 2: the poison of free block t is intact up to end (a write after free otherwise). */
static inline int hk_tag_poison_intact_upto(const hk_tag_t *t, const void *end)
{
#if HK_CANARIES
    return hk_filled(hk_tag_poison_start(t), end, HK_POISON_BYTE);
#else
    (void)t;
    (void)end;
    return 1;
#endif
}

static inline int hk_tag_poison_intact(const hk_tag_t *t) { return hk_tag_poison_intact_upto(t, hk_tag_next(t)); }

/*
 * Gross block size for a request that some block could hold (see
 * hk_tag_gross). Level 2 keeps HK_CANARY_ROOM after every request.
 */
static inline size_t hk_tag_gross_of(size_t requested)
{
    size_t gross = (requested + HK_TAG_HDR + HK_CANARY_ROOM + (HK_ALIGN - 1u)) & ~(size_t)(HK_ALIGN - 1u);
    HK_ASSERT(requested <= HK_TAG_MAX_BLOCK - HK_TAG_HDR - HK_CANARY_ROOM);
    return gross < HK_TAG_MIN_BLOCK ? HK_TAG_MIN_BLOCK : gross;
}

/* Gross block size for any request, or 0 if no block could ever hold it. */
static inline size_t hk_tag_gross(size_t requested)
{
    return requested > HK_TAG_MAX_BLOCK - HK_TAG_HDR - HK_CANARY_ROOM ? 0 : hk_tag_gross_of(requested);
}

/* Inside the span, where a tag may start? (a tag sits HK_TAG_HDR short of an alignment boundary) */
static inline int hk_tag_placed(const hk_tag_span_t *span, const hk_tag_t *t)
{
    return (uintptr_t)t >= (uintptr_t)span->first && (uintptr_t)t < (uintptr_t)span->sentinel &&
           ((uintptr_t)t + HK_TAG_HDR) % HK_ALIGN == 0;
}

/*
 * The constant-time structural checks of one block, what an operation runs
 * on every block it is about to change (HK_CHECKS). Right: its size is
 * possible (at least `least` where a block is about to be cut to that) and
 * its right neighbour's left field agrees with it. Left: its left
 * neighbour's size agrees with its left field.
 */
static inline int hk_tag_right_sound_min(const hk_tag_span_t *span, const hk_tag_t *t, size_t least)
{
    size_t size = hk_tag_size(t);
    return size >= least && size <= (size_t)((uintptr_t)span->sentinel - (uintptr_t)t) &&
           hk_tag_at((uintptr_t)t + size)->left == t->size_used >> 1;
}

static inline int hk_tag_right_sound(const hk_tag_span_t *span, const hk_tag_t *t)
{
    return hk_tag_right_sound_min(span, t, HK_TAG_MIN_BLOCK);
}

static inline int hk_tag_left_sound(const hk_tag_span_t *span, const hk_tag_t *t)
{
    if (t->left == 0) {
        return t == span->first;
    }
    return hk_tag_left_size(t) <= (size_t)((uintptr_t)t - (uintptr_t)span->first) &&
           hk_tag_prev(t)->size_used >> 1 == t->left;
}

static inline int hk_tag_sound(const hk_tag_span_t *span, const hk_tag_t *t)
{
    return hk_tag_right_sound(span, t) && hk_tag_left_sound(span, t);
}

/* A free-list link is sound: NULL, or a free block of the span. */
static inline int hk_tag_link_sound(const hk_tag_span_t *span, const hk_tag_t *t)
{
    return t == NULL || (hk_tag_placed(span, t) && !hk_tag_used(t));
}

/*
 * Lay out a span inside [lo, end) (lo <= end, the end clamped to the
 * address space as hk_arena_end does): one free block covering it and the
 * sentinel. HK_ETOOSMALL if not even one block fits, HK_ETOOBIG if the
 * block would be larger than max_span (the allocator's limit, at most
 * HK_TAG_MAX_BLOCK): the whole arena is used or none of it.
 */
HK_INTERNAL hk_status_t hk_tag_span_init(hk_tag_span_t *span, uintptr_t lo, uintptr_t end, size_t max_span);

/* The bytes of a span's blocks: its capacity. */
static inline size_t hk_tag_span_bytes(const hk_tag_span_t *span)
{
    return (size_t)((uintptr_t)span->sentinel - (uintptr_t)span->first);
}

/*
 * The error path of hk_tag_lookup: report why ptr is not a sound used block
 * of the span and return NULL, or, where the only fault is the right
 * neighbour's copy of the block's size, mend it and return the block.
 */
HK_INTERNAL hk_tag_t *hk_tag_refuse(hk_heap_t *heap, const hk_tag_span_t *span, const void *ptr);

/*
 * Resolve a pointer handed to free/realloc/usable_size to its used block,
 * checking it and its neighbours (HK_CHECKS) and its canary (HK_CANARIES).
 * Returns NULL after reporting the misuse through heap; NULL for NULL.
 */
HK_HOT hk_tag_t *hk_tag_lookup(hk_heap_t *heap, const hk_tag_span_t *span, const void *ptr)
{
    hk_tag_t *t = hk_tag_of(ptr);
    if (ptr == NULL) {
        return NULL; /* the direct calls take free(NULL) and usable_size(NULL) as no-ops */
    }
#if HK_CHECKS
    if ((uintptr_t)ptr - (uintptr_t)hk_tag_payload(span->first) >=
            (uintptr_t)span->sentinel - (uintptr_t)span->first ||
        (uintptr_t)ptr % HK_ALIGN != 0 || !hk_tag_used(t) || !hk_tag_sound(span, t) || !hk_tag_canary_intact(t)) {
        return hk_tag_refuse(heap, span, ptr);
    }
#else
    (void)heap;
    (void)span;
    HK_ASSUME(t != NULL); /* misuse is undefined below level 1; this spares callers a test of ptr against HK_TAG_HDR */
#endif
    return t;
}

/*
 * How an allocator files free blocks, for the code shared below. The heap
 * argument is the allocator's control block (it starts with its hk_heap_t).
 * Both keep stats.free_bytes (and free_blocks, where the allocator counts
 * rather than derives it): a block counts as free while it is filed. The
 * shared code counts every split and merge it makes, so an allocator may
 * derive its free-block count from those.
 */
typedef struct hk_tag_lists {
    /* take a listed free block off its list; 0 if its links are damaged (reported, left alone) */
    int (*detach)(hk_heap_t *heap, hk_tag_t *b);
    void (*file)(hk_heap_t *heap, hk_tag_t *b); /* put free block b on its list */
} hk_tag_lists_t;

/*
 * Turn used block b into a free block merged with its free physical
 * neighbours (detached from their lists), its new bytes poisoned at level
 * 2; returns the
 * merged block, on no list, for the caller to file. A neighbour that fails
 * its structural check or whose links are damaged is reported and not merged.
 */
HK_INTERNAL hk_tag_t *hk_tag_coalesce(hk_heap_t *heap, const hk_tag_span_t *span, const hk_tag_lists_t *lists, hk_tag_t *b);

/* Cut block b to size bytes when the rest can form a block of its own; the rest is coalesced and filed. */
HK_INTERNAL void hk_tag_trim(hk_heap_t *heap, const hk_tag_span_t *span, const hk_tag_lists_t *lists, hk_tag_t *b, size_t size);

/*
 * Resize used block b in place to hold `requested` bytes: shrink, or grow
 * into a free successor. Returns 0, with nothing changed, where it cannot.
 */
HK_INTERNAL int hk_tag_resize(hk_heap_t *heap, const hk_tag_span_t *span, const hk_tag_lists_t *lists, hk_tag_t *b,
                  size_t requested);

/*
 * Fill in the statistics a tagged heap derives instead of counting: live
 * blocks, usable bytes (the requests at level 2, where usable_size is the
 * request), and the peak.
 */
static inline void hk_tag_derive_stats(hk_stats_t *s)
{
    s->used_blocks = s->alloc_count - s->free_count;
#if HK_CANARIES
    s->used_granted = s->used_requested;
#else
    s->used_granted = s->capacity - s->free_bytes - s->used_blocks * HK_TAG_HDR;
    s->used_requested = s->used_granted;
#endif
    s->largest_free = 0;
    s->smallest_free = 0;
}

/* usable_size of a used block: the request at level 2 (the rest is canary), else all of it. */
static inline size_t hk_tag_usable_size(const hk_tag_t *t)
{
#if HK_CANARIES
    return t->requested;
#else
    return hk_tag_usable(t);
#endif
}

/* Visit every block of the span. */
HK_INTERNAL void hk_tag_walk(const hk_tag_span_t *span, hk_walk_fn visit, void *ctx);

/*
 * Check the physical chain, and the counters in heap->stats and the free
 * block count against it (so the caller need only match its free lists to
 * that count). merged: two free neighbours are an error.
 */
HK_INTERNAL hk_check_t hk_tag_check(const hk_heap_t *heap, const hk_tag_span_t *span, int merged, size_t free_blocks);

#endif
