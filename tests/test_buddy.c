/* SPDX-License-Identifier: MIT */
/* Unit tests for the binary buddy allocator (eager and DELAY-2 lazy modes). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "heapkit/buddy.h"
#include "testkit.h"

#define MB ((size_t)HK_BUDDY_MIN_BLOCK)
#define STORAGE (256u * 1024u)

/*
 * HK_HARDENING >= 2 keeps a canary room and the requested size (one size_t)
 * in every used block (src/buddy.c), and usable_size is the requested size.
 */
#define EXTRA ((size_t)(HK_HARDENING >= 2 ? 4u + sizeof(size_t) : 0u))

/* The largest request a block of `bytes` bytes serves. */
static size_t fill(size_t bytes) { return bytes - EXTRA; }

/* usable_size of the block of `bytes` bytes that serves request req. */
static size_t usable_of(size_t bytes, size_t req) { return HK_HARDENING >= 2 ? req : bytes; }

/* Backing store; arenas are carved out of it at chosen offsets from a 4 KiB boundary. */
static unsigned char storage[STORAGE + 8192];

static unsigned char *arena_at(size_t misalign)
{
    uintptr_t a = ((uintptr_t)storage + 4095u) & ~(uintptr_t)4095u;
    return (unsigned char *)(a + misalign);
}

static hk_buddy_config_t config(size_t min_block, int lazy)
{
    hk_buddy_config_t c;
    c.min_block = min_block;
    c.lazy = lazy;
    return c;
}

static hk_stats_t stats_of(hk_buddy_t *h)
{
    hk_stats_t s;
    hk_buddy_get_stats(h, &s);
    return s;
}

/* ---- walk snapshots ---- */

/* A walk snapshot of its own; walk_release() it when done. */
static walk_log_t walk_of(hk_buddy_t *h)
{
    walk_log_t w = WALK_LOG_EMPTY;
    hk_buddy_walk(h, collect_walk, &w);
    return w;
}

/* The geometry and counters that must return to their initial values once everything is freed. */
static void assert_same_shape(const hk_stats_t *a, const hk_stats_t *b)
{
    assert_int_equal(a->capacity, b->capacity);
    assert_int_equal(a->free_bytes, b->free_bytes);
    assert_int_equal(a->free_blocks, b->free_blocks);
    assert_int_equal(a->used_blocks, b->used_blocks);
    assert_int_equal(a->used_granted, b->used_granted);
    assert_int_equal(a->used_requested, b->used_requested);
    assert_int_equal(a->largest_free, b->largest_free);
    assert_int_equal(a->smallest_free, b->smallest_free);
}

/* Everything freed: check() passes, and the stats' shape and the walk are back to init's (w0, released here). */
static hk_stats_t assert_back_to_start(hk_buddy_t *h, const hk_stats_t *init, walk_log_t *w0)
{
    hk_stats_t s = stats_of(h);
    walk_log_t w = walk_of(h);
    assert_int_equal(hk_buddy_check(h), 0);
    assert_same_shape(&s, init);
    assert_same_walk(w0, &w);
    walk_release(w0);
    walk_release(&w);
    return s;
}

#if HK_HARDENING >= 1
/* Stats equal except for the misuse counter, which moved by `errors`. */
static void assert_stats_unchanged(const hk_stats_t *before, hk_buddy_t *h, size_t errors)
{
    hk_stats_t now = stats_of(h);
    assert_int_equal(now.error_count, before->error_count + errors);
    assert_stats_equal_but(&now, before, error_count);
}
#endif

static unsigned char *first_block(hk_buddy_t *h)
{
    walk_log_t w = walk_of(h);
    unsigned char *p = (unsigned char *)(uintptr_t)w.b[0].start;
    walk_release(&w);
    return p;
}

/* Control byte of the atom holding p: the control bytes end right at the block area (see buddy.c). */
static unsigned char *ctrl_byte(hk_buddy_t *h, size_t min_block, const void *p)
{
    unsigned char *base = first_block(h);
    size_t atoms = stats_of(h).capacity / min_block;
    return base - atoms + ((size_t)((const unsigned char *)p - base) / min_block);
}

/* A heap whose block area is exactly `atoms` atoms (smallest arena that yields them). */
static hk_buddy_t *heap_with_atoms(size_t atoms, const hk_buddy_config_t *cfg)
{
    size_t mb = cfg->min_block ? cfg->min_block : MB;
    size_t lo = 1;
    size_t hi = STORAGE;
    hk_buddy_t *h;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        h = hk_buddy_init(arena_at(0), mid, cfg, NULL);
        if (h != NULL && stats_of(h).capacity >= atoms * mb) {
            hi = mid;
        } else {
            lo = mid + 1;
        }
    }
    h = hk_buddy_init(arena_at(0), lo, cfg, NULL);
    assert_non_null(h);
    assert_int_equal(stats_of(h).capacity, atoms * mb);
    return h;
}

/* ---- deterministic PRNG ---- */

static uint32_t rng_state;

static uint32_t rng(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 17;
    rng_state ^= rng_state << 5;
    return rng_state;
}

/* ---- tests ---- */

static void test_init_rejects_bad_input(void **state)
{
    hk_status_t st = HK_OK;
    hk_buddy_config_t c;
    (void)state;

    assert_null(hk_buddy_init(NULL, 4096, NULL, &st));
    assert_int_equal(st, HK_EINVAL);
    assert_null(hk_buddy_init(NULL, 4096, NULL, NULL));

    st = HK_OK;
    assert_null(hk_buddy_init(arena_at(0), 0, NULL, &st));
    assert_int_equal(st, HK_ETOOSMALL);
    st = HK_OK;
    assert_null(hk_buddy_init(arena_at(3), 64, NULL, &st));
    assert_int_equal(st, HK_ETOOSMALL);

    c = config(24, 0); /* not a power of two */
    st = HK_OK;
    assert_null(hk_buddy_init(arena_at(0), 4096, &c, &st));
    assert_int_equal(st, HK_EINVAL);
    c = config(4, 0); /* below HK_ALIGN */
    st = HK_OK;
    assert_null(hk_buddy_init(arena_at(0), 4096, &c, &st));
    assert_int_equal(st, HK_EINVAL);
    c = config(8, 0);
    st = HK_OK;
    if (8 < 2 * sizeof(void *) || 8 < HK_ALIGN) {
        assert_null(hk_buddy_init(arena_at(0), 4096, &c, &st));
        assert_int_equal(st, HK_EINVAL);
    } else {
        assert_non_null(hk_buddy_init(arena_at(0), 4096, &c, &st));
        assert_int_equal(st, HK_OK);
    }
    c = config(0, 0); /* 0 selects the default */
    st = HK_EINVAL;
    assert_non_null(hk_buddy_init(arena_at(0), 4096, &c, &st));
    assert_int_equal(st, HK_OK);
}

static void test_smallest_arena_holds_one_block(void **state)
{
    hk_buddy_config_t c = config(0, 0);
    hk_buddy_t *h = heap_with_atoms(1, &c);
    hk_stats_t s = stats_of(h);
    void *p;
    (void)state;

    assert_int_equal(s.capacity, MB);
    assert_int_equal(s.free_blocks, 1);
    p = hk_buddy_malloc(h, fill(MB));
    assert_non_null(p);
    assert_null(hk_buddy_malloc(h, 1));
    assert_int_equal(stats_of(h).fail_count, 0); /* direct calls count no failures */
    assert_null(hk_malloc(hk_buddy_heap(h), 1));
    assert_int_equal(stats_of(h).fail_count, 1);
    hk_buddy_free(h, p);
    assert_int_equal(hk_buddy_check(h), 0);
}

