/* SPDX-License-Identifier: MIT */
/* The shadow model (see shadow.h). */
#include "shadow.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct sh_block {
    unsigned char *ptr;
    size_t requested;
    size_t usable;
    size_t gross; /* free_bytes the allocation took */
    uint32_t id;
} sh_block_t;

typedef struct sh_walk {
    hk_block_info_t *v;
    size_t n;
    size_t cap;
    int oom;
} sh_walk_t;

/* realloc_count conventions for the two degenerate reallocs, learnt once per heap. */
enum { CONV_UNKNOWN = -1 };

struct shadow {
    const hk_catalog_entry_t *entry;
    shadow_config_t cfg;
    unsigned char *mem;   /* what we malloc'd */
    unsigned char *arena; /* mem + arena_offset */
    hk_heap_t *heap;

    sh_block_t *live; /* sorted by address */
    size_t n;
    size_t cap;
    uint32_t next_id;

    size_t sum_requested;
    size_t sum_usable;
    size_t sum_gross;

    hk_stats_t init_stats;
    sh_walk_t init_walk;
    sh_walk_t walk;

    hk_stats_t exp;  /* expected counters (alloc/free/realloc/fail/error) */
    hk_stats_t last; /* stats after the previous operation */

    int conv_realloc_null; /* does realloc(NULL, n) count a realloc? */
    int conv_realloc_zero; /* does realloc(p, 0) count a realloc? */

    unsigned long long op_index;
    const char *op_fmt;
    size_t op_arg[4];
    int failed;
    int misuse_reported;
    int from_bytes; /* driven by shadow_run_bytes: no seed to name */
    shadow_summary_t sum;
};

/* ---- reporting ---- */

static int fail(shadow_t *s, const char *fmt, ...)
{
    va_list ap;
    char op[128];
    if (s->failed) {
        return 1;
    }
    s->failed = 1;
    snprintf(op, sizeof(op), s->op_fmt, s->op_arg[0], s->op_arg[1], s->op_arg[2], s->op_arg[3]);
    if (s->from_bytes) {
        fprintf(stderr, "SHADOW FAILURE [%s] op #%llu (fuzz input): %s: ", s->entry->name, s->op_index, op);
    } else {
        fprintf(stderr, "SHADOW FAILURE [%s] op #%llu (seed %llu): %s: ", s->entry->name, s->op_index, s->cfg.seed,
                op);
    }
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    fflush(stderr);
    return 1;
}

/*
 * Name the operation about to run. Formatting waits until a failure needs
 * it, so fmt takes only %zu / %#zx conversions, one per size_t argument.
 */
static void describe(shadow_t *s, const char *fmt, size_t a, size_t b, size_t c, size_t d)
{
    s->op_index++;
    s->op_fmt = fmt;
    s->op_arg[0] = a;
    s->op_arg[1] = b;
    s->op_arg[2] = c;
    s->op_arg[3] = d;
}

/* Start an operation: nonzero (do nothing) once a check has failed, else name it as describe() does. */
static int begin_op(shadow_t *s, const char *fmt, size_t a, size_t b, size_t c, size_t d)
{
    if (s->failed) {
        return 1;
    }
    describe(s, fmt, a, b, c, d);
    return 0;
}

static void on_error(void *ctx, hk_heap_t *heap, hk_error_t error, const void *ptr)
{
    shadow_t *s = (shadow_t *)ctx;
    (void)heap;
    if (!s->misuse_reported) {
        s->misuse_reported = 1;
        fail(s, "the heap reported misuse '%s' at %p on a valid operation", hk_error_name(error), ptr);
    }
}

/* ---- fill patterns ---- */

static uint32_t mix32(uint32_t x)
{
    x ^= x >> 16;
    x *= 0x7FEB352Du;
    x ^= x >> 15;
    x *= 0x846CA68Bu;
    x ^= x >> 16;
    return x;
}

static unsigned char pattern_byte(uint32_t h, size_t i)
{
    return (unsigned char)((h & 0xFFu) + (size_t)((h >> 8) | 1u) * i + (i >> 8));
}

static void fill(const sh_block_t *b, size_t from, size_t to)
{
    uint32_t h = mix32(b->id);
    size_t i;
    for (i = from; i < to; i++) {
        b->ptr[i] = pattern_byte(h, i);
    }
}

/* Index of the first byte in [0, len) not matching the pattern, or len. */
static size_t verify_fill(const sh_block_t *b, size_t len)
{
    uint32_t h = mix32(b->id);
    size_t i;
    for (i = 0; i < len; i++) {
        if (b->ptr[i] != pattern_byte(h, i)) {
            return i;
        }
    }
    return len;
}

static int check_contents(shadow_t *s, const sh_block_t *b, size_t len, const char *when)
{
    size_t bad = verify_fill(b, len);
    if (bad != len) {
        return fail(s, "block %p (id %u, %zu bytes requested) corrupted %s: byte %zu is 0x%02x, pattern says 0x%02x",
                    (void *)b->ptr, (unsigned)b->id, b->requested, when, bad, b->ptr[bad],
                    pattern_byte(mix32(b->id), bad));
    }
    return 0;
}

