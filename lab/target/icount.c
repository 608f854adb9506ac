/* SPDX-License-Identifier: MIT */
/*
 * The instruction counter's driver, the same on every target (see
 * icount.h): replays the embedded trace against each allocator named on the
 * command line (every non-optional one by default), one after the other on
 * the same arena, and prints JSON lines on semihosting stdout for
 * lab/heapkit/target.py:
 *
 *   {"type":"calibration", ...}   the measuring window checked on callees of
 *                                 known length (0, 1 and 1000 instructions)
 *                                 and the bump probe (probe.c)
 *   {"type":"trace", ...}         the embedded trace
 *   {"type":"result", ...}        per allocator: count, min, p50, p99, p99.9,
 *                                 max (+ its record), sum and saturated per
 *                                 operation kind; failures; pattern
 *                                 corruptions; a checksum of every count
 *   {"type":"skipped", ...}       an allocator that refused the arena
 *   {"type":"end", ...}
 *
 * Command line (semihosting): [--counts=PREFIX] [ALLOCATOR...] (default:
 * every allocator not marked optional: the uniform-layer variants but
 * tlsf-uniform, and the "selftest" family, run only when named), or
 * --list (one line per allocator: name, family, "default" or "optional").
 * With --counts every count word is also written, through semihosting, to
 * the host file PREFIX<allocator>.u32 (little-endian, one word per record:
 * kind << 29 | instructions, kind 7 for a record that made no call).
 *
 * Measuring: the board's counter (counter_<target>.c) is armed before every
 * call, then read around it by measure_<target>.S; tgt_counter_insns()
 * turns the raw difference into instructions (Cortex-M3: SysTick ticks,
 * 3.2 per instruction under -icount shift=7, rounded; RV32: minstret, which
 * QEMU -icount advances by 128 ns of virtual time per instruction). The
 * empty window (calibrated at start-up) and the call instruction are
 * subtracted: a count is the instructions the callee executed, its return
 * included. A call long enough to wrap the counter (Cortex-M3: 2^24 ticks,
 * 5.2 million instructions; RV32: 2^32 ns, 33.5 million) saturates
 * (reported).
 *
 * Every operation's count is kept (tgt_counts, one word per record: kind in
 * the top 3 bits, count below); the percentiles are nearest-rank over the
 * sorted counts of one kind, as the host engine's timings are.
 *
 * Checks (outside the measured window): every block is filled with a
 * pattern unique to it and verified before it is freed or reallocated (and
 * the kept prefix after a realloc); calloc blocks must read zero; blocks
 * must lie inside the allocator's memory and be aligned as asked.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "heapkit/heapkit.h"
#include "icount.h"

#ifndef TGT_ARENA_SIZE
#error "TGT_ARENA_SIZE must be defined"
#endif

#define KIND_SHIFT 29u
#define KIND_NONE 7u /* a record that made no call (a free of a failed allocation) */
#define COUNT_MASK ((1u << KIND_SHIFT) - 1u)
#define COUNT_SATURATED COUNT_MASK

static const char *const kind_names[TGT_KINDS] = {"malloc", "free", "calloc", "aligned", "realloc"};

static uint32_t empty_insns;
static uint32_t saturated_calls;

/* Instructions fn(a0, a1, a2) executed; its result in *ret (when ret is not NULL). */
static uint32_t measure(const void *fn, uintptr_t a0, uintptr_t a1, uintptr_t a2, uintptr_t *ret)
{
    uint32_t raw;
    uint32_t n;
    tgt_counter_arm();
    raw = tgt_measure(fn, a0, a1, a2);
    if (ret != NULL) {
        *ret = tgt_measure_result;
    }
    if (tgt_counter_overflowed()) {
        saturated_calls++;
        return COUNT_SATURATED;
    }
    n = tgt_counter_insns(raw);
    return n > empty_insns + 1u ? n - empty_insns - 1u : 0u;
}

/* Raw units of the empty window: the same instructions at every reading, or the method is broken. */
static int calibrate(uint32_t *empty_raw)
{
    uint32_t first = 0;
    int i;
    for (i = 0; i < 16; i++) {
        uint32_t t;
        tgt_counter_arm();
        t = tgt_counter_insns(tgt_measure_empty());
        if (i == 0) {
            first = t;
        } else if (t != first) {
            return -1;
        }
    }
    tgt_counter_arm();
    *empty_raw = tgt_measure_empty();
    empty_insns = first;
    return 0;
}

