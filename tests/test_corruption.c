/* SPDX-License-Identifier: MIT */
/*
 * The corruption matrix: test_corruption [options] [allocator]
 *
 * Beside the misuse matrix (test_misuse.c), which hands a heap bad pointers,
 * this one damages the heap's memory as a buggy program would, and checks
 * that the allocator reports the damage through the error hook and survives
 * it (HK_HARDENING, heapkit.h). Every case runs on every catalog entry (or on
 * the one named), on a fresh 64 KiB heap with an error hook installed:
 *
 *   smoke            no damage: the sequence below alone, and no report
 *                    allowed (the only case at HK_HARDENING 0, where the
 *                    others are undefined behaviour)
 *   overflow-used-N  x, y, z = malloc(64); N bytes (1, 2, 4, 8, 16) written
 *                    just past hk_usable_size(x), into the used neighbour y;
 *                    free(x); the sequence; free(y)
 *   overflow-free-N  the same with y freed before the write
 *   freed-write-N    x freed, then its first N bytes (1..16) changed;
 *                    malloc(64)
 *   owner-header-N   pools: the N bytes just before used y's payload (the
 *                    owner word's top byte, the owner word, the whole
 *                    header); free(y)
 *   slack-free       level >= 2: p = malloc(61), byte 61 (past the request,
 *                    within the usable size: the canary) changed; free(p)
 *   slack-realloc    level >= 2: the same, then realloc(p, 120)
 *   freed-poison     level >= 2: x freed, one byte past its first 16 changed;
 *                    malloc(64), which should hand x out again
 *
 * Each damaged byte is XORed with 0xA5, so it always differs from what was
 * there. Then a seeded sequence of malloc, free and realloc of random sizes
 * runs (the seed is fixed per case and printed on failure), checked against
 * a model of the blocks the test holds:
 *   - every live block carries a pattern unique to it over its requested
 *     size, verified before free and realloc and at the end (bytes the case
 *     itself damaged excepted); realloc keeps the pattern;
 *   - every block handed out is aligned, lies inside the arena, has a usable
 *     size >= the request, and [p, p + usable) overlaps no block the test
 *     holds: live blocks, blocks whose free the heap refused (free_count
 *     did not move), and a damaged neighbour together with the damaged
 *     bytes in front of it while the test still holds it;
 *   - the heap keeps serving: at least one allocation of the sequence succeeds.
 * Afterwards every live block is freed, hk_check() must not crash (its
 * answer is only recorded, except in the smoke case, where it must be 0)
 * and stats.error_count must equal the number of error-hook calls.
 *
 * A case passes when nothing crashes or hangs, every check above holds and
 * the error hook fired at least once after the damage (any hk_error_t; the
 * summary says which). No report may come before the damage. A case an
 * allocator cannot detect at some level is listed in expectations[] with the
 * reason: it still runs and must survive, only the report is not required.
 *
 * On Linux each case runs in a forked child with a timeout, so a crash
 * (SIGSEGV, an abort from the sanitizers) or a hang fails that case alone;
 * --no-fork runs them in-process (as on bare metal, where there is no fork).
 *
 * Output: a line per failed case (every case with -v) and a one-line
 * summary per entry; exit status 0 when every case passed.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "heapkit/catalog.h"

#if defined(__linux__)
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>
#define CORRUPTION_FORK 1
#else
#define CORRUPTION_FORK 0
#endif

#define ARENA_SIZE (64u * 1024u)
#define ARENA_ALIGN 4096u
#define MAX_BLOCKS 192u
#define LIVE_BOUND 64u
#define SEQ_OPS 500ul
#define SMOKE_OPS 2000ul
#define CASE_TIMEOUT 30u
#define DAMAGE_MASK 0xA5u
/* How far y may start past x's usable end for "just past x" to land in y: y's header, or at level 2 x's canary room and slack. */
#define MAX_GAP 128u

typedef enum family {
    F_SMOKE,
    F_OVERFLOW_USED,
    F_OVERFLOW_FREE,
    F_FREED_WRITE,
    F_OWNER_HEADER,
    F_SLACK_FREE,
    F_SLACK_REALLOC,
    F_FREED_POISON,
    F_COUNT
} family_t;

static const char *const family_names[F_COUNT] = {"smoke",        "overflow-used", "overflow-free", "freed-write",
                                                  "owner-header", "slack-free",    "slack-realloc", "freed-poison"};

/* Lowest HK_HARDENING at which a family runs (0: the smoke case runs everywhere). */
static const int family_min_level[F_COUNT] = {0, 1, 1, 1, 1, 2, 2, 2};

typedef struct case_def {
    family_t family;
    unsigned n; /* bytes damaged; 0 for the families with one case */
} case_def_t;

static const case_def_t cases[] = {
    {F_SMOKE, 0},
    {F_OVERFLOW_USED, 1}, {F_OVERFLOW_USED, 2}, {F_OVERFLOW_USED, 4}, {F_OVERFLOW_USED, 8}, {F_OVERFLOW_USED, 16},
    {F_OVERFLOW_FREE, 1}, {F_OVERFLOW_FREE, 2}, {F_OVERFLOW_FREE, 4}, {F_OVERFLOW_FREE, 8}, {F_OVERFLOW_FREE, 16},
    {F_FREED_WRITE, 1},   {F_FREED_WRITE, 2},   {F_FREED_WRITE, 3},   {F_FREED_WRITE, 4},
    {F_FREED_WRITE, 5},   {F_FREED_WRITE, 6},   {F_FREED_WRITE, 7},   {F_FREED_WRITE, 8},
    {F_FREED_WRITE, 9},   {F_FREED_WRITE, 10},  {F_FREED_WRITE, 11},  {F_FREED_WRITE, 12},
    {F_FREED_WRITE, 13},  {F_FREED_WRITE, 14},  {F_FREED_WRITE, 15},  {F_FREED_WRITE, 16},
    /* pools: the owner word's top byte (little endian), the owner word, the whole two-word header */
    {F_OWNER_HEADER, 1},  {F_OWNER_HEADER, (unsigned)sizeof(void *)}, {F_OWNER_HEADER, 2u * (unsigned)sizeof(void *)},
    {F_SLACK_FREE, 0},    {F_SLACK_REALLOC, 0}, {F_FREED_POISON, 0}};

