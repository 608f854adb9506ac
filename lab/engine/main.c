/* SPDX-License-Identifier: MIT */
/*
 * hk-replay: replay a .hkb allocation trace against one allocator and report
 * what it cost (docs/metrics.md, docs/results-format.md).
 *
 *   hk-replay --trace T.hkb --alloc NAME [--arena BYTES] [--pad BYTES] [--second-region BYTES]
 *             [--series N] [--heapmap N] [--heapmap-cap N] [--heapmap-owners] [--placements FILE]
 *             [--no-timing] [--progress] [--json FILE|-]
 *   hk-replay --trace T.hkb --alloc NAME --size-search [--progress] [--json FILE|-]
 *   hk-replay --list [--json FILE|-]
 *
 * --pad adds BYTES to every allocation request the allocator sees, while the
 * engine's accounting keeps the trace's sizes: a larger per-block header, such
 * as the fits-cse3320 seed's 24 bytes, without a special build of the core.
 *
 * --second-region (freertos-heap5 only) gives heap_5 the arena's top BYTES as
 * a second region, as a board with two memories does (the BL602 SDK's
 * heap_wifi): heap_5 never merges across regions.
 *
 * --placements writes FILE: per trace id, two little-endian int64, the offset
 * from the arena start of what the allocator returned for it and its usable
 * bytes (-1 -1: never placed in the arena). With the heap maps' gross
 * relation (docs/results-format.md) it gives every block's extent at every
 * record, which heapkit view replays between snapshots.
 *
 * Exit status: 0 done (allocation failures and corruptions are results, not
 * errors), 2 bad arguments or input (one line on stderr naming the file and
 * record), 1 the host ran out of memory or output failed.
 *
 * Memory limit: a trace can ask for any amount of memory (one record of 4 GiB
 * is 64 bytes of .hkb). Without --arena, a replay whose default arena (or, for
 * an allocator outside an arena, whose peak of live bytes) would reach the
 * limit is refused with status 2, as is a size search of such a trace; the
 * search probes no arena above it. The limit is 1 GiB, or the available
 * memory when that is less; HEAPKIT_MEM_LIMIT=BYTES sets another.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "allocators.h"
#include "replay.h"
#include "report.h"
#include "trace.h"

#define DEFAULT_SERIES 200u
#define MAX_SERIES 100000u
#define MAX_HEAPMAP 1000u
#define DEFAULT_HEAPMAP_CAP 4096u
#define MIN_DEFAULT_ARENA ((uint64_t)64 * 1024)
#define ARENA_ALIGN 64u
#define MAX_ARENA_ALIGN ((uint64_t)1 << 20)
#define SEARCH_GRANULARITY 16u
#define SEARCH_MAX_LIMIT ((uint64_t)4 << 30)
#define DEFAULT_MEM_LIMIT ((uint64_t)1 << 30)

static const char usage[] =
    "usage: hk-replay --trace T.hkb --alloc NAME [--arena BYTES] [--pad BYTES] [--second-region BYTES]\n"
    "                 [--series N] [--heapmap N] [--heapmap-cap N] [--heapmap-owners] [--placements FILE]\n"
    "                 [--no-timing] [--progress] [--json FILE|-]\n"
    "       hk-replay --trace T.hkb --alloc NAME --size-search [--progress] [--json FILE|-]\n"
    "       hk-replay --list [--json FILE|-]\n";

static void die(int code, const char *fmt, ...)
{
    va_list ap;
    fputs("hk-replay: ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    exit(code);
}

/* Decimal bytes with an optional K, M or G (binary) suffix. */
static uint64_t parse_bytes(const char *opt, const char *s)
{
    char *end;
    unsigned long long v;
    uint64_t mult = 1;
    errno = 0;
    v = strtoull(s, &end, 10);
    if (end == s || errno != 0 || *s == '-') {
        die(2, "%s: not a byte count: '%s'", opt, s);
    }
    if (*end == 'K' || *end == 'k') {
        mult = 1024, end++;
    } else if (*end == 'M' || *end == 'm') {
        mult = 1024 * 1024, end++;
    } else if (*end == 'G' || *end == 'g') {
        mult = 1024 * 1024 * 1024, end++;
    }
    if (*end != '\0' || v > UINT64_MAX / mult) {
        die(2, "%s: not a byte count: '%s'", opt, s);
    }
    return (uint64_t)v * mult;
}

