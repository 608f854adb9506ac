/* SPDX-License-Identifier: MIT */
/*
 * gbuddy: the unequal-split buddy systems, Fibonacci (Hirschberg 1973;
 * Peterson & Norman, CACM 1977) and weighted (Shen & Peterson, CACM 1974).
 * See src/gbuddy.c for the algorithm and bounds. The binary buddy is
 * heapkit/buddy.h; this one is kept apart so that its code stays as it is.
 *
 * Block sizes, in atoms of min_block bytes:
 *   Fibonacci: 1, 2, 3, 5, 8, 13, ...  a block of size F(k) splits into
 *              F(k-1) (left) and F(k-2) (right); 2 splits into 1 + 1.
 *   weighted:  1, 2, 3, 4, 6, 8, 12, 16, ...  2^k splits into 3*2^(k-2) and
 *              2^(k-2), 3*2^k into 2^(k+1) and 2^k; 2 into 1 + 1, 3 into 2 + 1,
 *              4 into 3 + 1.
 * In both, a block's left part is the next smaller size. Blocks carry no
 * header: the state of record is two bytes per atom out of band (the head
 * byte: state and size index; the side byte: which part of its parent the
 * block is, and the same for its parent, Hinds' scheme, CACM 1975), plus
 * hk_gbuddy_t and one list sentinel per size at the start of the arena.
 * Any arena size is used in full, up to one atom short of a sum of sizes:
 * the block area is covered by several top-level blocks, the largest sizes
 * that fit first.
 *
 * Guarantees (s = sizes the arena uses, at most HK_GBUDDY_SIZES):
 *   malloc: a binary search over the sizes, one bit scan, one checked pop,
 *           at most s splits, each a checked push.
 *   free:   at most s merges, each a checked unlink.
 *   resize: in place when the size shrinks or stays (at most s splits);
 *           growing, hk_realloc moves the block.
 *   Blocks are aligned to min_block only (their starts are sums of unequal
 *   sizes): aligned_alloc above HK_ALIGN is not offered.
 *
 * HK_HARDENING as for the binary buddy (buddy.h): level 1 reports foreign,
 * interior and double frees and damaged head bytes of pointers handed in,
 * and checks every free-list node a call takes or writes through against
 * the head bytes and its back links (HK_ERR_CORRUPT: the block is taken out
 * of service and the list rebuilt); level 2 adds the requested size in the
 * block's last word, a canary after it and poisoned free blocks; level 3 a
 * full check() around every uniform call.
 */
#ifndef HEAPKIT_GBUDDY_H
#define HEAPKIT_GBUDDY_H

#include "heapkit/heapkit.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Default smallest block in bytes (a power of two, at least two pointers and HK_ALIGN). */
#ifndef HK_GBUDDY_MIN_BLOCK
#define HK_GBUDDY_MIN_BLOCK 16
#endif

/*
 * Number of block sizes, at most 32 (one bit each in a 32-bit map). The
 * largest block is size HK_GBUDDY_SIZES - 1: F(31) = 3,524,578 atoms
 * (Fibonacci) or 2^16 atoms (weighted); a larger arena gets several
 * top-level blocks.
 */
#ifndef HK_GBUDDY_SIZES
#define HK_GBUDDY_SIZES 32
#endif

typedef enum hk_gbuddy_kind { HK_GBUDDY_FIBONACCI = 0, HK_GBUDDY_WEIGHTED = 1 } hk_gbuddy_kind_t;

typedef struct hk_gbuddy_config {
    size_t min_block; /* power of two, at least two pointers and HK_ALIGN; 0 selects HK_GBUDDY_MIN_BLOCK */
    hk_gbuddy_kind_t kind;
} hk_gbuddy_config_t;

typedef struct hk_gbuddy hk_gbuddy_t;

/* cfg may be NULL for the defaults (Fibonacci). Returns NULL with *status set on failure. */
hk_gbuddy_t *hk_gbuddy_init(void *arena, size_t size, const hk_gbuddy_config_t *cfg, hk_status_t *status);
hk_heap_t *hk_gbuddy_heap(hk_gbuddy_t *heap);

void *hk_gbuddy_malloc(hk_gbuddy_t *heap, size_t size);
/* Resize in place (ptr not NULL, size not 0): ptr, or NULL with nothing changed. hk_realloc() moves. */
void *hk_gbuddy_resize(hk_gbuddy_t *heap, void *ptr, size_t size);
void hk_gbuddy_free(hk_gbuddy_t *heap, void *ptr);
size_t hk_gbuddy_usable_size(hk_gbuddy_t *heap, const void *ptr);
void hk_gbuddy_get_stats(hk_gbuddy_t *heap, hk_stats_t *out);
void hk_gbuddy_walk(hk_gbuddy_t *heap, hk_walk_fn visit, void *ctx);
hk_check_t hk_gbuddy_check(hk_gbuddy_t *heap);
int hk_gbuddy_owns(const hk_gbuddy_t *heap, const void *ptr);

#ifdef __cplusplus
}
#endif

#endif
