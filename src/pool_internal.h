/* SPDX-License-Identifier: MIT */
/*
 * What the FCTMA pool's three sources share: the block header, the pool and
 * set structs, and the pool's operations the other two build on. The
 * dependencies go one way: pool.c needs nothing of poolset.c or
 * pool_sync.c, each of which needs pool.c alone, so a program that uses
 * one pool links neither of them.
 *
 * pool.c keeps a set's free bytes and avail bit current when one of its
 * pools takes or gives a block on the general paths, so it knows the set's
 * struct; it reaches it only through a pool's set field, which only
 * hk_poolset_init() fills in. Below level 2 a lone pool's malloc and free
 * reach the general paths (and with them the set's bookkeeping and the sync
 * hooks) only through its general field, which only hk_poolset_init() and
 * hk_pool_set_sync() fill in: a program with one plain pool links neither.
 *
 * The helpers the fast paths of both the pool and the set use are static
 * inline here, so neither pays a call for them; the rest is HK_INTERNAL.
 */
#ifndef HEAPKIT_POOL_INTERNAL_H
#define HEAPKIT_POOL_INTERNAL_H

#include "heapkit/pool.h"
#include "hk_internal.h"

typedef struct pool_hdr {
    uintptr_t owner; /* the owning pool's address | TAG_* */
    size_t word;     /* used: the requested size; free: the next free block's index + 1, 0: none */
} pool_hdr_t;

#define POOL_HDR ((size_t)sizeof(pool_hdr_t))
#define TAG_MASK ((uintptr_t)7u)
#define TAG_USED ((uintptr_t)1u)
#define TAG_FREE ((uintptr_t)2u)
#define TAG_DEAD ((uintptr_t)3u)
#define TAG_UNTOUCHED ((uintptr_t)4u)
#define TAG_PRISTINE (TAG_FREE | TAG_UNTOUCHED)
#define POOL_MAGIC ((uintptr_t)0x9001F00Du)
/*
 * Level 2's room for the canary, whole HK_ALIGN units added to the stride,
 * so a block takes the same largest request at every level.
 */
#define CANARY_ROOM ((HK_CANARY_ROOM + HK_ALIGN - 1u) & ~(size_t)(HK_ALIGN - 1u))

/* For the general paths the fast ones branch to: out of line, so the fast ones keep few registers. */
#if defined(__GNUC__) || defined(__clang__)
#define POOL_SLOW_PATH __attribute__((noinline, cold))
#else
#define POOL_SLOW_PATH
#endif

/* The general paths of malloc and free (hk_pool_take, hk_pool_give), for a pool of a set or with sync. */
typedef struct pool_general {
    void *(*take)(hk_pool_t *p, size_t size, uint32_t timeout_ticks, int counted);
    int (*give)(hk_pool_t *p, void *ptr);
} pool_general_t;

HK_STATIC_ASSERT(sizeof(pool_hdr_t) == 2 * sizeof(void *), pool_header_is_two_words);
HK_STATIC_ASSERT(sizeof(size_t) == sizeof(uintptr_t), a_link_is_a_word);
HK_STATIC_ASSERT(HK_ALIGN > TAG_MASK, the_tag_fits_below_an_aligned_pool_address);
HK_STATIC_ASSERT(HK_POOLSET_MAX_CLASSES < 32, a_class_mask_has_a_bit_above_the_last_class);

struct hk_pool {
    hk_heap_t heap;     /* stats: capacity and the event counters; the rest is derived in get_stats */
    /* The fast paths' fields, in the order they load them. */
    size_t fast_limit;  /* max_request + 1, or 0 to send every malloc down the general path */
    size_t head;        /* first free block's index + 1, 0: the list is empty */
    uintptr_t pbase;    /* payload of block "index + 1 == 0": block i's payload is pbase + (i + 1) * stride */
    size_t stride;      /* header + payload, a multiple of HK_ALIGN */
    size_t count;
    uintptr_t first;    /* block 0's payload */
    size_t fast_span;   /* span, or 0 to send every free down the general path */
    size_t max_request; /* largest request a block takes: its payload, less CANARY_ROOM */
    size_t span;        /* count * stride */
    size_t lost;        /* blocks taken out of service (DEAD) */
    uintptr_t magic;    /* POOL_MAGIC ^ the pool's address while it lives */
    size_t block_size;  /* as created: what hk_pool_alloc requests */
    uint32_t class_bit; /* in a set: this class's bit in the set's avail mask */
    hk_heap_t *backing; /* what hk_pool_create took the pool from; NULL for hk_pool_init's and a set's */
    hk_poolset_t *set;  /* owning set, whose free bytes follow this pool's, or NULL */
    const hk_pool_sync_t *sync;
    void *sem;
    const pool_general_t *general; /* NULL: a lone pool without sync, whose slow paths need neither */
};

/*
 * Sizes with k leading zeros, [2^(B-1-k), 2^(B-k) - 1] for B bits (size 0
 * takes size 1's). Classes from the first whose max_request reaches the octave's top
 * fit them all: mask has their bits (none when no class does; the bits
 * above the last class are never set in avail). lim is the max_request of
 * the class below them: a size up to lim fits that one too.
 */
typedef struct pool_bucket {
    size_t lim;
    uint32_t mask;
} pool_bucket_t;

