/* SPDX-License-Identifier: MIT */
/*
 * hk-explore: the design-space explorer's evaluator (lab/heapkit/explore.py).
 * It maps and validates one .hkb trace once (lab/engine/trace.c), then, for
 * each configuration line read from stdin, replays the whole trace on a
 * fresh dmm heap (include/heapkit/dmm.h) in one reused arena and prints one
 * result line. One process evaluates any number of configurations.
 *
 *   hk-explore TRACE.hkb [--arena BYTES] [--max-work N] [--no-check] < configs
 *   hk-explore --canon < configs       canonical text of each config
 *   hk-explore --presets               NAME CONFIG for every dmm preset
 *
 * Input lines: "ID CONFIG", ID a token without spaces, CONFIG the text of
 * lab/explore/config_text.h. Output lines, one per input line, in order:
 *
 *   ID ok FAILURES FRAG WORK PEAK_FOOTPRINT PEAK_REQUESTED CPU_NS
 *   ID refused REASON          (hk_dmm_validate refused the config)
 *   ID capped WORK RECORD CPU_NS  (--max-work: the work passed N by record
 *                               RECORD, where the replay stopped)
 *
 *   FAILURES        allocations that returned NULL
 *   FRAG            the paper's fragmentation, PEAK_FOOTPRINT / PEAK_REQUESTED - 1
 *   WORK            the deterministic cost: one unit per replayed record, plus
 *                   the dmm counters examined + insert_steps + splits + coalesces
 *   PEAK_FOOTPRINT  dmm max_top: bytes ever carved from the arena's untouched top
 *   PEAK_REQUESTED  high-water mark of live requested bytes, counted by the
 *                   replay (a moving realloc holds both blocks for a moment)
 *   CPU_NS          thread CPU time of the replay loop (noisy; informative only)
 *
 * The default arena is max(1 MiB, 16 x the trace's peak live requested
 * bytes), so that even the rounding presets do not run out of arena on the
 * lab's traces (a no_pool config still fails requests above its lists); the
 * footprint is a high-water mark, so a larger arena does not change it.
 * Records: m malloc, c calloc (as a malloc of nmemb x size: zeroing is not
 * the allocator's work), r realloc (hk_realloc on the dmm's heap: in place
 * when hk_dmm_resize allows, else moved), f free; an a (aligned_alloc) record
 * counts one failure, since dmm has no aligned allocation. Frees and
 * reallocs of ids whose allocation failed are skipped (reallocs become
 * mallocs), as in hk-replay. --max-work bounds the cost of pathological
 * configurations (worst fit over thousands of unmerged fragments scans them
 * all on every request): the work is checked every CAP_STRIDE records.
 * After each replay hk_dmm_check must return 0 (--no-check skips it);
 * otherwise the evaluator stops with status 1, since every later figure
 * would be meaningless.
 *
 * Exit status: 0 done, 2 bad arguments, trace or config line (one line on
 * stderr naming the file or stdin line), 1 out of memory or a broken heap.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "config_text.h"
#include "heapkit/dmm.h"
#include "trace.h"

#define MIN_ARENA ((uint64_t)1 << 20)
#define ARENA_FACTOR 16u
#define MAX_LINE 1024u
#define CAP_STRIDE 1024u

static const char usage[] =
    "usage: hk-explore TRACE.hkb [--arena BYTES] [--max-work N] [--no-check] < configs\n"
    "       hk-explore --canon < configs\n"
    "       hk-explore --presets\n";

static void die(int code, const char *fmt, ...)
{
    va_list ap;
    fputs("hk-explore: ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    exit(code);
}

static uint64_t parse_bytes(const char *s)
{
    char *end;
    unsigned long long v;
    errno = 0;
    v = strtoull(s, &end, 10);
    if (errno != 0 || end == s || *s == '-') {
        die(2, "--arena: '%s' is not a byte count", s);
    }
    if (*end == 'K' || *end == 'k') {
        v <<= 10;
        end++;
    } else if (*end == 'M' || *end == 'm') {
        v <<= 20;
        end++;
    }
    if (*end != '\0' || v < 4096 || v > ((unsigned long long)1 << 40)) {
        die(2, "--arena: '%s' must be a byte count from 4096 to 1T (K and M suffixes allowed)", s);
    }
    return (uint64_t)v;
}

static uint64_t thread_cpu_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* One input line split into its id and its config text; -1 for a blank line. */
static int split_line(char *line, unsigned long lineno, char **id, char **text)
{
    size_t len = strlen(line);
    if (len == MAX_LINE - 1 && line[len - 1] != '\n') {
        die(2, "stdin:%lu: line longer than %u characters", lineno, MAX_LINE - 2);
    }
    *id = line + strspn(line, " \t");
    if (**id == '\0' || **id == '\n' || **id == '\r') {
        return -1;
    }
    *text = *id + strcspn(*id, " \t\r\n");
    if (**text != '\0') {
        *(*text)++ = '\0';
    }
    return 0;
}

