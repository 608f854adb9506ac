/* SPDX-License-Identifier: MIT */
/*
 * Unit tests for dmm (src/dmm.c): config validation, the split and coalesce
 * level thresholds, each fit policy and list order on hand-built free lists,
 * dedicated-list routing, filing by size and rounding, the fall-back order
 * of a request, the work counters, resize and realloc, and each preset's
 * documented behaviour (does it split, does it coalesce, which block does it
 * pick), plus misuse, damaged blocks and lists (HK_HARDENING >= 1), canary
 * and poison (>= 2), and a checked random workload on every preset and on
 * 300 random configs.
 *
 * Blocks are carved from the top one after another, so expected addresses
 * are offsets from the first block. req(g) is the request whose gross size
 * is exactly g (g minus the tag, and minus the canary room at level 2);
 * every g written out is a multiple of 16 and at least 32 (no smaller than
 * HK_TAG_MIN_BLOCK in any geometry), so the expectations hold for the 4-byte
 * tag of 32-bit targets and the 8-byte one of 64-bit hosts, HK_ALIGN 8 and
 * 16 alike. Where the outcome turns on the smallest block (can a rest be
 * split off?), sizes are computed from MIN_BLOCK and HK_ALIGN.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "heapkit/dmm.h"
#include "tagged.h"
#include "testkit.h"

#define ARENA_SIZE (160u * 1024u)
#define HDR HK_TAG_HDR
#define MIN_BLOCK HK_TAG_MIN_BLOCK

static TEST_ARENA(ARENA_SIZE) g_arena;
static walk_log_t g_walk;
static uintptr_t g_base;

/* Request for a block of exactly gross bytes (gross a multiple of HK_ALIGN, at least MIN_BLOCK). */
static size_t req(size_t gross) { return gross - HDR - HK_CANARY_ROOM; }

/* usable_size of a block of gross bytes handed out for request: the request at level 2, else all of it. */
static size_t granted(size_t gross, size_t request) { return HK_CANARIES ? request : gross - HDR; }

static hk_dmm_config_t cfg_of(unsigned fit, unsigned order, unsigned split, unsigned coalesce)
{
    hk_dmm_config_t c;
    memset(&c, 0, sizeof(c));
    c.fit = fit;
    c.order = order;
    c.split = split;
    c.coalesce = coalesce;
    return c;
}

static const walk_log_t *walk(hk_dmm_t *d)
{
    hk_dmm_walk(d, collect_walk, walk_reset(&g_walk));
    assert_true(g_walk.n >= 1);
    return &g_walk;
}

static hk_dmm_t *make(const hk_dmm_config_t *cfg)
{
    hk_status_t st = HK_EINVAL;
    hk_dmm_t *d = hk_dmm_init(g_arena.bytes, ARENA_SIZE, cfg, &st);
    assert_int_equal(st, HK_OK);
    assert_non_null(d);
    g_base = (uintptr_t)walk(d)->b[0].start;
    return d;
}

static size_t off(const void *payload) { return (size_t)((uintptr_t)payload - HDR - g_base); }

static void *must_malloc(hk_dmm_t *d, size_t n)
{
    void *p = hk_dmm_malloc(d, n);
    assert_non_null(p);
    return p;
}

static hk_dmm_counters_t counters(const hk_dmm_t *d)
{
    hk_dmm_counters_t c;
    hk_dmm_get_counters(d, &c);
    return c;
}

static hk_stats_t stats(hk_dmm_t *d)
{
    hk_stats_t st;
    hk_dmm_get_stats(d, &st);
    return st;
}

/* The walked block starting at this offset (fails if none does). */
static const hk_block_info_t *block_at(hk_dmm_t *d, size_t block_off)
{
    const walk_log_t *w = walk(d);
    size_t i;
    for (i = 0; i < w->n; i++) {
        if ((uintptr_t)w->b[i].start - g_base == block_off) {
            return &w->b[i];
        }
    }
    fail_msg("no block at offset %zu", block_off);
    return NULL;
}

static void expect_block(hk_dmm_t *d, size_t block_off, size_t size, int used)
{
    const hk_block_info_t *b = block_at(d, block_off);
    assert_int_equal(b->size, size);
    assert_int_equal(b->used, used);
}

/* check() passes and the stats agree with a walk. */
static void expect_consistent(hk_dmm_t *d)
{
    hk_stats_t st;
    assert_int_equal(hk_dmm_check(d), HK_CHECK_OK);
    st = stats(d);
    assert_stats_match_walk(&st, walk(d));
}

/* Carve blocks of these gross sizes from the top, in order; returns their payloads. */
static void carve(hk_dmm_t *d, void **p, const size_t *gross, size_t n)
{
    size_t i;
    for (i = 0; i < n; i++) {
        p[i] = must_malloc(d, req(gross[i]));
    }
}

/* ---- config ---- */

static void test_level_thresholds(void **state)
{
    static const size_t want[] = {SIZE_MAX, 8192, 4096, 2048, 1024, 512, 256, 128, 64, 0};
    unsigned level;
    (void)state;
    for (level = 0; level <= HK_DMM_LEVEL_ALWAYS; level++) {
        assert_int_equal(hk_dmm_level_threshold(level), want[level]);
    }
    assert_int_equal(hk_dmm_level_threshold(10), SIZE_MAX);
}

static void expect_refused(const hk_dmm_config_t *c, hk_dmm_config_error_t want)
{
    hk_status_t st = HK_OK;
    assert_int_equal(hk_dmm_validate(c), want);
    assert_null(hk_dmm_init(g_arena.bytes, ARENA_SIZE, c, &st));
    assert_int_equal(st, HK_EINVAL);
    assert_string_not_equal(hk_dmm_config_error_name(want), "?");
}