/* ---- one replay ------------------------------------------------------- */

typedef struct replay {
    const tgt_heap_t *h;
    uint32_t seq;
    uint32_t fail[TGT_KINDS];
    uint32_t unsupported_aligned;
    uint32_t zero_null; /* malloc(0) answered NULL (FreeRTOS, umm): not a failure */
    uint32_t skipped_frees;
    uint32_t failed_realloc_frees;
    uint32_t corrupt_blocks;
    uint32_t calloc_not_zero;
    uint32_t misaligned;
    uint32_t bad_blocks;
    uint32_t max_record[TGT_KINDS];
    uint32_t max_count[TGT_KINDS];
} replay_t;

static uint32_t *slot_of(uint32_t s) { return &tgt_slot_words[3u * s]; }

static uint32_t seed_of(uint32_t seq)
{
    uint32_t h = seq * 0x9E3779B9u;
    h ^= h >> 15;
    h *= 0x85EBCA6Bu;
    h ^= h >> 13;
    return h | 0x01010101u; /* never all zero: a zeroed block never passes for a filled one */
}

static void fill(uint8_t *p, uint32_t n, uint32_t seed)
{
    uint32_t i = 0;
    if (((uintptr_t)p & 3u) == 0) {
        for (; i + 4u <= n; i += 4u) {
            *(uint32_t *)(void *)(p + i) = seed;
        }
    }
    for (; i < n; i++) {
        p[i] = (uint8_t)(seed >> ((i & 3u) * 8u));
    }
}

static int intact(const uint8_t *p, uint32_t n, uint32_t seed)
{
    uint32_t i = 0;
    if (((uintptr_t)p & 3u) == 0) {
        for (; i + 4u <= n; i += 4u) {
            if (*(const uint32_t *)(const void *)(p + i) != seed) {
                return 0;
            }
        }
    }
    for (; i < n; i++) {
        if (p[i] != (uint8_t)(seed >> ((i & 3u) * 8u))) {
            return 0;
        }
    }
    return 1;
}

static int all_zero(const uint8_t *p, uint32_t n)
{
    uint32_t i;
    for (i = 0; i < n; i++) {
        if (p[i] != 0) {
            return 0;
        }
    }
    return 1;
}

static uint32_t call(replay_t *r, const void *fn, uintptr_t x, uintptr_t y, uintptr_t *ret)
{
    const tgt_heap_t *h = r->h;
    return h->has_ctx ? measure(fn, h->ctx, x, y, ret) : measure(fn, x, y, 0, ret);
}

static uint32_t add_counts(uint32_t a, uint32_t b)
{
    return (a == COUNT_SATURATED || b == COUNT_SATURATED || a + b >= COUNT_SATURATED) ? COUNT_SATURATED : a + b;
}

/* The alignment a block must have: what was asked, and at least what every malloc result of this allocator has. */
static size_t want_align(const tgt_heap_t *h, size_t align) { return align > h->max_align ? align : h->max_align; }

/* A new block: checked, filled and put in slot s. */
static void adopt(replay_t *r, uint32_t s, uint8_t *p, uint32_t size, size_t align, int zeroed)
{
    const tgt_heap_t *h = r->h;
    uint32_t *w = slot_of(s);
    if (p < h->lo || p > h->hi || (size_t)(h->hi - p) < size) {
        r->bad_blocks++;
        w[0] = 0; /* never touched: it is not ours to write */
        return;
    }
    if (((uintptr_t)p & (align - 1u)) != 0) {
        r->misaligned++;
    }
    if (zeroed && !all_zero(p, size)) {
        r->calloc_not_zero++;
    }
    w[0] = (uint32_t)(uintptr_t)p;
    w[1] = size;
    w[2] = seed_of(++r->seq);
    fill(p, size, w[2]);
}

/* malloc(size) or its measured stand-in; the count, the block in *p. */
static uint32_t do_malloc(replay_t *r, uint32_t size, uintptr_t *p)
{
    return call(r, r->h->malloc_fn, size, 0, p);
}

