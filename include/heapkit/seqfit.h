/* SPDX-License-Identifier: MIT */
/*
 * seqfit: sequential fits over an address-ordered free list with boundary
 * tags (first, next, best or worst fit, chosen at init). See src/seqfit.c.
 */
#ifndef HEAPKIT_SEQFIT_H
#define HEAPKIT_SEQFIT_H

#include "heapkit/heapkit.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum hk_seqfit_policy {
    HK_SEQFIT_FIRST = 0, /* lowest address that fits: FreeRTOS heap_4's placement */
    HK_SEQFIT_NEXT = 1,  /* first fit resumed where the last search stopped */
    HK_SEQFIT_BEST = 2,  /* smallest block that fits */
    HK_SEQFIT_WORST = 3  /* largest free block */
} hk_seqfit_policy_t;

/*
 * HK_SEQFIT_PAPER_COUNTERS (default 0): 1 keeps the fits-cse3320 seed's
 * counters below and declares hk_seqfit_get_counters(). They cost every
 * malloc and in-place resize a few loads, stores and a compare, for figures
 * only the seed's paper reports, so the library leaves them out; the lab's
 * replay engine and seqfit's unit test compile src/seqfit.c with it set.
 * Every file that includes this header and src/seqfit.c must agree on it.
 */
#ifndef HK_SEQFIT_PAPER_COUNTERS
#define HK_SEQFIT_PAPER_COUNTERS 0
#endif

#if HK_SEQFIT_PAPER_COUNTERS
/* The fits-cse3320 seed's counters. */
typedef struct hk_seqfit_counters {
    size_t reuses;      /* allocations served from the free list */
    size_t grows;       /* allocations that grew the used top of the arena, as sbrk would */
    size_t splits;
    size_t coalesces;
    size_t free_blocks; /* blocks on the free list now (the untouched top excluded) */
    size_t requested;   /* bytes requested by all successful allocations */
    size_t max_heap;    /* high-water mark of the used top, in bytes from the arena start */
} hk_seqfit_counters_t;
#endif

typedef struct hk_seqfit hk_seqfit_t;

/* Returns the heap, placed at the start of arena, or NULL with *status set. */
hk_seqfit_t *hk_seqfit_init(void *arena, size_t size, hk_seqfit_policy_t policy, hk_status_t *status);
hk_heap_t *hk_seqfit_heap(hk_seqfit_t *heap);
const char *hk_seqfit_policy_name(hk_seqfit_policy_t policy);

void *hk_seqfit_malloc(hk_seqfit_t *heap, size_t size);
void *hk_seqfit_aligned_alloc(hk_seqfit_t *heap, size_t alignment, size_t size);
/* Resize in place (ptr not NULL, size not 0): ptr, or NULL with nothing changed. hk_realloc() moves. */
void *hk_seqfit_resize(hk_seqfit_t *heap, void *ptr, size_t size);
void hk_seqfit_free(hk_seqfit_t *heap, void *ptr);
size_t hk_seqfit_usable_size(hk_seqfit_t *heap, const void *ptr);
void hk_seqfit_get_stats(hk_seqfit_t *heap, hk_stats_t *out);
#if HK_SEQFIT_PAPER_COUNTERS
void hk_seqfit_get_counters(const hk_seqfit_t *heap, hk_seqfit_counters_t *out);
#endif
void hk_seqfit_walk(hk_seqfit_t *heap, hk_walk_fn visit, void *ctx);
hk_check_t hk_seqfit_check(hk_seqfit_t *heap);
int hk_seqfit_owns(const hk_seqfit_t *heap, const void *ptr);

#ifdef __cplusplus
}
#endif

#endif
