/* SPDX-License-Identifier: MIT */
/*
 * The bad-input matrix: test_misuse [allocator]
 *
 * Every case runs on every catalog entry (or on the one named). A misuse
 * case hands the heap a bad pointer with an error hook installed and asserts
 * the reported hk_error_t (one kind, or the set listed in expectations[]
 * where the allocator cannot tell the cases apart), that error_count rose by
 * exactly one, and that nothing else changed: hk_check() == 0, the stats
 * snapshot equals the one taken before (error_count aside), the walk is
 * identical and the live blocks' contents are intact. The other cases cover
 * the requests that must fail cleanly (calloc overflow, sizes near SIZE_MAX),
 * malloc(0), and init on NULL, too small and misaligned arenas.
 *
 * A case an allocator cannot detect is skipped for it, with the reason, in
 * expectations[] below; the README lists the same gaps. Built at
 * HK_HARDENING 0 (no checks: misuse is undefined behaviour) the matrix
 * skips every misuse case and runs only the ones from calloc overflow on.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "heapkit/catalog.h"

#include "heapkit/buddy.h"

#define ARENA_SIZE (64u * 1024u)
#define MAX_WALK 4096u
#define N_LIVE 6u

#define BIT(e) (1u << (unsigned)(e))
#define DOUBLE BIT(HK_ERR_DOUBLE_FREE)
#define FOREIGN BIT(HK_ERR_FOREIGN_PTR)
#define INTERIOR BIT(HK_ERR_INTERIOR_PTR)
#define CORRUPT BIT(HK_ERR_CORRUPT)

typedef enum misuse_case {
    CASE_DOUBLE_FREE,
    CASE_FOREIGN_STACK,
    CASE_FOREIGN_GLOBAL,
    CASE_FOREIGN_OTHER_HEAP,
    CASE_INTERIOR_ALIGNED,
    CASE_INTERIOR_BYTE,
    CASE_CORRUPT_HEADER,
    CASE_FREE_AFTER_MOVE,
    CASE_USABLE_FOREIGN,
    CASE_REALLOC_FOREIGN,
    CASE_REALLOC_DOUBLE,
    CASE_REALLOC_INTERIOR,
    CASE_USABLE_FREED,
    CASE_CONTROL_PTR,
    CASE_STALE_REINIT,
    CASE_NESTED_HEAP,
    CASE_CALLOC_OVERFLOW,
    CASE_MALLOC_SIZE_MAX,
    CASE_MALLOC_ZERO,
    CASE_INIT_TOO_SMALL,
    CASE_INIT_NULL,
    CASE_MISALIGNED_ARENA,
    CASE_COUNT
} misuse_case_t;

static const char *const case_names[CASE_COUNT] = {
    "double free",           "foreign pointer (stack)", "foreign pointer (global)",  "pointer from another heap",
    "interior pointer p+HK_ALIGN", "interior pointer p+1", "corrupted header",      "free after realloc moved it",
    "usable_size of a foreign pointer", "realloc of a foreign pointer", "realloc of a freed block",
    "realloc of an interior pointer", "usable_size of a freed block", "pointer into the control data",
    "pointer from an earlier heap on the same arena", "pointer from a heap nested in a block",
    "calloc overflow",       "malloc near SIZE_MAX",    "malloc(0)",                 "arena too small",
    "NULL arena",            "misaligned arena"};

/* What each misuse case reports when the allocator has no special entry. */
static const unsigned default_kinds[CASE_COUNT] = {
    DOUBLE, FOREIGN, FOREIGN, FOREIGN, INTERIOR, INTERIOR, CORRUPT, DOUBLE, FOREIGN, FOREIGN, DOUBLE, INTERIOR,
    DOUBLE, FOREIGN, DOUBLE | FOREIGN | INTERIOR | CORRUPT, INTERIOR | CORRUPT,
    0,       0,       0,        0,        0,       0};