static uint32_t do_free(replay_t *r, uintptr_t p) { return call(r, r->h->free_fn, p, 0, NULL); }

static void lost_allocation(replay_t *r, int kind, uint32_t size)
{
    if (size == 0 && kind == TGT_K_MALLOC) {
        r->zero_null++;
    } else {
        r->fail[kind]++;
    }
}

/* One record at word w; returns the words it took, its count word in *out. */
static uint32_t step(replay_t *r, const uint32_t *w, uint32_t *out)
{
    const tgt_heap_t *h = r->h;
    uint32_t op = w[0] & 7u;
    uint32_t s = w[0] >> 3;
    uint32_t *slot = slot_of(s);
    uint32_t n = 0;
    uint32_t kind = KIND_NONE;
    uint32_t words = 2;
    uintptr_t p = 0;

    switch (op) {
    case TGT_OP_MALLOC:
        kind = TGT_K_MALLOC;
        n = do_malloc(r, w[1], &p);
        if (p == 0) {
            lost_allocation(r, TGT_K_MALLOC, w[1]);
            slot[0] = 0;
        } else {
            adopt(r, s, (uint8_t *)p, w[1], want_align(h, 0), 0);
        }
        break;
    case TGT_OP_FREE:
        words = 1;
        if (slot[0] == 0) {
            r->skipped_frees++;
            break;
        }
        if (!intact((const uint8_t *)(uintptr_t)slot[0], slot[1], slot[2])) {
            r->corrupt_blocks++;
        }
        kind = TGT_K_FREE;
        n = do_free(r, slot[0]);
        slot[0] = 0;
        break;
    case TGT_OP_CALLOC: {
        uint32_t total = w[1] * w[2];
        words = 3;
        kind = TGT_K_CALLOC;
        if (h->calloc_fn != NULL) {
            n = call(r, h->calloc_fn, w[2], w[1], &p);
        } else if (w[1] == 0 || w[2] <= UINT32_MAX / w[1]) {
            n = do_malloc(r, total, &p);
            if (p != 0) {
                n = add_counts(n, measure((const void *)memset, p, 0, total, NULL));
            }
        }
        if (p == 0) {
            lost_allocation(r, TGT_K_CALLOC, total);
            slot[0] = 0;
        } else {
            adopt(r, s, (uint8_t *)p, total, want_align(h, 0), 1);
        }
        break;
    }
    case TGT_OP_ALIGNED:
        words = 3;
        kind = TGT_K_ALIGNED;
        if (h->aligned_fn != NULL) {
            n = call(r, h->aligned_fn, w[2], w[1], &p);
        } else if (w[2] <= h->max_align) {
            n = do_malloc(r, w[1], &p);
        } else {
            kind = KIND_NONE;
            r->unsupported_aligned++;
        }
        if (p == 0) {
            r->fail[TGT_K_ALIGNED]++;
            slot[0] = 0;
        } else {
            adopt(r, s, (uint8_t *)p, w[1], want_align(h, w[2]), 0);
        }
        break;
    case TGT_OP_REALLOC:
    case TGT_OP_REALLOC_NULL: {
        uint32_t old = op == TGT_OP_REALLOC ? slot[0] : 0;
        uint32_t old_size = op == TGT_OP_REALLOC ? slot[1] : 0;
        uint32_t old_seed = op == TGT_OP_REALLOC ? slot[2] : 0;
        uint32_t keep = old_size < w[1] ? old_size : w[1];
        kind = TGT_K_REALLOC;
        if (op == TGT_OP_REALLOC && old == 0) {
            r->skipped_frees++; /* its allocation failed: replayed as realloc(NULL, size) */
        }
        if (old != 0 && !intact((const uint8_t *)(uintptr_t)old, old_size, old_seed)) {
            r->corrupt_blocks++;
        }
        if (h->realloc_fn != NULL) {
            n = call(r, h->realloc_fn, old, w[1], &p);
        } else {
            n = do_malloc(r, w[1], &p);
            if (p != 0 && old != 0) {
                memcpy((void *)p, (const void *)(uintptr_t)old, keep);
                n = add_counts(n, do_free(r, old));
            }
        }
        if (p == 0) {
            r->fail[TGT_K_REALLOC]++;
            slot[0] = 0;
            if (old != 0) {
                r->failed_realloc_frees++;
                (void)do_free(r, old);
            }
            break;
        }
        if (old != 0 && !intact((const uint8_t *)p, keep, old_seed)) {
            r->corrupt_blocks++;
        }
        adopt(r, s, (uint8_t *)p, w[1], want_align(h, 0), 0);
        break;
    }
    default:
        words = 0; /* malformed: the caller stops */
        break;
    }
    *out = kind << KIND_SHIFT | (n & COUNT_MASK);
    return words;
}

