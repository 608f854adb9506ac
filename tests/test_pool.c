/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of the FCTMA pools (src/pool.c) and the lock-free pool
 * (src/pool_lockfree.c): single pools on an arena and on a bump backing, pool sets, the
 * blocking allocation with pthreads and POSIX semaphores (a small version of
 * the seed's producer/consumer benchmark), and threaded stress of lfpool.
 *
 * HEAPKIT_TEST_THREADS=0 (the bare-metal builds in ports/baremetal, which
 * have no threads or POSIX semaphores) leaves out the blocking-allocation
 * tests and lfpool's threaded stress and race.
 */
#define _POSIX_C_SOURCE 200809L

#ifndef HEAPKIT_TEST_THREADS
#define HEAPKIT_TEST_THREADS 1
#endif

#include <errno.h>
#if HEAPKIT_TEST_THREADS
#include <pthread.h>
#include <semaphore.h>
#endif
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "heapkit/bump.h"
#include "heapkit/pool.h"

/*
 * The lock-free pool is compiled into this test with its preemption seam
 * wired to lf_preempt(), which plays an interrupt arriving in the middle of
 * a pop. (The library's own object is then not linked in.) It comes before
 * cmocka.h, whose macros (fail, ...) would clash with its helpers.
 */
static void lf_preempt(hk_lfpool_t *pool);
#define HK_LFPOOL_PREEMPT(pool) lf_preempt(pool)
#include "pool_lockfree.c"

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "testkit.h"

/*
 * Block geometry (src/pool.c, src/pool_lockfree.c): a pool block is the
 * two-word header and the request's room rounded to HK_ALIGN, plus at
 * HK_HARDENING 2 the canary's room (HK_CANARY_ROOM, hk_internal.h, rounded
 * to HK_ALIGN); an lfpool block has no header. MAXREQ is the largest request a block takes (what
 * hk_pool_block_size reports); USABLE what usable_size reports for a block
 * holding a request of n bytes: MAXREQ, or at level 2 exactly n (the canary
 * follows the request).
 */
#define HDR (2 * sizeof(void *))
#define ROUND(n) (((n) + HK_ALIGN - 1) & ~(size_t)(HK_ALIGN - 1))
#define CROOM ROUND(HK_CANARY_ROOM)
#define STRIDE(bs) (ROUND((size_t)(bs) + HDR) + CROOM)
#define MAXREQ(bs) (ROUND((size_t)(bs) + HDR) - HDR)
#define USABLE(bs, n) (HK_CANARIES ? (size_t)(n) : MAXREQ(bs))
#define LF_STRIDE(bs) (ROUND(bs) + CROOM)
#define LF_MAXREQ(bs) ROUND(bs)
#define LF_USABLE(bs, n) (HK_CANARIES ? (size_t)(n) : LF_MAXREQ(bs))

static _Alignas(64) unsigned char backing_mem[1u << 16];
static _Alignas(64) unsigned char set_mem[1u << 14];
static _Alignas(64) unsigned char lf_mem[(1u << 20) + (1u << 19)];

/* ---- helpers ---- */

static hk_bump_t *backing(void)
{
    hk_bump_t *b = hk_bump_init(backing_mem, sizeof(backing_mem), NULL);
    assert_non_null(b);
    return b;
}

static walk_log_t g_walk;

static const walk_log_t *take_walk(hk_heap_t *heap) { return collect_heap_walk(heap, &g_walk); }

/* Blocks in address order, the stats what the walk adds up to, check() clean. */
static void assert_walk_matches(hk_heap_t *heap)
{
    hk_stats_t s = heap_stats(heap);
    const walk_log_t *w = take_walk(heap);
    size_t i;
    for (i = 0; i < w->n; i++) {
        if (i > 0) {
            assert_true((uintptr_t)w->b[i].start >= (uintptr_t)w->b[i - 1].start + w->b[i - 1].size);
        }
        if (w->b[i].used) {
            assert_int_equal(hk_usable_size(heap, w->b[i].payload), w->b[i].usable);
        }
    }
    assert_stats_match_walk(&s, w);
    assert_int_equal(hk_check(heap), 0);
}

/* ================= one pool ================= */

static void pool_create_rejects_bad_arguments(void **state)
{
    hk_bump_t *b = backing();
    hk_heap_t *bh = hk_bump_heap(b);
    (void)state;
    assert_null(hk_pool_create(NULL, 16, 4));
    assert_null(hk_pool_create(bh, 0, 4));
    assert_null(hk_pool_create(bh, 16, 0));
    assert_null(hk_pool_create(bh, SIZE_MAX, 1));
    assert_null(hk_pool_create(bh, SIZE_MAX - 2 * HDR, 1));
    assert_null(hk_pool_create(bh, 16, SIZE_MAX / 8));
    assert_int_equal(heap_stats(bh).alloc_count, 0);
    /* The backing cannot supply it: NULL, and the backing saw the failure. */
    assert_null(hk_pool_create(bh, 1024, 64));
    assert_int_equal(heap_stats(bh).fail_count, 1);
    assert_int_equal(heap_stats(bh).used_blocks, 0);
}

static void pool_create_carves_everything_up_front(void **state)
{
    hk_bump_t *b = backing();
    hk_heap_t *bh = hk_bump_heap(b);
    hk_pool_t *pool = hk_pool_create(bh, 127, 20);
    hk_stats_t bs;
    hk_stats_t ps;
    void *held[20];
    size_t n = 0;
    unsigned long x = 1;
    int i;
    (void)state;
    assert_non_null(pool);
    bs = heap_stats(bh);
    assert_int_equal(bs.alloc_count, 1);
    assert_int_equal(bs.used_blocks, 1);
    ps = heap_stats(hk_pool_heap(pool));
    assert_int_equal(ps.capacity, 20 * STRIDE(127));
    assert_int_equal(ps.free_bytes, ps.capacity);
    assert_int_equal(ps.free_blocks, 20);
    assert_int_equal(hk_pool_block_size(pool), MAXREQ(127));
    assert_int_equal(hk_pool_available(pool), 20);
    /* Many operations later the backing has not been called once more. */
    for (i = 0; i < 20000; i++) {
        x = x * 1103515245u + 12345u;
        if (n < 20 && ((x >> 16) & 1u)) {
            held[n] = hk_pool_alloc(pool);
            assert_non_null(held[n]);
            n++;
        } else if (n > 0) {
            size_t k = (size_t)(x >> 17) % n;
            assert_int_equal(hk_pool_release(held[k]), 0);
            held[k] = held[--n];
        }
    }
    {
        hk_stats_t after = heap_stats(bh);
        assert_memory_equal(&after, &bs, sizeof(bs));
    }
    assert_int_equal(hk_pool_check(pool), 0);
}

static void pool_alloc_pops_and_free_pushes(void **state)
{
    hk_pool_t *pool = hk_pool_create(hk_bump_heap(backing()), 24, 4);
    unsigned char *p[4];
    int i;
    (void)state;
    for (i = 0; i < 4; i++) {
        p[i] = hk_pool_alloc(pool);
        assert_non_null(p[i]);
        assert_int_equal((uintptr_t)p[i] % HK_ALIGN, 0);
        assert_int_equal(hk_pool_usable_size(pool, p[i]), USABLE(24, 24));
        memset(p[i], i, 24);
        if (i > 0) {
            assert_ptr_equal(p[i], p[i - 1] + STRIDE(24)); /* fresh list in address order */
        }
        assert_int_equal(hk_pool_available(pool), (size_t)(3 - i));
    }
    assert_null(hk_pool_alloc(pool));
    assert_int_equal(heap_stats(hk_pool_heap(pool)).fail_count, 0); /* direct calls count no failures */
    assert_null(hk_malloc(hk_pool_heap(pool), 24));
    assert_int_equal(heap_stats(hk_pool_heap(pool)).fail_count, 1);
    hk_pool_free(pool, p[2]);
    hk_pool_free(pool, p[0]);
    assert_ptr_equal(hk_pool_alloc(pool), p[0]); /* LIFO */
    assert_ptr_equal(hk_pool_alloc(pool), p[2]);
    assert_int_equal(p[1][23], 1);
    assert_int_equal(p[3][0], 3);
    assert_walk_matches(hk_pool_heap(pool));
}

static void pool_counts_requested_sizes_exactly(void **state)
{
    hk_pool_t *pool = hk_pool_create(hk_bump_heap(backing()), 100, 8);
    hk_heap_t *heap = hk_pool_heap(pool);
    void *a = hk_pool_malloc(pool, 5);
    void *b = hk_pool_malloc(pool, 0);
    void *c = hk_pool_alloc(pool);
    void *d = hk_pool_malloc(pool, MAXREQ(100));
    hk_stats_t s = heap_stats(heap);
    (void)state;
    assert_non_null(a);
    assert_non_null(b);
    assert_non_null(c);
    assert_non_null(d);
    assert_ptr_not_equal(a, b);
    assert_int_equal(s.used_requested, 5 + 0 + 100 + MAXREQ(100));
    assert_int_equal(s.used_granted, HK_CANARIES ? s.used_requested : 4 * MAXREQ(100));
    assert_int_equal(s.used_blocks, 4);
    assert_int_equal(s.free_bytes, 4 * STRIDE(100));
    assert_int_equal(s.peak_used, 4 * STRIDE(100)); /* gross bytes: capacity - min_ever_free */
    assert_int_equal(s.min_ever_free, s.free_bytes);
    assert_int_equal(s.largest_free, STRIDE(100));
    assert_int_equal(s.smallest_free, STRIDE(100));
    assert_null(hk_pool_malloc(pool, MAXREQ(100) + 1));
    assert_null(hk_pool_malloc(pool, SIZE_MAX));
    assert_int_equal(heap_stats(heap).fail_count, 0); /* direct calls count no failures */
    assert_null(hk_malloc(heap, MAXREQ(100) + 1));
    assert_null(hk_malloc(heap, SIZE_MAX));
    assert_int_equal(heap_stats(heap).fail_count, 2);
    hk_pool_free(pool, a);
    s = heap_stats(heap);
    assert_int_equal(s.used_requested, 100 + MAXREQ(100));
    assert_int_equal(s.free_count, 1);
    assert_walk_matches(heap);
}

static void pool_realloc_stays_in_its_block(void **state)
{
    hk_pool_t *pool = hk_pool_create(hk_bump_heap(backing()), 64, 2);
    hk_heap_t *heap = hk_pool_heap(pool);
    unsigned char *p = hk_realloc(hk_pool_heap(pool), NULL, 10);
    hk_stats_t s;
    (void)state;
    assert_non_null(p);
    assert_int_equal(heap_stats(heap).realloc_count, 0);
    memset(p, 0x6D, 10);
    assert_ptr_equal(hk_realloc(hk_pool_heap(pool), p, 64), p);
    s = heap_stats(heap);
    assert_int_equal(s.used_requested, 64);
    assert_int_equal(s.realloc_count, 1);
    assert_int_equal(p[9], 0x6D);
    assert_null(hk_realloc(hk_pool_heap(pool), p, MAXREQ(64) + 1));
    s = heap_stats(heap);
    assert_int_equal(s.fail_count, 1);
    assert_int_equal(s.used_requested, 64);
    assert_int_equal(hk_pool_usable_size(pool, p), USABLE(64, 64));
    assert_null(hk_realloc(hk_pool_heap(pool), p, 0));
    s = heap_stats(heap);
    assert_int_equal(s.used_blocks, 0);
    assert_int_equal(s.free_count, 1);
    assert_int_equal(s.realloc_count, 1);
    assert_walk_matches(heap);
}

#if HK_HARDENING >= 1
static void pool_misuse_is_reported_and_harmless(void **state)
{
    hk_heap_t *bh = hk_bump_heap(backing());
    hk_pool_t *pool = hk_pool_create(bh, 32, 4);
    hk_pool_t *other = hk_pool_create(bh, 32, 4);
    hk_heap_t *heap = hk_pool_heap(pool);
    error_log_t log;
    unsigned char *a = hk_pool_alloc(pool);
    unsigned char *b = hk_pool_alloc(pool);
    unsigned char *o = hk_pool_alloc(other);
    unsigned char local[64];
    uintptr_t saved;
    (void)state;
    record_errors(heap, &log);
    memset(a, 0x11, 32);
    hk_pool_free(pool, b);
    assert_misuse_harmless(heap, &log, b, HK_ERR_DOUBLE_FREE);
    assert_misuse_harmless(heap, &log, a + HK_ALIGN, HK_ERR_INTERIOR_PTR);
    assert_misuse_harmless(heap, &log, a + 1, HK_ERR_INTERIOR_PTR);
    assert_misuse_harmless(heap, &log, a - HDR, HK_ERR_INTERIOR_PTR);
    assert_misuse_harmless(heap, &log, o, HK_ERR_FOREIGN_PTR);
    assert_misuse_harmless(heap, &log, local, HK_ERR_FOREIGN_PTR);
    assert_misuse_harmless(heap, &log, pool, HK_ERR_FOREIGN_PTR);
    /* A stray write over the owner word (the header's first), then over the requested size (its second). */
    memcpy(&saved, a - HDR, sizeof(saved));
    a[-(int)HDR] ^= 0x20;
    assert_misuse_harmless(heap, &log, a, HK_ERR_CORRUPT);
    assert_int_equal(hk_pool_check(pool), HK_CHECK_STATE);
    memcpy(a - HDR, &saved, sizeof(saved));
    {
        size_t huge = 1000;
        size_t old;
        memcpy(&old, a - sizeof(size_t), sizeof(old));
        memcpy(a - sizeof(size_t), &huge, sizeof(huge));
        assert_misuse_harmless(heap, &log, a, HK_ERR_CORRUPT);
        assert_int_equal(hk_pool_check(pool), HK_CHECK_SIZE);
        memcpy(a - sizeof(size_t), &old, sizeof(old));
    }
    assert_int_equal(hk_pool_check(pool), 0);
    assert_int_equal(a[31], 0x11);
    assert_int_equal(hk_pool_check(other), 0);
    hk_pool_free(pool, a);
    assert_int_equal(hk_pool_check(pool), 0);
    assert_int_equal(heap_stats(heap).used_blocks, 0);
}
#endif

static void pool_release_finds_the_pool_from_the_header(void **state)
{
    hk_heap_t *bh = hk_bump_heap(backing());
    hk_pool_t *p1 = hk_pool_create(bh, 16, 2);
    hk_pool_t *p2 = hk_pool_create(bh, 200, 2);
    error_log_t log1;
    error_log_t log2;
    unsigned char *a = hk_pool_alloc(p1);
    unsigned char *b = hk_pool_alloc(p2);
    unsigned char *c = hk_pool_alloc(p2);
    _Alignas(16) unsigned char local[64];
    (void)state;
    record_errors(hk_pool_heap(p1), &log1);
    record_errors(hk_pool_heap(p2), &log2);
    assert_int_equal(hk_pool_release(NULL), 0);
    assert_int_equal(hk_pool_release(b), 0);
    assert_int_equal(heap_stats(hk_pool_heap(p2)).free_count, 1);
    assert_int_equal(hk_pool_release(a), 0);
    assert_int_equal(heap_stats(hk_pool_heap(p1)).used_blocks, 0);
#if HK_HARDENING >= 1
    /* Double free: reported on the owning pool. */
    assert_int_equal(hk_pool_release(b), HK_ERR_DOUBLE_FREE);
    assert_int_equal(atomic_load(&log2.count), 1);
    assert_int_equal(log2.last, HK_ERR_DOUBLE_FREE);
    assert_int_equal(atomic_load(&log1.count), 0);
    /* No pool named: nothing to report to. */
    memset(local, 0, sizeof(local));
    assert_int_equal(hk_pool_release(local + 32), HK_ERR_FOREIGN_PTR);
    assert_int_equal(hk_pool_release(c + 1), HK_ERR_FOREIGN_PTR);
    memset(c, 0, 200);
    assert_int_equal(hk_pool_release(c + 64), HK_ERR_FOREIGN_PTR);
    /* A header copied into a payload names the pool, but the boundary check catches it. */
    memcpy(c + 64 - HDR, c - HDR, HDR);
    assert_int_equal(hk_pool_release(c + 64), HK_ERR_INTERIOR_PTR);
    assert_int_equal(atomic_load(&log2.count), 2);
    assert_ptr_equal(log2.ptr, c + 64);
    /* So does the range check for a copy outside the pool. */
    memcpy(local + 32 - HDR, c - HDR, HDR);
    assert_int_equal(hk_pool_release(local + 32), HK_ERR_FOREIGN_PTR);
    assert_int_equal(atomic_load(&log2.count), 3);
    assert_int_equal(log2.last, HK_ERR_FOREIGN_PTR);
#else
    (void)c;
    (void)local;
#endif
    assert_int_equal(heap_stats(hk_pool_heap(p2)).used_blocks, 1);
    assert_int_equal(hk_pool_check(p1), 0);
    assert_int_equal(hk_pool_check(p2), 0);
}

/* Overwrite the word at w with v, run check(), put the word back. */
static hk_check_t check_with_word(hk_pool_t *pool, unsigned char *w, size_t v)
{
    size_t saved;
    hk_check_t rc;
    memcpy(&saved, w, sizeof(saved));
    memcpy(w, &v, sizeof(v));
    rc = hk_pool_check(pool);
    memcpy(w, &saved, sizeof(saved));
    return rc;
}

static void pool_check_names_what_is_broken(void **state)
{
    hk_pool_t *pool = hk_pool_create(hk_bump_heap(backing()), 16, 4);
    hk_heap_t *heap = hk_pool_heap(pool);
    unsigned char *a = hk_pool_alloc(pool); /* block 0 */
    unsigned char *b = hk_pool_alloc(pool); /* block 1 */
    unsigned char *b_link = b - sizeof(size_t);
    unsigned char *a_owner = a - HDR;
    size_t owner;
    (void)state;
    hk_pool_free(pool, b); /* the list: b, then the untouched blocks 2 and 3 */
    assert_int_equal(hk_pool_check(pool), HK_CHECK_OK);
    /* b's link, an index + 1: to itself (a cycle), past the last block, to the used block a. */
    assert_int_equal(check_with_word(pool, b_link, 2), HK_CHECK_LINK);
    assert_int_equal(check_with_word(pool, b_link, 9), HK_CHECK_RANGE);
    assert_int_equal(check_with_word(pool, b_link, 1), HK_CHECK_STATE);
    /* b's link past the first untouched block: block 2 drops off the list. */
    assert_int_equal(check_with_word(pool, b_link, 4), HK_CHECK_COUNT);
    /* An untouched block must link to the next one. */
    assert_int_equal(check_with_word(pool, b + STRIDE(16) - sizeof(size_t), 0), HK_CHECK_LINK);
    /* a's requested size beyond the block; a's owner word naming another pool. */
    assert_int_equal(check_with_word(pool, a - sizeof(size_t), 1000), HK_CHECK_SIZE);
    memcpy(&owner, a_owner, sizeof(owner));
    assert_int_equal(check_with_word(pool, a_owner, owner ^ 0x100u), HK_CHECK_STATE);
    /* A free block's tag on a block not on the list: the list and the blocks disagree (at level 2 its payload holds no poison). */
    assert_int_equal(check_with_word(pool, a_owner, (owner & ~(size_t)7) | 2u),
                     HK_CANARIES ? HK_CHECK_POISON : HK_CHECK_COUNT);
    assert_int_equal(hk_pool_check(pool), HK_CHECK_OK);
    assert_check_notices(heap, &heap->stats.capacity, 1);
    assert_int_equal(hk_pool_check(pool), HK_CHECK_OK);
    hk_pool_free(pool, a);
    assert_int_equal(hk_pool_check(pool), HK_CHECK_OK);
}

static void pool_walk_shows_every_block(void **state)
{
    hk_pool_t *pool = hk_pool_create(hk_bump_heap(backing()), 40, 5);
    hk_heap_t *heap = hk_pool_heap(pool);
    void *a = hk_pool_alloc(pool);
    void *b = hk_pool_alloc(pool);
    const walk_log_t *w;
    size_t i;
    (void)state;
    hk_pool_free(pool, a);
    w = take_walk(heap);
    assert_int_equal(w->n, 5);
    for (i = 0; i < 5; i++) {
        assert_int_equal(w->b[i].size, STRIDE(40));
        assert_int_equal(w->b[i].usable, w->b[i].used ? USABLE(40, 40) : MAXREQ(40));
        assert_ptr_equal((const unsigned char *)w->b[i].payload - HDR, w->b[i].start);
        assert_int_equal(w->b[i].used, w->b[i].payload == b);
    }
    assert_walk_matches(heap);
}

static void pool_uniform_interface(void **state)
{
    hk_pool_t *pool;
    hk_heap_t *heap;
    unsigned char *p;
    size_t i;
    (void)state;
    memset(backing_mem, 0xFF, sizeof(backing_mem)); /* calloc must clear what it hands out */
    pool = hk_pool_create(hk_bump_heap(backing()), 48, 3);
    heap = hk_pool_heap(pool);
    assert_string_equal(hk_name(heap), "pool");
    assert_null(heap->ops->aligned_alloc);
    p = hk_calloc(heap, 6, 8);
    assert_non_null(p);
    for (i = 0; i < 48; i++) {
        assert_int_equal(p[i], 0);
    }
    assert_null(hk_malloc(heap, 49 + HK_ALIGN));
    assert_null(hk_aligned_alloc(heap, 64, 8));
    assert_non_null(hk_aligned_alloc(heap, HK_ALIGN, 8));
    assert_ptr_equal(hk_realloc(heap, p, 8), p);
    assert_true(hk_owns(heap, p));
    assert_false(hk_owns(heap, pool));
    assert_false(hk_owns(heap, (unsigned char *)p + 3 * STRIDE(48)));
    assert_int_equal(heap_stats(heap).fail_count, 2);
    hk_free(heap, p);
    assert_walk_matches(heap);
}

static void pool_destroy_returns_the_memory(void **state)
{
    hk_bump_t *b = backing();
    hk_heap_t *bh = hk_bump_heap(b);
    hk_pool_t *pool = hk_pool_create(bh, 16, 4);
    void *p = hk_pool_alloc(pool);
    (void)state;
    assert_int_equal(heap_stats(bh).used_blocks, 1);
    hk_pool_destroy(pool);
    assert_int_equal(heap_stats(bh).used_blocks, 0);
    assert_int_equal(heap_stats(bh).free_count, 1);
#if HK_HARDENING >= 1
    /* The stale block names a pool that is gone. */
    assert_int_equal(hk_pool_release(p), HK_ERR_FOREIGN_PTR);
#else
    (void)p;
#endif
    hk_pool_destroy(NULL);
}

/* ================= one pool on an arena (hk_pool_init) ================= */

static void pool_init_rejects_bad_arguments(void **state)
{
    hk_status_t st = HK_OK;
    (void)state;
    assert_null(hk_pool_init(NULL, sizeof(backing_mem), 16, &st));
    assert_int_equal(st, HK_EINVAL);
    assert_null(hk_pool_init(NULL, sizeof(backing_mem), 16, NULL));
    st = HK_OK;
    assert_null(hk_pool_init(backing_mem, sizeof(backing_mem), 0, &st));
    assert_int_equal(st, HK_EINVAL);
    /* Block sizes whose stride (header, rounding, canary room) would overflow. */
    st = HK_OK;
    assert_null(hk_pool_init(backing_mem, sizeof(backing_mem), SIZE_MAX, &st));
    assert_int_equal(st, HK_EINVAL);
    st = HK_OK;
    assert_null(hk_pool_init(backing_mem, sizeof(backing_mem), SIZE_MAX - HDR, &st));
    assert_int_equal(st, HK_EINVAL);
    /* Valid, but not one block fits. */
    st = HK_OK;
    assert_null(hk_pool_init(backing_mem, sizeof(backing_mem), SIZE_MAX - 4 * HDR, &st));
    assert_int_equal(st, HK_ETOOSMALL);
    st = HK_OK;
    assert_null(hk_pool_init(backing_mem, 0, 16, &st));
    assert_int_equal(st, HK_ETOOSMALL);
    st = HK_OK;
    assert_null(hk_pool_init(backing_mem, 64, 16, &st));
    assert_int_equal(st, HK_ETOOSMALL);
    st = HK_OK;
    assert_null(hk_pool_init(backing_mem, sizeof(backing_mem), sizeof(backing_mem), &st));
    assert_int_equal(st, HK_ETOOSMALL);
    st = HK_OK;
    assert_null(hk_pool_init(backing_mem, sizeof(backing_mem), SIZE_MAX / 2, &st));
    assert_int_equal(st, HK_ETOOSMALL);
    /* An arena reaching the end of the address space is clamped, not wrapped. */
    st = HK_OK;
    assert_null(hk_pool_init((void *)(UINTPTR_MAX - 63), 64, 16, &st));
    assert_int_equal(st, HK_ETOOSMALL);
}

/*
 * Fill a pool on [arena, arena + size) of block_size blocks: every block is
 * distinct, aligned, inside the arena, in address order and holds its whole
 * usable size; then malloc fails. Returns the block count, the first block
 * in *first.
 */
static size_t init_and_fill(unsigned char *arena, size_t size, size_t block_size, unsigned char **first)
{
    hk_status_t st = HK_EINVAL;
    hk_pool_t *pool = hk_pool_init(arena, size, block_size, &st);
    static unsigned char *held[(1u << 16) / 16];
    size_t n = 0;
    size_t i;
    assert_non_null(pool);
    assert_int_equal(st, HK_OK);
    assert_int_equal(hk_pool_block_size(pool), MAXREQ(block_size));
    for (;;) {
        unsigned char *p = hk_pool_malloc(pool, block_size);
        if (p == NULL) {
            break;
        }
        assert_true(n < sizeof(held) / sizeof(held[0]));
        assert_int_equal((uintptr_t)p % HK_ALIGN, 0);
        assert_true(p - HDR >= arena + sizeof(void *) && p + STRIDE(block_size) - HDR <= arena + size);
        if (n > 0) {
            assert_ptr_equal(p, held[n - 1] + STRIDE(block_size));
        }
        memset(p, (int)(n & 0xFF), block_size);
        held[n++] = p;
    }
    assert_true(n > 0);
    assert_int_equal(hk_pool_available(pool), 0);
    assert_null(hk_pool_malloc(pool, 1));
    for (i = 0; i < n; i++) {
        assert_int_equal(held[i][0], (unsigned char)(i & 0xFF));
        assert_int_equal(held[i][block_size - 1], (unsigned char)(i & 0xFF));
    }
    assert_int_equal(heap_stats(hk_pool_heap(pool)).capacity, n * STRIDE(block_size));
    assert_int_equal(hk_pool_check(pool), 0);
    *first = held[0];
    return n;
}

static void pool_init_makes_as_many_blocks_as_fit(void **state)
{
    const size_t sizes[] = {1, 24, 100, 1000};
    size_t k;
    (void)state;
    for (k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
        size_t bs = sizes[k];
        unsigned char *first;
        size_t n = init_and_fill(backing_mem, sizeof(backing_mem), bs, &first);
        /* The blocks end where one more would not fit: the arena, less the control, holds n strides. */
        size_t need = (size_t)(first - HDR - backing_mem) + n * STRIDE(bs);
        assert_true(need <= sizeof(backing_mem));
        assert_true(sizeof(backing_mem) - need < STRIDE(bs));
        assert_int_equal(init_and_fill(backing_mem, need, bs, &first), n);
        if (n > 1) {
            assert_int_equal(init_and_fill(backing_mem, need - 1, bs, &first), n - 1);
        }
        /* A misaligned arena: the pool moves up to alignment and loses at most one block. */
        assert_true(init_and_fill(backing_mem + 3, sizeof(backing_mem) - 3, bs, &first) + 1 >= n);
    }
}

static void pool_init_frees_and_reuses(void **state)
{
    hk_pool_t *pool = hk_pool_init(backing_mem, 1024, 40, NULL);
    unsigned char *p[64];
    size_t n = 0;
    size_t i;
    hk_stats_t s;
    (void)state;
    assert_non_null(pool);
    while (n < 64 && (p[n] = hk_pool_malloc(pool, 40)) != NULL) {
        n++;
    }
    assert_true(n > 2 && n < 64);
    assert_null(hk_pool_malloc(pool, 40));
    hk_pool_free(pool, p[1]);
    assert_int_equal(hk_pool_available(pool), 1);
    assert_ptr_equal(hk_pool_malloc(pool, 7), p[1]);
    assert_null(hk_pool_malloc(pool, MAXREQ(40) + 1)); /* too large even when a block is free */
    for (i = 0; i < n; i++) {
        hk_pool_free(pool, p[i]);
    }
    hk_pool_free(pool, NULL);
    assert_int_equal(hk_pool_available(pool), n);
    s = heap_stats(hk_pool_heap(pool));
    assert_int_equal(s.used_blocks, 0);
    assert_int_equal(s.free_count, n + 1);
    assert_int_equal(s.alloc_count, n + 1);
    assert_int_equal(s.peak_used, n * STRIDE(40));
    for (i = 0; i < n; i++) {
        assert_non_null(hk_pool_malloc(pool, 40));
    }
    assert_null(hk_pool_malloc(pool, 40));
    assert_walk_matches(hk_pool_heap(pool));
}

#if HK_HARDENING >= 1
static void pool_init_misuse_is_reported(void **state)
{
    hk_pool_t *pool = hk_pool_init(backing_mem, 4096, 32, NULL);
    hk_pool_t *other = hk_pool_init(set_mem, sizeof(set_mem), 32, NULL);
    hk_heap_t *heap;
    error_log_t log;
    unsigned char local[64];
    unsigned char *a;
    unsigned char *b;
    unsigned char *o;
    (void)state;
    assert_non_null(pool);
    assert_non_null(other);
    heap = hk_pool_heap(pool);
    record_errors(heap, &log);
    a = hk_pool_malloc(pool, 32);
    b = hk_pool_malloc(pool, 32);
    o = hk_pool_malloc(other, 32);
    /* Through the direct calls, as a firmware that links only init, malloc and free makes them. */
    hk_pool_free(pool, b);
    hk_pool_free(pool, b);
    expect_error(&log, 1, HK_ERR_DOUBLE_FREE, b);
    hk_pool_free(pool, o);
    expect_error(&log, 2, HK_ERR_FOREIGN_PTR, o);
    hk_pool_free(pool, local);
    expect_error(&log, 3, HK_ERR_FOREIGN_PTR, local);
    hk_pool_free(pool, a + HK_ALIGN);
    expect_error(&log, 4, HK_ERR_INTERIOR_PTR, a + HK_ALIGN);
    a[-(int)HDR] ^= 0x20; /* the owner word */
    hk_pool_free(pool, a);
    expect_error(&log, 5, HK_ERR_CORRUPT, a);
    a[-(int)HDR] ^= 0x20;
    assert_int_equal(hk_pool_check(pool), 0);
    /* And through the uniform handle. */
    assert_misuse_harmless(heap, &log, b, HK_ERR_DOUBLE_FREE);
    assert_misuse_harmless(heap, &log, o, HK_ERR_FOREIGN_PTR);
    hk_pool_free(pool, a);
    assert_int_equal(heap_stats(heap).used_blocks, 0);
    assert_int_equal(heap_stats(heap).error_count, 11);
    assert_int_equal(hk_pool_check(other), 0);
}
#endif

static void pool_init_uniform_interface(void **state)
{
    hk_pool_t *pool = hk_pool_init(backing_mem, sizeof(backing_mem), 48, NULL);
    hk_heap_t *heap;
    unsigned char *p;
    unsigned char *q;
    (void)state;
    assert_non_null(pool);
    heap = hk_pool_heap(pool);
    assert_ptr_equal((void *)heap, (void *)pool);
    assert_string_equal(hk_name(heap), "pool");
    p = hk_malloc(heap, 48);
    assert_non_null(p);
    assert_int_equal(hk_usable_size(heap, p), USABLE(48, 48));
    assert_ptr_equal(hk_realloc(heap, p, 8), p);
    assert_null(hk_malloc(heap, MAXREQ(48) + 1));
    assert_int_equal(heap_stats(heap).fail_count, 1);
    assert_true(hk_owns(heap, p));
    assert_false(hk_owns(heap, pool));
    q = hk_malloc(heap, 1);
    assert_ptr_equal(q, p + STRIDE(48));
    hk_free(heap, p);
    assert_walk_matches(heap);
    hk_free(heap, q);
    assert_walk_matches(heap);
    /* Nothing to give back: destroy only retires the pool (it would crash on a NULL backing). */
    q = hk_pool_malloc(pool, 1);
    hk_pool_destroy(pool);
#if HK_HARDENING >= 1
    assert_int_equal(hk_pool_release(q), HK_ERR_FOREIGN_PTR);
#endif
    assert_int_equal(hk_pool_check(pool), HK_CHECK_CONTROL);
}

#if HEAPKIT_TEST_THREADS
/* ================= blocking allocation ================= */

typedef struct port {
    pthread_mutex_t mu;
    sem_t *sems[4];
    int n_sems;
    char events[64];
    int n_events; /* logged while < 64 */
    int logging;
    int fail_create;
    int blocking_takes; /* takes that may wait: read across threads with __atomic */
} port_t;

static void port_event(port_t *port, char e)
{
    if (port->logging && port->n_events < 63) {
        port->events[port->n_events++] = e;
        port->events[port->n_events] = 0;
    }
}

static port_t *the_port;

static void *port_sem_create(void *ctx, size_t count)
{
    port_t *port = (port_t *)ctx;
    sem_t *s;
    if (port->fail_create) {
        return NULL;
    }
    s = malloc(sizeof(*s));
    assert_non_null(s);
    assert_int_equal(sem_init(s, 0, (unsigned)count), 0);
    port->sems[port->n_sems++] = s;
    return s;
}

/* One tick is one millisecond. */
static int port_sem_take(void *sem, uint32_t ticks)
{
    struct timespec ts;
    int rc;
    port_event(the_port, 'T');
    if (ticks == 0) {
        return sem_trywait(sem) == 0;
    }
    __atomic_add_fetch(&the_port->blocking_takes, 1, __ATOMIC_SEQ_CST);
    if (ticks == HK_POOL_WAIT_FOREVER) {
        while ((rc = sem_wait(sem)) != 0 && errno == EINTR) {
            continue;
        }
        return rc == 0;
    }
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_sec += ticks / 1000u;
    ts.tv_nsec += (long)(ticks % 1000u) * 1000000L;
    if (ts.tv_nsec >= 1000000000L) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000L;
    }
    while ((rc = sem_timedwait(sem, &ts)) != 0 && errno == EINTR) {
        continue;
    }
    return rc == 0;
}