static void test_split_orders(void **state)
{
    hk_buddy_config_t c = config(0, 0);
    hk_buddy_t *h = heap_with_atoms(64, &c);
    unsigned char *base = first_block(h);
    hk_stats_t s = stats_of(h);
    unsigned char *a, *b, *d, *e, *f;
    walk_log_t w;
    size_t i;
    (void)state;

    assert_int_equal(s.free_blocks, 1);
    assert_int_equal(s.largest_free, 64 * MB);
    assert_int_equal(s.smallest_free, 64 * MB);

    a = (unsigned char *)hk_buddy_malloc(h, 1);
    assert_ptr_equal(a, base);
    s = stats_of(h);
    assert_int_equal(s.split_count, 6); /* order 6 down to order 0 */
    assert_int_equal(s.free_blocks, 6);
    assert_int_equal(s.largest_free, 32 * MB);
    assert_int_equal(s.smallest_free, MB);
    assert_int_equal(hk_buddy_usable_size(h, a), usable_of(MB, 1));
    assert_int_equal(hk_buddy_check(h), 0);

    /* One block per order, lowest address first, each twice the one before. */
    w = walk_of(h);
    assert_int_equal(w.n, 7);
    assert_true(w.b[0].used);
    assert_int_equal(w.b[0].size, MB);
    for (i = 1; i < w.n; i++) {
        assert_false(w.b[i].used);
        assert_int_equal(w.b[i].size, MB << (i - 1));
        assert_ptr_equal(w.b[i].start, base + (MB << (i - 1)));
    }
    walk_release(&w);

    b = (unsigned char *)hk_buddy_malloc(h, fill(MB)); /* exact fit: the order-0 buddy */
    assert_ptr_equal(b, base + MB);
    d = (unsigned char *)hk_buddy_malloc(h, 3 * MB); /* order 2 block exists */
    assert_ptr_equal(d, base + 4 * MB);
    assert_int_equal(hk_buddy_usable_size(h, d), usable_of(4 * MB, 3 * MB));
    assert_int_equal(stats_of(h).split_count, 6);
    e = (unsigned char *)hk_buddy_malloc(h, MB + 1); /* order 1 exists too */
    assert_ptr_equal(e, base + 2 * MB);
    f = (unsigned char *)hk_buddy_malloc(h, fill(2 * MB)); /* order 1 again: split the order-3 block */
    assert_ptr_equal(f, base + 8 * MB);
    s = stats_of(h);
    assert_int_equal(s.split_count, 8);
    assert_int_equal(s.smallest_free, 2 * MB);
    assert_int_equal(s.used_granted, usable_of(MB, 1) + usable_of(MB, fill(MB)) + usable_of(2 * MB, MB + 1) +
                                         usable_of(4 * MB, 3 * MB) + usable_of(2 * MB, fill(2 * MB)));
    assert_int_equal(s.used_requested, s.used_granted);
    assert_int_equal(s.free_bytes, 64 * MB - (MB + MB + 2 * MB + 4 * MB + 2 * MB));
    assert_int_equal(hk_buddy_check(h), 0);

    hk_buddy_free(h, a);
    hk_buddy_free(h, b); /* merges with a: one coalesce */
    assert_int_equal(stats_of(h).coalesce_count, 1);
    hk_buddy_free(h, d);
    hk_buddy_free(h, e);
    hk_buddy_free(h, f);
    s = stats_of(h);
    assert_int_equal(s.free_blocks, 1);
    assert_int_equal(s.largest_free, 64 * MB);
    assert_int_equal(s.coalesce_count, s.split_count);
    assert_int_equal(hk_buddy_check(h), 0);
}

/*
 * The buddy-freertos seed's fragmentation and merge phases: fill the heap
 * with random sizes, free everything in random order, and the heap must be
 * back to its top-level blocks.
 */
static void fragment_and_merge(size_t misalign, size_t size, size_t min_block, int lazy, uint32_t seed)
{
    hk_buddy_config_t c = config(min_block, lazy);
    hk_buddy_t *h = hk_buddy_init(arena_at(misalign), size, &c, NULL);
    hk_stats_t init;
    hk_stats_t s;
    walk_log_t w0;
    void *live[4096];
    size_t n = 0;
    size_t i;
    size_t fails = 0;

    assert_non_null(h);
    init = stats_of(h);
    w0 = walk_of(h);
    assert_int_equal(w0.n, init.free_blocks);
    rng_state = seed;
    while (n < 4096 && fails < 64) {
        size_t req = 1 + rng() % 3000;
        void *p = hk_buddy_malloc(h, req);
        if (p == NULL) {
            fails++;
            continue;
        }
        assert_true(hk_buddy_usable_size(h, p) >= req);
        memset(p, (int)(n & 0xFF), req);
        live[n++] = p;
    }
    s = stats_of(h);
    assert_true(s.used_blocks == n);
    assert_true(s.free_bytes < init.free_bytes / 4);
    assert_int_equal(hk_buddy_check(h), 0);

    for (i = n; i > 1; i--) {
        size_t j = rng() % i;
        void *t = live[j];
        live[j] = live[i - 1];
        live[i - 1] = t;
    }
    for (i = 0; i < n; i++) {
        hk_buddy_free(h, live[i]);
    }
    s = assert_back_to_start(h, &init, &w0);
    assert_int_equal(s.free_bytes, s.capacity);
    assert_int_equal(s.largest_free, init.largest_free);
    assert_true(s.coalesce_count > 0);
}

static void test_merge_back_to_top_level(void **state)
{
    (void)state;
    fragment_and_merge(0, 65536 + 4096, 0, 0, 1u);
    fragment_and_merge(5, 100003, 0, 0, 2u);
    fragment_and_merge(40, 77777, 32, 0, 3u);
    fragment_and_merge(0, 65536 + 4096, 0, 1, 4u);
    fragment_and_merge(13, 100003, 0, 1, 5u);
    fragment_and_merge(64, 50000, 64, 1, 6u);
}

static size_t popcount(size_t x)
{
    size_t n = 0;
    for (; x != 0; x &= x - 1) {
        n++;
    }
    return n;
}

/* Atoms in the largest block allowed by HK_BUDDY_ORDERS. */
#define TOP_ATOMS ((size_t)1 << (HK_BUDDY_ORDERS - 1))

/* Top-level blocks for an area of `atoms`: the binary decomposition, capped at TOP_ATOMS. */
static size_t top_level_blocks(size_t atoms)
{
    return atoms / TOP_ATOMS + popcount(atoms % TOP_ATOMS);
}

static size_t largest_top_level(size_t atoms)
{
    size_t p = 1;
    while (p <= atoms / 2 && p < TOP_ATOMS) {
        p *= 2;
    }
    return p;
}

static void test_odd_arenas_fully_used(void **state)
{
    static const size_t sizes[] = {1500, 4097, 10000, 65535, 100003};
    static const size_t mins[] = {0, 32, 128};
    size_t si, mi, off;
    (void)state;

    for (mi = 0; mi < sizeof(mins) / sizeof(mins[0]); mi++) {
        for (si = 0; si < sizeof(sizes) / sizeof(sizes[0]); si++) {
            for (off = 0; off < 20; off += 3) {
                hk_buddy_config_t c = config(mins[mi], 0);
                size_t mb = mins[mi] ? mins[mi] : MB;
                hk_buddy_t *h = hk_buddy_init(arena_at(off), sizes[si], &c, NULL);
                hk_stats_t s;
                size_t atoms, lost, k;
                unsigned char *base;
                void **blocks;

                assert_non_null(h);
                s = stats_of(h);
                atoms = s.capacity / mb;
                assert_int_equal(s.capacity % mb, 0);
                /* Lost to the control struct, alignment and rounding: bounded, not a fraction of the arena. */
                lost = sizes[si] - s.capacity - atoms;
                assert_true(lost < 2048 + HK_BUDDY_BASE_ALIGN + 2 * mb);
                base = first_block(h);
                assert_int_equal((uintptr_t)base % (mb > HK_BUDDY_BASE_ALIGN ? mb : HK_BUDDY_BASE_ALIGN), 0);
                /* Top-level blocks: the binary decomposition of the atom count. */
                assert_int_equal(s.free_blocks, top_level_blocks(atoms));
                assert_int_equal(s.largest_free, largest_top_level(atoms) * mb);
                assert_int_equal(hk_buddy_check(h), 0);

                /* Every atom can be handed out. */
                blocks = (void **)malloc(atoms * sizeof(void *));
                assert_non_null(blocks);
                for (k = 0; k < atoms; k++) {
                    blocks[k] = hk_buddy_malloc(h, fill(mb));
                    assert_non_null(blocks[k]);
                    assert_int_equal((uintptr_t)blocks[k] % HK_ALIGN, 0);
                }
                assert_null(hk_buddy_malloc(h, 1));
                assert_int_equal(stats_of(h).free_bytes, 0);
                assert_int_equal(hk_buddy_check(h), 0);
                for (k = 0; k < atoms; k++) {
                    hk_buddy_free(h, blocks[k]);
                }
                free(blocks);
                assert_int_equal(stats_of(h).free_blocks, top_level_blocks(atoms));
                assert_int_equal(hk_buddy_check(h), 0);
            }
        }
    }
}

