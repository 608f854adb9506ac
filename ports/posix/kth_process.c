/* SPDX-License-Identifier: MIT */
/*
 * hk-kth-process: the buddy-kth seed's benchmark process on the C library's
 * malloc, for measuring libheapkit_malloc.so's return of free regions to the
 * OS (HEAPKIT_RELEASE) under LD_PRELOAD.
 *
 * The request sequence is exactly the lab's `kth` workload
 * (lab/heapkit/workloads.py: SplitMix64, a uniform level of 8, a uniform
 * size within the level for a 24-byte header, a random slot of the buffer
 * whose old block is freed first), so the numbers line up with the lab's
 * replays. Every `every` operations it samples memory: under heapkit, the
 * bytes mapped from the OS, the usable bytes of live blocks and the free
 * bytes inside the regions (heapkit_malloc_info); otherwise glibc's
 * mallinfo2 (arena + mmapped bytes, in-use bytes, free bytes), which is
 * meaningless under another preloaded malloc. Each malloc and free is timed
 * with CLOCK_MONOTONIC.
 *
 *   hk-kth-process [allocs [slots [seed [every [level]]]]]   (50000 4096 1 500 all)
 *
 * With a level (0-7), every size is drawn from that level only, as the
 * paper's per-level benchmark (its Figure 4) does; the level is still drawn
 * from the generator first, so the slots follow the same sequence.
 *
 * Prints one JSON object: the parameters, the source of the memory figures,
 * the series, the final counters, per-call time quantiles in ns and the
 * median and mean malloc time of each tenth of the run (the paper's
 * Figure 3: cost over the run).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stddef.h>
#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "heapkit_malloc.h"

#define LEVELS 8
#define MIN_BLOCK 32
#define HEADER 24
#define WINDOWS 10

typedef struct rng {
    uint64_t state;
} rng_t;

static uint64_t next64(rng_t *r)
{
    uint64_t z = (r->state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static uint64_t below(rng_t *r, uint64_t n) { return (uint64_t)(((unsigned __int128)next64(r) * n) >> 64); }

typedef struct sample {
    size_t op;
    size_t mapped;
    size_t used;
    size_t free_bytes;
    size_t regions;
} sample_t;

/* One field of every sample as a JSON array: "name": [v, ...] then tail. */
static void print_column(const char *name, const sample_t *series, size_t n, size_t offset, const char *tail)
{
    printf("\"%s\": [", name);
    for (size_t i = 0; i < n; i++) {
        size_t value;
        memcpy(&value, (const char *)&series[i] + offset, sizeof value);
        printf("%s%zu", i ? ", " : "", value);
    }
    printf("]%s", tail);
}

static heapkit_malloc_info_fn query;

static void sample_memory(size_t op, sample_t *s)
{
    s->op = op;
    if (query != NULL) {
        heapkit_malloc_info_t in;
        query(&in);
        s->mapped = in.region_bytes + in.big_bytes;
        s->used = in.used_bytes;
        s->free_bytes = in.free_bytes;
        s->regions = in.regions;
    } else {
        struct mallinfo2 mi = mallinfo2();
        s->mapped = mi.arena + mi.hblkhd;
        s->used = mi.uordblks + mi.hblkhd;
        s->free_bytes = mi.fordblks;
        s->regions = 0;
    }
}

static uint64_t now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static int by_value(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a;
    uint64_t y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

/* Scratch arrays come from mmap so that they do not sit in the heap being measured. */
static void *scratch(size_t bytes)
{
    void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
        fprintf(stderr, "hk-kth-process: cannot map %zu bytes\n", bytes);
        exit(1);
    }
    return p;
}

static void print_quantiles(const char *name, uint64_t *t, size_t n, int last)
{
    double sum = 0;
    qsort(t, n, sizeof(*t), by_value);
    for (size_t i = 0; i < n; i++) {
        sum += (double)t[i];
    }
    printf("\"%s\": {\"count\": %zu, \"p50\": %llu, \"p90\": %llu, \"p99\": %llu, \"max\": %llu, \"mean\": %.1f}%s\n",
           name, n, n ? (unsigned long long)t[n / 2] : 0ull, n ? (unsigned long long)t[n * 9 / 10] : 0ull,
           n ? (unsigned long long)t[n * 99 / 100] : 0ull, n ? (unsigned long long)t[n - 1] : 0ull,
           n ? sum / (double)n : 0.0, last ? "" : ",");
}

/* The median and mean of each tenth of the malloc times, in call order (sorts each tenth in place). */
static void print_windows(uint64_t *t, size_t n)
{
    printf("\"malloc_windows\": [");
    for (size_t w = 0; w < WINDOWS; w++) {
        size_t lo = n * w / WINDOWS;
        size_t len = n * (w + 1) / WINDOWS - lo;
        double sum = 0;
        for (size_t i = 0; i < len; i++) {
            sum += (double)t[lo + i];
        }
        qsort(t + lo, len, sizeof(*t), by_value);
        printf("%s{\"calls\": %zu, \"p50\": %llu, \"mean\": %.1f}", w ? ", " : "", len,
               len ? (unsigned long long)t[lo + len / 2] : 0ull, len ? sum / (double)len : 0.0);
    }
    printf("],\n");
}