/* ---- the live set ---- */

/* First index whose ptr >= p. */
static size_t lower_bound(const shadow_t *s, const unsigned char *p)
{
    size_t lo = 0;
    size_t hi = s->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if ((uintptr_t)s->live[mid].ptr < (uintptr_t)p) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    return lo;
}

static int insert_block(shadow_t *s, const sh_block_t *b)
{
    size_t i = lower_bound(s, b->ptr);
    uintptr_t start = (uintptr_t)b->ptr;
    uintptr_t end = start + b->usable;
    if (i < s->n && (uintptr_t)s->live[i].ptr < end) {
        return fail(s, "new block [%p, +%zu) overlaps live block [%p, +%zu)", (void *)b->ptr, b->usable,
                    (void *)s->live[i].ptr, s->live[i].usable);
    }
    if (i > 0 && (uintptr_t)s->live[i - 1].ptr + s->live[i - 1].usable > start) {
        return fail(s, "new block [%p, +%zu) overlaps live block [%p, +%zu)", (void *)b->ptr, b->usable,
                    (void *)s->live[i - 1].ptr, s->live[i - 1].usable);
    }
    if (s->n == s->cap) {
        size_t cap = s->cap != 0 ? s->cap * 2 : 256;
        sh_block_t *v = (sh_block_t *)realloc(s->live, cap * sizeof(*v));
        if (v == NULL) {
            return fail(s, "test harness out of memory");
        }
        s->live = v;
        s->cap = cap;
    }
    memmove(&s->live[i + 1], &s->live[i], (s->n - i) * sizeof(*s->live));
    s->live[i] = *b;
    s->n++;
    s->sum_requested += b->requested;
    s->sum_usable += b->usable;
    s->sum_gross += b->gross;
    return 0;
}

static sh_block_t remove_block(shadow_t *s, size_t i)
{
    sh_block_t b = s->live[i];
    memmove(&s->live[i], &s->live[i + 1], (s->n - i - 1) * sizeof(*s->live));
    s->n--;
    s->sum_requested -= b.requested;
    s->sum_usable -= b.usable;
    s->sum_gross -= b.gross;
    return b;
}

/* ---- stats ---- */

static int reclaims(const shadow_t *s) { return (s->entry->caps & HK_CATALOG_RECLAIMS) != 0; }

static int restores(const shadow_t *s) { return (s->entry->caps & HK_CATALOG_RESTORES) != 0; }

static void stats(shadow_t *s, hk_stats_t *out)
{
    memset(out, 0xA5, sizeof(*out)); /* a field the allocator forgets shows up as garbage */
    hk_get_stats(s->heap, out);
}