#define N_CASES (sizeof(cases) / sizeof(cases[0]))

/* The pool entries, the only ones with an owner header. */
static int is_pool(const char *name) { return strcmp(name, "poolset") == 0 || strcmp(name, "lfpool") == 0; }

/*
 * Where an allocator legitimately cannot report a case: at HK_HARDENING <=
 * upto the report is not required (the case still runs and must survive);
 * upto == NOT_APPLICABLE skips the case. entry is a catalog name or a prefix
 * ending in '*'.
 */
#define NOT_APPLICABLE 99

typedef struct expectation {
    const char *entry;
    family_t family;
    int upto;
    const char *reason;
} expectation_t;

static const expectation_t expectations[] = {
#if HK_HARDENING >= 2
    /* The first match counts: these before buddy*'s. Levels 0 and 1 run both families on it. */
    {"buddy-weighted", F_OVERFLOW_USED, NOT_APPLICABLE,
     "64 bytes and the level-2 extras take a 6-atom block, always the left part of an 8 = 6 + 2: a free "
     "2-atom block lies after every such block, no two are neighbours"},
    {"buddy-weighted", F_OVERFLOW_FREE, NOT_APPLICABLE,
     "64 bytes and the level-2 extras take a 6-atom block, always the left part of an 8 = 6 + 2: a free "
     "2-atom block lies after every such block, no two are neighbours"},
#endif
    {"buddy*", F_OVERFLOW_USED, 3,
     "no per-block header (control bytes out of band): the bytes past a used block are its neighbour's payload"},
    {"lfpool", F_OVERFLOW_USED, 3,
     "state words out of band: the bytes past a used block are its neighbour's payload"},
    {"lfpool", F_OVERFLOW_FREE, 1, "state words out of band: a free payload holds nothing to check below level 2"},
    {"lfpool", F_FREED_WRITE, 1, "state words out of band: a free payload holds nothing to check below level 2"},
    {"lfpool", F_OWNER_HEADER, NOT_APPLICABLE, "no owner header: state words live out of band"},
    {"poolset", F_FREED_WRITE, 1,
     "the free-list link is in the header before the payload: a free payload holds nothing to check below level 2"},
    {"bump", F_OVERFLOW_FREE, 2, "bump never reads a dead block again (no reuse) except in level 3's full check"},
    {"bump", F_FREED_WRITE, 2, "bump never reads a dead block again (no reuse) except in level 3's full check"},
    {"bump", F_FREED_POISON, 2, "bump never reads a dead block again (no reuse) except in level 3's full check"},
    {NULL, F_COUNT, 0, NULL}};

static int entry_matches(const char *pattern, const char *name)
{
    size_t n = strlen(pattern);
    if (n > 0 && pattern[n - 1] == '*') {
        return strncmp(pattern, name, n - 1) == 0;
    }
    return strcmp(pattern, name) == 0;
}

static const expectation_t *find_expectation(const char *entry, family_t f)
{
    const expectation_t *x;
    for (x = expectations; x->entry != NULL; x++) {
        if (x->family == f && entry_matches(x->entry, entry)) {
            return x;
        }
    }
    return NULL;
}

static void case_name(const case_def_t *c, char *out, size_t size)
{
    if (c->n != 0) {
        snprintf(out, size, "%s-%u", family_names[c->family], c->n);
    } else {
        snprintf(out, size, "%s", family_names[c->family]);
    }
}

/* ---- what one case found (shared with the parent when the case runs in a child) ---- */

typedef struct result {
    int done;                  /* the case ran to its end: a crash or hang leaves 0 */
    int failed;                /* a check failed; msg says which */
    int reports;               /* error-hook calls after the damage */
    unsigned kinds;            /* bit e set: hk_error_t e reported after the damage */
    int first_kind;
    const char *first_at;      /* operation that reported first */
    unsigned long first_seq;   /* its index in the sequence (0: a setup step) */
    int early_reports;         /* reports before the damage: always a failure */
    int early_kind;
    const char *early_at;
    const char *op;            /* operation in progress (names the step a crash happened in) */
    unsigned long seq;         /* sequence operation in progress, 0 outside the sequence */
    unsigned long mallocs_ok;  /* successful allocations in the sequence */
    unsigned long refused;     /* frees the heap refused (free_count did not move) */
    int end_check;             /* hk_check() after the final frees */
    const char *reused_at;     /* first step that handed damaged free memory out again, or NULL */
    unsigned long reused_seq;
    char msg[384];
} result_t;

/* ---- the model ---- */

typedef struct blk {
    unsigned char *p;
    size_t req;      /* bytes holding the pattern */
    size_t usable;
    uintptr_t lo;    /* the held extent [lo, hi): the block, and damaged bytes in front of it */
    uintptr_t hi;
    uintptr_t dmg_lo; /* bytes the case damaged: not pattern-checked */
    uintptr_t dmg_hi;
    uint32_t id;
    int damaged;     /* the case damaged it: the sequence leaves it alone */
    int refused;     /* the heap refused to free it: held, never touched again */
} blk_t;

typedef struct ctx {
    const hk_catalog_entry_t *entry;
    const case_def_t *c;
    unsigned char *arena;
    hk_heap_t *heap;
    blk_t b[MAX_BLOCKS];
    size_t n;
    uint32_t next_id;
    uint64_t rng;
    int after_damage;
    uintptr_t loose_lo; /* damaged bytes of memory the test had freed: [loose_lo, loose_hi) */
    uintptr_t loose_hi;
    unsigned long ops; /* sequence length; 0: SEQ_OPS (SMOKE_OPS for the smoke case) */
    result_t *r;
} ctx_t;

