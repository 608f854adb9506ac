/* SPDX-License-Identifier: MIT */
/*
 * Unit tests for tlsf (src/tlsf.c): the list mapping as far as behaviour
 * shows it (the own-list try, rounding up past a too-small block, the bitmap
 * search across first levels), init and its errors, immediate
 * coalescing, splitting, realloc, aligned_alloc, malloc(0), hopeless sizes,
 * the hk_stats_t counters and geometry, many free blocks, misuse and a
 * seeded random stress with check() after every operation.
 *
 * Expected addresses are offsets from the first block, derived from the
 * layout in src/tagged.h (an HK_TAG_HDR-byte tag: 4 bytes on 32-bit targets,
 * 8 on 64-bit hosts; gross sizes rounded to HK_ALIGN and at least
 * HK_TAG_MIN_BLOCK) and, for the list tests, from the mapping the header
 * comment of src/tlsf.c describes: sizes below 2^(SL + log2 HK_ALIGN)
 * map linearly, above that [2^f, 2^(f+1)) is cut into 2^SL lists of
 * 2^(f - SL) bytes (SL = HK_TLSF_SL_LOG2, which the build sets: the suite
 * runs at several). Fresh heaps carve blocks from the start of their
 * single free block, so consecutive mallocs sit side by side.
 *
 * Hand-worked layouts name gross sizes, not requests: req(g) is the request
 * whose block is exactly g bytes. Every g written out is a multiple of 16 and
 * at least 32 (>= HK_TAG_MIN_BLOCK in every geometry), so those layouts hold
 * for every tag size and for HK_ALIGN 8 and 16; thresholds that depend on
 * the geometry are computed from HDR, MIN_BLOCK and HK_ALIGN.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "heapkit/tlsf.h"
#include "tagged.h"
#include "testkit.h"

#define ARENA_SIZE (128u * 1024u)
#define HDR HK_TAG_HDR
#define MIN_BLOCK HK_TAG_MIN_BLOCK

static TEST_ARENA(ARENA_SIZE) g_arena;
static walk_log_t g_walk;
static uintptr_t g_base; /* start of the first block of the heap under test */

#define SL HK_TLSF_SL_LOG2

static size_t gross_of(size_t request) { return gross_size(request, HDR, MIN_BLOCK); }

/* The request whose block is exactly `gross` bytes (a multiple of HK_ALIGN, at least MIN_BLOCK). */
static size_t req(size_t gross)
{
    assert_true(gross >= MIN_BLOCK && gross % HK_ALIGN == 0);
    assert_int_equal(gross_of(gross - HDR), gross);
    return gross - HDR;
}

static unsigned log2_floor(size_t x)
{
    unsigned r = 0;
    while (x >>= 1) {
        r++;
    }
    return r;
}

/* First size outside the linear lists. */
static size_t small_limit(void) { return (size_t)1 << (SL + log2_floor(HK_ALIGN)); }

/* Width of the list a size falls in. */
static size_t list_width(size_t size)
{
    return size < small_limit() ? (size_t)HK_ALIGN : (size_t)1 << (log2_floor(size) - SL);
}

/* A size rounded up to the start of the next list (unchanged on a boundary): every block there fits it. */
static size_t list_round(size_t size)
{
    size_t w = list_width(size);
    return (size + w - 1u) & ~(w - 1u);
}

static const walk_log_t *walk(hk_tlsf_t *t)
{
    hk_tlsf_walk(t, collect_walk, walk_reset(&g_walk));
    assert_true(g_walk.n >= 1);
    return &g_walk;
}

static hk_tlsf_t *make_at(void *arena, size_t size)
{
    hk_status_t st = HK_EINVAL;
    hk_tlsf_t *t = hk_tlsf_init(arena, size, &st);
    assert_int_equal(st, HK_OK);
    assert_non_null(t);
    g_base = (uintptr_t)walk(t)->b[0].start;
    return t;
}

static hk_tlsf_t *make(void) { return make_at(g_arena.bytes, ARENA_SIZE); }

static size_t off(const void *payload) { return (size_t)((uintptr_t)payload - HDR - g_base); }

static void *at(size_t block_off) { return (void *)(g_base + block_off + HDR); }

static hk_stats_t stats(hk_tlsf_t *t)
{
    hk_stats_t st;
    hk_tlsf_get_stats(t, &st);
    return st;
}

static void *must_malloc(hk_tlsf_t *t, size_t n)
{
    void *p = hk_tlsf_malloc(t, n);
    assert_non_null(p);
    return p;
}

#define REST 0u /* expected size (blk_t, testkit.h): up to the end of the span */

static void expect_layout(hk_tlsf_t *t, const blk_t *exp, size_t n)
{
    size_t capacity = stats(t).capacity;
    assert_layout(walk(t), g_base, capacity, exp, n);
}

/* Is the block starting at this offset free? */
static int free_at(hk_tlsf_t *t, size_t block_off)
{
    const walk_log_t *w = walk(t);
    size_t i;
    for (i = 0; i < w->n; i++) {
        if ((uintptr_t)w->b[i].start - g_base == block_off) {
            return !w->b[i].used;
        }
    }
    return 0;
}

