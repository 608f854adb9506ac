/* SPDX-License-Identifier: MIT */
/*
 * Unit tests for the regions heap (src/regions.c): init and add refusals,
 * address order whatever the order of adds, spilling from a full region to
 * the next, exact aggregate statistics (sums, largest = max, smallest = min,
 * one failure per failed request, the marks of the sums), realloc moving a
 * block between regions, misuse reported through the regions heap's hooks
 * with the heap untouched, removal of empty regions only, and a seeded
 * workload checked after every step over several catalog allocators.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "heapkit/catalog.h"
#include "heapkit/regions.h"
#include "tagged.h"
#include "testkit.h"

#define CTRL_SIZE 512u
#define HDR HK_TAG_HDR
#define MIN_BLOCK HK_TAG_MIN_BLOCK
#define REGION 8192u
#define NREG 4u

static TEST_ARENA(CTRL_SIZE) g_ctrl;
static TEST_ARENA(NREG * REGION) g_mem;
static walk_log_t g_walk;
static error_log_t g_log;
static stats_workload_t g_workload;

static hk_heap_t *make_tlsf(void *arena, size_t size, hk_status_t *status)
{
    return hk_catalog_find("tlsf")->make(arena, size, status);
}

static unsigned char *region(unsigned i) { return g_mem.bytes + (size_t)i * REGION; }

/* A regions heap of tlsf sub-heaps with an error log, over regions 2, 0 and 1 added in that order. */
static hk_regions_t *make_three(void)
{
    hk_status_t st = HK_EINVAL;
    hk_regions_t *r = hk_regions_init(g_ctrl.bytes, CTRL_SIZE, make_tlsf, &st);
    assert_non_null(r);
    assert_int_equal(st, HK_OK);
    record_errors(hk_regions_heap(r), &g_log);
    assert_int_equal(hk_regions_add(r, region(2), REGION), HK_OK);
    assert_int_equal(hk_regions_add(r, region(0), REGION), HK_OK);
    assert_int_equal(hk_regions_add(r, region(1), REGION), HK_OK);
    assert_int_equal(hk_regions_check(r), 0);
    return r;
}

static hk_heap_t *sub_of(hk_regions_t *r, size_t i)
{
    hk_region_info_t info;
    assert_true(hk_regions_at(r, i, &info));
    return info.heap;
}

static void init_refusals(void **state)
{
    hk_status_t st = HK_OK;
    (void)state;
    assert_null(hk_regions_init(NULL, CTRL_SIZE, make_tlsf, &st));
    assert_int_equal(st, HK_EINVAL);
    st = HK_OK;
    assert_null(hk_regions_init(g_ctrl.bytes, CTRL_SIZE, NULL, &st));
    assert_int_equal(st, HK_EINVAL);
    st = HK_OK;
    assert_null(hk_regions_init(g_ctrl.bytes, hk_regions_footprint(1) - 1, make_tlsf, &st));
    assert_int_equal(st, HK_ETOOSMALL);
    assert_non_null(hk_regions_init(g_ctrl.bytes, hk_regions_footprint(1), make_tlsf, &st));
    assert_int_equal(st, HK_OK);
    assert_int_equal(hk_regions_footprint(SIZE_MAX / 2), SIZE_MAX);
    assert_int_equal(hk_regions_footprint(7), HK_REGIONS_FOOTPRINT(7));
}

static void capacity_follows_buffer(void **state)
{
    hk_regions_t *r = hk_regions_init(g_ctrl.bytes, hk_regions_footprint(3), make_tlsf, NULL);
    (void)state;
    assert_int_equal(hk_regions_capacity(r), 3);
    assert_int_equal(hk_regions_add(r, region(0), REGION), HK_OK);
    assert_int_equal(hk_regions_add(r, region(1), REGION), HK_OK);
    assert_int_equal(hk_regions_add(r, region(2), REGION), HK_OK);
    assert_int_equal(hk_regions_add(r, region(3), REGION), HK_EINVAL); /* every slot taken */
    assert_int_equal(hk_regions_count(r), 3);
}