static void port_sem_give(void *sem)
{
    port_event(the_port, 'G');
    sem_post(sem);
}

static void port_lock(void *ctx)
{
    port_t *port = (port_t *)ctx;
    pthread_mutex_lock(&port->mu);
    port_event(port, 'L');
}

static void port_unlock(void *ctx)
{
    port_t *port = (port_t *)ctx;
    port_event(port, 'U');
    pthread_mutex_unlock(&port->mu);
}

static port_t port_storage;

static hk_pool_sync_t make_sync(void)
{
    hk_pool_sync_t sync;
    memset(&port_storage, 0, sizeof(port_storage));
    pthread_mutex_init(&port_storage.mu, NULL);
    the_port = &port_storage;
    sync.ctx = &port_storage;
    sync.sem_create = port_sem_create;
    sync.sem_take = port_sem_take;
    sync.sem_give = port_sem_give;
    sync.lock = port_lock;
    sync.unlock = port_unlock;
    return sync;
}

static void port_teardown(void)
{
    int i;
    for (i = 0; i < port_storage.n_sems; i++) {
        sem_destroy(port_storage.sems[i]);
        free(port_storage.sems[i]);
    }
    pthread_mutex_destroy(&port_storage.mu);
}

static void sync_attach_rejects_bad_hooks(void **state)
{
    hk_heap_t *bh = hk_bump_heap(backing());
    hk_pool_t *pool = hk_pool_create(bh, 16, 4);
    hk_pool_sync_t sync = make_sync();
    hk_pool_sync_t broken = sync;
    hk_pool_class_t cls = {16, 2};
    hk_poolset_t *set = hk_poolset_init(set_mem, sizeof(set_mem), &cls, 1, NULL);
    (void)state;
    assert_int_equal(hk_pool_set_sync(pool, NULL), HK_EINVAL);
    broken.lock = NULL;
    assert_int_equal(hk_pool_set_sync(pool, &broken), HK_EINVAL);
    broken = sync;
    broken.sem_take = NULL;
    assert_int_equal(hk_pool_set_sync(pool, &broken), HK_EINVAL);
    port_storage.fail_create = 1;
    assert_int_equal(hk_pool_set_sync(pool, &sync), HK_EINVAL);
    port_storage.fail_create = 0;
    assert_non_null(set);
    assert_int_equal(hk_pool_set_sync(hk_poolset_pool(set, 0), &sync), HK_EINVAL);
    assert_int_equal(hk_pool_set_sync(pool, &sync), HK_OK);
    assert_int_equal(hk_pool_set_sync(pool, &sync), HK_EINVAL);
    assert_int_equal(port_storage.n_sems, 1);
    port_teardown();
}

