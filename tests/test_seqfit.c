/* SPDX-License-Identifier: MIT */
/*
 * Unit tests for seqfit (src/seqfit.c): placement of the four policies on a
 * hand-built free list, next fit's rover, the top, splitting and coalescing,
 * the fits-cse3320 fragmentation test and its counters, heap_4 equivalence of
 * first fit (and a reference model for best and worst fit), realloc,
 * aligned_alloc, the hk_stats_t counters, huge requests, misuse and init.
 *
 * Expected addresses are offsets from the first block and follow from the
 * layout in src/tagged.h: an HK_TAG_HDR-byte tag per block (4 bytes on
 * 32-bit targets, 8 on 64-bit hosts), gross sizes rounded up to HK_ALIGN and
 * never below HK_TAG_MIN_BLOCK (16 bytes on 32-bit targets, 24 on a 64-bit
 * host, 32 with HK_ALIGN 16). Hand-worked layouts name gross sizes: req(g)
 * is the request whose block is exactly g bytes, and every g written out is
 * a multiple of 16 and at least 32, which makes those layouts the same in
 * every geometry. Split thresholds and the one placement that depends on
 * whether a 16-byte rest can be a block are computed from HDR, MIN_BLOCK
 * and HK_ALIGN.
 */

/*
 * The seed's counters are a compile-time option the library leaves off
 * (HK_SEQFIT_PAPER_COUNTERS, seqfit.h): seqfit is compiled into this test
 * with it on, and the library's own object is then not linked in. It comes
 * before cmocka.h, whose macros would clash with its helpers.
 */
#define HK_SEQFIT_PAPER_COUNTERS 1
#include "seqfit.c"

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "testkit.h"

#define ARENA_SIZE (64u * 1024u)
#define MAX_BLOCKS 4096u
#define HDR HK_TAG_HDR
#define MIN_BLOCK HK_TAG_MIN_BLOCK

static TEST_ARENA(ARENA_SIZE) g_arena;
static walk_log_t g_walk;
static uintptr_t g_base; /* start of the first block of the heap under test */

static hk_seqfit_policy_t k_policy[4] = {HK_SEQFIT_FIRST, HK_SEQFIT_NEXT, HK_SEQFIT_BEST, HK_SEQFIT_WORST};

static hk_seqfit_policy_t policy_of(void **state) { return *(const hk_seqfit_policy_t *)*state; }

/* The gross block size a request must get, computed from the layout rules rather than the library. */
static size_t gross_of(size_t request) { return gross_size(request, HDR, MIN_BLOCK); }

/* The request whose block is exactly `gross` bytes (a multiple of HK_ALIGN, at least MIN_BLOCK). */
static size_t req(size_t gross)
{
    assert_true(gross >= MIN_BLOCK && gross % HK_ALIGN == 0);
    assert_int_equal(gross_of(gross - HDR), gross);
    return gross - HDR;
}

static const walk_log_t *walk(hk_seqfit_t *s)
{
    hk_seqfit_walk(s, collect_walk, walk_reset(&g_walk));
    assert_true(g_walk.n >= 1);
    return &g_walk;
}

static hk_seqfit_t *make_at(void *arena, size_t size, hk_seqfit_policy_t policy)
{
    hk_status_t st = HK_EINVAL;
    hk_seqfit_t *s = hk_seqfit_init(arena, size, policy, &st);
    assert_int_equal(st, HK_OK);
    assert_non_null(s);
    g_base = (uintptr_t)walk(s)->b[0].start;
    return s;
}

static hk_seqfit_t *make(hk_seqfit_policy_t policy) { return make_at(g_arena.bytes, ARENA_SIZE, policy); }

/* Offset of a payload's block from the first block. */
static size_t off(const void *payload) { return (size_t)((uintptr_t)payload - HDR - g_base); }

/* The payload a block at this offset hands out. */
static void *at(size_t block_off) { return (void *)(g_base + block_off + HDR); }

static hk_stats_t stats(hk_seqfit_t *s)
{
    hk_stats_t st;
    hk_seqfit_get_stats(s, &st);
    return st;
}

static hk_seqfit_counters_t counters(const hk_seqfit_t *s)
{
    hk_seqfit_counters_t c;
    hk_seqfit_get_counters(s, &c);
    return c;
}

static void *must_malloc(hk_seqfit_t *s, size_t n)
{
    void *p = hk_seqfit_malloc(s, n);
    assert_non_null(p);
    return p;
}

/* Expected block size: the free top reaching the end of the span (blk_t, testkit.h). */
#define TOP 0u

static void expect_layout(hk_seqfit_t *s, const blk_t *exp, size_t n)
{
    size_t capacity = stats(s).capacity;
    assert_layout(walk(s), g_base, capacity, exp, n);
}

/* Offsets and sizes of the listed free blocks (the top excluded), by walk. */
static size_t listed_blocks(hk_seqfit_t *s, size_t *offs, size_t *sizes, size_t max)
{
    const walk_log_t *w = walk(s);
    size_t i;
    size_t n = 0;
    for (i = 0; i + 1u < w->n; i++) {
        if (!w->b[i].used) {
            assert_true(n < max);
            offs[n] = (uintptr_t)w->b[i].start - g_base;
            sizes[n] = w->b[i].size;
            n++;
        }
    }
    return n;
}

/* check() passes and every counter agrees with a walk. */
static void expect_consistent(hk_seqfit_t *s)
{
    hk_stats_t st;
    hk_seqfit_counters_t c;
    const walk_log_t *w;
    size_t i;
    size_t listed = 0;
    size_t top;

    assert_int_equal(hk_seqfit_check(s), 0);
    st = stats(s);
    c = counters(s);
    w = walk(s);
    assert_stats_match_walk(&st, w);
    for (i = 0; i < w->n; i++) {
        const hk_block_info_t *b = &w->b[i];
        assert_int_equal((uintptr_t)b->payload, (uintptr_t)b->start + HDR);
        assert_int_equal((uintptr_t)b->payload % HK_ALIGN, 0);
        assert_int_equal(b->size % HK_ALIGN, 0);
        assert_true(b->size >= MIN_BLOCK);
        if (b->used) {
            assert_int_equal(b->usable, b->size - HDR);
            assert_int_equal(hk_seqfit_usable_size(s, b->payload), b->usable);
        } else {
            listed += (i + 1u < w->n); /* the top is not listed */
        }
    }
    assert_int_equal(c.free_blocks, listed);
    assert_int_equal(c.splits, st.split_count);
    assert_int_equal(c.coalesces, st.coalesce_count);
    top = w->b[w->n - 1u].used ? st.capacity : (size_t)((uintptr_t)w->b[w->n - 1u].start - g_base);
    assert_true(c.max_heap >= top);
    assert_true(c.max_heap <= st.capacity);
}

static void free_all(hk_seqfit_t *s, void **ptrs, size_t n)
{
    size_t i;
    for (i = 0; i < n; i++) {
        hk_seqfit_free(s, ptrs[i]);
        ptrs[i] = NULL;
    }
}

/* One free block covering the whole span, no misuse recorded. */
static void expect_empty(hk_seqfit_t *s)
{
    hk_stats_t st = stats(s);
    expect_consistent(s);
    assert_stats_empty(&st);
    assert_int_equal(st.error_count, 0);
    assert_int_equal(counters(s).free_blocks, 0);
}

/* ------------------------------------------------------------------ init */