/* check() passes, no two free blocks touch, and the counters agree with a walk. */
static void expect_consistent(hk_tlsf_t *t)
{
    hk_stats_t st;
    const walk_log_t *w;
    size_t i;

    assert_int_equal(hk_tlsf_check(t), 0);
    st = stats(t);
    w = walk(t);
    assert_stats_match_walk(&st, w);
    for (i = 0; i < w->n; i++) {
        const hk_block_info_t *b = &w->b[i];
        assert_int_equal((uintptr_t)b->payload % HK_ALIGN, 0);
        assert_true(b->size >= MIN_BLOCK && b->size % HK_ALIGN == 0);
        if (i > 0) {
            assert_int_equal((uintptr_t)w->b[i - 1u].start + w->b[i - 1u].size, (uintptr_t)b->start);
        }
        if (b->used) {
            assert_int_equal(hk_tlsf_usable_size(t, b->payload), b->size - HDR);
        } else {
            assert_true(i == 0 || w->b[i - 1u].used); /* immediate coalescing */
        }
    }
}

static void expect_empty(hk_tlsf_t *t)
{
    hk_stats_t st = stats(t);
    const walk_log_t *w;
    expect_consistent(t);
    w = walk(t);
    assert_int_equal(w->n, 1);
    assert_false(w->b[0].used);
    assert_int_equal(w->b[0].size, st.capacity);
    assert_stats_empty(&st);
    assert_int_equal(st.error_count, 0);
}

/* Allocate every free byte left, block by block; returns how many blocks that took. */
static size_t fill_rest(hk_tlsf_t *t, void **out, size_t max)
{
    size_t n = 0;
    size_t largest;
    while ((largest = stats(t).largest_free) != 0) {
        assert_true(n < max);
        out[n] = hk_tlsf_malloc(t, largest - HDR);
        assert_non_null(out[n]);
        assert_int_equal(hk_tlsf_usable_size(t, out[n]), largest - HDR);
        n++;
    }
    assert_int_equal(stats(t).free_bytes, 0);
    return n;
}

/* ------------------------------------------------------------ init, config */

static void test_config(void **state)
{
    hk_status_t st;
    hk_tlsf_t *t;
    size_t capacity;
    (void)state;

    t = make();
    capacity = stats(t).capacity;
    /* The control block holds 2^SL list heads per power of two the arena spans, and little else. */
    assert_true(capacity < ARENA_SIZE && capacity + 4096u > ARENA_SIZE);
    expect_empty(t);
    assert_string_equal(hk_name(hk_tlsf_heap(t)), "tlsf");

    st = HK_OK;
    assert_null(hk_tlsf_init(NULL, ARENA_SIZE, &st));
    assert_int_equal(st, HK_EINVAL);
    assert_null(hk_tlsf_init(NULL, ARENA_SIZE, NULL));
    st = HK_OK;
    assert_null(hk_tlsf_init(g_arena.bytes, 0, &st));
    assert_int_equal(st, HK_ETOOSMALL);
    st = HK_OK;
    assert_null(hk_tlsf_init(g_arena.bytes, 100, &st));
    assert_int_equal(st, HK_ETOOSMALL);
    assert_null(hk_tlsf_init(g_arena.bytes + 3, 5, NULL));
}

static hk_heap_t *init_tlsf(void *ctx, void *arena, size_t size, hk_status_t *st)
{
    hk_tlsf_t *t = hk_tlsf_init(arena, size, st);
    (void)ctx;
    return t != NULL ? hk_tlsf_heap(t) : NULL;
}

static void test_min_arena(void **state)
{
    (void)state;
    size_t min_size = smallest_arena(init_tlsf, NULL, g_arena.bytes, 4096u);
    hk_tlsf_t *t = make_at(g_arena.bytes, min_size);

    assert_int_equal(stats(t).capacity, MIN_BLOCK);
    assert_non_null(hk_tlsf_malloc(t, MIN_BLOCK - HDR));
    assert_null(hk_tlsf_malloc(t, 0));
    expect_consistent(t);
}

static void test_misaligned_arena(void **state)
{
    (void)state;
    size_t shift;
    for (shift = 1; shift < 2u * HK_ALIGN; shift++) {
        unsigned char *arena = g_arena.bytes + shift;
        hk_tlsf_t *t = make_at(arena, 16384);
        void *p[10];
        size_t i;
        const walk_log_t *w;
        assert_true((uintptr_t)t >= (uintptr_t)arena);
        assert_int_equal((uintptr_t)t % sizeof(void *), 0);
        for (i = 0; i < 10; i++) {
            p[i] = must_malloc(t, 1 + i * 101u);
            assert_int_equal((uintptr_t)p[i] % HK_ALIGN, 0);
            fill_pattern(p[i], 1 + i * 101u, (unsigned)i);
        }
        w = walk(t);
        assert_true((uintptr_t)w->b[0].start > (uintptr_t)t);
        assert_true((uintptr_t)w->b[w->n - 1u].start + w->b[w->n - 1u].size + HDR <= (uintptr_t)arena + 16384u);
        expect_consistent(t);
        for (i = 0; i < 10; i++) {
            assert_pattern(p[i], 1 + i * 101u, (unsigned)i);
            hk_tlsf_free(t, p[i]);
        }
        expect_empty(t);
    }
}

