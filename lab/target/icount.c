/* SPDX-License-Identifier: MIT */
/*
 * The instruction counter's driver, the same on every target (see
 * icount.h): replays a compact trace, streamed from a host file, against
 * each allocator named on the command line (every non-optional one by
 * default), one after the other on the same arena, and prints JSON lines on
 * semihosting stdout for lab/heapkit/target.py:
 *
 *   {"type":"calibration", ...}   the measuring window checked on callees of
 *                                 known length (0, 1 and 1000 instructions)
 *                                 and the bump probe (probe.c)
 *   {"type":"trace", ...}         the trace's header
 *   {"type":"result", ...}        per allocator: count, min, max (+ its
 *                                 record), sum and saturated per operation
 *                                 kind; failures; pattern corruptions; a
 *                                 checksum of every count
 *   {"type":"skipped", ...}       an allocator that refused the arena
 *   {"type":"end", ...}
 *
 * Command line (semihosting): --trace=FILE [--counts=PREFIX] [ALLOCATOR...]
 * (default: every allocator not marked optional: the uniform-layer variants
 * but tlsf-uniform, and the "selftest" family, run only when named), or
 * --list (one line per allocator: name, family, "default" or "optional").
 * FILE is the compact trace on the host. With --counts every count word is
 * also written, through semihosting, to the host file PREFIX<allocator>.u32
 * (little-endian, one word per record: kind << 29 | instructions, kind 7
 * for a record that made no call); the host takes the percentiles from it
 * (nearest rank, as the host engine's timings).
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

#if !defined(TGT_ARENA_SIZE) || !defined(TGT_MAX_SLOTS)
#error "TGT_ARENA_SIZE and TGT_MAX_SLOTS must be defined"
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

/* ---- the trace, streamed from the host -------------------------------- */

/*
 * The compact trace is read from a host file through semihosting, a chunk
 * at a time and never inside a measured window, so a trace may be longer
 * than the board's memory: only the live blocks' slots (TGT_MAX_SLOTS) must
 * fit. The counts go back the same way, a chunk at a time.
 */
#define CHUNK_WORDS 8192u

uint32_t tgt_trace_header[TGT_HKC_HEADER_WORDS];
static uint32_t slot_words[3u * TGT_MAX_SLOTS];
static uint32_t trace_chunk[CHUNK_WORDS];
static uint32_t count_chunk[CHUNK_WORDS];

typedef struct stream {
    int fd;
    uint32_t at;          /* next word in trace_chunk */
    uint32_t have;        /* words in trace_chunk */
    uint32_t words_left;  /* payload words not yet read from the file */
} stream_t;

static uint32_t *slot_of(uint32_t s) { return &slot_words[3u * s]; }

/* Reads up to n bytes; the bytes read, short only at the end of the file or on an error. */
static size_t read_fully(int fd, void *buf, size_t n)
{
    size_t done = 0;
    while (done < n) {
        ssize_t got = read(fd, (uint8_t *)buf + done, n - done);
        if (got <= 0) {
            break;
        }
        done += (size_t)got;
    }
    return done;
}

static int write_fully(int fd, const void *buf, size_t n)
{
    size_t done = 0;
    while (done < n) {
        ssize_t put = write(fd, (const uint8_t *)buf + done, n - done);
        if (put <= 0) {
            return -1;
        }
        done += (size_t)put;
    }
    return 0;
}

/* Opens the trace and reads its header into tgt_trace_header; NULL when fine, else why not. */
static const char *open_trace(stream_t *st, const char *path)
{
    st->fd = open(path, O_RDONLY);
    st->at = st->have = 0;
    if (st->fd < 0) {
        return "cannot open the trace file on the host";
    }
    if (read_fully(st->fd, tgt_trace_header, sizeof(tgt_trace_header)) != sizeof(tgt_trace_header) ||
        tgt_trace_header[0] != TGT_HKC_MAGIC || tgt_trace_header[1] != TGT_HKC_VERSION) {
        close(st->fd);
        return "the trace file is not a compact trace (bad magic or version)";
    }
    if (tgt_trace_header[3] > TGT_MAX_SLOTS) {
        close(st->fd);
        return "the trace holds more blocks live at once than the driver's slot table";
    }
    st->words_left = tgt_trace_header[4];
    return NULL;
}