static void add_refusals_leave_heap_unchanged(void **state)
{
    hk_regions_t *r = make_three();
    hk_heap_t *heap = hk_regions_heap(r);
    hk_stats_t before = heap_stats(heap);
    hk_stats_t after;
    (void)state;
    assert_int_equal(hk_regions_add(r, NULL, REGION), HK_EINVAL);
    assert_int_equal(hk_regions_add(r, region(3) + 1, REGION - 8), HK_EINVAL);          /* misaligned */
    assert_int_equal(hk_regions_add(r, region(2) + REGION - 64, REGION), HK_EINVAL);   /* overlaps region 2's end */
    assert_int_equal(hk_regions_add(r, region(0) + 64, 128), HK_EINVAL);               /* inside region 0 */
    assert_int_equal(hk_regions_add(r, region(3) - 8, 64), HK_EINVAL);                 /* overlaps region 2's end */
    assert_int_equal(hk_regions_add(r, g_ctrl.bytes, 4096), HK_EINVAL);                /* the control buffer */
    assert_int_equal(hk_regions_add(r, g_ctrl.bytes + CTRL_SIZE - 128, 128), HK_EINVAL); /* its spare slots */
    assert_int_equal(hk_regions_add(r, region(3), 16), HK_ETOOSMALL);                  /* no heap fits */
    assert_int_equal(hk_regions_count(r), 3);
    after = heap_stats(heap);
    assert_memory_equal(&before, &after, sizeof(before));
    assert_int_equal(hk_regions_check(r), 0);
    /* Right after the last region is free. */
    assert_int_equal(hk_regions_add(r, region(3), REGION), HK_OK);
}

static void regions_kept_in_address_order(void **state)
{
    hk_regions_t *r = make_three();
    hk_region_info_t info;
    size_t i;
    (void)state;
    assert_int_equal(hk_regions_count(r), 3);
    for (i = 0; i < 3; i++) {
        assert_true(hk_regions_at(r, i, &info));
        assert_ptr_equal(info.arena, region((unsigned)i));
        assert_int_equal(info.size, REGION);
        assert_true(hk_owns(info.heap, region((unsigned)i) + REGION / 2));
        assert_int_equal(hk_regions_index_of(r, region((unsigned)i)), i);
        assert_int_equal(hk_regions_index_of(r, region((unsigned)i) + REGION - 1), i);
    }
    assert_false(hk_regions_at(r, 3, &info));
    assert_int_equal(hk_regions_index_of(r, region(3)), 3);
    assert_int_equal(hk_regions_index_of(r, (const void *)((uintptr_t)g_mem.bytes - 1u)), 3);
    assert_false(hk_owns(hk_regions_heap(r), region(3)));
    assert_true(hk_owns(hk_regions_heap(r), region(1)));
    assert_string_equal(hk_name(hk_regions_heap(r)), "regions");
}

/* Statistics equal the sums of the sub-heaps', geometry the extremes, and agree with a walk. */
static void expect_sums(hk_regions_t *r)
{
    hk_stats_t st = heap_stats(hk_regions_heap(r));
    size_t i;
    size_t cap = 0;
    size_t free_bytes = 0;
    size_t blocks = 0;
    size_t largest = 0;
    size_t smallest = SIZE_MAX;
    for (i = 0; i < hk_regions_count(r); i++) {
        hk_stats_t s = heap_stats(sub_of(r, i));
        cap += s.capacity;
        free_bytes += s.free_bytes;
        blocks += s.free_blocks;
        largest = s.largest_free > largest ? s.largest_free : largest;
        smallest = s.smallest_free != 0 && s.smallest_free < smallest ? s.smallest_free : smallest;
    }
    assert_int_equal(st.capacity, cap);
    assert_int_equal(st.free_bytes, free_bytes);
    assert_int_equal(st.free_blocks, blocks);
    assert_int_equal(st.largest_free, largest);
    assert_int_equal(st.smallest_free, smallest == SIZE_MAX ? 0 : smallest);
    assert_stats_match_walk(&st, collect_heap_walk(hk_regions_heap(r), &g_walk));
    assert_int_equal(hk_regions_check(r), 0);
}