static void test_validation(void **state)
{
    hk_dmm_config_t ok = cfg_of(HK_DMM_FIT_FIRST, HK_DMM_ORDER_LIFO, 9, 9);
    hk_dmm_config_t c;
    (void)state;
    ok.nlists = 2;
    ok.lists[0].lo = 16;
    ok.lists[0].hi = 16;
    ok.lists[1].lo = 17;
    ok.lists[1].hi = HK_DMM_LIST_MAX;
    assert_int_equal(hk_dmm_validate(&ok), HK_DMM_CFG_OK);
    expect_refused(NULL, HK_DMM_CFG_NULL);
    c = ok, c.fit = 5;
    expect_refused(&c, HK_DMM_CFG_FIT);
    c = ok, c.order = 3;
    expect_refused(&c, HK_DMM_CFG_ORDER);
    c = ok, c.split = 10;
    expect_refused(&c, HK_DMM_CFG_SPLIT);
    c = ok, c.coalesce = 10;
    expect_refused(&c, HK_DMM_CFG_COALESCE);
    c = ok, c.no_pool = 2;
    expect_refused(&c, HK_DMM_CFG_FLAG);
    c = ok, c.class_round = 2;
    expect_refused(&c, HK_DMM_CFG_FLAG);
    c = ok, c.nlists = HK_DMM_MAX_LISTS + 1u;
    expect_refused(&c, HK_DMM_CFG_NLISTS);
    c = ok, c.lists[0].lo = 17;
    expect_refused(&c, HK_DMM_CFG_RANGE);
    c = ok, c.lists[1].hi = HK_DMM_LIST_MAX + 1u;
    expect_refused(&c, HK_DMM_CFG_RANGE);
    c = ok, c.lists[1].lo = 16;
    expect_refused(&c, HK_DMM_CFG_OVERLAP);
    c = ok, c.pool_round = 24;
    expect_refused(&c, HK_DMM_CFG_POOL_ROUND);
    c = ok, c.pool_round = 2u * HK_DMM_ROUND_MAX;
    expect_refused(&c, HK_DMM_CFG_POOL_ROUND);
    c = ok, c.pool_round = HK_DMM_ROUND_MAX;
    assert_int_equal(hk_dmm_validate(&c), HK_DMM_CFG_OK);
    c = cfg_of(HK_DMM_FIT_BEST, HK_DMM_ORDER_LIFO, 0, 0), c.no_pool = 1;
    expect_refused(&c, HK_DMM_CFG_NO_POOL_LISTS);
    c = ok, c.no_pool = 1;
    expect_refused(&c, HK_DMM_CFG_NO_POOL_SPLIT);
    c.split = 0;
    expect_refused(&c, HK_DMM_CFG_NO_POOL_SPLIT);
    c.coalesce = 0;
    assert_int_equal(hk_dmm_validate(&c), HK_DMM_CFG_OK);
    assert_string_equal(hk_dmm_config_error_name((hk_dmm_config_error_t)99), "?");
}

static void test_init(void **state)
{
    hk_dmm_config_t c = cfg_of(HK_DMM_FIT_FIRST, HK_DMM_ORDER_LIFO, 9, 9);
    hk_status_t st = HK_OK;
    hk_stats_t empty;
    hk_dmm_t *d;
    (void)state;
    assert_null(hk_dmm_init(NULL, ARENA_SIZE, &c, &st));
    assert_int_equal(st, HK_EINVAL);
    assert_null(hk_dmm_init(g_arena.bytes, 16, &c, &st));
    assert_int_equal(st, HK_ETOOSMALL);
    d = make(&c);
    assert_memory_equal(hk_dmm_config(d), &c, sizeof(c));
    empty = stats(d);
    assert_stats_empty(&empty);
    expect_consistent(d);
    assert_string_equal(hk_name(hk_dmm_heap(d)), "dmm");
}

static void test_presets_listed(void **state)
{
    static const char *const names[] = {"wince", "winxp", "lea", "ose", "uclinux", "net"};
    size_t i;
    (void)state;
    for (i = 0; i < 6; i++) {
        assert_string_equal(hk_dmm_preset_name(i), names[i]);
        assert_non_null(hk_dmm_preset(names[i]));
        assert_int_equal(hk_dmm_validate(hk_dmm_preset(names[i])), HK_DMM_CFG_OK);
    }
    assert_null(hk_dmm_preset_name(6));
    assert_null(hk_dmm_preset("linux"));
    assert_null(hk_dmm_preset("wincex"));
    assert_null(hk_dmm_preset(NULL));
}

/* ---- fit policies ---- */

/*
 * Free blocks of 256, 128 and 192 bytes at offsets 0, 320 and 512, each
 * followed by a used 64-byte block, then the top at 768.
 */
static hk_dmm_t *three_holes(unsigned fit, unsigned order)
{
    static const size_t gross[] = {256, 64, 128, 64, 192, 64};
    hk_dmm_config_t c = cfg_of(fit, order, 0, 0);
    void *p[6];
    hk_dmm_t *d = make(&c);
    carve(d, p, gross, 6);
    hk_dmm_free(d, p[0]);
    hk_dmm_free(d, p[2]);
    hk_dmm_free(d, p[4]);
    assert_int_equal(off(p[4]), 512);
    expect_consistent(d);
    return d;
}

static void test_first_fit(void **state)
{
    hk_dmm_t *d = three_holes(HK_DMM_FIT_FIRST, HK_DMM_ORDER_ADDRESS);
    (void)state;
    assert_int_equal(off(must_malloc(d, req(128))), 0);
    assert_int_equal(off(must_malloc(d, req(128))), 320);
    assert_int_equal(off(must_malloc(d, req(128))), 512);
    assert_int_equal(off(must_malloc(d, req(128))), 768); /* the top */
    assert_int_equal(counters(d).examined, 1 + 1 + 1);
    assert_int_equal(counters(d).pool_hits, 3);
    assert_int_equal(counters(d).top_carves, 7);
    expect_consistent(d);
}

static void test_best_fit(void **state)
{
    hk_dmm_t *d = three_holes(HK_DMM_FIT_BEST, HK_DMM_ORDER_ADDRESS);
    (void)state;
    assert_int_equal(off(must_malloc(d, req(176))), 512); /* 192 beats 256 */
    assert_int_equal(counters(d).examined, 3);
    assert_int_equal(off(must_malloc(d, req(128))), 320); /* exact: the search stops there */
    assert_int_equal(counters(d).examined, 3 + 2);
    assert_int_equal(off(must_malloc(d, req(64))), 0);
    expect_consistent(d);
}

static void test_worst_fit(void **state)
{
    hk_dmm_t *d = three_holes(HK_DMM_FIT_WORST, HK_DMM_ORDER_ADDRESS);
    (void)state;
    assert_int_equal(off(must_malloc(d, req(64))), 0);
    assert_int_equal(off(must_malloc(d, req(64))), 512);
    assert_int_equal(off(must_malloc(d, req(64))), 320);
    assert_int_equal(off(must_malloc(d, req(64))), 768);
}

static void test_exact_fit(void **state)
{
    hk_dmm_t *d = three_holes(HK_DMM_FIT_EXACT, HK_DMM_ORDER_ADDRESS);
    void *p;
    size_t n = 0;
    (void)state;
    assert_int_equal(off(must_malloc(d, req(192))), 512);
    assert_int_equal(off(must_malloc(d, req(160))), 768); /* no exact block: the top */
    /* the top exhausted, a request falls back to first fit over the pool */
    while ((p = hk_dmm_malloc(d, req(1024))) != NULL) {
        n++;
    }
    while ((p = hk_dmm_malloc(d, req(32))) != NULL && off(p) >= 768) {
    }
    assert_non_null(p);
    assert_int_equal(off(p), 0);
    assert_true(n > 0);
    expect_consistent(d);
}