/* ------------------------------------------------------------ list mapping */

static void test_own_list_head(void **state)
{
    (void)state;
    hk_tlsf_t *t = make();
    /* Y starts a list two ALIGN steps wide; S = Y + HK_ALIGN lies inside it, not on a boundary. */
    size_t y = small_limit() * 2u;
    size_t s = y + HK_ALIGN;
    size_t rest_off = s + MIN_BLOCK + y + MIN_BLOCK;
    void *x;
    void *yb;
    void *p;

    assert_int_equal(list_width(s), 2u * HK_ALIGN);
    assert_int_equal(list_width(y), 2u * HK_ALIGN);
    x = must_malloc(t, s - HDR);
    must_malloc(t, 0);
    yb = must_malloc(t, y - HDR);
    must_malloc(t, 0);
    assert_int_equal(off(x), 0);
    assert_int_equal(off(yb), s + MIN_BLOCK);
    assert_int_equal(stats(t).free_blocks, 1);

    /* The head of the request's own list fits: taken although rounding up would skip its list. */
    hk_tlsf_free(t, x);
    assert_int_equal(stats(t).free_blocks, 2);
    p = must_malloc(t, s - HDR);
    assert_ptr_equal(p, x);
    assert_int_equal(hk_tlsf_usable_size(t, p), s - HDR);
    assert_int_equal(stats(t).free_blocks, 1);
    expect_consistent(t);

    /* Same list, but the block there is HK_ALIGN bytes short: the search rounds up and goes on. */
    hk_tlsf_free(t, yb);
    p = must_malloc(t, s - HDR);
    assert_int_equal(off(p), rest_off);
    assert_true(free_at(t, s + MIN_BLOCK));
    expect_consistent(t);

    /* An exact fit for the short block finds it. */
    p = must_malloc(t, y - HDR);
    assert_ptr_equal(p, yb);
    assert_int_equal(stats(t).free_blocks, 1);
    expect_consistent(t);
}

static void test_bitmap_search(void **state)
{
    (void)state;
    hk_tlsf_t *t = make();
    void *small[4];
    void *z;
    void *rest[64];
    void *p;
    size_t i;
    size_t fails;
    hk_stats_t st;

    for (i = 0; i < 4; i++) {
        small[i] = must_malloc(t, 0); /* MIN_BLOCK bytes each, side by side from 0 */
        assert_int_equal(off(small[i]), i * MIN_BLOCK);
    }
    z = must_malloc(t, 16384 - HDR); /* right after them */
    assert_int_equal(off(z), 4u * MIN_BLOCK);
    must_malloc(t, 0);
    fill_rest(t, rest, 64);
    hk_tlsf_free(t, small[0]);
    hk_tlsf_free(t, small[2]);
    hk_tlsf_free(t, z);
    st = stats(t);
    assert_int_equal(st.free_blocks, 3);
    assert_int_equal(st.largest_free, 16384);
    assert_int_equal(st.smallest_free, MIN_BLOCK);
    assert_true(log2_floor(16384) - log2_floor(gross_of(100)) >= 6);

    /* Nothing in the lists at or above gross_of(100) bytes until the 16 KiB block, first levels further up. */
    p = must_malloc(t, 100);
    assert_ptr_equal(p, z);
    st = stats(t);
    assert_int_equal(st.largest_free, 16384 - gross_of(100));
    assert_int_equal(st.smallest_free, MIN_BLOCK);
    assert_int_equal(st.free_blocks, 3);
    expect_consistent(t);

    /* A minimum request is served from a MIN_BLOCK block, not by cutting the big one. */
    p = must_malloc(t, 0);
    assert_true(off(p) == 0 || off(p) == 2u * MIN_BLOCK);
    assert_int_equal(stats(t).largest_free, 16384 - gross_of(100));

    /* The remaining big block, found by an exact request; then nothing is left that fits. */
    fails = stats(t).fail_count;
    assert_null(hk_malloc(hk_tlsf_heap(t), 16384 - gross_of(100) - HDR + 1));
    assert_int_equal(stats(t).fail_count, fails + 1);
    p = must_malloc(t, 16384 - gross_of(100) - HDR);
    assert_int_equal(off(p), 4u * MIN_BLOCK + gross_of(100));
    assert_int_equal(stats(t).free_blocks, 1);
    assert_null(hk_tlsf_malloc(t, MIN_BLOCK));
    expect_consistent(t);
}

/* ----------------------------------------------- coalescing and splitting */