static hk_heap_t *init_first_fit(void *ctx, void *arena, size_t size, hk_status_t *st)
{
    hk_seqfit_t *s = hk_seqfit_init(arena, size, HK_SEQFIT_FIRST, st);
    (void)ctx;
    return s != NULL ? hk_seqfit_heap(s) : NULL;
}

static void test_init_rejects(void **state)
{
    hk_status_t st = HK_OK;
    size_t min_size;
    hk_seqfit_t *s;
    (void)state;

    assert_null(hk_seqfit_init(NULL, ARENA_SIZE, HK_SEQFIT_FIRST, &st));
    assert_int_equal(st, HK_EINVAL);
    assert_null(hk_seqfit_init(NULL, ARENA_SIZE, HK_SEQFIT_FIRST, NULL));
    st = HK_OK;
    assert_null(hk_seqfit_init(g_arena.bytes, ARENA_SIZE, (hk_seqfit_policy_t)4, &st));
    assert_int_equal(st, HK_EINVAL);
    st = HK_OK;
    assert_null(hk_seqfit_init(g_arena.bytes, ARENA_SIZE, (hk_seqfit_policy_t)-1, &st));
    assert_int_equal(st, HK_EINVAL);
    st = HK_OK;
    assert_null(hk_seqfit_init(g_arena.bytes, 0, HK_SEQFIT_FIRST, &st));
    assert_int_equal(st, HK_ETOOSMALL);
    st = HK_OK;
    assert_null(hk_seqfit_init(g_arena.bytes, 64, HK_SEQFIT_BEST, &st));
    assert_int_equal(st, HK_ETOOSMALL);
    assert_null(hk_seqfit_init(g_arena.bytes + 1, 3, HK_SEQFIT_FIRST, NULL));

    /* The smallest arena that works holds exactly one minimum block. */
    min_size = smallest_arena(init_first_fit, NULL, g_arena.bytes, 2048u);
    s = make_at(g_arena.bytes, min_size, HK_SEQFIT_FIRST);
    assert_int_equal(stats(s).capacity, MIN_BLOCK);
    assert_non_null(hk_seqfit_malloc(s, MIN_BLOCK - HDR));
    assert_null(hk_seqfit_malloc(s, 0));
    expect_consistent(s);
    s = make_at(g_arena.bytes, min_size + HK_ALIGN, HK_SEQFIT_FIRST);
    assert_int_equal(stats(s).capacity, MIN_BLOCK + HK_ALIGN);
}

static void test_init_state(void **state)
{
    hk_seqfit_t *s = make(policy_of(state));
    hk_stats_t st = stats(s);
    hk_seqfit_counters_t c = counters(s);
    hk_heap_t *h = hk_seqfit_heap(s);
    const walk_log_t *w = walk(s);
    int local;

    assert_int_equal(w->n, 1);
    assert_false(w->b[0].used);
    assert_int_equal(st.capacity, w->b[0].size);
    assert_true(st.capacity <= ARENA_SIZE && st.capacity + 512u > ARENA_SIZE);
    assert_int_equal(st.free_bytes, st.capacity);
    assert_int_equal(st.min_ever_free, st.capacity);
    assert_int_equal(st.largest_free, st.capacity);
    assert_int_equal(st.smallest_free, st.capacity);
    assert_int_equal(st.free_blocks, 1);
    assert_int_equal(st.used_blocks + st.alloc_count + st.free_count + st.realloc_count + st.fail_count, 0);
    assert_int_equal(st.split_count + st.coalesce_count + st.error_count + st.peak_used, 0);
    assert_int_equal(c.reuses + c.grows + c.splits + c.coalesces + c.free_blocks + c.requested + c.max_heap, 0);
    assert_int_equal(hk_seqfit_check(s), 0);
    assert_ptr_equal(h, (hk_heap_t *)s);
    assert_string_equal(hk_name(h), "seqfit");
    assert_int_equal(hk_check(h), 0);
    assert_true(hk_seqfit_owns(s, w->b[0].payload));
    assert_false(hk_seqfit_owns(s, &local));
    assert_false(hk_seqfit_owns(s, g_arena.bytes + ARENA_SIZE));
    assert_string_equal(hk_seqfit_policy_name(HK_SEQFIT_FIRST), "first");
    assert_string_equal(hk_seqfit_policy_name(HK_SEQFIT_NEXT), "next");
    assert_string_equal(hk_seqfit_policy_name(HK_SEQFIT_BEST), "best");
    assert_string_equal(hk_seqfit_policy_name(HK_SEQFIT_WORST), "worst");
    assert_string_equal(hk_seqfit_policy_name((hk_seqfit_policy_t)9), "?");
}

static void test_init_misaligned(void **state)
{
    size_t shift;
    (void)state;
    for (shift = 1; shift < 2u * HK_ALIGN; shift++) {
        unsigned char *arena = g_arena.bytes + shift;
        hk_seqfit_t *s = make_at(arena, 8192, HK_SEQFIT_FIRST);
        void *p[8];
        size_t i;
        const walk_log_t *w;
        assert_true((uintptr_t)s >= (uintptr_t)arena);
        assert_int_equal((uintptr_t)s % sizeof(void *), 0);
        for (i = 0; i < 8; i++) {
            p[i] = must_malloc(s, 1 + i * 37u);
            assert_int_equal((uintptr_t)p[i] % HK_ALIGN, 0);
            fill_pattern(p[i], 1 + i * 37u, (unsigned)i);
        }
        w = walk(s);
        assert_true((uintptr_t)w->b[0].start > (uintptr_t)s);
        /* The last block and the HDR-byte sentinel tag after it stay inside the caller's bytes. */
        assert_true((uintptr_t)w->b[w->n - 1u].start + w->b[w->n - 1u].size + HDR <= (uintptr_t)arena + 8192u);
        assert_true(stats(s).capacity + 512u > 8192u);
        expect_consistent(s);
        for (i = 0; i < 8; i++) {
            assert_pattern(p[i], 1 + i * 37u, (unsigned)i);
        }
        free_all(s, p, 8);
        expect_empty(s);
    }
}

/* ------------------------------------------------------------- geometry */

static void test_gross_sizes(void **state)
{
    hk_seqfit_t *s = make(policy_of(state));
    size_t n;
    size_t expect_off = 0;
    size_t requested = 0;
    size_t granted = 0;

    assert_int_equal(HDR, HK_TAG_WIDE ? 8 : 4);
    assert_int_equal(MIN_BLOCK, HK_ALIGN == 16 ? 32 : sizeof(void *) == 8 ? 24 : 16);
    for (n = 0; n <= 200; n++) {
        void *p = must_malloc(s, n);
        assert_int_equal(off(p), expect_off);
        assert_int_equal(hk_seqfit_usable_size(s, p), gross_of(n) - HDR);
        expect_off += gross_of(n);
        requested += n;
        granted += gross_of(n) - HDR;
    }
    assert_int_equal(stats(s).used_requested, stats(s).used_granted); /* level 1 stores no request */
    assert_int_equal(stats(s).used_granted, granted);
    assert_int_equal(counters(s).requested, requested);
    assert_int_equal(counters(s).max_heap, expect_off);
    assert_int_equal(counters(s).grows, 201);
    assert_int_equal(counters(s).reuses, 0);
    expect_consistent(s);
}

/* ------------------------------------------------------------ placement */

/*
 * A..G of gross 48 192 48 96 48 256 48 at offsets 0 48 240 288 384 432 688,
 * top at 736; B, D and F freed leave holes of 192, 96 and 256.
 */
