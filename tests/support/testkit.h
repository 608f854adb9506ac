/* SPDX-License-Identifier: MIT */
/*
 * Helpers shared by the unit tests (tests/test_<name>.c): fill patterns, a
 * seeded PRNG, walk snapshots and what they imply for hk_stats_t, expected
 * block layouts, stats comparisons, error-hook recording and a random
 * workload that checks the statistics after every operation.
 *
 * Failed checks are cmocka assertions; include this header after cmocka.h.
 */
#ifndef HEAPKIT_TESTS_TESTKIT_H
#define HEAPKIT_TESTS_TESTKIT_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "heapkit/heapkit.h"

/* A static arena aligned for any object, with room to misalign it by up to 64 bytes. */
#define TEST_ARENA(size)                                                                                               \
    union {                                                                                                            \
        unsigned char bytes[(size) + 64u];                                                                             \
        long double ld;                                                                                                \
        void *p;                                                                                                       \
        uint64_t u;                                                                                                    \
    }

/* ---- fill patterns ---- */

/* Writes n bytes of the pattern for seed: byte i is seed + 31 i (mod 256). */
void fill_pattern(void *p, size_t n, unsigned seed);
/* Nonzero when the first n bytes still hold the pattern fill_pattern wrote. */
int pattern_intact(const void *p, size_t n, unsigned seed);
#define assert_pattern(p, n, seed) assert_true(pattern_intact((p), (n), (seed)))

/* ---- seeded PRNG (splitmix64, one stream per test binary) ---- */

void rng_seed(uint64_t seed);
/* The next number in [0, n); n > 0. */
size_t rng_below(size_t n);

/* ---- walk snapshots ---- */

/* The blocks one walk visited, in order; the buffer grows as needed and is kept for reuse. */
typedef struct walk_log {
    size_t n;
    size_t cap;
    hk_block_info_t *b;
} walk_log_t;

#define WALK_LOG_EMPTY {0, 0, NULL}

/* An hk_walk_fn: appends the block to the walk_log_t passed as ctx. */
void collect_walk(void *ctx, const hk_block_info_t *block);
/* Empties w for the next walk and returns it (the ctx to pass with collect_walk). */
walk_log_t *walk_reset(walk_log_t *w);
void walk_release(walk_log_t *w);
/* Collects a walk through the uniform interface into w. */
const walk_log_t *collect_heap_walk(hk_heap_t *heap, walk_log_t *w);
/* Same number of blocks, each at the same start with the same size and state. */
void assert_same_walk(const walk_log_t *a, const walk_log_t *b);

/*
 * A stats snapshot agrees with a walk: capacity is the sum of the gross
 * sizes, free bytes, free and used block counts, granted bytes and the
 * largest and smallest free block are the walk's, and the bounds every
 * snapshot keeps hold (requested <= granted, min_ever_free <= free_bytes,
 * peak_used >= granted).
 */
void assert_stats_match_walk(const hk_stats_t *st, const walk_log_t *w);

/* ---- expected layouts ---- */

/* An expected block: offset from the first block, gross size (0: up to the end of the span), in use. */
typedef struct blk {
    size_t off;
    size_t size;
    int used;
} blk_t;

/* Appends a block to an expected layout of n blocks; returns the new count. */
size_t push_block(blk_t *layout, size_t n, size_t block_off, size_t size, int used);
/*
 * The blocks an aligned allocation cut from a free block at `from` leaves:
 * the gap in front (a free block, if any), the block of `gross` bytes and the
 * free rest of `rest` bytes (0: up to the end of the span). Appended to
 * layout[n]; returns the new count.
 */
size_t push_aligned_cut(blk_t *layout, size_t n, size_t from, size_t gap, size_t gross, size_t rest);
/* The walk is exactly the expected blocks, offsets counted from base; size 0 reaches to capacity. */
void assert_layout(const walk_log_t *w, uintptr_t base, size_t capacity, const blk_t *exp, size_t n);

/*
 * The gross size a request takes in a heap with `header` bytes in front of
 * each payload: rounded up to HK_ALIGN, never below min_block.
 */
size_t gross_size(size_t request, size_t header, size_t min_block);
/*
 * Where aligned_alloc must put a payload cut from a free block whose own
 * payload would be at `payload`: the next aligned address, moved on when the
 * gap in front would be too small (below min_gap) to be a free block.
 */
uintptr_t aligned_payload(uintptr_t payload, size_t alignment, size_t min_gap);

/* ---- stats ---- */