static unsigned parse_count(const char *opt, const char *s, unsigned max)
{
    char *end;
    unsigned long v;
    errno = 0;
    v = strtoul(s, &end, 10);
    if (end == s || *end != '\0' || errno != 0 || *s == '-' || v > max) {
        die(2, "%s: expected a count from 0 to %u, got '%s'", opt, max, s);
    }
    return (unsigned)v;
}

static uint64_t round_up(uint64_t x, uint64_t a) { return (x + a - 1) / a * a; }

/* MemAvailable from /proc/meminfo in bytes, or 0 when it cannot be read. */
static uint64_t available_memory(void)
{
    FILE *f = fopen("/proc/meminfo", "r");
    char line[128];
    unsigned long long kib;
    uint64_t out = 0;
    if (f == NULL) {
        return 0;
    }
    while (fgets(line, sizeof(line), f) != NULL) {
        if (sscanf(line, "MemAvailable: %llu kB", &kib) == 1) {
            out = kib > UINT64_MAX / 1024 ? UINT64_MAX : (uint64_t)kib * 1024;
            break;
        }
    }
    fclose(f);
    return out;
}

/* The memory limit (see the top of this file). */
static uint64_t memory_limit(void)
{
    const char *env = getenv("HEAPKIT_MEM_LIMIT");
    uint64_t avail;
    if (env != NULL && *env != '\0') {
        uint64_t limit = parse_bytes("HEAPKIT_MEM_LIMIT", env);
        if (limit == 0) {
            die(2, "HEAPKIT_MEM_LIMIT: must be positive");
        }
        return limit;
    }
    avail = available_memory();
    return avail != 0 && avail < DEFAULT_MEM_LIMIT ? avail : DEFAULT_MEM_LIMIT;
}

/* Refuse (status 2) a replay that needs need bytes, what, at or above the memory limit. */
static void check_limit(const lab_trace_t *t, uint64_t need, const char *what, const char *override)
{
    uint64_t limit = memory_limit();
    if (need >= limit) {
        die(2, "%s: record %llu brings the live bytes to %llu, so %s would take %llu bytes, at or above the "
            "memory limit of %llu; %s",
            t->path, (unsigned long long)t->peak_live_rec, (unsigned long long)t->peak_live, what,
            (unsigned long long)need, (unsigned long long)limit, override);
    }
}

static FILE *open_output(const char *json)
{
    FILE *f;
    if (json == NULL || strcmp(json, "-") == 0) {
        return stdout;
    }
    f = fopen(json, "w");
    if (f == NULL) {
        die(2, "%s: cannot write: %s", json, strerror(errno));
    }
    return f;
}

static void close_output(FILE *f, const char *json)
{
    if (fflush(f) != 0 || ferror(f) || (f != stdout && fclose(f) != 0)) {
        die(1, "%s: write failed", json != NULL ? json : "stdout");
    }
}

static int list_allocators(const char *json)
{
    size_t i;
    FILE *f = open_output(json);
    if (json == NULL) {
        for (i = 0; i < lab_alloc_count(); i++) {
            fprintf(f, "%s\n", lab_alloc_at(i)->name);
        }
    } else {
        fputs("[", f);
        for (i = 0; i < lab_alloc_count(); i++) {
            const lab_alloc_t *a = lab_alloc_at(i);
            fprintf(f, "%s\n  {\"name\": \"%s\", \"family\": \"%s\", \"in_arena\": %s}", i ? "," : "", a->name,
                    lab_family_name(a->family), (a->flags & LAB_IN_ARENA) ? "true" : "false");
        }
        fputs("\n]\n", f);
    }
    close_output(f, json);
    return 0;
}