static void realloc_in_place(int lazy)
{
    hk_buddy_config_t c = config(0, lazy);
    hk_buddy_t *h = heap_with_atoms(64, &c);
    hk_stats_t s0 = stats_of(h);
    hk_stats_t s;
    unsigned char *p, *q, *a, *b;

    p = (unsigned char *)hk_buddy_malloc(h, fill(MB));
    fill_pattern(p, fill(MB), 1);
    s = stats_of(h);

    /* Grow: p is the lower buddy and atoms 1..3 are free, so it absorbs them. */
    q = (unsigned char *)hk_realloc(hk_buddy_heap(h), p, 3 * MB);
    assert_ptr_equal(q, p);
    assert_int_equal(hk_buddy_usable_size(h, q), usable_of(4 * MB, 3 * MB));
    assert_int_equal(stats_of(h).coalesce_count, s.coalesce_count + 2);
    assert_int_equal(stats_of(h).free_blocks, s.free_blocks - 2);
    assert_int_equal(stats_of(h).used_granted, usable_of(4 * MB, 3 * MB));
    assert_int_equal(stats_of(h).realloc_count, 1);
    assert_pattern(q, fill(MB), 1);
    assert_int_equal(hk_buddy_check(h), 0);
    fill_pattern(q, 3 * MB, 2);

    q = (unsigned char *)hk_realloc(hk_buddy_heap(h), q, fill(16 * MB));
    assert_ptr_equal(q, p);
    assert_pattern(q, 3 * MB, 2);
    assert_int_equal(hk_buddy_check(h), 0);

    /* Same order: nothing moves. */
    assert_ptr_equal(hk_realloc(hk_buddy_heap(h), q, 9 * MB), p);
    assert_int_equal(hk_buddy_usable_size(h, q), usable_of(16 * MB, 9 * MB));

    /* Shrink: the upper halves go back to the free lists. */
    s = stats_of(h);
    q = (unsigned char *)hk_realloc(hk_buddy_heap(h), q, fill(MB));
    assert_ptr_equal(q, p);
    assert_int_equal(hk_buddy_usable_size(h, q), usable_of(MB, fill(MB)));
    assert_int_equal(stats_of(h).split_count, s.split_count + 4);
    assert_int_equal(stats_of(h).free_blocks, s.free_blocks + 4);
    assert_int_equal(stats_of(h).free_bytes, 63 * MB);
    assert_pattern(q, fill(MB), 2);
    assert_int_equal(hk_buddy_check(h), 0);

    /* The buddy is in use: growing must move, keeping the content. */
    b = (unsigned char *)hk_buddy_malloc(h, fill(MB));
    assert_ptr_equal(b, p + MB);
    fill_pattern(b, fill(MB), 3);
    a = (unsigned char *)hk_realloc(hk_buddy_heap(h), q, fill(2 * MB));
    assert_non_null(a);
    assert_ptr_not_equal(a, p);
    assert_pattern(a, fill(MB), 2);
    assert_int_equal(hk_buddy_usable_size(h, a), usable_of(2 * MB, fill(2 * MB)));
    assert_int_equal(stats_of(h).used_blocks, 2);
    assert_int_equal(hk_buddy_check(h), 0);

    /* b is the upper buddy of its pair: it cannot grow in place either. */
    q = (unsigned char *)hk_realloc(hk_buddy_heap(h), b, fill(2 * MB));
    assert_non_null(q);
    assert_ptr_not_equal(q, b);
    assert_pattern(q, fill(MB), 3);
    assert_int_equal(hk_buddy_check(h), 0);

    /* Too big: NULL, the block and its content stay. */
    s = stats_of(h);
    assert_null(hk_realloc(hk_buddy_heap(h), q, 64 * MB));
    assert_int_equal(stats_of(h).fail_count, s.fail_count + 1);
    assert_int_equal(hk_buddy_usable_size(h, q), usable_of(2 * MB, fill(2 * MB)));
    assert_pattern(q, fill(MB), 3);

    /* realloc(p, 0) frees, realloc(NULL, n) allocates. */
    assert_null(hk_realloc(hk_buddy_heap(h), q, 0));
    assert_int_equal(stats_of(h).used_blocks, 1);
    q = (unsigned char *)hk_realloc(hk_buddy_heap(h), NULL, 3);
    assert_non_null(q);
    assert_int_equal(hk_buddy_usable_size(h, q), usable_of(MB, 3));
    hk_buddy_free(h, q);
    hk_buddy_free(h, a);
    s = stats_of(h);
    assert_same_shape(&s, &s0);
    assert_int_equal(hk_buddy_check(h), 0);
}

static void test_realloc_in_place_eager(void **state)
{
    (void)state;
    realloc_in_place(0);
}

static void test_realloc_in_place_lazy(void **state)
{
    (void)state;
    realloc_in_place(1);
}

/* The largest power of two dividing the address (capped). */
static uintptr_t address_alignment(const void *p)
{
    uintptr_t a = (uintptr_t)p;
    uintptr_t bit = a & (~a + 1u);
    return (bit == 0 || bit > ((uintptr_t)1 << 20)) ? ((uintptr_t)1 << 20) : bit;
}

static void test_aligned_alloc(void **state)
{
    size_t off;
    int saw_limited = 0;
    (void)state;

    /* Shifting the arena by 64 bytes changes how aligned the block area is. */
    for (off = 0; off < 4096; off += 64) {
        hk_buddy_t *h = hk_buddy_init(arena_at(off), 60000, NULL, NULL);
        uintptr_t base_align = address_alignment(first_block(h));
        hk_stats_t s;
        size_t a;
        assert_true(base_align >= HK_BUDDY_BASE_ALIGN);

        for (a = 1; a <= base_align && a <= 8192; a *= 2) {
            void *p = hk_buddy_aligned_alloc(h, a, 10);
            assert_non_null(p);
            assert_int_equal((uintptr_t)p % a, 0);
            assert_true(hk_buddy_usable_size(h, p) >= 10);
            hk_buddy_free(h, p);
        }
        assert_int_equal(stats_of(h).fail_count, 0);
        if (base_align <= 8192) {
            s = stats_of(h);
            assert_null(hk_buddy_aligned_alloc(h, 2 * base_align, 10));
            assert_int_equal(stats_of(h).fail_count, s.fail_count); /* direct calls count no failures */
            assert_null(hk_aligned_alloc(hk_buddy_heap(h), 2 * base_align, 10));
            assert_int_equal(stats_of(h).fail_count, s.fail_count + 1);
            assert_int_equal(stats_of(h).used_blocks, 0);
            saw_limited = 1;
        }
        s = stats_of(h);
        assert_null(hk_buddy_aligned_alloc(h, 48, 10)); /* not a power of two */
        assert_null(hk_buddy_aligned_alloc(h, 64, SIZE_MAX));
        assert_null(hk_aligned_alloc(hk_buddy_heap(h), 48, 10));
        assert_null(hk_aligned_alloc(hk_buddy_heap(h), 64, SIZE_MAX));
        assert_int_equal(stats_of(h).fail_count, s.fail_count + 2);
        assert_int_equal(hk_buddy_check(h), 0);
    }
    assert_true(saw_limited);
}

