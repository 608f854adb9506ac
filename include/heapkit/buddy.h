/*
 * buddy: binary buddy system (Knuth) with optional lazy coalescing
 * (DELAY-2, Barkley & Lee). See src/buddy.c for the algorithm and bounds.
 *
 * Blocks are min_block * 2^k bytes and carry no header: usable_size() is the
 * block size, the payload is the block start, and a block of size s >= the
 * base alignment is aligned to s. The control data is one byte per
 * min_block ("atom"), stored just below the block area, plus the hk_buddy_t
 * at the start of the arena. Because no size is recorded per block,
 * stats.used_requested always equals stats.used_granted.
 *
 * Any arena size and alignment is used in full: the block area is split into
 * several top-level blocks (the binary decomposition of its size).
 *
 * In lazy mode (cfg->lazy) freed blocks may stay "locally free" (not yet
 * coalesced); they count as free in the statistics, walk() and check(), and
 * are coalesced before any allocation would fail.
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
 * never exceed HK_BUDDY_MIN_BLOCK << (HK_BUDDY_ORDERS - 1) bytes; a larger
 * arena gets several top-level blocks of that size. Lowering it shrinks
 * hk_buddy_t by three words per order.
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
    size_t min_block; /* power of two; 0 selects HK_BUDDY_MIN_BLOCK */
    int lazy;         /* nonzero: DELAY-2 lazy coalescing */
} hk_buddy_config_t;

typedef struct hk_buddy hk_buddy_t;

/* cfg may be NULL for the defaults. Returns NULL with *status set on failure. */
hk_buddy_t *hk_buddy_init(void *arena, size_t size, const hk_buddy_config_t *cfg, hk_status_t *status);
hk_heap_t *hk_buddy_heap(hk_buddy_t *heap);

void *hk_buddy_malloc(hk_buddy_t *heap, size_t size);
void *hk_buddy_aligned_alloc(hk_buddy_t *heap, size_t alignment, size_t size);
void *hk_buddy_realloc(hk_buddy_t *heap, void *ptr, size_t size);
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