static void make_holes(hk_seqfit_t *s)
{
    static const size_t gross[7] = {48, 192, 48, 96, 48, 256, 48};
    static const size_t at_off[7] = {0, 48, 240, 288, 384, 432, 688};
    static const blk_t layout[8] = {{0, 48, 1},   {48, 192, 0},  {240, 48, 1}, {288, 96, 0},
                                    {384, 48, 1}, {432, 256, 0}, {688, 48, 1}, {736, TOP, 0}};
    void *p[7];
    size_t i;
    for (i = 0; i < 7; i++) {
        p[i] = must_malloc(s, req(gross[i]));
        assert_int_equal(off(p[i]), at_off[i]);
    }
    hk_seqfit_free(s, p[1]);
    hk_seqfit_free(s, p[3]);
    hk_seqfit_free(s, p[5]);
    expect_layout(s, layout, 8);
    assert_int_equal(counters(s).free_blocks, 3);
    assert_int_equal(counters(s).grows, 7);
    assert_int_equal(counters(s).coalesces, 0);
    expect_consistent(s);
}

static void test_placement(void **state)
{
    /* Requests of gross 96, 160, 48, 96 against holes B 192 @48, D 96 @288, F 256 @432. */
    static const size_t gross[4] = {96, 160, 48, 96};
    static const size_t expect[4][4] = {
        {48, 432, 144, 288},  /* first: lowest address that fits every time */
        {48, 432, 592, 144},  /* next: B, on past B' and D to F, F's rest, then wraps to B' */
        {288, 48, 432, 480},  /* best: D exactly, B, then F (B's 32-byte rest is too small), F's rest */
        {432, 48, 528, 576},  /* worst: F, B, F's rest, F's rest's rest (112 bytes for 96) */
    };
    /* Listed free blocks left over (offset, size); worst fit's third only where it is split off. */
    static const size_t left_off[4][3] = {{192, 592}, {288, 640}, {208, 576}, {208, 288, 672}};
    static const size_t left_size[4][3] = {{48, 96}, {96, 48}, {32, 112}, {32, 96, 16}};
    hk_seqfit_policy_t pol = policy_of(state);
    hk_seqfit_t *s = make(pol);
    /*
     * Worst fit's last pick leaves 112 - 96 = 16 bytes: a block of its own
     * where HK_TAG_MIN_BLOCK is 16 (32-bit targets), else part of the block
     * handed out. Every other pick splits off a rest of at least 32 or fits
     * exactly.
     */
    int tail_split = pol == HK_SEQFIT_WORST && 112u - 96u >= MIN_BLOCK;
    size_t left = tail_split ? 3u : 2u;
    size_t offs[8];
    size_t sizes[8];
    size_t i;

    make_holes(s);
    for (i = 0; i < 4; i++) {
        void *p = must_malloc(s, req(gross[i]));
        size_t got = (pol == HK_SEQFIT_WORST && i == 3 && !tail_split) ? 112u : gross[i];
        assert_int_equal(off(p), expect[pol][i]);
        assert_int_equal(hk_seqfit_usable_size(s, p), got - HDR);
        expect_consistent(s);
    }
    assert_int_equal(listed_blocks(s, offs, sizes, 8), left);
    for (i = 0; i < left; i++) {
        assert_int_equal(offs[i], left_off[pol][i]);
        assert_int_equal(sizes[i], left_size[pol][i]);
    }
    assert_int_equal(counters(s).reuses, 4);
    assert_int_equal(counters(s).grows, 7);
    assert_int_equal(counters(s).splits, 3u + (size_t)tail_split);
    assert_int_equal(counters(s).free_blocks, left);
    assert_int_equal(counters(s).max_heap, 736);
}

/* A request no listed block fits comes from the top under every policy. */
static void test_placement_falls_to_top(void **state)
{
    hk_seqfit_t *s = make(policy_of(state));
    void *p;
    make_holes(s);
    p = must_malloc(s, req(272)); /* > 256 */
    assert_int_equal(off(p), 736);
    assert_int_equal(counters(s).grows, 8);
    assert_int_equal(counters(s).reuses, 0);
    assert_int_equal(counters(s).max_heap, 736 + 272);
    /* Worst fit takes the largest hole even when a smaller one fits exactly. */
    p = must_malloc(s, req(96));
    assert_int_equal(off(p), policy_of(state) == HK_SEQFIT_WORST ? 432u : policy_of(state) == HK_SEQFIT_BEST ? 288u : 48u);
    expect_consistent(s);
}

/*
 * Next fit on make_holes' layout: a malloc of `request` lands at `placed`
 * (the rover stays behind it), then the block at `freed` is freed, merging
 * `coalesces` times in all and leaving `listed` blocks on the free list.
 */
static hk_seqfit_t *rover_then_free(size_t request, size_t placed, size_t freed, size_t coalesces, size_t listed)
{
    hk_seqfit_t *s = make(HK_SEQFIT_NEXT);
    make_holes(s);
    assert_int_equal(off(must_malloc(s, request)), placed);
    hk_seqfit_free(s, at(freed));
    assert_int_equal(counters(s).coalesces, coalesces);
    assert_int_equal(counters(s).free_blocks, listed);
    assert_int_equal(hk_seqfit_check(s), 0);
    return s;
}

static void test_next_fit_rover(void **state)
{
    hk_seqfit_t *s;
    (void)state;

    /* Rover on B's rest (144); freeing the block in front of it merges it away (B @48, D, F listed). */
    s = rover_then_free(req(96), 48, 48, 1, 3);
    /* The search resumes at the next listed block, D, not at B (first fit's pick). */
    assert_int_equal(off(must_malloc(s, req(96))), 288);
    expect_consistent(s);

    /* Rover on B's rest (144); freeing C behind it merges B', C and D into one block: B'C D @144 (240 bytes), F @432. */
    s = rover_then_free(req(96), 48, 240, 2, 2);
    assert_int_equal(off(must_malloc(s, req(48))), 432);
    expect_consistent(s);

    /* Rover on F's rest (640), which merges into the top when G is freed. */
    s = rover_then_free(req(208), 432, 688, 2, 2);
    assert_int_equal(off(must_malloc(s, req(48))), 48); /* starts over at the head */
    assert_int_equal(off(must_malloc(s, req(48))), 96); /* and continues from there */
    expect_consistent(s);
}

/* ------------------------------------------------------- top and counters */

static void test_top(void **state)
{
    hk_seqfit_t *s = make(policy_of(state));
    void *a = must_malloc(s, req(48));
    void *b;
    void *c;
    void *d;
    void *e;

    assert_int_equal(off(a), 0);
    assert_int_equal(counters(s).grows, 1);
    assert_int_equal(counters(s).max_heap, 48);
    b = must_malloc(s, req(192));
    assert_int_equal(off(b), 48);
    assert_int_equal(counters(s).max_heap, 240);
    c = must_malloc(s, req(96));
    assert_int_equal(off(c), 240);
    assert_int_equal(counters(s).max_heap, 336);
    assert_int_equal(counters(s).grows, 3);
    assert_int_equal(stats(s).free_blocks, 1);

    /* Freeing the block under the top lowers the top; max_heap is a high-water mark. */
    hk_seqfit_free(s, c);
    {
        static const blk_t layout[3] = {{0, 48, 1}, {48, 192, 1}, {240, TOP, 0}};
        expect_layout(s, layout, 3);
    }
    assert_int_equal(counters(s).coalesces, 1);
    assert_int_equal(counters(s).free_blocks, 0);
    assert_int_equal(counters(s).max_heap, 336);
    d = must_malloc(s, req(48));
    assert_int_equal(off(d), 240);
    assert_int_equal(counters(s).grows, 4);
    assert_int_equal(counters(s).max_heap, 336);

    /* A block below the top goes on the list and is reused. */
    hk_seqfit_free(s, a);
    assert_int_equal(counters(s).free_blocks, 1);
    assert_int_equal(stats(s).free_blocks, 2);
    assert_int_equal(counters(s).coalesces, 1);
    e = must_malloc(s, req(48));
    assert_ptr_equal(e, a);
    assert_int_equal(counters(s).reuses, 1);
    assert_int_equal(counters(s).grows, 4);
    assert_int_equal(counters(s).splits, 0);
    assert_int_equal(counters(s).free_blocks, 0);
    assert_int_equal(counters(s).requested, req(48) + req(192) + req(96) + req(48) + req(48));
    expect_consistent(s);

    /* Down to nothing: the top covers the span again. */
    hk_seqfit_free(s, b);
    hk_seqfit_free(s, e);
    hk_seqfit_free(s, d);
    assert_int_equal(counters(s).coalesces, 1 + 1 + 2);
    assert_int_equal(counters(s).max_heap, 336);
    expect_empty(s);
}