/* Lazy mode step by step on a 64-atom heap, against the DELAY-2 rules. */
static void test_lazy_delay2_rules(void **state)
{
    hk_buddy_config_t c = config(0, 1);
    hk_buddy_t *h = heap_with_atoms(64, &c);
    hk_stats_t s0 = stats_of(h);
    hk_stats_t s;
    walk_log_t w0 = walk_of(h), w;
    unsigned char *p[4];
    unsigned char *r;
    int i;
    (void)state;

    for (i = 0; i < 4; i++) {
        p[i] = (unsigned char *)hk_buddy_malloc(h, fill(MB)); /* atoms 0..3, A = 4 */
    }
    assert_ptr_equal(p[3], p[0] + 3 * MB);
    s = stats_of(h);

    /* D = 4, then 2: both stay locally free, so the two buddies do not merge. */
    hk_buddy_free(h, p[1]);
    hk_buddy_free(h, p[0]);
    assert_int_equal(stats_of(h).coalesce_count, s.coalesce_count);
    assert_int_equal(stats_of(h).free_blocks, s.free_blocks + 2);
    assert_int_equal(stats_of(h).free_bytes, s.free_bytes + 2 * MB);
    assert_int_equal(stats_of(h).smallest_free, MB);
    assert_int_equal(hk_buddy_check(h), 0);
    w = walk_of(h);
    assert_false(w.b[0].used);
    assert_false(w.b[1].used);
    assert_int_equal(w.b[0].size, MB);
    assert_int_equal(w.b[1].size, MB);
    walk_release(&w);

    /* A locally free block of the exact order is reused first, without splitting. */
    r = (unsigned char *)hk_buddy_malloc(h, fill(MB));
    assert_ptr_equal(r, p[0]);
    assert_int_equal(stats_of(h).split_count, s.split_count);
    hk_buddy_free(h, r); /* D = 2 again: local */
    assert_int_equal(stats_of(h).coalesce_count, s.coalesce_count);

    /* D = 0: freed globally, and one local block (p0) goes global too; no buddy pair is free yet. */
    hk_buddy_free(h, p[2]);
    assert_int_equal(stats_of(h).coalesce_count, s.coalesce_count);
    assert_int_equal(hk_buddy_check(h), 0);

    /* D = 0 again: p3 merges with p2, then p1 goes global and everything merges up to order 6. */
    hk_buddy_free(h, p[3]);
    s = assert_back_to_start(h, &s0, &w0);
    assert_int_equal(s.coalesce_count, s.split_count);
}

static int walk_has_block_of(hk_buddy_t *h, size_t size)
{
    walk_log_t w = walk_of(h);
    size_t i;
    int found = 0;
    for (i = 0; i < w.n; i++) {
        if (!w.b[i].used && w.b[i].size >= size) {
            found = 1;
        }
    }
    walk_release(&w);
    return found;
}

/*
 * Lazy mode bounds the merging one call does. An allocation that finds no
 * block merges one parked block (HK_BUDDY_LAZY_FLUSH) and may fail where
 * merging all of them at once would have served it: that is O(parked
 * blocks) work in one call, which is what is bounded away. Repeated requests
 * get there, each call merging at most one chain (top merges); a free merges
 * at most two chains (DELAY-2). Once every block is freed the heap is whole.
 */
static void test_lazy_merges_are_bounded(void **state)
{
    enum { TOP = 6 }; /* 64 atoms */
    hk_buddy_config_t c = config(0, 1);
    hk_buddy_t *h = heap_with_atoms(64, &c);
    unsigned char *p[64];
    unsigned char *big = NULL;
    hk_stats_t s;
    size_t calls = 0;
    int i;
    (void)state;

    for (i = 0; i < 64; i++) {
        p[i] = (unsigned char *)hk_buddy_malloc(h, fill(MB));
        assert_non_null(p[i]);
    }
    /* Free the upper half with plenty of slack: all of it stays locally free. */
    for (i = 32; i < 64; i++) {
        hk_buddy_free(h, p[i]);
        assert_int_equal(hk_buddy_check(h), 0);
    }
    s = stats_of(h);
    assert_int_equal(s.coalesce_count, 0);
    assert_int_equal(s.free_blocks, 32);
    assert_int_equal(s.largest_free, MB);
    assert_false(walk_has_block_of(h, 2 * MB));

    while (big == NULL) {
        size_t before = stats_of(h).coalesce_count;
        big = (unsigned char *)hk_malloc(hk_buddy_heap(h), fill(32 * MB)); /* uniform: failures counted */
        assert_true(stats_of(h).coalesce_count - before <= TOP);
        assert_int_equal(hk_buddy_check(h), 0);
        assert_true(++calls <= 32);
    }
    assert_true(calls > 1); /* the first request did not merge all 32 parked blocks */
    assert_ptr_equal(big, p[32]);
    s = stats_of(h);
    assert_int_equal(s.coalesce_count, 31);
    assert_int_equal(s.fail_count, calls - 1);
    assert_int_equal(s.free_blocks, 0);

    hk_buddy_free(h, big);
    for (i = 0; i < 32; i++) {
        size_t before = stats_of(h).coalesce_count;
        hk_buddy_free(h, p[i]);
        assert_true(stats_of(h).coalesce_count - before <= 2 * TOP);
        assert_int_equal(hk_buddy_check(h), 0);
    }
    s = stats_of(h);
    assert_int_equal(s.free_blocks, 1);
    assert_int_equal(s.largest_free, 64 * MB);
}

/* Lazy mode, random sizes and order, many blocks parked at times: freeing everything leaves the heap whole. */
static void test_lazy_fully_coalesced_when_empty(void **state)
{
    enum { N = 600 };
    static void *live[N];
    hk_buddy_config_t c = config(0, 1);
    hk_buddy_t *h = hk_buddy_init(arena_at(0), 64 * 1024, &c, NULL);
    hk_stats_t init = stats_of(h);
    walk_log_t w0 = walk_of(h);
    size_t round;
    (void)state;
    rng_state = 2024u;
    for (round = 0; round < 20; round++) {
        size_t n = 0;
        size_t i;
        size_t parked_max = 0;
        while (n < N) {
            live[n] = hk_buddy_malloc(h, 1 + rng() % (rng() % 4 == 0 ? 2000u : 100u));
            if (live[n] == NULL) {
                break;
            }
            n++;
        }
        /* Free in random order, every third one reallocated once in between. */
        for (i = n; i > 1; i--) {
            size_t j = rng() % i;
            void *t = live[j];
            live[j] = live[i - 1];
            live[i - 1] = t;
        }
        for (i = 0; i < n; i++) {
            hk_stats_t s;
            hk_buddy_free(h, live[i]);
            if (i % 3 == 0 && i + 1 < n) {
                void *q = hk_buddy_malloc(h, 1 + rng() % 64u);
                if (q != NULL) {
                    hk_buddy_free(h, q);
                }
            }
            s = stats_of(h);
            /* Free blocks the lists hold beyond what full merging would leave: parked ones, among others. */
            parked_max = s.free_blocks > parked_max ? s.free_blocks : parked_max;
        }
        assert_true(parked_max > 1);
        {
            hk_stats_t s = stats_of(h);
            walk_log_t w = walk_of(h);
            assert_int_equal(hk_buddy_check(h), 0);
            assert_same_shape(&s, &init);
            assert_same_walk(&w0, &w);
            walk_release(&w);
        }
    }
    walk_release(&w0);
}