static void test_next_fit(void **state)
{
    hk_dmm_t *d = three_holes(HK_DMM_FIT_NEXT, HK_DMM_ORDER_ADDRESS);
    void *a;
    (void)state;
    a = must_malloc(d, req(64));
    assert_int_equal(off(a), 0);
    assert_int_equal(off(must_malloc(d, req(64))), 320); /* resumes after the block it took */
    hk_dmm_free(d, a);
    assert_int_equal(off(must_malloc(d, req(64))), 512);
    assert_int_equal(off(must_malloc(d, req(64))), 0); /* wraps around */
    expect_consistent(d);
}

/* ---- list order ---- */

/* Three free 128-byte blocks at 0, 192, 384 (64-byte used gaps), freed in the order 384, 0, 192. */
static hk_dmm_t *freed_out_of_order(unsigned order)
{
    static const size_t gross[] = {128, 64, 128, 64, 128, 64};
    hk_dmm_config_t c = cfg_of(HK_DMM_FIT_FIRST, order, 0, 0);
    void *p[6];
    hk_dmm_t *d = make(&c);
    carve(d, p, gross, 6);
    hk_dmm_free(d, p[4]);
    hk_dmm_free(d, p[0]);
    hk_dmm_free(d, p[2]);
    expect_consistent(d);
    return d;
}

static void test_order_lifo(void **state)
{
    hk_dmm_t *d = freed_out_of_order(HK_DMM_ORDER_LIFO);
    (void)state;
    assert_int_equal(off(must_malloc(d, req(128))), 192);
    assert_int_equal(off(must_malloc(d, req(128))), 0);
    assert_int_equal(off(must_malloc(d, req(128))), 384);
}

static void test_order_fifo(void **state)
{
    hk_dmm_t *d = freed_out_of_order(HK_DMM_ORDER_FIFO);
    (void)state;
    assert_int_equal(off(must_malloc(d, req(128))), 384);
    assert_int_equal(off(must_malloc(d, req(128))), 0);
    assert_int_equal(off(must_malloc(d, req(128))), 192);
}

static void test_order_address(void **state)
{
    hk_dmm_t *d = freed_out_of_order(HK_DMM_ORDER_ADDRESS);
    (void)state;
    assert_int_equal(counters(d).insert_steps, 0 + 0 + 1);
    assert_int_equal(off(must_malloc(d, req(128))), 0);
    assert_int_equal(off(must_malloc(d, req(128))), 192);
    assert_int_equal(off(must_malloc(d, req(128))), 384);
}

/* ---- splitting ---- */

/* A free block of `hole` gross bytes at offset 0, a used 64-byte guard after it. */
static hk_dmm_t *one_hole(const hk_dmm_config_t *c, size_t hole)
{
    size_t gross[2];
    void *p[2];
    hk_dmm_t *d = make(c);
    gross[0] = hole;
    gross[1] = 64;
    carve(d, p, gross, 2);
    hk_dmm_free(d, p[0]);
    expect_block(d, 0, hole, 0);
    return d;
}

/* Taking 64 bytes out of the hole: split or not, as the level says. */
static void expect_split(unsigned level, size_t hole, int splits)
{
    hk_dmm_config_t c = cfg_of(HK_DMM_FIT_FIRST, HK_DMM_ORDER_LIFO, level, 0);
    hk_dmm_t *d = one_hole(&c, hole);
    void *p = must_malloc(d, req(64));
    assert_int_equal(off(p), 0);
    if (splits) {
        expect_block(d, 0, 64, 1);
        expect_block(d, 64, hole - 64, 0);
    } else {
        expect_block(d, 0, hole, 1);
        assert_int_equal(hk_dmm_usable_size(d, p), granted(hole, req(64)));
    }
    assert_int_equal(counters(d).splits, (size_t)splits);
    expect_consistent(d);
    hk_dmm_free(d, p);
    expect_consistent(d);
}

static void test_split_levels(void **state)
{
    unsigned level;
    (void)state;
    expect_split(HK_DMM_LEVEL_NEVER, 64 + 8192, 0);
    expect_split(HK_DMM_LEVEL_NEVER, 64 + 32768, 0);
    expect_split(HK_DMM_LEVEL_ALWAYS, 64 + MIN_BLOCK, 1);
    expect_split(HK_DMM_LEVEL_ALWAYS, 64 + MIN_BLOCK - HK_ALIGN, 0); /* a rest below MIN_BLOCK cannot be a block */
    for (level = 1; level <= 8; level++) {
        size_t t = hk_dmm_level_threshold(level);
        assert_true(t - HK_ALIGN >= MIN_BLOCK); /* below the threshold, not below a block */
        expect_split(level, 64 + t, 1);
        expect_split(level, 64 + t - HK_ALIGN, 0);
    }
}

static void test_split_forced_by_waste(void **state)
{
    /* a block that would waste more than 64 KiB is split whatever the level */
    hk_dmm_config_t c = cfg_of(HK_DMM_FIT_FIRST, HK_DMM_ORDER_LIFO, 0, 0);
    hk_dmm_t *d = one_hole(&c, 64u + 65536u);
    void *p = must_malloc(d, req(64));
    (void)state;
    expect_block(d, 0, 64, 1);
    assert_int_equal(counters(d).splits, 1);
    hk_dmm_free(d, p);
    expect_consistent(d);
}

/* ---- coalescing ---- */

/*
 * P (128) then X (x bytes) then a used guard; P is freed first, then X.
 * Returns whether X merged with P.
 */
static int coalesces(unsigned level, size_t x)
{
    static const size_t guard = 64;
    hk_dmm_config_t c = cfg_of(HK_DMM_FIT_FIRST, HK_DMM_ORDER_LIFO, 0, level);
    size_t gross[3];
    void *p[3];
    hk_dmm_t *d = make(&c);
    int merged;
    gross[0] = 128;
    gross[1] = x;
    gross[2] = guard;
    carve(d, p, gross, 3);
    hk_dmm_free(d, p[0]);
    hk_dmm_free(d, p[1]);
    expect_consistent(d);
    merged = block_at(d, 0)->size == 128 + x;
    assert_int_equal(counters(d).coalesces, (size_t)merged);
    assert_int_equal(stats(d).free_blocks, merged ? 2u : 3u); /* the top counts */
    return merged;
}

static void test_coalesce_levels(void **state)
{
    unsigned level;
    (void)state;
    assert_false(coalesces(HK_DMM_LEVEL_NEVER, 16384));
    assert_true(coalesces(HK_DMM_LEVEL_ALWAYS, MIN_BLOCK));
    for (level = 1; level <= 8; level++) {
        size_t t = hk_dmm_level_threshold(level);
        assert_true(coalesces(level, t));
        assert_false(coalesces(level, t - HK_ALIGN));
    }
}

