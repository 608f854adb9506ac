/* SPDX-License-Identifier: MIT */
/* Unit tests of the bump allocator (src/bump.c). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "heapkit/bump.h"
#include "testkit.h"

#define ARENA_SIZE 4096u
#define HDR 8u

static _Alignas(64) unsigned char arena[ARENA_SIZE + 64];
static _Alignas(64) unsigned char big_arena[1u << 16];

/* ---- helpers ---- */

/* A heap on mem; with a log, every misuse report is recorded there. */
static hk_bump_t *make(void *mem, size_t size, error_log_t *log)
{
    hk_status_t st = HK_EINVAL;
    hk_bump_t *h = hk_bump_init(mem, size, &st);
    assert_non_null(h);
    assert_int_equal(st, HK_OK);
    if (log != NULL) {
        record_errors(hk_bump_heap(h), log);
    }
    return h;
}

static hk_stats_t stats_of(hk_bump_t *h)
{
    hk_stats_t s;
    memset(&s, 0xA5, sizeof(s));
    hk_bump_get_stats(h, &s);
    return s;
}

/* HK_HARDENING >= 2 keeps a canary room after every request (src/bump.c). */
#define ROOM ((size_t)(HK_HARDENING >= 2 ? 4u : 0u))

static size_t gross(size_t n)
{
    size_t g = (n + HDR + ROOM + HK_ALIGN - 1) & ~(size_t)(HK_ALIGN - 1);
    return n == 0 ? ((HDR + 1 + ROOM + HK_ALIGN - 1) & ~(size_t)(HK_ALIGN - 1)) : g;
}

/* usable_size of a block for n bytes: its whole room, or at level 2 the request (at least 1). */
static size_t usable(size_t n)
{
    if (HK_HARDENING >= 2) {
        return n != 0 ? n : 1;
    }
    return gross(n) - HDR;
}

static walk_log_t g_walk;
static walk_log_t g_walk_before;

/* The heap's blocks in address order, collected into w (g_walk, or g_walk_before for a second snapshot). */
static const walk_log_t *take_walk(hk_bump_t *h, walk_log_t *w)
{
    hk_bump_walk(h, collect_walk, walk_reset(w));
    return w;
}

/* ---- init ---- */

static void init_rejects_bad_arenas(void **state)
{
    hk_status_t st = HK_OK;
    (void)state;
    assert_null(hk_bump_init(NULL, ARENA_SIZE, &st));
    assert_int_equal(st, HK_EINVAL);
    assert_null(hk_bump_init(NULL, ARENA_SIZE, NULL));
    st = HK_OK;
    assert_null(hk_bump_init(arena, 0, &st));
    assert_int_equal(st, HK_ETOOSMALL);
    st = HK_OK;
    assert_null(hk_bump_init(arena, 64, &st));
    assert_int_equal(st, HK_ETOOSMALL);
    assert_null(hk_bump_init(arena, 64, NULL));
}

/* init for smallest_arena(). */
static hk_heap_t *init_bump(void *ctx, void *mem, size_t size, hk_status_t *st)
{
    hk_bump_t *h = hk_bump_init(mem, size, st);
    (void)ctx;
    return h != NULL ? hk_bump_heap(h) : NULL;
}

static void init_smallest_arena_holds_one_block(void **state)
{
    hk_bump_t *h = make(arena, smallest_arena(init_bump, NULL, arena, 1024), NULL);
    (void)state;
    assert_true(stats_of(h).capacity >= gross(0));
    assert_non_null(hk_bump_malloc(h, 0));
}

static void init_aligns_a_misaligned_arena(void **state)
{
    size_t off;
    (void)state;
    for (off = 0; off < 16; off++) {
        hk_bump_t *h = make(arena + off, ARENA_SIZE, NULL);
        hk_stats_t s = stats_of(h);
        void *p;
        assert_true((uintptr_t)h % HK_ALIGN == 0);
        assert_true((unsigned char *)h >= arena + off);
        assert_true(s.capacity <= ARENA_SIZE);
        assert_true(s.capacity + 256 + 2 * HK_ALIGN >= ARENA_SIZE);
        p = hk_bump_malloc(h, 1);
        assert_non_null(p);
        assert_true((uintptr_t)p % HK_ALIGN == 0);
        assert_int_equal(hk_bump_check(h), 0);
    }
}

static void init_stats_describe_an_empty_heap(void **state)
{
    hk_bump_t *h = make(arena, ARENA_SIZE, NULL);
    hk_stats_t s = stats_of(h);
    const walk_log_t *w;
    (void)state;
    assert_int_equal(s.capacity % HK_ALIGN, 0);
    assert_stats_empty(&s);
    assert_int_equal(s.min_ever_free, s.capacity);
    assert_int_equal(s.peak_used, 0);
    assert_int_equal(s.alloc_count + s.free_count + s.fail_count + s.error_count, 0);
    w = take_walk(h, &g_walk);
    assert_int_equal(w->n, 1);
    assert_int_equal(w->b[0].size, s.capacity);
    assert_int_equal(w->b[0].used, 0);
    assert_int_equal(hk_bump_check(h), 0);
    assert_ptr_equal(hk_bump_heap(h), (hk_heap_t *)h);
    assert_string_equal(hk_name(hk_bump_heap(h)), "bump");
}

