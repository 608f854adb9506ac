/* SPDX-License-Identifier: MIT */
/*
 * The engine's allocator table: every heapkit catalog entry, then "pool"
 * (the fctma-pools seed's one pool sized to the trace, pool_alloc.c), then "sdma"
 * (the same seed's Smart DMA, sdma_alloc.c), then "system"
 * (the process's own malloc, so LD_PRELOAD picks mimalloc, jemalloc, ...),
 * then the peers listed in peers/peers.def. Every entry hands the engine an
 * hk_heap_t, so all of them are replayed through the same uniform calls.
 *
 * Adding a peer allocator: write lab/engine/peers/<peer>.c defining
 *
 *     const lab_alloc_t lab_peer_<peer> = {"<name>", LAB_FAMILY_PEER, make, destroy, LAB_IN_ARENA, NULL};
 *
 * (make builds an hk_heap_t adapter in the arena), then add the single line
 * LAB_PEER(lab_peer_<peer>) to peers/peers.def. CMake compiles every
 * .c file in peers/; peers/CMakeLists.txt, when present, is included to fetch and
 * build the peer's own sources.
 */
#ifndef LAB_ENGINE_ALLOCATORS_H
#define LAB_ENGINE_ALLOCATORS_H

#include <stddef.h>

#include "heapkit/heapkit.h"

typedef enum lab_family {
    LAB_FAMILY_HEAPKIT, /* from the heapkit catalog */
    LAB_FAMILY_SYSTEM,  /* the C library's malloc, or whatever LD_PRELOAD put in its place */
    LAB_FAMILY_PEER,    /* another embedded allocator behind an adapter */
    LAB_FAMILY_TEST     /* deliberately broken, only in the hk-replay-selftest binary */
} lab_family_t;

/* The heap and its blocks live inside the arena handed to make(): footprint is measurable. */
#define LAB_IN_ARENA 0x1u

typedef struct lab_alloc {
    const char *name;
    lab_family_t family;
    /*
     * Build a heap in [arena, arena + size) and return its handle, or NULL
     * with *status set. Entries without LAB_IN_ARENA get arena NULL, size 0.
     * make() may be called many times in one process (size search), each
     * call after the previous heap's destroy().
     */
    hk_heap_t *(*make)(void *arena, size_t size, hk_status_t *status);
    /* Release what make() acquired outside the arena; NULL when there is nothing. */
    void (*destroy)(hk_heap_t *heap);
    unsigned flags; /* LAB_IN_ARENA */
    /*
     * NULL, or make() for an allocator shaped by the trace: block is the
     * trace's largest request (the replay passes it; "pool" sizes its one
     * pool's blocks by it).
     */
    hk_heap_t *(*make_sized)(void *arena, size_t size, size_t block, hk_status_t *status);
} lab_alloc_t;

/*
 * freertos-heap5 only (peers/freertos_heaps.c): from the next make() on, the
 * arena's top `top` bytes are a second region of their own (0: one region).
 */
void lab_freertos_heap5_second_region(size_t top);

size_t lab_alloc_count(void);
const lab_alloc_t *lab_alloc_at(size_t i);
const lab_alloc_t *lab_alloc_find(const char *name);
const char *lab_family_name(lab_family_t family);

#endif