static void test_coalesce_both_sides_and_top(void **state)
{
    static const size_t gross[] = {128, 128, 128};
    hk_dmm_config_t c = cfg_of(HK_DMM_FIT_FIRST, HK_DMM_ORDER_LIFO, 9, 9);
    void *p[3];
    hk_dmm_t *d = make(&c);
    hk_stats_t st;
    (void)state;
    carve(d, p, gross, 3);
    hk_dmm_free(d, p[0]);
    hk_dmm_free(d, p[2]); /* merges into the top */
    assert_int_equal(stats(d).free_blocks, 2);
    hk_dmm_free(d, p[1]); /* merges with both: the heap is one block again */
    st = stats(d);
    assert_stats_empty(&st);
    assert_int_equal(counters(d).coalesces, 3);
    assert_int_equal(counters(d).max_top, 3u * 128u);
    expect_consistent(d);
}

/* ---- dedicated lists ---- */

static void test_list_routing(void **state)
{
    /* a list for 120-byte requests; everything else goes to the pool */
    static const size_t gross[] = {64, 128, 64, 64};
    hk_dmm_config_t c = cfg_of(HK_DMM_FIT_FIRST, HK_DMM_ORDER_LIFO, 9, 9);
    void *p[4];
    hk_dmm_t *d;
    void *q;
    (void)state;
    c.nlists = 1;
    c.lists[0].lo = req(128);
    c.lists[0].hi = req(128);
    d = make(&c);
    carve(d, p, gross, 4);
    hk_dmm_free(d, p[0]);
    hk_dmm_free(d, p[1]); /* to its list, not merged with its free neighbour */
    expect_block(d, 0, 64, 0);
    expect_block(d, 64, 128, 0);
    assert_int_equal(counters(d).coalesces, 0);
    expect_consistent(d);
    /* a pool request does not look at the list: the 64-byte hole is too small, so the top serves it */
    q = must_malloc(d, req(96));
    assert_int_equal(off(q), 320);
    hk_dmm_free(d, q);
    /* a listed request takes its list's block first */
    q = must_malloc(d, req(128));
    assert_int_equal(off(q), 64);
    assert_int_equal(counters(d).list_hits, 1);
    hk_dmm_free(d, q);
    /* a pool block freed next to a listed one absorbs it (one merge per side: the hole at 0 stays) */
    hk_dmm_free(d, p[2]);
    expect_block(d, 0, 64, 0);
    expect_block(d, 64, 128 + 64, 0);
    assert_int_equal(counters(d).coalesces, 2); /* this one, and q into the top */
    expect_consistent(d);
}

static void test_list_empty_falls_back(void **state)
{
    /* an empty list sends its request to the pool (split by the level) before the top */
    static const size_t gross[] = {256, 64};
    hk_dmm_config_t c = cfg_of(HK_DMM_FIT_FIRST, HK_DMM_ORDER_LIFO, 9, 0);
    void *p[2];
    hk_dmm_t *d;
    (void)state;
    c.nlists = 1;
    c.lists[0].lo = 1;
    c.lists[0].hi = req(64);
    d = make(&c);
    carve(d, p, gross, 2);
    hk_dmm_free(d, p[0]);
    assert_int_equal(off(must_malloc(d, req(64))), 0);
    assert_int_equal(counters(d).pool_hits, 1);
    assert_int_equal(counters(d).splits, 1);
    expect_consistent(d);
}

static void test_last_resort_is_any_list(void **state)
{
    /* top and pool exhausted: a request takes a fitting block from another list */
    hk_dmm_config_t c = cfg_of(HK_DMM_FIT_FIRST, HK_DMM_ORDER_LIFO, 0, 0);
    hk_dmm_t *d;
    void *p;
    void *big = NULL;
    (void)state;
    c.nlists = 1;
    c.lists[0].lo = 1000;
    c.lists[0].hi = 4000;
    d = make(&c);
    while ((p = hk_dmm_malloc(d, 2000)) != NULL) {
        big = p;
    }
    while (hk_dmm_malloc(d, 1) != NULL) { /* minimum blocks: the top goes down to nothing */
    }
    assert_non_null(big);
    assert_int_equal(stats(d).largest_free, 0);
    hk_dmm_free(d, big);
    assert_int_equal(counters(d).list_hits, 0);
    p = must_malloc(d, 16);
    assert_ptr_equal(p, big);
    assert_int_equal(counters(d).list_hits, 1);
    expect_consistent(d);
}

static void test_class_round(void **state)
{
    hk_dmm_config_t c = cfg_of(HK_DMM_FIT_FIRST, HK_DMM_ORDER_LIFO, 0, 0);
    hk_dmm_t *d;
    void *a;
    (void)state;
    c.class_round = 1;
    c.nlists = 2;
    c.lists[0].lo = 0;
    c.lists[0].hi = 64;
    c.lists[1].lo = 65;
    c.lists[1].hi = 128;
    d = make(&c);
    a = must_malloc(d, 10);
    assert_int_equal(hk_dmm_usable_size(d, a), granted(hk_tag_gross(64), 10));
    assert_int_equal(block_at(d, off(a))->size, hk_tag_gross(64));
    assert_int_equal(hk_dmm_usable_size(d, must_malloc(d, 65)), granted(hk_tag_gross(128), 65));
    hk_dmm_free(d, a);
    assert_ptr_equal(must_malloc(d, 64), a); /* any request of the class reuses the block */
    expect_consistent(d);
}

static void test_pool_round(void **state)
{
    hk_dmm_config_t c = cfg_of(HK_DMM_FIT_FIRST, HK_DMM_ORDER_LIFO, 0, 0);
    hk_dmm_t *d;
    void *a;
    void *b;
    (void)state;
    c.pool_round = 4096;
    d = make(&c);
    a = must_malloc(d, 1);
    b = must_malloc(d, req(4096) + 1u); /* one byte too many for 4 KiB */
    expect_block(d, 0, 4096, 1);
    expect_block(d, 4096, 8192, 1);
    assert_int_equal(hk_dmm_usable_size(d, a), granted(4096, 1));
    assert_int_equal(hk_dmm_usable_size(d, b), granted(8192, req(4096) + 1u));
    assert_int_equal(stats(d).used_requested, HK_CANARIES ? req(4096) + 2u : (4096 - HDR) + (8192 - HDR));
    expect_consistent(d);
}

static void test_no_pool(void **state)
{
    hk_dmm_config_t c = cfg_of(HK_DMM_FIT_FIRST, HK_DMM_ORDER_LIFO, 0, 0);
    hk_dmm_t *d;
    void *a;
    (void)state;
    c.no_pool = 1;
    c.nlists = 1;
    c.lists[0].lo = 10;
    c.lists[0].hi = 100;
    d = make(&c);
    assert_null(hk_dmm_malloc(d, 101));
    assert_null(hk_dmm_malloc(d, 9));
    assert_int_equal(stats(d).fail_count, 0); /* the direct calls count no failures */
    assert_null(hk_malloc(hk_dmm_heap(d), 101));
    assert_int_equal(stats(d).fail_count, 1);
    a = must_malloc(d, 50);
    assert_null(hk_dmm_resize(d, a, 200));
    assert_null(hk_realloc(hk_dmm_heap(d), a, 200)); /* cannot grow, cannot move: nothing serves 200 */
    assert_int_equal(stats(d).fail_count, 2);
    assert_int_equal(hk_dmm_usable_size(d, a), granted(hk_tag_gross(50), 50));
    hk_dmm_free(d, a);
    expect_consistent(d);
}

