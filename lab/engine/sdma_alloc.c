/* SPDX-License-Identifier: MIT */
/* "sdma": the fctma-pools seed's SDMA (lab/target/sdma.h, shared with the target driver), the arena as its
 * chunk. A peer: another embedded allocator, rebuilt from the paper for the comparison, not heapkit's own. */
#include "allocators.h"

#include "../target/sdma.h"

const lab_alloc_t lab_sdma_alloc = {"sdma", LAB_FAMILY_PEER, lab_sdma_init, NULL, LAB_IN_ARENA, NULL};