/*
 * Per-allocator departures from default_kinds: entry is a catalog name, or
 * a prefix ending in '*'. kinds == 0 with a reason skips the case.
 */
typedef struct expectation {
    const char *entry;
    misuse_case_t c;
    unsigned kinds;
    const char *skip_reason;
} expectation_t;

static const expectation_t expectations[] = {
    /* lfpool keeps its state words in a table whose offset is private (src/pool_lockfree.c) */
    {"lfpool", CASE_CORRUPT_HEADER, 0, "state words live out of band at a private offset"},
    /* one block size and realloc within it: a block never moves */
    {"lfpool", CASE_FREE_AFTER_MOVE, 0, "realloc never moves a block (one block size)"},
#if HK_HARDENING < 2
    /*
     * A tag holds sizes only (src/tagged.h): the old heap's tags, still
     * intact, agree with each other. From level 2 on the new heap's poison
     * has overwritten them.
     */
    {"tlsf*", CASE_STALE_REINIT, 0, "a stale tag is a sound tag below HK_HARDENING 2"},
    {"seqfit*", CASE_STALE_REINIT, 0, "a stale tag is a sound tag below HK_HARDENING 2"},
    {"dmm*", CASE_STALE_REINIT, 0, "a stale tag is a sound tag below HK_HARDENING 2"},
#endif
    {NULL, CASE_COUNT, 0, NULL}};

static int entry_matches(const char *pattern, const char *name)
{
    size_t n = strlen(pattern);
    if (n > 0 && pattern[n - 1] == '*') {
        return strncmp(pattern, name, n - 1) == 0;
    }
    return strcmp(pattern, name) == 0;
}

static const expectation_t *find_expectation(const hk_catalog_entry_t *e, misuse_case_t c)
{
    const expectation_t *x;
    for (x = expectations; x->entry != NULL; x++) {
        if (x->c == c && entry_matches(x->entry, e->name)) {
            return x;
        }
    }
    return NULL;
}

/* ---- fixture ---- */

typedef struct recorded_error {
    int count;
    hk_error_t kind;
    const void *ptr;
} recorded_error_t;

typedef struct walk_snapshot {
    hk_block_info_t v[MAX_WALK];
    size_t n;
} walk_snapshot_t;

typedef struct fixture {
    const hk_catalog_entry_t *entry;
    misuse_case_t c;
    unsigned char *mem;
    unsigned char *arena;
    hk_heap_t *heap;
    recorded_error_t err;
    unsigned char *live[N_LIVE];
    size_t live_size[N_LIVE];
    hk_stats_t snap;
    walk_snapshot_t walk_before;
    walk_snapshot_t walk_after;
} fixture_t;

static unsigned char global_object[64];

static void record_error(void *ctx, hk_heap_t *heap, hk_error_t error, const void *ptr)
{
    recorded_error_t *r = (recorded_error_t *)ctx;
    (void)heap;
    r->count++;
    r->kind = error;
    r->ptr = ptr;
}

static void install_hook(hk_heap_t *heap, recorded_error_t *err)
{
    hk_hooks_t hooks;
    memset(&hooks, 0, sizeof(hooks));
    hooks.on_error = record_error;
    hooks.ctx = err;
    hk_set_hooks(heap, &hooks);
}

static unsigned char pattern(size_t block, size_t i) { return (unsigned char)(0x3Bu * (block + 1u) + 7u * i + 1u); }

static void fill_block(unsigned char *p, size_t block, size_t n)
{
    size_t i;
    for (i = 0; i < n; i++) {
        p[i] = pattern(block, i);
    }
}

static void assert_block_intact(const unsigned char *p, size_t block, size_t n)
{
    size_t i;
    for (i = 0; i < n; i++) {
        if (p[i] != pattern(block, i)) {
            fail_msg("live block %zu (%p) byte %zu changed: 0x%02x, expected 0x%02x", block, (const void *)p, i,
                     p[i], pattern(block, i));
        }
    }
}