/* ---- malloc ---- */

static void malloc_bumps_upward(void **state)
{
    hk_bump_t *h = make(arena, ARENA_SIZE, NULL);
    size_t sizes[] = {1, 7, 8, 9, 24, 100, 3};
    unsigned char *prev = NULL;
    size_t prev_size = 0;
    size_t sum_req = 0;
    size_t sum_usable = 0;
    size_t sum_gross = 0;
    size_t i;
    hk_stats_t s0 = stats_of(h);
    hk_stats_t s;
    (void)state;
    for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
        unsigned char *p = hk_bump_malloc(h, sizes[i]);
        assert_non_null(p);
        assert_true((uintptr_t)p % HK_ALIGN == 0);
        assert_int_equal(hk_bump_usable_size(h, p), usable(sizes[i]));
        memset(p, 0x5A, hk_bump_usable_size(h, p));
        if (prev != NULL) {
            assert_ptr_equal(p, prev + gross(prev_size));
        }
        prev = p;
        prev_size = sizes[i];
        sum_req += sizes[i];
        sum_usable += usable(sizes[i]);
        sum_gross += gross(sizes[i]);
    }
    s = stats_of(h);
    assert_int_equal(s.used_blocks, i);
    assert_int_equal(s.alloc_count, i);
    assert_int_equal(s.used_requested, sum_req);
    assert_int_equal(s.used_granted, sum_usable);
    assert_int_equal(s.peak_used, sum_gross); /* the gross high-water mark, capacity - min_ever_free */
    assert_int_equal(s.free_bytes, s0.capacity - sum_gross);
    assert_int_equal(s.min_ever_free, s.free_bytes);
    assert_int_equal(s.largest_free, s.free_bytes);
    assert_int_equal(hk_bump_check(h), 0);
}

static void malloc_zero_gives_unique_blocks(void **state)
{
    hk_bump_t *h = make(arena, ARENA_SIZE, NULL);
    void *a = hk_bump_malloc(h, 0);
    void *b = hk_bump_malloc(h, 0);
    hk_stats_t s = stats_of(h);
    (void)state;
    assert_non_null(a);
    assert_non_null(b);
    assert_ptr_not_equal(a, b);
    assert_true(hk_bump_usable_size(h, a) >= 1);
    assert_int_equal(s.used_requested, 0);
    assert_int_equal(s.used_blocks, 2);
    hk_bump_free(h, a);
    hk_bump_free(h, b);
    assert_int_equal(hk_bump_check(h), 0);
}

static void malloc_refuses_what_cannot_fit(void **state)
{
    hk_bump_t *h = make(arena, ARENA_SIZE, NULL);
    hk_stats_t s0 = stats_of(h);
    size_t huge[] = {SIZE_MAX, SIZE_MAX - 7, SIZE_MAX / 2 + 1, 0xFFFFFFFFu, ARENA_SIZE, 0};
    size_t i;
    hk_stats_t s;
    (void)state;
    huge[5] = s0.capacity - HDR - ROOM + 1;
    for (i = 0; i < sizeof(huge) / sizeof(huge[0]); i++) {
        assert_null(hk_bump_malloc(h, huge[i]));
    }
    assert_int_equal(stats_of(h).fail_count, 0); /* direct calls count no failures */
    for (i = 0; i < sizeof(huge) / sizeof(huge[0]); i++) {
        assert_null(hk_malloc(hk_bump_heap(h), huge[i]));
    }
    s = stats_of(h);
    assert_int_equal(s.fail_count, i);
    assert_int_equal(s.free_bytes, s0.free_bytes);
    assert_int_equal(s.alloc_count, 0);
    /* The whole span as one block still fits. */
    assert_non_null(hk_bump_malloc(h, s0.capacity - HDR - ROOM));
    s = stats_of(h);
    assert_stats_full(&s);
    assert_null(hk_bump_malloc(h, 0));
    assert_null(hk_malloc(hk_bump_heap(h), 0));
    assert_int_equal(stats_of(h).fail_count, i + 1);
    assert_int_equal(hk_bump_check(h), 0);
}

static void malloc_fills_to_the_last_byte(void **state)
{
    hk_bump_t *h = make(arena, ARENA_SIZE, NULL);
    size_t n = 0;
    (void)state;
    while (hk_malloc(hk_bump_heap(h), 24) != NULL) {
        n++;
    }
    assert_true(n > 0);
    assert_true(stats_of(h).free_bytes < gross(24));
    assert_int_equal(stats_of(h).fail_count, 1);
    assert_int_equal(hk_bump_check(h), 0);
}

/* ---- free ---- */