/* ---- resize and realloc, counters ---- */

static void test_resize_and_realloc(void **state)
{
    hk_dmm_config_t c = cfg_of(HK_DMM_FIT_FIRST, HK_DMM_ORDER_LIFO, 9, 9);
    hk_dmm_t *d = make(&c);
    hk_heap_t *h = hk_dmm_heap(d);
    unsigned char *a = (unsigned char *)must_malloc(d, req(512));
    void *guard = must_malloc(d, req(64));
    unsigned char *b;
    (void)state;
    memset(a, 0x5A, req(512));
    assert_ptr_equal(hk_dmm_resize(d, a, req(512)), a); /* the same size: nothing to cut */
    expect_block(d, 0, 512, 1);
    assert_ptr_equal(hk_dmm_resize(d, a, req(128)), a); /* shrinks in place, split */
    expect_block(d, 0, 128, 1);
    expect_block(d, 128, 384, 0);
    assert_int_equal(hk_dmm_usable_size(d, a), granted(128, req(128)));
    assert_int_equal(counters(d).splits, 1);
    assert_int_equal(stats(d).realloc_count, 0); /* the direct call counts nothing */
    expect_consistent(d);
    /* no growing in place, not even into the free block behind it: only the configured techniques merge */
    assert_null(hk_dmm_resize(d, a, req(128) + 1u));
    expect_block(d, 0, 128, 1);
    expect_block(d, 128, 384, 0);
    b = (unsigned char *)hk_realloc(h, a, req(256)); /* so hk_realloc moves it */
    assert_ptr_equal(b, a + 128);
    assert_int_equal(b[0], 0x5A);
    assert_int_equal(b[req(128) - 1u], 0x5A);
    assert_ptr_equal(hk_realloc(h, b, 1), b); /* in place through the uniform call */
    expect_consistent(d);
    assert_null(hk_realloc(h, b, 0));
    assert_ptr_equal(hk_realloc(h, NULL, 8), a);
    assert_int_equal(stats(d).realloc_count, 2);
    hk_dmm_free(d, guard);
    hk_dmm_free(d, a);
    expect_consistent(d);
}

static void test_resize_cuts_by_the_split_level(void **state)
{
    /* split level 0 keeps the block whole; level 8 cuts only rests of 64 bytes or more */
    hk_dmm_config_t c = cfg_of(HK_DMM_FIT_FIRST, HK_DMM_ORDER_LIFO, 0, 0);
    hk_dmm_t *d = make(&c);
    void *a = must_malloc(d, req(256));
    (void)state;
    must_malloc(d, req(64));
    assert_ptr_equal(hk_dmm_resize(d, a, req(64)), a);
    expect_block(d, 0, 256, 1);
    assert_int_equal(hk_dmm_usable_size(d, a), granted(256, req(64)));
    c.split = 8;
    d = make(&c);
    a = must_malloc(d, req(256));
    must_malloc(d, req(64));
    assert_ptr_equal(hk_dmm_resize(d, a, req(208)), a); /* a 48-byte rest stays */
    expect_block(d, 0, 256, 1);
    assert_ptr_equal(hk_dmm_resize(d, a, req(192)), a); /* a 64-byte rest is cut off */
    expect_block(d, 0, 192, 1);
    expect_block(d, 192, 64, 0);
    expect_consistent(d);
}

static void test_peaks(void **state)
{
    hk_dmm_config_t c = cfg_of(HK_DMM_FIT_FIRST, HK_DMM_ORDER_LIFO, 9, 9);
    hk_dmm_t *d = make(&c);
    void *a = must_malloc(d, 100);
    void *b = must_malloc(d, 200);
    hk_dmm_counters_t k;
    (void)state;
    hk_dmm_free(d, a);
    a = must_malloc(d, 50);
    k = counters(d);
    assert_int_equal(k.max_top, hk_tag_gross(100) + hk_tag_gross(200));
    hk_dmm_free(d, a);
    hk_dmm_free(d, b);
    assert_int_equal(counters(d).max_top, k.max_top);
}

/* ---- presets ---- */

static hk_dmm_t *preset(const char *name) { return make(hk_dmm_preset(name)); }

static void test_preset_wince(void **state)
{
    /* one pool, LIFO, first fit: the most recently freed hole that fits; merges; almost never splits */
    static const size_t gross[] = {256, 64, 128, 64, 64};
    void *p[5];
    hk_dmm_t *d = preset("wince");
    (void)state;
    carve(d, p, gross, 5);
    hk_dmm_free(d, p[0]);
    hk_dmm_free(d, p[2]);
    assert_int_equal(off(must_malloc(d, req(112))), 320); /* LIFO first fit, not the lower 256 hole */
    expect_block(d, 320, 128, 1);                          /* 16-byte rest: below level 1's threshold */
    p[2] = must_malloc(d, req(64));
    assert_int_equal(off(p[2]), 0);
    expect_block(d, 0, 256, 1); /* level 1: a 192-byte rest is not split off */
    hk_dmm_free(d, p[2]);
    hk_dmm_free(d, p[1]); /* merged with the free 256 below */
    expect_block(d, 0, 320, 0);
    assert_int_equal(counters(d).splits, 0);
    expect_consistent(d);
}

static void test_preset_winxp(void **state)
{
    /* 64-byte-wide lists up to 1024, FIFO, first fit, splits and merges in the pool */
    static const size_t gross[] = {128, 64, 128, 64, 2048, 64};
    void *p[6];
    hk_dmm_t *d = preset("winxp");
    (void)state;
    carve(d, p, gross, 6);
    hk_dmm_free(d, p[0]);
    hk_dmm_free(d, p[2]);
    assert_int_equal(off(must_malloc(d, req(128))), 0); /* FIFO: the first freed */
    assert_int_equal(counters(d).list_hits, 1);
    hk_dmm_free(d, p[1]); /* a listed block: not merged with the free 128 above it */
    expect_block(d, 128, 64, 0);
    expect_block(d, 192, 128, 0);
    hk_dmm_free(d, p[4]); /* pool block: split on reuse, merged on free */
    assert_int_equal(off(must_malloc(d, 1500)), 384);
    assert_int_equal(counters(d).splits, 1);
    expect_consistent(d);
}