static void walk_visit(void *ctx, const hk_block_info_t *b)
{
    walk_snapshot_t *w = (walk_snapshot_t *)ctx;
    if (w->n < MAX_WALK) {
        w->v[w->n] = *b;
    }
    w->n++;
}

static void take_walk(hk_heap_t *heap, walk_snapshot_t *w)
{
    w->n = 0;
    hk_walk(heap, walk_visit, w);
    assert_true(w->n <= MAX_WALK);
}

static hk_heap_t *make_heap(const hk_catalog_entry_t *e, unsigned char *arena, size_t size, recorded_error_t *err)
{
    hk_status_t status = HK_EINVAL;
    hk_heap_t *heap = e->make(arena, size, &status);
    assert_non_null(heap);
    assert_int_equal(status, HK_OK);
    install_hook(heap, err);
    return heap;
}

static unsigned char *alloc_filled(fixture_t *f, size_t slot, size_t size)
{
    unsigned char *p = (unsigned char *)hk_malloc(f->heap, size);
    assert_non_null(p);
    fill_block(p, slot, size);
    f->live[slot] = p;
    f->live_size[slot] = size;
    return p;
}

static size_t small_size(const fixture_t *f, size_t want)
{
    return want < f->entry->max_request ? want : f->entry->max_request;
}

static int setup(void **state)
{
    fixture_t *f = (fixture_t *)*state;
    size_t i;
    f->mem = (unsigned char *)malloc(ARENA_SIZE);
    assert_non_null(f->mem);
    f->arena = f->mem;
    memset(&f->err, 0, sizeof(f->err));
    f->heap = make_heap(f->entry, f->arena, ARENA_SIZE, &f->err);
    /* a few live blocks around the ones the cases use, whose contents must survive */
    for (i = 0; i < N_LIVE; i++) {
        alloc_filled(f, i, small_size(f, 24 + 40 * i));
    }
    return 0;
}

static int teardown(void **state)
{
    fixture_t *f = (fixture_t *)*state;
    free(f->mem);
    f->mem = NULL;
    return 0;
}

/* Freeze what the misuse must not change. */
static void snapshot(fixture_t *f)
{
    assert_int_equal(hk_check(f->heap), 0);
    hk_get_stats(f->heap, &f->snap);
    take_walk(f->heap, &f->walk_before);
    f->err.count = 0;
}

static void assert_untouched(fixture_t *f, int fail_count_may_rise)
{
    hk_stats_t now;
    size_t i;
    assert_int_equal(hk_check(f->heap), 0);
    hk_get_stats(f->heap, &now);
    assert_int_equal(now.error_count, f->snap.error_count + (size_t)f->err.count);
    now.error_count = f->snap.error_count;
    if (fail_count_may_rise && now.fail_count == f->snap.fail_count + 1u) {
        now.fail_count = f->snap.fail_count;
    }
    if (memcmp(&now, &f->snap, sizeof(now)) != 0) {
        fail_msg("stats changed: free_bytes %zu -> %zu, used_blocks %zu -> %zu, free_blocks %zu -> %zu, "
                 "alloc/free/fail %zu/%zu/%zu -> %zu/%zu/%zu",
                 f->snap.free_bytes, now.free_bytes, f->snap.used_blocks, now.used_blocks, f->snap.free_blocks,
                 now.free_blocks, f->snap.alloc_count, f->snap.free_count, f->snap.fail_count, now.alloc_count,
                 now.free_count, now.fail_count);
    }
    take_walk(f->heap, &f->walk_after);
    assert_int_equal(f->walk_after.n, f->walk_before.n);
    for (i = 0; i < f->walk_before.n; i++) {
        const hk_block_info_t *a = &f->walk_after.v[i];
        const hk_block_info_t *b = &f->walk_before.v[i];
        if (a->start != b->start || a->size != b->size || a->payload != b->payload || a->usable != b->usable ||
            a->used != b->used) {
            fail_msg("walk block %zu changed: (%p, %zu, used %d) -> (%p, %zu, used %d)", i, b->start, b->size,
                     b->used, a->start, a->size, a->used);
        }
    }
    for (i = 0; i < N_LIVE; i++) {
        if (f->live[i] != NULL) {
            assert_block_intact(f->live[i], i, f->live_size[i]);
        }
    }
}