#if HK_HARDENING >= 1 /* level 0 checks nothing: misuse is undefined behaviour there */
static void misuse(int lazy)
{
    hk_buddy_config_t c = config(0, lazy);
    hk_buddy_t *h = heap_with_atoms(64, &c);
    unsigned char *base = first_block(h);
    error_log_t log;
    hk_stats_t s;
    unsigned char *p, *q, *r;
    unsigned char *cb;
    unsigned char saved;
    int local_var = 0;
    int n = 0;
    size_t i;
    static const unsigned char bad_p[] = {0x80u | 0x42u, 0x43u, 0x41u, 0x1Fu | 0x40u, 0x02u};

    record_errors(hk_buddy_heap(h), &log);
    p = (unsigned char *)hk_buddy_malloc(h, fill(4 * MB)); /* atoms 0..3, order 2 */
    q = (unsigned char *)hk_buddy_malloc(h, fill(MB));     /* atom 4 */
    r = (unsigned char *)hk_buddy_malloc(h, fill(MB));     /* atom 5 */
    assert_ptr_equal(p, base);
    assert_ptr_equal(q, base + 4 * MB);
    assert_ptr_equal(r, base + 5 * MB);
    s = stats_of(h);

    /* Foreign: outside the block area (including the control data at the arena start). */
    hk_buddy_free(h, &local_var);
    expect_error(&log, ++n, HK_ERR_FOREIGN_PTR, &local_var);
    hk_buddy_free(h, arena_at(0));
    expect_error(&log, ++n, HK_ERR_FOREIGN_PTR, arena_at(0));
    hk_buddy_free(h, base - 1);
    expect_error(&log, ++n, HK_ERR_FOREIGN_PTR, base - 1);
    hk_buddy_free(h, base + 64 * MB);
    expect_error(&log, ++n, HK_ERR_FOREIGN_PTR, base + 64 * MB);
    assert_null(hk_realloc(hk_buddy_heap(h), &local_var, 10));
    expect_error(&log, ++n, HK_ERR_FOREIGN_PTR, &local_var);
    assert_int_equal(hk_buddy_usable_size(h, &local_var), 0);
    expect_error(&log, ++n, HK_ERR_FOREIGN_PTR, &local_var);
    assert_false(hk_buddy_owns(h, &local_var));
    assert_true(hk_buddy_owns(h, p + 1));

    /* Interior: off an atom boundary, or an atom inside a block. */
    hk_buddy_free(h, p + 1);
    expect_error(&log, ++n, HK_ERR_INTERIOR_PTR, p + 1);
    hk_buddy_free(h, p + HK_ALIGN);
    expect_error(&log, ++n, HK_ERR_INTERIOR_PTR, p + HK_ALIGN);
    hk_buddy_free(h, p + MB);
    expect_error(&log, ++n, HK_ERR_INTERIOR_PTR, p + MB);
    hk_buddy_free(h, base + 40 * MB); /* inside the free order-5 block */
    expect_error(&log, ++n, HK_ERR_INTERIOR_PTR, base + 40 * MB);
    assert_null(hk_realloc(hk_buddy_heap(h), p + 2 * MB, 1));
    expect_error(&log, ++n, HK_ERR_INTERIOR_PTR, p + 2 * MB);
    assert_int_equal(hk_buddy_check(h), 0);
    assert_stats_unchanged(&s, h, (size_t)n);

    /* Double free, and freeing a free block never handed out. */
    hk_buddy_free(h, q);
    s = stats_of(h);
    hk_buddy_free(h, q);
    expect_error(&log, ++n, HK_ERR_DOUBLE_FREE, q);
    assert_null(hk_realloc(hk_buddy_heap(h), q, 100));
    expect_error(&log, ++n, HK_ERR_DOUBLE_FREE, q);
    hk_buddy_free(h, base + 32 * MB);
    expect_error(&log, ++n, HK_ERR_DOUBLE_FREE, base + 32 * MB);
    assert_int_equal(hk_buddy_check(h), 0);
    assert_stats_unchanged(&s, h, 3);

    /* Corrupt head bytes of p (order 2, used): each is caught, nothing changes. */
    cb = ctrl_byte(h, MB, p);
    saved = *cb;
    assert_int_equal(saved, 0x42u);
    s = stats_of(h);
    for (i = 0; i < sizeof(bad_p); i++) {
        *cb = bad_p[i];
        assert_int_not_equal(hk_buddy_check(h), 0);
        hk_buddy_free(h, p);
        expect_error(&log, ++n, HK_ERR_CORRUPT, p);
        assert_int_equal(hk_buddy_usable_size(h, p), 0);
        expect_error(&log, ++n, HK_ERR_CORRUPT, p);
        *cb = saved;
        assert_int_equal(hk_buddy_check(h), 0);
    }
    /* r (atom 5, order 0): an order that does not fit its index. */
    cb = ctrl_byte(h, MB, r);
    saved = *cb;
    *cb = 0x41u;
    hk_buddy_free(h, r);
    expect_error(&log, ++n, HK_ERR_CORRUPT, r);
    *cb = saved;
    assert_int_equal(hk_buddy_check(h), 0);
    assert_stats_unchanged(&s, h, 2 * sizeof(bad_p) + 1);
    assert_int_equal(stats_of(h).error_count, (size_t)n);

    /* A stray write into a free block's links is found by check(). */
    {
        unsigned char *free_block = base + 32 * MB;
        unsigned char links[2 * sizeof(void *)];
        memcpy(links, free_block, sizeof(links));
        memset(free_block, 0xA5, sizeof(links));
        assert_int_not_equal(hk_buddy_check(h), 0);
        memcpy(free_block, links, sizeof(links));
        assert_int_equal(hk_buddy_check(h), 0);
    }

    hk_buddy_free(h, p);
    hk_buddy_free(h, r);
    assert_int_equal(log.count, n);
    s = stats_of(h);
    assert_int_equal(s.used_blocks, 0);
    assert_int_equal(s.free_bytes, 64 * MB);
    assert_int_equal(hk_buddy_check(h), 0);
}

static void test_misuse_eager(void **state)
{
    (void)state;
    misuse(0);
}

static void test_misuse_lazy(void **state)
{
    hk_buddy_config_t c = config(0, 1);
    hk_buddy_t *h;
    error_log_t log;
    void *p[4];
    hk_stats_t s;
    int i;
    (void)state;

    misuse(1);
    /* A locally free block is free too: freeing it again is a double free. */
    h = heap_with_atoms(64, &c);
    record_errors(hk_buddy_heap(h), &log);
    for (i = 0; i < 4; i++) {
        p[i] = hk_buddy_malloc(h, fill(MB));
    }
    hk_buddy_free(h, p[1]); /* D = 4: stays local */
    s = stats_of(h);
    hk_buddy_free(h, p[1]);
    expect_error(&log, 1, HK_ERR_DOUBLE_FREE, p[1]);
    assert_int_equal(hk_buddy_check(h), 0);
    assert_stats_unchanged(&s, h, 1);
}

#endif

/* check() names the broken invariant; each breakage is undone afterwards. */
static void test_check_detects_broken_invariants(void **state)
{
    hk_buddy_config_t c = config(0, 0);
    hk_buddy_t *h = heap_with_atoms(64, &c);
    hk_heap_t *u = hk_buddy_heap(h);
    unsigned char *a, *b, *cb, *links;
    unsigned char saved[2 * sizeof(void *)];
    (void)state;

    a = (unsigned char *)hk_buddy_malloc(h, fill(MB));
    b = (unsigned char *)hk_buddy_malloc(h, fill(MB));
    hk_buddy_free(h, a); /* a is globally free, its buddy b is used */
    assert_int_equal(hk_buddy_check(h), 0);
    cb = ctrl_byte(h, MB, b);

    *cb = 0x20u; /* b marked globally free: two free buddies not merged */
    assert_int_equal(hk_buddy_check(h), HK_CHECK_UNMERGED);
    *cb = 0x60u; /* b marked locally free in an eager heap */
    assert_int_equal(hk_buddy_check(h), HK_CHECK_STATE);
    *cb = 0x00u; /* b's head erased */
    assert_int_equal(hk_buddy_check(h), HK_CHECK_STATE);
    *cb = 0x41u; /* b (atom 1) given order 1: not a multiple of its size */
    assert_int_equal(hk_buddy_check(h), HK_CHECK_ALIGN);
    *cb = 0x40u;
    assert_int_equal(hk_buddy_check(h), HK_CHECK_OK);
    cb = ctrl_byte(h, MB, a);
    *cb = 0x21u; /* free a given order 1: b's head lies inside it */
    assert_int_equal(hk_buddy_check(h), HK_CHECK_NEIGHBOUR);
    *cb = 0x20u;
    assert_int_equal(hk_buddy_check(h), HK_CHECK_OK);

    links = a; /* use after free: a's list links overwritten */
    memcpy(saved, links, sizeof(saved));
    memset(links, 0, sizeof(void *));
    memset(links + sizeof(void *), 0x5A, sizeof(void *));
    assert_int_equal(hk_buddy_check(h), HK_CHECK_LINK);
    memcpy(links, saved, sizeof(saved));
    assert_int_equal(hk_buddy_check(h), HK_CHECK_OK);

    /* The counters kept per call must agree with the blocks. */
    assert_check_notices(u, &u->stats.free_bytes, MB);
    assert_check_notices(u, &u->stats.used_granted, MB);
    assert_check_notices(u, &u->stats.split_count, 1);
    assert_check_notices(u, &u->stats.alloc_count, 1);
    assert_check_notices(u, &u->stats.min_ever_free, 64 * MB);
    assert_check_notices(u, &u->stats.capacity, MB);
}