static void sync_takes_the_semaphore_before_the_lock(void **state)
{
    hk_pool_t *pool = hk_pool_create(hk_bump_heap(backing()), 16, 2);
    hk_pool_sync_t sync = make_sync();
    void *a;
    void *b;
    (void)state;
    assert_non_null(hk_pool_alloc(pool)); /* the semaphore starts at the free count */
    assert_int_equal(hk_pool_set_sync(pool, &sync), HK_OK);
    port_storage.logging = 1;
    a = hk_pool_alloc_blocking(pool, 10);
    assert_non_null(a);
    assert_string_equal(port_storage.events, "TLU");
    port_storage.n_events = 0;
    assert_null(hk_pool_alloc(pool));
    assert_string_equal(port_storage.events, "TLU");
    port_storage.n_events = 0;
    assert_int_equal(hk_pool_release(a), 0);
    assert_string_equal(port_storage.events, "LUG");
    port_storage.n_events = 0;
    b = hk_pool_malloc(pool, 3);
    assert_ptr_equal(b, a);
    assert_string_equal(port_storage.events, "TLU");
    port_storage.n_events = 0;
    assert_int_equal(hk_pool_release(a), 0);
#if HK_HARDENING >= 1
    /* A misuse gives nothing back. */
    assert_int_equal(hk_pool_release(a), HK_ERR_DOUBLE_FREE);
    assert_string_equal(port_storage.events, "LUGLU");
#else
    assert_string_equal(port_storage.events, "LUG");
#endif
    port_storage.logging = 0;
    assert_non_null(hk_pool_alloc(pool));
    assert_null(hk_pool_alloc(pool));
    assert_int_equal(hk_pool_check(pool), 0);
    port_teardown();
}

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static void blocking_alloc_times_out_on_an_empty_pool(void **state)
{
    hk_pool_t *pool = hk_pool_create(hk_bump_heap(backing()), 16, 2);
    hk_pool_sync_t sync = make_sync();
    hk_stats_t s;
    double t0;
    (void)state;
    assert_int_equal(hk_pool_set_sync(pool, &sync), HK_OK);
    assert_non_null(hk_pool_alloc_blocking(pool, 0));
    assert_non_null(hk_pool_alloc_blocking(pool, 0));
    t0 = now_ms();
    assert_null(hk_pool_alloc_blocking(pool, 30));
    assert_true(now_ms() - t0 >= 25.0);
    s = heap_stats(hk_pool_heap(pool));
    assert_int_equal(s.fail_count, 1);
    assert_int_equal(s.used_blocks, 2);
    assert_int_equal(hk_pool_check(pool), 0);
    port_teardown();
}

typedef struct waiter {
    hk_pool_t *pool;
    void *got;
} waiter_t;

static void *waiter_main(void *arg)
{
    waiter_t *w = (waiter_t *)arg;
    w->got = hk_pool_alloc_blocking(w->pool, HK_POOL_WAIT_FOREVER);
    return NULL;
}