#define EXPECT_FIELD(field, want)                                                                                     \
    do {                                                                                                              \
        if ((st)->field != (size_t)(want)) {                                                                          \
            return fail(s, "stats." #field " is %zu, model expects %zu", (size_t)(st)->field, (size_t)(want));        \
        }                                                                                                             \
    } while (0)

/*
 * Compare everything but peak_used/min_ever_free (checked by the caller,
 * which knows the operation's transient state) with the model.
 */
static int check_stats(shadow_t *s, const hk_stats_t *st)
{
    EXPECT_FIELD(capacity, s->init_stats.capacity);
    EXPECT_FIELD(used_blocks, s->n);
    EXPECT_FIELD(used_granted, s->sum_usable);
    if (s->entry->caps & HK_CATALOG_EXACT_REQUESTED) {
        EXPECT_FIELD(used_requested, s->sum_requested);
    } else {
        EXPECT_FIELD(used_requested, s->sum_usable);
    }
    EXPECT_FIELD(alloc_count, s->exp.alloc_count);
    EXPECT_FIELD(free_count, s->exp.free_count);
    EXPECT_FIELD(realloc_count, s->exp.realloc_count);
    EXPECT_FIELD(fail_count, s->exp.fail_count);
    EXPECT_FIELD(error_count, s->exp.error_count);
    if (reclaims(s)) {
        EXPECT_FIELD(free_bytes, s->init_stats.capacity - s->sum_gross);
    }
    if (st->free_bytes > st->capacity) {
        return fail(s, "free_bytes %zu exceeds capacity %zu", st->free_bytes, st->capacity);
    }
    if (st->largest_free > st->free_bytes || st->smallest_free > st->largest_free) {
        return fail(s, "largest_free %zu / smallest_free %zu inconsistent with free_bytes %zu", st->largest_free,
                    st->smallest_free, st->free_bytes);
    }
    if ((st->free_blocks == 0) != (st->free_bytes == 0)) {
        return fail(s, "free_blocks %zu but free_bytes %zu", st->free_blocks, st->free_bytes);
    }
    if (st->split_count < s->last.split_count || st->coalesce_count < s->last.coalesce_count) {
        return fail(s, "split_count or coalesce_count went backwards");
    }
    return 0;
}

static size_t max_sz(size_t a, size_t b) { return a > b ? a : b; }
static size_t min_sz(size_t a, size_t b) { return a < b ? a : b; }

/*
 * peak_used and min_ever_free after an operation: at least as extreme as the
 * state now, at most as extreme as the transient min_lo; peak_used follows
 * from min_ever_free.
 */
static int check_marks(shadow_t *s, const hk_stats_t *st, size_t min_lo)
{
    size_t min_hi = min_sz(s->last.min_ever_free, st->free_bytes);
    min_lo = min_sz(min_lo, min_hi);
    /* peak_used is the high-water mark of gross used bytes: capacity - min_ever_free. */
    if (st->peak_used != st->capacity - st->min_ever_free) {
        return fail(s, "stats.peak_used is %zu, not capacity - min_ever_free = %zu", st->peak_used,
                    st->capacity - st->min_ever_free);
    }
    if (st->min_ever_free < min_lo || st->min_ever_free > min_hi) {
        if (min_lo == min_hi) {
            return fail(s, "stats.min_ever_free is %zu, model expects %zu", st->min_ever_free, min_hi);
        }
        return fail(s, "stats.min_ever_free is %zu, model expects %zu..%zu", st->min_ever_free, min_lo, min_hi);
    }
    return 0;
}

/* ---- the walk ---- */

static void walk_visit(void *ctx, const hk_block_info_t *b)
{
    sh_walk_t *w = (sh_walk_t *)ctx;
    if (w->n == w->cap) {
        size_t cap = w->cap != 0 ? w->cap * 2 : 256;
        hk_block_info_t *v = (hk_block_info_t *)realloc(w->v, cap * sizeof(*v));
        if (v == NULL) {
            w->oom = 1;
            return;
        }
        w->v = v;
        w->cap = cap;
    }
    w->v[w->n++] = *b;
}

static int take_walk(shadow_t *s, sh_walk_t *w)
{
    w->n = 0;
    w->oom = 0;
    hk_walk(s->heap, walk_visit, w);
    return w->oom ? fail(s, "test harness out of memory") : 0;
}

static int in_arena(const shadow_t *s, const void *p, size_t len)
{
    uintptr_t lo = (uintptr_t)s->arena;
    uintptr_t hi = lo + s->cfg.arena_size;
    uintptr_t a = (uintptr_t)p;
    return a >= lo && a <= hi && len <= hi - a;
}

/* The walk compared block by block as the allocator reports it; the first mismatch is kept. */
typedef struct walk_cmp {
    shadow_t *s;
    size_t index;
    size_t live;
    size_t total;
    size_t free_total;
    size_t free_count;
    size_t largest;
    size_t smallest;
    uintptr_t prev_end;
    char why[200];
} walk_cmp_t;

static void walk_compare(void *ctx, const hk_block_info_t *b)
{
    walk_cmp_t *c = (walk_cmp_t *)ctx;
    const shadow_t *s = c->s;
    size_t i = c->index++;
    if (c->why[0] != 0) {
        return;
    }
    if (!in_arena(s, b->start, b->size) || b->size == 0) {
        snprintf(c->why, sizeof(c->why), "walk block %zu [%p, +%zu) lies outside the arena or is empty", i, b->start,
                 b->size);
        return;
    }
    if ((uintptr_t)b->start < c->prev_end) {
        snprintf(c->why, sizeof(c->why), "walk block %zu at %p is out of address order or overlaps its predecessor",
                 i, b->start);
        return;
    }
    c->prev_end = (uintptr_t)b->start + b->size;
    c->total += b->size;
    if (b->used) {
        const sh_block_t *m;
        if (c->live == s->n) {
            snprintf(c->why, sizeof(c->why), "walk shows a used block at %p the model does not have", b->payload);
            return;
        }
        m = &s->live[c->live++];
        if (b->payload != m->ptr || b->usable != m->usable) {
            snprintf(c->why, sizeof(c->why), "walk used block %zu is (%p, usable %zu), model expects (%p, usable %zu)",
                     i, b->payload, b->usable, (void *)m->ptr, m->usable);
        } else if (reclaims(s) && b->size != m->gross) {
            snprintf(c->why, sizeof(c->why), "walk block %p has gross size %zu, its allocation took %zu free bytes",
                     b->payload, b->size, m->gross);
        } else if ((uintptr_t)b->payload < (uintptr_t)b->start ||
                   (uintptr_t)b->payload + b->usable > (uintptr_t)b->start + b->size) {
            snprintf(c->why, sizeof(c->why), "walk block %zu payload [%p, +%zu) not inside [%p, +%zu)", i, b->payload,
                     b->usable, b->start, b->size);
        }
    } else {
        c->free_total += b->size;
        c->free_count++;
        c->largest = max_sz(c->largest, b->size);
        c->smallest = c->smallest == 0 ? b->size : min_sz(c->smallest, b->size);
    }
}

static int check_walk(shadow_t *s, const hk_stats_t *st)
{
    walk_cmp_t c;
    memset(&c, 0, sizeof(c));
    c.s = s;
    hk_walk(s->heap, walk_compare, &c);
    if (c.why[0] != 0) {
        return fail(s, "%s", c.why);
    }
    if (c.live != s->n) {
        return fail(s, "walk shows %zu used blocks, the model has %zu live", c.live, s->n);
    }
    if (c.total != st->capacity) {
        return fail(s, "walk block sizes sum to %zu, capacity is %zu", c.total, st->capacity);
    }
    if (reclaims(s)) {
        if (c.free_total != st->free_bytes || c.free_count != st->free_blocks) {
            return fail(s, "walk shows %zu free bytes in %zu blocks, stats say %zu in %zu", c.free_total,
                        c.free_count, st->free_bytes, st->free_blocks);
        }
        if (c.largest != st->largest_free || c.smallest != st->smallest_free) {
            return fail(s, "walk's largest/smallest free are %zu/%zu, stats say %zu/%zu", c.largest, c.smallest,
                        st->largest_free, st->smallest_free);
        }
    }
    return 0;
}

static int full_check(shadow_t *s, const hk_stats_t *st)
{
    int rc = hk_check(s->heap);
    if (rc != 0) {
        return fail(s, "hk_check returned %d", rc);
    }
    return check_walk(s, st);
}

/* The heap must look exactly as it did right after init (counters aside). */
static int check_initial_state(shadow_t *s)
{
    hk_stats_t now;
    const hk_stats_t *st = &now;
    const hk_stats_t *init = &s->init_stats;
    size_t i;
    stats(s, &now);
    EXPECT_FIELD(capacity, init->capacity);
    EXPECT_FIELD(free_bytes, init->free_bytes);
    EXPECT_FIELD(largest_free, init->largest_free);
    EXPECT_FIELD(smallest_free, init->smallest_free);
    EXPECT_FIELD(free_blocks, init->free_blocks);
    EXPECT_FIELD(used_blocks, 0);
    EXPECT_FIELD(used_granted, 0);
    EXPECT_FIELD(used_requested, 0);
    if (hk_check(s->heap) != 0) {
        return fail(s, "hk_check returned %d on the emptied heap", hk_check(s->heap));
    }
    if (take_walk(s, &s->walk)) {
        return 1;
    }
    if (s->walk.n != s->init_walk.n) {
        return fail(s, "emptied heap walks %zu blocks, %zu right after init", s->walk.n, s->init_walk.n);
    }
    for (i = 0; i < s->walk.n; i++) {
        const hk_block_info_t *a = &s->walk.v[i];
        const hk_block_info_t *b = &s->init_walk.v[i];
        if (a->start != b->start || a->size != b->size || a->used != b->used || a->usable != b->usable) {
            return fail(s, "emptied heap's block %zu is (%p, %zu, used %d), right after init (%p, %zu, used %d)", i,
                        a->start, a->size, a->used, b->start, b->size, b->used);
        }
    }
    s->sum.empties++;
    return 0;
}

/* Shared tail of every operation. */
static int finish_op(shadow_t *s, const hk_stats_t *st, size_t min_lo)
{
    if (s->failed || check_stats(s, st) || check_marks(s, st, min_lo)) {
        return 1;
    }
    s->last = *st;
    if (s->op_index % s->cfg.check_every == 0 && full_check(s, st)) {
        return 1;
    }
    if (s->n == 0 && restores(s) && st->free_bytes == st->capacity && check_initial_state(s)) {
        return 1;
    }
    return 0;
}

/* ---- set-up ---- */

shadow_t *shadow_new(const hk_catalog_entry_t *entry, const shadow_config_t *cfg)
{
    shadow_t *s = (shadow_t *)calloc(1, sizeof(*s));
    hk_status_t status = HK_OK;
    hk_hooks_t hooks;
    if (s == NULL) {
        return NULL;
    }
    s->entry = entry;
    s->cfg = *cfg;
    if (s->cfg.check_every == 0) {
        s->cfg.check_every = SHADOW_CHECK_EVERY_DEFAULT;
    }
    s->conv_realloc_null = CONV_UNKNOWN;
    s->conv_realloc_zero = CONV_UNKNOWN;
    s->mem = (unsigned char *)malloc(s->cfg.arena_size + s->cfg.arena_offset);
    if (s->mem == NULL) {
        free(s);
        return NULL;
    }
    s->arena = s->mem + s->cfg.arena_offset;
    describe(s, "init(%zu bytes at offset %zu)", s->cfg.arena_size, s->cfg.arena_offset, 0, 0);
    s->op_index = 0;
    s->heap = entry->make(s->arena, s->cfg.arena_size, &status);
    if (s->heap == NULL || status != HK_OK) {
        fail(s, "init failed with status %d", (int)status);
        shadow_delete(s);
        return NULL;
    }
    memset(&hooks, 0, sizeof(hooks));
    hooks.on_error = on_error;
    hooks.ctx = s;
    hk_set_hooks(s->heap, &hooks);
    stats(s, &s->init_stats);
    s->last = s->init_stats;
    s->exp = s->init_stats;
    if (s->init_stats.used_blocks != 0 || s->init_stats.alloc_count != 0 || s->init_stats.fail_count != 0 ||
        s->init_stats.error_count != 0 || s->init_stats.free_bytes != s->init_stats.capacity ||
        s->init_stats.min_ever_free != s->init_stats.capacity || s->init_stats.peak_used != 0) {
        fail(s, "fresh heap's stats are not those of an empty heap");
    } else if (!in_arena(s, s->heap, sizeof(*s->heap)) || s->init_stats.capacity > s->cfg.arena_size) {
        fail(s, "the handle or capacity does not fit the arena");
    } else if (take_walk(s, &s->init_walk) == 0) {
        full_check(s, &s->init_stats);
    }
    return s;
}

void shadow_delete(shadow_t *s)
{
    if (s == NULL) {
        return;
    }
    free(s->live);
    free(s->walk.v);
    free(s->init_walk.v);
    free(s->mem);
    free(s);
}

hk_heap_t *shadow_heap(const shadow_t *s) { return s->heap; }
size_t shadow_live(const shadow_t *s) { return s->n; }
size_t shadow_live_size(const shadow_t *s, size_t i) { return s->live[i].requested; }
int shadow_failed(const shadow_t *s) { return s->failed; }
void shadow_get_summary(const shadow_t *s, shadow_summary_t *out)
{
    *out = s->sum;
    out->ops = s->op_index;
}

/* ---- operations ---- */

/*
 * A request no allocator can satisfy: bigger than the arena, or than the
 * entry's largest request. align is 0 for plain allocations.
 */
static int must_fail(const shadow_t *s, size_t size)
{
    return size > s->init_stats.capacity || size > s->entry->max_request;
}

/*
 * A small request on an empty heap: every allocator must satisfy it on a
 * fresh heap, and those that restore their initial state on any empty one.
 */
static int must_succeed(const shadow_t *s, size_t size, size_t align)
{
    size_t room = s->init_stats.largest_free / 2;
    return s->n == 0 && s->last.free_bytes == s->init_stats.capacity &&
           (restores(s) || s->last.alloc_count == 0) && size <= s->entry->max_request && align <= 256 &&
           align <= s->entry->max_align && room > 64 + align && size <= room - 64 - align;
}

/* Record a fresh block returned by an allocation call. */
static int accept_block(shadow_t *s, void *p, size_t size, size_t align, const hk_stats_t *before,
                        const hk_stats_t *after, int zeroed)
{
    sh_block_t b;
    size_t a = align > HK_ALIGN ? align : HK_ALIGN;
    if ((uintptr_t)p % a != 0) {
        return fail(s, "pointer %p is not %zu-aligned", p, a);
    }
    b.ptr = (unsigned char *)p;
    b.requested = size + (size == 0); /* malloc(0) is malloc(1) (heap.c) */
    b.usable = hk_usable_size(s->heap, p);
    b.id = ++s->next_id;
    if (b.usable < size) {
        return fail(s, "usable_size(%p) is %zu, below the %zu requested", p, b.usable, size);
    }
    if (!in_arena(s, p, b.usable)) {
        return fail(s, "block [%p, +%zu) leaves the arena [%p, +%zu)", p, b.usable, (void *)s->arena,
                    s->cfg.arena_size);
    }
    if (after->free_bytes > before->free_bytes) {
        return fail(s, "free_bytes grew from %zu to %zu on an allocation", before->free_bytes, after->free_bytes);
    }
    b.gross = before->free_bytes - after->free_bytes;
    if (b.gross < b.usable) {
        return fail(s, "allocation took %zu free bytes for a block of usable size %zu", b.gross, b.usable);
    }
    if (zeroed) {
        size_t i;
        for (i = 0; i < size; i++) {
            if (b.ptr[i] != 0) {
                return fail(s, "calloc memory at %p byte %zu is 0x%02x, not zero", p, i, b.ptr[i]);
            }
        }
    }
    if (!hk_owns(s->heap, p)) {
        return fail(s, "hk_owns(%p) is 0 for a block the heap just returned", p);
    }
    if (insert_block(s, &b)) {
        return 1;
    }
    fill(&b, 0, b.requested);
    s->exp.alloc_count++;
    s->sum.allocs++;
    return 0;
}

static int allocation(shadow_t *s, void *p, size_t size, size_t align, int zeroed, const hk_stats_t *before)
{
    hk_stats_t after;
    stats(s, &after);
    if (p == NULL) {
        s->exp.fail_count++;
        s->sum.failures++;
        if (must_succeed(s, size, align)) {
            return fail(s, "returned NULL on an empty heap (largest free block %zu)", s->init_stats.largest_free);
        }
        if (after.free_bytes != before->free_bytes) {
            return fail(s, "failed allocation changed free_bytes from %zu to %zu", before->free_bytes,
                        after.free_bytes);
        }
    } else {
        if (must_fail(s, size)) {
            return fail(s, "returned %p for a request that cannot fit (capacity %zu, max request %zu)", p,
                        s->init_stats.capacity, s->entry->max_request);
        }
        if (accept_block(s, p, size, align, before, &after, zeroed)) {
            return 1;
        }
    }
    return finish_op(s, &after, (size_t)-1);
}

/* A request that had to fail did: count the failure and close the operation. */
static int counted_failure(shadow_t *s)
{
    hk_stats_t after;
    stats(s, &after);
    s->exp.fail_count++;
    s->sum.failures++;
    return finish_op(s, &after, (size_t)-1);
}

int shadow_malloc(shadow_t *s, size_t size)
{
    hk_stats_t before = s->last;
    if (begin_op(s, "malloc(%zu)", size, 0, 0, 0)) {
        return 1;
    }
    return allocation(s, hk_malloc(s->heap, size), size, 0, 0, &before);
}

int shadow_calloc(shadow_t *s, size_t count, size_t size)
{
    hk_stats_t before = s->last;
    void *p;
    if (begin_op(s, "calloc(%zu, %zu)", count, size, 0, 0)) {
        return 1;
    }
    p = hk_calloc(s->heap, count, size);
    if (size != 0 && count > SIZE_MAX / size) {
        if (p != NULL) {
            return fail(s, "returned %p although count * size overflows", p);
        }
        return counted_failure(s);
    }
    return allocation(s, p, count * size, 0, 1, &before);
}

int shadow_aligned(shadow_t *s, size_t alignment, size_t size)
{
    hk_stats_t before = s->last;
    void *p;
    if (begin_op(s, "aligned_alloc(%zu, %zu)", alignment, size, 0, 0)) {
        return 1;
    }
    if ((s->entry->max_align > HK_ALIGN) != (s->heap->ops->aligned_alloc != NULL)) {
        return fail(s, "catalog and ops table disagree on aligned allocation support");
    }
    p = hk_aligned_alloc(s->heap, alignment, size);
    if (alignment == 0 || (alignment & (alignment - 1)) != 0 ||
        (alignment > HK_ALIGN && s->entry->max_align <= HK_ALIGN)) {
        if (p != NULL) {
            return fail(s, "returned %p for an alignment it must refuse", p);
        }
        return counted_failure(s);
    }
    return allocation(s, p, size, alignment, 0, &before);
}

/* realloc_count for a degenerate realloc: 0 or 1, the same every time. */
static int learn_convention(shadow_t *s, int *conv, const hk_stats_t *after, const char *what)
{
    size_t delta = after->realloc_count - s->exp.realloc_count;
    if (delta > 1) {
        return fail(s, "realloc_count jumped by %zu", delta);
    }
    if (*conv == CONV_UNKNOWN) {
        *conv = (int)delta;
    } else if ((size_t)*conv != delta) {
        return fail(s, "%s counted %zu realloc(s) now, %d before", what, delta, *conv);
    }
    s->exp.realloc_count += delta;
    return 0;
}

/* A free gives back exactly the block's gross size, or nothing at all where frees do not reclaim. */
static int free_gain(shadow_t *s, const sh_block_t *b, const hk_stats_t *before, const hk_stats_t *after)
{
    size_t gain = reclaims(s) ? b->gross : 0;
    if (after->free_bytes != before->free_bytes + gain) {
        return fail(s, "freeing %p (gross %zu) moved free_bytes from %zu to %zu", (void *)b->ptr, b->gross,
                    before->free_bytes, after->free_bytes);
    }
    return 0;
}

int shadow_realloc(shadow_t *s, size_t index, size_t size)
{
    hk_stats_t before = s->last;
    hk_stats_t after;
    sh_block_t old;
    void *p;
    size_t keep;
    if (s->failed) {
        return 1;
    }
    if (index == SHADOW_NONE) {
        describe(s, "realloc(NULL, %zu)", size, 0, 0, 0);
        p = hk_realloc(s->heap, NULL, size);
        stats(s, &after);
        if (p != NULL && learn_convention(s, &s->conv_realloc_null, &after, "realloc(NULL, n)")) {
            return 1;
        }
        return allocation(s, p, size, 0, 0, &before);
    }
    old = s->live[index];
    describe(s, "realloc(%#zx [%zu bytes, id %zu], %zu)", (size_t)(uintptr_t)old.ptr, old.requested, old.id, size);
    if (check_contents(s, &old, old.requested, "before realloc")) {
        return 1;
    }
    p = hk_realloc(s->heap, old.ptr, size);
    stats(s, &after);
    if (size == 0) {
        if (p != NULL) {
            return fail(s, "realloc(p, 0) returned %p instead of freeing", p);
        }
        remove_block(s, index);
        s->exp.free_count++;
        s->sum.frees++;
        if (learn_convention(s, &s->conv_realloc_zero, &after, "realloc(p, 0)") || free_gain(s, &old, &before, &after)) {
            return 1;
        }
        return finish_op(s, &after, (size_t)-1);
    }
    if (p == NULL) {
        s->exp.fail_count++;
        s->sum.failures++;
        if (!must_fail(s, size) && size <= old.usable) {
            return fail(s, "a shrinking (or same-size) realloc failed");
        }
        if (hk_usable_size(s->heap, old.ptr) != old.usable) {
            return fail(s, "a failed realloc changed the block's usable size");
        }
        if (after.free_bytes != before.free_bytes) {
            return fail(s, "a failed realloc changed free_bytes from %zu to %zu", before.free_bytes, after.free_bytes);
        }
        if (check_contents(s, &old, old.requested, "by a failed realloc")) {
            return 1;
        }
        return finish_op(s, &after, (size_t)-1);
    }
    if (must_fail(s, size)) {
        return fail(s, "returned %p for a request that cannot fit", p);
    }
    s->exp.realloc_count++;
    s->sum.reallocs++;
    remove_block(s, index);
    {
        size_t da = after.alloc_count - s->exp.alloc_count;
        size_t df = after.free_count - s->exp.free_count;
        size_t reclaimed = reclaims(s) ? old.gross : 0;
        size_t min_lo = (size_t)-1;
        sh_block_t nb = old;
        if (!((da == 0 && df == 0) || (da == 1 && df == 1 && p != old.ptr))) {
            return fail(s, "realloc changed alloc_count by %zu and free_count by %zu (pointer %s)", da, df,
                        p == old.ptr ? "kept" : "moved");
        }
        s->exp.alloc_count += da;
        s->exp.free_count += df;
        nb.ptr = (unsigned char *)p;
        nb.requested = size;
        nb.usable = hk_usable_size(s->heap, p);
        if ((uintptr_t)p % HK_ALIGN != 0) {
            return fail(s, "pointer %p is not %d-aligned", p, HK_ALIGN);
        }
        if (nb.usable < size) {
            return fail(s, "usable_size(%p) is %zu, below the %zu requested", p, nb.usable, size);
        }
        if (!in_arena(s, p, nb.usable)) {
            return fail(s, "block [%p, +%zu) leaves the arena", p, nb.usable);
        }
        /* in place, the free bytes change by the block's growth; a move allocates afresh and frees the old block */
        if (da == 0) {
            reclaimed = old.gross;
        }
        if (before.free_bytes + reclaimed < after.free_bytes) {
            return fail(s, "realloc gave back more than the old block's %zu gross bytes", old.gross);
        }
        nb.gross = before.free_bytes + reclaimed - after.free_bytes;
        if (nb.gross < nb.usable) {
            return fail(s, "realloc took %zu free bytes for a block of usable size %zu", nb.gross, nb.usable);
        }
        if (da == 1) {
            /* malloc-copy-free: both blocks were live for a moment */
            min_lo = after.free_bytes >= reclaimed ? after.free_bytes - reclaimed : 0;
        }
        keep = min_sz(old.requested, size);
        if (insert_block(s, &nb) || check_contents(s, &nb, keep, "by realloc (content not preserved)")) {
            return 1;
        }
        fill(&nb, keep, size);
        return finish_op(s, &after, min_lo);
    }
}

int shadow_free(shadow_t *s, size_t index)
{
    hk_stats_t before = s->last;
    hk_stats_t after;
    sh_block_t b;
    if (s->failed) {
        return 1;
    }
    if (index == SHADOW_NONE) {
        describe(s, "free(NULL)", 0, 0, 0, 0);
        hk_free(s->heap, NULL);
        stats(s, &after);
        if (memcmp(&after, &before, sizeof(after)) != 0) {
            return fail(s, "free(NULL) changed the stats");
        }
        return finish_op(s, &after, (size_t)-1);
    }
    b = s->live[index];
    describe(s, "free(%#zx [%zu bytes, id %zu])", (size_t)(uintptr_t)b.ptr, b.requested, b.id, 0);
    if (check_contents(s, &b, b.requested, "before free")) {
        return 1;
    }
    hk_free(s->heap, b.ptr);
    stats(s, &after);
    remove_block(s, index);
    s->exp.free_count++;
    s->sum.frees++;
    if (free_gain(s, &b, &before, &after)) {
        return 1;
    }
    return finish_op(s, &after, (size_t)-1);
}

int shadow_probe(shadow_t *s, size_t index)
{
    const sh_block_t *b;
    size_t u;
    if (begin_op(s, "usable_size probe of block %zu", index, 0, 0, 0)) {
        return 1;
    }
    if (hk_usable_size(s->heap, NULL) != 0) {
        return fail(s, "usable_size(NULL) is not 0");
    }
    if (index == SHADOW_NONE || index >= s->n) {
        return 0;
    }
    b = &s->live[index];
    u = hk_usable_size(s->heap, b->ptr);
    if (u != b->usable) {
        return fail(s, "usable_size(%p) is now %zu, was %zu", (void *)b->ptr, u, b->usable);
    }
    if (!hk_owns(s->heap, b->ptr)) {
        return fail(s, "hk_owns(%p) is 0 for a live block", (void *)b->ptr);
    }
    return check_contents(s, b, b->requested, "while live");
}

int shadow_reset(shadow_t *s)
{
    hk_stats_t after;
    size_t i;
    if (s->failed) {
        return 1;
    }
    if (s->entry->reset == NULL) {
        return 0;
    }
    describe(s, "reset", 0, 0, 0, 0);
    for (i = 0; i < s->n; i++) {
        if (check_contents(s, &s->live[i], s->live[i].requested, "before reset")) {
            return 1;
        }
    }
    s->entry->reset(s->heap);
    s->n = 0;
    s->sum_requested = s->sum_usable = s->sum_gross = 0;
    s->sum.resets++;
    stats(s, &after);
    /* the cumulative counters are the allocator's to keep or clear */
    s->exp.alloc_count = after.alloc_count;
    s->exp.free_count = after.free_count;
    s->exp.realloc_count = after.realloc_count;
    s->exp.fail_count = after.fail_count;
    s->exp.error_count = after.error_count;
    if (after.peak_used < s->last.peak_used && after.peak_used != 0) {
        return fail(s, "reset moved peak_used to %zu, neither kept nor cleared", after.peak_used);
    }
    s->last = after;
    if (check_initial_state(s)) {
        return 1;
    }
    return full_check(s, &after);
}

int shadow_drain(shadow_t *s)
{
    while (s->n > 0) {
        if (shadow_free(s, s->n - 1)) {
            return 1;
        }
    }
    if (!reclaims(s)) {
        return shadow_reset(s);
    }
    if (begin_op(s, "drained", 0, 0, 0, 0)) {
        return 1;
    }
    return restores(s) ? check_initial_state(s) : full_check(s, &s->last);
}

int shadow_verify(shadow_t *s)
{
    hk_stats_t st;
    if (s->failed) {
        return 1;
    }
    stats(s, &st);
    return full_check(s, &st);
}

/* ---- byte-driven runs ---- */

typedef struct byte_reader {
    const uint8_t *p;
    size_t left;
} byte_reader_t;

static unsigned next_byte(byte_reader_t *r)
{
    if (r->left == 0) {
        return 0;
    }
    r->left--;
    return *r->p++;
}

/*
 * A size from one to three bytes: mostly small, sometimes up to 16 KiB,
 * rarely one of the sizes that must fail.
 */
static size_t next_size(byte_reader_t *r, size_t arena_size)
{
    unsigned b = next_byte(r);
    if (b < 0xC0) {
        return b;
    }
    if (b < 0xF8) {
        return ((size_t)(b - 0xC0) << 8 | next_byte(r)) + 0xC0;
    }
    switch (b) {
    case 0xF8:
        return SIZE_MAX - next_byte(r);
    case 0xF9:
        return SIZE_MAX / 2 + 1 + next_byte(r);
    case 0xFA:
        return arena_size + next_byte(r);
    case 0xFB:
        return arena_size / 2 + ((size_t)next_byte(r) << 4);
    default:
        return ((size_t)next_byte(r) << 8 | next_byte(r)) % (arena_size + 1);
    }
}

static size_t pick(const shadow_t *s, byte_reader_t *r) { return s->n == 0 ? SHADOW_NONE : next_byte(r) % s->n; }

int shadow_run_bytes(const hk_catalog_entry_t *entry, const uint8_t *data, size_t size, size_t arena_size)
{
    shadow_config_t cfg;
    byte_reader_t r;
    shadow_t *s;
    unsigned first;
    int rc = 0;
    memset(&cfg, 0, sizeof(cfg));
    r.p = data;
    r.left = size;
    /* the first byte picks the arena: misaligned by 0..HK_ALIGN-1, 1/1 down to 1/8 of arena_size */
    first = next_byte(&r);
    arena_size >>= (first / HK_ALIGN) % 4u;
    cfg.arena_size = arena_size;
    cfg.arena_offset = first % HK_ALIGN;
    cfg.check_every = 1;
    s = shadow_new(entry, &cfg);
    if (s == NULL || s->failed) {
        shadow_delete(s);
        return 1;
    }
    s->from_bytes = 1;
    while (r.left > 0 && rc == 0) {
        unsigned op = next_byte(&r);
        size_t idx;
        switch (op % 10) {
        case 0:
        case 1:
            rc = shadow_malloc(s, next_size(&r, arena_size));
            break;
        case 2: {
            size_t n = next_byte(&r);
            rc = shadow_calloc(s, n, next_size(&r, arena_size));
            break;
        }
        case 3:
            idx = (op & 0x80) ? SHADOW_NONE : pick(s, &r);
            rc = shadow_realloc(s, idx, next_size(&r, arena_size));
            break;
        case 4: {
            unsigned a = next_byte(&r);
            size_t alignment = (a & 0x80) ? (size_t)a : (size_t)1 << (a % 14);
            rc = shadow_aligned(s, alignment, next_size(&r, arena_size));
            break;
        }
        case 5:
        case 6:
        case 7:
            idx = pick(s, &r);
            rc = shadow_free(s, (op & 0x80) && idx != SHADOW_NONE ? SHADOW_NONE : idx);
            break;
        case 8:
            rc = shadow_probe(s, pick(s, &r));
            break;
        default:
            if (op >= 0xF0) {
                rc = s->entry->reset != NULL ? shadow_reset(s) : shadow_drain(s);
            } else if (!reclaims(s) && s->entry->reset != NULL && s->last.free_bytes < arena_size / 8) {
                rc = shadow_reset(s);
            } else {
                rc = shadow_verify(s);
            }
            break;
        }
    }
    if (rc == 0) {
        rc = shadow_drain(s);
    }
    shadow_delete(s);
    return rc;
}