#if HK_HARDENING >= 1

/* Flip n bytes at p: whatever they held, they hold something else now (a stray write). */
static void scribble(unsigned char *p, size_t n)
{
    size_t i;
    for (i = 0; i < n; i++) {
        p[i] ^= 0xFFu;
    }
}

/*
 * After a damage was reported: fill the heap with blocks of mixed sizes,
 * writing every usable byte; no two may overlap, nor touch the block taken
 * out of service (lost, may be NULL); then free them all, and check() must
 * pass: the heap stays usable and consistent.
 */
static void exercise_after_damage(hk_buddy_t *h, const unsigned char *lost)
{
    enum { N = 256 };
    static unsigned char *p[N];
    static size_t len[N];
    size_t n = 0;
    size_t fails = 0;
    size_t i, j;
    rng_state = 4242u;
    while (n < N && fails < 8) {
        size_t req = 1 + rng() % (3 * MB);
        unsigned char *q = (unsigned char *)hk_buddy_malloc(h, req);
        if (q == NULL) {
            fails++;
            continue;
        }
        len[n] = hk_buddy_usable_size(h, q);
        assert_true(len[n] >= req);
        memset(q, 0x33, len[n]);
        p[n++] = q;
    }
    assert_true(n > 4);
    for (i = 0; i < n; i++) {
        assert_true(lost == NULL || p[i] + len[i] <= lost || lost + MB <= p[i]);
        for (j = i + 1; j < n; j++) {
            assert_true(p[i] + len[i] <= p[j] || p[j] + len[j] <= p[i]);
        }
    }
    assert_int_equal(hk_buddy_check(h), HK_CHECK_OK);
    for (i = 0; i < n; i++) {
        hk_buddy_free(h, p[i]);
    }
    assert_int_equal(hk_buddy_check(h), HK_CHECK_OK);
    assert_int_equal(stats_of(h).used_blocks, 0);
}

/*
 * An overflow of 1..16 bytes past usable_size into the next block, a free
 * one: at level 1 its list links are hit, and freeing the overflowing block
 * (whose buddy it is) must not merge through them; at level 2 the canary
 * after the request is hit first and free reports it. Either way the error
 * hook fires, the heap stays usable and nothing overlaps.
 */
static void overflow_into_free_neighbour(int lazy)
{
    size_t n;
    for (n = 1; n <= 16; n++) {
        hk_buddy_config_t c = config(0, lazy);
        hk_buddy_t *h = heap_with_atoms(64, &c);
        error_log_t log;
        /* Level 2: a request whose canary is 16 bytes long, so the size word after it stays intact. */
        size_t req = HK_HARDENING >= 2 ? 2 * MB - sizeof(size_t) - 16 : MB;
        unsigned char *a;
        unsigned char *next;
        record_errors(hk_buddy_heap(h), &log);
        a = (unsigned char *)hk_buddy_malloc(h, req);
        next = a + (HK_HARDENING >= 2 ? 2 * MB : MB); /* a's buddy: free */
        assert_ptr_equal(a, first_block(h));
        assert_int_equal(hk_buddy_usable_size(h, a), usable_of(next - a, req));
        assert_int_equal(hk_buddy_check(h), HK_CHECK_OK);
        scribble(a + hk_buddy_usable_size(h, a), n);
        /* check() sees it before any call does. */
        if (HK_HARDENING >= 2) {
            assert_int_equal(hk_buddy_check(h), HK_CHECK_CANARY);
        } else {
            assert_int_not_equal(hk_buddy_check(h), HK_CHECK_OK);
        }
        hk_buddy_free(h, a);
        assert_true(atomic_load(&log.count) >= 1);
        assert_int_equal(log.last, HK_ERR_CORRUPT);
        exercise_after_damage(h, HK_HARDENING < 2 ? next : NULL);
    }
}

static void test_overflow_into_free_neighbour(void **state)
{
    (void)state;
    overflow_into_free_neighbour(0);
    overflow_into_free_neighbour(1);
}

/*
 * The same overflow into a used neighbour. A buddy keeps no in-band header,
 * so at level 1 nothing of the allocator's is hit (the neighbour's payload
 * is the caller's problem) and nothing is reported; the heap stays
 * consistent. At level 2 the canary after the request catches it on free.
 */
static void test_overflow_into_used_neighbour(void **state)
{
    size_t n;
    (void)state;
    for (n = 1; n <= 16; n++) {
        hk_buddy_config_t c = config(0, 0);
        hk_buddy_t *h = heap_with_atoms(64, &c);
        error_log_t log;
        size_t req = HK_HARDENING >= 2 ? 2 * MB - sizeof(size_t) - 16 : MB;
        unsigned char *a;
        unsigned char *b;
        record_errors(hk_buddy_heap(h), &log);
        a = (unsigned char *)hk_buddy_malloc(h, req);
        b = (unsigned char *)hk_buddy_malloc(h, req);
        assert_ptr_equal(b, a + (HK_HARDENING >= 2 ? 2 * MB : MB));
        scribble(a + hk_buddy_usable_size(h, a), n);
        hk_buddy_free(h, a);
        if (HK_HARDENING >= 2) {
            expect_error(&log, 1, HK_ERR_CORRUPT, a);
        } else {
            assert_int_equal(atomic_load(&log.count), 0);
        }
        assert_int_equal(hk_buddy_check(h), HK_CHECK_OK);
        hk_buddy_free(h, b);
        exercise_after_damage(h, NULL);
    }
}

/*
 * A write of 1..16 bytes at the start of a freed block (use after free),
 * then a malloc of its size: the block is first on its list, its links are
 * what the write hit, and malloc must not hand it out nor follow them. The
 * hook fires, the block is taken out of service, another block is returned.
 */
static void write_after_free(int lazy)
{
    size_t n;
    for (n = 1; n <= 16; n++) {
        hk_buddy_config_t c = config(0, lazy);
        hk_buddy_t *h = heap_with_atoms(64, &c);
        error_log_t log;
        unsigned char *a;
        unsigned char *b;
        unsigned char *q;
        hk_stats_t s;
        record_errors(hk_buddy_heap(h), &log);
        a = (unsigned char *)hk_buddy_malloc(h, fill(MB));
        b = (unsigned char *)hk_buddy_malloc(h, fill(MB)); /* a's buddy stays used: a cannot merge */
        assert_ptr_equal(b, a + MB);
        hk_buddy_free(h, a);
        scribble(a, n);
        assert_int_not_equal(hk_buddy_check(h), HK_CHECK_OK);
        q = (unsigned char *)hk_buddy_malloc(h, fill(MB));
        assert_non_null(q);
        assert_ptr_not_equal(q, a);
        expect_error(&log, 1, HK_ERR_CORRUPT, a);
        s = stats_of(h);
        assert_int_equal(s.used_blocks, 2);
        assert_int_equal(s.free_bytes + 3 * MB, s.capacity); /* a is no longer free: lost */
        assert_int_equal(hk_buddy_check(h), HK_CHECK_OK);
        hk_buddy_free(h, a); /* a lost block is no block to free */
        assert_int_equal(atomic_load(&log.count), 2);
        assert_int_equal(log.last, HK_ERR_CORRUPT);
        hk_buddy_free(h, q);
        hk_buddy_free(h, b);
        exercise_after_damage(h, a);
    }
}