static size_t arg(int argc, char **argv, int i, size_t fallback)
{
    char *end;
    unsigned long long v;
    if (argc <= i) {
        return fallback;
    }
    v = strtoull(argv[i], &end, 10);
    if (*end != '\0' || v == 0) {
        fprintf(stderr, "hk-kth-process: argument %d: %s: not a positive integer\n", i, argv[i]);
        exit(2);
    }
    return (size_t)v;
}

int main(int argc, char **argv)
{
    size_t allocs = arg(argc, argv, 1, 50000);
    size_t slots = arg(argc, argv, 2, 4096);
    uint64_t seed = arg(argc, argv, 3, 1);
    size_t every = arg(argc, argv, 4, 500);
    /* 0 is a level, so the fifth argument is parsed on its own; LEVELS means every level. */
    size_t only = LEVELS;
    size_t lo[LEVELS];
    size_t hi[LEVELS];
    void **buf;
    uint64_t *t_malloc;
    uint64_t *t_free;
    size_t n_malloc = 0;
    size_t n_free = 0;
    sample_t *series;
    size_t n_series = 0;
    rng_t rng = {seed};
    uint64_t start;
    uint64_t wall;
    heapkit_malloc_info_t fin;
    void *sym = dlsym(RTLD_DEFAULT, "heapkit_malloc_info");

    if (argc > 6) {
        fprintf(stderr, "usage: hk-kth-process [allocs [slots [seed [every [level]]]]]\n");
        return 2;
    }
    if (argc == 6) {
        char *end;
        unsigned long v = strtoul(argv[5], &end, 10);
        if (*end != '\0' || end == argv[5] || v >= LEVELS) {
            fprintf(stderr, "hk-kth-process: argument 5: %s: not a level 0-%d\n", argv[5], LEVELS - 1);
            return 2;
        }
        only = (size_t)v;
    }
    memcpy(&query, &sym, sizeof(query)); /* ISO C has no object-to-function pointer cast */
    for (int k = 0; k < LEVELS; k++) {
        hi[k] = ((size_t)MIN_BLOCK << k) - HEADER;
        lo[k] = k == 0 ? 1 : ((size_t)MIN_BLOCK << (k - 1)) - HEADER + 1;
    }
    buf = scratch(slots * sizeof(*buf));
    t_malloc = scratch(allocs * sizeof(*t_malloc));
    t_free = scratch(allocs * sizeof(*t_free));
    series = scratch((allocs / every + 2) * sizeof(*series));

    sample_memory(0, &series[n_series++]);
    start = now_ns();
    for (size_t i = 0; i < allocs; i++) {
        size_t level = (size_t)below(&rng, LEVELS);
        size_t size;
        if (only < LEVELS) {
            level = only;
        }
        size = lo[level] + (size_t)below(&rng, hi[level] - lo[level] + 1);
        size_t slot = (size_t)below(&rng, slots);
        uint64_t t0;
        if (buf[slot] != NULL) {
            t0 = now_ns();
            free(buf[slot]);
            t_free[n_free++] = now_ns() - t0;
        }
        t0 = now_ns();
        buf[slot] = malloc(size);
        t_malloc[n_malloc++] = now_ns() - t0;
        if (buf[slot] == NULL) {
            fprintf(stderr, "hk-kth-process: malloc(%zu) failed\n", size);
            return 1;
        }
        memset(buf[slot], 0x5A, size);
        if ((i + 1) % every == 0) {
            sample_memory(i + 1, &series[n_series++]);
        }
    }
    wall = now_ns() - start;

    printf("{\"allocs\": %zu, \"slots\": %zu, \"seed\": %llu, \"every\": %zu, \"level\": ", allocs, slots,
           (unsigned long long)seed, every);
    if (only < LEVELS) {
        printf("%zu,\n", only);
    } else {
        printf("null,\n");
    }
    printf("\"source\": \"%s\", \"wall_ns\": %llu,\n", query != NULL ? "heapkit" : "mallinfo2",
           (unsigned long long)wall);
    if (query != NULL) {
        query(&fin);
        printf("\"heapkit\": {\"allocator\": \"%s\", \"release\": %d, \"region_maps\": %zu, \"region_unmaps\": %zu, "
               "\"mapped_peak\": %zu, \"regions\": %zu},\n",
               fin.allocator, fin.release, fin.region_maps, fin.region_unmaps, fin.mapped_peak, fin.regions);
    }
    printf("\"series\": {");
    print_column("op", series, n_series, offsetof(sample_t, op), ",\n");
    print_column("mapped", series, n_series, offsetof(sample_t, mapped), ",\n");
    print_column("used", series, n_series, offsetof(sample_t, used), ",\n");
    print_column("free", series, n_series, offsetof(sample_t, free_bytes), ",\n");
    print_column("regions", series, n_series, offsetof(sample_t, regions), "},\n");
    print_windows(t_malloc, n_malloc);
    printf("\"timing\": {\n");
    print_quantiles("malloc", t_malloc, n_malloc, 0);
    print_quantiles("free", t_free, n_free, 1);
    printf("}}\n");
    return 0;
}