static void blocking_alloc_wakes_on_release(void **state)
{
    hk_pool_t *pool = hk_pool_create(hk_bump_heap(backing()), 16, 1);
    hk_pool_sync_t sync = make_sync();
    struct timespec nap = {0, 30 * 1000000L};
    waiter_t w;
    pthread_t t;
    void *p;
    (void)state;
    assert_int_equal(hk_pool_set_sync(pool, &sync), HK_OK);
    p = hk_pool_alloc(pool);
    assert_non_null(p);
    w.pool = pool;
    w.got = NULL;
    assert_int_equal(pthread_create(&t, NULL, waiter_main, &w), 0);
    /* Release only once the waiter has gone to its semaphore: on a loaded
       machine the thread may start late, and a block released before it
       asks would prove nothing. */
    while (__atomic_load_n(&port_storage.blocking_takes, __ATOMIC_SEQ_CST) == 0) {
        nanosleep(&nap, NULL);
    }
    nanosleep(&nap, NULL);
    assert_int_equal(hk_pool_release(p), 0);
    pthread_join(t, NULL);
    assert_ptr_equal(w.got, p);
    assert_int_equal(hk_pool_check(pool), 0);
    port_teardown();
}

/* The seed's ITC benchmark in small: producers fill 127-byte blocks, consumers verify and free them. */
#define ITC_PRODUCERS 4
#define ITC_CONSUMERS 4
#define ITC_PER_PRODUCER 4000
#define ITC_BLOCK 127
#define ITC_POOL 16
#define ITC_QUEUE 64

typedef struct itc {
    hk_pool_t *pool;
    pthread_mutex_t mu;
    pthread_cond_t nonempty;
    unsigned char *queue[ITC_QUEUE];
    size_t head;
    size_t len;
    size_t consumed;
    size_t bad;
} itc_t;

typedef struct itc_arg {
    itc_t *itc;
    unsigned id;
} itc_arg_t;

static unsigned char itc_byte(unsigned id, unsigned seq, size_t i)
{
    return (unsigned char)(id * 131u + seq * 7u + (unsigned)i * 13u);
}

static void *itc_producer(void *arg)
{
    itc_arg_t *a = (itc_arg_t *)arg;
    itc_t *itc = a->itc;
    unsigned long seed = a->id + 1u;
    unsigned seq;
    for (seq = 0; seq < ITC_PER_PRODUCER; seq++) {
        unsigned char *p = hk_pool_alloc_blocking(itc->pool, HK_POOL_WAIT_FOREVER);
        size_t i;
        if (p == NULL) {
            pthread_mutex_lock(&itc->mu);
            itc->bad++;
            pthread_mutex_unlock(&itc->mu);
            continue;
        }
        p[0] = (unsigned char)a->id;
        memcpy(p + 1, &seq, sizeof(seq));
        for (i = 1 + sizeof(seq); i < ITC_BLOCK; i++) {
            p[i] = itc_byte(a->id, seq, i);
        }
        pthread_mutex_lock(&itc->mu);
        itc->queue[(itc->head + itc->len) % ITC_QUEUE] = p;
        itc->len++;
        pthread_cond_signal(&itc->nonempty);
        pthread_mutex_unlock(&itc->mu);
        seed = seed * 1103515245u + 12345u;
        if (((seed >> 16) % 8u) == 0) {
            sched_yield();
        }
    }
    return NULL;
}

static void *itc_consumer(void *arg)
{
    itc_arg_t *a = (itc_arg_t *)arg;
    itc_t *itc = a->itc;
    const size_t total = (size_t)ITC_PRODUCERS * ITC_PER_PRODUCER;
    for (;;) {
        unsigned char *got[10];
        size_t n = 0;
        size_t k;
        pthread_mutex_lock(&itc->mu);
        while (itc->len == 0 && itc->consumed < total) {
            pthread_cond_wait(&itc->nonempty, &itc->mu);
        }
        if (itc->len == 0) {
            pthread_cond_broadcast(&itc->nonempty);
            pthread_mutex_unlock(&itc->mu);
            return NULL;
        }
        while (n < 10 && itc->len > 0) {
            got[n++] = itc->queue[itc->head];
            itc->head = (itc->head + 1) % ITC_QUEUE;
            itc->len--;
        }
        itc->consumed += n;
        if (itc->consumed == total) {
            pthread_cond_broadcast(&itc->nonempty);
        }
        pthread_mutex_unlock(&itc->mu);
        for (k = 0; k < n; k++) {
            unsigned id = got[k][0];
            unsigned seq;
            size_t i;
            size_t wrong = 0;
            memcpy(&seq, got[k] + 1, sizeof(seq));
            for (i = 1 + sizeof(seq); i < ITC_BLOCK; i++) {
                wrong += got[k][i] != itc_byte(id, seq, i);
            }
            if (wrong != 0 || id >= ITC_PRODUCERS || hk_pool_release(got[k]) != 0) {
                pthread_mutex_lock(&itc->mu);
                itc->bad++;
                pthread_mutex_unlock(&itc->mu);
            }
        }
    }
}

static void blocking_producers_and_consumers(void **state)
{
    hk_pool_t *pool = hk_pool_create(hk_bump_heap(backing()), ITC_BLOCK, ITC_POOL);
    hk_pool_sync_t sync = make_sync();
    pthread_t threads[ITC_PRODUCERS + ITC_CONSUMERS];
    itc_arg_t args[ITC_PRODUCERS + ITC_CONSUMERS];
    itc_t itc;
    hk_stats_t s;
    const size_t total = (size_t)ITC_PRODUCERS * ITC_PER_PRODUCER;
    unsigned i;
    (void)state;
    assert_int_equal(hk_pool_set_sync(pool, &sync), HK_OK);
    memset(&itc, 0, sizeof(itc));
    itc.pool = pool;
    pthread_mutex_init(&itc.mu, NULL);
    pthread_cond_init(&itc.nonempty, NULL);
    for (i = 0; i < ITC_PRODUCERS + ITC_CONSUMERS; i++) {
        args[i].itc = &itc;
        args[i].id = i < ITC_PRODUCERS ? i : i - ITC_PRODUCERS;
        assert_int_equal(pthread_create(&threads[i], NULL, i < ITC_PRODUCERS ? itc_producer : itc_consumer, &args[i]),
                         0);
    }
    for (i = 0; i < ITC_PRODUCERS + ITC_CONSUMERS; i++) {
        pthread_join(threads[i], NULL);
    }
    assert_int_equal(itc.bad, 0);
    assert_int_equal(itc.consumed, total);
    s = heap_stats(hk_pool_heap(pool));
    assert_int_equal(s.alloc_count, total);
    assert_int_equal(s.free_count, total);
    assert_int_equal(s.fail_count, 0);
    assert_int_equal(s.used_blocks, 0);
    assert_int_equal(s.free_blocks, ITC_POOL);
    assert_true(s.peak_used > 0 && s.peak_used <= ITC_POOL * STRIDE(ITC_BLOCK));
    assert_int_equal(s.peak_used, s.capacity - s.min_ever_free);
    assert_int_equal(hk_pool_check(pool), 0);
    /* The semaphore is back at the pool size. */
    for (i = 0; i < ITC_POOL; i++) {
        assert_non_null(hk_pool_alloc(pool));
    }
    assert_null(hk_pool_alloc(pool));
    pthread_cond_destroy(&itc.nonempty);
    pthread_mutex_destroy(&itc.mu);
    port_teardown();
}
#endif

/* ================= pool sets ================= */

static const hk_pool_class_t three_classes[] = {{16, 4}, {64, 2}, {256, 1}};

static hk_poolset_t *make_set(const hk_pool_class_t *classes, size_t n)
{
    hk_status_t st = HK_EINVAL;
    hk_poolset_t *set = hk_poolset_init(set_mem, sizeof(set_mem), classes, n, &st);
    assert_non_null(set);
    assert_int_equal(st, HK_OK);
    return set;
}

static void poolset_init_rejects_bad_tables(void **state)
{
    hk_pool_class_t bad[3];
    hk_status_t st;
    (void)state;
    st = HK_OK;
    assert_null(hk_poolset_init(NULL, sizeof(set_mem), three_classes, 3, &st));
    assert_int_equal(st, HK_EINVAL);
    st = HK_OK;
    assert_null(hk_poolset_init(set_mem, sizeof(set_mem), NULL, 3, &st));
    assert_int_equal(st, HK_EINVAL);
    st = HK_OK;
    assert_null(hk_poolset_init(set_mem, sizeof(set_mem), three_classes, 0, &st));
    assert_int_equal(st, HK_EINVAL);
    memcpy(bad, three_classes, sizeof(bad));
    bad[1].block_size = 0;
    assert_null(hk_poolset_init(set_mem, sizeof(set_mem), bad, 3, &st));
    assert_int_equal(st, HK_EINVAL);
    memcpy(bad, three_classes, sizeof(bad));
    bad[2].count = 0;
    st = HK_OK;
    assert_null(hk_poolset_init(set_mem, sizeof(set_mem), bad, 3, &st));
    assert_int_equal(st, HK_EINVAL);
    memcpy(bad, three_classes, sizeof(bad));
    bad[0].block_size = 100; /* unsorted */
    st = HK_OK;
    assert_null(hk_poolset_init(set_mem, sizeof(set_mem), bad, 3, &st));
    assert_int_equal(st, HK_EINVAL);
    memcpy(bad, three_classes, sizeof(bad));
    bad[1].block_size = 16; /* duplicate */
    st = HK_OK;
    assert_null(hk_poolset_init(set_mem, sizeof(set_mem), bad, 3, &st));
    assert_int_equal(st, HK_EINVAL);
    assert_null(hk_poolset_init(set_mem, sizeof(set_mem), bad, 3, NULL));
}

/* init for smallest_arena(): the three classes. */
static hk_heap_t *init_three_classes(void *ctx, void *arena, size_t size, hk_status_t *st)
{
    hk_poolset_t *set = hk_poolset_init(arena, size, three_classes, 3, st);
    (void)ctx;
    return set != NULL ? hk_poolset_heap(set) : NULL;
}

static void poolset_init_refuses_small_arenas(void **state)
{
    hk_pool_class_t huge[1] = {{SIZE_MAX / 4, 8}};
    hk_status_t st;
    size_t smallest;
    (void)state;
    st = HK_OK;
    assert_null(hk_poolset_init(set_mem, 0, three_classes, 3, &st));
    assert_int_equal(st, HK_ETOOSMALL);
    st = HK_OK;
    assert_null(hk_poolset_init(set_mem, sizeof(set_mem), huge, 1, &st));
    assert_int_equal(st, HK_ETOOSMALL);
    smallest = smallest_arena(init_three_classes, NULL, set_mem, 4096);
    assert_true(smallest > 4 * STRIDE(16) + 2 * STRIDE(64) + STRIDE(256));
    /* What it needs: the set, the bump, each pool's control, and the blocks. */
    {
        hk_poolset_t *set = hk_poolset_init(set_mem, smallest, three_classes, 3, &st);
        hk_stats_t s = heap_stats(hk_poolset_heap(set));
        assert_int_equal(s.capacity, 4 * STRIDE(16) + 2 * STRIDE(64) + STRIDE(256));
        assert_true(s.capacity <= smallest);
        assert_walk_matches(hk_poolset_heap(set));
    }
}

static void poolset_malloc_picks_the_smallest_class(void **state)
{
    hk_poolset_t *set = make_set(three_classes, 3);
    hk_pool_t *c0 = hk_poolset_pool(set, 0);
    hk_pool_t *c1 = hk_poolset_pool(set, 1);
    hk_pool_t *c2 = hk_poolset_pool(set, 2);
    void *p;
    (void)state;
    assert_null(hk_poolset_pool(set, 3));
    p = hk_poolset_malloc(set, 0);
    assert_true(hk_pool_owns(c0, p));
    p = hk_poolset_malloc(set, MAXREQ(16));
    assert_true(hk_pool_owns(c0, p));
    p = hk_poolset_malloc(set, MAXREQ(16) + 1);
    assert_true(hk_pool_owns(c1, p));
    p = hk_poolset_malloc(set, MAXREQ(64) + 1);
    assert_true(hk_pool_owns(c2, p));
    assert_int_equal(hk_poolset_usable_size(set, p), USABLE(256, MAXREQ(64) + 1));
    assert_null(hk_poolset_malloc(set, MAXREQ(256) + 1));
    assert_null(hk_poolset_malloc(set, SIZE_MAX));
    assert_int_equal(heap_stats(hk_poolset_heap(set)).fail_count, 0); /* direct calls count no failures */
    assert_null(hk_malloc(hk_poolset_heap(set), MAXREQ(256) + 1));
    assert_null(hk_malloc(hk_poolset_heap(set), SIZE_MAX));
    assert_int_equal(heap_stats(hk_poolset_heap(set)).fail_count, 2);
    /* Class 0 has two left; then small requests fall through to class 1. */
    assert_true(hk_pool_owns(c0, hk_poolset_malloc(set, 1)));
    assert_true(hk_pool_owns(c0, hk_poolset_malloc(set, 1)));
    assert_true(hk_pool_owns(c1, hk_poolset_malloc(set, 1)));
    assert_null(hk_malloc(hk_poolset_heap(set), 1)); /* class 2 is empty too */
    assert_int_equal(heap_stats(hk_poolset_heap(set)).fail_count, 3);
    assert_walk_matches(hk_poolset_heap(set));
}