typedef struct replay_out {
    uint64_t capped_at;  /* record where the work passed the cap (UINT64_MAX: not capped) */
    uint64_t failures;
    uint64_t peak_requested; /* high-water mark of live requested bytes */
    hk_dmm_counters_t c;
    uint64_t cpu_ns;
} replay_out_t;

/* One trace id's live block and the bytes requested for it. */
typedef struct live {
    void *p;
    uint64_t len;
} live_t;

static uint64_t work_of(uint64_t records, const hk_dmm_counters_t *c)
{
    return records + c->examined + c->insert_steps + c->splits + c->coalesces;
}

/* Replay t on a fresh heap, up to max_work; -1 when the heap fails hk_dmm_check afterwards. */
static int replay(const lab_trace_t *t, hk_dmm_t *h, live_t *slot, int check, uint64_t max_work,
                  replay_out_t *out)
{
    uint64_t i;
    uint64_t failures = 0;
    uint64_t live_bytes = 0;
    uint64_t peak = 0;
    uint64_t t0 = thread_cpu_ns();
    memset(slot, 0, (size_t)t->ids * sizeof(*slot));
    out->capped_at = UINT64_MAX;
    for (i = 0; i < t->count; i++) {
        const lab_rec_t *r = &t->rec[i];
        uint64_t len = r->size;
        void *p;
        if (i % CAP_STRIDE == 0 && max_work != 0) {
            hk_dmm_get_counters(h, &out->c);
            if (work_of(i, &out->c) > max_work) {
                out->capped_at = i;
                break;
            }
        }
        switch (r->op) {
        case 'f':
            if (slot[r->id].p != NULL) {
                hk_dmm_free(h, slot[r->id].p);
                live_bytes -= slot[r->id].len;
                slot[r->id].p = NULL;
            }
            continue;
        case 'm':
            p = hk_dmm_malloc(h, r->size);
            break;
        case 'c':
            len = (uint64_t)r->size * r->aux;
            p = len > SIZE_MAX ? NULL : hk_dmm_malloc(h, (size_t)len);
            break;
        case 'r':
            if (r->aux != LAB_NULL_ID && slot[r->aux].p != NULL) {
                live_t *old = &slot[r->aux];
                p = hk_realloc(hk_dmm_heap(h), old->p, r->size);
                if (p != NULL && p != old->p) {
                    /* moved: both blocks were live for a moment */
                    peak = live_bytes + len > peak ? live_bytes + len : peak;
                } else if (p == NULL && r->size != 0) {
                    /* heapkit's realloc leaves the old block; the trace never names it again. */
                    hk_dmm_free(h, old->p);
                }
                live_bytes -= old->len;
                old->p = NULL;
            } else {
                p = hk_dmm_malloc(h, r->size);
            }
            break;
        default: /* 'a': dmm has no aligned allocation */
            p = NULL;
            break;
        }
        slot[r->id].p = p;
        slot[r->id].len = p != NULL ? len : 0;
        if (p != NULL) {
            live_bytes += len;
            peak = live_bytes > peak ? live_bytes : peak;
        }
        failures += p == NULL;
    }
    out->cpu_ns = thread_cpu_ns() - t0;
    out->failures = failures;
    out->peak_requested = peak;
    hk_dmm_get_counters(h, &out->c);
    return check && hk_dmm_check(h) != HK_CHECK_OK ? -1 : 0;
}

static int run_canon(void)
{
    char line[MAX_LINE];
    unsigned long lineno = 0;
    while (fgets(line, sizeof(line), stdin) != NULL) {
        char *id;
        char *text;
        char err[256];
        char canon[CONFIG_TEXT_MAX];
        hk_dmm_config_t cfg;
        lineno++;
        if (split_line(line, lineno, &id, &text) != 0) {
            continue;
        }
        if (config_parse(text, &cfg, err, sizeof(err)) != 0) {
            die(2, "stdin:%lu: %s", lineno, err);
        }
        config_format(&cfg, canon, sizeof(canon));
        printf("%s %s\n", id, canon);
    }
    return 0;
}

static int run_presets(void)
{
    size_t i;
    const char *name;
    for (i = 0; (name = hk_dmm_preset_name(i)) != NULL; i++) {
        char canon[CONFIG_TEXT_MAX];
        config_format(hk_dmm_preset(name), canon, sizeof(canon));
        printf("%s %s\n", name, canon);
    }
    return 0;
}