/* The error the case produced is one of the accepted kinds. */
static void assert_reported(fixture_t *f, unsigned kinds, const void *ptr)
{
    /* Level 3 validates the heap before every call: damage done before the call is reported twice. */
    if (f->err.count != 1 && !(HK_HARDENING >= 3 && f->err.count == 2)) {
        fail_msg("[%s] %s: expected one error report, got %d", f->entry->name, case_names[f->c], f->err.count);
    }
    if ((BIT(f->err.kind) & kinds) == 0) {
        fail_msg("[%s] %s: reported '%s'", f->entry->name, case_names[f->c], hk_error_name(f->err.kind));
    }
    assert_ptr_equal(f->err.ptr, ptr);
}

/* Free ptr as misuse, then check the report and that the heap is untouched. */
static void misuse_free(fixture_t *f, void *ptr, unsigned kinds)
{
    snapshot(f);
    hk_free(f->heap, ptr);
    assert_reported(f, kinds, ptr);
    assert_untouched(f, 0);
}

static void drop_slot(fixture_t *f, size_t slot)
{
    hk_free(f->heap, f->live[slot]);
    f->live[slot] = NULL;
}

/*
 * The metadata byte of used block p that a stray write would hit, and an XOR
 * mask that makes it invalid; NULL where the allocator keeps none:
 *   seqfit, tlsf: the 8-byte tag right below the payload (src/tagged.h); its
 *                 last byte is part of the check hash;
 *   bump:         the 8-byte header right below the payload, its last byte
 *                 part of the check hash (src/bump.c);
 *   poolset:      the two-word header right below the payload, its last
 *                 byte the top byte of the owner pool's address (src/pool.c);
 *   buddy:        the block's control byte, ctrl[i] = base[i - atoms] with
 *                 atoms = capacity / min_block (src/buddy.c); bit 7 is never
 *                 set in a valid one.
 */
static unsigned char *metadata_byte(fixture_t *f, unsigned char *p, unsigned char *mask)
{
    const char *name = f->entry->name;
    if (strncmp(name, "seqfit", 6) == 0 || strncmp(name, "tlsf", 4) == 0 || strcmp(name, "bump") == 0 ||
        strcmp(name, "poolset") == 0 || strncmp(name, "dmm", 3) == 0) {
        *mask = 0x5A;
        return p - 1;
    }
    if (strncmp(name, "buddy", 5) == 0) {
        hk_stats_t st;
        unsigned char *base;
        size_t atoms;
        take_walk(f->heap, &f->walk_before);
        hk_get_stats(f->heap, &st);
        base = (unsigned char *)(uintptr_t)f->walk_before.v[0].start;
        atoms = st.capacity / HK_BUDDY_MIN_BLOCK;
        *mask = 0x80;
        return base - atoms + (size_t)(p - base) / HK_BUDDY_MIN_BLOCK;
    }
    return NULL;
}

/* ---- the cases ---- */