static void poolset_stats_are_the_pools_summed(void **state)
{
    hk_poolset_t *set = make_set(three_classes, 3);
    hk_heap_t *heap = hk_poolset_heap(set);
    hk_stats_t s = heap_stats(heap);
    void *a;
    void *b;
    void *c;
    (void)state;
    assert_int_equal(s.capacity, 4 * STRIDE(16) + 2 * STRIDE(64) + STRIDE(256));
    assert_int_equal(s.free_bytes, s.capacity);
    assert_int_equal(s.free_blocks, 7);
    assert_int_equal(s.largest_free, STRIDE(256));
    assert_int_equal(s.smallest_free, STRIDE(16));
    a = hk_poolset_malloc(set, 200);
    b = hk_poolset_malloc(set, 3);
    c = hk_poolset_malloc(set, 30);
    s = heap_stats(heap);
    assert_int_equal(s.used_requested, 233);
    assert_int_equal(s.used_granted, HK_CANARIES ? 233 : MAXREQ(256) + MAXREQ(16) + MAXREQ(64));
    assert_int_equal(s.free_bytes, s.capacity - STRIDE(256) - STRIDE(16) - STRIDE(64));
    assert_int_equal(s.largest_free, STRIDE(64)); /* class 2 is empty */
    assert_int_equal(s.smallest_free, STRIDE(16));
    assert_int_equal(heap_stats(hk_pool_heap(hk_poolset_pool(set, 1))).used_requested, 30);
    hk_poolset_free(set, a);
    hk_poolset_free(set, b);
    hk_poolset_free(set, c);
    s = heap_stats(heap);
    assert_int_equal(s.free_count, 3);
    assert_int_equal(s.free_bytes, s.capacity);
    assert_int_equal(s.peak_used, STRIDE(256) + STRIDE(16) + STRIDE(64)); /* gross: capacity - min_ever_free */
    assert_int_equal(s.min_ever_free, s.capacity - s.peak_used);
    assert_walk_matches(heap);
}

static void poolset_realloc_keeps_or_moves(void **state)
{
    hk_poolset_t *set = make_set(three_classes, 3);
    hk_heap_t *heap = hk_poolset_heap(set);
    unsigned char *p = hk_poolset_malloc(set, 10);
    unsigned char *q;
    hk_stats_t s;
    size_t i;
    (void)state;
    for (i = 0; i < 10; i++) {
        p[i] = (unsigned char)(i + 1);
    }
    assert_ptr_equal(hk_realloc(hk_poolset_heap(set), p, MAXREQ(16)), p);
    assert_int_equal(heap_stats(heap).used_requested, MAXREQ(16));
    q = hk_realloc(hk_poolset_heap(set), p, 100);
    assert_true(hk_pool_owns(hk_poolset_pool(set, 2), q));
    for (i = 0; i < 10; i++) {
        assert_int_equal(q[i], i + 1);
    }
    s = heap_stats(heap);
    assert_int_equal(s.realloc_count, 2);
    assert_int_equal(s.alloc_count, 2);
    assert_int_equal(s.free_count, 1);
    assert_int_equal(s.used_requested, 100);
    /* Shrinking stays in the big block. */
    assert_ptr_equal(hk_realloc(hk_poolset_heap(set), q, 1), q);
    assert_null(hk_realloc(hk_poolset_heap(set), q, 1000));
    assert_int_equal(heap_stats(heap).fail_count, 1);
    assert_int_equal(q[0], 1);
    assert_int_equal(hk_poolset_usable_size(set, q), USABLE(256, 1));
    assert_null(hk_realloc(hk_poolset_heap(set), q, 0));
    assert_int_equal(heap_stats(heap).used_blocks, 0);
    p = hk_realloc(hk_poolset_heap(set), NULL, 5);
    assert_true(hk_pool_owns(hk_poolset_pool(set, 0), p));
    assert_walk_matches(heap);
}

#if HK_HARDENING >= 1
static void poolset_misuse_is_reported_and_harmless(void **state)
{
    hk_poolset_t *set = make_set(three_classes, 3);
    hk_pool_t *c1 = hk_poolset_pool(set, 1);
    hk_heap_t *heap = hk_poolset_heap(set);
    error_log_t log;
    unsigned char *a = hk_poolset_malloc(set, 60);
    unsigned char *b = hk_poolset_malloc(set, 8);
    unsigned char local[32];
    uintptr_t saved;
    (void)state;
    record_errors(heap, &log);
    memset(a, 0x3A, 60);
    hk_poolset_free(set, b);
    assert_misuse_harmless(heap, &log, b, HK_ERR_DOUBLE_FREE);
    assert_misuse_harmless(heap, &log, a + HK_ALIGN, HK_ERR_INTERIOR_PTR);
    assert_misuse_harmless(heap, &log, a + 3, HK_ERR_INTERIOR_PTR);
    assert_misuse_harmless(heap, &log, c1, HK_ERR_INTERIOR_PTR); /* a pool's control struct, inside the span */
    assert_misuse_harmless(heap, &log, local, HK_ERR_FOREIGN_PTR);
    assert_misuse_harmless(heap, &log, set, HK_ERR_FOREIGN_PTR);
    /* The header's last byte: the top of the requested size. */
    memcpy(&saved, a - sizeof(uintptr_t), sizeof(saved));
    a[-1] ^= 0x10;
    assert_misuse_harmless(heap, &log, a, HK_ERR_CORRUPT);
    assert_int_equal(hk_poolset_check(set), HK_CHECK_SIZE);
    memcpy(a - sizeof(uintptr_t), &saved, sizeof(saved));
    assert_int_equal(hk_poolset_check(set), 0);
    /* Pool-level calls on a pool of the set report on the set too. */
    hk_pool_free(c1, b);
    assert_int_equal(log.last, HK_ERR_FOREIGN_PTR);
    assert_int_equal(hk_pool_release(b), HK_ERR_DOUBLE_FREE);
    assert_int_equal(log.last, HK_ERR_DOUBLE_FREE);
    assert_int_equal(atomic_load(&log.count), 23);
    assert_int_equal(a[59], 0x3A);
    hk_poolset_free(set, a);
    assert_walk_matches(hk_poolset_heap(set));
}
#endif

static void poolset_pool_operations_keep_the_set_counters(void **state)
{
    hk_poolset_t *set = make_set(three_classes, 3);
    hk_heap_t *heap = hk_poolset_heap(set);
    hk_pool_t *c1 = hk_poolset_pool(set, 1);
    void *p = hk_pool_alloc(c1);
    void *q = hk_poolset_malloc(set, 1);
    hk_stats_t s = heap_stats(heap);
    (void)state;
    assert_int_equal(s.used_blocks, 2);
    assert_int_equal(s.used_requested, 65);
    assert_int_equal(hk_poolset_check(set), 0);
    assert_ptr_equal(hk_realloc(hk_pool_heap(c1), p, 3), p);
    assert_int_equal(heap_stats(heap).used_requested, 4);
    assert_int_equal(hk_pool_release(q), 0);
    hk_pool_free(c1, p);
    s = heap_stats(heap);
    assert_int_equal(s.used_blocks, 0);
    assert_int_equal(s.free_count, 2);
    assert_int_equal(s.free_bytes, s.capacity);
    assert_walk_matches(heap);
    hk_pool_destroy(c1); /* a set's pool is not destroyed */
    assert_int_equal(hk_poolset_check(set), 0);
}

static void poolset_check_catches_bad_counters(void **state)
{
    hk_poolset_t *set = make_set(three_classes, 3);
    hk_heap_t *heap = hk_poolset_heap(set);
    (void)state;
    assert_non_null(hk_poolset_malloc(set, 20));
    assert_int_equal(hk_poolset_check(set), 0);
    /* The counters a set keeps per call: its free bytes and their low-water mark; a pool's capacity. */
    assert_check_notices(heap, &heap->stats.free_bytes, 1);
    assert_check_notices(heap, &heap->stats.min_ever_free, 1);
    assert_check_notices(heap, &hk_pool_heap(hk_poolset_pool(set, 1))->stats.capacity, 1);
    assert_int_equal(hk_poolset_check(set), 0);
}

static void poolset_uniform_interface(void **state)
{
    hk_poolset_t *set;
    hk_heap_t *heap;
    unsigned char *p;
    size_t i;
    (void)state;
    memset(set_mem, 0xFF, sizeof(set_mem)); /* calloc must clear what it hands out */
    set = make_set(three_classes, 3);
    heap = hk_poolset_heap(set);
    assert_string_equal(hk_name(heap), "poolset");
    assert_ptr_equal(heap, (hk_heap_t *)set);
    assert_null(heap->ops->aligned_alloc);
    assert_null(hk_aligned_alloc(heap, 2 * HK_ALIGN, 8));
    assert_null(hk_poolset_aligned_alloc(set, 2 * HK_ALIGN, 8));
    assert_null(hk_poolset_aligned_alloc(set, 3, 8));
    assert_int_equal(heap_stats(heap).fail_count, 1); /* direct calls count no failures */
    assert_null(hk_aligned_alloc(heap, 3, 8));
    assert_int_equal(heap_stats(heap).fail_count, 2);
    assert_non_null(hk_poolset_aligned_alloc(set, HK_ALIGN, 8));
    p = hk_calloc(heap, 50, 5);
    assert_non_null(p);
    for (i = 0; i < 250; i++) {
        assert_int_equal(p[i], 0);
    }
    assert_true(hk_owns(heap, p));
    assert_false(hk_owns(heap, set));
    assert_false(hk_owns(heap, set_mem + sizeof(set_mem) - 1));
    assert_int_equal(hk_usable_size(heap, p), USABLE(256, 250));
    hk_free(heap, p);
    assert_walk_matches(heap);
}

/* ================= the lock-free pool ================= */

static hk_lfpool_t *make_lf(void *mem, size_t size, size_t block)
{
    hk_status_t st = HK_EINVAL;
    hk_lfpool_t *pool = hk_lfpool_init(mem, size, block, &st);
    assert_non_null(pool);
    assert_int_equal(st, HK_OK);
    return pool;
}

/* init for smallest_arena(): 64-byte blocks. */
static hk_heap_t *init_lf64(void *ctx, void *arena, size_t size, hk_status_t *st)
{
    hk_lfpool_t *pool = hk_lfpool_init(arena, size, 64, st);
    (void)ctx;
    return pool != NULL ? hk_lfpool_heap(pool) : NULL;
}

static void lfpool_init_rejects_bad_arguments(void **state)
{
    hk_status_t st;
    size_t size;
    hk_lfpool_t *pool;
    (void)state;
    st = HK_OK;
    assert_null(hk_lfpool_init(NULL, 4096, 64, &st));
    assert_int_equal(st, HK_EINVAL);
    st = HK_OK;
    assert_null(hk_lfpool_init(lf_mem, 4096, 0, &st));
    assert_int_equal(st, HK_EINVAL);
    st = HK_OK;
    assert_null(hk_lfpool_init(lf_mem, sizeof(lf_mem), HK_LFPOOL_MAX_BLOCK_SIZE + 1, &st));
    assert_int_equal(st, HK_EINVAL);
    assert_non_null(hk_lfpool_init(lf_mem, sizeof(lf_mem), HK_LFPOOL_MAX_BLOCK_SIZE, &st));
    st = HK_OK;
    assert_null(hk_lfpool_init(lf_mem, 0, 64, &st));
    assert_int_equal(st, HK_ETOOSMALL);
    assert_null(hk_lfpool_init(lf_mem, 64, 64, NULL));
    /* The smallest (misaligned) arena that works holds one block. */
    size = smallest_arena(init_lf64, NULL, lf_mem + 1, 4096);
    pool = make_lf(lf_mem + 1, size, 64);
    assert_int_equal(heap_stats(hk_lfpool_heap(pool)).capacity, LF_STRIDE(64));
    assert_true((uintptr_t)pool % HK_ALIGN == 0);
    assert_non_null(hk_lfpool_alloc(pool));
    assert_null(hk_lfpool_alloc(pool));
}

static void lfpool_caps_the_block_count(void **state)
{
    hk_lfpool_t *pool = make_lf(lf_mem, sizeof(lf_mem), 8);
    hk_stats_t s = heap_stats(hk_lfpool_heap(pool));
    (void)state;
    assert_int_equal(s.capacity, (size_t)HK_LFPOOL_MAX_BLOCKS * LF_STRIDE(8));
    assert_int_equal(s.free_blocks, HK_LFPOOL_MAX_BLOCKS);
    assert_int_equal(hk_lfpool_check(pool), 0);
}