/* ---- statistics ------------------------------------------------------- */

static void sift_down(uint32_t *a, size_t root, size_t n)
{
    for (;;) {
        size_t child = 2u * root + 1u;
        uint32_t t;
        if (child >= n) {
            return;
        }
        if (child + 1u < n && a[child + 1u] > a[child]) {
            child++;
        }
        if (a[root] >= a[child]) {
            return;
        }
        t = a[root];
        a[root] = a[child];
        a[child] = t;
        root = child;
    }
}

static void heap_sort(uint32_t *a, size_t n)
{
    size_t i;
    for (i = n / 2u; i-- > 0;) {
        sift_down(a, i, n);
    }
    for (i = n; i-- > 1;) {
        uint32_t t = a[0];
        a[0] = a[i];
        a[i] = t;
        sift_down(a, 0, i);
    }
}

/* Nearest rank: the smallest value with at least per_mille / 1000 of the values at or below it. */
static uint32_t rank(const uint32_t *sorted, size_t n, uint32_t per_mille)
{
    size_t k = (size_t)(((uint64_t)n * per_mille + 999u) / 1000u);
    return sorted[k == 0 ? 0 : k - 1u];
}

static void print_kind(const replay_t *r, uint32_t kind, size_t records, int first)
{
    size_t n = 0;
    size_t i;
    uint64_t sum = 0;
    uint32_t saturated = 0;
    for (i = 0; i < records; i++) {
        if (tgt_counts[i] >> KIND_SHIFT == kind) {
            uint32_t c = tgt_counts[i] & COUNT_MASK;
            tgt_scratch[n++] = c;
            sum += c;
            saturated += c == COUNT_SATURATED;
        }
    }
    printf("%s\"%s\":{\"count\":%lu", first ? "" : ",", kind_names[kind], (unsigned long)n);
    if (n == 0) {
        printf(",\"min\":null,\"p50\":null,\"p99\":null,\"p999\":null,\"max\":null,\"max_record\":null,"
               "\"sum\":0,\"saturated\":0}");
        return;
    }
    heap_sort(tgt_scratch, n);
    printf(",\"min\":%lu,\"p50\":%lu,\"p99\":%lu,\"p999\":%lu,\"max\":%lu,\"max_record\":%lu,\"sum\":%llu,"
           "\"saturated\":%lu}",
           (unsigned long)tgt_scratch[0], (unsigned long)rank(tgt_scratch, n, 500),
           (unsigned long)rank(tgt_scratch, n, 990), (unsigned long)rank(tgt_scratch, n, 999),
           (unsigned long)tgt_scratch[n - 1u], (unsigned long)r->max_record[kind], (unsigned long long)sum,
           (unsigned long)saturated);
}

static uint32_t checksum(size_t records)
{
    uint32_t h = 2166136261u;
    size_t i;
    for (i = 0; i < records; i++) {
        h = (h ^ tgt_counts[i]) * 16777619u;
    }
    return h;
}