/* ---- arena ------------------------------------------------------------- */

typedef struct arena {
    void *mem;
    uint64_t cap;
    uint64_t align;
} arena_t;

/* At least size bytes, aligned to a->align; contents unspecified. */
static void *arena_get(arena_t *a, uint64_t size)
{
    if (size > a->cap || a->mem == NULL) {
        void *p = NULL;
        free(a->mem);
        a->mem = NULL;
        a->cap = 0;
        if (size > SIZE_MAX || posix_memalign(&p, (size_t)a->align, (size_t)(size != 0 ? size : 1)) != 0) {
            die(1, "cannot allocate an arena of %" PRIu64 " bytes", size);
        }
        a->mem = p;
        a->cap = size;
    }
    return a->mem;
}

/* The trace's largest alignment (within reason) keeps results independent of where the arena lands. */
static uint64_t arena_alignment(const lab_trace_t *t)
{
    uint64_t a = ARENA_ALIGN;
    while (a < t->max_align && a < MAX_ARENA_ALIGN) {
        a *= 2;
    }
    return a;
}

static uint64_t default_arena(const lab_trace_t *t)
{
    uint64_t want = t->peak_live > UINT64_MAX / 4 ? UINT64_MAX / 4 : 4 * t->peak_live;
    return round_up(want > MIN_DEFAULT_ARENA ? want : MIN_DEFAULT_ARENA, ARENA_ALIGN);
}

/* ---- replay ------------------------------------------------------------ */

static void replay_or_die(const lab_trace_t *t, const lab_alloc_t *a, void *mem, uint64_t size,
                          const lab_options_t *o, lab_result_t *r)
{
    lab_options_t limited = *o;
    uint64_t limit = memory_limit();
    int rc;
    /* The arena and the footprint's bookkeeping of its blocks share the limit. */
    limited.mem_limit = limit > size ? limit - size : 1;
    rc = lab_replay(t, a, mem, (size_t)size, &limited, r);
    if (rc == LAB_TOO_MANY_BLOCKS) {
        die(2, "%s: %s's fresh heap in a %llu-byte arena has more blocks than the footprint can track "
            "within the memory limit of %llu bytes; use a smaller --arena or set HEAPKIT_MEM_LIMIT=BYTES",
            t->path, a->name, (unsigned long long)size, (unsigned long long)limit);
    }
    if (rc != 0) {
        die(1, "out of memory while replaying %s", t->path);
    }
}

/*
 * The pre-pass found the peak-live record assuming every allocation
 * succeeds. When some failed, the peak moved: replay again (deterministic,
 * same arena) and take the breakdown at the real peak.
 */
static void fix_breakdown(const lab_trace_t *t, const lab_alloc_t *a, void *mem, uint64_t size, lab_result_t *r)
{
    lab_options_t o;
    lab_result_t again;
    if (r->completed == 0 || (r->at_peak_live.valid && r->at_peak_live.rec == r->peak_requested_rec)) {
        return;
    }
    memset(&o, 0, sizeof(o));
    o.snapshot_rec = r->peak_requested_rec;
    replay_or_die(t, a, mem, size, &o, &again);
    r->at_peak_live = again.at_peak_live;
    lab_result_free(&again);
}

/* Stamps the run's total times and writes it: JSON to the --json file (or stdout), else a text summary. */
static void write_report(lab_run_t *run, const char *json, double t0)
{
    FILE *f;
    run->total_s = lab_now_s() - t0;
    run->total_cpu_s = lab_cpu_s();
    f = open_output(json);
    if (json != NULL) {
        if (lab_write_json(f, run) != 0) {
            die(1, "out of memory or write error producing the report");
        }
    } else {
        lab_write_text(f, run);
    }
    close_output(f, json);
}