static void lfpool_alloc_and_free(void **state)
{
    hk_lfpool_t *pool = make_lf(lf_mem, 4096, 100);
    hk_heap_t *heap = hk_lfpool_heap(pool);
    hk_stats_t s = heap_stats(heap);
    size_t n = s.free_blocks;
    unsigned char *first;
    unsigned char *p;
    unsigned char *q;
    size_t i;
    (void)state;
    assert_string_equal(hk_name(heap), "lfpool");
    assert_ptr_equal(heap, (hk_heap_t *)pool);
    assert_int_equal(s.capacity, n * LF_STRIDE(100));
    assert_true(n * (LF_STRIDE(100) + 4) + 400 >= 4096);
    first = hk_lfpool_alloc(pool);
    assert_non_null(first);
    assert_int_equal((uintptr_t)first % HK_ALIGN, 0);
    assert_int_equal(hk_lfpool_usable_size(pool, first), LF_USABLE(100, 100));
    for (i = 1; i < n; i++) {
        p = hk_lfpool_malloc(pool, i % 50);
        assert_ptr_equal(p, first + i * LF_STRIDE(100)); /* fresh list in address order */
        memset(p, (int)i, hk_lfpool_usable_size(pool, p));
    }
    assert_null(hk_lfpool_alloc(pool));
    assert_null(hk_lfpool_malloc(pool, LF_MAXREQ(100) + 1));
    assert_int_equal(heap_stats(heap).fail_count, 0); /* direct calls count no failures */
    assert_null(hk_malloc(heap, 100));
    assert_null(hk_malloc(heap, LF_MAXREQ(100) + 1));
    s = heap_stats(heap);
    assert_int_equal(s.fail_count, 2);
    assert_int_equal(s.used_blocks, n);
    assert_stats_full(&s);
    assert_int_equal(s.min_ever_free, 0);
    assert_int_equal(s.peak_used, n * LF_STRIDE(100));
    p = first + 2 * LF_STRIDE(100);
    q = first + 1 * LF_STRIDE(100);
    hk_lfpool_free(pool, p);
    hk_lfpool_free(pool, q);
    assert_ptr_equal(hk_lfpool_malloc(pool, 7), q); /* LIFO */
    assert_ptr_equal(hk_lfpool_malloc(pool, 7), p);
    assert_int_equal(first[3 * LF_STRIDE(100)], 3);
    s = heap_stats(heap);
    assert_int_equal(s.alloc_count, n + 2);
    assert_int_equal(s.free_count, 2);
    for (i = 0; i < n; i++) {
        hk_lfpool_free(pool, first + i * LF_STRIDE(100));
    }
    s = heap_stats(heap);
    assert_int_equal(s.used_blocks, 0);
    assert_int_equal(s.used_requested, 0);
    assert_int_equal(s.free_bytes, s.capacity);
    assert_int_equal(s.largest_free, LF_STRIDE(100));
    assert_int_equal(s.smallest_free, LF_STRIDE(100));
    assert_walk_matches(heap);
}

static void lfpool_counts_requested_and_reallocs_in_place(void **state)
{
    hk_lfpool_t *pool = make_lf(lf_mem, 4096, 64);
    hk_heap_t *heap = hk_lfpool_heap(pool);
    unsigned char *a = hk_lfpool_malloc(pool, 10);
    unsigned char *b = hk_lfpool_malloc(pool, 0);
    hk_stats_t s = heap_stats(heap);
    (void)state;
    assert_int_equal(s.used_requested, 10);
    assert_int_equal(s.used_granted, HK_CANARIES ? 10 : 2 * LF_MAXREQ(64));
    memset(a, 0x5C, 10);
    assert_ptr_equal(hk_realloc(hk_lfpool_heap(pool), a, 64), a);
    assert_int_equal(heap_stats(heap).used_requested, 64);
    assert_int_equal(heap_stats(heap).realloc_count, 1);
    assert_null(hk_realloc(hk_lfpool_heap(pool), a, LF_MAXREQ(64) + 1));
    assert_int_equal(heap_stats(heap).fail_count, 1);
    assert_int_equal(a[9], 0x5C);
    assert_null(hk_realloc(hk_lfpool_heap(pool), b, 0));
    assert_ptr_equal(hk_realloc(hk_lfpool_heap(pool), NULL, 3), b);
    s = heap_stats(heap);
    assert_int_equal(s.used_requested, 67);
    assert_int_equal(s.free_count, 1);
    assert_int_equal(s.alloc_count, 3);
    assert_int_equal(s.realloc_count, 1);
    assert_null(hk_aligned_alloc(heap, 2 * HK_ALIGN, 8));
    assert_int_equal(heap_stats(heap).fail_count, 2);
    assert_true(hk_owns(heap, a));
    assert_false(hk_owns(heap, pool));
    assert_walk_matches(heap);
}

#if HK_HARDENING >= 1
static void lfpool_misuse_is_reported_and_harmless(void **state)
{
    hk_lfpool_t *pool = make_lf(lf_mem, 4096, 32);
    hk_heap_t *heap = hk_lfpool_heap(pool);
    error_log_t log;
    unsigned char *a = hk_lfpool_malloc(pool, 20);
    unsigned char *b = hk_lfpool_malloc(pool, 20);
    unsigned char local[32];
    _Atomic uint32_t *word = &pool->state[0]; /* a's state word (the test sees the pool's insides) */
    (void)state;
    record_errors(heap, &log);
    hk_lfpool_free(pool, b);
    assert_misuse_harmless(heap, &log, b, HK_ERR_DOUBLE_FREE);
    assert_misuse_harmless(heap, &log, a + HK_ALIGN, HK_ERR_INTERIOR_PTR);
    assert_misuse_harmless(heap, &log, a + 1, HK_ERR_INTERIOR_PTR);
    assert_misuse_harmless(heap, &log, local, HK_ERR_FOREIGN_PTR);
    assert_misuse_harmless(heap, &log, pool, HK_ERR_FOREIGN_PTR);
    assert_int_equal(hk_lfpool_check(pool), HK_CHECK_OK);
    assert_int_equal(atomic_load(word), LF_USED | (uint32_t)(LF_STRIDE(32) - 20));
    *word ^= 0x01000000u;
    assert_misuse_harmless(heap, &log, a, HK_ERR_CORRUPT);
    assert_int_equal(hk_lfpool_check(pool), HK_CHECK_STATE);
    *word ^= 0x01000000u;
    assert_int_equal(hk_lfpool_check(pool), HK_CHECK_OK);
    hk_lfpool_free(pool, a);
    assert_int_equal(atomic_load(&log.count), 18);
    assert_walk_matches(heap);
}
#endif

static void (*preempt_hook)(hk_lfpool_t *pool);

static void lf_preempt(hk_lfpool_t *pool)
{
    void (*hook)(hk_lfpool_t *) = preempt_hook;
    if (hook != NULL) {
        preempt_hook = NULL; /* once, and not inside itself */
        hook(pool);
    }
}

static unsigned char *isr_held;

/* The interrupt: take the head and the next block, give the head back. */
static void isr_pop_pop_push(hk_lfpool_t *pool)
{
    unsigned char *head = hk_lfpool_malloc(pool, 8);
    isr_held = hk_lfpool_malloc(pool, 8);
    assert_non_null(head);
    assert_non_null(isr_held);
    hk_lfpool_free(pool, head);
}

static void lfpool_pop_is_aba_safe(void **state)
{
    hk_lfpool_t *pool = make_lf(lf_mem, 4096, 16);
    unsigned char *b0;
    unsigned char *task;
    unsigned char *next;
    (void)state;
    b0 = hk_lfpool_alloc(pool);
    hk_lfpool_free(pool, b0); /* head = block 0, then block 1 */
    /* The task reads head = block 0 and next = block 1; the ISR then holds block 1 and puts block 0 back. */
    preempt_hook = isr_pop_pop_push;
    task = hk_lfpool_malloc(pool, 8);
    assert_null(preempt_hook);
    assert_ptr_equal(task, b0);
    assert_ptr_equal(isr_held, b0 + LF_STRIDE(16));
    /* An untagged head would now name the ISR's block as free. */
    assert_int_equal(hk_lfpool_check(pool), 0);
    next = hk_lfpool_malloc(pool, 8);
    assert_ptr_not_equal(next, isr_held);
    assert_ptr_not_equal(next, task);
    assert_int_equal(heap_stats(hk_lfpool_heap(pool)).used_blocks, 3);
    hk_lfpool_free(pool, next);
    hk_lfpool_free(pool, task);
    hk_lfpool_free(pool, isr_held);
    assert_walk_matches(hk_lfpool_heap(pool));
}

#if HEAPKIT_TEST_THREADS
/* Threads allocate, fill, verify and free in loops; a small pool keeps the head contended. */
#define LF_THREADS 8
#define LF_ITERS 30000
#define LF_HOLD 6
#define LF_BLOCK 48

typedef struct lf_arg {
    hk_lfpool_t *pool;
    unsigned id;
    size_t allocs;
    size_t failures;
    size_t bad;
} lf_arg_t;

static void *lf_worker(void *arg)
{
    lf_arg_t *a = (lf_arg_t *)arg;
    unsigned char *held[LF_HOLD];
    unsigned char tag[LF_HOLD];
    size_t len[LF_HOLD]; /* what each block may hold: all of it, or at level 2 its request */
    size_t n = 0;
    unsigned long x = a->id * 7919u + 1u;
    int i;
    for (i = 0; i < LF_ITERS; i++) {
        x = x * 1103515245u + 12345u;
        if (n < LF_HOLD && ((x >> 16) % 3u) != 0) {
            size_t want = 1 + (x >> 20) % LF_BLOCK;
            unsigned char *p = hk_lfpool_malloc(a->pool, want);
            if (p == NULL) {
                a->failures++;
                continue;
            }
            a->allocs++;
            tag[n] = (unsigned char)(a->id * 31u + (unsigned)i);
            len[n] = HK_CANARIES ? want : LF_BLOCK;
            memset(p, tag[n], len[n]);
            held[n++] = p;
        } else if (n > 0) {
            size_t k = (size_t)(x >> 18) % n;
            size_t j;
            for (j = 0; j < len[k]; j++) {
                if (held[k][j] != tag[k]) {
                    a->bad++;
                    break;
                }
            }
            hk_lfpool_free(a->pool, held[k]);
            held[k] = held[--n];
            tag[k] = tag[n];
            len[k] = len[n];
        }
    }
    while (n > 0) {
        hk_lfpool_free(a->pool, held[--n]);
    }
    return NULL;
}

static void lfpool_survives_threads(void **state)
{
    hk_lfpool_t *pool = make_lf(lf_mem, 40 * (LF_BLOCK + 4) + 400, LF_BLOCK);
    hk_heap_t *heap = hk_lfpool_heap(pool);
    pthread_t t[LF_THREADS];
    lf_arg_t args[LF_THREADS];
    error_log_t log;
    hk_stats_t s;
    size_t allocs = 0;
    unsigned i;
    (void)state;
    record_errors(heap, &log);
    for (i = 0; i < LF_THREADS; i++) {
        memset(&args[i], 0, sizeof(args[i]));
        args[i].pool = pool;
        args[i].id = i;
        assert_int_equal(pthread_create(&t[i], NULL, lf_worker, &args[i]), 0);
    }
    for (i = 0; i < LF_THREADS; i++) {
        pthread_join(t[i], NULL);
        assert_int_equal(args[i].bad, 0);
        allocs += args[i].allocs;
    }
    s = heap_stats(heap);
    assert_int_equal(atomic_load(&log.count), 0);
    assert_int_equal(s.alloc_count, allocs);
    assert_int_equal(s.free_count, allocs);
    assert_int_equal(s.fail_count, 0); /* the workers' direct calls count no failures */
    assert_int_equal(s.used_blocks, 0);
    assert_int_equal(s.used_requested, 0);
    assert_int_equal(s.free_bytes, s.capacity);
    assert_true(s.peak_used <= s.capacity);
    assert_walk_matches(heap);
}

#if HK_HARDENING >= 1
/* Two contexts free the same block at once: one wins, the other is reported. */
#define RACE_ROUNDS 2000

typedef struct race {
    hk_lfpool_t *pool;
    pthread_barrier_t go;
    void *volatile target;
} race_t;

static void *race_main(void *arg)
{
    race_t *r = (race_t *)arg;
    int i;
    for (i = 0; i < RACE_ROUNDS; i++) {
        pthread_barrier_wait(&r->go);
        hk_lfpool_free(r->pool, r->target);
        pthread_barrier_wait(&r->go);
    }
    return NULL;
}

static void lfpool_catches_racing_double_frees(void **state)
{
    race_t r;
    error_log_t log;
    pthread_t t[2];
    hk_stats_t s;
    int i;
    (void)state;
    r.pool = make_lf(lf_mem, 4096, 16);
    record_errors(hk_lfpool_heap(r.pool), &log);
    pthread_barrier_init(&r.go, NULL, 3);
    assert_int_equal(pthread_create(&t[0], NULL, race_main, &r), 0);
    assert_int_equal(pthread_create(&t[1], NULL, race_main, &r), 0);
    for (i = 0; i < RACE_ROUNDS; i++) {
        r.target = hk_lfpool_alloc(r.pool);
        assert_non_null(r.target);
        pthread_barrier_wait(&r.go);
        pthread_barrier_wait(&r.go);
        assert_int_equal(atomic_load(&log.count), i + 1);
        assert_int_equal(log.last, HK_ERR_DOUBLE_FREE);
    }
    pthread_join(t[0], NULL);
    pthread_join(t[1], NULL);
    pthread_barrier_destroy(&r.go);
    s = heap_stats(hk_lfpool_heap(r.pool));
    assert_int_equal(s.free_count, RACE_ROUNDS);
    assert_int_equal(s.used_blocks, 0);
    assert_int_equal(s.error_count, RACE_ROUNDS);
    assert_walk_matches(hk_lfpool_heap(r.pool));
}
#endif
#endif

/* ================= hardening (HK_HARDENING) ================= */

#if HK_HARDENING >= 1
/*
 * The damage tests go through heap->ops, the allocators' own calls (no
 * lock, and none of level 3's checks around uniform calls, which would
 * report the damage again), and each ends as the brief of the levels asks:
 * the error hook has fired, and the heap still hands out blocks that
 * overlap neither each other nor the blocks that stay where they were.
 */
#define OVERRUN_MAX 16u
#define FILL 0xA5u

typedef struct region {
    const unsigned char *lo;
    size_t n;
} region_t;

static int overlaps(const unsigned char *p, size_t n, const region_t *r)
{
    return p < r->lo + r->n && r->lo < p + n;
}

/*
 * Allocate requests of `request` bytes until none is left (at most 64),
 * fill each, check that none overlaps another or one of the kept regions
 * (blocks still held, or damaged), that every fill survives, and free them.
 * Returns how many it got.
 */