static void free_counts_but_reclaims_nothing(void **state)
{
    hk_bump_t *h = make(arena, ARENA_SIZE, NULL);
    unsigned char *a = hk_bump_malloc(h, 40);
    unsigned char *b;
    hk_stats_t before = stats_of(h);
    hk_stats_t s;
    const walk_log_t *w;
    (void)state;
    hk_bump_free(h, a);
    s = stats_of(h);
    assert_int_equal(s.free_count, 1);
    assert_int_equal(s.used_blocks, 0);
    assert_int_equal(s.used_granted, 0);
    assert_int_equal(s.used_requested, 0);
    assert_int_equal(s.free_bytes, before.free_bytes); /* the dead block is overhead, not free */
    assert_int_equal(s.free_blocks, 1);
    b = hk_bump_malloc(h, 40);
    assert_ptr_equal(b, a + gross(40));
    w = take_walk(h, &g_walk);
    assert_int_equal(w->n, 3);
    assert_ptr_equal(w->b[0].payload, a);
    assert_int_equal(w->b[0].used, 0);
    assert_int_equal(w->b[0].size, gross(40));
    assert_ptr_equal(w->b[1].payload, b);
    assert_int_equal(w->b[1].used, 1);
    assert_int_equal(w->b[2].used, 0);
    assert_int_equal(hk_bump_check(h), 0);
    hk_bump_free(h, NULL);
    assert_int_equal(stats_of(h).free_count, 1);
}

/* ---- misuse ---- */

#if HK_HARDENING >= 1 /* level 0 checks nothing handed in: misuse is undefined behaviour there */
/* assert_misuse_harmless() on the bump heap (its hk_free & co. are hk_bump_free & co.). */
static void misuse_case(hk_bump_t *h, error_log_t *log, void *bad, hk_error_t want)
{
    assert_misuse_harmless(hk_bump_heap(h), log, bad, want);
}

static void misuse_is_reported_and_harmless(void **state)
{
    error_log_t log;
    hk_bump_t *h = make(arena, ARENA_SIZE, &log);
    unsigned char *a = hk_bump_malloc(h, 40);
    unsigned char *b = hk_bump_malloc(h, 40);
    unsigned char *c = hk_bump_malloc(h, 40);
    unsigned char local[32];
    (void)state;
    memset(a, 0x11, 40);
    memset(b, 0x22, 40);
    memset(c, 0x33, 40);
    hk_bump_free(h, b);
    assert_int_equal(log.count, 0);

    misuse_case(h, &log, b, HK_ERR_DOUBLE_FREE);
    misuse_case(h, &log, a + HK_ALIGN, HK_ERR_INTERIOR_PTR);
    misuse_case(h, &log, a + 16, HK_ERR_INTERIOR_PTR);
    misuse_case(h, &log, a + 1, HK_ERR_INTERIOR_PTR);
    misuse_case(h, &log, c + gross(40) + HDR, HK_ERR_INTERIOR_PTR); /* the untouched tail */
    misuse_case(h, &log, local, HK_ERR_FOREIGN_PTR);
    misuse_case(h, &log, (unsigned char *)h, HK_ERR_FOREIGN_PTR);
    misuse_case(h, &log, arena + sizeof(arena) - 8, HK_ERR_FOREIGN_PTR);
    assert_int_equal(hk_bump_check(h), 0);
    assert_int_equal(hk_bump_usable_size(h, a), usable(40));
    assert_int_equal(a[39], 0x11);
    assert_int_equal(c[39], 0x33);
}

static void corrupted_header_is_caught(void **state)
{
    error_log_t log;
    hk_bump_t *h = make(arena, ARENA_SIZE, &log);
    unsigned char *a = hk_bump_malloc(h, 40);
    unsigned char *b = hk_bump_malloc(h, 40);
    unsigned char saved[HDR];
    (void)state;
    assert_non_null(b);
    memcpy(saved, a - HDR, HDR);
    *(a - HDR) ^= 0x40; /* a stray write flips a size bit */
    misuse_case(h, &log, a, HK_ERR_CORRUPT);
    assert_int_not_equal(hk_bump_check(h), 0);
    memcpy(a - HDR, saved, HDR);
    assert_int_equal(hk_bump_check(h), 0);
    a[-1] ^= 0x01; /* the check field */
    misuse_case(h, &log, a, HK_ERR_CORRUPT);
    a[-1] ^= 0x01;
    hk_bump_free(h, a);
    assert_int_equal(log.count, 6);
    assert_int_equal(hk_bump_check(h), 0);
}

#endif

static void check_catches_bad_counters(void **state)
{
    hk_bump_t *h = make(arena, ARENA_SIZE, NULL);
    hk_heap_t *heap = hk_bump_heap(h);
    (void)state;
    assert_non_null(hk_bump_malloc(h, 10));
    assert_int_equal(hk_bump_check(h), 0);
    assert_check_notices(heap, &heap->stats.used_requested, 1);
    assert_check_notices(heap, &heap->stats.free_bytes, (size_t)-1);
    assert_int_equal(heap->stats.used_blocks, 1);
    assert_check_notices(heap, &heap->stats.used_blocks, 1);
    assert_int_equal(hk_bump_check(h), 0);
}

/* ---- realloc ---- */

static void realloc_degenerate_cases(void **state)
{
    hk_bump_t *h = make(arena, ARENA_SIZE, NULL);
    void *p = hk_realloc(hk_bump_heap(h), NULL, 30);
    hk_stats_t s = stats_of(h);
    (void)state;
    assert_non_null(p);
    assert_int_equal(s.alloc_count, 1);
    assert_int_equal(s.realloc_count, 0);
    assert_null(hk_realloc(hk_bump_heap(h), p, 0));
    s = stats_of(h);
    assert_int_equal(s.free_count, 1);
    assert_int_equal(s.used_blocks, 0);
    assert_int_equal(s.realloc_count, 0);
    assert_int_equal(hk_bump_check(h), 0);
}

