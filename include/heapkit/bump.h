/* SPDX-License-Identifier: MIT */
/*
 * bump: the fctma-pools seed's SimpleDMA. It only allocates; free is
 * counted but reclaims nothing until hk_bump_reset(). See src/bump.c.
 *
 * Every block has an 8-byte header (size, slack, check hash) before its
 * payload. HK_HARDENING: 0 takes pointers handed in at their word; 1
 * (default) checks them in constant time (range, alignment, header hash,
 * live), so an overflow into the next block's header is reported when that
 * block is freed, resized or measured; 2 adds HK_CANARY_ROOM bytes per
 * block, a canary after the request (usable_size is the request, at least
 * 1) checked on free and realloc, and poisoned dead blocks and tail, checked
 * when tail bytes are handed out; 3 adds a full check() around every
 * uniform call.
 */
#ifndef HEAPKIT_BUMP_H
#define HEAPKIT_BUMP_H

#include "heapkit/heapkit.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct hk_bump hk_bump_t;

hk_bump_t *hk_bump_init(void *arena, size_t size, hk_status_t *status);
hk_heap_t *hk_bump_heap(hk_bump_t *heap);
/* Forget every block at once; the arena is whole again. */
void hk_bump_reset(hk_bump_t *heap);

void *hk_bump_malloc(hk_bump_t *heap, size_t size);
void *hk_bump_aligned_alloc(hk_bump_t *heap, size_t alignment, size_t size);
/* Resize in place (ptr not NULL, size not 0): ptr, or NULL with nothing changed. hk_realloc() moves. */
void *hk_bump_resize(hk_bump_t *heap, void *ptr, size_t size);
void hk_bump_free(hk_bump_t *heap, void *ptr);
size_t hk_bump_usable_size(hk_bump_t *heap, const void *ptr);
void hk_bump_get_stats(hk_bump_t *heap, hk_stats_t *out);
void hk_bump_walk(hk_bump_t *heap, hk_walk_fn visit, void *ctx);
hk_check_t hk_bump_check(hk_bump_t *heap);
int hk_bump_owns(const hk_bump_t *heap, const void *ptr);

#ifdef __cplusplus
}
#endif

#endif
