/* SPDX-License-Identifier: MIT */
/* Unit tests for the Fibonacci and weighted buddy systems (src/gbuddy.c). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "heapkit/gbuddy.h"
#include "testkit.h"

#define MB ((size_t)HK_GBUDDY_MIN_BLOCK)
#define EXTRA ((size_t)(HK_HARDENING >= 2 ? 4u + sizeof(size_t) : 0u))
#define STORAGE (256u * 1024u)
#define LIVE 256u

static unsigned char storage[STORAGE] __attribute__((aligned(64)));

/* The first sizes of each sequence, in atoms (gbuddy.h). */
static const size_t fib_sizes[] = {1, 2, 3, 5, 8, 13, 21, 34, 55, 89, 144, 233, 377, 610, 987};
static const size_t weighted_sizes[] = {1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512};

static hk_gbuddy_t *make(hk_gbuddy_kind_t kind, size_t size)
{
    hk_gbuddy_config_t cfg;
    hk_status_t st;
    hk_gbuddy_t *h;
    cfg.min_block = 0;
    cfg.kind = kind;
    h = hk_gbuddy_init(storage, size, &cfg, &st);
    assert_non_null(h);
    assert_int_equal(st, HK_OK);
    assert_int_equal(hk_gbuddy_check(h), HK_CHECK_OK);
    return h;
}

static hk_stats_t stats_of(hk_gbuddy_t *h)
{
    hk_stats_t s;
    hk_gbuddy_get_stats(h, &s);
    return s;
}

/* Every request gets the smallest size of its sequence that holds it (and the level-2 extras). */
static void expect_sizes(hk_gbuddy_kind_t kind, const size_t *sizes, size_t n)
{
    hk_gbuddy_t *h = make(kind, STORAGE);
    size_t req;
    for (req = 1; req + EXTRA <= sizes[n - 1] * MB; req += 7) {
        size_t atoms = (req + EXTRA + MB - 1) / MB;
        size_t i = 0;
        void *p;
        while (sizes[i] < atoms) {
            i++;
        }
        p = hk_gbuddy_malloc(h, req);
        assert_non_null(p);
        assert_int_equal((uintptr_t)p % MB, 0);
        if (HK_HARDENING < 2) {
            assert_int_equal(hk_gbuddy_usable_size(h, p), sizes[i] * MB);
        } else {
            assert_int_equal(hk_gbuddy_usable_size(h, p), req);
        }
        hk_gbuddy_free(h, p);
        assert_int_equal(hk_gbuddy_check(h), HK_CHECK_OK);
    }
}

static void test_fibonacci_sizes(void **state)
{
    (void)state;
    expect_sizes(HK_GBUDDY_FIBONACCI, fib_sizes, sizeof(fib_sizes) / sizeof(fib_sizes[0]));
}

static void test_weighted_sizes(void **state)
{
    (void)state;
    expect_sizes(HK_GBUDDY_WEIGHTED, weighted_sizes, sizeof(weighted_sizes) / sizeof(weighted_sizes[0]));
}

/*
 * Random allocations and frees, the heap checked after each (check() says
 * UNMERGED if a free block and its buddy are both free); once everything is
 * freed the heap is the one init made: the splits down to single atoms and
 * back exercise every side code the parts keep for their parents.
 */
static void churn_and_restore(hk_gbuddy_kind_t kind, size_t max_request)
{
    hk_gbuddy_t *h = make(kind, 64u * 1024u);
    hk_stats_t s0 = stats_of(h);
    void *live[LIVE];
    size_t i;
    memset(live, 0, sizeof(live));
    rng_seed(22u + (unsigned)kind);
    for (i = 0; i < 20000u; i++) {
        size_t slot = rng_below(LIVE);
        if (live[slot] != NULL) {
            hk_gbuddy_free(h, live[slot]);
            live[slot] = NULL;
        } else {
            live[slot] = hk_gbuddy_malloc(h, 1u + rng_below(max_request));
            if (live[slot] != NULL) {
                memset(live[slot], 0x5A, hk_gbuddy_usable_size(h, live[slot]));
            }
        }
        if (i % 64u == 0) {
            assert_int_equal(hk_gbuddy_check(h), HK_CHECK_OK);
        }
    }
    for (i = 0; i < LIVE; i++) {
        hk_gbuddy_free(h, live[(i * 97u) % LIVE]);
        live[(i * 97u) % LIVE] = NULL;
        assert_int_equal(hk_gbuddy_check(h), HK_CHECK_OK);
    }
    {
        hk_stats_t s = stats_of(h);
        assert_int_equal(s.free_bytes, s0.free_bytes);
        assert_int_equal(s.free_blocks, s0.free_blocks);
        assert_int_equal(s.largest_free, s0.largest_free);
        assert_int_equal(s.used_blocks, 0);
        assert_true(s.split_count > 1000u);
        assert_int_equal(s.split_count, s.coalesce_count);
    }
}

