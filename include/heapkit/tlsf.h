/* SPDX-License-Identifier: MIT */
/*
 * tlsf: two-level segregated fit, O(1) malloc and free with immediate
 * coalescing. See src/tlsf.c.
 */
#ifndef HEAPKIT_TLSF_H
#define HEAPKIT_TLSF_H

#include "heapkit/heapkit.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * log2 of the second-level lists per power of two (1..5: 2..32 lists). A
 * compile-time constant, so the list index costs a bit scan and a few
 * shifts by constants; more lists round requests up less (less waste) and
 * cost a larger control block (about 4 bytes a list, 2^SL lists per power
 * of two the arena spans).
 */
#ifndef HK_TLSF_SL_LOG2
#define HK_TLSF_SL_LOG2 4
#endif

typedef struct hk_tlsf hk_tlsf_t;

/* Returns NULL with *status (if not NULL) set on failure. */
hk_tlsf_t *hk_tlsf_init(void *arena, size_t size, hk_status_t *status);
hk_heap_t *hk_tlsf_heap(hk_tlsf_t *heap);

void *hk_tlsf_malloc(hk_tlsf_t *heap, size_t size);
void *hk_tlsf_aligned_alloc(hk_tlsf_t *heap, size_t alignment, size_t size);
/* Resize in place (ptr not NULL, size not 0): ptr, or NULL with nothing changed. hk_realloc() moves. */
void *hk_tlsf_resize(hk_tlsf_t *heap, void *ptr, size_t size);
void hk_tlsf_free(hk_tlsf_t *heap, void *ptr);
size_t hk_tlsf_usable_size(hk_tlsf_t *heap, const void *ptr);
void hk_tlsf_get_stats(hk_tlsf_t *heap, hk_stats_t *out);
void hk_tlsf_walk(hk_tlsf_t *heap, hk_walk_fn visit, void *ctx);
hk_check_t hk_tlsf_check(hk_tlsf_t *heap);
int hk_tlsf_owns(const hk_tlsf_t *heap, const void *ptr);

#ifdef __cplusplus
}
#endif

#endif