static void test_write_after_free_then_malloc(void **state)
{
    (void)state;
    write_after_free(0);
    write_after_free(1);
}

/*
 * A free block's links damaged in the middle of its list: freeing the block
 * whose buddy it is must not unlink it through them (merge path), nor may a
 * later push write through a damaged first node.
 */
static void test_damaged_links_in_list(void **state)
{
    hk_buddy_config_t c = config(0, 0);
    hk_buddy_t *h = heap_with_atoms(64, &c);
    error_log_t log;
    unsigned char *p[8];
    unsigned i;
    (void)state;
    record_errors(hk_buddy_heap(h), &log);
    for (i = 0; i < 8; i++) {
        p[i] = (unsigned char *)hk_buddy_malloc(h, fill(MB)); /* atoms 0..7 */
    }
    hk_buddy_free(h, p[1]);
    hk_buddy_free(h, p[3]);
    hk_buddy_free(h, p[5]); /* list 0: p5, p3, p1 */
    scribble(p[3] + sizeof(void *), sizeof(void *)); /* p3's back link, in the middle of the list */
    assert_int_equal(hk_buddy_check(h), HK_CHECK_LINK);
    hk_buddy_free(h, p[2]); /* p3 is its buddy */
    expect_error(&log, 1, HK_ERR_CORRUPT, p[3]);
    assert_int_equal(hk_buddy_check(h), HK_CHECK_OK);
    scribble(p[2] + sizeof(void *), 1); /* p2 now first on list 0: its back link */
    hk_buddy_free(h, p[7]); /* pushes onto list 0 through p2 */
    expect_error(&log, 2, HK_ERR_CORRUPT, p[2]);
    assert_int_equal(hk_buddy_check(h), HK_CHECK_OK);
    hk_buddy_free(h, p[0]);
    hk_buddy_free(h, p[4]);
    hk_buddy_free(h, p[6]);
    assert_int_equal(hk_buddy_check(h), HK_CHECK_OK);
    /* p2 and p3 are out of service for good; everything else merged back. */
    assert_int_equal(stats_of(h).used_blocks, 0);
    assert_int_equal(stats_of(h).free_bytes, stats_of(h).capacity - 2 * MB);
    assert_int_equal(atomic_load(&log.count), 2);
    exercise_after_damage(h, p[2]);
}

#if HK_HARDENING >= 2
/*
 * Level 2: a write into a freed block beyond its links (use after free) is
 * found in the poison when the block is handed out again; it is reported and
 * taken out of service, and another block is returned. check() names it
 * before that.
 */
static void test_poison_checked_when_handed_out(void **state)
{
    size_t off;
    (void)state;
    for (off = 2 * sizeof(void *); off < 2 * MB; off += 5) {
        hk_buddy_config_t c = config(0, (int)(off & 1u));
        hk_buddy_t *h = heap_with_atoms(64, &c);
        error_log_t log;
        unsigned char *a, *b, *q;
        record_errors(hk_buddy_heap(h), &log);
        a = (unsigned char *)hk_buddy_malloc(h, fill(2 * MB));
        b = (unsigned char *)hk_buddy_malloc(h, fill(2 * MB)); /* keeps a from merging */
        assert_ptr_equal(b, a + 2 * MB);
        hk_buddy_free(h, a);
        assert_int_equal(hk_buddy_check(h), HK_CHECK_OK);
        a[off] ^= 0x01u;
        assert_int_equal(hk_buddy_check(h), HK_CHECK_POISON);
        q = (unsigned char *)hk_buddy_malloc(h, fill(2 * MB));
        assert_non_null(q);
        assert_ptr_not_equal(q, a);
        expect_error(&log, 1, HK_ERR_CORRUPT, a);
        assert_int_equal(hk_buddy_check(h), HK_CHECK_OK);
        hk_buddy_free(h, q);
        hk_buddy_free(h, b);
        exercise_after_damage(h, a);
    }
}

/*
 * Level 2: the canary right after the requested size is checked on free and
 * on realloc (reported, the call goes on), and by check(); usable_size is the
 * requested size, so writing all of it never trips the canary.
 */
static void test_canary_checked_on_free_and_realloc(void **state)
{
    hk_buddy_config_t c = config(0, 0);
    hk_buddy_t *h = heap_with_atoms(64, &c);
    error_log_t log;
    unsigned char *a, *q;
    size_t n;
    (void)state;
    record_errors(hk_buddy_heap(h), &log);
    for (n = 1; n <= 3 * MB; n++) {
        a = (unsigned char *)hk_buddy_malloc(h, n);
        assert_int_equal(hk_buddy_usable_size(h, a), n);
        memset(a, 0x5A, n);
        assert_int_equal(hk_buddy_check(h), HK_CHECK_OK);
        hk_buddy_free(h, a);
    }
    assert_int_equal(atomic_load(&log.count), 0);
    a = (unsigned char *)hk_buddy_malloc(h, 20);
    a[20] ^= 0xFFu;
    assert_int_equal(hk_buddy_check(h), HK_CHECK_CANARY);
    q = (unsigned char *)hk_realloc(hk_buddy_heap(h), a, 24);
    expect_error(&log, 1, HK_ERR_CORRUPT, a);
    assert_ptr_equal(q, a); /* same block: the realloc went on */
    assert_int_equal(hk_buddy_usable_size(h, q), 24);
    assert_int_equal(hk_buddy_check(h), HK_CHECK_OK); /* the new canary is whole */
    q[24] = 0;
    hk_buddy_free(h, q);
    expect_error(&log, 2, HK_ERR_CORRUPT, q);
    assert_int_equal(hk_buddy_check(h), HK_CHECK_OK);
    assert_int_equal(stats_of(h).used_granted, 0);
    exercise_after_damage(h, NULL);
}
#endif

#endif

static void test_huge_and_zero_requests(void **state)
{
    hk_buddy_t *h = hk_buddy_init(arena_at(0), 20000, NULL, NULL);
    hk_heap_t *u = hk_buddy_heap(h);
    hk_stats_t s = stats_of(h);
    void *a, *b;
    (void)state;

    assert_null(hk_buddy_malloc(h, SIZE_MAX));
    assert_null(hk_buddy_malloc(h, SIZE_MAX - MB));
    assert_null(hk_buddy_malloc(h, s.largest_free + 1));
    assert_int_equal(stats_of(h).fail_count, 0); /* direct calls count no failures */
    assert_null(hk_malloc(u, SIZE_MAX));
    assert_null(hk_malloc(u, SIZE_MAX - MB));
    assert_null(hk_malloc(u, s.largest_free + 1));
    assert_null(hk_calloc(u, SIZE_MAX / 2, 4));
    assert_int_equal(stats_of(h).fail_count, 4);

    a = hk_buddy_malloc(h, 0);
    b = hk_buddy_malloc(h, 0);
    assert_non_null(a);
    assert_non_null(b);
    assert_ptr_not_equal(a, b);
    assert_int_equal(hk_buddy_usable_size(h, a), usable_of(MB, 1)); /* level 2 serves malloc(0) as malloc(1) */
    assert_null(hk_realloc(hk_buddy_heap(h), a, SIZE_MAX));
    assert_int_equal(hk_buddy_usable_size(h, a), usable_of(MB, 1));
    assert_int_equal(stats_of(h).fail_count, 5);
    hk_buddy_free(h, NULL);
    assert_int_equal(hk_buddy_usable_size(h, NULL), 0);
    hk_buddy_free(h, a);
    hk_buddy_free(h, b);
    assert_int_equal(stats_of(h).error_count, 0);
    assert_int_equal(hk_buddy_check(h), 0);
}

typedef struct walk_sum {
    size_t bytes;
    size_t used;
    const unsigned char *next;
    int ordered;
} walk_sum_t;