static void realloc_grows_the_last_block_in_place(void **state)
{
    hk_bump_t *h = make(arena, ARENA_SIZE, NULL);
    unsigned char *p = hk_bump_malloc(h, 20);
    hk_stats_t before = stats_of(h);
    hk_stats_t s;
    (void)state;
    memset(p, 0x3C, 20);
    assert_ptr_equal(hk_realloc(hk_bump_heap(h), p, 300), p);
    s = stats_of(h);
    assert_int_equal(s.free_bytes, before.free_bytes - (gross(300) - gross(20)));
    assert_int_equal(s.used_requested, 300);
    assert_int_equal(s.used_granted, usable(300));
    assert_int_equal(s.realloc_count, 1);
    assert_int_equal(s.alloc_count, 1);
    assert_int_equal(hk_bump_usable_size(h, p), usable(300));
    assert_int_equal(p[19], 0x3C);
    /* Growing to exactly the end of the span still works in place. */
    assert_ptr_equal(hk_realloc(hk_bump_heap(h), p, s.capacity - HDR - ROOM), p);
    assert_int_equal(stats_of(h).free_bytes, 0);
    assert_null(hk_realloc(hk_bump_heap(h), p, s.capacity));
    assert_int_equal(stats_of(h).fail_count, 1);
    assert_int_equal(hk_bump_usable_size(h, p), s.capacity - HDR - ROOM);
    assert_int_equal(hk_bump_check(h), 0);
}

static void realloc_shrinks_the_last_block_into_the_tail(void **state)
{
    hk_bump_t *h = make(arena, ARENA_SIZE, NULL);
    unsigned char *p = hk_bump_malloc(h, 400);
    hk_stats_t before = stats_of(h);
    (void)state;
    memset(p, 0x77, 400);
    assert_ptr_equal(hk_realloc(hk_bump_heap(h), p, 10), p);
    assert_int_equal(stats_of(h).free_bytes, before.free_bytes + gross(400) - gross(10));
    assert_int_equal(stats_of(h).used_requested, 10);
    assert_int_equal(p[9], 0x77);
    assert_ptr_equal(hk_bump_malloc(h, 1), p + gross(10));
    assert_int_equal(hk_bump_check(h), 0);
}

static void realloc_moves_a_block_that_is_not_last(void **state)
{
    hk_bump_t *h = make(arena, ARENA_SIZE, NULL);
    unsigned char *a = hk_bump_malloc(h, 32);
    unsigned char *b = hk_bump_malloc(h, 8);
    unsigned char *m;
    hk_stats_t s;
    const walk_log_t *w;
    size_t i;
    (void)state;
    for (i = 0; i < 32; i++) {
        a[i] = (unsigned char)i;
    }
    m = hk_realloc(hk_bump_heap(h), a, 100);
    assert_non_null(m);
    assert_true(m > b);
    for (i = 0; i < 32; i++) {
        assert_int_equal(m[i], i);
    }
    s = stats_of(h);
    assert_int_equal(s.alloc_count, 3);
    assert_int_equal(s.free_count, 1);
    assert_int_equal(s.realloc_count, 1);
    assert_int_equal(s.used_blocks, 2);
    assert_int_equal(s.used_requested, 108);
    w = take_walk(h, &g_walk);
    assert_int_equal(w->b[0].used, 0); /* the old block is dead */
    assert_int_equal(hk_bump_check(h), 0);
}

static void realloc_shrinking_a_middle_block_cuts_a_dead_rest(void **state)
{
    hk_bump_t *h = make(arena, ARENA_SIZE, NULL);
    unsigned char *a = hk_bump_malloc(h, 200);
    unsigned char *b = hk_bump_malloc(h, 8);
    hk_stats_t before = stats_of(h);
    hk_stats_t s;
    const walk_log_t *w;
    (void)state;
    memset(a, 0x42, 200);
    assert_ptr_equal(hk_realloc(hk_bump_heap(h), a, 5), a);
    s = stats_of(h);
    assert_int_equal(s.split_count, before.split_count + 1);
    assert_int_equal(s.free_bytes, before.free_bytes);
    assert_int_equal(s.used_requested, 13);
    assert_int_equal(hk_bump_usable_size(h, a), usable(5));
    assert_int_equal(a[4], 0x42);
    w = take_walk(h, &g_walk);
    assert_int_equal(w->n, 4);
    assert_int_equal(w->b[0].size, gross(5));
    assert_int_equal(w->b[1].used, 0);
    assert_int_equal(w->b[1].size, gross(200) - gross(5));
    assert_ptr_equal(w->b[2].payload, b);
    /* The dead rest is no block to free. */
    hk_bump_free(h, a);
    hk_bump_free(h, b);
    assert_int_equal(hk_bump_check(h), 0);
    /* Same gross size: nothing to cut. */
    a = hk_bump_malloc(h, 20);
    b = hk_bump_malloc(h, 8);
    assert_ptr_equal(hk_realloc(hk_bump_heap(h), a, 17), a);
    assert_int_equal(stats_of(h).split_count, s.split_count);
    assert_int_equal(hk_bump_check(h), 0);
}