static int fail(ctx_t *x, const char *fmt, ...)
{
    va_list ap;
    if (x->r->failed) {
        return 1;
    }
    x->r->failed = 1;
    va_start(ap, fmt);
    vsnprintf(x->r->msg, sizeof(x->r->msg), fmt, ap);
    va_end(ap);
    return 1;
}

static void on_error(void *vctx, hk_heap_t *heap, hk_error_t error, const void *ptr)
{
    ctx_t *x = (ctx_t *)vctx;
    result_t *r = x->r;
    (void)heap;
    (void)ptr;
    if (!x->after_damage) {
        if (r->early_reports++ == 0) {
            r->early_kind = (int)error;
            r->early_at = r->op;
        }
        return;
    }
    if (r->reports++ == 0) {
        r->first_kind = (int)error;
        r->first_at = r->op;
        r->first_seq = r->seq;
    }
    if ((unsigned)error < 32u) {
        r->kinds |= 1u << (unsigned)error;
    }
}

static uint64_t next_u64(ctx_t *x)
{
    uint64_t z = (x->rng += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static size_t below(ctx_t *x, size_t n) { return n == 0 ? 0 : (size_t)(next_u64(x) % n); }
static size_t between(ctx_t *x, size_t lo, size_t hi) { return lo + below(x, hi - lo + 1); }

static uint32_t mix32(uint32_t v)
{
    v ^= v >> 16;
    v *= 0x7FEB352Du;
    v ^= v >> 15;
    v *= 0x846CA68Bu;
    v ^= v >> 16;
    return v;
}

static unsigned char pattern_byte(uint32_t id, size_t i)
{
    uint32_t h = mix32(id);
    return (unsigned char)((h & 0xFFu) + (size_t)((h >> 8) | 1u) * i + (i >> 8));
}

static void fill(unsigned char *p, uint32_t id, size_t from, size_t to)
{
    size_t i;
    for (i = from; i < to; i++) {
        p[i] = pattern_byte(id, i);
    }
}

static void damage(unsigned char *from, size_t n)
{
    size_t i;
    for (i = 0; i < n; i++) {
        from[i] = (unsigned char)(from[i] ^ DAMAGE_MASK);
    }
}

static void step(ctx_t *x, const char *op) { x->r->op = op; }

static int verify(ctx_t *x, const blk_t *b, const unsigned char *at, size_t len, const char *when)
{
    size_t i;
    for (i = 0; i < len; i++) {
        uintptr_t a = (uintptr_t)(b->p + i);
        if (a >= b->dmg_lo && a < b->dmg_hi) {
            continue;
        }
        if (at[i] != pattern_byte(b->id, i)) {
            return fail(x, "block %p (id %u, %lu bytes) changed %s: byte %lu is 0x%02x, pattern 0x%02x",
                        (const void *)at, (unsigned)b->id, (unsigned long)b->req, when, (unsigned long)i, at[i],
                        pattern_byte(b->id, i));
        }
    }
    return 0;
}

static size_t free_count(hk_heap_t *heap)
{
    hk_stats_t st;
    memset(&st, 0, sizeof(st));
    hk_get_stats(heap, &st);
    return st.free_count;
}

/*
 * A block the heap just handed out for req bytes: aligned, inside the arena,
 * usable >= req, and overlapping nothing the test holds. Sets *usable.
 */
static int check_new(ctx_t *x, const unsigned char *p, size_t req, size_t *usable)
{
    uintptr_t a = (uintptr_t)p;
    uintptr_t lo = (uintptr_t)x->arena;
    uintptr_t hi = lo + ARENA_SIZE;
    size_t u;
    size_t i;
    if (a % HK_ALIGN != 0) {
        return fail(x, "%s returned %p, not aligned to %u", x->r->op, (const void *)p, (unsigned)HK_ALIGN);
    }
    if (a < lo || a >= hi) {
        return fail(x, "%s returned %p, outside the arena [%p, +%u)", x->r->op, (const void *)p,
                    (const void *)x->arena, (unsigned)ARENA_SIZE);
    }
    u = hk_usable_size(x->heap, p);
    if (u < req) {
        return fail(x, "%s returned %p with usable size %lu for %lu bytes", x->r->op, (const void *)p,
                    (unsigned long)u, (unsigned long)req);
    }
    if (u > hi - a) {
        return fail(x, "%s returned [%p, +%lu), past the arena's end", x->r->op, (const void *)p, (unsigned long)u);
    }
    for (i = 0; i < x->n; i++) {
        const blk_t *b = &x->b[i];
        if (a < b->hi && a + u > b->lo) {
            return fail(x, "%s returned [%p, +%lu), overlapping %s block %p (id %u, extent [%#lx, %#lx))", x->r->op,
                        (const void *)p, (unsigned long)u,
                        b->refused   ? "a refused"
                        : b->damaged ? "a damaged"
                                     : "a live",
                        (const void *)b->p, (unsigned)b->id, (unsigned long)b->lo, (unsigned long)b->hi);
        }
    }
    if (x->r->reused_at == NULL && a < x->loose_hi && a + u > x->loose_lo) {
        x->r->reused_at = x->r->op;
        x->r->reused_seq = x->r->seq;
    }
    *usable = u;
    return 0;
}

static blk_t *add_block(ctx_t *x, unsigned char *p, size_t req, size_t usable, uint32_t id)
{
    blk_t *b;
    if (x->n == MAX_BLOCKS) {
        fail(x, "test harness: more than %u blocks held", (unsigned)MAX_BLOCKS);
        return NULL;
    }
    b = &x->b[x->n++];
    memset(b, 0, sizeof(*b));
    b->p = p;
    b->req = req;
    b->usable = usable;
    b->lo = (uintptr_t)p;
    b->hi = (uintptr_t)p + usable;
    b->id = id;
    return b;
}

static void remove_block(ctx_t *x, size_t i)
{
    x->b[i] = x->b[x->n - 1];
    x->n--;
}

static size_t index_of(const ctx_t *x, const unsigned char *p)
{
    size_t i;
    for (i = 0; i < x->n; i++) {
        if (x->b[i].p == p) {
            return i;
        }
    }
    return (size_t)-1;
}

/* malloc(req) through the model; the block, or NULL (a failure is recorded only if must_succeed). */
static unsigned char *model_malloc(ctx_t *x, size_t req, const char *op, int must_succeed)
{
    unsigned char *p;
    size_t usable = 0;
    step(x, op);
    p = (unsigned char *)hk_malloc(x->heap, req);
    if (p == NULL) {
        if (must_succeed) {
            fail(x, "%s: malloc(%lu) returned NULL", op, (unsigned long)req);
        }
        return NULL;
    }
    if (check_new(x, p, req, &usable)) {
        return NULL;
    }
    if (add_block(x, p, req, usable, ++x->next_id) == NULL) {
        return NULL;
    }
    fill(p, x->next_id, 0, req);
    return p;
}

/* free block i after verifying it; a refused free (free_count unchanged) keeps it held. */
static int model_free(ctx_t *x, size_t i, const char *op)
{
    size_t before;
    step(x, op);
    if (verify(x, &x->b[i], x->b[i].p, x->b[i].req, "before free")) {
        return 1;
    }
    before = free_count(x->heap);
    hk_free(x->heap, x->b[i].p);
    if (free_count(x->heap) == before) {
        x->b[i].refused = 1;
        x->r->refused++;
    } else {
        remove_block(x, i);
    }
    return 0;
}

/* realloc block i to req: NULL leaves it live; otherwise the pattern must have moved with it. */
static int model_realloc(ctx_t *x, size_t i, size_t req, const char *op)
{
    blk_t old = x->b[i];
    unsigned char *q;
    size_t usable = 0;
    blk_t *b;
    step(x, op);
    if (verify(x, &old, old.p, old.req, "before realloc")) {
        return 1;
    }
    q = (unsigned char *)hk_realloc(x->heap, old.p, req);
    if (q == NULL) {
        return 0;
    }
    remove_block(x, i);
    if (check_new(x, q, req, &usable)) {
        return 1;
    }
    old.p = q; /* the pattern is by offset, so the moved bytes must still match it */
    if (verify(x, &old, q, old.req < req ? old.req : req, "by realloc")) {
        return 1;
    }
    b = add_block(x, q, req, usable, old.id);
    if (b == NULL) {
        return 1;
    }
    if (req > old.req) {
        fill(q, old.id, old.req, req);
    }
    return 0;
}

/* ---- the sequence ---- */

static size_t draw_size(ctx_t *x)
{
    size_t k = below(x, 100);
    size_t s = k < 60 ? between(x, 1, 64) : k < 90 ? between(x, 65, 512) : between(x, 513, 2048);
    if (s > x->entry->max_request) {
        s = between(x, 1, x->entry->max_request);
    }
    return s;
}

/* A block the sequence may free or realloc (neither damaged nor refused), or (size_t)-1. */
static size_t pick(ctx_t *x)
{
    size_t start;
    size_t k;
    if (x->n == 0) {
        return (size_t)-1;
    }
    start = below(x, x->n);
    for (k = 0; k < x->n; k++) {
        size_t i = (start + k) % x->n;
        if (!x->b[i].damaged && !x->b[i].refused) {
            return i;
        }
    }
    return (size_t)-1;
}

static int sequence(ctx_t *x, unsigned long ops)
{
    unsigned long k;
    unsigned long tried = 0;
    for (k = 1; k <= ops; k++) {
        size_t live = x->n;
        size_t victim = pick(x);
        size_t roll = below(x, 100);
        size_t size = draw_size(x);
        x->r->seq = k;
        if (victim == (size_t)-1 || (roll < 45 && live < LIVE_BOUND)) {
            tried++;
            if (model_malloc(x, size, "malloc", 0) != NULL) {
                x->r->mallocs_ok++;
            }
        } else if (roll < 80 || live >= MAX_BLOCKS - 2) {
            if (model_free(x, victim, "free")) {
                return 1;
            }
        } else {
            if (model_realloc(x, victim, size, "realloc")) {
                return 1;
            }
        }
        if (x->r->failed) {
            return 1;
        }
    }
    x->r->seq = 0;
    if (tried > 0 && x->r->mallocs_ok == 0) {
        return fail(x, "the heap served none of the sequence's %lu allocations", tried);
    }
    return 0;
}

/* Verify and free every block the test holds (refused ones stay); hk_check must return. */
static int finish(ctx_t *x)
{
    hk_stats_t st;
    size_t i = 0;
    while (i < x->n) {
        if (x->b[i].refused) {
            i++;
            continue;
        }
        /* a freed block's slot takes the last block; a refused one is passed over next time round */
        if (model_free(x, i, x->b[i].damaged ? "free(y) after the sequence" : "final free")) {
            return 1;
        }
    }
    step(x, "hk_check at the end");
    x->r->end_check = (int)hk_check(x->heap);
    step(x, "hk_get_stats at the end");
    memset(&st, 0, sizeof(st));
    hk_get_stats(x->heap, &st);
    if (st.error_count != (size_t)(x->r->reports + x->r->early_reports)) {
        return fail(x, "stats.error_count is %lu, but the error hook ran %d times", (unsigned long)st.error_count,
                    x->r->reports + x->r->early_reports);
    }
    return 0;
}

/* ---- the cases ---- */

typedef struct trio {
    unsigned char *x;
    unsigned char *y;
    unsigned char *z;
    size_t ux; /* hk_usable_size(x) */
} trio_t;

#define TRIO_TRIES 8u

typedef struct block_end {
    const void *payload;
    uintptr_t start;
    uintptr_t end;
} block_end_t;

static void find_block_end(void *ctx, const hk_block_info_t *info)
{
    block_end_t *e = (block_end_t *)ctx;
    if (info->payload == e->payload) {
        e->start = (uintptr_t)info->start;
        e->end = (uintptr_t)info->start + info->size;
    }
}

/* Where the block holding payload p ends (its slack and canary room included), per hk_walk; 0 if not found. */
static uintptr_t block_end_of(hk_heap_t *heap, const void *p)
{
    block_end_t e;
    e.payload = p;
    e.end = 0;
    hk_walk(heap, find_block_end, &e);
    return e.end;
}

/* Where the block holding payload p starts (its header included), per hk_walk; 0 if not found. */
static uintptr_t block_start_of(hk_heap_t *heap, const void *p)
{
    block_end_t e;
    e.payload = p;
    e.start = 0;
    hk_walk(heap, find_block_end, &e);
    return e.start;
}

/*
 * x, y, z = malloc(64). With adjacent set, y must start right after x's
 * usable bytes (past y's header, if any) and its block right where x's ends
 * (the unequal buddies leave free blocks between used ones): where the first
 * blocks do not lie in address order (buddy hands out the pieces of an area
 * that is not a power of two in its own order), up to TRIO_TRIES blocks are
 * taken and the first adjacent pair becomes x and y; the others stay live.
 */
static int make_trio(ctx_t *ctx, trio_t *t, int adjacent)
{
    unsigned char *p[TRIO_TRIES];
    size_t k;
    size_t i;
    size_t j;
    memset(t, 0, sizeof(*t));
    for (k = 0; k < TRIO_TRIES; k++) {
        static const char *const names[TRIO_TRIES] = {"malloc(x)", "malloc(y)", "malloc(z)", "malloc(64) #4",
                                                     "malloc(64) #5", "malloc(64) #6", "malloc(64) #7",
                                                     "malloc(64) #8"};
        p[k] = model_malloc(ctx, 64, names[k], 1);
        if (p[k] == NULL) {
            return 1;
        }
        if (k < 2) {
            continue;
        }
        if (!adjacent) {
            t->x = p[0];
            t->y = p[1];
            t->z = p[2];
            break;
        }
        for (i = 0; i <= k && t->x == NULL; i++) {
            uintptr_t end = (uintptr_t)p[i] + hk_usable_size(ctx->heap, p[i]);
            size_t near = k + 1u; /* y is the block right after x: the nearest one past its end */
            for (j = 0; j <= k; j++) {
                if ((uintptr_t)p[j] >= end && (uintptr_t)p[j] - end <= MAX_GAP &&
                    block_start_of(ctx->heap, p[j]) == block_end_of(ctx->heap, p[i]) &&
                    (near > k || (uintptr_t)p[j] < (uintptr_t)p[near])) {
                    near = j;
                }
            }
            if (near <= k) {
                t->x = p[i];
                t->y = p[near];
                t->z = p[i != 0 && near != 0 ? 0 : i != 1 && near != 1 ? 1 : 2];
            }
        }
        if (t->x != NULL) {
            break;
        }
    }
    if (t->x == NULL) {
        return fail(ctx, "setup: no two of %u blocks of 64 bytes are neighbours", (unsigned)TRIO_TRIES);
    }
    step(ctx, "usable_size(x)");
    t->ux = hk_usable_size(ctx->heap, t->x);
    return 0;
}

static int run_case(ctx_t *x)
{
    const case_def_t *c = x->c;
    trio_t t;
    size_t i;
    switch (c->family) {
    case F_SMOKE:
        if (sequence(x, x->ops != 0 ? x->ops : SMOKE_OPS) || finish(x)) {
            return 1;
        }
        if (x->r->end_check != HK_CHECK_OK) {
            return fail(x, "hk_check is %d (%s) after an undamaged run", x->r->end_check,
                        hk_check_name((hk_check_t)x->r->end_check));
        }
        return 0;

    case F_OVERFLOW_USED:
    case F_OVERFLOW_FREE: {
        unsigned char *at;
        if (make_trio(x, &t, 1)) {
            return 1;
        }
        if (c->family == F_OVERFLOW_FREE && model_free(x, index_of(x, t.y), "free(y)")) {
            return 1;
        }
        if (c->family == F_OVERFLOW_FREE && index_of(x, t.y) != (size_t)-1) {
            return fail(x, "setup: free(y) was refused");
        }
        at = t.x + t.ux;
        step(x, "the overflow");
        damage(at, c->n);
        x->after_damage = 1;
        if (c->family == F_OVERFLOW_FREE) {
            x->loose_lo = (uintptr_t)at;
            x->loose_hi = (uintptr_t)at + c->n;
        }
        if (c->family == F_OVERFLOW_USED) {
            blk_t *y = &x->b[index_of(x, t.y)];
            /* Damaged bytes inside x's own block (its slack) are x's: freed with it, not held with y. */
            uintptr_t x_end = block_end_of(x->heap, t.x);
            uintptr_t held = x_end > (uintptr_t)at ? x_end : (uintptr_t)at;
            y->damaged = 1;
            y->dmg_lo = (uintptr_t)at;
            y->dmg_hi = (uintptr_t)at + c->n;
            if (held < y->lo) {
                y->lo = held;
            }
        }
        if (model_free(x, index_of(x, t.x), "free(x)")) {
            return 1;
        }
        break;
    }

    case F_FREED_WRITE:
    case F_FREED_POISON: {
        /* freed-poison: a byte halfway between the first 16 (links) and the end (a footer) */
        size_t off;
        size_t len = c->family == F_FREED_WRITE ? c->n : 1u;
        if (make_trio(x, &t, 0)) {
            return 1;
        }
        off = c->family == F_FREED_WRITE ? 0 : 16u + (t.ux - 16u) / 2u;
        if (model_free(x, index_of(x, t.x), "free(x)")) {
            return 1;
        }
        if (index_of(x, t.x) != (size_t)-1) {
            return fail(x, "setup: free(x) was refused");
        }
        step(x, "the write into the freed block");
        damage(t.x + off, len);
        x->after_damage = 1;
        x->loose_lo = (uintptr_t)t.x + off;
        x->loose_hi = x->loose_lo + len;
        model_malloc(x, 64, "malloc(64) after the write", 0);
        break;
    }

    case F_OWNER_HEADER: {
        blk_t *y;
        if (make_trio(x, &t, 0)) {
            return 1;
        }
        y = &x->b[index_of(x, t.y)];
        step(x, "the write over y's header");
        damage(t.y - c->n, c->n);
        x->after_damage = 1;
        y->damaged = 1;
        y->dmg_lo = (uintptr_t)t.y - c->n;
        y->dmg_hi = (uintptr_t)t.y;
        y->lo = y->dmg_lo;
        if (model_free(x, index_of(x, t.y), "free(y)")) {
            return 1;
        }
        break;
    }

    case F_SLACK_FREE:
    case F_SLACK_REALLOC: {
        unsigned char *p = model_malloc(x, 61, "malloc(61)", 1);
        blk_t *b;
        if (p == NULL) {
            return 1;
        }
        b = &x->b[index_of(x, p)];
        step(x, "the write past the request");
        damage(p + 61, 1);
        x->after_damage = 1;
        b->damaged = 1;
        b->dmg_lo = (uintptr_t)p + 61;
        b->dmg_hi = b->dmg_lo + 1;
        if (b->hi < b->dmg_hi) {
            b->hi = b->dmg_hi;
        }
        if (c->family == F_SLACK_FREE) {
            if (model_free(x, index_of(x, p), "free(p)")) {
                return 1;
            }
        } else {
            size_t grow = x->entry->max_request < 120 ? x->entry->max_request : 120;
            if (model_realloc(x, index_of(x, p), grow, "realloc(p, 120)")) {
                return 1;
            }
            /* NULL left p in place (still the 61-byte block): the test holds it as it is */
            i = index_of(x, p);
            if (i != (size_t)-1 && x->b[i].req == 61) {
                x->b[i].refused = 1;
                x->r->refused++;
            }
        }
        break;
    }

    default:
        return fail(x, "not a corruption case");
    }
    if (x->r->failed) {
        return 1;
    }
    if (sequence(x, x->ops != 0 ? x->ops : SEQ_OPS)) {
        return 1;
    }
    return finish(x);
}

static void run_in_place(const hk_catalog_entry_t *entry, const case_def_t *c, unsigned long seed,
                         unsigned long ops, result_t *r)
{
    ctx_t *x = (ctx_t *)calloc(1, sizeof(*x));
    /* the arena is aligned to ARENA_ALIGN, so a seed gives the same layout in every build (sanitizers too) */
    unsigned char *mem = (unsigned char *)malloc(ARENA_SIZE + ARENA_ALIGN);
    hk_status_t status = HK_EINVAL;
    hk_hooks_t hooks;
    if (x == NULL || mem == NULL) {
        snprintf(r->msg, sizeof(r->msg), "test harness out of memory");
        r->failed = 1;
        r->done = 1;
        free(x);
        free(mem);
        return;
    }
    x->entry = entry;
    x->c = c;
    x->arena = mem + (ARENA_ALIGN - (uintptr_t)mem % ARENA_ALIGN) % ARENA_ALIGN;
    x->rng = seed;
    x->ops = ops;
    x->r = r;
    r->op = "init";
    x->heap = entry->make(x->arena, ARENA_SIZE, &status);
    if (x->heap == NULL) {
        fail(x, "init failed (status %d)", (int)status);
    } else {
        memset(&hooks, 0, sizeof(hooks));
        hooks.on_error = on_error;
        hooks.ctx = x;
        hk_set_hooks(x->heap, &hooks);
        run_case(x);
    }
    r->done = 1;
    free(mem);
    free(x);
}

/* ---- running the cases ---- */

typedef enum verdict { V_DETECTED, V_ALLOWED, V_SKIPPED, V_FAILED } verdict_t;

typedef struct options {
    int verbose;
    int fork_cases;
    unsigned long ops;
    int have_seed;
    unsigned long seed;
    const char *only_case;
    const char *prog; /* argv[0]'s last component, for the rerun hint */
} options_t;

static unsigned long case_seed(const options_t *o, size_t ci) { return o->have_seed ? o->seed : 1000ul + ci; }

/* Run one case, in a child where there is fork; *crash describes a crash or hang, or is empty. */
static void run_one(const options_t *o, const hk_catalog_entry_t *entry, size_t ci, result_t *out, char *crash,
                    size_t crash_size)
{
    crash[0] = '\0';
    (void)crash_size;
    memset(out, 0, sizeof(*out));
#if CORRUPTION_FORK
    if (o->fork_cases) {
        result_t *shared = (result_t *)mmap(NULL, sizeof(result_t), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
                                            -1, 0);
        pid_t pid;
        int status = 0;
        if (shared == MAP_FAILED) {
            snprintf(crash, crash_size, "test harness: mmap failed");
            return;
        }
        memset(shared, 0, sizeof(*shared));
        fflush(stdout);
        fflush(stderr);
        pid = fork();
        if (pid == 0) {
            alarm(CASE_TIMEOUT);
            run_in_place(entry, &cases[ci], case_seed(o, ci), o->ops, shared);
            _exit(0);
        }
        if (pid < 0 || waitpid(pid, &status, 0) != pid) {
            snprintf(crash, crash_size, "test harness: fork/waitpid failed");
        } else {
            *out = *shared;
            if (WIFSIGNALED(status)) {
                int sig = WTERMSIG(status);
                snprintf(crash, crash_size, "%s (signal %d, %s)", sig == SIGALRM ? "hung: timed out" : "crashed",
                         sig, strsignal(sig));
            } else if (!out->done || WEXITSTATUS(status) != 0) {
                snprintf(crash, crash_size, "died with exit status %d (a sanitizer report?)", WEXITSTATUS(status));
            }
        }
        munmap(shared, sizeof(result_t));
        return;
    }
#endif
    run_in_place(entry, &cases[ci], case_seed(o, ci), o->ops, out);
}

static const char kind_letters[] = "?DFIC"; /* by hk_error_t: DOUBLE_FREE 1, FOREIGN 2, INTERIOR 3, CORRUPT 4 */

static void kinds_string(unsigned kinds, char *out)
{
    size_t n = 0;
    unsigned e;
    for (e = 1; e <= 4; e++) {
        if (kinds & (1u << e)) {
            out[n++] = kind_letters[e];
        }
    }
    if (n == 0) {
        out[n++] = '-';
    }
    out[n] = '\0';
}

typedef struct tally {
    unsigned run;
    unsigned detected;
    unsigned allowed;
    unsigned skipped;
    unsigned failed;
} tally_t;

static int run_entry(const options_t *o, const hk_catalog_entry_t *entry)
{
    tally_t t;
    char line[2048];
    size_t len = 0;
    family_t fam = F_COUNT;
    size_t ci;
    memset(&t, 0, sizeof(t));
    line[0] = '\0';
    for (ci = 0; ci < N_CASES; ci++) {
        const case_def_t *c = &cases[ci];
        const expectation_t *x = find_expectation(entry->name, c->family);
        char name[48];
        char crash[160];
        char kinds[8];
        char token[48];
        char marks[8];
        const char *skip = NULL;
        verdict_t v;
        result_t r;
        case_name(c, name, sizeof(name));
        if (o->only_case != NULL && strcmp(o->only_case, name) != 0) {
            continue;
        }
        if (HK_HARDENING < family_min_level[c->family]) {
            skip = HK_HARDENING == 0 ? "HK_HARDENING 0: damage is undefined behaviour" : "needs HK_HARDENING >= 2";
        } else if (c->family == F_OWNER_HEADER && !is_pool(entry->name)) {
            skip = "pools only";
        } else if (x != NULL && x->upto == NOT_APPLICABLE) {
            skip = x->reason;
        }
        if (c->family != fam && !(HK_HARDENING == 0 && c->family != F_SMOKE)) {
            fam = c->family;
            len += (size_t)snprintf(line + len, sizeof(line) - len, " | %s", family_names[fam]);
        }
        if (skip != NULL) {
            t.skipped++;
            if (HK_HARDENING != 0 && (c->n == 0 || c->n == 1)) {
                len += (size_t)snprintf(line + len, sizeof(line) - len, " skipped");
            }
            if (o->verbose) {
                printf("  [%s] %s: skipped: %s\n", entry->name, name, skip);
            }
            continue;
        }
        t.run++;
        if (!o->fork_cases) {
            /* in-process: if this case crashes, the log says which one it was */
            printf("  [%s] %s: running (seed %lu)\n", entry->name, name, case_seed(o, ci));
            fflush(stdout);
        }
        run_one(o, entry, ci, &r, crash, sizeof(crash));
        kinds_string(r.kinds, kinds);
        if (crash[0] != '\0' || r.failed || r.early_reports > 0) {
            v = V_FAILED;
        } else if (c->family == F_SMOKE) {
            v = V_DETECTED;
        } else if (r.reports > 0) {
            v = V_DETECTED;
        } else if (x != NULL && HK_HARDENING <= x->upto) {
            v = V_ALLOWED;
        } else {
            v = V_FAILED;
        }
        marks[0] = '\0';
        if (crash[0] != '\0') {
            strcat(marks, strncmp(crash, "hung", 4) == 0 ? "T" : "X");
        }
        if (r.failed || r.early_reports > 0) {
            strcat(marks, "!");
        } else if (v == V_FAILED && crash[0] == '\0') {
            strcat(marks, "?");
        }
        if (c->family == F_SMOKE) {
            snprintf(token, sizeof(token), " %s", marks[0] != '\0' ? marks : "ok");
        } else if (c->n != 0) {
            snprintf(token, sizeof(token), " %u:%s%s", c->n, kinds, marks);
        } else {
            snprintf(token, sizeof(token), " %s%s", kinds, marks);
        }
        len += (size_t)snprintf(line + len, sizeof(line) - len, "%s", token);
        if (len >= sizeof(line)) {
            len = sizeof(line) - 1;
        }
        switch (v) {
        case V_DETECTED:
            t.detected += c->family != F_SMOKE;
            break;
        case V_ALLOWED:
            t.allowed++;
            break;
        default:
            t.failed++;
            break;
        }
        if (v == V_FAILED || o->verbose) {
            char what[448];
            if (crash[0] != '\0') {
                snprintf(what, sizeof(what), "%s during %s", crash, r.op != NULL ? r.op : "setup");
                if (r.seq != 0) {
                    size_t w = strlen(what);
                    snprintf(what + w, sizeof(what) - w, " (sequence op %lu)", r.seq);
                }
            } else if (r.failed) {
                snprintf(what, sizeof(what), "%s", r.msg);
                if (r.seq != 0) {
                    size_t w = strlen(what);
                    snprintf(what + w, sizeof(what) - w, " (sequence op %lu)", r.seq);
                }
            } else if (r.early_reports > 0) {
                snprintf(what, sizeof(what), "reported '%s' during %s, before any damage",
                         hk_error_name((hk_error_t)r.early_kind), r.early_at != NULL ? r.early_at : "?");
            } else if (v == V_FAILED) {
                snprintf(what, sizeof(what), "the damage was never reported");
                if (c->family == F_OVERFLOW_FREE || c->family == F_FREED_WRITE || c->family == F_FREED_POISON) {
                    size_t w = strlen(what);
                    if (r.reused_at == NULL) {
                        snprintf(what + w, sizeof(what) - w, " (the damaged free bytes were never handed out again)");
                    } else {
                        snprintf(what + w, sizeof(what) - w, " (the damaged free bytes were handed out again by %s%s)",
                                 r.reused_at, r.reused_seq != 0 ? " in the sequence" : "");
                    }
                }
            } else if (v == V_ALLOWED) {
                snprintf(what, sizeof(what), "not reported (allowed: %s)", x->reason);
            } else if (c->family == F_SMOKE) {
                snprintf(what, sizeof(what), "ok");
            } else {
                snprintf(what, sizeof(what), "reported '%s' first at %s", hk_error_name((hk_error_t)r.first_kind),
                         r.first_at != NULL ? r.first_at : "?");
                if (r.first_seq != 0) {
                    size_t w = strlen(what);
                    snprintf(what + w, sizeof(what) - w, " (sequence op %lu)", r.first_seq);
                }
            }
            if (r.reports > 0 && (crash[0] != '\0' || r.failed)) {
                size_t w = strlen(what);
                snprintf(what + w, sizeof(what) - w, "; it had reported '%s' at %s",
                         hk_error_name((hk_error_t)r.first_kind), r.first_at != NULL ? r.first_at : "?");
            }
            printf("  [%s] %s: %s: %s", entry->name, name, v == V_FAILED ? "FAIL" : "pass", what);
            if (v == V_FAILED) {
                printf(" -- seed %lu; rerun: %s --no-fork --case %s %s", case_seed(o, ci), o->prog, name,
                       entry->name);
            } else if (o->verbose && c->family != F_SMOKE) {
                printf(" (%d reports, %lu refused frees, end check: %s)", r.reports, r.refused,
                       hk_check_name((hk_check_t)r.end_check));
            }
            putchar('\n');
        }
    }
    if (HK_HARDENING == 0 && len < sizeof(line)) {
        snprintf(line + len, sizeof(line) - len, " | damage cases skipped (HK_HARDENING 0 checks nothing)");
    }
    printf("corruption[%s] HK_HARDENING=%d: %u run, %u detected, %u allowed undetected, %u failed, %u skipped%s\n",
           entry->name, HK_HARDENING, t.run, t.detected, t.allowed, t.failed, t.skipped, line);
    fflush(stdout);
    return t.failed == 0 ? 0 : 1;
}

static int usage(void)
{
    size_t i;
    fprintf(stderr, "usage: test_corruption [-v] [--no-fork] [--ops N] [--seed S] [--case NAME] [allocator]\n"
                    "allocators:");
    for (i = 0; i < hk_catalog_count(); i++) {
        fprintf(stderr, " %s", hk_catalog_at(i)->name);
    }
    fprintf(stderr, "\ncases:");
    for (i = 0; i < N_CASES; i++) {
        char name[48];
        case_name(&cases[i], name, sizeof(name));
        fprintf(stderr, " %s", name);
    }
    fputc('\n', stderr);
    return 2;
}

int main(int argc, char **argv)
{
    options_t o;
    const char *only_entry = NULL;
    size_t e;
    int i;
    int failures = 0;
    memset(&o, 0, sizeof(o));
    o.fork_cases = CORRUPTION_FORK;
    o.prog = argc > 0 && strrchr(argv[0], '/') != NULL ? strrchr(argv[0], '/') + 1 : "test_corruption";
    for (i = 1; i < argc; i++) {
        if (strcmp(argv[i], "-v") == 0) {
            o.verbose = 1;
        } else if (strcmp(argv[i], "--no-fork") == 0) {
            o.fork_cases = 0;
        } else if (strcmp(argv[i], "--ops") == 0 && i + 1 < argc) {
            o.ops = strtoul(argv[++i], NULL, 0);
        } else if (strcmp(argv[i], "--seed") == 0 && i + 1 < argc) {
            o.have_seed = 1;
            o.seed = strtoul(argv[++i], NULL, 0);
        } else if (strcmp(argv[i], "--case") == 0 && i + 1 < argc) {
            o.only_case = argv[++i];
        } else if (argv[i][0] == '-' || only_entry != NULL) {
            return usage();
        } else {
            only_entry = argv[i];
        }
    }
    if (only_entry != NULL && hk_catalog_find(only_entry) == NULL) {
        fprintf(stderr, "unknown or unavailable allocator '%s'\n", only_entry);
        return usage();
    }
    if (o.only_case != NULL) {
        size_t k;
        char name[48];
        for (k = 0; k < N_CASES; k++) {
            case_name(&cases[k], name, sizeof(name));
            if (strcmp(name, o.only_case) == 0) {
                break;
            }
        }
        if (k == N_CASES) {
            fprintf(stderr, "unknown case '%s'\n", o.only_case);
            return usage();
        }
    }
    printf("corruption matrix, HK_HARDENING=%d: per case the errors reported after the damage "
           "(C corrupted header, D double free, F foreign pointer, I interior pointer, - none), "
           "then X crashed, T hung, ! a check failed, ? not reported though required\n",
           HK_HARDENING);
    for (e = 0; e < hk_catalog_count(); e++) {
        const hk_catalog_entry_t *entry = hk_catalog_at(e);
        if (only_entry != NULL && strcmp(only_entry, entry->name) != 0) {
            continue;
        }
        failures += run_entry(&o, entry);
    }
    return failures == 0 ? 0 : 1;
}
