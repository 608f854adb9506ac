/* SPDX-License-Identifier: MIT */
/*
 * Deliberately broken allocators, compiled only into hk-replay-selftest so
 * the tests can show that the engine's pattern checks catch real bugs. They
 * are bump allocators over the arena (8-byte header holding the usable size,
 * free does nothing):
 *
 *   test-bump     correct: the control case;
 *   test-overlap  every second allocation returns the previous block again,
 *                 so two live ids share memory;
 *   test-nocopy   realloc moves to a new block without copying the data.
 */
#include <string.h>

#include "allocators.h"

enum { BUMP_OK, BUMP_OVERLAP, BUMP_NOCOPY };

#define HDR 8u

typedef struct bump {
    hk_heap_t heap;
    int mode;
    unsigned char *base;
    unsigned char *top;
    unsigned char *end;
    unsigned char *last;
    unsigned long count;
} bump_t;

static size_t usable_of(const void *p)
{
    uint64_t u;
    memcpy(&u, (const unsigned char *)p - HDR, sizeof(u));
    return (size_t)u;
}

static void *bump_malloc(hk_heap_t *h, size_t n)
{
    bump_t *b = (bump_t *)h;
    size_t u = n < 8 ? 8 : (n + 7) & ~(size_t)7;
    uint64_t u64 = u;
    unsigned char *p;
    if (b->mode == BUMP_OVERLAP && (b->count++ & 1u) && b->last != NULL && usable_of(b->last) >= n) {
        h->stats.alloc_count++;
        return b->last;
    }
    if (n > (size_t)(b->end - b->top) || u + HDR > (size_t)(b->end - b->top)) {
        h->stats.fail_count++;
        return NULL;
    }
    p = b->top + HDR;
    memcpy(b->top, &u64, sizeof(u64));
    b->top += HDR + u;
    b->last = p;
    h->stats.alloc_count++;
    return p;
}

static void bump_free(hk_heap_t *h, void *p)
{
    if (p != NULL) {
        h->stats.free_count++;
    }
}

static void *bump_realloc(hk_heap_t *h, void *p, size_t n)
{
    bump_t *b = (bump_t *)h;
    void *q;
    if (p == NULL) {
        return bump_malloc(h, n);
    }
    if (n == 0) {
        bump_free(h, p);
        return NULL;
    }
    q = bump_malloc(h, n);
    if (q != NULL && b->mode != BUMP_NOCOPY) {
        size_t keep = usable_of(p) < n ? usable_of(p) : n;
        memcpy(q, p, keep);
    }
    if (q != NULL) {
        bump_free(h, p);
    }
    return q;
}

static size_t bump_usable(hk_heap_t *h, const void *p)
{
    (void)h;
    return p != NULL ? usable_of(p) : 0;
}

static void bump_stats(hk_heap_t *h, hk_stats_t *out) { *out = h->stats; }

static void bump_walk(hk_heap_t *h, hk_walk_fn visit, void *ctx)
{
    bump_t *b = (bump_t *)h;
    unsigned char *at = b->base;
    while (at < b->top) {
        hk_block_info_t info;
        info.start = at;
        info.payload = at + HDR;
        info.usable = usable_of(at + HDR);
        info.size = info.usable + HDR;
        info.used = 1;
        visit(ctx, &info);
        at += info.size;
    }
}

static hk_check_t bump_check(hk_heap_t *h)
{
    (void)h;
    return 0;
}

static int bump_owns(const hk_heap_t *h, const void *p)
{
    const bump_t *b = (const bump_t *)h;
    return (const unsigned char *)p >= b->base && (const unsigned char *)p < b->end;
}

static const hk_ops_t bump_ops = {"test-bump", bump_malloc, NULL, bump_realloc, NULL, bump_free,
                                  bump_usable, bump_stats, bump_walk, bump_check, bump_owns};

static hk_heap_t *make_mode(void *arena, size_t size, hk_status_t *status, int mode)
{
    bump_t *b = arena;
    if (arena == NULL || size < sizeof(bump_t) + 64) {
        *status = arena == NULL ? HK_EINVAL : HK_ETOOSMALL;
        return NULL;
    }
    memset(b, 0, sizeof(*b));
    b->heap.ops = &bump_ops;
    b->mode = mode;
    b->base = (unsigned char *)arena + ((sizeof(bump_t) + 15) & ~(size_t)15);
    b->top = b->base;
    b->end = (unsigned char *)arena + size;
    b->heap.stats.capacity = (size_t)(b->end - b->base);
    *status = HK_OK;
    return &b->heap;
}

static hk_heap_t *make_ok(void *a, size_t n, hk_status_t *s) { return make_mode(a, n, s, BUMP_OK); }
static hk_heap_t *make_overlap(void *a, size_t n, hk_status_t *s) { return make_mode(a, n, s, BUMP_OVERLAP); }
static hk_heap_t *make_nocopy(void *a, size_t n, hk_status_t *s) { return make_mode(a, n, s, BUMP_NOCOPY); }

static const lab_alloc_t test_bump = {"test-bump", LAB_FAMILY_TEST, make_ok, NULL, LAB_IN_ARENA, NULL};
static const lab_alloc_t test_overlap = {"test-overlap", LAB_FAMILY_TEST, make_overlap, NULL, LAB_IN_ARENA, NULL};
static const lab_alloc_t test_nocopy = {"test-nocopy", LAB_FAMILY_TEST, make_nocopy, NULL, LAB_IN_ARENA, NULL};

const lab_alloc_t *const lab_test_allocs[] = {&test_bump, &test_overlap, &test_nocopy, NULL};