/* A request served from the hole at `hole`: same address, this usable size, splits and reuses so far. */
static void *reuse_hole(hk_seqfit_t *s, void *hole, size_t request, size_t usable, size_t splits, size_t reuses)
{
    void *p = must_malloc(s, request);
    assert_ptr_equal(p, hole);
    assert_int_equal(hk_seqfit_usable_size(s, p), usable);
    assert_int_equal(counters(s).splits, splits);
    assert_int_equal(counters(s).reuses, reuses);
    return p;
}

static void test_split_threshold(void **state)
{
    hk_seqfit_t *s = make(policy_of(state));
    /* The hole B @48, and where its rest starts when a MIN_BLOCK rest is split off. */
    const size_t rest_off = 48 + 192 - MIN_BLOCK;
    void *b;
    void *p;
    must_malloc(s, req(48));
    b = must_malloc(s, req(192)); /* 192 @48 */
    must_malloc(s, req(48));
    hk_seqfit_free(s, b);

    /* A rest of MIN_BLOCK - HK_ALIGN cannot be a block: the whole hole is handed out. */
    p = reuse_hole(s, b, req(192 - (MIN_BLOCK - HK_ALIGN)), req(192), 0, 1);
    assert_int_equal(stats(s).used_requested, stats(s).used_granted); /* level 1 stores no request */
    assert_int_equal(stats(s).used_granted, req(48) + req(192) + req(48));
    assert_int_equal(counters(s).free_blocks, 0);
    expect_consistent(s);
    hk_seqfit_free(s, p);

    /* A rest of exactly HK_TAG_MIN_BLOCK: split, the rest stays listed. */
    p = reuse_hole(s, b, req(192 - MIN_BLOCK), req(192 - MIN_BLOCK), 1, 2);
    {
        const blk_t layout[5] = {
            {0, 48, 1}, {48, 192 - MIN_BLOCK, 1}, {rest_off, MIN_BLOCK, 0}, {240, 48, 1}, {288, TOP, 0}};
        expect_layout(s, layout, 5);
    }
    /* That MIN_BLOCK rest takes a malloc(0) (or anything up to MIN_BLOCK - HDR bytes) exactly. */
    p = must_malloc(s, 0);
    assert_int_equal(off(p), rest_off);
    assert_int_equal(hk_seqfit_usable_size(s, p), MIN_BLOCK - HDR);
    assert_int_equal(counters(s).splits, 1);
    expect_consistent(s);
}

static void test_coalesce(void **state)
{
    hk_seqfit_t *s = make(policy_of(state));
    void *p[7];
    size_t i;
    for (i = 0; i < 6; i++) {
        p[i] = must_malloc(s, req(96)); /* 96 each at 0, 96, ..., 480 */
        assert_int_equal(off(p[i]), i * 96u);
    }
    p[6] = must_malloc(s, req(48)); /* @576, keeps the holes off the top */

    hk_seqfit_free(s, p[1]); /* no free neighbour */
    assert_int_equal(counters(s).coalesces, 0);
    assert_int_equal(counters(s).free_blocks, 1);
    hk_seqfit_free(s, p[2]); /* left neighbour free */
    assert_int_equal(counters(s).coalesces, 1);
    assert_int_equal(counters(s).free_blocks, 1);
    {
        static const blk_t layout[7] = {{0, 96, 1},   {96, 192, 0},  {288, 96, 1}, {384, 96, 1},
                                        {480, 96, 1}, {576, 48, 1}, {624, TOP, 0}};
        expect_layout(s, layout, 7);
    }
    hk_seqfit_free(s, p[4]);
    assert_int_equal(counters(s).coalesces, 1);
    assert_int_equal(counters(s).free_blocks, 2);
    hk_seqfit_free(s, p[3]); /* both neighbours free */
    assert_int_equal(counters(s).coalesces, 3);
    assert_int_equal(counters(s).free_blocks, 1);
    {
        static const blk_t layout[5] = {{0, 96, 1}, {96, 384, 0}, {480, 96, 1}, {576, 48, 1}, {624, TOP, 0}};
        expect_layout(s, layout, 5);
    }
    hk_seqfit_free(s, p[0]); /* right neighbour free */
    assert_int_equal(counters(s).coalesces, 4);
    {
        static const blk_t layout[4] = {{0, 480, 0}, {480, 96, 1}, {576, 48, 1}, {624, TOP, 0}};
        expect_layout(s, layout, 4);
    }
    hk_seqfit_free(s, p[5]); /* left only: G still used */
    assert_int_equal(counters(s).coalesces, 5);
    assert_int_equal(counters(s).free_blocks, 1);
    hk_seqfit_free(s, p[6]); /* listed block on the left, top on the right */
    assert_int_equal(counters(s).coalesces, 7);
    assert_int_equal(stats(s).coalesce_count, 7);
    assert_int_equal(counters(s).splits, 0);
    expect_empty(s);
}

/* --------------------------------------------------- fits-cse3320 seed */

#define CSE_FIRST 40u
#define CSE_SECOND 24u

typedef struct cse_result {
    hk_seqfit_counters_t c;
    size_t requested;
} cse_result_t;

/*
 * The seed's fragmentation test: (1) blocks of varying size, (2) free every
 * other one, (3) more blocks of varying size, (4) free most, (5) one large
 * allocation.
 */