static void test_preset_lea(void **state)
{
    /* best fit; small blocks (fast lists) never merge; splits only rests of 64 bytes or more */
    static const size_t gross[] = {256, 64, 192, 32, 64, 64};
    void *p[6];
    hk_dmm_t *d = preset("lea");
    void *q;
    (void)state;
    carve(d, p, gross, 6);
    hk_dmm_free(d, p[0]);
    hk_dmm_free(d, p[2]);
    q = must_malloc(d, req(160)); /* best fit: the 192 hole */
    assert_int_equal(off(q), 320);
    expect_block(d, 320, 192, 1); /* 32-byte rest: below the level's 64 */
    hk_dmm_free(d, q);
    q = must_malloc(d, req(128)); /* 64-byte rest: split */
    expect_block(d, 320, 128, 1);
    expect_block(d, 448, 64, 0);
    hk_dmm_free(d, p[3]); /* a 32-byte block: a fast list, not merged with the free 64 before it */
    expect_block(d, 448, 64, 0);
    expect_block(d, 512, 32, 0);
    hk_dmm_free(d, p[4]); /* a 64-byte block (a request below 64): fast list too */
    expect_block(d, 544, 64, 0);
    expect_consistent(d);
    hk_dmm_free(d, q); /* pool: merges with the 64-byte rest */
    expect_block(d, 320, 192, 0);
    expect_consistent(d);
}

static void test_preset_ose(void **state)
{
    /* eight power-of-two classes, no pool: rounds, never splits or merges, refuses big requests */
    hk_dmm_t *d = preset("ose");
    void *a = must_malloc(d, 10);
    void *b = must_malloc(d, 10);
    void *c;
    (void)state;
    assert_int_equal(hk_dmm_usable_size(d, a), granted(hk_tag_gross(32), 10));
    assert_int_equal(hk_dmm_usable_size(d, must_malloc(d, 1500)), granted(hk_tag_gross(2048), 1500));
    assert_null(hk_dmm_malloc(d, 4097));
    hk_dmm_free(d, a);
    hk_dmm_free(d, b);
    assert_int_equal(counters(d).coalesces, 0);
    assert_int_equal(stats(d).free_blocks, 3); /* two listed and the top */
    c = must_malloc(d, 30);
    assert_ptr_equal(c, b); /* LIFO within the class */
    c = must_malloc(d, 100); /* another class: a fresh block from the top */
    assert_true(off(c) > off(b));
    assert_int_equal(counters(d).splits, 0);
    expect_consistent(d);
}

static void test_preset_uclinux(void **state)
{
    /* power-of-two classes to 4 KiB, 4 KiB multiples above, no splitting or merging */
    hk_dmm_t *d = preset("uclinux");
    void *a = must_malloc(d, 100);
    void *b = must_malloc(d, 5000);
    void *c = must_malloc(d, 100);
    (void)state;
    assert_int_equal(hk_dmm_usable_size(d, a), granted(hk_tag_gross(128), 100));
    assert_int_equal(hk_dmm_usable_size(d, b), granted(8192, 5000));
    hk_dmm_free(d, a);
    hk_dmm_free(d, b);
    hk_dmm_free(d, c);
    assert_int_equal(counters(d).coalesces, 0);
    assert_ptr_equal(must_malloc(d, 4097), b); /* best fit: the 8 KiB block, not split */
    expect_block(d, off(b), 8192, 1);
    assert_int_equal(counters(d).splits, 0);
    expect_consistent(d);
}

static void test_preset_net(void **state)
{
    /* the paper's choice: lists for 16 and 1476 bytes, first fit, full splitting and merging */
    hk_dmm_t *d = preset("net");
    void *ack = must_malloc(d, 16);
    void *mtu = must_malloc(d, 1476);
    void *mid = must_malloc(d, 600);
    void *guard = must_malloc(d, 16);
    (void)state;
    hk_dmm_free(d, mtu);
    hk_dmm_free(d, ack);
    assert_ptr_equal(must_malloc(d, 1476), mtu);
    assert_ptr_equal(must_malloc(d, 16), ack);
    assert_int_equal(counters(d).list_hits, 2);
    hk_dmm_free(d, mid);
    assert_ptr_equal(must_malloc(d, 200), mid); /* first fit in the pool, split */
    assert_int_equal(counters(d).splits, 1);
    hk_dmm_free(d, mid);
    assert_int_equal(counters(d).coalesces, 1);
    hk_dmm_free(d, guard);
    expect_consistent(d);
}

/* ---- misuse ---- */

static void test_misuse(void **state)
{
    hk_dmm_t *d = preset("net");
    error_log_t log;
    unsigned char *a = (unsigned char *)must_malloc(d, 16);
    unsigned char *b = (unsigned char *)must_malloc(d, 600);
    unsigned char *over;
    hk_tag_t *t;
    hk_tag_t *saved;
    (void)state;
    if (!HK_CHECKS) {
        skip();
    }
    record_errors(hk_dmm_heap(d), &log);
    hk_dmm_free(d, a); /* onto the 16-byte list */
    assert_misuse_harmless(hk_dmm_heap(d), &log, a, HK_ERR_DOUBLE_FREE);
    memset(b, 0xFF, 600); /* what an interior pointer takes for a tag says "used", and fails the check */
    assert_misuse_harmless(hk_dmm_heap(d), &log, b + HK_ALIGN, HK_ERR_INTERIOR_PTR);
    assert_misuse_harmless(hk_dmm_heap(d), &log, &log, HK_ERR_FOREIGN_PTR);
    /* a broken list link is caught by check() */
    t = hk_tag_of(a);
    saved = hk_tag_links(t)->prev;
    hk_tag_links(t)->prev = t;
    assert_int_equal(hk_dmm_check(d), HK_CHECK_LINK);
    hk_tag_links(t)->prev = saved;
    assert_int_equal(hk_dmm_check(d), HK_CHECK_OK);
    /* a stray write over a used block's size is refused */
    t = hk_tag_of(b);
    t->size_used ^= 0x40u;
    hk_dmm_free(d, b);
    expect_error(&log, 10, HK_ERR_CORRUPT, b);
    t->size_used ^= 0x40u;
    /*
     * An overflow out of it lands in the right neighbour's copy of its size:
     * reported, that copy mended from the block's own (its left neighbour
     * vouches for it), and the block freed.
     */
    over = (unsigned char *)hk_tag_next(t);
    over[0] ^= 0x5Au;
    assert_int_equal(hk_dmm_check(d), HK_CHECK_NEIGHBOUR);
    hk_dmm_free(d, b);
    expect_error(&log, 11, HK_ERR_CORRUPT, b);
    assert_int_equal(log.count, 11);
    assert_int_equal(stats(d).used_blocks, 0);
    expect_consistent(d);
}