static void realloc_failure_leaves_the_block(void **state)
{
    hk_bump_t *h = make(arena, ARENA_SIZE, NULL);
    unsigned char *a = hk_bump_malloc(h, 16);
    unsigned char *b = hk_bump_malloc(h, 16);
    hk_stats_t before;
    hk_stats_t s;
    (void)state;
    assert_non_null(b);
    memset(a, 0x99, 16);
    before = stats_of(h);
    assert_null(hk_realloc(hk_bump_heap(h), a, SIZE_MAX));
    assert_null(hk_realloc(hk_bump_heap(h), a, ARENA_SIZE));
    s = stats_of(h);
    assert_int_equal(s.fail_count, before.fail_count + 2);
    assert_int_equal(s.free_bytes, before.free_bytes);
    assert_int_equal(s.realloc_count, 0);
    assert_int_equal(hk_bump_usable_size(h, a), usable(16));
    assert_int_equal(a[15], 0x99);
    assert_int_equal(hk_bump_check(h), 0);
}

/* ---- aligned_alloc ---- */

static void aligned_alloc_pads_with_a_dead_filler(void **state)
{
    hk_bump_t *h = make(big_arena, sizeof(big_arena), NULL);
    size_t aligns[] = {16, 32, 64, 256, 4096};
    size_t i;
    (void)state;
    for (i = 0; i < sizeof(aligns) / sizeof(aligns[0]); i++) {
        unsigned char *p;
        assert_non_null(hk_bump_malloc(h, 3)); /* knock top off any alignment */
        p = hk_bump_aligned_alloc(h, aligns[i], 50);
        assert_non_null(p);
        assert_int_equal((uintptr_t)p % aligns[i], 0);
        assert_int_equal(hk_bump_usable_size(h, p), usable(50));
        memset(p, 0xEE, 50);
        assert_int_equal(hk_bump_check(h), 0);
    }
    assert_int_equal(stats_of(h).used_blocks, 10);
    assert_int_equal(stats_of(h).alloc_count, 10);
    hk_bump_free(h, hk_bump_aligned_alloc(h, 128, 1));
    assert_int_equal(hk_bump_check(h), 0);
}

static void aligned_alloc_filler_is_walked_as_dead(void **state)
{
    hk_bump_t *h = make(big_arena, sizeof(big_arena), NULL);
    unsigned char *a = hk_bump_malloc(h, 1);
    unsigned char *p;
    hk_stats_t before = stats_of(h);
    const walk_log_t *w;
    (void)state;
    p = hk_bump_aligned_alloc(h, 1024, 8);
    assert_non_null(p);
    w = take_walk(h, &g_walk);
    assert_ptr_equal(w->b[0].payload, a);
    if ((uintptr_t)(a + gross(1)) % 1024 != 0) {
        assert_int_equal(w->n, 4);
        assert_int_equal(w->b[1].used, 0);
        assert_ptr_equal((const unsigned char *)w->b[1].start + w->b[1].size, p - HDR);
        assert_ptr_equal(w->b[2].payload, p);
    }
    /* free_bytes lost the filler and the block. */
    assert_int_equal(stats_of(h).free_bytes, before.free_bytes - (size_t)(p + gross(8) - HDR - (a + gross(1) - HDR)));
}

static void aligned_alloc_refuses_bad_alignments(void **state)
{
    hk_bump_t *h = make(arena, ARENA_SIZE, NULL);
    size_t bad[] = {0, 3, 24, 100, SIZE_MAX};
    size_t i;
    void *p;
    (void)state;
    for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        assert_null(hk_bump_aligned_alloc(h, bad[i], 8));
    }
    assert_null(hk_bump_aligned_alloc(h, (SIZE_MAX >> 1) + 1, 8));
    assert_null(hk_bump_aligned_alloc(h, 64, SIZE_MAX));
    assert_int_equal(stats_of(h).fail_count, 0); /* direct calls count no failures */
    for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        assert_null(hk_aligned_alloc(hk_bump_heap(h), bad[i], 8));
    }
    assert_null(hk_aligned_alloc(hk_bump_heap(h), (SIZE_MAX >> 1) + 1, 8));
    assert_null(hk_aligned_alloc(hk_bump_heap(h), 64, SIZE_MAX));
    assert_int_equal(stats_of(h).fail_count, i + 2);
    assert_int_equal(stats_of(h).free_bytes, stats_of(h).capacity);
    p = hk_bump_aligned_alloc(h, HK_ALIGN, 8);
    assert_non_null(p);
    p = hk_bump_aligned_alloc(h, 1, 8);
    assert_non_null(p);
    assert_int_equal(hk_bump_check(h), 0);
}

/* ---- hardening ---- */

#if HK_HARDENING >= 1

/* Flip n bytes at p: whatever they held, they hold something else now (a stray write). */
static void scribble(unsigned char *p, size_t n)
{
    size_t i;
    for (i = 0; i < n; i++) {
        p[i] ^= 0xFFu;
    }
}