/* --placements: per id (offset, usable) as little-endian int64, -1 for an id never placed in the arena. */
static void write_placements(const char *path, const lab_trace_t *t, const lab_result_t *r)
{
    FILE *f = fopen(path, "wb");
    uint64_t i;
    if (f == NULL) {
        die(2, "%s: cannot write: %s", path, strerror(errno));
    }
    for (i = 0; i < 2 * t->ids; i++) {
        uint64_t v = r->place != NULL ? r->place[i] : LAB_NONE;
        unsigned char b[8];
        int k;
        for (k = 0; k < 8; k++) {
            b[k] = (unsigned char)(v >> (8 * k));
        }
        if (fwrite(b, 1, 8, f) != 8) {
            break;
        }
    }
    if (fclose(f) != 0 || i != 2 * t->ids) {
        die(1, "%s: write error", path);
    }
}

static int run_replay(const lab_trace_t *t, const lab_alloc_t *a, uint64_t arena_size, const lab_options_t *o,
                      const char *placements, const char *json, double t0, double load_s)
{
    arena_t arena = {NULL, 0, arena_alignment(t)};
    lab_result_t r;
    lab_run_t run;
    int in_arena = (a->flags & LAB_IN_ARENA) != 0;
    int dflt = arena_size == 0;
    void *mem = NULL;

    if (in_arena) {
        if (dflt) {
            arena_size = default_arena(t);
            check_limit(t, arena_size, "the default arena (4x)", "give --arena BYTES to replay anyway");
        }
        mem = arena_get(&arena, arena_size);
        memset(mem, 0, (size_t)arena_size); /* fault the pages in before anything is timed */
    } else {
        if (!dflt) {
            fprintf(stderr, "hk-replay: --arena ignored: '%s' does not live in an arena\n", a->name);
        }
        check_limit(t, t->peak_live, a->name, "set HEAPKIT_MEM_LIMIT=BYTES to replay anyway");
        arena_size = 0;
    }
    replay_or_die(t, a, mem, arena_size, o, &r);
    if (!r.made) {
        die(2, "%s: the allocator refused an arena of %" PRIu64 " bytes (status %d%s)", a->name, arena_size,
            (int)r.make_status, r.make_status == HK_ETOOSMALL ? ": too small" : "");
    }
    fix_breakdown(t, a, mem, arena_size, &r);
    if (placements != NULL) {
        write_placements(placements, t, &r);
    }

    memset(&run, 0, sizeof(run));
    run.mode = "replay";
    run.trace = t;
    run.alloc = a;
    run.arena_size = arena_size;
    run.arena_align = arena.align;
    run.arena_default = dflt;
    run.opt = o;
    run.res = &r;
    run.load_s = load_s;
    write_report(&run, json, t0);
    lab_result_free(&r);
    free(arena.mem);
    return 0;
}

/* ---- size search ------------------------------------------------------- */

typedef struct searcher {
    const lab_trace_t *t;
    const lab_alloc_t *a;
    arena_t arena;
    lab_search_t *s;
    int progress;
} searcher_t;

/* 1 when the whole trace replays without a failed allocation in an arena of size bytes. */
static int probe(searcher_t *se, uint64_t size)
{
    lab_options_t o;
    lab_result_t r;
    int ok;
    memset(&o, 0, sizeof(o));
    o.stop_on_failure = 1;
    o.progress = se->progress;
    o.snapshot_rec = LAB_NONE;
    replay_or_die(se->t, se->a, arena_get(&se->arena, size), size, &o, &r);
    ok = r.made && r.failures_total == 0 && r.completed == se->t->count;
    lab_result_free(&r);
    se->s->probes++;
    return ok;
}

static void note_below(lab_search_t *s, uint64_t size)
{
    unsigned i;
    for (i = 0; i < s->n_succeeded_below; i++) {
        if (s->succeeded_below[i] == size) {
            return;
        }
    }
    if (s->n_succeeded_below < sizeof(s->succeeded_below) / sizeof(s->succeeded_below[0])) {
        s->succeeded_below[s->n_succeeded_below++] = size;
    }
}

