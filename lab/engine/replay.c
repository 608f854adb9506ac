/* SPDX-License-Identifier: MIT */
/*
 * The replay loop (see replay.h). Per record it makes one uniform call,
 * optionally timed, then does O(1) amortised bookkeeping:
 *
 *   - a slot per id: pointer, requested and usable bytes, state;
 *   - live requested/granted bytes and their peaks;
 *   - the footprint (highest end offset of a live block), kept with a
 *     max-heap of block ends with lazy deletion: an alloc pushes its end, a
 *     free only pops when it removed the top block, and the heap is rebuilt
 *     from the live blocks when stale entries outnumber them;
 *   - the id's byte pattern written over the requested bytes, verified in
 *     full before the block is freed or reallocated (work proportional to
 *     the bytes requested, not to the number of blocks).
 *
 * Sampling (series, heap maps, the peak-live breakdown) happens at record
 * indices fixed before the loop, so the loop tests one index per record.
 */
#define _GNU_SOURCE
#include "replay.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#define HAVE_TSC 1
#endif

enum { S_UNBORN = 0, S_LIVE, S_LIVE_RAW, S_FAILED, S_DEAD };

typedef struct slot {
    unsigned char *ptr;
    uint64_t req;
    uint64_t usable;
} slot_t;

typedef struct fp_entry {
    uint64_t end;
    uint64_t id;
} fp_entry_t;

typedef struct fp_heap {
    fp_entry_t *a;
    size_t n;
    size_t cap;
} fp_heap_t;

typedef struct engine {
    const lab_trace_t *t;
    const lab_options_t *o;
    lab_result_t *r;
    hk_heap_t *heap;
    unsigned char *arena;
    size_t arena_size;
    int in_arena;
    slot_t *slot;
    uint8_t *state;
    /*
     * The footprint (docs/metrics.md): the blocks the walk reports on the fresh
     * heap are its pieces; each keeps the ends of the live blocks in it and
     * counts up to the highest of them.
     */
    size_t pieces;
    uint64_t *piece_start;  /* ascending arena offsets */
    fp_heap_t *piece_ends;  /* live block ends, a max-heap each */
    uint64_t *piece_live;   /* live blocks in each */
    uint64_t occupied;      /* sum over the pieces of (highest live end - piece start) */
    uint64_t control;       /* control data before the first piece */
    /*
     * With heapmap_owners, the live in-arena ids in no order (swap-remove on
     * free) and each one's index there: a snapshot names the owners of its
     * used blocks in O(live log live), however many ids the trace has.
     */
    uint64_t *live_ids;
    uint64_t *live_at;
    size_t nlive;
    int oom;
} engine_t;

double lab_now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

double lab_cpu_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static inline uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* The per-call clock: the TSC where it is invariant (cheaper to read), else CLOCK_MONOTONIC in ns. */
static int use_tsc;

static inline uint64_t stamp(void)
{
#ifdef HAVE_TSC
    if (use_tsc) {
        return __rdtsc();
    }
#endif
    return now_ns();
}

/* ---- patterns ---------------------------------------------------------- */

/* splitmix64 of the id: a different 8-byte word for every id. */
static inline uint64_t pattern_of(uint64_t id)
{
    uint64_t z = id + 0x9E3779B97F4A7C15u;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9u;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBu;
    return z ^ (z >> 31);
}

/*
 * The pattern repeats every 8 bytes, so filling doubles the written prefix
 * with memcpy and checking compares the block with itself shifted by 8:
 * both run at the C library's memcpy/memcmp speed.
 */
static void fill(unsigned char *p, uint64_t n, uint64_t id)
{
    uint64_t w = pattern_of(id);
    uint64_t done = n < 8 ? n : 8;
    memcpy(p, &w, (size_t)done);
    while (done < n) {
        uint64_t c = done < n - done ? done : n - done;
        memcpy(p + done, p, (size_t)c);
        done += c;
    }
}

/* 1 when the first n bytes at p still hold id's pattern. */
static int intact(const unsigned char *p, uint64_t n, uint64_t id)
{
    uint64_t w = pattern_of(id);
    if (n <= 8) {
        return memcmp(p, &w, (size_t)n) == 0;
    }
    return memcmp(p, &w, 8) == 0 && memcmp(p, p + 8, (size_t)(n - 8)) == 0;
}

static int all_zero(const unsigned char *p, uint64_t n)
{
    unsigned char acc = 0;
    uint64_t i;
    for (i = 0; i < n; i++) {
        acc |= p[i];
    }
    return acc == 0;
}

/* ---- footprint --------------------------------------------------------- */

/*
 * Each piece keeps its live blocks' ends in a max-heap with lazy deletion: an
 * alloc pushes its end, a free only pops when it removed the top block (so the
 * top is always a live block), and a heap is rebuilt from its live blocks when
 * stale entries outnumber them.
 */
