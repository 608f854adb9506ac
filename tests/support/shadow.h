/* SPDX-License-Identifier: MIT */
/*
 * The shadow model: drives any catalog heap through the uniform API and
 * checks every answer against an independent record of the live blocks.
 *
 * What it checks, after every operation:
 *   - returned pointers are aligned (HK_ALIGN, or the requested alignment),
 *     lie inside the arena, and [ptr, ptr + usable_size) overlaps no other
 *     live block; usable_size >= the request;
 *   - every live block holds a fill pattern unique to it over its whole
 *     requested size; the pattern is verified on free and realloc (realloc
 *     must preserve min(old, new) bytes) and calloc memory must be zero;
 *   - hk_get_stats against the model: used_blocks, used_granted,
 *     used_requested (exact where the catalog says so, else equal to
 *     used_granted), alloc/free/realloc/fail/error counts, peak_used and
 *     min_ever_free (exact, or within the bounds a realloc's transient
 *     state allows), capacity constant, and a free's free_bytes gain equal
 *     to the gross size the block took when allocated;
 *   - requests larger than the arena or the entry's max_request return NULL,
 *     and small requests on an empty heap succeed.
 * Every check_every operations (shadow_config_t; 1 = after every operation)
 * it also requires hk_check() == 0 and walks the heap: blocks in address
 * order, inside the arena, sizes summing to capacity, free sizes to
 * free_bytes, free count/largest/smallest matching stats, and the used
 * blocks exactly the live ones (payload, usable size, gross size).
 * Whenever the heap empties, and at the end after freeing everything, stats
 * geometry and the walk must equal the state right after init (allocators
 * with HK_CATALOG_RESTORES; the others must pass hk_check and the walk).
 *
 * The first failure prints one message (allocator, operation index, seed,
 * operation, what differed) to stderr; from then on every call returns
 * nonzero without touching the heap.
 */
#ifndef HEAPKIT_TESTS_SHADOW_H
#define HEAPKIT_TESTS_SHADOW_H

#include <stddef.h>
#include <stdint.h>

#include "heapkit/catalog.h"

/*
 * check_every: hk_check and the walk comparison run every this many
 * operations; the cheaper checks run after every one. Both are O(blocks)
 * (buddy: O(atoms)), so on a 256 KiB arena every operation costs 20-36 us
 * with 1 and 2.6-6.5 us with 16 (measured on the CI machine, gcc -O2,
 * 100k operations of test_property). 16 is the default; the fuzzers and
 * the property_full_* tests use 1.
 */
#define SHADOW_CHECK_EVERY_DEFAULT 16u

typedef struct shadow_config {
    size_t arena_size;
    size_t arena_offset;        /* misalign the arena base by this many bytes */
    unsigned check_every;       /* 0 selects SHADOW_CHECK_EVERY_DEFAULT */
    unsigned long long seed;    /* only echoed in failure messages */
} shadow_config_t;

typedef struct shadow shadow_t;

/* Totals for the summary line. */
typedef struct shadow_summary {
    unsigned long long ops;
    unsigned long long allocs;   /* successful malloc/calloc/aligned/realloc(NULL) */
    unsigned long long frees;    /* free and realloc(p, 0) */
    unsigned long long reallocs; /* successful realloc(p, n > 0) */
    unsigned long long failures; /* NULL returns, expected or not */
    unsigned long long resets;
    unsigned long long empties;  /* times the heap was verified back at its initial state */
} shadow_summary_t;

/* Index meaning "no block" for shadow_realloc (realloc(NULL, n)) and shadow_free (free(NULL)). */
#define SHADOW_NONE ((size_t)-1)

/* NULL (after printing why) when the arena cannot be set up. */
shadow_t *shadow_new(const hk_catalog_entry_t *entry, const shadow_config_t *cfg);
void shadow_delete(shadow_t *s);

hk_heap_t *shadow_heap(const shadow_t *s);
size_t shadow_live(const shadow_t *s);
/* Requested size of live block i (blocks are kept in address order). */
size_t shadow_live_size(const shadow_t *s, size_t i);
int shadow_failed(const shadow_t *s);
void shadow_get_summary(const shadow_t *s, shadow_summary_t *out);

/* Each returns 0 when the heap behaved, nonzero once a check has failed. */
int shadow_malloc(shadow_t *s, size_t size);
int shadow_calloc(shadow_t *s, size_t count, size_t size);
int shadow_aligned(shadow_t *s, size_t alignment, size_t size);
int shadow_realloc(shadow_t *s, size_t index, size_t size);
int shadow_free(shadow_t *s, size_t index);
/* hk_usable_size of live block i, and of NULL, against the record. */
int shadow_probe(shadow_t *s, size_t index);
/* Forget every block through the entry's reset hook (entries without one: no-op). */
int shadow_reset(shadow_t *s);
/* Free every live block (or reset, for non-reclaiming entries) and verify the initial state. */
int shadow_drain(shadow_t *s);
/* Full check: hk_check, walk comparison. */
int shadow_verify(shadow_t *s);

/*
 * Decode bytes into operations and run them on a fresh heap, then drain.
 * The first byte picks the arena (arena_size down to arena_size / 8,
 * misaligned by up to HK_ALIGN - 1 bytes); the full check runs after every
 * operation. Returns 0 or nonzero as above. Used by the fuzzers.
 */
int shadow_run_bytes(const hk_catalog_entry_t *entry, const uint8_t *data, size_t size, size_t arena_size);

#endif
