/* SPDX-License-Identifier: MIT */
/*
 * Randomised property test: test_property <allocator> [ops] [seed] [check_every]
 *
 * Runs a seeded mix of malloc/calloc/realloc/aligned_alloc/free through the
 * shadow model (tests/support/shadow.h) on a 256 KiB arena whose base is
 * misaligned by seed % HK_ALIGN bytes. Sizes are mostly small or medium,
 * sometimes up to 16 KiB, rarely larger than the arena, occasionally zero,
 * and now and then near SIZE_MAX (which must fail). The driver alternates
 * between filling (until allocations start failing or the live set reaches
 * its bound) and draining (to a random lower mark, a quarter of the time to
 * empty, where the shadow verifies the heap is back at its initial state).
 * Non-reclaiming allocators (bump) are reset when full instead of drained.
 *
 * Exit status 0 when every check held; the summary goes to stdout.
 */
#define _POSIX_C_SOURCE 200809L

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "heapkit/catalog.h"
#include "shadow.h"

#define ARENA_SIZE (256u * 1024u)
#define LIVE_BOUND 3000u
#define FAIL_STREAK 6u

typedef struct rng {
    uint64_t s;
} rng_t;

static uint64_t next_u64(rng_t *r)
{
    uint64_t z = (r->s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* Uniform in [0, n). */
static size_t below(rng_t *r, size_t n) { return n == 0 ? 0 : (size_t)(next_u64(r) % n); }

static size_t between(rng_t *r, size_t lo, size_t hi) { return lo + below(r, hi - lo + 1); }

/* A size that no allocator can satisfy. */
static size_t hopeless_size(rng_t *r)
{
    switch (below(r, 5)) {
    case 0:
        return SIZE_MAX;
    case 1:
        return SIZE_MAX - below(r, 64);
    case 2:
        return SIZE_MAX - HK_ALIGN - below(r, 2 * HK_ALIGN);
    case 3:
        return SIZE_MAX / 2 + 1 + below(r, 64);
    default:
        return ARENA_SIZE + 1 + below(r, 4096);
    }
}

static size_t draw_size(rng_t *r, size_t max_request)
{
    size_t x = below(r, 1000);
    size_t size;
    if (x < 20) {
        return 0;
    }
    if (x < 25) {
        return hopeless_size(r);
    }
    if (x < 520) {
        size = between(r, 1, 64);
    } else if (x < 870) {
        size = between(r, 65, 1024);
    } else if (x < 975) {
        size = between(r, 1025, 16384);
    } else {
        size = between(r, 16385, ARENA_SIZE + ARENA_SIZE / 4);
    }
    /* Pools: keep most requests within the largest block, a few beyond it. */
    if (size > max_request && below(r, 20) != 0) {
        size = below(r, max_request + 1);
    }
    return size;
}

static size_t draw_alignment(rng_t *r)
{
    size_t x = below(r, 100);
    if (x < 2) {
        return below(r, 2) ? 0 : (size_t)HK_ALIGN * 3;
    }
    return (size_t)1 << below(r, 13);
}

/* Wall time for the summary; the bare-metal libcs (ports/baremetal) have no POSIX clocks, only clock(). */
static double now_seconds(void)
{
#ifdef CLOCK_MONOTONIC
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
#else
    return (double)clock() / CLOCKS_PER_SEC;
#endif
}

static int usage(void)
{
    size_t i;
    fprintf(stderr, "usage: test_property <allocator> [ops] [seed] [check_every]\nallocators:");
    for (i = 0; i < hk_catalog_count(); i++) {
        fprintf(stderr, " %s", hk_catalog_at(i)->name);
    }
    fputc('\n', stderr);
    return 2;
}

int main(int argc, char **argv)
{
    const hk_catalog_entry_t *entry;
    shadow_config_t cfg;
    shadow_summary_t sum;
    shadow_t *s;
    rng_t rng;
    unsigned long long ops = 1000000ull;
    unsigned long long i;
    unsigned long long seed = 1;
    unsigned streak = 0;
    size_t low_mark = 0;
    int filling = 1;
    int rc = 0;
    double t0;

    if (argc < 2 || argc > 5) {
        return usage();
    }
    entry = hk_catalog_find(argv[1]);
    if (entry == NULL) {
        fprintf(stderr, "unknown or unavailable allocator '%s'\n", argv[1]);
        return usage();
    }
    if (argc > 2) {
        ops = strtoull(argv[2], NULL, 0);
    }
    if (argc > 3) {
        seed = strtoull(argv[3], NULL, 0);
    }
    memset(&cfg, 0, sizeof(cfg));
    cfg.arena_size = ARENA_SIZE;
    cfg.arena_offset = (size_t)(seed % HK_ALIGN);
    cfg.seed = seed;
    if (argc > 4) {
        cfg.check_every = (unsigned)strtoul(argv[4], NULL, 0);
    }
    rng.s = seed;

    t0 = now_seconds();
    s = shadow_new(entry, &cfg);
    if (s == NULL) {
        return 1;
    }
    for (i = 0; i < ops && rc == 0; i++) {
        size_t live = shadow_live(s);
        size_t x = below(&rng, 100);
        size_t victim = live != 0 ? below(&rng, live) : SHADOW_NONE;
        size_t size;
        unsigned long long failures;
        unsigned long long allocs;

        if (filling && (streak >= FAIL_STREAK || live >= LIVE_BOUND)) {
            if ((entry->caps & HK_CATALOG_RECLAIMS) == 0) {
                rc = shadow_reset(s);
                streak = 0;
                continue;
            }
            filling = 0;
            low_mark = below(&rng, 4) == 0 ? 0 : below(&rng, live / 2 + 1);
        } else if (!filling && live <= low_mark) {
            filling = 1;
            streak = 0;
        }
        /* Fill: 52% allocations, 14% reallocs, 31% frees. Drain: 22%, 12%, 66%. */
        if (!filling) {
            x = x < 22 ? x * 52 / 22 : x < 34 ? 52 + (x - 22) * 14 / 12 : 66 + (x - 34) * 30 / 62;
        }
        size = draw_size(&rng, entry->max_request);
        shadow_get_summary(s, &sum);
        failures = sum.failures;
        allocs = sum.allocs + sum.reallocs;
        if (x < 36) {
            rc = shadow_malloc(s, size);
        } else if (x < 44) {
            size_t count = between(&rng, 1, 16);
            if (below(&rng, 50) == 0) {
                rc = shadow_calloc(s, below(&rng, 2) ? SIZE_MAX / 2 + 1 : 3, below(&rng, 2) ? 3 : SIZE_MAX / 2 + 1);
            } else {
                rc = shadow_calloc(s, count, size / count);
            }
        } else if (x < 52) {
            rc = shadow_aligned(s, draw_alignment(&rng), size);
        } else if (x < 66) {
            size_t which = below(&rng, 40);
            if (which == 0 || victim == SHADOW_NONE) {
                rc = shadow_realloc(s, SHADOW_NONE, size);
            } else if (which == 1) {
                rc = shadow_realloc(s, victim, 0);
            } else if (which < 12) {
                /* small change: exercises in-place growth and shrinking */
                size_t old = shadow_live_size(s, victim);
                size_t delta = below(&rng, 64);
                rc = shadow_realloc(s, victim, below(&rng, 2) ? old + delta : (old > delta ? old - delta : 1));
            } else {
                rc = shadow_realloc(s, victim, size);
            }
        } else if (x < 97) {
            rc = shadow_free(s, victim);
        } else if (x < 98) {
            rc = shadow_free(s, SHADOW_NONE);
        } else {
            rc = shadow_probe(s, victim);
        }
        /* a run of failed allocations means the heap is full */
        shadow_get_summary(s, &sum);
        if (sum.failures > failures) {
            streak++;
        } else if (sum.allocs + sum.reallocs > allocs) {
            streak = 0;
        }
    }
    if (rc == 0) {
        rc = shadow_drain(s);
    }
    shadow_get_summary(s, &sum);
    printf("property %-12s %s: %llu ops, %llu allocs, %llu reallocs, %llu frees, %llu failures, %llu resets, "
           "%llu times empty, %.2f s (seed %llu)\n",
           entry->name, rc == 0 ? "ok" : "FAILED", sum.ops, sum.allocs, sum.reallocs, sum.frees, sum.failures,
           sum.resets, sum.empties, now_seconds() - t0, seed);
    shadow_delete(s);
    return rc == 0 ? 0 : 1;
}
