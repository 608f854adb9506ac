/* SPDX-License-Identifier: MIT */
/*
 * "sdma": the fctma-pools seed's SDMA, the Smart Dynamic Memory Allocator
 * of its reference [2] (Ramakrishna et al., 2008) as the seed built it for
 * its benchmark ("Algorithm SDMA"): 15 first-level free-list classes, enough
 * for blocks below 32 KB; first- and second-level indices computed through
 * two 256-byte lookup tables in flash (LTB1, LTB2: const arrays); the block
 * lifetime prediction mask at 255, so every class below 256 bytes counts as
 * short-lived; no block splitting and no merging. The seed serves it from a
 * 32 KB chunk taken from FreeRTOS heap_4 at start-up: the ITC firmware takes
 * its chunk from heap_4 too (examples/firmware-itc/app.c, SDMA_CHUNK), the
 * lab's replays hand it their arena as the chunk (sdma.c tells how it
 * works). One implementation for
 * the host engine (lab/engine/sdma_alloc.c) and the target driver
 * (lab/target/allocs.c), as "sdma" in both.
 */
#ifndef LAB_TARGET_SDMA_H
#define LAB_TARGET_SDMA_H

#include "heapkit/heapkit.h"

/* The seed's BlkPredMask: bit c set makes first-level class c (c < 8) short-lived. */
#define LAB_SDMA_PRED_MASK 255u

/* An SDMA heap on [chunk, chunk + size), or NULL with *status set when not one block fits. */
hk_heap_t *lab_sdma_init(void *chunk, size_t size, hk_status_t *status);

/* The direct calls, as the seed's benchmark makes them (heap is what lab_sdma_init returned). */
void *lab_sdma_malloc(hk_heap_t *heap, size_t size);
void lab_sdma_free(hk_heap_t *heap, void *ptr);

#endif