static int run_eval(const char *path, uint64_t arena_bytes, uint64_t max_work, int check)
{
    lab_trace_t t;
    char err[512];
    char line[MAX_LINE];
    unsigned long lineno = 0;
    live_t *slot;
    void *arena;

    if (lab_trace_open(&t, path, err, sizeof(err)) != 0) {
        die(2, "%s", err);
    }
    if (arena_bytes == 0) {
        arena_bytes = t.peak_live * ARENA_FACTOR > MIN_ARENA ? t.peak_live * ARENA_FACTOR : MIN_ARENA;
        arena_bytes = (arena_bytes + 4095u) & ~(uint64_t)4095u;
    }
    arena = mmap(NULL, (size_t)arena_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1,
                 0);
    slot = calloc(t.ids != 0 ? t.ids : 1, sizeof(*slot));
    if (arena == MAP_FAILED || slot == NULL) {
        die(1, "%s: out of memory for a %" PRIu64 "-byte arena and %u slots", path, arena_bytes, t.ids);
    }
    while (fgets(line, sizeof(line), stdin) != NULL) {
        char *id;
        char *text;
        hk_dmm_config_t cfg;
        hk_dmm_config_error_t bad;
        hk_status_t status;
        hk_dmm_t *h;
        replay_out_t o;
        double frag;
        uint64_t work;
        lineno++;
        if (split_line(line, lineno, &id, &text) != 0) {
            continue;
        }
        if (config_parse(text, &cfg, err, sizeof(err)) != 0) {
            die(2, "stdin:%lu: %s", lineno, err);
        }
        bad = hk_dmm_validate(&cfg);
        if (bad != HK_DMM_CFG_OK) {
            printf("%s refused %s\n", id, hk_dmm_config_error_name(bad));
            continue;
        }
        h = hk_dmm_init(arena, (size_t)arena_bytes, &cfg, &status);
        if (h == NULL) {
            printf("%s refused init-status-%d\n", id, (int)status);
            continue;
        }
        if (replay(&t, h, slot, check, max_work, &o) != 0) {
            fflush(stdout);
            die(1, "%s: config %s (stdin:%lu): hk_dmm_check fails after the replay", path, id, lineno);
        }
        if (o.capped_at != UINT64_MAX) {
            printf("%s capped %" PRIu64 " %" PRIu64 " %" PRIu64 "\n", id, work_of(o.capped_at, &o.c),
                   o.capped_at, o.cpu_ns);
            continue;
        }
        frag = o.peak_requested != 0 ? (double)o.c.max_top / (double)o.peak_requested - 1.0 : 0.0;
        work = work_of(t.count, &o.c);
        printf("%s ok %" PRIu64 " %.6f %" PRIu64 " %zu %" PRIu64 " %" PRIu64 "\n", id, o.failures, frag, work,
               o.c.max_top, o.peak_requested, o.cpu_ns);
    }
    free(slot);
    munmap(arena, (size_t)arena_bytes);
    lab_trace_close(&t);
    if (fflush(stdout) != 0 || ferror(stdout)) {
        die(1, "cannot write the results: %s", strerror(errno));
    }
    return 0;
}

int main(int argc, char **argv)
{
    const char *trace = NULL;
    uint64_t arena = 0;
    uint64_t max_work = 0;
    int check = 1;
    int i;
    if (argc == 2 && strcmp(argv[1], "--canon") == 0) {
        return run_canon();
    }
    if (argc == 2 && strcmp(argv[1], "--presets") == 0) {
        return run_presets();
    }
    for (i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--arena") == 0) {
            if (i + 1 == argc) {
                die(2, "--arena needs a value (see --help)");
            }
            arena = parse_bytes(argv[++i]);
        } else if (strcmp(argv[i], "--max-work") == 0) {
            char *end;
            if (i + 1 == argc) {
                die(2, "--max-work needs a value (see --help)");
            }
            errno = 0;
            max_work = strtoull(argv[++i], &end, 10);
            if (errno != 0 || *end != '\0' || end == argv[i] || argv[i][0] == '-' || max_work == 0) {
                die(2, "--max-work: '%s' is not a positive integer", argv[i]);
            }
        } else if (strcmp(argv[i], "--no-check") == 0) {
            check = 0;
        } else if (strcmp(argv[i], "--help") == 0) {
            fputs(usage, stdout);
            return 0;
        } else if (argv[i][0] == '-' || trace != NULL) {
            die(2, "unexpected argument '%s' (see --help)", argv[i]);
        } else {
            trace = argv[i];
        }
    }
    if (trace == NULL) {
        die(2, "no trace given (see --help)");
    }
    return run_eval(trace, arena, max_work, check);
}