static void print_result(const tgt_alloc_t *a, const tgt_heap_t *h, const replay_t *r, size_t records)
{
    uint32_t total = 0;
    uint32_t k;
    for (k = 0; k < TGT_KINDS; k++) {
        total += r->fail[k];
    }
    printf("{\"type\":\"result\",\"alloc\":\"%s\",\"family\":\"%s\",\"records\":%lu,\"ops\":{", a->name, a->family,
           (unsigned long)records);
    for (k = 0; k < TGT_KINDS; k++) {
        print_kind(r, k, records, k == 0);
    }
    printf("},\"emulated\":{\"realloc\":%s,\"calloc\":%s,\"aligned\":%s}", h->realloc_fn ? "false" : "true",
           h->calloc_fn ? "false" : "true", h->aligned_fn ? "false" : "true");
    printf(",\"failures\":{\"total\":%lu,\"malloc\":%lu,\"calloc\":%lu,\"aligned\":%lu,\"realloc\":%lu,"
           "\"unsupported_aligned\":%lu,\"zero_null\":%lu,\"skipped_frees\":%lu,\"failed_realloc_frees\":%lu}",
           (unsigned long)total, (unsigned long)r->fail[TGT_K_MALLOC], (unsigned long)r->fail[TGT_K_CALLOC],
           (unsigned long)r->fail[TGT_K_ALIGNED], (unsigned long)r->fail[TGT_K_REALLOC],
           (unsigned long)r->unsupported_aligned, (unsigned long)r->zero_null, (unsigned long)r->skipped_frees,
           (unsigned long)r->failed_realloc_frees);
    printf(",\"errors\":{\"corrupt_blocks\":%lu,\"calloc_not_zero\":%lu,\"misaligned\":%lu,\"bad_blocks\":%lu}",
           (unsigned long)r->corrupt_blocks, (unsigned long)r->calloc_not_zero, (unsigned long)r->misaligned,
           (unsigned long)r->bad_blocks);
    printf(",\"checksum\":\"%08lx\"}\n", (unsigned long)checksum(records));
}

/* ---- the run ---------------------------------------------------------- */

static const char *counts_prefix;

/* PREFIX<name>.u32 on the host; 0 when written. */
static int dump_counts(const char *name, size_t records)
{
    char path[256];
    int fd;
    size_t done = 0;
    if ((size_t)snprintf(path, sizeof(path), "%s%s.u32", counts_prefix, name) >= sizeof(path)) {
        return -1;
    }
    fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) {
        return -1;
    }
    while (done < records * 4u) {
        ssize_t n = write(fd, (const uint8_t *)tgt_counts + done, records * 4u - done);
        if (n <= 0) {
            close(fd);
            return -1;
        }
        done += (size_t)n;
    }
    return close(fd);
}

static int run_one(const tgt_alloc_t *a, size_t records)
{
    tgt_heap_t h;
    replay_t r;
    const uint32_t *w = tgt_trace + TGT_HKC_HEADER_WORDS;
    const uint32_t *last = w + tgt_trace[4];
    size_t i;

    memset(&h, 0, sizeof(h));
    memset(&r, 0, sizeof(r));
    h.lo = tgt_arena;
    h.hi = tgt_arena + TGT_ARENA_SIZE;
    if (a->setup(&h, tgt_arena, TGT_ARENA_SIZE, a->arg) != 0) {
        printf("{\"type\":\"skipped\",\"alloc\":\"%s\",\"reason\":\"setup refused the arena or ran twice\"}\n",
               a->name);
        return 0;
    }
    r.h = &h;
    memset(tgt_slot_words, 0, 12u * tgt_trace[3]);
    for (i = 0; i < records; i++) {
        uint32_t kind;
        uint32_t words = w < last ? step(&r, w, &tgt_counts[i]) : 0;
        if (words == 0) {
            printf("{\"type\":\"error\",\"alloc\":\"%s\",\"message\":\"embedded trace: record %lu is malformed\"}\n",
                   a->name, (unsigned long)i);
            return 2;
        }
        w += words;
        if (h.settle != NULL) {
            h.settle();
        }
        kind = tgt_counts[i] >> KIND_SHIFT;
        if (kind < TGT_KINDS && (tgt_counts[i] & COUNT_MASK) > r.max_count[kind]) {
            r.max_count[kind] = tgt_counts[i] & COUNT_MASK;
            r.max_record[kind] = (uint32_t)i;
        }
    }
    print_result(a, &h, &r, records);
    if (counts_prefix != NULL && dump_counts(a->name, records) != 0) {
        printf("{\"type\":\"error\",\"alloc\":\"%s\",\"message\":\"cannot write %s%s.u32 on the host\"}\n",
               a->name, counts_prefix, a->name);
        return 1;
    }
    return 0;
}