static void test_coalesce_neighbours(void **state)
{
    (void)state;
    hk_tlsf_t *t = make();
    void *p[7];
    size_t i;
    for (i = 0; i < 6; i++) {
        p[i] = must_malloc(t, req(96)); /* 96 each at 0, 96, ..., 480 */
        assert_int_equal(off(p[i]), i * 96u);
    }
    p[6] = must_malloc(t, req(48)); /* @576, the free rest from 624 */

    hk_tlsf_free(t, p[1]);
    assert_int_equal(stats(t).coalesce_count, 0);
    hk_tlsf_free(t, p[2]); /* left neighbour free */
    assert_int_equal(stats(t).coalesce_count, 1);
    {
        static const blk_t layout[7] = {{0, 96, 1},   {96, 192, 0}, {288, 96, 1}, {384, 96, 1},
                                        {480, 96, 1}, {576, 48, 1}, {624, REST, 0}};
        expect_layout(t, layout, 7);
    }
    hk_tlsf_free(t, p[4]);
    assert_int_equal(stats(t).coalesce_count, 1);
    assert_int_equal(stats(t).free_blocks, 3);
    hk_tlsf_free(t, p[3]); /* both */
    assert_int_equal(stats(t).coalesce_count, 3);
    {
        static const blk_t layout[5] = {{0, 96, 1}, {96, 384, 0}, {480, 96, 1}, {576, 48, 1}, {624, REST, 0}};
        expect_layout(t, layout, 5);
    }
    hk_tlsf_free(t, p[0]); /* right */
    assert_int_equal(stats(t).coalesce_count, 4);
    hk_tlsf_free(t, p[5]); /* left */
    assert_int_equal(stats(t).coalesce_count, 5);
    assert_int_equal(stats(t).free_blocks, 2);
    hk_tlsf_free(t, p[6]); /* both */
    assert_int_equal(stats(t).coalesce_count, 7);
    assert_int_equal(stats(t).split_count, 7); /* every malloc cut its block from the big one */
    expect_empty(t);
}

/* After any free no two free blocks touch; freeing everything leaves one block of the whole capacity. */
static void test_immediate_coalescing(void **state)
{
    (void)state;
    hk_tlsf_t *t = make_at(g_arena.bytes, 32768);
    void *live[128];
    size_t nlive = 0;
    size_t op;

    rng_seed(0xC0A1E5CEu + SL);
    for (op = 0; op < 5000; op++) {
        if (nlive < 128 && (nlive == 0 || rng_below(100) < 55)) {
            void *p = hk_tlsf_malloc(t, rng_below(5) == 0 ? rng_below(3000) : rng_below(120));
            if (p != NULL) {
                live[nlive++] = p;
            }
        } else {
            size_t k = rng_below(nlive);
            const walk_log_t *w;
            size_t i;
            hk_tlsf_free(t, live[k]);
            live[k] = live[--nlive];
            w = walk(t);
            for (i = 1; i < w->n; i++) {
                assert_false(!w->b[i].used && !w->b[i - 1u].used);
            }
        }
    }
    expect_consistent(t);
    while (nlive > 0) {
        hk_tlsf_free(t, live[--nlive]);
    }
    expect_empty(t);
}

static void test_split_rules(void **state)
{
    (void)state;
    hk_tlsf_t *t = make();
    void *rest[64];
    void *f;
    void *p;
    size_t splits;

    must_malloc(t, req(48));
    f = must_malloc(t, req(1024)); /* 1024 @48 */
    must_malloc(t, req(48));
    fill_rest(t, rest, 64);
    hk_tlsf_free(t, f);
    assert_int_equal(stats(t).free_blocks, 1);
    splits = stats(t).split_count;

    /* A remainder of MIN_BLOCK - HK_ALIGN cannot be a block: the request gets all 1024 bytes. */
    p = must_malloc(t, 1024 - (MIN_BLOCK - HK_ALIGN) - HDR);
    assert_ptr_equal(p, f);
    assert_int_equal(hk_tlsf_usable_size(t, p), 1024 - HDR);
    assert_int_equal(stats(t).split_count, splits);
    assert_int_equal(stats(t).free_blocks, 0);
    assert_int_equal(stats(t).used_requested, stats(t).used_granted); /* level 1 stores no request */
    expect_consistent(t);
    hk_tlsf_free(t, p);

    /* A remainder of exactly MIN_BLOCK is split off and stays free. */
    p = must_malloc(t, 1024 - MIN_BLOCK - HDR);
    assert_ptr_equal(p, f);
    assert_int_equal(hk_tlsf_usable_size(t, p), 1024 - MIN_BLOCK - HDR);
    assert_int_equal(stats(t).split_count, splits + 1);
    assert_int_equal(stats(t).free_blocks, 1);
    assert_int_equal(stats(t).largest_free, MIN_BLOCK);
    assert_true(free_at(t, 48 + 1024 - MIN_BLOCK));
    expect_consistent(t);
}

/* -------------------------------------------------------------- realloc */