static size_t churn_without_overlap(hk_heap_t *heap, size_t request, const region_t *kept, size_t n_kept)
{
    unsigned char *got[64];
    size_t len[64];
    size_t n = 0;
    size_t i;
    size_t j;
    while (n < 64 && (got[n] = heap->ops->malloc(heap, request)) != NULL) {
        len[n] = heap->ops->usable_size(heap, got[n]);
        assert_true(len[n] >= request);
        fill_pattern(got[n], len[n], (unsigned)n + 7u);
        n++;
    }
    for (i = 0; i < n; i++) {
        region_t mine = {got[i], len[i]};
        for (j = 0; j < n_kept; j++) {
            assert_false(overlaps(got[i], len[i], &kept[j]));
        }
        for (j = i + 1; j < n; j++) {
            assert_false(overlaps(got[j], len[j], &mine));
        }
    }
    for (i = 0; i < n; i++) {
        assert_pattern(got[i], len[i], (unsigned)i + 7u);
        heap->ops->free(heap, got[i]);
    }
    return n;
}

/* The whole block of a pool or set payload, header included. */
static region_t pool_block(const unsigned char *payload, size_t stride)
{
    region_t r;
    r.lo = payload - HDR;
    r.n = stride;
    return r;
}

/*
 * An overrun of n bytes (1..16) past usable_size of a block into the next,
 * which is in use. Level 1: the overrun reaches the next block's owner word
 * (the header's first), so freeing that block reports HK_ERR_CORRUPT and
 * leaves it alone. Level 2: it reaches the canary first (at least
 * HK_CANARY_ROOM bytes, here one HK_ALIGN), so freeing the overrun block
 * reports; past the canary the next header too.
 */
static void overrun_into_used(hk_heap_t *heap, unsigned char *a, unsigned char *b, size_t stride, size_t n)
{
    error_log_t log;
    size_t usable = heap->ops->usable_size(heap, a);
    int want = 0;
    region_t kept[2];
    size_t n_kept = 0;
    record_errors(heap, &log);
    assert_ptr_equal(b, a + stride);
    memset(a + usable, FILL, n);
    heap->ops->free(heap, b);
    if (!HK_CANARIES || usable + n > stride - HDR) {
        want++; /* b's header was hit */
        kept[n_kept++] = pool_block(b, stride);
    }
    heap->ops->free(heap, a);
    if (HK_CANARIES) {
        want++; /* a's canary was hit */
        kept[n_kept++] = pool_block(a, stride);
    }
    assert_int_equal(atomic_load(&log.count), want);
    assert_int_equal(log.last, HK_ERR_CORRUPT);
    assert_int_not_equal(heap->ops->check(heap), HK_CHECK_OK); /* the damage is still there */
    assert_true(churn_without_overlap(heap, 8, kept, n_kept) > 0);
    assert_int_equal(atomic_load(&log.count), want);
}

/*
 * The same overrun into a free block. Level 1: malloc finds the block's
 * header damaged before handing it out: reported, the list dropped, the
 * block never handed out. Level 2: an overrun that stays in the canary
 * leaves the next block intact (it may be handed out); freeing the overrun
 * block reports.
 */
static void overrun_into_free(hk_heap_t *heap, unsigned char *a, unsigned char *b, size_t stride, size_t n,
                              size_t request)
{
    error_log_t log;
    size_t usable = heap->ops->usable_size(heap, a);
    int hit_b = !HK_CANARIES || usable + n > stride - HDR;
    region_t kept[2];
    size_t n_kept = 0;
    unsigned char *p;
    record_errors(heap, &log);
    assert_ptr_equal(b, a + stride);
    heap->ops->free(heap, b);
    memset(a + usable, FILL, n);
    p = heap->ops->malloc(heap, request);
    if (hit_b) {
        assert_int_equal(atomic_load(&log.count), 1);
        assert_int_equal(log.last, HK_ERR_CORRUPT);
        assert_ptr_equal(log.ptr, b);
        assert_ptr_not_equal(p, b);
        kept[n_kept++] = pool_block(b, stride);
    }
    if (HK_CANARIES) {
        kept[n_kept++] = pool_block(a, stride); /* its canary was hit: freeing it will be refused */
    }
    if (p != NULL) {
        region_t mine = {p, request};
        assert_false(overlaps(a, stride - HDR, &mine));
        heap->ops->free(heap, p);
    }
    heap->ops->free(heap, a);
    assert_int_equal(atomic_load(&log.count), hit_b + (HK_CANARIES ? 1 : 0));
    assert_int_equal(log.last, HK_ERR_CORRUPT);
    if (!HK_CANARIES) {
        /* The damaged list is out of service: what is left is consistent again. */
        assert_int_equal(heap->ops->check(heap), HK_CHECK_OK);
    }
    churn_without_overlap(heap, request, kept, n_kept);
}

static void pool_overrun_into_the_next_block_is_caught(void **state)
{
    size_t n;
    (void)state;
    for (n = 1; n <= OVERRUN_MAX; n++) {
        hk_pool_t *pool = hk_pool_create(hk_bump_heap(backing()), 32, 8);
        hk_heap_t *heap = hk_pool_heap(pool);
        unsigned char *a = hk_pool_malloc(pool, hk_pool_block_size(pool));
        unsigned char *b = hk_pool_malloc(pool, 8);
        overrun_into_used(heap, a, b, STRIDE(32), n);
        pool = hk_pool_create(hk_bump_heap(backing()), 32, 8);
        heap = hk_pool_heap(pool);
        a = hk_pool_malloc(pool, hk_pool_block_size(pool));
        b = hk_pool_malloc(pool, 8);
        assert_non_null(hk_pool_malloc(pool, 8));
        overrun_into_free(heap, a, b, STRIDE(32), n, 8);
    }
}

static void poolset_overrun_into_the_next_block_is_caught(void **state)
{
    size_t n;
    (void)state;
    for (n = 1; n <= OVERRUN_MAX; n++) {
        hk_poolset_t *set = make_set(three_classes, 3);
        hk_heap_t *heap = hk_poolset_heap(set);
        unsigned char *a = hk_poolset_malloc(set, MAXREQ(16));
        unsigned char *b = hk_poolset_malloc(set, 1);
        overrun_into_used(heap, a, b, STRIDE(16), n);
        set = make_set(three_classes, 3);
        heap = hk_poolset_heap(set);
        a = hk_poolset_malloc(set, MAXREQ(16));
        b = hk_poolset_malloc(set, 1);
        assert_non_null(hk_poolset_malloc(set, 1));
        overrun_into_free(heap, a, b, STRIDE(16), n, 1);
    }
}

/*
 * Writes over the first bytes of a freed block, its header (the owner word),
 * then malloc: the block is not handed out, the damage is reported.
 */
static void write_over_freed_header(hk_heap_t *heap, unsigned char *b, size_t stride, size_t k, size_t request)
{
    error_log_t log;
    unsigned char *p;
    region_t kept;
    record_errors(heap, &log);
    heap->ops->free(heap, b);
    memset(b - HDR, 0, k);
    p = heap->ops->malloc(heap, request);
    assert_int_equal(atomic_load(&log.count), 1);
    assert_int_equal(log.last, HK_ERR_CORRUPT);
    assert_ptr_equal(log.ptr, b);
    assert_ptr_not_equal(p, b);
    assert_int_equal(heap->ops->check(heap), HK_CHECK_OK);
    if (p != NULL) {
        heap->ops->free(heap, p);
    }
    kept = pool_block(b, stride);
    churn_without_overlap(heap, request, &kept, 1);
    assert_int_equal(atomic_load(&log.count), 1);
}

static void pool_write_over_a_freed_header_is_caught(void **state)
{
    size_t k;
    (void)state;
    for (k = 1; k <= HDR; k++) {
        hk_pool_t *pool = hk_pool_create(hk_bump_heap(backing()), 24, 6);
        hk_pool_t *set_pool;
        hk_poolset_t *set;
        unsigned char *b;
        assert_non_null(hk_pool_malloc(pool, 8));
        b = hk_pool_malloc(pool, 8);
        write_over_freed_header(hk_pool_heap(pool), b, STRIDE(24), k, 8);
        set = make_set(three_classes, 3);
        set_pool = hk_poolset_pool(set, 0);
        assert_true(hk_pool_owns(set_pool, hk_poolset_malloc(set, 1)));
        b = hk_poolset_malloc(set, 1);
        write_over_freed_header(hk_poolset_heap(set), b, STRIDE(16), k, 1);
    }
}

/*
 * Freeing a block whose owner word (the header's first) was written over:
 * reported as corrupted, or as a double free when what was written is this
 * pool's FREE word.
 */
static void write_over_owner(hk_heap_t *heap, unsigned char *a, size_t stride, const void *fake, size_t request,
                             hk_error_t want)
{
    error_log_t log;
    region_t kept = pool_block(a, stride);
    record_errors(heap, &log);
    memcpy(a - HDR, fake, sizeof(uintptr_t));
    heap->ops->free(heap, a);
    assert_int_equal(atomic_load(&log.count), 1);
    assert_int_equal(log.last, want);
    assert_ptr_equal(log.ptr, a);
    assert_int_not_equal(heap->ops->check(heap), HK_CHECK_OK);
    assert_true(churn_without_overlap(heap, request, &kept, 1) > 0);
    assert_int_equal(atomic_load(&log.count), 1);
}

static void pool_owner_overwrite_is_caught_on_free(void **state)
{
    /* Owner words that are not this pool's USED one: garbage, this pool FREE, another pool's USED one. */
    uintptr_t garbage = (uintptr_t)0xA5A5A5A5u;
    hk_heap_t *bh;
    hk_pool_t *pool;
    hk_pool_t *other;
    unsigned char *a;
    unsigned char *o;
    uintptr_t fakes[3];
    hk_error_t want[3] = {HK_ERR_CORRUPT, HK_ERR_DOUBLE_FREE, HK_ERR_CORRUPT};
    size_t i;
    (void)state;
    for (i = 0; i < 3; i++) {
        bh = hk_bump_heap(backing());
        pool = hk_pool_create(bh, 40, 6);
        other = hk_pool_create(bh, 40, 6);
        a = hk_pool_malloc(pool, 40);
        o = hk_pool_malloc(other, 40);
        memcpy(&fakes[1], a - HDR, sizeof(uintptr_t));
        fakes[1] ^= 3u; /* USED (1) becomes FREE (2) */
        memcpy(&fakes[2], o - HDR, sizeof(uintptr_t));
        fakes[0] = garbage;
        write_over_owner(hk_pool_heap(pool), a, STRIDE(40), &fakes[i], 8, want[i]);
    }
    for (i = 0; i < 3; i++) {
        hk_poolset_t *set = make_set(three_classes, 3);
        a = hk_poolset_malloc(set, 40);
        o = hk_poolset_malloc(set, 1);
        memcpy(&fakes[1], a - HDR, sizeof(uintptr_t));
        fakes[1] ^= 3u;
        memcpy(&fakes[2], o - HDR, sizeof(uintptr_t)); /* another pool of the same set */
        fakes[0] = garbage;
        write_over_owner(hk_poolset_heap(set), a, STRIDE(64), &fakes[i], 8, want[i]);
    }
}

/*
 * After b's link was damaged (log recording since before b was freed): two
 * mallocs report it once, never hand out a (in use) or one block twice, and
 * the heap goes on without overlap around the blocks kept.
 */
static void expect_bad_link_caught(hk_heap_t *heap, error_log_t *log, unsigned char *a, unsigned char *b,
                                   const region_t kept[2], int past_end, size_t request)
{
    unsigned char *p = heap->ops->malloc(heap, request);
    unsigned char *q = heap->ops->malloc(heap, request);
    assert_int_equal(atomic_load(&log->count), 1);
    assert_int_equal(log->last, HK_ERR_CORRUPT);
    assert_ptr_equal(log->ptr, past_end ? b : a);
    if (past_end) {
        assert_ptr_not_equal(p, b);
    } else {
        assert_ptr_equal(p, b);
    }
    assert_ptr_not_equal(p, a);
    assert_ptr_not_equal(q, a);
    assert_ptr_not_equal(p, q);
    assert_true(heap->ops->owns(heap, p) && heap->ops->owns(heap, q));
    assert_int_equal(heap->ops->check(heap), HK_CHECK_OK);
    if (p != b) {
        heap->ops->free(heap, p);
    }
    heap->ops->free(heap, q);
    assert_true(churn_without_overlap(heap, request, kept, 2) > 0);
    assert_int_equal(atomic_load(&log->count), 1);
}

/*
 * A free block's link (the header's second word, a block index + 1) made to
 * point past the last block, or at a block in use. Past the last block:
 * malloc reports the block whose link it is (b) and takes it out of service
 * before following the link. At a block in use: b itself is sound and may
 * be handed out; the block in use (a) is reported when it comes up. No
 * block is handed out twice.
 */
static void bad_link(hk_heap_t *heap, unsigned char *a, unsigned char *b, size_t stride, size_t link, int past_end,
                     size_t request)
{
    error_log_t log;
    region_t kept[2];
    kept[0] = pool_block(a, stride);
    kept[1] = pool_block(b, stride);
    record_errors(heap, &log);
    heap->ops->free(heap, b);
    memcpy(b - sizeof(size_t), &link, sizeof(link));
    expect_bad_link_caught(heap, &log, a, b, kept, past_end, request);
}