/* Bisection between a failing lo and a succeeding hi, down to the granularity; returns the succeeding end. */
static uint64_t bisect(searcher_t *se, uint64_t *lo, uint64_t hi)
{
    const uint64_t g = SEARCH_GRANULARITY;
    while (hi - *lo > g) {
        uint64_t mid = *lo + (hi - *lo) / 2 / g * g;
        if (probe(se, mid)) {
            hi = mid;
        } else {
            *lo = mid;
        }
    }
    return hi;
}

/* Sizes below a boundary worth probing for non-monotonicity, ascending. */
static unsigned below_sizes(uint64_t floor, uint64_t hi, uint64_t *out)
{
    const uint64_t g = SEARCH_GRANULARITY;
    unsigned n = 0;
    uint64_t k;
    for (k = 1; k < 8 && hi > floor; k++) {
        uint64_t size = (floor + (hi - floor) * k / 8) / g * g;
        if (size > floor && size + 9 * g < hi && (n == 0 || size > out[n - 1])) {
            out[n++] = size;
        }
    }
    for (k = 9; k >= 2; k--) {
        if (k * g < hi && hi - k * g > floor && (n == 0 || hi - k * g > out[n - 1])) {
            out[n++] = hi - k * g;
        }
    }
    return n;
}

#define SEARCH_ROUNDS 4

/*
 * Smallest arena (a multiple of the granularity) on which the trace
 * replays without a failed allocation: doubling from twice the peak, then
 * bisection to a size that succeeds while the next smaller one fails.
 * Allocators need not be monotone in the arena size, so fifteen smaller
 * sizes are then probed; when one succeeds the search bisects again below
 * it (at most SEARCH_ROUNDS times) and reports nonmonotone.
 */
static void size_search(searcher_t *se, uint64_t mem_limit)
{
    lab_search_t *s = se->s;
    const uint64_t g = SEARCH_GRANULARITY;
    uint64_t peak = se->t->peak_live;
    uint64_t floor = peak / g * g;
    uint64_t lo = floor;
    uint64_t hi;
    unsigned round;

    s->granularity = g;
    s->limit = peak > SEARCH_MAX_LIMIT / 64 ? SEARCH_MAX_LIMIT : 64 * peak;
    if (s->limit < ((uint64_t)1 << 20)) {
        s->limit = (uint64_t)1 << 20;
    }
    if (s->limit < round_up(2 * peak + g, g)) {
        s->limit = round_up(2 * peak + g, g);
    }
    if (s->limit > mem_limit) {
        s->limit = mem_limit / g * g;
    }
    if (probe(se, lo)) {
        hi = lo; /* only an arena of 0 bytes is sure to fail */
        lo = 0;
        floor = 0;
    } else {
        hi = round_up(2 * peak > lo + g ? 2 * peak : lo + g, g);
        if (hi < 1024) {
            hi = 1024;
        }
        if (hi > s->limit) {
            hi = s->limit;
        }
        while (!probe(se, hi)) {
            lo = hi;
            if (hi >= s->limit) {
                s->lower_bound = lo;
                s->reason = "fails at every arena size up to the search limit";
                return;
            }
            hi = hi * 2 > s->limit ? s->limit : hi * 2;
        }
    }
    hi = bisect(se, &lo, hi);
    for (round = 0; round < SEARCH_ROUNDS; round++) {
        uint64_t sizes[16];
        uint64_t below = floor;
        unsigned n = below_sizes(floor, hi, sizes);
        unsigned i;
        int found = 0;
        for (i = 0; i < n && !found; i++) {
            s->checked_below++;
            if (probe(se, sizes[i])) {
                note_below(s, sizes[i]);
                lo = below;
                hi = bisect(se, &lo, sizes[i]);
                found = 1;
            } else {
                below = sizes[i];
            }
        }
        if (!found) {
            break;
        }
    }
    s->min_arena = hi;
    s->lower_bound = lo;
}