static cse_result_t run_cse3320(hk_seqfit_policy_t pol)
{
    hk_seqfit_t *s = make(pol);
    void *one[CSE_FIRST];
    void *two[CSE_SECOND];
    void *big;
    size_t requested = 0;
    size_t max_end = 0;
    size_t i;
    cse_result_t r;

#define CSE_ALLOC(dst, n)                                                                                                   \
    do {                                                                                                                    \
        size_t n_ = (n);                                                                                                    \
        (dst) = must_malloc(s, n_);                                                                                         \
        requested += n_;                                                                                                    \
        max_end = off(dst) + gross_of(n_) > max_end ? off(dst) + gross_of(n_) : max_end;                                   \
    } while (0)

    for (i = 0; i < CSE_FIRST; i++) {
        CSE_ALLOC(one[i], 64u + (i * 397u) % 960u);
    }
    for (i = 1; i < CSE_FIRST; i += 2) {
        hk_seqfit_free(s, one[i]);
        one[i] = NULL;
    }
    expect_consistent(s);
    for (i = 0; i < CSE_SECOND; i++) {
        CSE_ALLOC(two[i], 32u + (i * 211u) % 700u);
    }
    expect_consistent(s);
    /* Free most: keep every eighth block of the first round and the last of the second. */
    for (i = 0; i < CSE_FIRST; i++) {
        if (i % 8u != 0) {
            hk_seqfit_free(s, one[i]);
            one[i] = NULL;
        }
    }
    for (i = 0; i + 1u < CSE_SECOND; i++) {
        hk_seqfit_free(s, two[i]);
        two[i] = NULL;
    }
    expect_consistent(s);
    CSE_ALLOC(big, 12000u);
    expect_consistent(s);
#undef CSE_ALLOC

    r.c = counters(s);
    r.requested = requested;
    /* Counters against the heap's own statistics and the test's bookkeeping. */
    assert_int_equal(r.c.requested, requested);
    assert_int_equal(r.c.reuses + r.c.grows, stats(s).alloc_count);
    assert_int_equal(r.c.reuses + r.c.grows, CSE_FIRST + CSE_SECOND + 1u);
    assert_int_equal(r.c.splits, stats(s).split_count);
    assert_int_equal(r.c.coalesces, stats(s).coalesce_count);
    assert_int_equal(r.c.max_heap, max_end);
    assert_true(r.c.splits <= r.c.reuses);

    hk_seqfit_free(s, big);
    free_all(s, one, CSE_FIRST);
    free_all(s, two, CSE_SECOND);
    expect_empty(s);
    assert_int_equal(stats(s).free_blocks, 1);
    assert_int_equal(counters(s).free_blocks, 0);
    assert_int_equal(counters(s).max_heap, max_end);
    return r;
}

static void test_cse3320_fragmentation(void **state)
{
    cse_result_t r[4];
    size_t i;
    (void)state;
    for (i = 0; i < 4; i++) {
        r[i] = run_cse3320(k_policy[i]);
    }
    printf("\n  fits-cse3320 fragmentation test (HK_ALIGN %u)\n", (unsigned)HK_ALIGN);
    printf("  %-10s %10s %10s %10s %10s\n", "", "First Fit", "Next Fit", "Best Fit", "Worst Fit");
#define CSE_ROW(label, field)                                                                                             \
    printf("  %-10s %10zu %10zu %10zu %10zu\n", label, r[0].c.field, r[1].c.field, r[2].c.field, r[3].c.field)
    CSE_ROW("Reuses", reuses);
    CSE_ROW("Grows", grows);
    CSE_ROW("Splits", splits);
    CSE_ROW("Coalesces", coalesces);
    CSE_ROW("Blocks", free_blocks);
    CSE_ROW("Requested", requested);
    CSE_ROW("Max Heap", max_heap);
#undef CSE_ROW
    for (i = 0; i < 4; i++) {
        assert_int_equal(r[i].c.requested, r[0].requested);
    }
    /* Best fit never needs a higher top than first fit on this sequence, as in the seed's table. */
    assert_true(r[HK_SEQFIT_BEST].c.max_heap <= r[HK_SEQFIT_FIRST].c.max_heap);
    /* The first round comes from the top under every policy. */
    for (i = 0; i < 4; i++) {
        assert_true(r[i].c.grows >= CSE_FIRST);
    }
}

/* ------------------------------------------------------ heap_4 and model */

static void test_heap4_first_fit_by_hand(void **state)
{
    /*
     * heap_4 walks its address-ordered list from the start and takes the first
     * block that fits, the rest of the heap being the last block on that list.
     * Requests by gross size: 112, 32, 304, 64, then 48, 80, 64, 32, 224 and a
     * malloc(8).
     */
    hk_seqfit_t *s = make(HK_SEQFIT_FIRST);
    void *p[10];
    (void)state;
    p[0] = must_malloc(s, req(112)); /* @0 */
    p[1] = must_malloc(s, req(32));  /* @112 */
    p[2] = must_malloc(s, req(304)); /* @144 */
    p[3] = must_malloc(s, req(64));  /* @448, top @512 */
    assert_int_equal(off(p[0]), 0);
    assert_int_equal(off(p[1]), 112);
    assert_int_equal(off(p[2]), 144);
    assert_int_equal(off(p[3]), 448);
    hk_seqfit_free(s, p[0]);         /* hole [0,112) */
    hk_seqfit_free(s, p[2]);         /* hole [144,448) */
    p[4] = must_malloc(s, req(48));  /* first hole, rest 64 @48 */
    p[5] = must_malloc(s, req(80));  /* 64 too small: second hole, rest 224 @224 */
    p[6] = must_malloc(s, req(64));  /* exactly the 64 @48 */
    hk_seqfit_free(s, p[1]);         /* 32 @112 between used blocks */
    p[7] = must_malloc(s, req(32));  /* exactly @112 */
    p[8] = must_malloc(s, req(224)); /* exactly @224 */
    p[9] = must_malloc(s, 8);        /* list empty: the top @512 */
    assert_int_equal(off(p[4]), 0);
    assert_int_equal(off(p[5]), 144);
    assert_int_equal(off(p[6]), 48);
    assert_int_equal(off(p[7]), 112);
    assert_int_equal(off(p[8]), 224);
    assert_int_equal(off(p[9]), 512);
    assert_int_equal(counters(s).free_blocks, 0);
    assert_int_equal(counters(s).splits, 2);
    assert_int_equal(counters(s).reuses, 5);
    assert_int_equal(counters(s).grows, 5);
    expect_consistent(s);
}

/* A reference heap: blocks by address, placement by the policy's definition. */
typedef struct model {
    blk_t b[MAX_BLOCKS];
    size_t n;
    hk_seqfit_policy_t pol;
} model_t;

static model_t g_model;

static void model_init(model_t *m, hk_seqfit_policy_t pol, size_t capacity)
{
    m->n = 1;
    m->b[0].off = 0;
    m->b[0].size = capacity;
    m->b[0].used = 0;
    m->pol = pol;
}

/* Offset handed out for `gross` bytes, or SIZE_MAX. Not for next fit. */
static size_t model_malloc(model_t *m, size_t gross)
{
    size_t i;
    size_t pick = SIZE_MAX;
    size_t listed = (m->n > 0 && !m->b[m->n - 1u].used) ? m->n - 1u : m->n; /* blocks below the top */
    for (i = 0; i < listed; i++) {
        const blk_t *b = &m->b[i];
        if (b->used) {
            continue;
        }
        if (m->pol == HK_SEQFIT_FIRST && b->size >= gross) {
            pick = i;
            break;
        }
        if (m->pol == HK_SEQFIT_BEST && b->size >= gross && (pick == SIZE_MAX || b->size < m->b[pick].size)) {
            pick = i;
        }
        if (m->pol == HK_SEQFIT_WORST && (pick == SIZE_MAX || b->size > m->b[pick].size)) {
            pick = i;
        }
    }
    if (pick != SIZE_MAX && m->b[pick].size < gross) {
        pick = SIZE_MAX;
    }
    if (pick == SIZE_MAX && listed < m->n && m->b[listed].size >= gross) {
        pick = listed;
    }
    if (pick == SIZE_MAX) {
        return SIZE_MAX;
    }
    if (m->b[pick].size - gross >= MIN_BLOCK) {
        memmove(&m->b[pick + 2u], &m->b[pick + 1u], (m->n - pick - 1u) * sizeof(blk_t));
        m->n++;
        m->b[pick + 1u].off = m->b[pick].off + gross;
        m->b[pick + 1u].size = m->b[pick].size - gross;
        m->b[pick + 1u].used = 0;
        m->b[pick].size = gross;
    }
    m->b[pick].used = 1;
    return m->b[pick].off;
}

