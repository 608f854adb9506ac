/* SPDX-License-Identifier: MIT */
/* Helpers shared by the unit tests; see testkit.h. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "testkit.h"

static uintptr_t align_up(uintptr_t x, uintptr_t a) { return (x + a - 1u) & ~(a - 1u); }

/* ---- fill patterns ---- */

void fill_pattern(void *p, size_t n, unsigned seed)
{
    size_t i;
    for (i = 0; i < n; i++) {
        ((unsigned char *)p)[i] = (unsigned char)(seed + i * 31u);
    }
}

int pattern_intact(const void *p, size_t n, unsigned seed)
{
    size_t i;
    for (i = 0; i < n; i++) {
        if (((const unsigned char *)p)[i] != (unsigned char)(seed + i * 31u)) {
            return 0;
        }
    }
    return 1;
}

/* ---- seeded PRNG ---- */

static uint64_t g_rng;

void rng_seed(uint64_t seed) { g_rng = seed; }

static uint64_t rng_next(void)
{
    uint64_t z = (g_rng += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

size_t rng_below(size_t n) { return (size_t)(rng_next() % n); }

/* ---- walk snapshots ---- */

void collect_walk(void *ctx, const hk_block_info_t *block)
{
    walk_log_t *w = (walk_log_t *)ctx;
    if (w->n == w->cap) {
        w->cap = w->cap != 0 ? 2u * w->cap : 64u;
        w->b = (hk_block_info_t *)realloc(w->b, w->cap * sizeof(*w->b));
        assert_non_null(w->b);
    }
    w->b[w->n++] = *block;
}

walk_log_t *walk_reset(walk_log_t *w)
{
    w->n = 0;
    return w;
}

void walk_release(walk_log_t *w)
{
    free(w->b);
    w->b = NULL;
    w->n = 0;
    w->cap = 0;
}

const walk_log_t *collect_heap_walk(hk_heap_t *heap, walk_log_t *w)
{
    hk_walk(heap, collect_walk, walk_reset(w));
    return w;
}

void assert_same_walk(const walk_log_t *a, const walk_log_t *b)
{
    size_t i;
    assert_int_equal(a->n, b->n);
    for (i = 0; i < a->n; i++) {
        assert_ptr_equal(a->b[i].start, b->b[i].start);
        assert_int_equal(a->b[i].size, b->b[i].size);
        assert_int_equal(a->b[i].used, b->b[i].used);
    }
}

/* Gross bytes of the free blocks and usable bytes of the used ones. */
static void walk_totals(const walk_log_t *w, size_t *free_bytes, size_t *granted)
{
    size_t i;
    *free_bytes = 0;
    *granted = 0;
    for (i = 0; i < w->n; i++) {
        if (w->b[i].used) {
            *granted += w->b[i].usable;
        } else {
            *free_bytes += w->b[i].size;
        }
    }
}

void assert_stats_match_walk(const hk_stats_t *st, const walk_log_t *w)
{
    hk_stats_t walked; /* what the walk adds up to */
    size_t i;
    memset(&walked, 0, sizeof(walked));
    for (i = 0; i < w->n; i++) {
        const hk_block_info_t *b = &w->b[i];
        walked.capacity += b->size;
        if (b->used) {
            walked.used_blocks++;
            walked.used_granted += b->usable;
            continue;
        }
        walked.free_blocks++;
        walked.free_bytes += b->size;
        if (b->size > walked.largest_free) {
            walked.largest_free = b->size;
        }
        if (walked.smallest_free == 0 || b->size < walked.smallest_free) {
            walked.smallest_free = b->size;
        }
    }
    assert_int_equal(st->capacity, walked.capacity);
    assert_int_equal(st->free_bytes, walked.free_bytes);
    assert_int_equal(st->used_granted, walked.used_granted);
    assert_int_equal(st->used_blocks, walked.used_blocks);
    assert_int_equal(st->free_blocks, walked.free_blocks);
    assert_int_equal(st->largest_free, walked.largest_free);
    assert_int_equal(st->smallest_free, walked.smallest_free);
    assert_true(st->used_requested <= st->used_granted);
    assert_true(st->min_ever_free <= st->free_bytes);
    assert_true(st->peak_used >= st->used_granted);
}

/* ---- expected layouts ---- */

size_t push_block(blk_t *layout, size_t n, size_t block_off, size_t size, int used)
{
    layout[n].off = block_off;
    layout[n].size = size;
    layout[n].used = used;
    return n + 1u;
}

size_t push_aligned_cut(blk_t *layout, size_t n, size_t from, size_t gap, size_t gross, size_t rest)
{
    if (gap != 0) {
        n = push_block(layout, n, from, gap, 0);
    }
    n = push_block(layout, n, from + gap, gross, 1);
    return push_block(layout, n, from + gap + gross, rest, 0);
}

void assert_layout(const walk_log_t *w, uintptr_t base, size_t capacity, const blk_t *exp, size_t n)
{
    size_t i;
    assert_int_equal(w->n, n);
    for (i = 0; i < n; i++) {
        assert_int_equal((uintptr_t)w->b[i].start - base, exp[i].off);
        assert_int_equal(w->b[i].size, exp[i].size == 0 ? capacity - exp[i].off : exp[i].size);
        assert_int_equal(w->b[i].used, exp[i].used);
    }
}

size_t gross_size(size_t request, size_t header, size_t min_block)
{
    size_t g = (request + header + HK_ALIGN - 1u) & ~(size_t)(HK_ALIGN - 1u);
    return g < min_block ? min_block : g;
}

uintptr_t aligned_payload(uintptr_t payload, size_t alignment, size_t min_gap)
{
    uintptr_t aligned = align_up(payload, alignment);
    if (aligned != payload && aligned - payload < min_gap) {
        aligned = align_up(payload + min_gap, alignment);
    }
    return aligned;
}

/* ---- stats ---- */

hk_stats_t heap_stats(hk_heap_t *heap)
{
    hk_stats_t s;
    memset(&s, 0xA5, sizeof(s));
    hk_get_stats(heap, &s);
    return s;
}

void assert_stats_equal_except(const hk_stats_t *a, const hk_stats_t *b, size_t skip)
{
    hk_stats_t x = *a;
    hk_stats_t y = *b;
    memset((unsigned char *)&x + skip, 0, sizeof(size_t));
    memset((unsigned char *)&y + skip, 0, sizeof(size_t));
    assert_memory_equal(&x, &y, sizeof(x));
}

void assert_stats_empty(const hk_stats_t *st)
{
    assert_int_equal(st->free_blocks, 1);
    assert_int_equal(st->used_blocks, 0);
    assert_int_equal(st->free_bytes, st->capacity);
    assert_int_equal(st->largest_free, st->capacity);
    assert_int_equal(st->smallest_free, st->capacity);
    assert_int_equal(st->used_requested, 0);
    assert_int_equal(st->used_granted, 0);
}

void assert_stats_full(const hk_stats_t *st)
{
    assert_int_equal(st->free_bytes, 0);
    assert_int_equal(st->free_blocks, 0);
    assert_int_equal(st->largest_free, 0);
    assert_int_equal(st->smallest_free, 0);
}

void assert_check_notices(hk_heap_t *checked, size_t *counter, size_t delta)
{
    *counter += delta;
    assert_int_not_equal(hk_check(checked), 0);
    *counter -= delta;
    assert_int_equal(hk_check(checked), 0);
}

/* ---- init and hopeless requests ---- */

size_t smallest_arena(heap_init_fn init, void *ctx, void *arena, size_t limit)
{
    size_t size;
    for (size = 0; size < limit; size++) {
        hk_status_t st = HK_OK;
        if (init(ctx, arena, size, &st) != NULL) {
            assert_int_equal(st, HK_OK);
            return size;
        }
        assert_int_equal(st, HK_ETOOSMALL);
    }
    fail_msg("no arena below %zu bytes was accepted", limit);
    return 0;
}

void expect_large_arena(hk_heap_t *heap, hk_status_t status, size_t control_most, size_t header, int spans_it)
{
    hk_stats_t s;
    unsigned char *whole;
    unsigned char *half;
    unsigned char *quarter;
    if (!spans_it) {
        assert_null(heap);
        assert_int_equal(status, HK_ETOOBIG);
        return;
    }
    assert_non_null(heap);
    assert_int_equal(status, HK_OK);
    hk_get_stats(heap, &s);
    assert_true(s.capacity + control_most >= LARGE_ARENA);
    assert_int_equal(s.largest_free, s.capacity);
    whole = hk_malloc(heap, s.capacity - header);
    assert_non_null(whole);
    whole[s.capacity - header - 1u] = 1;
    hk_free(heap, whole);
    half = hk_malloc(heap, LARGE_ARENA / 2u);
    quarter = hk_malloc(heap, LARGE_ARENA / 4u);
    assert_non_null(half);
    assert_non_null(quarter);
    assert_true((uintptr_t)quarter > (uintptr_t)half + ((size_t)256u << 10));
    quarter[LARGE_ARENA / 4u - 1u] = 2;
    assert_int_equal(hk_check(heap), HK_CHECK_OK);
    hk_free(heap, half);
    hk_free(heap, quarter);
    assert_int_equal(hk_check(heap), HK_CHECK_OK);
    hk_get_stats(heap, &s);
    assert_int_equal(s.largest_free, s.capacity);
    assert_int_equal(s.free_blocks, 1);
}

void refuse_hopeless_requests(hk_heap_t *heap, size_t max_span, size_t header)
{
    hk_stats_t before = heap_stats(heap);
    hk_stats_t after;
    size_t fails = 0;
    size_t k;
    for (k = 0; k <= 64; k++) {
        assert_null(hk_malloc(heap, SIZE_MAX - k));
        assert_null(hk_malloc(heap, max_span - k));
        assert_null(hk_aligned_alloc(heap, 64, SIZE_MAX - k));
        fails += 3;
    }
    assert_null(hk_malloc(heap, SIZE_MAX / 2 + 1));
    assert_null(hk_malloc(heap, before.capacity - header + 1));
    assert_null(hk_calloc(heap, 3, SIZE_MAX / 2));
    assert_null(hk_calloc(heap, SIZE_MAX / 2 + 1, 3));
    fails += 4;
    after = heap_stats(heap);
    assert_int_equal(after.fail_count, before.fail_count + fails);
    assert_stats_equal_but(&after, &before, fail_count);
}

/* ---- error hook ---- */

static void on_error(void *ctx, hk_heap_t *heap, hk_error_t error, const void *ptr)
{
    error_log_t *log = (error_log_t *)ctx;
    log->last = error;
    log->ptr = ptr;
    log->heap = heap;
    atomic_fetch_add(&log->count, 1);
}

void record_errors(hk_heap_t *heap, error_log_t *log)
{
    hk_hooks_t hooks;
    memset(&hooks, 0, sizeof(hooks));
    atomic_init(&log->count, 0);
    log->last = (hk_error_t)0;
    log->ptr = NULL;
    log->heap = NULL;
    hooks.on_error = on_error;
    hooks.ctx = log;
    hk_set_hooks(heap, &hooks);
}

void expect_error(const error_log_t *log, int count, hk_error_t kind, const void *ptr)
{
    assert_int_equal(atomic_load(&log->count), count);
    assert_int_equal(log->last, kind);
    assert_ptr_equal(log->ptr, ptr);
}

/* Reports so far since `count`, the last one of this kind about ptr, on heap. */
static void expect_reports(const error_log_t *log, hk_heap_t *heap, int count, hk_error_t kind, const void *ptr)
{
    expect_error(log, count, kind, ptr);
    assert_ptr_equal(log->heap, heap);
}

void assert_misuse_harmless(hk_heap_t *heap, const error_log_t *log, void *bad, hk_error_t want)
{
    hk_stats_t before = heap_stats(heap);
    hk_stats_t after;
    int n = atomic_load(&log->count);
    hk_free(heap, bad);
    expect_reports(log, heap, n + 1, want, bad);
    assert_int_equal(hk_usable_size(heap, bad), 0);
    expect_reports(log, heap, n + 2, want, bad);
    assert_null(hk_realloc(heap, bad, 16));
    expect_reports(log, heap, n + 3, want, bad);
    after = heap_stats(heap);
    assert_int_equal(after.error_count, before.error_count + 3);
    assert_stats_equal_but(&after, &before, error_count);
}

/* ---- random workload with exact statistics ---- */

static walk_log_t g_workload_walk;

static void note_level(stats_workload_t *w, size_t free_bytes)
{
    w->min_free = free_bytes < w->min_free ? free_bytes : w->min_free;
}

static void forget_live(stats_workload_t *w, size_t k)
{
    w->requested -= w->len[k];
    w->nlive--;
    w->live[k] = w->live[w->nlive];
    w->len[k] = w->len[w->nlive];
}

void stats_workload_start(stats_workload_t *w, hk_heap_t *heap, size_t header, uint64_t seed)
{
    memset(w, 0, sizeof(*w));
    w->heap = heap;
    w->header = header;
    w->min_free = heap_stats(heap).capacity;
    rng_seed(seed);
}

/* The gross size of the block whose payload is p, from a walk. */
static size_t gross_of(const walk_log_t *log, const void *p)
{
    size_t i;
    for (i = 0; i < log->n; i++) {
        if (log->b[i].payload == p) {
            return log->b[i].size;
        }
    }
    fail_msg("block %p is not in the walk", p);
    return 0;
}

hk_stats_t stats_workload_step(stats_workload_t *w)
{
    hk_heap_t *h = w->heap;
    size_t x = rng_below(100);
    size_t n = rng_below(6) == 0 ? 1000 + rng_below(6000) : rng_below(400);
    size_t free_before;
    size_t granted_before;
    size_t free_bytes;
    size_t granted;
    hk_stats_t st;

    walk_totals(collect_heap_walk(h, &g_workload_walk), &free_before, &granted_before);
    if (w->nlive < STATS_WORKLOAD_LIVE && (w->nlive == 0 || x < 45)) {
        void *p = (x % 5 == 0) ? hk_aligned_alloc(h, (size_t)32 << rng_below(6), n) : hk_malloc(h, n);
        if (p == NULL) {
            w->fails++;
        } else {
            w->allocs++;
            w->requested += n;
            w->len[w->nlive] = n;
            w->live[w->nlive++] = p;
        }
    } else if (x < 65) {
        size_t k = rng_below(w->nlive);
        void *p = hk_realloc(h, w->live[k], n);
        if (n == 0) {
            assert_null(p);
            w->frees++;
            forget_live(w, k);
        } else if (p == NULL) {
            w->fails++;
        } else {
            w->reallocs++;
            w->requested += n - w->len[k];
            if (p != w->live[k]) {
                /* Moved: the new block was live next to the old one for a moment. */
                w->allocs++;
                w->frees++;
                note_level(w, free_before - gross_of(collect_heap_walk(h, &g_workload_walk), p));
            }
            w->live[k] = p;
            w->len[k] = n;
        }
    } else {
        size_t k = rng_below(w->nlive);
        hk_free(h, w->live[k]);
        w->frees++;
        forget_live(w, k);
    }
    walk_totals(collect_heap_walk(h, &g_workload_walk), &free_bytes, &granted);
    note_level(w, free_bytes);
    hk_get_stats(h, &st);
    /* Allocators that do not store requests (the tagged ones below level 2) report the usable bytes. */
    if (st.used_requested != granted) {
        assert_int_equal(st.used_requested, w->requested);
    }
    assert_int_equal(st.used_granted, granted);
    assert_int_equal(st.free_bytes, free_bytes);
    assert_int_equal(st.min_ever_free, w->min_free);
    assert_int_equal(st.peak_used, st.capacity - w->min_free);
    assert_int_equal(st.used_blocks, w->nlive);
    assert_int_equal(st.alloc_count, w->allocs);
    assert_int_equal(st.free_count, w->frees);
    assert_int_equal(st.realloc_count, w->reallocs);
    assert_int_equal(st.fail_count, w->fails);
    return st;
}

void stats_workload_finish(stats_workload_t *w)
{
    hk_stats_t st;
    while (w->nlive > 0) {
        hk_free(w->heap, w->live[--w->nlive]);
    }
    st = heap_stats(w->heap);
    assert_int_equal(st.min_ever_free, w->min_free);
    assert_int_equal(st.peak_used, st.capacity - w->min_free);
}