static void run_case(fixture_t *f, unsigned kinds)
{
    int local = 0;
    switch (f->c) {
    case CASE_DOUBLE_FREE:
        /* slot 2 has used neighbours on both sides, so nothing merges it away */
        {
            void *p = f->live[2];
            drop_slot(f, 2);
            misuse_free(f, p, kinds);
        }
        break;
    case CASE_FOREIGN_STACK:
        misuse_free(f, &local, kinds);
        break;
    case CASE_FOREIGN_GLOBAL:
        misuse_free(f, global_object, kinds);
        break;
    case CASE_FOREIGN_OTHER_HEAP: {
        unsigned char *mem2 = (unsigned char *)malloc(ARENA_SIZE);
        recorded_error_t err2;
        hk_heap_t *other;
        void *q;
        assert_non_null(mem2);
        memset(&err2, 0, sizeof(err2));
        other = make_heap(f->entry, mem2, ARENA_SIZE, &err2);
        q = hk_malloc(other, small_size(f, 32));
        assert_non_null(q);
        misuse_free(f, q, kinds);
        assert_int_equal(err2.count, 0);
        hk_free(other, q);
        assert_int_equal(hk_check(other), 0);
        free(mem2);
        break;
    }
    case CASE_STALE_REINIT: {
        /* a new heap on the same arena must not take the old heap's headers for its own */
        void *stale = f->live[4];
        size_t i;
        f->heap = make_heap(f->entry, f->arena, ARENA_SIZE, &f->err);
        for (i = 0; i < N_LIVE; i++) {
            f->live[i] = NULL;
        }
        alloc_filled(f, 0, small_size(f, 8));
        misuse_free(f, stale, kinds);
        break;
    }
    case CASE_NESTED_HEAP: {
        /* a heap living inside one of this heap's blocks hands out pointers this heap must refuse */
        size_t room = small_size(f, 8192);
        unsigned char *inner_arena = (unsigned char *)hk_malloc(f->heap, room);
        hk_status_t status;
        recorded_error_t inner_err;
        hk_heap_t *inner;
        void *q;
        assert_non_null(inner_arena);
        inner = f->entry->make(inner_arena, room, &status);
        if (inner == NULL) {
            print_message("[%s] %s: skipped: a %zu-byte block cannot hold this allocator\n", f->entry->name,
                          case_names[f->c], room);
            skip();
        }
        memset(&inner_err, 0, sizeof(inner_err));
        install_hook(inner, &inner_err);
        q = hk_malloc(inner, 16);
        assert_non_null(q);
        misuse_free(f, q, kinds);
        assert_int_equal(inner_err.count, 0);
        break;
    }
    case CASE_INTERIOR_ALIGNED:
        misuse_free(f, f->live[N_LIVE - 1] + HK_ALIGN, kinds);
        break;
    case CASE_INTERIOR_BYTE:
        misuse_free(f, f->live[N_LIVE - 1] + 1, kinds);
        break;
    case CASE_CORRUPT_HEADER: {
        /* break the block's metadata byte; put it back before checking the heap */
        unsigned char *p = f->live[3];
        unsigned char mask = 0;
        unsigned char *meta = metadata_byte(f, p, &mask);
        unsigned char saved;
        if (meta == NULL) {
            print_message("[%s] %s: skipped: no block metadata known to this test\n", f->entry->name,
                          case_names[f->c]);
            skip();
        }
        saved = *meta;
        snapshot(f);
        *meta = (unsigned char)(saved ^ mask);
        hk_free(f->heap, p);
        *meta = saved;
        assert_reported(f, kinds, p);
        assert_untouched(f, 0);
        break;
    }
    case CASE_FREE_AFTER_MOVE: {
        /* slot 1 sits between used blocks, so growing it far has to move it */
        unsigned char *old = f->live[1];
        size_t grow = small_size(f, 4096);
        unsigned char *moved = (unsigned char *)hk_realloc(f->heap, old, grow);
        assert_non_null(moved);
        if (moved == old) {
            skip();
        }
        f->live[1] = moved;
        misuse_free(f, old, kinds);
        break;
    }
    case CASE_USABLE_FOREIGN:
        snapshot(f);
        assert_int_equal(hk_usable_size(f->heap, &local), 0);
        assert_reported(f, kinds, &local);
        assert_untouched(f, 0);
        break;
    case CASE_REALLOC_FOREIGN:
        snapshot(f);
        assert_null(hk_realloc(f->heap, &local, 16));
        assert_reported(f, kinds, &local);
        assert_untouched(f, 1);
        break;
    case CASE_REALLOC_DOUBLE: {
        void *p = f->live[2];
        drop_slot(f, 2);
        snapshot(f);
        assert_null(hk_realloc(f->heap, p, 16));
        assert_reported(f, kinds, p);
        assert_untouched(f, 1);
        break;
    }
    case CASE_REALLOC_INTERIOR: {
        void *p = f->live[N_LIVE - 1] + HK_ALIGN;
        snapshot(f);
        assert_null(hk_realloc(f->heap, p, 16));
        assert_reported(f, kinds, p);
        assert_untouched(f, 1);
        break;
    }
    case CASE_USABLE_FREED: {
        void *p = f->live[2];
        drop_slot(f, 2);
        snapshot(f);
        assert_int_equal(hk_usable_size(f->heap, p), 0);
        assert_reported(f, kinds, p);
        assert_untouched(f, 0);
        break;
    }
    case CASE_CONTROL_PTR:
        /* the handle sits in the control data at the start of the arena, outside every block */
        misuse_free(f, f->heap, kinds);
        break;
    default:
        fail_msg("not a misuse case");
    }
}

