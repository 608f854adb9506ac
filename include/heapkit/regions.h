/* SPDX-License-Identifier: MIT */
/*
 * regions: one heap over several separate memory regions (FreeRTOS heap_5's
 * vPortDefineHeapRegions, or a heap that grows by mapping more memory).
 * Each region holds a sub-heap built by the caller's make function (a
 * catalog entry's make fits); the regions heap dispatches to them and adds
 * up their statistics. See src/regions.c.
 */
#ifndef HEAPKIT_REGIONS_H
#define HEAPKIT_REGIONS_H

#include "heapkit/heapkit.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct hk_regions hk_regions_t;

/* Builds a heap at the start of arena; NULL with *status set on failure (hk_catalog_entry_t.make). */
typedef hk_heap_t *(*hk_make_fn)(void *arena, size_t size, hk_status_t *status);

/* One region as added, and the sub-heap living in it. */
typedef struct hk_region_info {
    void *arena;
    size_t size;
    hk_heap_t *heap;
} hk_region_info_t;

/*
 * Bytes of control memory for a regions heap of max_regions regions (pass
 * at least this to hk_regions_init; HK_ALIGN - 1 more if mem may be
 * unaligned). The macro gives the same figure as a constant expression, for
 * static buffers.
 */
size_t hk_regions_footprint(size_t max_regions);
#define HK_REGIONS_FOOTPRINT(max_regions) (sizeof(hk_heap_t) + (5u + 3u * (size_t)(max_regions)) * sizeof(void *))

/*
 * A regions heap whose control data fills mem: as many region slots as fit.
 * It starts with no region (every malloc fails until one is added).
 * HK_EINVAL: mem or make is NULL; HK_ETOOSMALL: not even one slot fits.
 */
hk_regions_t *hk_regions_init(void *mem, size_t mem_size, hk_make_fn make, hk_status_t *status);
hk_heap_t *hk_regions_heap(hk_regions_t *regions);

/*
 * Build a sub-heap in [arena, arena + size) and add it. Regions are kept in
 * address order. HK_EINVAL: arena NULL or not HK_ALIGN-aligned, the region
 * overlaps another region or the control memory, or every slot is taken;
 * otherwise make's status (HK_ETOOSMALL: the region cannot hold a heap).
 * A refused region leaves the heap unchanged.
 */
hk_status_t hk_regions_add(hk_regions_t *regions, void *arena, size_t size);

/* Regions in use, and slots in all. */
size_t hk_regions_count(const hk_regions_t *regions);
size_t hk_regions_capacity(const hk_regions_t *regions);

/* Region i in address order; 0 when i >= count (info untouched). */
int hk_regions_at(const hk_regions_t *regions, size_t i, hk_region_info_t *info);

/* Index of the region holding ptr, or hk_regions_count() when none does. O(log regions). */
size_t hk_regions_index_of(const hk_regions_t *regions, const void *ptr);

/*
 * Detach region i when no block in it is in use (its memory may then be
 * given back, e.g. munmap'd); info (may be NULL) receives what it was.
 * HK_EINVAL: no such region, or it still holds a used block.
 */
hk_status_t hk_regions_remove(hk_regions_t *regions, size_t i, hk_region_info_t *info);

void *hk_regions_malloc(hk_regions_t *regions, size_t size);
void *hk_regions_aligned_alloc(hk_regions_t *regions, size_t alignment, size_t size);
/* Resize in place (ptr not NULL, size not 0): ptr, or NULL with nothing changed. hk_realloc() moves. */
void *hk_regions_resize(hk_regions_t *regions, void *ptr, size_t size);
void hk_regions_free(hk_regions_t *regions, void *ptr);
size_t hk_regions_usable_size(hk_regions_t *regions, const void *ptr);
void hk_regions_get_stats(hk_regions_t *regions, hk_stats_t *out);
void hk_regions_walk(hk_regions_t *regions, hk_walk_fn visit, void *ctx);
hk_check_t hk_regions_check(hk_regions_t *regions);
int hk_regions_owns(const hk_regions_t *regions, const void *ptr);

#ifdef __cplusplus
}
#endif

#endif
