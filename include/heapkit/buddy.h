/* SPDX-License-Identifier: MIT */
/*
 * buddy: binary buddy system (Knuth) with optional lazy coalescing
 * (DELAY-2, Barkley & Lee). See src/buddy.c for the algorithm and bounds.
 *
 * Blocks are min_block * 2^k bytes and carry no header: the payload is the
 * block start, and a block of size s >= the base alignment is aligned to s.
 * The state of record is out of band: one control byte per min_block
 * ("atom") just below the block area, plus hk_buddy_t and its list
 * sentinels at the start of the arena. Any arena size and alignment is used
 * in full: the block area is split into several top-level blocks (the
 * binary decomposition of its size).
 *
 * Guarantees (n = atoms; top = log2 n, at most HK_BUDDY_ORDERS - 1):
 *   malloc: one bit scan, one checked pop, at most top splits.
 *   free:   at most top merges, each a checked unlink.
 *   Lazy mode (cfg->lazy): freed blocks may stay "locally free" (parked,
 *   not coalesced) by DELAY-2's rule; they count as free in the statistics,
 *   walk() and check(). A free merges at most two chains; an allocation
 *   that finds nothing merges at most HK_BUDDY_LAZY_FLUSH (1) parked block
 *   per call before it fails, so no call costs more than a plain buddy's
 *   free plus malloc. Such a request may fail where merging every parked
 *   block would have served it; each failing call merges one more. Once
 *   every block is freed no block is parked and the heap is fully
 *   coalesced again.
 *
 * Overhead and what each HK_HARDENING level detects (heapkit.h):
 *   0  no checks; usable_size is the block size.
 *   1  (default) constant-time checks, no per-block bytes: foreign,
 *      interior, double frees and damaged control bytes of pointers handed
 *      in are reported and change nothing; every free-list node a call takes
 *      or writes through is checked against the control bytes and its back
 *      links, so a stray write into a free block's links (an overflow from
 *      the block below, a write after free) is caught before that block is
 *      handed out or merged: reported as HK_ERR_CORRUPT, the block taken out
 *      of service, the list rebuilt from the control bytes. An overflow into
 *      a used neighbour hits no allocator state and is not seen.
 *   2  level 1 plus HK_CANARY_ROOM + sizeof(size_t) bytes per block (the
 *      requested size is kept in the block's last word): usable_size is the
 *      requested size (malloc(0) is served as malloc(1)), a canary after it
 *      is checked on free and realloc, and free blocks are poisoned and
 *      checked when handed out. O(block size) per call.
 *   3  level 2 and a full check() around every uniform call.
 *
 * Statistics: used_requested = used_granted (what usable_size reports);
 * peak_used = capacity - min_ever_free at levels 0 and 1 (gross and usable
 * sizes agree there), the high-water mark of used_granted at level 2. Read
 * them with get_stats: the handle's own stats keep
 * only free_bytes, min_ever_free, used_granted and the counters, the rest
 * (used/free block counts, used_requested, peak_used) is derived there.
 */
#ifndef HEAPKIT_BUDDY_H
#define HEAPKIT_BUDDY_H

#include "heapkit/heapkit.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Default smallest block in bytes (a power of two, at least two pointers and HK_ALIGN). */
#ifndef HK_BUDDY_MIN_BLOCK
#define HK_BUDDY_MIN_BLOCK 16
#endif

/*
 * Number of block orders, at most 32 (one bit each in a 32-bit map). Blocks
 * never exceed min_block << (HK_BUDDY_ORDERS - 1) bytes; a larger arena gets
 * several top-level blocks of that size. The list sentinels (two words per
 * order, twice in lazy mode, plus a slack word per order) are sized for the
 * orders the arena can use, at most this many.
 */
#ifndef HK_BUDDY_ORDERS
#define HK_BUDDY_ORDERS 32
#endif

/*
 * Alignment of the block area's base address: the larger of this and
 * min_block (a power of two, at least HK_ALIGN). aligned_alloc honours any
 * alignment the base address happens to satisfy and fails above that.
 */
#ifndef HK_BUDDY_BASE_ALIGN
#define HK_BUDDY_BASE_ALIGN 64
#endif

typedef struct hk_buddy_config {
    size_t min_block; /* power of two, at least two pointers and HK_ALIGN; 0 selects HK_BUDDY_MIN_BLOCK */
    int lazy;         /* nonzero: DELAY-2 lazy coalescing */
} hk_buddy_config_t;

typedef struct hk_buddy hk_buddy_t;

/* cfg may be NULL for the defaults. Returns NULL with *status set on failure. */
hk_buddy_t *hk_buddy_init(void *arena, size_t size, const hk_buddy_config_t *cfg, hk_status_t *status);
hk_heap_t *hk_buddy_heap(hk_buddy_t *heap);

void *hk_buddy_malloc(hk_buddy_t *heap, size_t size);
void *hk_buddy_aligned_alloc(hk_buddy_t *heap, size_t alignment, size_t size);
/* Resize in place (ptr not NULL, size not 0): ptr, or NULL with nothing changed. hk_realloc() moves. */
void *hk_buddy_resize(hk_buddy_t *heap, void *ptr, size_t size);
void hk_buddy_free(hk_buddy_t *heap, void *ptr);
size_t hk_buddy_usable_size(hk_buddy_t *heap, const void *ptr);
void hk_buddy_get_stats(hk_buddy_t *heap, hk_stats_t *out);
void hk_buddy_walk(hk_buddy_t *heap, hk_walk_fn visit, void *ctx);
hk_check_t hk_buddy_check(hk_buddy_t *heap);
int hk_buddy_owns(const hk_buddy_t *heap, const void *ptr);

#ifdef __cplusplus
}
#endif

#endif