static void fp_sift_down(fp_entry_t *a, size_t n, size_t i)
{
    fp_entry_t x = a[i];
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= n) {
            break;
        }
        if (c + 1 < n && a[c + 1].end > a[c].end) {
            c++;
        }
        if (a[c].end <= x.end) {
            break;
        }
        a[i] = a[c];
        i = c;
    }
    a[i] = x;
}

/* Drop the entries of dead blocks and restore the heap order: O(entries). */
static void fp_rebuild(const engine_t *e, fp_heap_t *h)
{
    size_t i;
    size_t n = 0;
    for (i = 0; i < h->n; i++) {
        if (e->state[h->a[i].id] == S_LIVE) {
            h->a[n++] = h->a[i];
        }
    }
    h->n = n;
    for (i = n / 2; i-- > 0;) {
        fp_sift_down(h->a, n, i);
    }
}

static void fp_push(engine_t *e, fp_heap_t *h, uint64_t live, uint64_t end, uint64_t id)
{
    size_t i;
    if (h->n == h->cap) {
        if (h->n > 2 * live + 64) {
            fp_rebuild(e, h);
        }
        if (h->n == h->cap) {
            size_t cap = h->cap != 0 ? 2 * h->cap : 8;
            fp_entry_t *a = realloc(h->a, cap * sizeof(*a));
            if (a == NULL) {
                e->oom = 1;
                return;
            }
            h->a = a;
            h->cap = cap;
        }
    }
    i = h->n++;
    while (i > 0 && h->a[(i - 1) / 2].end < end) {
        h->a[i] = h->a[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    h->a[i].end = end;
    h->a[i].id = id;
}

/* The top block was freed: pop dead entries until a live block is on top. */
static uint64_t fp_settle(const engine_t *e, fp_heap_t *h)
{
    while (h->n > 0 && e->state[h->a[0].id] != S_LIVE) {
        h->a[0] = h->a[--h->n];
        fp_sift_down(h->a, h->n, 0);
    }
    return h->n > 0 ? h->a[0].end : 0;
}

/* The piece holding arena offset off: the last one starting at or below it (0 below all). */
static size_t piece_of(const engine_t *e, uint64_t off)
{
    size_t lo = 0;
    size_t hi = e->pieces;
    while (hi - lo > 1) {
        size_t mid = lo + (hi - lo) / 2;
        if (e->piece_start[mid] <= off) {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    return lo;
}

/* The bytes piece i counts when top is its highest live block end (0: none). */
static uint64_t piece_bytes(const engine_t *e, size_t i, uint64_t top)
{
    return top > e->piece_start[i] ? top - e->piece_start[i] : 0;
}

static uint64_t piece_top(const engine_t *e, size_t i)
{
    return e->piece_ends[i].n > 0 ? e->piece_ends[i].a[0].end : 0;
}

/* F = control data + each piece up to its highest live block end; 0 with nothing live. */
static uint64_t footprint_now(const engine_t *e)
{
    return e->occupied > 0 ? e->control + e->occupied : 0;
}

/* ---- blocks ------------------------------------------------------------ */

static inline uint64_t end_offset(const engine_t *e, const slot_t *s)
{
    return (uint64_t)(uintptr_t)(s->ptr - e->arena) + s->usable;
}

/* Block p now belongs to id: account for it and write its pattern. */
static void adopt(engine_t *e, uint64_t id, void *p, uint64_t req, uint64_t rec)
{
    lab_result_t *r = e->r;
    slot_t *s = &e->slot[id];
    s->ptr = p;
    s->req = req;
    s->usable = hk_usable_size(e->heap, p);
    e->state[id] = S_LIVE;
    if (s->usable < req || (e->in_arena && ((uintptr_t)p < (uintptr_t)e->arena ||
                                            (uintptr_t)p + s->usable > (uintptr_t)e->arena + e->arena_size))) {
        r->bad_blocks++;
        e->state[id] = S_LIVE_RAW;
    }
    r->live_requested += req;
    r->live_granted += s->usable;
    r->live_blocks++;
    if (r->live_requested > r->peak_requested) {
        r->peak_requested = r->live_requested;
        r->peak_requested_rec = rec;
    }
    if (r->live_granted > r->peak_granted) {
        r->peak_granted = r->live_granted;
    }
    if (e->state[id] != S_LIVE) {
        return;
    }
    if (r->place != NULL && e->in_arena) {
        r->place[2 * id] = (uint64_t)(uintptr_t)((unsigned char *)p - e->arena);
        r->place[2 * id + 1] = s->usable;
    }
    if (e->live_ids != NULL) {
        e->live_at[id] = e->nlive;
        e->live_ids[e->nlive++] = id;
    }
    if (e->o->fill) {
        fill(p, req, id);
    }
    if (e->in_arena) {
        uint64_t end = end_offset(e, s);
        size_t i = piece_of(e, end - s->usable);
        uint64_t top = piece_top(e, i);
        fp_push(e, &e->piece_ends[i], e->piece_live[i]++, end, id);
        if (end > top) {
            e->occupied += piece_bytes(e, i, end) - piece_bytes(e, i, top);
        }
        r->footprint = footprint_now(e);
        if (end > r->peak_end) {
            r->peak_end = end;
        }
        if (r->footprint > r->peak_footprint) {
            r->peak_footprint = r->footprint;
            r->peak_footprint_rec = rec;
            r->requested_at_peak_footprint = r->live_requested;
        }
    }
}

/* id's block is gone (freed, or moved by realloc): drop it from the books. */
static void forget(engine_t *e, uint64_t id)
{
    lab_result_t *r = e->r;
    slot_t *s = &e->slot[id];
    int was_tracked = e->state[id] == S_LIVE;
    r->live_requested -= s->req;
    r->live_granted -= s->usable;
    r->live_blocks--;
    e->state[id] = S_DEAD;
    if (was_tracked && e->live_ids != NULL) {
        uint64_t last = e->live_ids[--e->nlive];
        e->live_ids[e->live_at[id]] = last;
        e->live_at[last] = e->live_at[id];
    }
    if (was_tracked && e->in_arena) {
        size_t i = piece_of(e, (uint64_t)(uintptr_t)(s->ptr - e->arena));
        fp_heap_t *h = &e->piece_ends[i];
        e->piece_live[i]--;
        if (h->n > 0 && h->a[0].id == id) {
            uint64_t top = h->a[0].end;
            e->occupied -= piece_bytes(e, i, top) - piece_bytes(e, i, fp_settle(e, h));
            r->footprint = footprint_now(e);
        }
    }
}

static void check_pattern(engine_t *e, uint64_t id, uint64_t n)
{
    if (e->o->fill && e->state[id] == S_LIVE && !intact(e->slot[id].ptr, n, id)) {
        e->r->corrupt_blocks++;
    }
}

static void count_failure(engine_t *e, int kind, uint64_t rec)
{
    lab_result_t *r = e->r;
    r->failures[kind]++;
    if (r->failures_total++ == 0) {
        r->first_failure_rec = rec;
    }
}

/* ---- sampling ---------------------------------------------------------- */

typedef struct walk_ctx {
    const engine_t *e;
    lab_breakdown_t *b;
    lab_heapmap_t *hm;
    uint64_t footprint; /* visit_heap_block: the bound it counts free blocks below */
    uint64_t count;
    uint64_t *starts;   /* visit_first: the fresh heap's block offsets */
    size_t nstarts;
    size_t starts_cap;
    const lab_hm_block_t *owners; /* visit_heapmap: live blocks as (offset, owner), by offset */
    size_t nowners;
    int oom;
    int too_many;       /* visit_first: more blocks than the memory limit lets the footprint track */
} walk_ctx_t;

static uint64_t offset_of(const engine_t *e, const void *p) { return (uint64_t)((uintptr_t)p - (uintptr_t)e->arena); }

static void visit_breakdown(void *ctx, const hk_block_info_t *blk)
{
    walk_ctx_t *w = ctx;
    uint64_t off;
    size_t i;
    if (blk->used || blk->size == 0) {
        return;
    }
    off = offset_of(w->e, blk->start);
    i = piece_of(w->e, off);
    if (off < piece_top(w->e, i)) {
        w->b->external += blk->size;
        w->b->free_below++;
        if (blk->size > w->b->largest_free_below) {
            w->b->largest_free_below = blk->size;
        }
    } else {
        w->b->free_above += blk->size;
    }
}

static void take_breakdown(engine_t *e, uint64_t rec)
{
    lab_result_t *r = e->r;
    lab_breakdown_t *b = &r->at_peak_live;
    memset(b, 0, sizeof(*b));
    b->valid = 1;
    b->rec = rec;
    b->requested = r->live_requested;
    b->granted = r->live_granted;
    b->blocks = r->live_blocks;
    if (e->in_arena) {
        walk_ctx_t w;
        memset(&w, 0, sizeof(w));
        w.e = e;
        w.b = b;
        hk_walk(e->heap, visit_breakdown, &w);
        b->walked = 1;
        b->footprint = r->footprint;
        b->metadata = (int64_t)b->footprint - (int64_t)b->granted - (int64_t)b->external;
    }
}

static int grow(void **p, size_t *cap, size_t need, size_t elem)
{
    size_t c = *cap != 0 ? *cap : 64;
    void *q;
    if (need <= *cap) {
        return 0;
    }
    while (c < need) {
        c *= 2;
    }
    q = realloc(*p, c * elem);
    if (q == NULL) {
        return -1;
    }
    *p = q;
    *cap = c;
    return 0;
}

static void visit_heapmap(void *ctx, const hk_block_info_t *blk)
{
    walk_ctx_t *w = ctx;
    lab_heapmap_t *hm = w->hm;
    lab_hm_block_t *b;
    if (w->oom || blk->size == 0) {
        return;
    }
    if (grow((void **)&hm->block, &hm->blocks_cap, hm->blocks + 1, sizeof(*hm->block)) != 0) {
        w->oom = 1;
        return;
    }
    b = &hm->block[hm->blocks++];
    b->offset = offset_of(w->e, blk->start);
    b->size = blk->size;
    b->used = blk->used ? 1 : 0;
    b->owner = LAB_NONE;
    if (b->used) {
        uint64_t head = (uint64_t)((uintptr_t)blk->payload - (uintptr_t)blk->start);
        uint64_t tail = b->size - head - blk->usable;
        if (hm->gross == LAB_GROSS_UNSEEN) {
            hm->gross = LAB_GROSS_FIXED;
            hm->head = head;
            hm->tail = tail;
        } else if (hm->head != head || hm->tail != tail) {
            hm->gross = LAB_GROSS_VARIES;
        }
    }
    if (b->used && w->nowners != 0) {
        /* The last live pointer below the block's end; it is the owner if it is inside. */
        size_t lo = 0;
        size_t hi = w->nowners;
        while (lo < hi) {
            size_t mid = lo + (hi - lo) / 2;
            if (w->owners[mid].offset < b->offset + b->size) {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        if (lo > 0 && w->owners[lo - 1].offset >= b->offset) {
            b->owner = w->owners[lo - 1].owner;
        }
    }
}

static int cmp_offset(const void *a, const void *b)
{
    uint64_t x = ((const lab_hm_block_t *)a)->offset;
    uint64_t y = ((const lab_hm_block_t *)b)->offset;
    return x < y ? -1 : x > y;
}

static void take_heapmap(engine_t *e, uint64_t rec)
{
    lab_heapmap_t *hm = &e->r->heapmap;
    lab_hm_snap_t *s;
    walk_ctx_t w;
    size_t i;
    size_t n;
    if (grow((void **)&hm->snap, &hm->cap, hm->n + 1, sizeof(*hm->snap)) != 0) {
        e->oom = 1;
        return;
    }
    s = &hm->snap[hm->n++];
    memset(s, 0, sizeof(*s));
    s->rec = rec;
    s->first = hm->blocks;
    memset(&w, 0, sizeof(w));
    w.e = e;
    w.hm = hm;
    if (e->live_ids != NULL && e->nlive != 0) {
        lab_hm_block_t *own = malloc(e->nlive * sizeof(*own));
        if (own == NULL) {
            e->oom = 1;
            return;
        }
        for (i = 0; i < e->nlive; i++) {
            own[i].offset = offset_of(e, e->slot[e->live_ids[i]].ptr);
            own[i].owner = e->live_ids[i];
        }
        qsort(own, e->nlive, sizeof(*own), cmp_offset);
        w.owners = own;
        w.nowners = e->nlive;
    }
    hk_walk(e->heap, visit_heapmap, &w);
    free((void *)w.owners);
    if (w.oom) {
        e->oom = 1;
        return;
    }
    s->raw_count = hm->blocks - s->first;
    n = s->raw_count;
    if (n > e->o->heapmap_cap) {
        /* Merge runs of adjacent blocks in the same state. */
        lab_hm_block_t *b = hm->block;
        size_t out = s->first;
        for (i = s->first; i < s->first + n; i++) {
            if (out > s->first && b[out - 1].used == b[i].used && b[out - 1].offset + b[out - 1].size == b[i].offset) {
                b[out - 1].size += b[i].size;
                b[out - 1].owner = LAB_NONE;
            } else {
                b[out++] = b[i];
            }
        }
        s->merged = 1;
        n = out - s->first;
        if (n > e->o->heapmap_cap) {
            n = e->o->heapmap_cap;
            s->truncated = 1;
        }
        hm->blocks = s->first + n;
    }
    s->count = n;
}

static void take_sample(engine_t *e, uint64_t rec)
{
    lab_series_t *s = &e->r->series;
    size_t i = s->n;
    hk_stats_t st;
    if (i == s->cap) {
        return;
    }
    s->rec[i] = rec;
    s->live_requested[i] = e->r->live_requested;
    s->live_granted[i] = e->r->live_granted;
    if (e->in_arena) {
        hk_get_stats(e->heap, &st);
        s->footprint[i] = e->r->footprint;
        s->free_bytes[i] = st.free_bytes;
        s->largest_free[i] = st.largest_free;
        s->free_blocks[i] = st.free_blocks;
    }
    s->failures[i] = e->r->failures_total;
    s->n++;
}

/* Sampling points: after records step-1, 2*step-1, ..., and the last one. */
typedef struct sampler {
    uint64_t step;
    uint64_t next;
} sampler_t;

static sampler_t sampler_for(uint64_t records, unsigned samples)
{
    sampler_t s;
    if (samples == 0 || records == 0) {
        s.step = 0;
        s.next = LAB_NONE;
        return s;
    }
    s.step = (records + samples - 1) / samples;
    s.next = s.step - 1 < records - 1 ? s.step - 1 : records - 1;
    return s;
}

static void sampler_advance(sampler_t *s, uint64_t records)
{
    if (s->next == records - 1) {
        s->next = LAB_NONE;
    } else {
        s->next += s->step;
        if (s->next > records - 1) {
            s->next = records - 1;
        }
    }
}

static int series_init(lab_series_t *s, size_t cap)
{
    uint64_t **cols[] = {&s->rec, &s->live_requested, &s->live_granted, &s->footprint,
                         &s->free_bytes, &s->largest_free, &s->free_blocks, &s->failures};
    size_t i;
    memset(s, 0, sizeof(*s));
    for (i = 0; i < sizeof(cols) / sizeof(cols[0]); i++) {
        *cols[i] = calloc(cap != 0 ? cap : 1, sizeof(uint64_t));
        if (*cols[i] == NULL) {
            return -1;
        }
    }
    s->cap = cap;
    return 0;
}

/* ---- timing ------------------------------------------------------------ */

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a;
    uint64_t y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* Median cost of an empty measurement (two back-to-back stamps), in ticks. */
/*
 * The median of an empty measurement, and in *step the smallest nonzero one:
 * the clock's resolution as the loop sees it (a virtualised TSC may advance
 * in coarse steps), below which a call's time cannot be told from zero.
 */
static double calibrate_overhead(double *step)
{
    enum { N = 4001 };
    static uint64_t d[N];
    size_t i;
    for (i = 0; i < 1000; i++) {
        (void)stamp();
    }
    for (i = 0; i < N; i++) {
        uint64_t t0 = stamp();
        uint64_t t1 = stamp();
        d[i] = t1 - t0;
    }
    qsort(d, N, sizeof(d[0]), cmp_u64);
    *step = 0;
    for (i = 0; i < N; i++) {
        if (d[i] != 0) {
            *step = (double)d[i];
            break;
        }
    }
    return (double)d[N / 2];
}

#ifdef HAVE_TSC
/* An invariant TSC ticks at a constant rate through frequency changes and idle states. */
static int tsc_invariant(void)
{
    char line[4096];
    int ok = 0;
    const char *force = getenv("HK_REPLAY_CLOCK");
    FILE *f;
    if (force != NULL && strcmp(force, "monotonic") == 0) {
        return 0;
    }
    f = fopen("/proc/cpuinfo", "r");
    if (f == NULL) {
        return 0;
    }
    while (fgets(line, sizeof(line), f) != NULL) {
        if (strncmp(line, "flags", 5) == 0) {
            ok = strstr(line, " constant_tsc") != NULL && strstr(line, " nonstop_tsc") != NULL;
            break;
        }
    }
    fclose(f);
    return ok;
}

/* ns per TSC tick, measured against CLOCK_MONOTONIC over 20 ms. */
static double calibrate_tsc(void)
{
    uint64_t n0 = now_ns();
    uint64_t c0 = __rdtsc();
    uint64_t n1;
    uint64_t c1;
    do {
        n1 = now_ns();
        c1 = __rdtsc();
    } while (n1 - n0 < 20000000u);
    return c1 > c0 ? (double)(n1 - n0) / (double)(c1 - c0) : 0.0;
}
#endif

static int timing_init(lab_timing_t *tm, const lab_trace_t *t)
{
    size_t want[LAB_OP_KINDS];
    int k;
    memset(tm, 0, sizeof(*tm));
    /* A realloc of a failed id is replayed as a malloc. */
    want[LAB_OP_MALLOC] = (size_t)(t->ops[LAB_OP_MALLOC] + t->ops[LAB_OP_REALLOC]);
    want[LAB_OP_CALLOC] = (size_t)t->ops[LAB_OP_CALLOC];
    want[LAB_OP_ALIGNED] = (size_t)t->ops[LAB_OP_ALIGNED];
    want[LAB_OP_REALLOC] = (size_t)t->ops[LAB_OP_REALLOC];
    want[LAB_OP_FREE] = (size_t)t->ops[LAB_OP_FREE];
    for (k = 0; k < LAB_OP_KINDS; k++) {
        tm->ticks[k] = malloc((want[k] != 0 ? want[k] : 1) * sizeof(uint32_t));
        if (tm->ticks[k] == NULL) {
            return -1;
        }
    }
    use_tsc = 0;
    tm->ns_per_tick = 1.0;
    tm->clock = "CLOCK_MONOTONIC";
#ifdef HAVE_TSC
    if (tsc_invariant()) {
        double scale = calibrate_tsc();
        if (scale > 0) {
            use_tsc = 1;
            tm->ns_per_tick = scale;
            tm->clock = "rdtsc calibrated against CLOCK_MONOTONIC";
        }
    }
#endif
    tm->overhead_ns = calibrate_overhead(&tm->step_ns) * tm->ns_per_tick;
    tm->step_ns *= tm->ns_per_tick;
    return 0;
}

/* ---- the loop ---------------------------------------------------------- */

/* The request the allocator sees: the trace's, plus the pad (saturating: an overflow is a failed request). */
static size_t padded(const lab_options_t *o, uint64_t size)
{
    uint64_t want = size + o->pad;
    return (want < size || want > SIZE_MAX) ? SIZE_MAX : (size_t)want;
}

#define TIMED(kind, stmt)                                                                                              \
    do {                                                                                                               \
        if (timing) {                                                                                                  \
            uint64_t t0_ = stamp();                                                                                      \
            stmt;                                                                                                      \
            uint64_t d_ = stamp() - t0_;                                                                                 \
            *tp[kind]++ = d_ > UINT32_MAX ? UINT32_MAX : (uint32_t)d_;                                                 \
        } else {                                                                                                       \
            stmt;                                                                                                      \
        }                                                                                                              \
    } while (0)

static void visit_heap_block(void *ctx, const hk_block_info_t *blk)
{
    walk_ctx_t *w = ctx;
    if (!blk->used && blk->size != 0 && offset_of(w->e, blk->start) < w->footprint) {
        w->count++;
    }
}

static void finish(engine_t *e)
{
    lab_result_t *r = e->r;
    hk_get_stats(e->heap, &r->final_stats);
    r->check_rc = hk_check(e->heap);
    /* A seqfit control struct starts with its hk_heap_t, so the handle is the heap. */
    r->has_counters = strcmp(hk_name(e->heap), "seqfit") == 0;
    if (r->has_counters) {
        walk_ctx_t w;
        hk_seqfit_get_counters((const hk_seqfit_t *)(const void *)e->heap, &r->counters);
        /* Every hand-out is one reuse or one grow, and each added the pad to the bytes requested. */
        r->counters.requested -= (size_t)e->o->pad * (r->counters.reuses + r->counters.grows);
        /* The seed's heap is what sbrk gave it, so a free block at its end counts; seqfit's top excluded it. */
        memset(&w, 0, sizeof(w));
        w.e = e;
        w.footprint = r->control_bytes + r->counters.max_heap;
        hk_walk(e->heap, visit_heap_block, &w);
        r->heap_blocks = w.count;
    }
}

static uint64_t progress_done;

static void report_progress(uint64_t records)
{
    progress_done += records;
    fprintf(stderr, "hk-replay: progress %llu\n", (unsigned long long)progress_done);
}

/* What the footprint keeps per piece: its start, its max-heap and its live-block count. */
#define PIECE_BYTES (sizeof(uint64_t) + sizeof(fp_heap_t) + sizeof(uint64_t))

static void visit_first(void *ctx, const hk_block_info_t *blk)
{
    walk_ctx_t *w = ctx;
    uint64_t limit = w->e->o->mem_limit;
    if (w->oom || w->too_many) {
        return;
    }
    if (limit != 0 && (uint64_t)(w->nstarts + 1) > limit / PIECE_BYTES) {
        w->too_many = 1; /* a pool of tiny slots in a huge arena: refuse rather than eat gigabytes */
        return;
    }
    if (grow((void **)&w->starts, &w->starts_cap, w->nstarts + 1, sizeof(*w->starts)) != 0) {
        w->oom = 1;
        return;
    }
    w->starts[w->nstarts++] = offset_of(w->e, blk->start);
}

static int by_offset(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a;
    uint64_t y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

/* The fresh heap's blocks become the footprint's pieces (one piece at 0 if the walk shows none). */
static int take_pieces(engine_t *e)
{
    walk_ctx_t w;
    memset(&w, 0, sizeof(w));
    w.e = e;
    hk_walk(e->heap, visit_first, &w);
    if (w.too_many) {
        free(w.starts);
        return LAB_TOO_MANY_BLOCKS;
    }
    if (w.oom || (w.nstarts == 0 && grow((void **)&w.starts, &w.starts_cap, 1, sizeof(*w.starts)) != 0)) {
        free(w.starts);
        return -1;
    }
    qsort(w.starts, w.nstarts, sizeof(*w.starts), by_offset);
    e->r->control_bytes = w.nstarts > 0 ? w.starts[0] : LAB_NONE;
    if (w.nstarts == 0) {
        w.starts[w.nstarts++] = 0;
    }
    e->control = w.starts[0];
    e->pieces = w.nstarts;
    e->piece_start = w.starts;
    e->piece_ends = calloc(w.nstarts, sizeof(*e->piece_ends));
    e->piece_live = calloc(w.nstarts, sizeof(*e->piece_live));
    return e->piece_ends == NULL || e->piece_live == NULL ? -1 : 0;
}

static void free_pieces(engine_t *e)
{
    size_t i;
    for (i = 0; i < e->pieces && e->piece_ends != NULL; i++) {
        free(e->piece_ends[i].a);
    }
    free(e->piece_start);
    free(e->piece_ends);
    free(e->piece_live);
}

int lab_replay(const lab_trace_t *t, const lab_alloc_t *a, void *arena, size_t arena_size, const lab_options_t *o,
               lab_result_t *r)
{
    engine_t e;
    uint32_t *tp[LAB_OP_KINDS];
    const int timing = o->timing;
    sampler_t series;
    sampler_t hmap;
    uint64_t next_event;
    uint64_t next_progress = o->progress ? LAB_PROGRESS_STEP - 1 : LAB_NONE;
    uint64_t reported = 0;
    uint64_t i;
    int k;
    int status;
    double t_start;
    double cpu_start;

    memset(r, 0, sizeof(*r));
    memset(&e, 0, sizeof(e));
    r->first_failure_rec = LAB_NONE;
    r->peak_footprint_rec = LAB_NONE;
    r->control_bytes = LAB_NONE;
    e.t = t;
    e.o = o;
    e.r = r;
    e.in_arena = (a->flags & LAB_IN_ARENA) != 0;
    r->in_arena = e.in_arena;
    e.arena = e.in_arena ? arena : NULL;
    e.arena_size = e.in_arena ? arena_size : 0;
    e.heap = a->make_sized != NULL ? a->make_sized(e.arena, e.arena_size, (size_t)t->max_request, &r->make_status)
                                   : a->make(e.arena, e.arena_size, &r->make_status);
    if (e.heap == NULL) {
        return 0;
    }
    r->made = 1;
    if (t->ids != 0) {
        e.slot = malloc((size_t)t->ids * sizeof(*e.slot));
        e.state = calloc(t->ids, 1);
        if (e.slot == NULL || e.state == NULL) {
            goto oom;
        }
        if (o->heapmap != 0 && o->heapmap_owners && e.in_arena) {
            e.live_ids = malloc((size_t)t->ids * sizeof(*e.live_ids));
            e.live_at = malloc((size_t)t->ids * sizeof(*e.live_at));
            if (e.live_ids == NULL || e.live_at == NULL) {
                goto oom;
            }
        }
    }
    if (o->placements && e.in_arena && t->ids != 0) {
        r->place = malloc((size_t)t->ids * 2 * sizeof(*r->place));
        if (r->place == NULL) {
            goto oom;
        }
        memset(r->place, 0xff, (size_t)t->ids * 2 * sizeof(*r->place));
    }
    if (o->timing && timing_init(&r->timing, t) != 0) {
        goto oom;
    }
    for (k = 0; k < LAB_OP_KINDS; k++) {
        tp[k] = r->timing.ticks[k];
    }
    series = sampler_for(t->count, o->series);
    hmap = sampler_for(t->count, e.in_arena ? o->heapmap : 0);
    if (series.step != 0 && series_init(&r->series, o->series + 1u) != 0) {
        goto oom;
    }
    if (e.in_arena && (status = take_pieces(&e)) != 0) {
        goto fail;
    }
    next_event = series.next < hmap.next ? series.next : hmap.next;
    if (o->snapshot_rec < next_event) {
        next_event = o->snapshot_rec;
    }
    if (next_progress < next_event) {
        next_event = next_progress;
    }

    t_start = lab_now_s();
    cpu_start = lab_cpu_s();
    for (i = 0; i < t->count; i++) {
        const lab_rec_t *rec = &t->rec[i];
        void *p = NULL;
        uint64_t id = rec->id;
        switch (rec->op) {
        case 'm':
            TIMED(LAB_OP_MALLOC, p = hk_malloc(e.heap, padded(o, rec->size)));
            if (p != NULL) {
                adopt(&e, id, p, rec->size, i);
            } else {
                e.state[id] = S_FAILED;
                count_failure(&e, LAB_OP_MALLOC, i);
            }
            break;
        case 'c': {
            uint64_t n = (uint64_t)rec->size * rec->aux;
            if (o->pad == 0) {
                TIMED(LAB_OP_CALLOC, p = hk_calloc(e.heap, rec->aux, rec->size));
            } else { /* the pad goes on the whole block: one element of n + pad bytes */
                TIMED(LAB_OP_CALLOC, p = hk_calloc(e.heap, 1, padded(o, n)));
            }
            if (p != NULL) {
                if (o->fill && (!e.in_arena || ((uintptr_t)p >= (uintptr_t)e.arena &&
                                                (uintptr_t)p + n <= (uintptr_t)e.arena + e.arena_size)) &&
                    !all_zero(p, n)) {
                    r->calloc_not_zero++;
                }
                adopt(&e, id, p, n, i);
            } else {
                e.state[id] = S_FAILED;
                count_failure(&e, LAB_OP_CALLOC, i);
            }
            break;
        }
        case 'a':
            TIMED(LAB_OP_ALIGNED, p = hk_aligned_alloc(e.heap, rec->aux, padded(o, rec->size)));
            if (p != NULL) {
                if ((uintptr_t)p % rec->aux != 0) {
                    r->misaligned++;
                }
                adopt(&e, id, p, rec->size, i);
            } else {
                e.state[id] = S_FAILED;
                count_failure(&e, LAB_OP_ALIGNED, i);
                if (rec->aux > HK_ALIGN && e.heap->ops->aligned_alloc == NULL) {
                    r->unsupported_aligned++;
                }
            }
            break;
        case 'r': {
            uint64_t old = rec->aux;
            if (old == LAB_NULL_ID) {
                TIMED(LAB_OP_REALLOC, p = hk_realloc(e.heap, NULL, padded(o, rec->size)));
            } else if (e.state[old] == S_FAILED) {
                e.state[old] = S_DEAD;
                r->skipped_frees++;
                TIMED(LAB_OP_MALLOC, p = hk_malloc(e.heap, padded(o, rec->size)));
            } else {
                slot_t *s = &e.slot[old];
                uint64_t keep = s->req < rec->size ? s->req : rec->size;
                check_pattern(&e, old, s->req);
                TIMED(LAB_OP_REALLOC, p = hk_realloc(e.heap, s->ptr, padded(o, rec->size)));
                if (p != NULL) {
                    if (o->fill && e.state[old] == S_LIVE &&
                        (!e.in_arena || ((uintptr_t)p >= (uintptr_t)e.arena &&
                                         (uintptr_t)p + keep <= (uintptr_t)e.arena + e.arena_size)) &&
                        !intact(p, keep, old)) {
                        r->corrupt_blocks++;
                    }
                    forget(&e, old);
                } else {
                    /* The trace never names old again: give its block back so it does not leak. */
                    hk_free(e.heap, s->ptr);
                    forget(&e, old);
                    r->failed_realloc_frees++;
                }
            }
            if (p != NULL) {
                adopt(&e, id, p, rec->size, i);
            } else {
                e.state[id] = S_FAILED;
                count_failure(&e, LAB_OP_REALLOC, i);
            }
            break;
        }
        default: /* 'f' */
            if (e.state[id] == S_FAILED) {
                e.state[id] = S_DEAD;
                r->skipped_frees++;
                break;
            }
            check_pattern(&e, id, e.slot[id].req);
            TIMED(LAB_OP_FREE, hk_free(e.heap, e.slot[id].ptr));
            forget(&e, id);
            break;
        }
        r->sum_footprint += (double)r->footprint;
        r->sum_requested += (double)r->live_requested;
        if (o->stop_on_failure && r->failures_total != 0) {
            i++;
            break;
        }
        if (i == next_event) {
            if (i == o->snapshot_rec) {
                take_breakdown(&e, i);
            }
            if (i == series.next) {
                take_sample(&e, i);
                sampler_advance(&series, t->count);
            }
            if (i == hmap.next) {
                take_heapmap(&e, i);
                sampler_advance(&hmap, t->count);
            }
            if (i == next_progress) {
                report_progress(LAB_PROGRESS_STEP);
                reported += LAB_PROGRESS_STEP;
                next_progress += LAB_PROGRESS_STEP;
            }
            next_event = series.next < hmap.next ? series.next : hmap.next;
            if (o->snapshot_rec > i && o->snapshot_rec < next_event) {
                next_event = o->snapshot_rec;
            }
            if (next_progress < next_event) {
                next_event = next_progress;
            }
        }
        if (e.oom) {
            goto oom;
        }
    }
    r->replay_s = lab_now_s() - t_start;
    r->replay_cpu_s = lab_cpu_s() - cpu_start;
    r->completed = i;
    if (o->progress) {
        report_progress(i - reported);
    }
    for (k = 0; k < LAB_OP_KINDS; k++) {
        r->timing.n[k] = (size_t)(tp[k] - r->timing.ticks[k]);
    }
    finish(&e);
    /* Leave nothing behind in the arena's heap for entries that own outside memory. */
    if (a->destroy != NULL) {
        for (i = 0; i < t->ids; i++) {
            if (e.state[i] == S_LIVE || e.state[i] == S_LIVE_RAW) {
                hk_free(e.heap, e.slot[i].ptr);
            }
        }
        a->destroy(e.heap);
    }
    free(e.slot);
    free(e.state);
    free(e.live_ids);
    free(e.live_at);
    free_pieces(&e);
    return 0;

oom:
    status = -1;
fail:
    if (a->destroy != NULL) {
        a->destroy(e.heap);
    }
    free(e.slot);
    free(e.state);
    free(e.live_ids);
    free(e.live_at);
    free_pieces(&e);
    return status;
}

void lab_result_free(lab_result_t *r)
{
    int k;
    for (k = 0; k < LAB_OP_KINDS; k++) {
        free(r->timing.ticks[k]);
    }
    free(r->series.rec);
    free(r->series.live_requested);
    free(r->series.live_granted);
    free(r->series.footprint);
    free(r->series.free_bytes);
    free(r->series.largest_free);
    free(r->series.free_blocks);
    free(r->series.failures);
    free(r->heapmap.snap);
    free(r->heapmap.block);
    free(r->place);
    memset(r, 0, sizeof(*r));
}