static void malloc_spills_to_next_region(void **state)
{
    hk_regions_t *r = make_three();
    hk_heap_t *heap = hk_regions_heap(r);
    void *p[64];
    size_t n = 0;
    hk_stats_t st;
    (void)state;
    /* 3000-byte blocks: two per 8 KiB region, so six, then a failure. */
    while (n < 64 && (p[n] = hk_malloc(heap, 3000)) != NULL) {
        fill_pattern(p[n], 3000, (unsigned)n);
        assert_int_equal(hk_regions_index_of(r, p[n]), n / 2); /* address order */
        n++;
        expect_sums(r);
    }
    assert_int_equal(n, 6);
    st = heap_stats(heap);
    assert_int_equal(st.fail_count, 1); /* one failure, not one per region */
    assert_int_equal(st.alloc_count, 6);
    assert_int_equal(st.used_blocks, 6);
    /* Below level 2 tlsf stores no request: used_requested is the usable size of each block. */
    assert_int_equal(st.used_requested, 6u * (HK_CANARIES ? 3000u : gross_size(3000, HDR, MIN_BLOCK) - HDR));
    /* A small block still fits in the first region's remainder. */
    p[n] = hk_malloc(heap, 100);
    assert_non_null(p[n]);
    assert_int_equal(hk_regions_index_of(r, p[n]), 0);
    n++;
    expect_sums(r);
    while (n > 0) {
        n--;
        if (n < 6) {
            assert_pattern(p[n], 3000, (unsigned)n);
        }
        hk_free(heap, p[n]);
        expect_sums(r);
    }
    st = heap_stats(heap);
    assert_int_equal(st.free_count, 7);
    assert_int_equal(st.used_blocks, 0);
    assert_int_equal(st.free_bytes, st.capacity);
    assert_int_equal(st.free_blocks, 3);
    assert_true(st.min_ever_free < st.capacity);
}

static void marks_are_those_of_the_sums(void **state)
{
    hk_regions_t *r = make_three();
    hk_heap_t *heap = hk_regions_heap(r);
    hk_stats_t st = heap_stats(heap);
    hk_stats_t sub0;
    hk_stats_t sub1;
    size_t cap = st.capacity;
    void *a;
    void *b;
    (void)state;
    assert_int_equal(st.min_ever_free, cap);
    a = hk_malloc(heap, 5000);
    b = hk_malloc(heap, 5000); /* second region */
    st = heap_stats(heap);
    assert_int_equal(st.min_ever_free, st.free_bytes);
    assert_int_equal(st.peak_used, st.capacity - st.min_ever_free);
    hk_free(heap, b);
    hk_free(heap, a);
    /* Region 0 sinks lower, alone, later: its own mark moves, the sum's does not. */
    a = hk_malloc(heap, 5500);
    assert_int_equal(hk_regions_index_of(r, a), 0);
    hk_free(heap, a);
    st = heap_stats(heap);
    sub0 = heap_stats(sub_of(r, 0));
    sub1 = heap_stats(sub_of(r, 1));
    assert_int_equal(st.min_ever_free, cap - 2 * gross_size(5000, HDR, MIN_BLOCK));
    assert_int_equal(sub0.min_ever_free, sub0.capacity - gross_size(5500, HDR, MIN_BLOCK));
    assert_true(st.min_ever_free > sub0.min_ever_free + sub1.min_ever_free + heap_stats(sub_of(r, 2)).capacity);
    assert_int_equal(st.peak_used, 2 * gross_size(5000, HDR, MIN_BLOCK));
    expect_sums(r);
}

static void realloc_moves_between_regions(void **state)
{
    hk_regions_t *r = make_three();
    hk_heap_t *heap = hk_regions_heap(r);
    void *fill = hk_malloc(heap, 4000);
    void *p = hk_malloc(heap, 1000);
    void *q;
    hk_stats_t st;
    (void)state;
    assert_int_equal(hk_regions_index_of(r, p), 0);
    fill_pattern(p, 1000, 7);
    q = hk_realloc(heap, p, 6000); /* region 0 has no 6000 left */
    assert_non_null(q);
    assert_int_equal(hk_regions_index_of(r, q), 1);
    assert_pattern(q, 1000, 7);
    st = heap_stats(heap);
    assert_int_equal(st.realloc_count, 1);
    assert_int_equal(st.used_blocks, 2);
    assert_true(st.used_granted >= 10000); /* tlsf below level 2: used_requested is used_granted */
    assert_int_equal(st.fail_count, 0);
    expect_sums(r);
    /* Shrinking stays in place, in the new region. */
    assert_ptr_equal(hk_realloc(heap, q, 500), q);
    assert_pattern(q, 500, 7);
    /* Too big for any region: NULL, the block untouched, one failure. */
    assert_null(hk_realloc(heap, q, 3 * REGION));
    assert_pattern(q, 500, 7);
    st = heap_stats(heap);
    assert_int_equal(st.fail_count, 1);
    assert_int_equal(st.realloc_count, 2);
    assert_null(hk_realloc(heap, q, 0));
    hk_free(heap, fill);
    st = heap_stats(heap);
    assert_int_equal(st.used_blocks, 0);
    assert_int_equal(st.free_bytes, st.capacity);
    expect_sums(r);
}