/* After damage: blocks still come and go, none overlapping another or the damaged stretch [bad, bad + len). */
static void exercise_after_damage(hk_bump_t *h, const unsigned char *bad, size_t len)
{
    unsigned char *p[32];
    size_t n = 0;
    size_t i, j;
    while (n < 32) {
        p[n] = hk_bump_malloc(h, 1 + 13 * n % 60);
        if (p[n] == NULL) {
            break;
        }
        memset(p[n], 0x77, hk_bump_usable_size(h, p[n]));
        n++;
    }
    assert_true(n > 4);
    for (i = 0; i < n; i++) {
        size_t u = hk_bump_usable_size(h, p[i]);
        assert_true(bad == NULL || p[i] + u <= bad || bad + len <= p[i] - HDR);
        for (j = i + 1; j < n; j++) {
            assert_true(p[i] + u <= p[j] - HDR || p[j] + hk_bump_usable_size(h, p[j]) <= p[i] - HDR);
        }
    }
    for (i = 0; i < n; i++) {
        hk_bump_free(h, p[i]);
    }
}

/*
 * An overflow of 1..16 bytes past usable_size into a used neighbour: at
 * level 1 its header's check hash no longer holds, so freeing it reports
 * HK_ERR_CORRUPT and leaves it alone (a misuse report changes nothing; check()
 * keeps naming the header); at level 2 the canary after the request is hit
 * first and free reports it. Either way allocation goes on, nothing overlaps.
 */
static void test_overflow_into_used_neighbour(void **state)
{
    size_t n;
    (void)state;
    for (n = 1; n <= 16; n++) {
        error_log_t log;
        hk_bump_t *h = make(arena, ARENA_SIZE, &log);
        unsigned char *a = hk_bump_malloc(h, 24);
        unsigned char *b = hk_bump_malloc(h, 24);
        int reached_b = a + hk_bump_usable_size(h, a) + n > b - HDR;
        assert_ptr_equal(b, a + gross(24));
        scribble(a + hk_bump_usable_size(h, a), n);
        assert_int_not_equal(hk_bump_check(h), HK_CHECK_OK);
        hk_bump_free(h, a);
        hk_bump_free(h, b);
        if (HK_HARDENING >= 2) {
            assert_true(atomic_load(&log.count) >= 1); /* a's canary; b's header too if the overflow got there */
        }
        if (reached_b) {
            expect_error(&log, atomic_load(&log.count), HK_ERR_CORRUPT, b);
            assert_int_equal(hk_bump_check(h), HK_CHECK_SIZE);
        } else {
            expect_error(&log, 1, HK_ERR_CORRUPT, a);
            assert_int_equal(hk_bump_check(h), HK_CHECK_OK);
        }
        exercise_after_damage(h, b - HDR, gross(24));
    }
}

/*
 * The same overflow from the last block into the tail, the only free block
 * a bump heap has. At level 1 the tail holds no state, and the next block's
 * header simply replaces what was written; at level 2 the canary reports it
 * on free and the tail's poison when malloc hands those bytes out, which
 * then become a dead block and the new block goes after them.
 */
static void test_overflow_into_the_tail(void **state)
{
    size_t n;
    (void)state;
    for (n = 1; n <= 16; n++) {
        error_log_t log;
        hk_bump_t *h = make(arena, ARENA_SIZE, &log);
        unsigned char *a = hk_bump_malloc(h, 24);
        unsigned char *tail = a + gross(24) - HDR;
        unsigned char *b;
        int reached_tail = a + hk_bump_usable_size(h, a) + n > tail;
        scribble(a + hk_bump_usable_size(h, a), n);
        b = hk_bump_malloc(h, 40);
        assert_non_null(b);
        if (HK_HARDENING >= 2 && reached_tail) {
            expect_error(&log, 1, HK_ERR_CORRUPT, tail + HDR);
            assert_true(b - HDR >= tail + gross(40)); /* placed after the damaged stretch, now dead */
        } else {
            assert_ptr_equal(b, tail + HDR);
            assert_int_equal(atomic_load(&log.count), 0);
        }
        hk_bump_free(h, a);
        if (HK_HARDENING >= 2) {
            assert_true(atomic_load(&log.count) >= 1);
            assert_int_equal(log.last, HK_ERR_CORRUPT);
        }
        assert_int_equal(hk_bump_check(h), HK_CHECK_OK);
        hk_bump_free(h, b);
        exercise_after_damage(h, HK_HARDENING >= 2 ? tail : NULL, gross(40));
        assert_int_equal(hk_bump_check(h), HK_CHECK_OK);
    }
}

/*
 * A write of 1..16 bytes at the start of a freed block, then malloc: a bump
 * heap never hands a dead block out again, so nothing can be given out
 * twice; at level 2 the dead block's poison shows the write to check().
 */