/* Stats through the uniform interface, every field pre-set so that one left unwritten shows up. */
hk_stats_t heap_stats(hk_heap_t *heap);
/* Equal in every field but the one at offset `skip` (offsetof(hk_stats_t, ...)). */
void assert_stats_equal_except(const hk_stats_t *a, const hk_stats_t *b, size_t skip);
#define assert_stats_equal_but(a, b, field) assert_stats_equal_except((a), (b), offsetof(hk_stats_t, field))
/* One free block over the whole capacity and nothing in use. */
void assert_stats_empty(const hk_stats_t *st);
/* No free byte left: no free block, largest and smallest free 0. */
void assert_stats_full(const hk_stats_t *st);

/*
 * check() notices a counter (one of some heap's stats fields) moved by
 * delta (wrapping: (size_t)-1 takes one away), and passes again once it is
 * put back.
 */
void assert_check_notices(hk_heap_t *checked, size_t *counter, size_t delta);

/* ---- init and hopeless requests ---- */

/* Sets a heap up in [arena, arena + size) for smallest_arena(): the heap, or NULL with *st saying why. */
typedef hk_heap_t *(*heap_init_fn)(void *ctx, void *arena, size_t size, hk_status_t *st);
/*
 * The smallest arena size init accepts, searched upwards from 0 (it must be
 * below limit): every smaller size is refused with HK_ETOOSMALL, that one
 * accepted with HK_OK.
 */
size_t smallest_arena(heap_init_fn init, void *ctx, void *arena, size_t limit);

/*
 * Requests no heap can meet: SIZE_MAX - k and max_span - k for k up to 64,
 * malloc and aligned_alloc(64, ...), half the address space, one byte more
 * than the capacity allows (capacity - header + 1), and calloc sizes whose
 * product overflows. Each returns NULL and counts one failure; nothing else
 * in the stats moves.
 */
void refuse_hopeless_requests(hk_heap_t *heap, size_t max_span, size_t header);

/*
 * A heap made on a LARGE_ARENA-byte arena, eight times what a 4-byte tag
 * spans (src/tagged.h): where spans_it, init succeeded and every byte but
 * the control data (at most control_most) is capacity, a request of all of
 * it succeeds, and blocks sit and merge beyond the first 256 KiB; otherwise
 * init refused the whole arena with HK_ETOOBIG (it never uses part of it).
 */
#define LARGE_ARENA ((size_t)2u << 20)
void expect_large_arena(hk_heap_t *heap, hk_status_t status, size_t control_most, size_t header, int spans_it);

/* ---- error hook ---- */

/* What the error hook saw: how many reports (atomic: lfpool reports from threads), the last one. */
typedef struct error_log {
    atomic_int count;
    hk_error_t last;
    const void *ptr;
    hk_heap_t *heap;
} error_log_t;

/* Installs an error hook on heap that records every report into log (emptied first). */
void record_errors(hk_heap_t *heap, error_log_t *log);
/* log has seen `count` reports, the last of this kind about ptr. */
void expect_error(const error_log_t *log, int count, hk_error_t kind, const void *ptr);

/*
 * free, usable_size and realloc (to 16 bytes) on a bad pointer, through the
 * uniform interface, whose ops are the allocator's own calls: each one is
 * reported as `want` about `bad` on this heap, and nothing in the stats
 * moves but error_count, up by three.
 */
void assert_misuse_harmless(hk_heap_t *heap, const error_log_t *log, void *bad, hk_error_t want);

/* ---- random workload with exact statistics ---- */

#define STATS_WORKLOAD_LIVE 64u

/*
 * Seeded malloc, aligned_alloc (a fifth of them), realloc and free through
 * the uniform interface, with up to STATS_WORKLOAD_LIVE blocks live. After
 * every step hk_get_stats must match the test's bookkeeping (requested
 * bytes, operation and failure counts, used blocks) and a walk (free and
 * granted bytes, their low- and high-water marks, including the moment a
 * moving realloc holds both blocks).
 */
typedef struct stats_workload {
    hk_heap_t *heap;
    size_t header; /* bytes a block takes beyond its usable size */
    void *live[STATS_WORKLOAD_LIVE];
    size_t len[STATS_WORKLOAD_LIVE];
    size_t nlive;
    size_t requested;
    size_t min_free;
    size_t allocs;
    size_t frees;
    size_t reallocs;
    size_t fails;
} stats_workload_t;

void stats_workload_start(stats_workload_t *w, hk_heap_t *heap, size_t header, uint64_t seed);
/* One random operation and the full comparison; returns the stats it checked. */
hk_stats_t stats_workload_step(stats_workload_t *w);
/* Frees every live block; the low- and high-water marks stay where the workload left them. */
void stats_workload_finish(stats_workload_t *w);

#endif