/* Requests that must fail: NULL, one failure counted, no error report, nothing else changes. */
static void assert_clean_failure(fixture_t *f, void *p, const char *what)
{
    hk_stats_t now;
    if (p != NULL) {
        fail_msg("[%s] %s returned %p", f->entry->name, what, p);
    }
    assert_int_equal(f->err.count, 0);
    hk_get_stats(f->heap, &now);
    assert_int_equal(now.fail_count, f->snap.fail_count + 1u);
    now.fail_count = f->snap.fail_count;
    assert_memory_equal(&now, &f->snap, sizeof(now));
    assert_int_equal(hk_check(f->heap), 0);
}

static void test_calloc_overflow(fixture_t *f)
{
    static const size_t pairs[][2] = {{SIZE_MAX / 2 + 1, 3},
                                      {3, SIZE_MAX / 2 + 1},
                                      {SIZE_MAX, 2},
                                      {(size_t)1 << (sizeof(size_t) * 4), (size_t)1 << (sizeof(size_t) * 4)}};
    size_t i;
    for (i = 0; i < sizeof(pairs) / sizeof(pairs[0]); i++) {
        snapshot(f);
        assert_clean_failure(f, hk_calloc(f->heap, pairs[i][0], pairs[i][1]), "calloc overflow");
    }
}

static void test_malloc_size_max(fixture_t *f)
{
    size_t k;
    for (k = 0; k <= 4u * HK_ALIGN + 16u; k++) {
        snapshot(f);
        assert_clean_failure(f, hk_malloc(f->heap, SIZE_MAX - k), "malloc(SIZE_MAX - k)");
        snapshot(f);
        assert_clean_failure(f, hk_realloc(f->heap, f->live[0], SIZE_MAX - k), "realloc(p, SIZE_MAX - k)");
    }
    snapshot(f);
    assert_clean_failure(f, hk_malloc(f->heap, SIZE_MAX / 2 + 1), "malloc(SIZE_MAX / 2 + 1)");
    snapshot(f);
    assert_clean_failure(f, hk_malloc(f->heap, ARENA_SIZE + 1), "malloc(arena + 1)");
    if (f->entry->max_align > HK_ALIGN) {
        snapshot(f);
        assert_clean_failure(f, hk_aligned_alloc(f->heap, 64, SIZE_MAX - 8), "aligned_alloc(64, SIZE_MAX - 8)");
    }
    assert_block_intact(f->live[0], 0, f->live_size[0]);
}