static void aligned_alloc_over_regions(void **state)
{
    hk_regions_t *r = make_three();
    hk_heap_t *heap = hk_regions_heap(r);
    void *a = hk_aligned_alloc(heap, 256, 6000);
    void *b = hk_aligned_alloc(heap, 256, 6000);
    (void)state;
    assert_non_null(a);
    assert_non_null(b);
    assert_int_equal((uintptr_t)a % 256, 0);
    assert_int_equal((uintptr_t)b % 256, 0);
    assert_int_not_equal(hk_regions_index_of(r, a), hk_regions_index_of(r, b));
    assert_null(hk_aligned_alloc(heap, 48, 16));
    assert_int_equal(heap_stats(heap).fail_count, 1);
    hk_free(heap, a);
    hk_free(heap, b);
    expect_sums(r);
}

static void misuse_goes_to_the_regions_hooks(void **state)
{
    hk_regions_t *r = make_three();
    hk_heap_t *heap = hk_regions_heap(r);
    static unsigned char outside[64];
    unsigned char *a = hk_malloc(heap, 64);
    unsigned char *b = hk_malloc(heap, 64);
    (void)state;
    assert_misuse_harmless(heap, &g_log, outside + 16, HK_ERR_FOREIGN_PTR);
    assert_misuse_harmless(heap, &g_log, region(3) + 64, HK_ERR_FOREIGN_PTR); /* between nothing */
    assert_misuse_harmless(heap, &g_log, a + HK_ALIGN, HK_ERR_INTERIOR_PTR); /* found by the sub-heap */
    hk_free(heap, b);
    assert_misuse_harmless(heap, &g_log, b, HK_ERR_DOUBLE_FREE);
    assert_int_equal(heap_stats(heap).error_count, 12);
    hk_free(heap, a);
    expect_sums(r);
}

static void remove_only_empty_regions(void **state)
{
    hk_regions_t *r = make_three();
    hk_heap_t *heap = hk_regions_heap(r);
    hk_region_info_t info;
    hk_stats_t before;
    hk_stats_t st;
    void *a = hk_malloc(heap, 5000); /* region 0 */
    void *b = hk_malloc(heap, 5000); /* region 1 */
    (void)state;
    assert_int_equal(hk_regions_index_of(r, b), 1);
    assert_int_equal(hk_regions_remove(r, 1, &info), HK_EINVAL); /* b lives there */
    assert_int_equal(hk_regions_remove(r, 3, &info), HK_EINVAL);
    assert_int_equal(hk_regions_count(r), 3);
    hk_free(heap, b);
    before = heap_stats(heap);
    assert_int_equal(hk_regions_remove(r, 1, &info), HK_OK);
    assert_ptr_equal(info.arena, region(1));
    assert_int_equal(info.size, REGION);
    assert_int_equal(hk_regions_count(r), 2);
    st = heap_stats(heap);
    assert_int_equal(st.capacity, before.capacity * 2 / 3);
    assert_int_equal(st.free_bytes, before.free_bytes - before.capacity / 3);
    assert_true(st.min_ever_free <= st.free_bytes);
    assert_int_equal(st.alloc_count, before.alloc_count);
    expect_sums(r);
    /* Its memory is no longer the heap's. */
    hk_free(heap, b);
    expect_error(&g_log, 1, HK_ERR_FOREIGN_PTR, b);
    assert_int_equal(hk_regions_index_of(r, a), 0);
    assert_int_equal(hk_regions_index_of(r, region(2)), 1);
    /* The gap can be filled again. */
    assert_int_equal(hk_regions_add(r, region(1), REGION), HK_OK);
    assert_int_equal(hk_regions_index_of(r, region(2)), 2);
    hk_free(heap, a);
    assert_int_equal(hk_regions_remove(r, 0, NULL), HK_OK);
    assert_int_equal(hk_regions_remove(r, 0, NULL), HK_OK);
    assert_int_equal(hk_regions_remove(r, 0, NULL), HK_OK);
    st = heap_stats(heap);
    assert_int_equal(st.capacity, 0);
    assert_int_equal(st.free_bytes, 0);
    assert_int_equal(st.min_ever_free, 0);
    assert_null(hk_malloc(heap, 1));
}