static void model_free(model_t *m, size_t block_off)
{
    size_t i;
    for (i = 0; i < m->n && m->b[i].off != block_off; i++) {
    }
    assert_true(i < m->n && m->b[i].used);
    m->b[i].used = 0;
    if (i + 1u < m->n && !m->b[i + 1u].used) {
        m->b[i].size += m->b[i + 1u].size;
        memmove(&m->b[i + 1u], &m->b[i + 2u], (m->n - i - 2u) * sizeof(blk_t));
        m->n--;
    }
    if (i > 0 && !m->b[i - 1u].used) {
        m->b[i - 1u].size += m->b[i].size;
        memmove(&m->b[i], &m->b[i + 1u], (m->n - i - 1u) * sizeof(blk_t));
        m->n--;
    }
}

/* The model's blocks all have a size, so none stands for "up to the end of the span". */
static void expect_model(hk_seqfit_t *s, const model_t *m) { expect_layout(s, m->b, m->n); }

/* Random malloc/free against the reference model: same address for every block, same layout. */
static void test_model_placement(void **state)
{
    hk_seqfit_policy_t pol = policy_of(state);
    hk_seqfit_t *s = make_at(g_arena.bytes, 16384, pol);
    void *live[96];
    size_t nlive = 0;
    size_t op;
    size_t fails = 0;

    rng_seed(0x5EED0000u + (uint64_t)pol);
    model_init(&g_model, pol, stats(s).capacity);
    for (op = 0; op < 6000; op++) {
        if (nlive < 96 && (nlive == 0 || rng_below(100) < 55)) {
            size_t n = rng_below(10) == 0 ? 512 + rng_below(2048) : rng_below(300);
            void *p = hk_malloc(hk_seqfit_heap(s), n);
            size_t expect = model_malloc(&g_model, gross_of(n));
            if (expect == SIZE_MAX) {
                assert_null(p);
                fails++;
            } else {
                assert_non_null(p);
                assert_int_equal(off(p), expect);
                live[nlive++] = p;
            }
        } else {
            size_t k = rng_below(nlive);
            model_free(&g_model, off(live[k]));
            hk_seqfit_free(s, live[k]);
            live[k] = live[--nlive];
        }
        expect_model(s, &g_model);
        assert_int_equal(hk_seqfit_check(s), 0);
    }
    assert_int_equal(stats(s).fail_count, fails);
    free_all(s, live, nlive);
    expect_empty(s);
}

/* Next fit has no simple model; a random run keeps every invariant (the rover's included). */
static void test_next_fit_stress(void **state)
{
    hk_seqfit_t *s = make_at(g_arena.bytes, 16384, HK_SEQFIT_NEXT);
    void *live[96];
    size_t len[96];
    size_t nlive = 0;
    size_t op;
    (void)state;

    rng_seed(0xFEEDu);
    for (op = 0; op < 20000; op++) {
        size_t x = rng_below(100);
        if (nlive < 96 && (nlive == 0 || x < 50)) {
            size_t n = rng_below(8) == 0 ? 300 + rng_below(1500) : rng_below(200);
            void *p = hk_seqfit_malloc(s, n);
            if (p != NULL) {
                fill_pattern(p, n, (unsigned)n);
                len[nlive] = n;
                live[nlive++] = p;
            }
        } else if (x < 60) {
            size_t k = rng_below(nlive);
            size_t n = rng_below(600);
            void *p;
            assert_pattern(live[k], len[k], (unsigned)len[k]);
            p = hk_realloc(hk_seqfit_heap(s), live[k], n);
            if (n == 0) {
                assert_null(p);
                live[k] = live[--nlive];
                len[k] = len[nlive];
            } else if (p != NULL) {
                assert_pattern(p, len[k] < n ? len[k] : n, (unsigned)len[k]);
                fill_pattern(p, n, (unsigned)n);
                live[k] = p;
                len[k] = n;
            }
        } else {
            size_t k = rng_below(nlive);
            assert_pattern(live[k], len[k], (unsigned)len[k]);
            hk_seqfit_free(s, live[k]);
            live[k] = live[--nlive];
            len[k] = len[nlive];
        }
        assert_int_equal(hk_seqfit_check(s), 0);
    }
    expect_consistent(s);
    free_all(s, live, nlive);
    expect_empty(s);
}

/* -------------------------------------------------------------- realloc */