static void test_write_after_free(void **state)
{
    size_t n;
    (void)state;
    for (n = 1; n <= 16; n++) {
        error_log_t log;
        hk_bump_t *h = make(arena, ARENA_SIZE, &log);
        unsigned char *a = hk_bump_malloc(h, 24);
        unsigned char *b;
        hk_bump_free(h, a);
        scribble(a, n);
        assert_int_equal(hk_bump_check(h), HK_HARDENING >= 2 ? HK_CHECK_POISON : HK_CHECK_OK);
        b = hk_bump_malloc(h, 24);
        assert_ptr_equal(b, a + gross(24));
        assert_int_equal(atomic_load(&log.count), 0);
        hk_bump_free(h, a); /* still dead: a double free */
        expect_error(&log, 1, HK_ERR_DOUBLE_FREE, a);
        hk_bump_free(h, b);
        exercise_after_damage(h, a - HDR, gross(24));
    }
}

#endif

#if HK_HARDENING >= 2
/* Level 2: usable_size is the request; writing all of it is fine, one byte more is reported on free and realloc. */
static void test_canary_after_the_request(void **state)
{
    error_log_t log;
    hk_bump_t *h = make(big_arena, sizeof(big_arena), &log);
    unsigned char *a;
    size_t n;
    (void)state;
    for (n = 1; n < 100; n++) {
        a = hk_bump_malloc(h, n);
        assert_int_equal(hk_bump_usable_size(h, a), n);
        memset(a, 0x3C, n);
        hk_bump_free(h, a);
    }
    assert_int_equal(atomic_load(&log.count), 0);
    assert_int_equal(hk_bump_check(h), HK_CHECK_OK);
    a = hk_bump_malloc(h, 10);
    (void)hk_bump_malloc(h, 10); /* a is not last: realloc keeps it in place only when shrinking */
    a[10] = 0;
    assert_int_equal(hk_bump_check(h), HK_CHECK_CANARY);
    assert_ptr_equal(hk_realloc(hk_bump_heap(h), a, 9), a);
    expect_error(&log, 1, HK_ERR_CORRUPT, a);
    assert_int_equal(hk_bump_check(h), HK_CHECK_OK); /* the new canary is whole */
    a[9] ^= 0xFFu;
    hk_bump_free(h, a);
    expect_error(&log, 2, HK_ERR_CORRUPT, a);
    assert_int_equal(hk_bump_check(h), HK_CHECK_OK);
}
#endif

/* ---- walk, stats, reset, owns ---- */

static void walk_covers_the_span(void **state)
{
    hk_bump_t *h = make(arena, ARENA_SIZE, NULL);
    hk_stats_t s;
    const walk_log_t *w;
    size_t i;
    size_t total = 0;
    size_t used = 0;
    size_t used_gross = 0;
    size_t dead_gross = 0;
    void *p[6];
    (void)state;
    for (i = 0; i < 6; i++) {
        p[i] = hk_bump_malloc(h, 10 * i);
    }
    hk_bump_free(h, p[1]);
    hk_bump_free(h, p[4]);
    assert_non_null(hk_bump_aligned_alloc(h, 64, 8));
    s = stats_of(h);
    w = take_walk(h, &g_walk);
    for (i = 0; i < w->n; i++) {
        if (i > 0) {
            assert_ptr_equal((const unsigned char *)w->b[i - 1].start + w->b[i - 1].size, w->b[i].start);
        }
        total += w->b[i].size;
        if (w->b[i].used) {
            used++;
            used_gross += w->b[i].size;
            assert_int_equal(w->b[i].usable, hk_bump_usable_size(h, w->b[i].payload));
        } else if (i + 1 < w->n) {
            dead_gross += w->b[i].size;
        }
    }
    assert_int_equal(total, s.capacity);
    assert_int_equal(used, s.used_blocks);
    assert_int_equal(w->b[w->n - 1].size, s.free_bytes); /* the tail comes last */
    assert_int_equal(s.capacity, s.free_bytes + used_gross + dead_gross);
}

static void reset_forgets_everything(void **state)
{
    error_log_t log;
    hk_bump_t *h = make(arena, ARENA_SIZE, &log);
    const walk_log_t *w0;
    const walk_log_t *w;
    hk_stats_t s0;
    hk_stats_t s;
    unsigned char *a;
    unsigned char *b;
    unsigned char *c;
    (void)state;
    w0 = take_walk(h, &g_walk_before);
    s0 = stats_of(h);
    a = hk_bump_malloc(h, 8);
    b = hk_bump_malloc(h, 8);
    hk_bump_free(h, a);
    assert_null(hk_malloc(hk_bump_heap(h), SIZE_MAX));
    hk_bump_reset(h);
    s = stats_of(h);
    assert_stats_empty(&s);
    assert_int_equal(s.free_bytes, s0.free_bytes);
    assert_int_equal(s.largest_free, s0.largest_free);
    /* The cumulative counters stay. */
    assert_int_equal(s.alloc_count, 2);
    assert_int_equal(s.free_count, 1);
    assert_int_equal(s.fail_count, 1);
    assert_int_equal(s.peak_used, 2 * gross(8));
    assert_int_equal(s.min_ever_free, s0.free_bytes - 2 * gross(8));
    w = take_walk(h, &g_walk);
    assert_same_walk(w, w0);
    assert_int_equal(w->b[0].usable, w0->b[0].usable);
    assert_int_equal(hk_bump_check(h), 0);

#if HK_HARDENING >= 1
    /* A stale pointer past the new top is no block. */
    hk_bump_free(h, b);
    assert_int_equal(log.count, 1);
    assert_int_equal(log.last, HK_ERR_INTERIOR_PTR);
    /* One now inside a new block: its old header is intact but from an older epoch. */
    c = hk_bump_malloc(h, 100);
    assert_ptr_equal(c, a);
    hk_bump_free(h, b);
    assert_int_equal(log.count, 2);
    assert_int_equal(log.last, HK_ERR_INTERIOR_PTR);
    assert_int_equal(stats_of(h).used_blocks, 1);
#else
    (void)b;
    (void)c;
#endif
    assert_int_equal(hk_bump_check(h), 0);
}

