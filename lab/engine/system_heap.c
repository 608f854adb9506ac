/* SPDX-License-Identifier: MIT */
/*
 * "system": the C library's allocator (malloc, free, realloc, posix_memalign,
 * malloc_usable_size) behind an hk_ops_t, so LD_PRELOAD=libmimalloc.so or
 * libjemalloc.so replays against those. It owns no arena: footprint, free
 * bytes and the heap walk are not observable and the engine reports them as
 * null. The handle keeps the counters it can know (counts, failures, live
 * blocks and granted bytes); requested bytes are the engine's own business.
 */
#define _GNU_SOURCE
#include <malloc.h>
#include <stdlib.h>
#include <string.h>

#include "allocators.h"

static hk_stats_t *stats_of(hk_heap_t *h) { return &h->stats; }

static void note_alloc(hk_heap_t *h, void *p)
{
    hk_stats_t *s = stats_of(h);
    if (p == NULL) {
        s->fail_count++;
        return;
    }
    s->alloc_count++;
    s->used_blocks++;
    s->used_granted += malloc_usable_size(p);
    if (s->used_granted > s->peak_used) {
        s->peak_used = s->used_granted;
    }
}

static void note_free(hk_heap_t *h, void *p)
{
    hk_stats_t *s = stats_of(h);
    s->free_count++;
    s->used_blocks--;
    s->used_granted -= malloc_usable_size(p);
}

static void *sys_malloc(hk_heap_t *h, size_t n)
{
    void *p = malloc(n);
    note_alloc(h, p);
    return p;
}

static void *sys_aligned(hk_heap_t *h, size_t alignment, size_t n)
{
    void *p = NULL;
    if (posix_memalign(&p, alignment, n) != 0) {
        p = NULL;
    }
    note_alloc(h, p);
    return p;
}

static void sys_free(hk_heap_t *h, void *p)
{
    if (p != NULL) {
        note_free(h, p);
        free(p);
    }
}

/* heapkit's convention: realloc(p, 0) frees p and returns NULL, whatever the C library does. */
static void *sys_realloc(hk_heap_t *h, void *p, size_t n)
{
    size_t old_usable;
    void *q;
    if (p == NULL) {
        return sys_malloc(h, n);
    }
    if (n == 0) {
        sys_free(h, p);
        return NULL;
    }
    old_usable = malloc_usable_size(p);
    q = realloc(p, n);
    if (q == NULL) {
        h->stats.fail_count++;
        return NULL;
    }
    h->stats.realloc_count++;
    h->stats.used_granted = h->stats.used_granted - old_usable + malloc_usable_size(q);
    if (h->stats.used_granted > h->stats.peak_used) {
        h->stats.peak_used = h->stats.used_granted;
    }
    return q;
}

static size_t sys_usable(hk_heap_t *h, const void *p)
{
    (void)h;
    return malloc_usable_size((void *)(uintptr_t)p);
}

static void sys_stats(hk_heap_t *h, hk_stats_t *out) { *out = h->stats; }

static void sys_walk(hk_heap_t *h, hk_walk_fn visit, void *ctx)
{
    (void)h;
    (void)visit;
    (void)ctx;
}

static hk_check_t sys_check(hk_heap_t *h)
{
    (void)h;
    return 0;
}

static int sys_owns(const hk_heap_t *h, const void *p)
{
    (void)h;
    return p != NULL;
}

static const hk_ops_t sys_ops = {"system", sys_malloc, sys_aligned, sys_realloc, NULL, sys_free,
                                 sys_usable, sys_stats, sys_walk, sys_check, sys_owns};

static hk_heap_t *sys_make(void *arena, size_t size, hk_status_t *status)
{
    hk_heap_t *h = calloc(1, sizeof(*h));
    (void)arena;
    (void)size;
    if (h == NULL) {
        if (status != NULL) {
            *status = HK_EINVAL;
        }
        return NULL;
    }
    h->ops = &sys_ops;
    if (status != NULL) {
        *status = HK_OK;
    }
    return h;
}

static void sys_destroy(hk_heap_t *h) { free(h); }

const lab_alloc_t lab_system_alloc = {"system", LAB_FAMILY_SYSTEM, sys_make, sys_destroy, 0, NULL};