static void test_realloc_paths(void **state)
{
    (void)state;
    hk_tlsf_t *t = make();
    hk_stats_t st;
    void *a = must_malloc(t, req(48));
    void *p = must_malloc(t, req(192));
    void *c = must_malloc(t, req(48));
    /* A request that would leave MIN_BLOCK - HK_ALIGN of a 96-byte block: too little to cut off. */
    size_t keep = req(96 - (MIN_BLOCK - HK_ALIGN));
    void *q;
    void *r;

    /* Shrink with a split; C keeps the 96-byte rest apart from the free space. */
    fill_pattern(p, req(192), 1);
    assert_ptr_equal(hk_realloc(hk_tlsf_heap(t), p, req(96)), p);
    assert_int_equal(hk_tlsf_usable_size(t, p), req(96));
    assert_pattern(p, req(96), 1);
    {
        static const blk_t layout[5] = {{0, 48, 1}, {48, 96, 1}, {144, 96, 0}, {240, 48, 1}, {288, REST, 0}};
        expect_layout(t, layout, 5);
    }
    assert_int_equal(stats(t).realloc_count, 1);
    assert_int_equal(stats(t).used_requested, stats(t).used_granted); /* level 1 stores no request */
    expect_consistent(t);

    /* Shrink by less than a block: nothing moves. */
    st = stats(t);
    assert_ptr_equal(hk_realloc(hk_tlsf_heap(t), p, keep), p);
    assert_int_equal(hk_tlsf_usable_size(t, p), req(96));
    assert_int_equal(stats(t).split_count, st.split_count);
    assert_int_equal(stats(t).used_requested, stats(t).used_granted); /* level 1 stores no request */

    /* Grow into the free neighbour, giving back what is not needed. */
    st = stats(t);
    assert_ptr_equal(hk_realloc(hk_tlsf_heap(t), p, req(160)), p);
    assert_int_equal(hk_tlsf_usable_size(t, p), req(160));
    assert_pattern(p, keep, 1);
    {
        static const blk_t layout[5] = {{0, 48, 1}, {48, 160, 1}, {208, 32, 0}, {240, 48, 1}, {288, REST, 0}};
        expect_layout(t, layout, 5);
    }
    assert_int_equal(stats(t).coalesce_count, st.coalesce_count + 1);
    assert_int_equal(stats(t).split_count, st.split_count + 1);
    assert_ptr_equal(hk_realloc(hk_tlsf_heap(t), p, req(192)), p);
    assert_int_equal(hk_tlsf_usable_size(t, p), req(192));
    assert_int_equal(stats(t).free_blocks, 1);
    expect_consistent(t);

    /* Blocked: moved, content kept, old block freed. */
    fill_pattern(p, req(192), 2);
    st = stats(t);
    q = hk_realloc(hk_tlsf_heap(t), p, req(400));
    assert_int_equal(off(q), 288);
    assert_pattern(q, req(192), 2);
    assert_int_equal(stats(t).alloc_count, st.alloc_count + 1);
    assert_int_equal(stats(t).free_count, st.free_count + 1);
    assert_int_equal(stats(t).realloc_count, st.realloc_count + 1);
    {
        static const blk_t layout[5] = {{0, 48, 1}, {48, 192, 0}, {240, 48, 1}, {288, 400, 1}, {688, REST, 0}};
        expect_layout(t, layout, 5);
    }

    /* Grow into the big free block behind it. */
    assert_ptr_equal(hk_realloc(hk_tlsf_heap(t), q, req(1008)), q);
    assert_int_equal(hk_tlsf_usable_size(t, q), req(1008));
    assert_pattern(q, req(192), 2);
    {
        static const blk_t layout[5] = {{0, 48, 1}, {48, 192, 0}, {240, 48, 1}, {288, 1008, 1}, {1296, REST, 0}};
        expect_layout(t, layout, 5);
    }

    /* Shrink next to a free block: the cut-off tail merges into it. */
    st = stats(t);
    assert_ptr_equal(hk_realloc(hk_tlsf_heap(t), q, req(400)), q);
    {
        static const blk_t layout[5] = {{0, 48, 1}, {48, 192, 0}, {240, 48, 1}, {288, 400, 1}, {688, REST, 0}};
        expect_layout(t, layout, 5);
    }
    assert_int_equal(stats(t).coalesce_count, st.coalesce_count + 1);
    assert_int_equal(stats(t).free_blocks, 2);

    /* realloc(NULL, n) is malloc: the smallest list that fits is the 192-byte hole's. */
    st = stats(t);
    r = hk_realloc(hk_tlsf_heap(t), NULL, req(48));
    assert_int_equal(off(r), 48);
    assert_int_equal(stats(t).alloc_count, st.alloc_count + 1);
    /* realloc(p, 0) frees. */
    assert_null(hk_realloc(hk_tlsf_heap(t), r, 0));
    assert_int_equal(stats(t).free_count, st.free_count + 1);
    assert_int_equal(stats(t).used_blocks, 3);
    expect_consistent(t);

    /* Failed reallocs leave the block alone. */
    st = stats(t);
    assert_null(hk_realloc(hk_tlsf_heap(t), q, SIZE_MAX));
    assert_null(hk_realloc(hk_tlsf_heap(t), q, SIZE_MAX - 3));
    assert_null(hk_realloc(hk_tlsf_heap(t), q, ARENA_SIZE));
    assert_int_equal(stats(t).fail_count, st.fail_count + 3);
    assert_int_equal(stats(t).free_bytes, st.free_bytes);
    assert_int_equal(hk_tlsf_usable_size(t, q), req(400));
    assert_pattern(q, req(192), 2);

    /* A free neighbour too small to grow into: move. */
    fill_pattern(a, req(48), 3);
    r = hk_realloc(hk_tlsf_heap(t), a, req(400));
    assert_non_null(r);
    assert_true(r != a);
    assert_pattern(r, req(48), 3);
    assert_true(free_at(t, 0));
    expect_consistent(t);
    hk_tlsf_free(t, c);
    hk_tlsf_free(t, q);
    hk_tlsf_free(t, r);
    expect_empty(t);
}