static void test_malloc_zero(fixture_t *f)
{
    hk_stats_t before;
    hk_stats_t after;
    unsigned char *a;
    unsigned char *b;
    hk_get_stats(f->heap, &before);
    a = (unsigned char *)hk_malloc(f->heap, 0);
    b = (unsigned char *)hk_malloc(f->heap, 0);
    assert_non_null(a);
    assert_non_null(b);
    assert_ptr_not_equal(a, b);
    assert_int_equal((uintptr_t)a % HK_ALIGN, 0);
    assert_int_equal((uintptr_t)b % HK_ALIGN, 0);
    hk_get_stats(f->heap, &after);
    assert_int_equal(after.used_blocks, before.used_blocks + 2u);
    assert_int_equal(after.alloc_count, before.alloc_count + 2u);
    assert_int_equal(hk_check(f->heap), 0);
    /* a usable size, if any, must be distinct memory: writing one block leaves the other alone */
    memset(a, 0xAB, hk_usable_size(f->heap, a));
    memset(b, 0xCD, hk_usable_size(f->heap, b));
    if (hk_usable_size(f->heap, a) > 0) {
        assert_int_equal(a[0], 0xAB);
    }
    hk_free(f->heap, a);
    hk_free(f->heap, b);
    assert_int_equal(f->err.count, 0);
    hk_get_stats(f->heap, &after);
    assert_int_equal(after.used_blocks, before.used_blocks);
    if (f->entry->caps & HK_CATALOG_RECLAIMS) {
        assert_int_equal(after.free_bytes, before.free_bytes);
    }
    assert_int_equal(hk_check(f->heap), 0);
}

static void test_init_too_small(fixture_t *f)
{
    static const size_t sizes[] = {1, 8, 16, 64, sizeof(hk_heap_t)};
    size_t i;
    for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
        hk_status_t status = HK_OK;
        unsigned char *small = (unsigned char *)malloc(sizes[i]);
        assert_non_null(small);
        if (f->entry->make(small, sizes[i], &status) != NULL) {
            fail_msg("[%s] init accepted an arena of %zu bytes", f->entry->name, sizes[i]);
        }
        assert_int_equal(status, HK_ETOOSMALL);
        assert_null(f->entry->make(small, sizes[i], NULL)); /* status may be NULL */
        free(small);
    }
}

static void test_init_null(fixture_t *f)
{
    hk_status_t status = HK_OK;
    assert_null(f->entry->make(NULL, ARENA_SIZE, &status));
    assert_int_equal(status, HK_EINVAL);
    status = HK_OK;
    assert_null(f->entry->make(NULL, 0, &status));
    assert_int_equal(status, HK_EINVAL);
    assert_null(f->entry->make(NULL, ARENA_SIZE, NULL));
}

static void test_misaligned_arena(fixture_t *f)
{
    static const size_t offsets[] = {1, 3, 5, 7, HK_ALIGN - 1, HK_ALIGN + 1};
    size_t i;
    for (i = 0; i < sizeof(offsets) / sizeof(offsets[0]); i++) {
        unsigned char *mem = (unsigned char *)malloc(ARENA_SIZE + 16);
        unsigned char *arena = mem + offsets[i];
        recorded_error_t err;
        hk_heap_t *heap;
        hk_stats_t init;
        hk_stats_t st;
        void *p[8];
        size_t j;
        assert_non_null(mem);
        memset(&err, 0, sizeof(err));
        heap = make_heap(f->entry, arena, ARENA_SIZE, &err);
        assert_true((unsigned char *)heap >= arena && (unsigned char *)heap < arena + ARENA_SIZE);
        assert_int_equal(hk_check(heap), 0);
        hk_get_stats(heap, &init);
        assert_true(init.capacity > 0 && init.capacity <= ARENA_SIZE);
        for (j = 0; j < 8; j++) {
            size_t n = small_size(f, 1 + 97 * j);
            p[j] = hk_malloc(heap, n);
            assert_non_null(p[j]);
            assert_int_equal((uintptr_t)p[j] % HK_ALIGN, 0);
            assert_true((unsigned char *)p[j] >= arena && (unsigned char *)p[j] + n <= arena + ARENA_SIZE);
            memset(p[j], (int)j, n);
        }
        if (f->entry->max_align > HK_ALIGN) {
            size_t a = f->entry->max_align < 256 ? f->entry->max_align : 256;
            void *q = hk_aligned_alloc(heap, a, 40);
            assert_non_null(q);
            assert_int_equal((uintptr_t)q % a, 0);
            hk_free(heap, q);
        }
        assert_int_equal(hk_check(heap), 0);
        for (j = 0; j < 8; j++) {
            hk_free(heap, p[j]);
        }
        assert_int_equal(err.count, 0);
        assert_int_equal(hk_check(heap), 0);
        hk_get_stats(heap, &st);
        assert_int_equal(st.used_blocks, 0);
        if (f->entry->caps & HK_CATALOG_RECLAIMS) {
            assert_int_equal(st.free_bytes, init.free_bytes);
        }
        if (f->entry->caps & HK_CATALOG_RESTORES) {
            assert_int_equal(st.largest_free, init.largest_free);
        }
        free(mem);
    }
}