struct hk_poolset {
    hk_heap_t heap;   /* stats: capacity, free_bytes, min_ever_free and the event counters */
    uint32_t avail;   /* bit c: class c's free list is not empty */
    size_t n;
    uintptr_t lo;     /* first pool's blocks */
    size_t span;      /* up to the end of the last pool's blocks */
    uintptr_t ctl;    /* first pool's struct: every pool struct starts in [ctl, ctl + ctl_span] */
    size_t ctl_span;
    hk_pool_t *pools[HK_POOLSET_MAX_CLASSES]; /* by increasing block size, which is also address order */
    pool_bucket_t bucket[sizeof(size_t) * 8u];
};

/*
 * Where block 0's header starts, from the pool struct: so that its payload
 * is HK_ALIGN-aligned, like every hk_malloc result.
 */
#define POOL_BLOCKS_AT (hk_round_up(sizeof(hk_pool_t) + POOL_HDR, HK_ALIGN) - POOL_HDR)

/* ---- blocks and headers ---- */

static inline uintptr_t magic_of(const hk_pool_t *p) { return POOL_MAGIC ^ (uintptr_t)p; }
static inline uintptr_t tagged(const hk_pool_t *p, uintptr_t tag) { return (uintptr_t)p | tag; }
/* The header's tag if its owner word names p; otherwise a value with bits above TAG_MASK. */
static inline uintptr_t tag_of(const hk_pool_t *p, const pool_hdr_t *h) { return h->owner ^ (uintptr_t)p; }
static inline int tag_is_free(uintptr_t tag) { return (tag & ~TAG_UNTOUCHED) == TAG_FREE; }
/* The payload of the block whose index + 1 is e (0: none). */
static inline unsigned char *payload_at(const hk_pool_t *p, size_t e)
{
    return (unsigned char *)(p->pbase + e * p->stride);
}
static inline pool_hdr_t *hdr_of(const void *ptr) { return (pool_hdr_t *)((uintptr_t)ptr - POOL_HDR); }
static inline uintptr_t blocks_of(const hk_pool_t *p) { return p->first - POOL_HDR; }
static inline uintptr_t blocks_end(const hk_pool_t *p) { return blocks_of(p) + p->span; }
static inline int pool_owns(const hk_pool_t *p, const void *ptr) { return (uintptr_t)ptr - blocks_of(p) < p->span; }

/* Gross bytes per block, or 0 if that overflows. */
static inline size_t stride_for(size_t block_size)
{
    return block_size > SIZE_MAX - POOL_HDR - CANARY_ROOM - HK_ALIGN
               ? 0
               : hk_round_up(block_size + POOL_HDR, HK_ALIGN) + CANARY_ROOM;
}

/* Bytes a pool of count blocks of stride bytes takes, or 0 when stride or count is 0 or that overflows. */
static inline size_t pool_bytes(size_t stride, size_t count)
{
    return stride == 0 || count == 0 || count > (SIZE_MAX - POOL_BLOCKS_AT) / stride ? 0 : POOL_BLOCKS_AT + count * stride;
}

/* ---- the pool's operations that the set and the sync layer build on (pool.c) ---- */

/*
 * Make mem, HK_ALIGN-aligned and pool_bytes(stride, count) long, a lone
 * pool of count blocks of stride (stride_for(block_size)) bytes: the
 * struct, then every block threaded onto the free list in address order.
 * backing is where hk_pool_destroy() gives mem back, or NULL.
 */
HK_INTERNAL hk_pool_t *hk_pool_lay_out(void *mem, size_t block_size, size_t stride, size_t count, hk_heap_t *backing);
/* p's malloc and free take the general paths from now on: call after giving it a set or sync. */
HK_INTERNAL void hk_pool_go_general(hk_pool_t *p);

/* Take the head of p's free list, or NULL when there is none; damage found there is reported and contained. */
HK_INTERNAL pool_hdr_t *hk_pool_pop(hk_pool_t *p);
/* Hand out h, just popped from p, for a request of size bytes. */
HK_INTERNAL void *hk_pool_grant(hk_pool_t *p, pool_hdr_t *h, size_t size);
/* Put used block h back on p's free list. */
HK_INTERNAL void hk_pool_push(hk_pool_t *p, pool_hdr_t *h);
/* The used block of p that ptr names, or NULL with the misuse in *error. */
HK_INTERNAL pool_hdr_t *hk_pool_find_used(const hk_pool_t *p, const void *ptr, hk_error_t *error);
/* Used block h of p now holds a request of size bytes (at most max_request). */
HK_INTERNAL void hk_pool_resize_block(const hk_pool_t *p, pool_hdr_t *h, size_t size);

/*
 * The general paths of malloc and free, which take the sync's semaphore
 * and lock when one is attached (hk_pool_take waits up to timeout_ticks for
 * the semaphore; counted: count a failure, which no uniform call does).
 * hk_pool_give returns 0 or the misuse, reported.
 */
HK_INTERNAL void *hk_pool_take(hk_pool_t *p, size_t size, uint32_t timeout_ticks, int counted);
HK_INTERNAL int hk_pool_give(hk_pool_t *p, void *ptr);

/* Blocks on p's free list, from its headers: O(blocks handed out so far). */
HK_INTERNAL size_t hk_pool_free_blocks(const hk_pool_t *p);
/* The stats of p, derived from its counters and blocks. */
HK_INTERNAL void hk_pool_stats_of(const hk_pool_t *p, hk_stats_t *out);
HK_INTERNAL void hk_pool_walk_blocks(const hk_pool_t *p, hk_walk_fn visit, void *ctx);
HK_INTERNAL hk_check_t hk_pool_check_blocks(const hk_pool_t *p);

#endif