/* -------------------------------------------------------- aligned_alloc */

static void test_aligned(void **state)
{
    (void)state;
    size_t alignment;
    for (alignment = 16; alignment <= 4096; alignment *= 2) {
        hk_tlsf_t *t = make();
        void *x = must_malloc(t, req(48)); /* free space from 48 */
        uintptr_t payload = g_base + 48 + HDR;
        uintptr_t expect = aligned_payload(payload, alignment, MIN_BLOCK);
        size_t gap = (size_t)(expect - payload);
        blk_t layout[4];
        size_t n;
        void *p;
        hk_stats_t st;

        p = hk_tlsf_aligned_alloc(t, alignment, 100);
        assert_ptr_equal(p, (void *)expect);
        assert_int_equal((uintptr_t)p % alignment, 0);
        assert_int_equal(hk_tlsf_usable_size(t, p), gross_of(100) - HDR);
        st = stats(t);
        assert_int_equal(st.used_requested, st.used_granted); /* level 1 stores no request */
        n = push_block(layout, 0, 0, 48, 1); /* x */
        expect_layout(t, layout, push_aligned_cut(layout, n, 48, gap, gross_of(100), REST));
        if (gap != 0) {
            assert_true(gap >= MIN_BLOCK);
            assert_int_equal(st.free_blocks, 2);
            assert_int_equal(st.split_count, 3); /* x's cut, the gap, p's cut */
        } else {
            /* p right behind x, the rest free from 48 + gross_of(100) */
            assert_int_equal(st.free_blocks, 1);
            assert_int_equal(st.split_count, 2); /* x's cut, p's cut */
        }
        expect_consistent(t);
        fill_pattern(p, 100, 9);
        hk_tlsf_free(t, x);
        assert_pattern(p, 100, 9);
        hk_tlsf_free(t, p);
        expect_empty(t);
    }
}

static void test_aligned_edges(void **state)
{
    (void)state;
    static const size_t bad[5][2] = {{24, 10}, {0, 10}, {(size_t)1 << 31, 10}, {4096, SIZE_MAX}, {4096, ARENA_SIZE}};
    hk_tlsf_t *t = make();
    hk_heap_t *h = hk_tlsf_heap(t);
    size_t fails = 0;
    size_t i;
    void *p[64];

    for (i = 0; i < 5; i++) {
        assert_null(hk_aligned_alloc(h, bad[i][0], bad[i][1]));
        assert_int_equal(stats(t).fail_count, ++fails);
    }
    assert_null(hk_aligned_alloc(h, 48, 10));
    assert_int_equal(stats(t).fail_count, ++fails);
    expect_empty(t);
    p[0] = hk_tlsf_aligned_alloc(t, 8, 10);
    assert_int_equal(off(p[0]), 0);
    /* Many aligned blocks of mixed alignment: every one aligned, the heap intact throughout. */
    for (i = 1; i < 64; i++) {
        size_t alignment = (size_t)16 << (i % 9);
        p[i] = hk_aligned_alloc(h, alignment, i * 13u);
        assert_non_null(p[i]);
        assert_int_equal((uintptr_t)p[i] % alignment, 0);
        fill_pattern(p[i], i * 13u, (unsigned)i);
        assert_int_equal(hk_tlsf_check(t), 0);
    }
    for (i = 1; i < 64; i += 2) {
        assert_pattern(p[i], i * 13u, (unsigned)i);
        hk_tlsf_free(t, p[i]);
    }
    expect_consistent(t);
    for (i = 0; i < 64; i += 2) {
        hk_tlsf_free(t, p[i]);
    }
    expect_empty(t);
}

/* ------------------------------------------------- malloc(0), huge sizes */

static void test_malloc_zero_unique(void **state)
{
    (void)state;
    hk_tlsf_t *t = make();
    void *p[200];
    size_t i;
    for (i = 0; i < 200; i++) {
        size_t j;
        p[i] = must_malloc(t, 0);
        assert_int_equal(hk_tlsf_usable_size(t, p[i]), MIN_BLOCK - HDR);
        memset(p[i], (int)i, MIN_BLOCK - HDR);
        for (j = 0; j < i; j++) {
            uintptr_t a = (uintptr_t)p[i];
            uintptr_t b = (uintptr_t)p[j];
            assert_true(a >= b + MIN_BLOCK || b >= a + MIN_BLOCK);
        }
    }
    assert_int_equal(stats(t).used_requested, stats(t).used_granted); /* level 1 stores no request */
    assert_int_equal(stats(t).used_granted, 200u * (MIN_BLOCK - HDR));
    for (i = 0; i < 200; i++) {
        const unsigned char *b = (const unsigned char *)p[i];
        assert_int_equal(b[0], (unsigned char)i);
        assert_int_equal(b[MIN_BLOCK - HDR - 1u], (unsigned char)i);
        hk_tlsf_free(t, p[i]);
    }
    expect_empty(t);
}