static void test_case(void **state)
{
    fixture_t *f = (fixture_t *)*state;
    const expectation_t *x = find_expectation(f->entry, f->c);
    unsigned kinds = x != NULL ? x->kinds : default_kinds[f->c];
#if HK_HARDENING == 0
    if (f->c < CASE_CALLOC_OVERFLOW) {
        print_message("[%s] %s: skipped: HK_HARDENING 0 checks nothing, misuse is undefined behaviour\n",
                      f->entry->name, case_names[f->c]);
        skip();
    }
#endif
    if (x != NULL && x->kinds == 0) {
        print_message("[%s] %s: skipped: %s\n", f->entry->name, case_names[f->c], x->skip_reason);
        skip();
    }
    switch (f->c) {
    case CASE_CALLOC_OVERFLOW:
        test_calloc_overflow(f);
        break;
    case CASE_MALLOC_SIZE_MAX:
        test_malloc_size_max(f);
        break;
    case CASE_MALLOC_ZERO:
        test_malloc_zero(f);
        break;
    case CASE_INIT_TOO_SMALL:
        test_init_too_small(f);
        break;
    case CASE_INIT_NULL:
        test_init_null(f);
        break;
    case CASE_MISALIGNED_ARENA:
        test_misaligned_arena(f);
        break;
    default:
        run_case(f, kinds);
        break;
    }
}

int main(int argc, char **argv)
{
    size_t n_entries = hk_catalog_count();
    size_t e;
    int failures = 0;
    if (argc > 2) {
        fprintf(stderr, "usage: test_misuse [allocator]\n");
        return 2;
    }
    if (argc == 2 && hk_catalog_find(argv[1]) == NULL) {
        fprintf(stderr, "unknown or unavailable allocator '%s'\n", argv[1]);
        return 2;
    }
    for (e = 0; e < n_entries; e++) {
        const hk_catalog_entry_t *entry = hk_catalog_at(e);
        struct CMUnitTest tests[CASE_COUNT];
        fixture_t *fixtures;
        char names[CASE_COUNT][96];
        char group[64];
        size_t c;
        if (argc == 2 && strcmp(argv[1], entry->name) != 0) {
            continue;
        }
        fixtures = (fixture_t *)calloc(CASE_COUNT, sizeof(*fixtures));
        if (fixtures == NULL) {
            return 1;
        }
        for (c = 0; c < CASE_COUNT; c++) {
            fixtures[c].entry = entry;
            fixtures[c].c = (misuse_case_t)c;
            snprintf(names[c], sizeof(names[c]), "%s: %s", entry->name, case_names[c]);
            memset(&tests[c], 0, sizeof(tests[c]));
            tests[c].name = names[c];
            tests[c].test_func = test_case;
            tests[c].setup_func = setup;
            tests[c].teardown_func = teardown;
            tests[c].initial_state = &fixtures[c];
        }
        snprintf(group, sizeof(group), "misuse[%s]", entry->name);
        failures += _cmocka_run_group_tests(group, tests, CASE_COUNT, NULL, NULL);
        free(fixtures);
    }
    return failures == 0 ? 0 : 1;
}