/* A free block whose size no longer agrees with its neighbour is reported and never handed out. */
static void test_damaged_free_block(void **state)
{
    hk_dmm_config_t c = cfg_of(HK_DMM_FIT_FIRST, HK_DMM_ORDER_LIFO, 0, 9);
    hk_dmm_t *d;
    error_log_t log;
    void *a;
    void *g;
    void *p;
    hk_tag_t *t;
    (void)state;
    if (!HK_CHECKS) {
        skip();
    }
    c.nlists = 1;
    c.lists[0].lo = 16;
    c.lists[0].hi = 16;
    d = make(&c);
    record_errors(hk_dmm_heap(d), &log);
    a = must_malloc(d, 16);
    g = must_malloc(d, req(64));
    hk_dmm_free(d, a); /* onto the list */
    t = hk_tag_of(a);
    t->size_used ^= 0x40u;
    assert_int_not_equal(hk_dmm_check(d), HK_CHECK_OK);
    p = must_malloc(d, 16); /* the list's block fails its check: taken off, and the top serves */
    expect_error(&log, 1, HK_ERR_CORRUPT, a);
    assert_true(off(p) > off(g));
    hk_dmm_free(d, g); /* its left neighbour disagrees with it: refused */
    expect_error(&log, 2, HK_ERR_CORRUPT, g);
    t->size_used ^= 0x40u;
    assert_int_equal(hk_dmm_check(d), HK_CHECK_COUNT); /* sound again, but out of service */
    hk_dmm_free(d, g); /* a is on no list any more: not merged */
    expect_error(&log, 3, HK_ERR_CORRUPT, a);
    expect_block(d, off(g), 64, 0);
    p = must_malloc(d, 16);
    assert_ptr_equal(p, g); /* the pool's block; never a */
    assert_int_equal(log.count, 3);
}

/* A list whose links fail is reported and dropped; the heap goes on serving from elsewhere. */
static void test_damaged_list(void **state)
{
    static const size_t gross[] = {128, 64, 128, 64, 256, 64};
    hk_dmm_config_t c = cfg_of(HK_DMM_FIT_FIRST, HK_DMM_ORDER_LIFO, 0, 0);
    unsigned bad;
    (void)state;
    if (!HK_CHECKS) {
        skip();
    }
    for (bad = 0; bad < 3; bad++) {
        hk_dmm_t *d = make(&c);
        error_log_t log;
        void *p[6];
        void *q;
        hk_tag_links_t *links;
        record_errors(hk_dmm_heap(d), &log);
        carve(d, p, gross, 6);
        hk_dmm_free(d, p[4]);
        hk_dmm_free(d, p[2]);
        hk_dmm_free(d, p[0]); /* the pool, head first: 0, 2, 4 */
        links = hk_tag_links(hk_tag_of(p[2]));
        if (bad == 0) {
            links->next = hk_tag_of(p[1]); /* a used block */
        } else if (bad == 1) {
            links->next = (hk_tag_t *)(void *)&log; /* outside the heap */
        } else {
            links->next = hk_tag_of(p[0]); /* a free block that does not link back: a loop */
        }
        assert_int_not_equal(hk_dmm_check(d), HK_CHECK_OK);
        q = must_malloc(d, req(256)); /* the search passes 0 and 2, then meets the bad link */
        expect_error(&log, 1, HK_ERR_CORRUPT, p[2]);
        assert_int_equal(off(q), 704); /* the top */
        q = must_malloc(d, req(128)); /* the pool is gone: the top again */
        assert_int_equal(off(q), 704 + 256);
        hk_dmm_free(d, p[1]);
        assert_ptr_equal(must_malloc(d, req(64)), p[1]); /* the new pool works */
        assert_int_equal(log.count, 1);
    }
}

/* A free neighbour whose links fail is reported and not merged. */
static void test_damaged_neighbour_links(void **state)
{
    static const size_t gross[] = {128, 64, 64};
    hk_dmm_config_t c = cfg_of(HK_DMM_FIT_FIRST, HK_DMM_ORDER_LIFO, 0, 9);
    hk_dmm_t *d;
    error_log_t log;
    void *p[3];
    (void)state;
    if (!HK_CHECKS) {
        skip();
    }
    d = make(&c);
    record_errors(hk_dmm_heap(d), &log);
    carve(d, p, gross, 3);
    hk_dmm_free(d, p[0]);
    hk_tag_links(hk_tag_of(p[0]))->prev = (hk_tag_t *)(void *)&log;
    hk_dmm_free(d, p[1]);
    expect_error(&log, 1, HK_ERR_CORRUPT, p[0]);
    expect_block(d, 0, 128, 0);
    expect_block(d, 128, 64, 0);
    assert_int_equal(counters(d).coalesces, 0);
}

/* A damaged top is reported and forgotten; the blocks beside it are not merged with it. */
static void test_damaged_top(void **state)
{
    hk_dmm_config_t c = cfg_of(HK_DMM_FIT_FIRST, HK_DMM_ORDER_LIFO, 0, 9);
    hk_dmm_t *d = make(&c);
    error_log_t log;
    void *a = must_malloc(d, req(128));
    hk_tag_t *top = hk_tag_next(hk_tag_of(a));
    (void)state;
    if (!HK_CHECKS) {
        skip();
    }
    record_errors(hk_dmm_heap(d), &log);
    top->size_used ^= 0x40u;
    assert_null(hk_dmm_malloc(d, 16));
    expect_error(&log, 1, HK_ERR_CORRUPT, hk_tag_payload(top));
    hk_dmm_free(d, a);
    expect_error(&log, 2, HK_ERR_CORRUPT, hk_tag_payload(top));
    assert_ptr_equal(hk_dmm_malloc(d, 16), a);
    assert_int_equal(log.count, 2);
}

/* Level 2: a write into a free block is reported when it is handed out; one past a request, when it is freed. */
static void test_poison_and_canary(void **state)
{
    hk_dmm_config_t c = cfg_of(HK_DMM_FIT_FIRST, HK_DMM_ORDER_LIFO, 0, 0);
    hk_dmm_t *d = make(&c);
    error_log_t log;
    unsigned char *a = (unsigned char *)must_malloc(d, req(128));
    void *g = must_malloc(d, req(64));
    unsigned char *top;
    unsigned char *p;
    (void)state;
    if (!HK_CANARIES) {
        skip();
    }
    record_errors(hk_dmm_heap(d), &log);
    hk_dmm_free(d, a);
    a[sizeof(hk_tag_links_t) + 5u] ^= 0xFFu; /* after the links: poisoned */
    assert_int_equal(hk_dmm_check(d), HK_CHECK_POISON);
    assert_ptr_equal(must_malloc(d, req(128)), a);
    expect_error(&log, 1, HK_ERR_CORRUPT, a);
    hk_dmm_free(d, a); /* poisoned afresh */
    expect_consistent(d);
    /* the top: the part handed out is checked */
    top = (unsigned char *)hk_tag_payload(hk_tag_next(hk_tag_of(g)));
    top[sizeof(hk_tag_links_t) + 5u] ^= 0xFFu;
    p = (unsigned char *)must_malloc(d, req(256)); /* too big for the pool's block */
    assert_ptr_equal(p, top);
    expect_error(&log, 2, HK_ERR_CORRUPT, top);
    expect_consistent(d);
    /* the canary after a request */
    p[req(256)] ^= 0xFFu;
    assert_int_equal(hk_dmm_check(d), HK_CHECK_CANARY);
    hk_dmm_free(d, p);
    expect_error(&log, 3, HK_ERR_CORRUPT, p);
    assert_null(hk_dmm_resize(d, p, 8));
    expect_error(&log, 4, HK_ERR_CORRUPT, p);
    p[req(256)] ^= 0xFFu;
    hk_dmm_free(d, p);
    hk_dmm_free(d, g);
    assert_int_equal(log.count, 4);
    expect_consistent(d);
}