static void owns_is_a_range_test(void **state)
{
    hk_bump_t *h = make(arena, ARENA_SIZE, NULL);
    unsigned char *p = hk_bump_malloc(h, 10);
    unsigned char local;
    hk_stats_t s = stats_of(h);
    (void)state;
    assert_true(hk_bump_owns(h, p));
    assert_true(hk_bump_owns(h, p + 9));
    assert_true(hk_bump_owns(h, p + s.capacity - HDR - 1));
    assert_false(hk_bump_owns(h, p + s.capacity));
    assert_false(hk_bump_owns(h, h));
    assert_false(hk_bump_owns(h, &local));
    assert_false(hk_bump_owns(h, NULL));
}

/* ---- the uniform interface ---- */

static int locks;
static int unlocks;
static void count_lock(void *ctx) { (void)ctx; locks++; }
static void count_unlock(void *ctx) { (void)ctx; unlocks++; }

static void uniform_interface_reaches_bump(void **state)
{
    hk_bump_t *h = make(arena, ARENA_SIZE, NULL);
    hk_heap_t *heap = hk_bump_heap(h);
    hk_hooks_t hooks;
    unsigned char *p;
    unsigned char *q;
    hk_stats_t s;
    size_t i;
    (void)state;
    memset(&hooks, 0, sizeof(hooks));
    hooks.lock = count_lock;
    hooks.unlock = count_unlock;
    hk_set_hooks(heap, &hooks);
    locks = unlocks = 0;
    memset(arena + 512, 0xFF, 256);
    p = hk_calloc(heap, 100, 10);
    assert_non_null(p);
    for (i = 0; i < 1000; i++) {
        assert_int_equal(p[i], 0);
    }
    assert_null(hk_calloc(heap, SIZE_MAX / 2, 4));
    q = hk_aligned_alloc(heap, 128, 10);
    assert_non_null(q);
    assert_int_equal((uintptr_t)q % 128, 0);
    assert_ptr_equal(hk_realloc(heap, q, 500), q);
    assert_int_equal(hk_usable_size(heap, q), usable(500));
    hk_free(heap, q);
    assert_true(hk_owns(heap, p));
    assert_int_equal(hk_check(heap), 0);
    hk_get_stats(heap, &s);
    assert_int_equal(s.fail_count, 1);
    assert_int_equal(s.used_blocks, 1);
    assert_true(locks > 0);
    assert_int_equal(locks, unlocks);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(init_rejects_bad_arenas),
        cmocka_unit_test(init_smallest_arena_holds_one_block),
        cmocka_unit_test(init_aligns_a_misaligned_arena),
        cmocka_unit_test(init_stats_describe_an_empty_heap),
        cmocka_unit_test(malloc_bumps_upward),
        cmocka_unit_test(malloc_zero_gives_unique_blocks),
        cmocka_unit_test(malloc_refuses_what_cannot_fit),
        cmocka_unit_test(malloc_fills_to_the_last_byte),
        cmocka_unit_test(free_counts_but_reclaims_nothing),
#if HK_HARDENING >= 1
        cmocka_unit_test(misuse_is_reported_and_harmless),
        cmocka_unit_test(corrupted_header_is_caught),
#endif
        cmocka_unit_test(check_catches_bad_counters),
        cmocka_unit_test(realloc_degenerate_cases),
        cmocka_unit_test(realloc_grows_the_last_block_in_place),
        cmocka_unit_test(realloc_shrinks_the_last_block_into_the_tail),
        cmocka_unit_test(realloc_moves_a_block_that_is_not_last),
        cmocka_unit_test(realloc_shrinking_a_middle_block_cuts_a_dead_rest),
        cmocka_unit_test(realloc_failure_leaves_the_block),
        cmocka_unit_test(aligned_alloc_pads_with_a_dead_filler),
        cmocka_unit_test(aligned_alloc_filler_is_walked_as_dead),
        cmocka_unit_test(aligned_alloc_refuses_bad_alignments),
#if HK_HARDENING >= 1
        cmocka_unit_test(test_overflow_into_used_neighbour),
        cmocka_unit_test(test_overflow_into_the_tail),
        cmocka_unit_test(test_write_after_free),
#endif
#if HK_HARDENING >= 2
        cmocka_unit_test(test_canary_after_the_request),
#endif
        cmocka_unit_test(walk_covers_the_span),
        cmocka_unit_test(reset_forgets_everything),
        cmocka_unit_test(owns_is_a_range_test),
        cmocka_unit_test(uniform_interface_reaches_bump),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