static void empty_heap_fails_cleanly(void **state)
{
    hk_regions_t *r = hk_regions_init(g_ctrl.bytes, CTRL_SIZE, make_tlsf, NULL);
    hk_heap_t *heap = hk_regions_heap(r);
    hk_stats_t st;
    (void)state;
    record_errors(heap, &g_log);
    assert_null(hk_malloc(heap, 0));
    assert_null(hk_aligned_alloc(heap, 64, 1));
    assert_null(hk_calloc(heap, 1, 1));
    hk_free(heap, g_mem.bytes);
    expect_error(&g_log, 1, HK_ERR_FOREIGN_PTR, g_mem.bytes);
    st = heap_stats(heap);
    assert_int_equal(st.fail_count, 3);
    assert_int_equal(st.capacity, 0);
    assert_int_equal(hk_regions_check(r), 0);
}

/* The seeded workload over three regions of one catalog allocator, checked after every step. */
static void workload_on(const char *entry)
{
    const hk_catalog_entry_t *e = hk_catalog_find(entry);
    hk_regions_t *r = hk_regions_init(g_ctrl.bytes, CTRL_SIZE, e->make, NULL);
    hk_heap_t *heap = hk_regions_heap(r);
    size_t op;
    assert_int_equal(hk_regions_add(r, region(1), REGION), HK_OK);
    assert_int_equal(hk_regions_add(r, region(3), REGION), HK_OK);
    assert_int_equal(hk_regions_add(r, region(0), REGION / 2), HK_OK);
    stats_workload_start(&g_workload, heap, HDR, 0x5E618u); /* tlsf and seqfit: one boundary tag per block */
    for (op = 0; op < 3000; op++) {
        stats_workload_step(&g_workload);
        assert_int_equal(hk_regions_check(r), 0);
    }
    stats_workload_finish(&g_workload);
    expect_sums(r);
    assert_int_equal(heap_stats(heap).used_blocks, 0);
}

static void workload_tlsf(void **state)
{
    (void)state;
    workload_on("tlsf");
}

static void workload_seqfit(void **state)
{
    (void)state;
    workload_on("seqfit-best");
}

static void workload_seqfit_first(void **state)
{
    (void)state;
    workload_on("seqfit-first");
}

/* Breaking a sum or a slot is caught by check(). */
static void check_notices_broken_sums(void **state)
{
    hk_regions_t *r = make_three();
    hk_heap_t *heap = hk_regions_heap(r);
    (void)state;
    hk_malloc(heap, 100);
    assert_check_notices(heap, &heap->stats.free_bytes, 8);
    assert_check_notices(heap, &heap->stats.capacity, (size_t)-8);
    assert_check_notices(heap, &heap->stats.min_ever_free, heap->stats.free_bytes);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(init_refusals),
        cmocka_unit_test(capacity_follows_buffer),
        cmocka_unit_test(add_refusals_leave_heap_unchanged),
        cmocka_unit_test(regions_kept_in_address_order),
        cmocka_unit_test(malloc_spills_to_next_region),
        cmocka_unit_test(marks_are_those_of_the_sums),
        cmocka_unit_test(realloc_moves_between_regions),
        cmocka_unit_test(aligned_alloc_over_regions),
        cmocka_unit_test(misuse_goes_to_the_regions_hooks),
        cmocka_unit_test(remove_only_empty_regions),
        cmocka_unit_test(empty_heap_fails_cleanly),
        cmocka_unit_test(workload_tlsf),
        cmocka_unit_test(workload_seqfit),
        cmocka_unit_test(workload_seqfit_first),
        cmocka_unit_test(check_notices_broken_sums),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    walk_release(&g_walk);
    return rc;
}