static int check_trace(void)
{
    if (tgt_trace[0] != TGT_HKC_MAGIC || tgt_trace[1] != TGT_HKC_VERSION) {
        printf("{\"type\":\"error\",\"message\":\"embedded trace: bad magic or version\"}\n");
        return -1;
    }
    if (tgt_trace[2] > tgt_trace_capacity[0] || tgt_trace[3] > tgt_trace_capacity[1]) {
        printf("{\"type\":\"error\",\"message\":\"embedded trace: larger than the arrays built for it\"}\n");
        return -1;
    }
    return 0;
}

static const tgt_alloc_t *find_alloc(const char *name)
{
    size_t i;
    for (i = 0; i < tgt_alloc_count(); i++) {
        if (strcmp(tgt_alloc_at(i)->name, name) == 0) {
            return tgt_alloc_at(i);
        }
    }
    return NULL;
}

static void print_calibration(uint32_t empty_raw)
{
    uint32_t nop = measure((const void *)tgt_cal_nop, 0, 0, 0, NULL);
    uint32_t n1000;
    uint32_t raw1000;
    uint32_t probe = measure((const void *)tgt_probe_bump_malloc, 24, 0, 0, NULL);
    uint32_t probe2 = measure((const void *)tgt_probe_bump_malloc, 1000, 0, 0, NULL);
    tgt_counter_arm();
    raw1000 = tgt_measure((const void *)tgt_cal_1000, 0, 0, 0);
    n1000 = measure((const void *)tgt_cal_1000, 0, 0, 0, NULL);
    printf("{\"type\":\"calibration\",");
    tgt_counter_describe(empty_raw, raw1000);
    printf(",\"empty_raw\":%lu,\"raw_1000\":%lu,\"empty_window_insns\":%lu,\"empty\":0,\"nop\":%lu,"
           "\"insns_1000\":%lu,\"probe_bump\":[%lu,%lu]}\n",
           (unsigned long)empty_raw, (unsigned long)raw1000, (unsigned long)empty_insns, (unsigned long)nop,
           (unsigned long)n1000, (unsigned long)probe, (unsigned long)probe2);
}

int main(int argc, char **argv)
{
    uint32_t empty_raw = 0;
    size_t records;
    int i;
    int rc = 0;

    setvbuf(stdout, NULL, _IOLBF, 256);
    if (!tgt_arena_placed()) {
        printf("{\"type\":\"error\",\"message\":\"the arena overlaps .bss or the stack\"}\n");
        return 2;
    }
    if (argc > 1 && strcmp(argv[1], "--list") == 0) {
        size_t k;
        for (k = 0; k < tgt_alloc_count(); k++) {
            const tgt_alloc_t *a = tgt_alloc_at(k);
            printf("%s %s %s\n", a->name, a->family, a->optional ? "optional" : "default");
        }
        return 0;
    }
    if (argc > 1 && strncmp(argv[1], "--counts=", 9) == 0) {
        counts_prefix = argv[1] + 9;
        argv++;
        argc--;
    }
    for (i = 1; i < argc; i++) {
        if (find_alloc(argv[i]) == NULL) {
            printf("{\"type\":\"error\",\"message\":\"unknown allocator '%s'\"}\n", argv[i]);
            return 2;
        }
    }
    tgt_counter_start();
    if (calibrate(&empty_raw) != 0) {
        printf("{\"type\":\"error\",\"message\":\"the empty measurement is not constant: no -icount?\"}\n");
        return 3;
    }
    print_calibration(empty_raw);
    if (check_trace() != 0) {
        return 2;
    }
    records = tgt_trace[2];
    printf("{\"type\":\"trace\",\"records\":%lu,\"slots\":%lu,\"ids\":%lu,\"arena\":%lu}\n", (unsigned long)records,
           (unsigned long)tgt_trace[3], (unsigned long)tgt_trace[5], (unsigned long)TGT_ARENA_SIZE);
    if (argc > 1) {
        for (i = 1; i < argc && rc == 0; i++) {
            rc = run_one(find_alloc(argv[i]), records);
        }
    } else {
        size_t k;
        for (k = 0; k < tgt_alloc_count() && rc == 0; k++) {
            if (!tgt_alloc_at(k)->optional) {
                rc = run_one(tgt_alloc_at(k), records);
            }
        }
    }
    printf("{\"type\":\"end\",\"status\":%d,\"saturated_calls\":%lu}\n", rc, (unsigned long)saturated_calls);
    return rc;
}