static void test_fibonacci_churn(void **state)
{
    (void)state;
    churn_and_restore(HK_GBUDDY_FIBONACCI, 40u);
    churn_and_restore(HK_GBUDDY_FIBONACCI, 2000u);
}

static void test_weighted_churn(void **state)
{
    (void)state;
    churn_and_restore(HK_GBUDDY_WEIGHTED, 40u);
    churn_and_restore(HK_GBUDDY_WEIGHTED, 2000u);
}

/* Every atom handed out as a one-atom block, then freed from the top down: all merges back. */
static void fill_with_atoms(hk_gbuddy_kind_t kind)
{
    hk_gbuddy_t *h = make(kind, 8u * 1024u);
    hk_stats_t s0 = stats_of(h);
    static void *blocks[8u * 1024u / 16u];
    size_t n = 0;
    size_t i;
    while ((blocks[n] = hk_gbuddy_malloc(h, HK_HARDENING >= 2 ? 1u : MB)) != NULL) {
        n++;
    }
    assert_int_equal(n * MB, s0.free_bytes);
    assert_int_equal(stats_of(h).free_blocks, 0);
    for (i = n; i-- > 0;) {
        hk_gbuddy_free(h, blocks[i]);
    }
    assert_int_equal(hk_gbuddy_check(h), HK_CHECK_OK);
    assert_int_equal(stats_of(h).free_blocks, s0.free_blocks);
    assert_int_equal(stats_of(h).largest_free, s0.largest_free);
}

static void test_fill_with_atoms(void **state)
{
    (void)state;
    fill_with_atoms(HK_GBUDDY_FIBONACCI);
    fill_with_atoms(HK_GBUDDY_WEIGHTED);
}

/* A Fibonacci request of 4 atoms is served from the 5-atom size, not rounded to 8 as the binary buddy does. */
static void test_fibonacci_waste_below_binary(void **state)
{
    hk_gbuddy_t *h;
    void *p;
    (void)state;
    h = make(HK_GBUDDY_FIBONACCI, STORAGE);
    p = hk_gbuddy_malloc(h, 4u * MB + 1u - EXTRA);
    assert_non_null(p);
    assert_int_equal(stats_of(h).free_bytes + 5u * MB, stats_of(h).capacity);
    hk_gbuddy_free(h, p);
}

/* Arguments the init refuses. */
static void test_init_refuses(void **state)
{
    hk_gbuddy_config_t cfg;
    hk_status_t st;
    (void)state;
    assert_null(hk_gbuddy_init(NULL, STORAGE, NULL, &st));
    assert_int_equal(st, HK_EINVAL);
    cfg.min_block = 24;
    cfg.kind = HK_GBUDDY_FIBONACCI;
    assert_null(hk_gbuddy_init(storage, STORAGE, &cfg, &st));
    assert_int_equal(st, HK_EINVAL);
    cfg.min_block = 0;
    cfg.kind = (hk_gbuddy_kind_t)7;
    assert_null(hk_gbuddy_init(storage, STORAGE, &cfg, &st));
    assert_int_equal(st, HK_EINVAL);
    assert_null(hk_gbuddy_init(storage, 64, NULL, &st));
    assert_int_equal(st, HK_ETOOSMALL);
}

/* Level 1: a damaged link in a free block is reported when a call takes the block, and never handed out. */
static void test_damaged_link_reported(void **state)
{
    hk_gbuddy_t *h;
    error_log_t log;
    void *a;
    void *b = NULL;
    void *c;
    (void)state;
    if (HK_HARDENING < 1) {
        skip();
    }
    h = make(HK_GBUDDY_FIBONACCI, 4u * 1024u);
    record_errors(hk_gbuddy_heap(h), &log);
    while ((a = hk_gbuddy_malloc(h, 1)) != NULL) {
        b = a; /* every atom its own block: a freed one has a used buddy and stays alone on its list */
    }
    hk_gbuddy_free(h, b);
    memset(b, 0x11, sizeof(void *)); /* write after free: the next link */
    c = hk_gbuddy_malloc(h, 1);
    assert_true(c != b);
    expect_error(&log, 1, HK_ERR_CORRUPT, b);
    assert_int_equal(hk_gbuddy_check(h), HK_CHECK_OK);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fibonacci_sizes),    cmocka_unit_test(test_weighted_sizes),
        cmocka_unit_test(test_fibonacci_churn),    cmocka_unit_test(test_weighted_churn),
        cmocka_unit_test(test_fill_with_atoms),    cmocka_unit_test(test_fibonacci_waste_below_binary),
        cmocka_unit_test(test_init_refuses),       cmocka_unit_test(test_damaged_link_reported),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