static TEST_ARENA(LARGE_ARENA) g_large;

static void test_large_arena(void **state)
{
    hk_status_t st = HK_EINVAL;
    hk_tlsf_t *t = hk_tlsf_init(g_large.bytes, LARGE_ARENA, &st);
    (void)state;
    expect_large_arena(t != NULL ? hk_tlsf_heap(t) : NULL, st, 8192u, HDR, HK_TAG_WIDE);
}

static void test_huge_requests(void **state)
{
    (void)state;
    hk_tlsf_t *t = make();
    hk_stats_t st = stats(t);
    void *p;

    refuse_hopeless_requests(hk_tlsf_heap(t), HK_TAG_MAX_BLOCK, HDR);
    p = must_malloc(t, st.capacity - HDR);
    assert_int_equal(off(p), 0);
    st = stats(t);
    assert_stats_full(&st);
    assert_int_equal(st.min_ever_free, 0);
    assert_null(hk_tlsf_malloc(t, 0));
    expect_consistent(t);
    hk_tlsf_free(t, p);
    expect_empty(t);
}

/* ------------------------------------------------------------- statistics */

static stats_workload_t g_workload;

static void test_stats(void **state)
{
    (void)state;
    hk_tlsf_t *t = make_at(g_arena.bytes, 32768);
    stats_workload_t *w = &g_workload;
    size_t op;

    stats_workload_start(w, hk_tlsf_heap(t), HDR, 0x57A75u + SL);
    for (op = 0; op < 4000; op++) {
        stats_workload_step(w);
        if ((op & 15u) == 0) {
            expect_consistent(t); /* largest/smallest free exact against the walk */
        }
    }
    stats_workload_finish(w);
    expect_empty(t);
}

/* With 1000 small free blocks about, a large request still finds the big block, and the geometry is exact. */
static void test_many_small_free_blocks(void **state)
{
    (void)state;
    hk_tlsf_t *t = make();
    static void *p[2000];
    hk_stats_t st;
    void *big;
    size_t big_off = 2000u * MIN_BLOCK;
    size_t i;

    for (i = 0; i < 2000; i++) {
        p[i] = must_malloc(t, 0);
    }
    for (i = 0; i < 2000; i += 2) {
        hk_tlsf_free(t, p[i]);
    }
    st = stats(t);
    assert_int_equal(st.free_blocks, 1001);
    assert_int_equal(st.smallest_free, MIN_BLOCK);
    assert_int_equal(st.largest_free, st.capacity - big_off);
    expect_consistent(t);

    big = must_malloc(t, 16384);
    assert_int_equal(off(big), big_off);
    st = stats(t);
    assert_int_equal(st.largest_free, st.capacity - big_off - gross_of(16384));
    assert_int_equal(st.free_blocks, 1001);
    /* Small requests take the small blocks. */
    for (i = 0; i < 1000; i++) {
        void *q = must_malloc(t, 1);
        assert_true(off(q) < big_off && off(q) % (2u * MIN_BLOCK) == 0);
    }
    st = stats(t);
    assert_int_equal(st.free_blocks, 1);
    assert_int_equal(st.smallest_free, st.largest_free);
    expect_consistent(t);
}

/* ----------------------------------------------------------------- misuse */

static void test_misuse(void **state)
{
    (void)state;
    hk_tlsf_t *t = make();
    error_log_t log;
    hk_stats_t before;
    void *a;
    void *b;
    int local = 0;

    record_errors(hk_tlsf_heap(t), &log);
    a = must_malloc(t, 100);
    b = must_malloc(t, 100);
    must_malloc(t, 100);
    fill_pattern(b, 100, 0x55);
    hk_tlsf_free(t, a);
    hk_tlsf_free(t, NULL);
    assert_int_equal(hk_tlsf_usable_size(t, NULL), 0);
    before = stats(t);
    hk_tlsf_free(t, a);
    assert_int_equal(log.last, HK_ERR_DOUBLE_FREE);
    hk_tlsf_free(t, &local);
    assert_int_equal(log.last, HK_ERR_FOREIGN_PTR);
    hk_tlsf_free(t, (unsigned char *)b + HK_ALIGN);
    assert_int_equal(log.last, HK_ERR_INTERIOR_PTR);
    assert_null(hk_realloc(hk_tlsf_heap(t), a, 10));
    assert_int_equal(log.last, HK_ERR_DOUBLE_FREE);
    assert_int_equal(log.count, 4);
    {
        hk_stats_t now = stats(t);
        assert_int_equal(now.error_count, before.error_count + 4);
        assert_stats_equal_but(&now, &before, error_count);
    }
    hk_tlsf_free(t, b); /* merges with a */
    hk_tlsf_free(t, b);
    assert_int_equal(log.last, HK_ERR_DOUBLE_FREE);
    assert_int_equal(log.count, 5);
    assert_false(hk_tlsf_owns(t, &local));
    assert_true(hk_tlsf_owns(t, at(0)));
    expect_consistent(t);
}