static void test_realloc_paths(void **state)
{
    hk_seqfit_t *s = make(HK_SEQFIT_FIRST);
    hk_stats_t st;
    void *a = must_malloc(s, req(48));
    void *p = must_malloc(s, req(192));
    void *c = must_malloc(s, req(48));
    /* A request that would leave MIN_BLOCK - HK_ALIGN of a 96-byte block: too little to cut off. */
    size_t keep = req(96 - (MIN_BLOCK - HK_ALIGN));
    void *q;
    void *r;
    (void)state;

    /* Shrink with a split: the 96-byte rest is freed (C stops it merging). */
    fill_pattern(p, req(192), 1);
    assert_ptr_equal(hk_realloc(hk_seqfit_heap(s), p, req(96)), p);
    assert_int_equal(hk_seqfit_usable_size(s, p), req(96));
    assert_pattern(p, req(96), 1);
    {
        static const blk_t layout[5] = {{0, 48, 1}, {48, 96, 1}, {144, 96, 0}, {240, 48, 1}, {288, TOP, 0}};
        expect_layout(s, layout, 5);
    }
    st = stats(s);
    assert_int_equal(st.split_count, 1);
    assert_int_equal(st.coalesce_count, 0);
    assert_int_equal(st.realloc_count, 1);
    assert_int_equal(st.used_requested, st.used_granted); /* level 1 stores no request */
    expect_consistent(s);

    /* Shrink by less than a minimum block: nothing moves. */
    assert_ptr_equal(hk_realloc(hk_seqfit_heap(s), p, keep), p);
    assert_int_equal(hk_seqfit_usable_size(s, p), req(96));
    assert_int_equal(stats(s).used_requested, stats(s).used_granted); /* level 1 stores no request */
    assert_int_equal(stats(s).split_count, 1);
    assert_pattern(p, keep, 1);

    /* Grow into the free neighbour, splitting off its unneeded 32 bytes. */
    assert_ptr_equal(hk_realloc(hk_seqfit_heap(s), p, req(160)), p);
    assert_int_equal(hk_seqfit_usable_size(s, p), req(160));
    assert_pattern(p, keep, 1);
    {
        static const blk_t layout[5] = {{0, 48, 1}, {48, 160, 1}, {208, 32, 0}, {240, 48, 1}, {288, TOP, 0}};
        expect_layout(s, layout, 5);
    }
    assert_int_equal(stats(s).coalesce_count, 1);
    assert_int_equal(stats(s).split_count, 2);

    /* Grow into the free neighbour exactly. */
    assert_ptr_equal(hk_realloc(hk_seqfit_heap(s), p, req(192)), p);
    assert_int_equal(hk_seqfit_usable_size(s, p), req(192));
    assert_pattern(p, keep, 1);
    assert_int_equal(stats(s).coalesce_count, 2);
    assert_int_equal(stats(s).free_blocks, 1);
    expect_consistent(s);

    /* Blocked by C: move to the top, content kept, the old block freed. */
    fill_pattern(p, req(192), 2);
    st = stats(s);
    q = hk_realloc(hk_seqfit_heap(s), p, req(400));
    assert_non_null(q);
    assert_int_equal(off(q), 288);
    assert_pattern(q, req(192), 2);
    assert_int_equal(stats(s).alloc_count, st.alloc_count + 1);
    assert_int_equal(stats(s).free_count, st.free_count + 1);
    assert_int_equal(stats(s).realloc_count, st.realloc_count + 1);
    assert_int_equal(counters(s).grows, 4);
    {
        static const blk_t layout[5] = {{0, 48, 1}, {48, 192, 0}, {240, 48, 1}, {288, 400, 1}, {688, TOP, 0}};
        expect_layout(s, layout, 5);
    }
    expect_consistent(s);

    /* Grow into the top: same address, the top rises. */
    assert_ptr_equal(hk_realloc(hk_seqfit_heap(s), q, req(1008)), q);
    assert_int_equal(hk_seqfit_usable_size(s, q), req(1008));
    assert_pattern(q, req(192), 2);
    assert_int_equal(counters(s).max_heap, 288 + 1008);
    assert_int_equal(stats(s).coalesce_count, 3);
    assert_int_equal(stats(s).split_count, 3);
    {
        static const blk_t layout[5] = {{0, 48, 1}, {48, 192, 0}, {240, 48, 1}, {288, 1008, 1}, {1296, TOP, 0}};
        expect_layout(s, layout, 5);
    }

    /* realloc(NULL, n) is malloc(n); realloc(p, 0) frees p. */
    st = stats(s);
    r = hk_realloc(hk_seqfit_heap(s), NULL, req(48));
    assert_int_equal(off(r), 48);
    assert_int_equal(stats(s).alloc_count, st.alloc_count + 1);
    assert_int_equal(stats(s).split_count, 4);
    assert_null(hk_realloc(hk_seqfit_heap(s), r, 0));
    assert_int_equal(stats(s).free_count, st.free_count + 1);
    assert_int_equal(stats(s).used_blocks, 3);
    assert_int_equal(stats(s).coalesce_count, 4);
    assert_int_equal(stats(s).error_count, 0);
    expect_consistent(s);

    /* A failed realloc leaves the block alone. */
    st = stats(s);
    assert_null(hk_realloc(hk_seqfit_heap(s), q, SIZE_MAX));
    assert_null(hk_realloc(hk_seqfit_heap(s), q, ARENA_SIZE));
    assert_int_equal(stats(s).fail_count, st.fail_count + 2);
    assert_int_equal(stats(s).free_bytes, st.free_bytes);
    assert_int_equal(stats(s).used_requested, stats(s).used_granted); /* level 1 stores no request */
    assert_int_equal(hk_seqfit_usable_size(s, q), req(1008));
    assert_pattern(q, req(192), 2);

    /* A free neighbour too small to grow into: A moves to the top and merges with it. */
    fill_pattern(a, req(48), 3);
    r = hk_realloc(hk_seqfit_heap(s), a, req(400));
    assert_int_equal(off(r), 1296);
    assert_pattern(r, req(48), 3);
    {
        static const blk_t layout[5] = {{0, 240, 0}, {240, 48, 1}, {288, 1008, 1}, {1296, 400, 1}, {1696, TOP, 0}};
        expect_layout(s, layout, 5);
    }
    assert_int_equal(stats(s).used_requested, stats(s).used_granted); /* level 1 stores no request */
    assert_int_equal(counters(s).max_heap, 1696);
    expect_consistent(s);

    /* Growing the block under the top by one 16-byte step raises the top by as much. */
    assert_ptr_equal(hk_realloc(hk_seqfit_heap(s), r, req(416)), r);
    assert_int_equal(hk_seqfit_usable_size(s, r), req(416));
    assert_int_equal(counters(s).max_heap, 1712);
    assert_pattern(r, req(48), 3);
    expect_consistent(s);
    hk_seqfit_free(s, c);
    hk_seqfit_free(s, q);
    hk_seqfit_free(s, r);
    expect_empty(s);
}

/* -------------------------------------------------------- aligned_alloc */

/* Where aligned_alloc must put a payload cut from the free block at block_off. */
static uintptr_t expected_aligned(size_t block_off, size_t alignment)
{
    return aligned_payload(g_base + block_off + HDR, alignment, MIN_BLOCK);
}

static void test_aligned_from_top(void **state)
{
    size_t alignment;
    (void)state;
    for (alignment = 16; alignment <= 4096; alignment *= 2) {
        hk_seqfit_t *s = make(HK_SEQFIT_FIRST);
        void *x = must_malloc(s, req(48)); /* top @48 */
        void *p = hk_seqfit_aligned_alloc(s, alignment, 100);
        uintptr_t expect = expected_aligned(48, alignment);
        size_t gap = (size_t)(expect - (g_base + 48 + HDR));
        hk_stats_t st = stats(s);
        hk_seqfit_counters_t c = counters(s);
        blk_t layout[4];
        size_t n;

        assert_ptr_equal(p, (void *)expect);
        assert_int_equal((uintptr_t)p % alignment, 0);
        assert_int_equal(hk_seqfit_usable_size(s, p), gross_of(100) - HDR);
        assert_int_equal(st.used_requested, st.used_granted); /* level 1 stores no request */
        assert_int_equal(c.grows, 2);
        assert_int_equal(c.max_heap, 48 + gap + gross_of(100));
        n = push_block(layout, 0, 0, 48, 1); /* x */
        expect_layout(s, layout, push_aligned_cut(layout, n, 48, gap, gross_of(100), TOP));
        if (gap != 0) {
            assert_true(gap >= MIN_BLOCK);
            assert_int_equal(st.split_count, 1);
            assert_int_equal(c.free_blocks, 1);
        } else {
            /* x, then p at 48, the top from 48 + gross_of(100): carved, nothing listed */
            assert_int_equal(st.split_count, 0);
            assert_int_equal(c.free_blocks, 0);
        }
        expect_consistent(s);
        fill_pattern(p, 100, 7);
        hk_seqfit_free(s, x);
        assert_pattern(p, 100, 7);
        hk_seqfit_free(s, p);
        expect_empty(s);
    }
}

static void test_aligned_from_list(void **state)
{
    size_t alignment;
    size_t k;
    (void)state;
    for (k = 0; k < 4; k++) {
        for (alignment = 16; alignment <= 4096; alignment *= 2) {
            hk_seqfit_t *s = make(k_policy[k]);
            void *a = must_malloc(s, req(48));
            void *h = must_malloc(s, req(8192)); /* 8192 @48 */
            void *c = must_malloc(s, req(48));   /* @8240, top @8288 */
            void *p;
            uintptr_t expect = expected_aligned(48, alignment);
            size_t gap = (size_t)(expect - (g_base + 48 + HDR));
            blk_t layout[7];
            size_t n = 0;

            hk_seqfit_free(s, h);
            p = hk_seqfit_aligned_alloc(s, alignment, 100);
            assert_ptr_equal(p, (void *)expect);
            assert_int_equal((uintptr_t)p % alignment, 0);
            n = push_block(layout, n, 0, 48, 1);
            n = push_aligned_cut(layout, n, 48, gap, gross_of(100), 8192 - gap - gross_of(100));
            n = push_block(layout, n, 8240, 48, 1);
            n = push_block(layout, n, 8288, TOP, 0);
            expect_layout(s, layout, n);
            assert_int_equal(counters(s).reuses, 1);
            assert_int_equal(counters(s).grows, 3);
            assert_int_equal(counters(s).max_heap, 8288);
            assert_int_equal(counters(s).free_blocks, gap != 0 ? 2 : 1);
            assert_int_equal(stats(s).split_count, gap != 0 ? 2 : 1);
            expect_consistent(s);
            hk_seqfit_free(s, p);
            hk_seqfit_free(s, a);
            hk_seqfit_free(s, c);
            expect_empty(s);
        }
    }
}