static void pool_bad_links_are_caught_before_they_are_followed(void **state)
{
    /*
     * Links are block indices, so one cannot be misaligned to the stride:
     * the cases left are an index past the last block and a block in use
     * (a, block 0: index 0 + 1).
     */
    int past_end;
    (void)state;
    for (past_end = 0; past_end < 2; past_end++) {
        hk_pool_t *pool = hk_pool_create(hk_bump_heap(backing()), 32, 8);
        hk_poolset_t *set;
        unsigned char *a = hk_pool_malloc(pool, 8);
        unsigned char *b = hk_pool_malloc(pool, 8);
        assert_non_null(hk_pool_malloc(pool, 8));
        bad_link(hk_pool_heap(pool), a, b, STRIDE(32), past_end ? 8 + 5 : 1, past_end, 8);
        set = make_set(three_classes, 3);
        a = hk_poolset_malloc(set, 1);
        b = hk_poolset_malloc(set, 1);
        assert_non_null(hk_poolset_malloc(set, 1));
        bad_link(hk_poolset_heap(set), a, b, STRIDE(16), past_end ? 4 + 5 : 1, past_end, 1);
    }
}

/* lfpool: a state word's link past the last block, or to a block in use. */
static void lfpool_bad_links_are_caught_before_they_are_followed(void **state)
{
    int past_end;
    (void)state;
    for (past_end = 0; past_end < 2; past_end++) {
        hk_lfpool_t *pool = make_lf(lf_mem, 2048, 64);
        hk_heap_t *heap = hk_lfpool_heap(pool);
        error_log_t log;
        unsigned char *a = hk_lfpool_malloc(pool, 8); /* block 0 */
        unsigned char *b = hk_lfpool_malloc(pool, 8); /* block 1 */
        region_t kept[2];
        kept[0].lo = a;
        kept[0].n = LF_STRIDE(64);
        kept[1].lo = b;
        kept[1].n = LF_STRIDE(64);
        record_errors(heap, &log);
        hk_lfpool_free(pool, b);
        atomic_store(&pool->state[1], LF_FREE | (past_end ? 0xFFF0u : 1u));
        expect_bad_link_caught(heap, &log, a, b, kept, past_end, 8);
    }
}
#endif

#if HK_HARDENING >= 2
/* Level 2: writes into a freed payload (use after free) found by the poison when malloc takes the block. */
static void write_after_free(hk_heap_t *heap, unsigned char *b, size_t block, size_t k, size_t request)
{
    error_log_t log;
    unsigned char *p;
    region_t kept;
    record_errors(heap, &log);
    heap->ops->free(heap, b);
    memset(b, 0, k);
    p = heap->ops->malloc(heap, request);
    assert_int_equal(atomic_load(&log.count), 1);
    assert_int_equal(log.last, HK_ERR_CORRUPT);
    assert_ptr_equal(log.ptr, b);
    assert_ptr_not_equal(p, b);
    assert_int_equal(heap->ops->check(heap), HK_CHECK_OK); /* the written block is out of service */
    kept.lo = b;
    kept.n = block;
    if (p != NULL) {
        heap->ops->free(heap, p);
    }
    churn_without_overlap(heap, request, &kept, 1);
    assert_int_equal(atomic_load(&log.count), 1);
}

static void writes_after_free_are_caught_by_the_poison(void **state)
{
    size_t k;
    (void)state;
    for (k = 1; k <= 16; k++) {
        hk_pool_t *pool = hk_pool_create(hk_bump_heap(backing()), 32, 6);
        hk_poolset_t *set = make_set(three_classes, 3);
        hk_lfpool_t *lf = make_lf(lf_mem, 2048, 32);
        unsigned char *b;
        assert_non_null(hk_pool_malloc(pool, 8));
        b = hk_pool_malloc(pool, 8);
        write_after_free(hk_pool_heap(pool), b, MAXREQ(32), k, 8);
        assert_non_null(hk_poolset_malloc(set, 1));
        b = hk_poolset_malloc(set, 1);
        write_after_free(hk_poolset_heap(set), b, MAXREQ(16), k, 1);
        assert_non_null(hk_lfpool_malloc(lf, 8));
        b = hk_lfpool_malloc(lf, 8);
        write_after_free(hk_lfpool_heap(lf), b, LF_MAXREQ(32), k, 8);
    }
}

/*
 * lfpool has no header to overrun: past usable_size (the request) lies the
 * canary, then the next block's payload. Freeing the overrun block reports;
 * an overrun past the canary into a free block is also found by its poison.
 */
static void lfpool_overrun_is_caught_by_canary_and_poison(void **state)
{
    size_t n;
    (void)state;
    for (n = 1; n <= OVERRUN_MAX; n++) {
        hk_lfpool_t *pool = make_lf(lf_mem, 2048, 32);
        hk_heap_t *heap = hk_lfpool_heap(pool);
        error_log_t log;
        unsigned char *a = hk_lfpool_malloc(pool, 32);
        unsigned char *b = hk_lfpool_malloc(pool, 8);
        unsigned char *p;
        int into_b = 32 + n > LF_STRIDE(32);
        region_t kept[2];
        record_errors(heap, &log);
        assert_ptr_equal(b, a + LF_STRIDE(32));
        hk_lfpool_free(pool, b);
        memset(a + hk_lfpool_usable_size(pool, a), FILL, n);
        p = hk_lfpool_malloc(pool, 8);
        if (into_b) {
            assert_ptr_not_equal(p, b);
            assert_int_equal(atomic_load(&log.count), 1);
        } else {
            assert_ptr_equal(p, b);
            assert_int_equal(atomic_load(&log.count), 0);
        }
        hk_lfpool_free(pool, a);
        assert_int_equal(atomic_load(&log.count), into_b + 1);
        assert_int_equal(log.last, HK_ERR_CORRUPT);
        assert_int_equal(hk_lfpool_check(pool), HK_CHECK_CANARY);
        kept[0].lo = a;
        kept[0].n = LF_STRIDE(32);
        kept[1].lo = b; /* out of service when the overrun reached it */
        kept[1].n = LF_STRIDE(32);
        hk_lfpool_free(pool, p);
        assert_true(churn_without_overlap(heap, 8, kept, into_b ? 2u : 1u) > 0);
        assert_int_equal(atomic_load(&log.count), into_b + 1);
    }
}

/* check() names a broken canary and a broken poison. */
static void check_names_canary_and_poison(void **state)
{
    hk_pool_t *pool = hk_pool_create(hk_bump_heap(backing()), 32, 4);
    hk_lfpool_t *lf = make_lf(lf_mem, 2048, 32);
    unsigned char *a = hk_pool_malloc(pool, 10);
    unsigned char *b = hk_pool_malloc(pool, 10);
    unsigned char *c = hk_lfpool_malloc(lf, 10);
    unsigned char *d = hk_lfpool_malloc(lf, 10);
    (void)state;
    assert_int_equal(hk_pool_usable_size(pool, a), 10);
    hk_pool_free(pool, b);
    hk_lfpool_free(lf, d);
    assert_int_equal(hk_pool_check(pool), HK_CHECK_OK);
    assert_int_equal(hk_lfpool_check(lf), HK_CHECK_OK);
    a[10] ^= 1u;
    c[10] ^= 1u;
    assert_int_equal(hk_pool_check(pool), HK_CHECK_CANARY);
    assert_int_equal(hk_lfpool_check(lf), HK_CHECK_CANARY);
    a[10] ^= 1u;
    c[10] ^= 1u;
    b[MAXREQ(32) - 1] ^= 1u;
    d[LF_MAXREQ(32) - 1] ^= 1u;
    assert_int_equal(hk_pool_check(pool), HK_CHECK_POISON);
    assert_int_equal(hk_lfpool_check(lf), HK_CHECK_POISON);
    b[MAXREQ(32) - 1] ^= 1u;
    d[LF_MAXREQ(32) - 1] ^= 1u;
    assert_int_equal(hk_pool_check(pool), HK_CHECK_OK);
    assert_int_equal(hk_lfpool_check(lf), HK_CHECK_OK);
}
#endif

/* lfpool's check() codes (it sees the pool's insides here). */
static void lfpool_check_names_what_is_broken(void **state)
{
    hk_lfpool_t *pool = make_lf(lf_mem, 2048, 32);
    uint32_t saved;
    uintptr_t magic;
    (void)state;
    assert_non_null(hk_lfpool_malloc(pool, 8)); /* block 0 */
    hk_lfpool_free(pool, hk_lfpool_malloc(pool, 8)); /* block 1, first on the list */
    assert_int_equal(hk_lfpool_check(pool), HK_CHECK_OK);
    saved = atomic_load(&pool->state[1]);
    atomic_store(&pool->state[1], LF_FREE | 2u); /* itself: a cycle */
    assert_int_equal(hk_lfpool_check(pool), HK_CHECK_LINK);
    atomic_store(&pool->state[1], LF_FREE | 0xFFF0u);
    assert_int_equal(hk_lfpool_check(pool), HK_CHECK_RANGE);
    atomic_store(&pool->state[1], LF_FREE | 1u); /* block 0, in use */
    assert_int_equal(hk_lfpool_check(pool), HK_CHECK_STATE);
    atomic_store(&pool->state[1], LF_FREE | 4u); /* past block 2, the first untouched one */
    assert_int_equal(hk_lfpool_check(pool), HK_CHECK_COUNT);
    atomic_store(&pool->state[1], saved);
    saved = atomic_load(&pool->state[0]);
    atomic_store(&pool->state[0], LF_USED | (uint32_t)(LF_STRIDE(32) + 1u)); /* more slack than the block */
    assert_int_equal(hk_lfpool_check(pool), HK_CHECK_STATE);
    atomic_store(&pool->state[0], LF_DEAD);
    assert_int_equal(hk_lfpool_check(pool), HK_CHECK_STATS);
    atomic_store(&pool->state[0], saved);
    magic = pool->magic;
    pool->magic ^= 1u;
    assert_int_equal(hk_lfpool_check(pool), HK_CHECK_CONTROL);
    pool->magic = magic;
    assert_int_equal(hk_lfpool_check(pool), HK_CHECK_OK);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(pool_create_rejects_bad_arguments),
        cmocka_unit_test(pool_create_carves_everything_up_front),
        cmocka_unit_test(pool_alloc_pops_and_free_pushes),
        cmocka_unit_test(pool_counts_requested_sizes_exactly),
        cmocka_unit_test(pool_realloc_stays_in_its_block),
#if HK_HARDENING >= 1
        cmocka_unit_test(pool_misuse_is_reported_and_harmless),
#endif
        cmocka_unit_test(pool_release_finds_the_pool_from_the_header),
        cmocka_unit_test(pool_check_names_what_is_broken),
        cmocka_unit_test(pool_walk_shows_every_block),
        cmocka_unit_test(pool_uniform_interface),
        cmocka_unit_test(pool_destroy_returns_the_memory),
        cmocka_unit_test(pool_init_rejects_bad_arguments),
        cmocka_unit_test(pool_init_makes_as_many_blocks_as_fit),
        cmocka_unit_test(pool_init_frees_and_reuses),
#if HK_HARDENING >= 1
        cmocka_unit_test(pool_init_misuse_is_reported),
#endif
        cmocka_unit_test(pool_init_uniform_interface),
#if HEAPKIT_TEST_THREADS
        cmocka_unit_test(sync_attach_rejects_bad_hooks),
        cmocka_unit_test(sync_takes_the_semaphore_before_the_lock),
        cmocka_unit_test(blocking_alloc_times_out_on_an_empty_pool),
        cmocka_unit_test(blocking_alloc_wakes_on_release),
        cmocka_unit_test(blocking_producers_and_consumers),
#endif
        cmocka_unit_test(poolset_init_rejects_bad_tables),
        cmocka_unit_test(poolset_init_refuses_small_arenas),
        cmocka_unit_test(poolset_malloc_picks_the_smallest_class),
        cmocka_unit_test(poolset_stats_are_the_pools_summed),
        cmocka_unit_test(poolset_realloc_keeps_or_moves),
#if HK_HARDENING >= 1
        cmocka_unit_test(poolset_misuse_is_reported_and_harmless),
#endif
        cmocka_unit_test(poolset_pool_operations_keep_the_set_counters),
        cmocka_unit_test(poolset_check_catches_bad_counters),
        cmocka_unit_test(poolset_uniform_interface),
        cmocka_unit_test(lfpool_init_rejects_bad_arguments),
        cmocka_unit_test(lfpool_caps_the_block_count),
        cmocka_unit_test(lfpool_alloc_and_free),
        cmocka_unit_test(lfpool_counts_requested_and_reallocs_in_place),
#if HK_HARDENING >= 1
        cmocka_unit_test(lfpool_misuse_is_reported_and_harmless),
#endif
        cmocka_unit_test(lfpool_pop_is_aba_safe),
        cmocka_unit_test(lfpool_check_names_what_is_broken),
#if HK_HARDENING >= 1
        cmocka_unit_test(pool_overrun_into_the_next_block_is_caught),
        cmocka_unit_test(poolset_overrun_into_the_next_block_is_caught),
        cmocka_unit_test(pool_write_over_a_freed_header_is_caught),
        cmocka_unit_test(pool_owner_overwrite_is_caught_on_free),
        cmocka_unit_test(pool_bad_links_are_caught_before_they_are_followed),
        cmocka_unit_test(lfpool_bad_links_are_caught_before_they_are_followed),
#endif
#if HK_HARDENING >= 2
        cmocka_unit_test(writes_after_free_are_caught_by_the_poison),
        cmocka_unit_test(lfpool_overrun_is_caught_by_canary_and_poison),
        cmocka_unit_test(check_names_canary_and_poison),
#endif
#if HEAPKIT_TEST_THREADS
        cmocka_unit_test(lfpool_survives_threads),
#if HK_HARDENING >= 1
        cmocka_unit_test(lfpool_catches_racing_double_frees),
#endif
#endif
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
