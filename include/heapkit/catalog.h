/* SPDX-License-Identifier: MIT */
/*
 * The catalog: every ready-made allocator configuration, by name ("tlsf",
 * "seqfit-first", "buddy-lazy", ...). Tests, fuzzers, the lab and the ports
 * pick allocators from it, so a configuration is defined once. An entry
 * builds a heap in a caller-supplied arena and says what a caller may expect
 * of it.
 */
#ifndef HEAPKIT_CATALOG_H
#define HEAPKIT_CATALOG_H

#include <stddef.h>

#include "heapkit/heapkit.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Freeing a block makes its memory available again (bump: not until reset). */
#define HK_CATALOG_RECLAIMS 0x1u
/* stats.used_requested is the exact sum of requested sizes (buddy: it equals used_granted). */
#define HK_CATALOG_EXACT_REQUESTED 0x2u
/*
 * Freeing every block gives back the heap init made (same blocks, same
 * largest free block). Allocators that keep freed blocks on free lists
 * without merging them (most dmm presets) reclaim without restoring.
 */
#define HK_CATALOG_RESTORES 0x4u

typedef struct hk_catalog_entry {
    const char *name;
    /* Build the heap at the start of arena; NULL with *status set on failure. */
    hk_heap_t *(*make)(void *arena, size_t size, hk_status_t *status);
    unsigned caps; /* HK_CATALOG_* */
    /* Largest request that can ever succeed (SIZE_MAX: only the arena limits it). */
    size_t max_request;
    /*
     * Largest alignment hk_aligned_alloc is sure to honour (on a heap with
     * room); above HK_ALIGN means ops->aligned_alloc is not NULL. Larger
     * alignments may still succeed.
     */
    size_t max_align;
    /* Forget every block at once (NULL where the allocator has no reset). */
    void (*reset)(hk_heap_t *heap);
} hk_catalog_entry_t;

/* Number of entries, and entry i (NULL when i >= count). */
size_t hk_catalog_count(void);
const hk_catalog_entry_t *hk_catalog_at(size_t i);

/* The entry called name, or NULL. */
const hk_catalog_entry_t *hk_catalog_find(const char *name);

#ifdef __cplusplus
}
#endif

#endif
