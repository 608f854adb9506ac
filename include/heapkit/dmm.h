/* SPDX-License-Identifier: MIT */
/*
 * dmm: a configurable allocator for design-space exploration, after
 * Mamagkakis et al., "Reducing memory fragmentation in network applications
 * with dynamic memory allocators optimized for performance" (2006). One
 * config struct chooses the dedicated free lists, the general pool's fit
 * policy, the list ordering, and how much the allocator splits and
 * coalesces. See src/dmm.c for the algorithm and docs/dmm.md for the
 * presets that reproduce the paper's Table 1 (wince, winxp, lea, ose,
 * uclinux) and the paper's recommended shape (net).
 *
 * A generated header can hold a config as a C99 designated initializer:
 *
 *   static const hk_dmm_config_t cfg = {
 *       .fit = HK_DMM_FIT_FIRST, .order = HK_DMM_ORDER_LIFO,
 *       .split = 9, .coalesce = 9, .no_pool = 0, .class_round = 0,
 *       .pool_round = 0, .nlists = 2,
 *       .lists = {{16, 16}, {1476, 1476}}};
 *
 * or positionally, in the field order below (fit, order, split, coalesce,
 * no_pool, class_round, pool_round, nlists, lists). Every field is a plain
 * unsigned integer; zero-filled lists beyond nlists are ignored.
 */
#ifndef HEAPKIT_DMM_H
#define HEAPKIT_DMM_H

#include <stdint.h>

#include "heapkit/heapkit.h"