/* The next words of the payload, at least `need` of them unless the payload ends first; *avail says how many. */
static const uint32_t *trace_words(stream_t *st, uint32_t need, uint32_t *avail)
{
    if (st->have - st->at < need && st->words_left != 0) {
        uint32_t keep = st->have - st->at;
        uint32_t want = CHUNK_WORDS - keep;
        size_t got;
        memmove(trace_chunk, trace_chunk + st->at, keep * 4u);
        if (want > st->words_left) {
            want = st->words_left;
        }
        got = read_fully(st->fd, trace_chunk + keep, want * 4u) / 4u;
        st->words_left = got == want ? st->words_left - want : 0;
        st->at = 0;
        st->have = keep + (uint32_t)got;
    }
    *avail = st->have - st->at;
    return trace_chunk + st->at;
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

/* One record at word w, of `avail` words there; returns the words it took (0: malformed), its count word in *out. */
static uint32_t step(replay_t *r, const uint32_t *w, uint32_t avail, uint32_t *out)
{
    const tgt_heap_t *h = r->h;
    uint32_t op = w[0] & 7u;
    uint32_t s = w[0] >> 3;
    uint32_t *slot = slot_of(s);
    uint32_t n = 0;
    uint32_t kind = KIND_NONE;
    uint32_t words = op == TGT_OP_FREE ? 1u : (op == TGT_OP_CALLOC || op == TGT_OP_ALIGNED) ? 3u : 2u;
    uintptr_t p = 0;

    if (words > avail) {
        return 0;
    }
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

/*
 * Kept as the counts stream past: what needs no sorting. The percentiles
 * come from the counts file on the host (lab/heapkit/target.py), which
 * checks it against the checksum and these figures.
 */
typedef struct kind_stats {
    uint32_t count;
    uint32_t min;
    uint32_t max;
    uint32_t max_record;
    uint32_t saturated;
    uint64_t sum;
} kind_stats_t;

static void note_count(kind_stats_t *ks, uint32_t word, uint32_t record)
{
    uint32_t c = word & COUNT_MASK;
    if (ks->count == 0 || c < ks->min) {
        ks->min = c;
    }
    if (ks->count == 0 || c > ks->max) {
        ks->max = c;
        ks->max_record = record;
    }
    ks->count++;
    ks->sum += c;
    ks->saturated += c == COUNT_SATURATED;
}

static void print_kind(const kind_stats_t *ks, uint32_t kind, int first)
{
    printf("%s\"%s\":{\"count\":%lu", first ? "" : ",", kind_names[kind], (unsigned long)ks->count);
    if (ks->count == 0) {
        printf(",\"min\":null,\"max\":null,\"max_record\":null,\"sum\":0,\"saturated\":0}");
        return;
    }
    printf(",\"min\":%lu,\"max\":%lu,\"max_record\":%lu,\"sum\":%llu,\"saturated\":%lu}", (unsigned long)ks->min,
           (unsigned long)ks->max, (unsigned long)ks->max_record, (unsigned long long)ks->sum,
           (unsigned long)ks->saturated);
}

static void print_result(const tgt_alloc_t *a, const tgt_heap_t *h, const replay_t *r, const kind_stats_t *ks,
                         uint32_t records, uint32_t checksum)
{
    uint32_t total = 0;
    uint32_t k;
    for (k = 0; k < TGT_KINDS; k++) {
        total += r->fail[k];
    }
    printf("{\"type\":\"result\",\"alloc\":\"%s\",\"family\":\"%s\",\"records\":%lu,\"ops\":{", a->name, a->family,
           (unsigned long)records);
    for (k = 0; k < TGT_KINDS; k++) {
        print_kind(&ks[k], k, k == 0);
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
    printf(",\"checksum\":\"%08lx\"}\n", (unsigned long)checksum);
}

/* ---- the run ---------------------------------------------------------- */

static const char *trace_path;
static const char *counts_prefix;

static int run_error(const tgt_alloc_t *a, const char *message, uint32_t record)
{
    printf("{\"type\":\"error\",\"alloc\":\"%s\",\"message\":\"%s (record %lu)\"}\n", a->name, message,
           (unsigned long)record);
    return 2;
}

/* PREFIX<name>.u32 on the host, opened for the counts; -1 when it cannot be. */
static int open_counts(const char *name)
{
    char path[256];
    if ((size_t)snprintf(path, sizeof(path), "%s%s.u32", counts_prefix, name) >= sizeof(path)) {
        return -1;
    }
    return open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
}

static int run_one(const tgt_alloc_t *a)
{
    tgt_heap_t h;
    replay_t r;
    stream_t st;
    kind_stats_t ks[TGT_KINDS];
    const char *why;
    uint32_t records;
    uint32_t i;
    uint32_t pending = 0;
    uint32_t sum = 2166136261u;
    int counts_fd = -1;

    memset(&h, 0, sizeof(h));
    memset(&r, 0, sizeof(r));
    memset(ks, 0, sizeof(ks));
    if ((why = open_trace(&st, trace_path)) != NULL) {
        return run_error(a, why, 0);
    }
    records = tgt_trace_header[2];
    h.lo = tgt_arena;
    h.hi = tgt_arena + TGT_ARENA_SIZE;
    if (a->setup(&h, tgt_arena, TGT_ARENA_SIZE, a->arg) != 0) {
        close(st.fd);
        printf("{\"type\":\"skipped\",\"alloc\":\"%s\",\"reason\":\"setup refused the arena or ran twice\"}\n",
               a->name);
        return 0;
    }
    if (counts_prefix != NULL && (counts_fd = open_counts(a->name)) < 0) {
        close(st.fd);
        return run_error(a, "cannot write its counts file on the host", 0);
    }
    r.h = &h;
    memset(slot_words, 0, 12u * tgt_trace_header[3]);
    for (i = 0; i < records; i++) {
        uint32_t avail;
        const uint32_t *w = trace_words(&st, 3, &avail);
        uint32_t word = 0;
        uint32_t used = avail != 0 && (w[0] >> 3) < tgt_trace_header[3] ? step(&r, w, avail, &word) : 0;
        uint32_t kind = word >> KIND_SHIFT;
        if (used == 0) {
            close(st.fd);
            if (counts_fd >= 0) {
                close(counts_fd);
            }
            return run_error(a, "the trace is malformed or truncated", i);
        }
        st.at += used;
        if (h.settle != NULL) {
            h.settle();
        }
        if (kind < TGT_KINDS) {
            note_count(&ks[kind], word, i);
        }
        sum = (sum ^ word) * 16777619u;
        count_chunk[pending++] = word;
        if (pending == CHUNK_WORDS || i + 1u == records) {
            if (counts_fd >= 0 && write_fully(counts_fd, count_chunk, pending * 4u) != 0) {
                close(st.fd);
                close(counts_fd);
                return run_error(a, "cannot write its counts file on the host", i);
            }
            pending = 0;
        }
    }
    close(st.fd);
    if (counts_fd >= 0 && close(counts_fd) != 0) {
        return run_error(a, "cannot write its counts file on the host", records);
    }
    print_result(a, &h, &r, ks, records, sum);
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
    stream_t st;
    const char *why;
    int i;
    int rc = 0;

    setvbuf(stdout, NULL, _IOLBF, 256);
    if (!tgt_arena_placed()) {
        printf("{\"type\":\"error\",\"message\":\"the arena overlaps .bss, the stack or the heap\"}\n");
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
    for (; argc > 1 && strncmp(argv[1], "--", 2) == 0; argc--, argv++) {
        if (strncmp(argv[1], "--trace=", 8) == 0) {
            trace_path = argv[1] + 8;
        } else if (strncmp(argv[1], "--counts=", 9) == 0) {
            counts_prefix = argv[1] + 9;
        } else {
            printf("{\"type\":\"error\",\"message\":\"unknown option '%s'\"}\n", argv[1]);
            return 2;
        }
    }
    if (trace_path == NULL) {
        printf("{\"type\":\"error\",\"message\":\"no --trace=FILE given\"}\n");
        return 2;
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
    if ((why = open_trace(&st, trace_path)) != NULL) {
        printf("{\"type\":\"error\",\"message\":\"%s: %s\"}\n", trace_path, why);
        return 2;
    }
    close(st.fd);
    printf("{\"type\":\"trace\",\"records\":%lu,\"slots\":%lu,\"ids\":%lu,\"arena\":%lu,\"max_slots\":%lu}\n",
           (unsigned long)tgt_trace_header[2], (unsigned long)tgt_trace_header[3],
           (unsigned long)tgt_trace_header[5], (unsigned long)TGT_ARENA_SIZE, (unsigned long)TGT_MAX_SLOTS);
    if (argc > 1) {
        for (i = 1; i < argc && rc == 0; i++) {
            rc = run_one(find_alloc(argv[i]));
        }
    } else {
        size_t k;
        for (k = 0; k < tgt_alloc_count() && rc == 0; k++) {
            if (!tgt_alloc_at(k)->optional) {
                rc = run_one(tgt_alloc_at(k));
            }
        }
    }
    printf("{\"type\":\"end\",\"status\":%d,\"saturated_calls\":%lu}\n", rc, (unsigned long)saturated_calls);
    return rc;
}