static int run_size_search(const lab_trace_t *t, const lab_alloc_t *a, const lab_options_t *base, const char *json,
                           double t0, double load_s)
{
    lab_search_t s;
    searcher_t se;
    lab_result_t r;
    lab_options_t o = *base;
    lab_run_t run;

    uint64_t mem_limit = memory_limit();

    if ((a->flags & LAB_IN_ARENA) == 0) {
        die(2, "--size-search needs an allocator that lives in an arena; '%s' does not", a->name);
    }
    check_limit(t, t->peak_live, "the smallest arena the search could try",
                "set HEAPKIT_MEM_LIMIT=BYTES to search anyway");
    memset(&s, 0, sizeof(s));
    memset(&r, 0, sizeof(r));
    se.t = t;
    se.a = a;
    se.arena.mem = NULL;
    se.arena.cap = 0;
    se.arena.align = arena_alignment(t);
    se.s = &s;
    se.progress = base->progress;
    size_search(&se, mem_limit);

    /* Verification: a full replay at the result, patterns checked, no timing or series. */
    o.timing = 0;
    o.series = 0;
    o.heapmap = 0;
    o.fill = 1;
    o.progress = 0;
    o.snapshot_rec = t->count != 0 ? t->peak_live_rec : LAB_NONE;
    if (s.min_arena != 0) {
        replay_or_die(t, a, arena_get(&se.arena, s.min_arena), s.min_arena, &o, &r);
        if (!r.made || r.failures_total != 0) {
            s.reason = "the verification replay at min_arena failed (the allocator is not deterministic)";
        }
        fix_breakdown(t, a, se.arena.mem, s.min_arena, &r);
    }

    memset(&run, 0, sizeof(run));
    run.mode = "size-search";
    run.trace = t;
    run.alloc = a;
    run.arena_size = s.min_arena;
    run.arena_align = se.arena.align;
    run.opt = &o;
    run.res = &r;
    run.search = &s;
    run.load_s = load_s;
    write_report(&run, json, t0);
    lab_result_free(&r);
    free(se.arena.mem);
    return 0;
}

/* ---- main -------------------------------------------------------------- */