static void sum_block(void *ctx, const hk_block_info_t *b)
{
    walk_sum_t *w = (walk_sum_t *)ctx;
    if (w->next != NULL && (const unsigned char *)b->start != w->next) {
        w->ordered = 0;
    }
    w->next = (const unsigned char *)b->start + b->size;
    w->bytes += b->size;
    w->used += b->used ? b->usable : 0;
}

static void test_uniform_interface(void **state)
{
    hk_buddy_t *h = hk_buddy_init(arena_at(8), 30000, NULL, NULL);
    hk_heap_t *u = hk_buddy_heap(h);
    walk_sum_t w = {0, 0, NULL, 1};
    hk_stats_t s;
    void *p, *q;
    (void)state;

    assert_string_equal(hk_name(u), "buddy");
    p = hk_malloc(u, 100);
    q = hk_calloc(u, 10, 30);
    assert_non_null(p);
    assert_non_null(q);
    assert_true(hk_owns(u, p));
    assert_int_equal(hk_usable_size(u, p), usable_of(128, 100));
    assert_int_equal(((unsigned char *)q)[299], 0);
    p = hk_realloc(u, p, 1000);
    assert_non_null(p);
    assert_int_equal(hk_check(u), 0);
    hk_walk(u, sum_block, &w);
    hk_get_stats(u, &s);
    assert_true(w.ordered);
    assert_int_equal(w.bytes, s.capacity);
    assert_int_equal(w.used, s.used_granted);
    /* Level 2 grants the requested sizes; the blocks in use hold 512 + 1024 bytes. */
    assert_int_equal(s.capacity, s.free_bytes + (HK_HARDENING >= 2 ? 1024 + 512 : s.used_granted));
    assert_int_equal(s.realloc_count, 1);
    hk_free(u, p);
    hk_free(u, q);
    assert_int_equal(hk_check(u), 0);
}

/* Seeded random operations with check() after every one and content verification. */
static void stress(int lazy, size_t min_block, uint32_t seed)
{
    enum { SLOTS = 200, OPS = 12000 };
    hk_buddy_config_t c = config(min_block, lazy);
    hk_buddy_t *h = hk_buddy_init(arena_at(seed % 61u), 48000 + seed % 1000u, &c, NULL);
    void *slot[SLOTS];
    size_t len[SLOTS];
    hk_stats_t init;
    walk_log_t w0;
    int i;

    assert_non_null(h);
    init = stats_of(h);
    w0 = walk_of(h);
    memset(slot, 0, sizeof(slot));
    memset(len, 0, sizeof(len));
    rng_state = seed;
    for (i = 0; i < OPS; i++) {
        unsigned k = rng() % SLOTS;
        unsigned op = rng() % 100;
        size_t size = (rng() % 8 == 0) ? rng() % 6000 : rng() % 200;
        if (slot[k] != NULL && op < 45) {
            assert_pattern(slot[k], len[k], k);
            hk_buddy_free(h, slot[k]);
            slot[k] = NULL;
        } else if (slot[k] != NULL && op < 75) {
            void *p = hk_realloc(hk_buddy_heap(h), slot[k], size);
            if (size == 0) {
                assert_null(p);
                slot[k] = NULL;
            } else if (p != NULL) {
                size_t keep = len[k] < size ? len[k] : size;
                assert_pattern(p, keep, k);
                assert_true(hk_buddy_usable_size(h, p) >= size);
                slot[k] = p;
                len[k] = size;
                fill_pattern(p, size, k);
            } else {
                assert_pattern(slot[k], len[k], k);
            }
        } else if (slot[k] == NULL) {
            size_t align = (op % 10 == 0) ? ((size_t)HK_ALIGN << (rng() % 4)) : 0;
            void *p = align ? hk_buddy_aligned_alloc(h, align, size) : hk_buddy_malloc(h, size);
            if (p != NULL) {
                assert_int_equal((uintptr_t)p % (align ? align : HK_ALIGN), 0);
                assert_true(hk_buddy_usable_size(h, p) >= size);
                slot[k] = p;
                len[k] = size;
                fill_pattern(p, size, k);
            }
        }
        assert_int_equal(hk_buddy_check(h), 0);
    }
    for (i = 0; i < SLOTS; i++) {
        if (slot[i] != NULL) {
            assert_pattern(slot[i], len[i], (unsigned)i);
            hk_buddy_free(h, slot[i]);
            assert_int_equal(hk_buddy_check(h), 0);
        }
    }
    {
        hk_stats_t s = assert_back_to_start(h, &init, &w0);
        assert_true(s.split_count > 0);
        assert_int_equal(s.error_count, 0);
    }
}

static void test_stress_eager(void **state)
{
    (void)state;
    stress(0, 0, 12345u);
    stress(0, 64, 777u);
}

static void test_stress_lazy(void **state)
{
    (void)state;
    stress(1, 0, 424242u);
    stress(1, 32, 99u);
}

/* Lazy mode: a buddy parked locally must not stop realloc from growing in place on a full heap. */
static void test_lazy_realloc_grows_into_parked_buddy(void **state)
{
    static unsigned char full[4096] __attribute__((aligned(64)));
    static void *blocks[512];
    hk_buddy_config_t cfg = {16, 1};
    hk_buddy_t *b = hk_buddy_init(full, sizeof full, &cfg, NULL);
    size_t n = 0;
    size_t i;
    size_t lower = SIZE_MAX;
    (void)state;
    assert_non_null(b);
    while (n < 512 && (blocks[n] = hk_buddy_malloc(b, fill(16))) != NULL) {
        n++;
    }
    /* blocks[i] at an even atom and blocks[i + 1] right above it are buddies */
    for (i = 0; i + 1 < n && lower == SIZE_MAX; i++) {
        if ((unsigned char *)blocks[i + 1] == (unsigned char *)blocks[i] + 16 &&
            (((unsigned char *)blocks[i] - (unsigned char *)blocks[0]) & 31) == 0) {
            lower = i;
        }
    }
    assert_true(lower != SIZE_MAX);
    hk_buddy_free(b, blocks[lower + 1]);
    assert_ptr_equal(hk_realloc(hk_buddy_heap(b), blocks[lower], fill(32)), blocks[lower]);
    assert_int_equal(hk_buddy_usable_size(b, blocks[lower]), usable_of(32, fill(32)));
    assert_int_equal(hk_buddy_check(b), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_init_rejects_bad_input),
        cmocka_unit_test(test_smallest_arena_holds_one_block),
        cmocka_unit_test(test_split_orders),
        cmocka_unit_test(test_merge_back_to_top_level),
        cmocka_unit_test(test_odd_arenas_fully_used),
        cmocka_unit_test(test_realloc_in_place_eager),
        cmocka_unit_test(test_realloc_in_place_lazy),
        cmocka_unit_test(test_aligned_alloc),
        cmocka_unit_test(test_lazy_delay2_rules),
        cmocka_unit_test(test_lazy_merges_are_bounded),
        cmocka_unit_test(test_lazy_fully_coalesced_when_empty),
#if HK_HARDENING >= 1
        cmocka_unit_test(test_misuse_eager),
        cmocka_unit_test(test_misuse_lazy),
#endif
        cmocka_unit_test(test_check_detects_broken_invariants),
#if HK_HARDENING >= 1
        cmocka_unit_test(test_overflow_into_free_neighbour),
        cmocka_unit_test(test_overflow_into_used_neighbour),
        cmocka_unit_test(test_write_after_free_then_malloc),
        cmocka_unit_test(test_damaged_links_in_list),
#endif
#if HK_HARDENING >= 2
        cmocka_unit_test(test_poison_checked_when_handed_out),
        cmocka_unit_test(test_canary_checked_on_free_and_realloc),
#endif
        cmocka_unit_test(test_huge_and_zero_requests),
        cmocka_unit_test(test_uniform_interface),
        cmocka_unit_test(test_stress_eager),
        cmocka_unit_test(test_stress_lazy),
        cmocka_unit_test(test_lazy_realloc_grows_into_parked_buddy),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