static void test_aligned_edges(void **state)
{
    hk_seqfit_t *s = make(HK_SEQFIT_FIRST);
    hk_heap_t *h = hk_seqfit_heap(s);
    static const size_t bad[5][2] = {{24, 10}, {0, 10}, {(size_t)1 << 31, 10}, {4096, SIZE_MAX}, {4096, ARENA_SIZE - 4096}};
    size_t fails = 0;
    size_t i;
    void *p;
    (void)state;

    /* Not a power of two, zero, beyond any span, hopeless sizes. */
    for (i = 0; i < 5; i++) {
        assert_null(hk_aligned_alloc(h, bad[i][0], bad[i][1]));
        assert_int_equal(stats(s).fail_count, ++fails);
    }
    assert_null(hk_aligned_alloc(h, 48, 10));
    assert_int_equal(stats(s).fail_count, ++fails);
    expect_empty(s);

    /* Alignments up to HK_ALIGN are plain mallocs. */
    p = hk_seqfit_aligned_alloc(s, 8, 10);
    assert_int_equal(off(p), 0);
    p = hk_aligned_alloc(h, 1024, 0);
    assert_int_equal((uintptr_t)p % 1024, 0);
    assert_int_equal(hk_usable_size(h, p), MIN_BLOCK - HDR);
    expect_consistent(s);
}

/* ------------------------------------------------------------ statistics */

static stats_workload_t g_workload;

static void test_stats_counters(void **state)
{
    hk_seqfit_t *s = make_at(g_arena.bytes, 32768, policy_of(state));
    hk_heap_t *h = hk_seqfit_heap(s);
    stats_workload_t *w = &g_workload;
    size_t op;

    stats_workload_start(w, h, HDR, 0xC0FFEEu + (uint64_t)policy_of(state));
    for (op = 0; op < 4000; op++) {
        hk_stats_t st = stats_workload_step(w);
        assert_int_equal(st.capacity, st.free_bytes + st.used_granted + HDR * w->nlive);
        assert_int_equal(hk_check(h), 0);
    }
    expect_consistent(s);
    stats_workload_finish(w);
    expect_empty(s);
}

static TEST_ARENA(LARGE_ARENA) g_large;

static void test_large_arena(void **state)
{
    hk_status_t st = HK_EINVAL;
    hk_seqfit_t *s = hk_seqfit_init(g_large.bytes, LARGE_ARENA, HK_SEQFIT_BEST, &st);
    (void)state;
    expect_large_arena(s != NULL ? hk_seqfit_heap(s) : NULL, st, 1024u, HDR, HK_TAG_WIDE);
}

static void test_huge_requests(void **state)
{
    hk_seqfit_t *s = make(policy_of(state));
    hk_stats_t st = stats(s);
    size_t capacity = st.capacity;
    void *p;

    refuse_hopeless_requests(hk_seqfit_heap(s), HK_TAG_MAX_BLOCK, HDR);
    assert_int_equal(counters(s).grows + counters(s).reuses + counters(s).requested, 0);

    /* The whole span in one block: the top is used up. */
    p = must_malloc(s, capacity - HDR);
    assert_int_equal(off(p), 0);
    assert_int_equal(hk_seqfit_usable_size(s, p), capacity - HDR);
    st = stats(s);
    assert_stats_full(&st);
    assert_int_equal(st.min_ever_free, 0);
    assert_int_equal(counters(s).max_heap, capacity);
    assert_int_equal(counters(s).grows, 1);
    assert_int_equal(counters(s).splits, 0);
    assert_null(hk_seqfit_malloc(s, 0));
    expect_consistent(s);
    hk_seqfit_free(s, p);
    expect_empty(s);
}

/* ----------------------------------------------------------------- misuse */

static void test_misuse(void **state)
{
    hk_seqfit_t *s = make(policy_of(state));
    error_log_t log;
    hk_stats_t before;
    void *a;
    void *b;
    int local = 0;

    record_errors(hk_seqfit_heap(s), &log);
    a = must_malloc(s, 100);
    b = must_malloc(s, 100);
    must_malloc(s, 100);
    hk_seqfit_free(s, a);
    hk_seqfit_free(s, NULL);
    assert_int_equal(hk_seqfit_usable_size(s, NULL), 0);
    before = stats(s);

    hk_seqfit_free(s, a);
    assert_int_equal(log.last, HK_ERR_DOUBLE_FREE);
    assert_ptr_equal(log.ptr, a);
    hk_seqfit_free(s, &local);
    assert_int_equal(log.last, HK_ERR_FOREIGN_PTR);
    /* b's own bytes in front of the interior pointer must not look like a tag (stale ones would: double free). */
    fill_pattern(b, 100, 0x55);
    hk_seqfit_free(s, (unsigned char *)b + HK_ALIGN);
    assert_int_equal(log.last, HK_ERR_INTERIOR_PTR);
    hk_seqfit_free(s, (unsigned char *)b + 1);
    assert_int_equal(log.last, HK_ERR_INTERIOR_PTR);
    assert_null(hk_realloc(hk_seqfit_heap(s), a, 10));
    assert_int_equal(log.last, HK_ERR_DOUBLE_FREE);
    assert_int_equal(hk_seqfit_usable_size(s, a), 0);
    assert_int_equal(log.count, 6);
    assert_int_equal(stats(s).error_count, before.error_count + 6);
    /* Double free after the block merged with its free neighbour. */
    hk_seqfit_free(s, b);
    hk_seqfit_free(s, b);
    assert_int_equal(log.last, HK_ERR_DOUBLE_FREE);
    assert_int_equal(log.count, 7);
    assert_int_equal(hk_seqfit_check(s), 0);
}

/* One entry per policy, named test/policy. */
#define WITH_POLICY(fn, k) {#fn "/" #k, fn, NULL, NULL, &k_policy[HK_SEQFIT_##k]}
#define EACH_POLICY(fn) WITH_POLICY(fn, FIRST), WITH_POLICY(fn, NEXT), WITH_POLICY(fn, BEST), WITH_POLICY(fn, WORST)

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_init_rejects),
        EACH_POLICY(test_init_state),
        cmocka_unit_test(test_init_misaligned),
        EACH_POLICY(test_gross_sizes),
        EACH_POLICY(test_placement),
        EACH_POLICY(test_placement_falls_to_top),
        cmocka_unit_test(test_next_fit_rover),
        EACH_POLICY(test_top),
        EACH_POLICY(test_split_threshold),
        EACH_POLICY(test_coalesce),
        cmocka_unit_test(test_cse3320_fragmentation),
        cmocka_unit_test(test_heap4_first_fit_by_hand),
        WITH_POLICY(test_model_placement, FIRST),
        WITH_POLICY(test_model_placement, BEST),
        WITH_POLICY(test_model_placement, WORST),
        cmocka_unit_test(test_next_fit_stress),
        cmocka_unit_test(test_realloc_paths),
        cmocka_unit_test(test_aligned_from_top),
        cmocka_unit_test(test_aligned_from_list),
        cmocka_unit_test(test_aligned_edges),
        EACH_POLICY(test_stats_counters),
        EACH_POLICY(test_huge_requests),
        cmocka_unit_test(test_large_arena),
        EACH_POLICY(test_misuse),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