#ifdef __cplusplus
extern "C" {
#endif

/* How many dedicated free lists a config may name. */
#define HK_DMM_MAX_LISTS 16u

/* Largest request bound (list hi) a dedicated list may have. */
#define HK_DMM_LIST_MAX 32768u

/* Largest pool_round. */
#define HK_DMM_ROUND_MAX 32768u

/*
 * Split and coalesce levels: 0 (never) to 9 (always). Level L in 1..8 acts
 * only on sizes of at least hk_dmm_level_threshold(L) = 2^(14-L) bytes:
 *
 *   level      0     1     2     3     4    5    6    7    8   9
 *   threshold  never 8192  4096  2048  1024 512  256  128  64  any
 *
 * split:    a found block larger than needed is split when the remainder
 *           (gross bytes) reaches the threshold and can form a block;
 * coalesce: a block freed to the general pool is merged with its free
 *           physical neighbours when its own gross size reaches the
 *           threshold (so low levels merge only big blocks, as Lea does).
 */
#define HK_DMM_LEVEL_NEVER 0u
#define HK_DMM_LEVEL_ALWAYS 9u

typedef enum hk_dmm_fit {
    HK_DMM_FIT_FIRST = 0, /* first block in list order that fits */
    HK_DMM_FIT_NEXT = 1,  /* first fit resumed where the last pool search stopped */
    HK_DMM_FIT_BEST = 2,  /* smallest block that fits (an exact fit ends the search) */
    HK_DMM_FIT_WORST = 3, /* largest block */
    HK_DMM_FIT_EXACT = 4  /* a block of exactly the gross size; else the top; else first fit */
} hk_dmm_fit_t;

typedef enum hk_dmm_order {
    HK_DMM_ORDER_LIFO = 0,   /* a freed block goes to the front of its list */
    HK_DMM_ORDER_FIFO = 1,   /* ... to the back */
    HK_DMM_ORDER_ADDRESS = 2 /* lists kept sorted by address */
} hk_dmm_order_t;

/*
 * A dedicated free list serves requests of lo..hi bytes (inclusive; lo == hi
 * makes an exact-size list). Lists must be sorted by lo and must not overlap.
 * Freed blocks are filed by size: a list holds the blocks whose gross size
 * one of its requests gets (src/dmm.c).
 */
typedef struct hk_dmm_range {
    uint32_t lo;
    uint32_t hi;
} hk_dmm_range_t;

typedef struct hk_dmm_config {
    unsigned fit;         /* hk_dmm_fit_t: the general pool's policy (dedicated lists: first fit) */
    unsigned order;       /* hk_dmm_order_t: every list, dedicated and pool */
    unsigned split;       /* 0..9, see HK_DMM_LEVEL_* */
    unsigned coalesce;    /* 0..9 */
    unsigned no_pool;     /* 1: only the dedicated lists and the top (OSE); needs split = coalesce = 0 */
    unsigned class_round; /* 1: a request routed to a list gets a block of the list's hi bytes */
    unsigned pool_round;  /* 0, or a power of two: gross sizes of pool requests round up to it (uClinux 4096) */
    unsigned nlists;      /* 0..HK_DMM_MAX_LISTS */
    hk_dmm_range_t lists[HK_DMM_MAX_LISTS];
} hk_dmm_config_t;

/* Why a config is refused (hk_dmm_validate); init reports any of them as HK_EINVAL. */
typedef enum hk_dmm_config_error {
    HK_DMM_CFG_OK = 0,
    HK_DMM_CFG_NULL,           /* no config */
    HK_DMM_CFG_FIT,            /* fit is not an hk_dmm_fit_t */
    HK_DMM_CFG_ORDER,          /* order is not an hk_dmm_order_t */
    HK_DMM_CFG_SPLIT,          /* split level above 9 */
    HK_DMM_CFG_COALESCE,       /* coalesce level above 9 */
    HK_DMM_CFG_NLISTS,         /* nlists above HK_DMM_MAX_LISTS */
    HK_DMM_CFG_RANGE,          /* a list with lo > hi, or hi above HK_DMM_LIST_MAX */
    HK_DMM_CFG_OVERLAP,        /* lists unsorted or overlapping */
    HK_DMM_CFG_POOL_ROUND,     /* pool_round not 0 or a power of two up to HK_DMM_ROUND_MAX */
    HK_DMM_CFG_NO_POOL_LISTS,  /* no_pool without any list */
    HK_DMM_CFG_NO_POOL_SPLIT,  /* no_pool with splitting or coalescing (nowhere to file the pieces) */
    HK_DMM_CFG_FLAG            /* no_pool or class_round not 0 or 1 */
} hk_dmm_config_error_t;

/*
 * Deterministic work counters: the same trace on the same config gives the
 * same figures on every machine, so exploration can use them as a cost.
 * (The live requested bytes are the caller's to count: below HK_HARDENING 2
 * a block does not remember its request.)
 */
typedef struct hk_dmm_counters {
    size_t examined;       /* free blocks looked at by list and pool searches */
    size_t insert_steps;   /* list nodes passed by address-ordered inserts */
    size_t splits;         /* blocks split (top carving excluded) */
    size_t coalesces;      /* merges of two neighbours */
    size_t list_hits;      /* allocations served from a dedicated list */
    size_t pool_hits;      /* ... from the general pool */
    size_t top_carves;     /* ... from the untouched top */
    size_t max_top;        /* high-water mark of the touched arena: bytes of blocks ever carved from the top */
} hk_dmm_counters_t;

typedef struct hk_dmm hk_dmm_t;

/* Check a config; HK_DMM_CFG_OK when hk_dmm_init would accept it. */
hk_dmm_config_error_t hk_dmm_validate(const hk_dmm_config_t *cfg);
const char *hk_dmm_config_error_name(hk_dmm_config_error_t error);

/* Threshold in bytes of a split/coalesce level: 0 for 9 (any), SIZE_MAX for 0 (never) and above 9. */
size_t hk_dmm_level_threshold(unsigned level);

/*
 * Named presets: "wince", "winxp", "lea", "ose", "uclinux" (the paper's
 * Table 1) and "net" (its recommended shape: lists for 16 and 1476 bytes,
 * first fit, full splitting and coalescing). NULL for an unknown name.
 */
const hk_dmm_config_t *hk_dmm_preset(const char *name);
/* Preset i by index (NULL when i is past the last), for listing them. */
const char *hk_dmm_preset_name(size_t i);

/* Returns the heap, placed at the start of arena, or NULL with *status set (HK_EINVAL for a bad config). */
hk_dmm_t *hk_dmm_init(void *arena, size_t size, const hk_dmm_config_t *cfg, hk_status_t *status);
hk_heap_t *hk_dmm_heap(hk_dmm_t *heap);
/* The config the heap runs (a copy made at init). */
const hk_dmm_config_t *hk_dmm_config(const hk_dmm_t *heap);

/* NULL when no block can be found (hk_malloc counts the failure; these direct calls count none). */
void *hk_dmm_malloc(hk_dmm_t *heap, size_t size);
/*
 * Resize in place (ptr not NULL, size not 0): ptr when size fits the
 * block's usable size (the rest is cut off by the split level), else NULL
 * with nothing changed. hk_realloc(hk_dmm_heap(heap), ...) moves the block.
 */
void *hk_dmm_resize(hk_dmm_t *heap, void *ptr, size_t size);
void hk_dmm_free(hk_dmm_t *heap, void *ptr);
size_t hk_dmm_usable_size(hk_dmm_t *heap, const void *ptr);
void hk_dmm_get_stats(hk_dmm_t *heap, hk_stats_t *out);
void hk_dmm_get_counters(const hk_dmm_t *heap, hk_dmm_counters_t *out);
void hk_dmm_walk(hk_dmm_t *heap, hk_walk_fn visit, void *ctx);
hk_check_t hk_dmm_check(hk_dmm_t *heap);
int hk_dmm_owns(const hk_dmm_t *heap, const void *ptr);

#ifdef __cplusplus
}
#endif

#endif