/* ----------------------------------------------------------------- stress */

#define STRESS_OPS 200000u
#define STRESS_LIVE 160u

typedef struct live_block {
    void *p;
    size_t len;
    unsigned seed;
} live_block_t;

static live_block_t g_live[STRESS_LIVE];

static size_t stress_size(void)
{
    size_t x = rng_below(1000);
    if (x < 30) {
        return 0;
    }
    if (x < 600) {
        return 1 + rng_below(96);
    }
    if (x < 900) {
        return 97 + rng_below(1000);
    }
    if (x < 995) {
        return 1097 + rng_below(6000);
    }
    return x < 998 ? SIZE_MAX - rng_below(64) : 20000 + rng_below(20000);
}

static void test_stress(void **state)
{
    (void)state;
    hk_tlsf_t *t = make_at(g_arena.bytes, 32768);
    size_t nlive = 0;
    size_t requested = 0;
    unsigned seed = 0;
    size_t op;
    size_t i;

    rng_seed(0x7157u * (SL + 1u));
    for (op = 0; op < STRESS_OPS; op++) {
        size_t x = rng_below(100);
        int grow = nlive < STRESS_LIVE / 2u || (nlive < STRESS_LIVE && rng_below(2) == 0);
        if (nlive == 0 || (grow && x < 55)) {
            size_t n = stress_size();
            size_t alignment = x < 8 ? (size_t)16 << rng_below(9) : 0;
            void *p = alignment != 0 ? hk_tlsf_aligned_alloc(t, alignment, n) : hk_tlsf_malloc(t, n);
            if (p != NULL) {
                assert_true(nlive < STRESS_LIVE);
                assert_true(alignment == 0 || (uintptr_t)p % alignment == 0);
                assert_true(hk_tlsf_usable_size(t, p) >= n);
                g_live[nlive].p = p;
                g_live[nlive].len = n;
                g_live[nlive].seed = ++seed;
                fill_pattern(p, n, seed);
                requested += n;
                nlive++;
            } else if (n < 65536u) {
                /* TLSF's guarantee: a failure means no free block reaches the request's rounded list. */
                size_t need = gross_of(n) + (alignment != 0 ? alignment + MIN_BLOCK : 0u);
                assert_true(stats(t).largest_free < list_round(need));
            }
        } else if (x < 70) {
            live_block_t *b = &g_live[rng_below(nlive)];
            size_t n = stress_size();
            void *p;
            assert_pattern(b->p, b->len, b->seed);
            p = hk_realloc(hk_tlsf_heap(t), b->p, n);
            if (n == 0) {
                assert_null(p);
                requested -= b->len;
                *b = g_live[--nlive];
            } else if (p != NULL) {
                size_t keep = b->len < n ? b->len : n;
                assert_pattern(p, keep, b->seed);
                requested = requested - b->len + n;
                b->p = p;
                b->len = n;
                b->seed = ++seed;
                fill_pattern(p, n, seed);
            } else {
                assert_pattern(b->p, b->len, b->seed);
            }
        } else {
            size_t k = rng_below(nlive);
            assert_pattern(g_live[k].p, g_live[k].len, g_live[k].seed);
            hk_tlsf_free(t, g_live[k].p);
            requested -= g_live[k].len;
            g_live[k] = g_live[--nlive];
        }
        assert_int_equal(hk_tlsf_check(t), 0);
        assert_int_equal(stats(t).used_requested, stats(t).used_granted); /* level 1 stores no request */
        assert_int_equal(stats(t).used_blocks, nlive);
        if ((op & 8191u) == 0) {
            for (i = 0; i < nlive; i++) {
                assert_pattern(g_live[i].p, g_live[i].len, g_live[i].seed);
            }
            expect_consistent(t);
        }
    }
    for (i = 0; i < nlive; i++) {
        assert_pattern(g_live[i].p, g_live[i].len, g_live[i].seed);
        hk_tlsf_free(t, g_live[i].p);
    }
    assert_int_equal(stats(t).error_count, 0);
    expect_empty(t);
}

/* The suite runs once per build; tests/CMakeLists.txt builds it at several HK_TLSF_SL_LOG2. */
int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_config),
        cmocka_unit_test(test_min_arena),
        cmocka_unit_test(test_misaligned_arena),
        cmocka_unit_test(test_own_list_head),
        cmocka_unit_test(test_bitmap_search),
        cmocka_unit_test(test_coalesce_neighbours),
        cmocka_unit_test(test_immediate_coalescing),
        cmocka_unit_test(test_split_rules),
        cmocka_unit_test(test_realloc_paths),
        cmocka_unit_test(test_aligned),
        cmocka_unit_test(test_aligned_edges),
        cmocka_unit_test(test_malloc_zero_unique),
        cmocka_unit_test(test_huge_requests),
        cmocka_unit_test(test_large_arena),
        cmocka_unit_test(test_stats),
        cmocka_unit_test(test_many_small_free_blocks),
        cmocka_unit_test(test_misuse),
        cmocka_unit_test(test_stress),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