/* Blocks are filed by size: two lists whose requests get one block size share it, and a block goes where its size belongs. */
static void test_filing_by_size(void **state)
{
    static const size_t gross[] = {256, 64};
    hk_dmm_config_t c = cfg_of(HK_DMM_FIT_FIRST, HK_DMM_ORDER_LIFO, 0, 0);
    hk_dmm_t *d;
    void *p[2];
    void *a;
    (void)state;
    assert_int_equal(hk_tag_gross(4), hk_tag_gross(8)); /* the smallest block, whatever the tag's size */
    c.nlists = 2;
    c.lists[0].lo = 1;
    c.lists[0].hi = 4;
    c.lists[1].lo = 5;
    c.lists[1].hi = 8;
    d = make(&c);
    a = must_malloc(d, 4);
    must_malloc(d, req(64));
    hk_dmm_free(d, a);
    assert_ptr_equal(must_malloc(d, 8), a); /* a request of the second list finds the first's block */
    assert_int_equal(counters(d).list_hits, 1);
    expect_consistent(d);
    /* a pool block that served a listed request unsplit goes back to the pool */
    c.nlists = 1;
    c.lists[0].lo = 16;
    c.lists[0].hi = 16;
    d = make(&c);
    carve(d, p, gross, 2);
    hk_dmm_free(d, p[0]);
    a = must_malloc(d, 16);
    assert_ptr_equal(a, p[0]);
    expect_block(d, 0, 256, 1);
    hk_dmm_free(d, a);
    assert_ptr_equal(must_malloc(d, req(256)), p[0]); /* a pool request finds it in the pool */
    assert_int_equal(counters(d).pool_hits, 2);
    expect_consistent(d);
}

static void test_random_stats(void **state)
{
    static const char *const names[] = {"wince", "winxp", "lea", "ose", "uclinux", "net"};
    size_t i;
    (void)state;
    for (i = 0; i < 6; i++) {
        stats_workload_t w;
        size_t step;
        hk_dmm_t *d = preset(names[i]);
        stats_workload_start(&w, hk_dmm_heap(d), HDR, 7 + i);
        for (step = 0; step < 3000; step++) {
            stats_workload_step(&w);
            if (step % 64 == 0) {
                assert_int_equal(hk_dmm_check(d), 0);
            }
        }
        stats_workload_finish(&w);
        expect_consistent(d);
    }
}

/* A random valid config: every technique at a random level, up to 4 lists of random ranges. */
static hk_dmm_config_t random_config(void)
{
    static const unsigned rounds[] = {0, 64, 4096};
    hk_dmm_config_t c = cfg_of((unsigned)rng_below(5), (unsigned)rng_below(3), (unsigned)rng_below(10),
                               (unsigned)rng_below(10));
    uint32_t lo = (uint32_t)rng_below(64);
    unsigned i;
    c.nlists = (unsigned)rng_below(5);
    for (i = 0; i < c.nlists; i++) {
        c.lists[i].lo = lo;
        c.lists[i].hi = lo + (uint32_t)(rng_below(3) == 0 ? 0 : rng_below(1500));
        lo = c.lists[i].hi + 1u + (uint32_t)rng_below(800);
    }
    c.class_round = (unsigned)rng_below(2);
    c.pool_round = rounds[rng_below(3)];
    if (c.nlists > 0 && rng_below(8) == 0) {
        c.no_pool = 1;
        c.split = 0;
        c.coalesce = 0;
    }
    return c;
}

static void test_random_configs(void **state)
{
    /* what exploration does: many configs, each on a fresh heap, the heap checked throughout */
    size_t i;
    (void)state;
    rng_seed(2006);
    for (i = 0; i < 300; i++) {
        hk_dmm_config_t c = random_config();
        stats_workload_t w;
        size_t step;
        hk_dmm_t *d;
        assert_int_equal(hk_dmm_validate(&c), HK_DMM_CFG_OK);
        d = make(&c);
        stats_workload_start(&w, hk_dmm_heap(d), HDR, 100 + i);
        for (step = 0; step < 1500; step++) {
            stats_workload_step(&w);
            if (step % 50 == 0) {
                assert_int_equal(hk_dmm_check(d), 0);
            }
        }
        stats_workload_finish(&w);
        expect_consistent(d);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_level_thresholds),
        cmocka_unit_test(test_validation),
        cmocka_unit_test(test_init),
        cmocka_unit_test(test_presets_listed),
        cmocka_unit_test(test_first_fit),
        cmocka_unit_test(test_best_fit),
        cmocka_unit_test(test_worst_fit),
        cmocka_unit_test(test_exact_fit),
        cmocka_unit_test(test_next_fit),
        cmocka_unit_test(test_order_lifo),
        cmocka_unit_test(test_order_fifo),
        cmocka_unit_test(test_order_address),
        cmocka_unit_test(test_split_levels),
        cmocka_unit_test(test_split_forced_by_waste),
        cmocka_unit_test(test_coalesce_levels),
        cmocka_unit_test(test_coalesce_both_sides_and_top),
        cmocka_unit_test(test_list_routing),
        cmocka_unit_test(test_list_empty_falls_back),
        cmocka_unit_test(test_last_resort_is_any_list),
        cmocka_unit_test(test_class_round),
        cmocka_unit_test(test_pool_round),
        cmocka_unit_test(test_no_pool),
        cmocka_unit_test(test_resize_and_realloc),
        cmocka_unit_test(test_resize_cuts_by_the_split_level),
        cmocka_unit_test(test_peaks),
        cmocka_unit_test(test_preset_wince),
        cmocka_unit_test(test_preset_winxp),
        cmocka_unit_test(test_preset_lea),
        cmocka_unit_test(test_preset_ose),
        cmocka_unit_test(test_preset_uclinux),
        cmocka_unit_test(test_preset_net),
        cmocka_unit_test(test_misuse),
        cmocka_unit_test(test_damaged_free_block),
        cmocka_unit_test(test_damaged_list),
        cmocka_unit_test(test_damaged_neighbour_links),
        cmocka_unit_test(test_damaged_top),
        cmocka_unit_test(test_poison_and_canary),
        cmocka_unit_test(test_filing_by_size),
        cmocka_unit_test(test_random_stats),
        cmocka_unit_test(test_random_configs),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