int main(int argc, char **argv)
{
    enum { OPT_TRACE = 1, OPT_ALLOC, OPT_ARENA, OPT_PAD, OPT_SECOND_REGION, OPT_SERIES, OPT_HEAPMAP, OPT_HEAPMAP_CAP,
           OPT_HEAPMAP_OWNERS, OPT_PLACEMENTS, OPT_NO_TIMING, OPT_PROGRESS, OPT_JSON, OPT_SEARCH, OPT_LIST, OPT_HELP };
    static const struct option longopts[] = {{"trace", required_argument, NULL, OPT_TRACE},
                                             {"alloc", required_argument, NULL, OPT_ALLOC},
                                             {"arena", required_argument, NULL, OPT_ARENA},
                                             {"pad", required_argument, NULL, OPT_PAD},
                                             {"second-region", required_argument, NULL, OPT_SECOND_REGION},
                                             {"series", required_argument, NULL, OPT_SERIES},
                                             {"heapmap", required_argument, NULL, OPT_HEAPMAP},
                                             {"heapmap-cap", required_argument, NULL, OPT_HEAPMAP_CAP},
                                             {"heapmap-owners", no_argument, NULL, OPT_HEAPMAP_OWNERS},
                                             {"placements", required_argument, NULL, OPT_PLACEMENTS},
                                             {"no-timing", no_argument, NULL, OPT_NO_TIMING},
                                             {"progress", no_argument, NULL, OPT_PROGRESS},
                                             {"json", required_argument, NULL, OPT_JSON},
                                             {"size-search", no_argument, NULL, OPT_SEARCH},
                                             {"list", no_argument, NULL, OPT_LIST},
                                             {"help", no_argument, NULL, OPT_HELP},
                                             {NULL, 0, NULL, 0}};
    const char *trace_path = NULL;
    const char *alloc_name = NULL;
    const char *json = NULL;
    const char *placements = NULL;
    uint64_t arena = 0;
    uint64_t second_region = 0;
    int search = 0;
    int list = 0;
    lab_options_t o;
    lab_trace_t t;
    const lab_alloc_t *a;
    char err[512];
    double t0 = lab_now_s();
    double load_s;
    int c;
    int rc;

    memset(&o, 0, sizeof(o));
    o.timing = 1;
    o.fill = 1;
    o.series = DEFAULT_SERIES;
    o.heapmap_cap = DEFAULT_HEAPMAP_CAP;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
        switch (c) {
        case OPT_TRACE:
            trace_path = optarg;
            break;
        case OPT_ALLOC:
            alloc_name = optarg;
            break;
        case OPT_ARENA:
            arena = parse_bytes("--arena", optarg);
            if (arena == 0) {
                die(2, "--arena: must be positive");
            }
            break;
        case OPT_PAD:
            o.pad = parse_bytes("--pad", optarg);
            break;
        case OPT_SECOND_REGION:
            second_region = parse_bytes("--second-region", optarg);
            o.second_region = second_region;
            if (second_region == 0) {
                die(2, "--second-region: must be positive");
            }
            break;
        case OPT_SERIES:
            o.series = parse_count("--series", optarg, MAX_SERIES);
            break;
        case OPT_HEAPMAP:
            o.heapmap = parse_count("--heapmap", optarg, MAX_HEAPMAP);
            break;
        case OPT_HEAPMAP_CAP:
            o.heapmap_cap = parse_count("--heapmap-cap", optarg, 1u << 20);
            if (o.heapmap_cap == 0) {
                die(2, "--heapmap-cap: must be positive");
            }
            break;
        case OPT_HEAPMAP_OWNERS:
            o.heapmap_owners = 1;
            break;
        case OPT_PLACEMENTS:
            placements = optarg;
            o.placements = 1;
            break;
        case OPT_NO_TIMING:
            o.timing = 0;
            break;
        case OPT_PROGRESS:
            o.progress = 1;
            break;
        case OPT_JSON:
            json = optarg;
            break;
        case OPT_SEARCH:
            search = 1;
            break;
        case OPT_LIST:
            list = 1;
            break;
        case OPT_HELP:
            fputs(usage, stdout);
            return 0;
        default:
            fputs(usage, stderr);
            die(2, "unknown option or missing value: %s", argv[optind - 1]);
        }
    }
    if (optind < argc) {
        fputs(usage, stderr);
        die(2, "unexpected argument: %s", argv[optind]);
    }
    if (list) {
        return list_allocators(json);
    }
    if (trace_path == NULL || alloc_name == NULL) {
        fputs(usage, stderr);
        die(2, "--trace and --alloc are required");
    }
    if (search && arena != 0) {
        die(2, "--size-search chooses the arena: drop --arena");
    }
    if (search && placements != NULL) {
        die(2, "--placements needs a replay: drop --size-search");
    }
    if (search && o.pad != 0) {
        die(2, "--size-search replays the trace's own sizes: drop --pad");
    }
    a = lab_alloc_find(alloc_name);
    if (a == NULL) {
        die(2, "unknown allocator '%s' (hk-replay --list shows the available ones)", alloc_name);
    }
    if (second_region != 0) {
#ifdef HK_HAVE_PEER_FREERTOS_HEAP5
        if (strcmp(a->name, "freertos-heap5") != 0) {
            die(2, "--second-region: only freertos-heap5 takes several regions, not '%s'", a->name);
        }
        if (second_region > SIZE_MAX) {
            die(2, "--second-region: too large");
        }
        lab_freertos_heap5_second_region((size_t)second_region);
#else
        die(2, "--second-region: freertos-heap5 is not in this build (its sources were not fetched)");
#endif
    }
    if (lab_trace_open(&t, trace_path, err, sizeof(err)) != 0) {
        die(2, "%s", err);
    }
    load_s = lab_now_s() - t0;
    o.snapshot_rec = t.count != 0 ? t.peak_live_rec : LAB_NONE;
    if (search) {
        rc = run_size_search(&t, a, &o, json, t0, load_s);
    } else {
        rc = run_replay(&t, a, arena, &o, placements, json, t0, load_s);
    }
    lab_trace_close(&t);
    return rc;
}
