/* SPDX-License-Identifier: MIT */
/* JSON and text output of a run; the JSON layout is docs/results-format.md. */
#define _GNU_SOURCE
#include "report.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"

/* ---- timing summary ---------------------------------------------------- */

/* LSD radix sort of 32-bit keys, two 16-bit digits. */
static int radix_sort(uint32_t *a, size_t n)
{
    uint32_t *tmp = malloc((n != 0 ? n : 1) * sizeof(*tmp));
    size_t *count = calloc(65536, sizeof(*count));
    unsigned shift;
    if (tmp == NULL || count == NULL) {
        free(tmp);
        free(count);
        return -1;
    }
    for (shift = 0; shift < 32; shift += 16) {
        size_t i;
        size_t sum = 0;
        memset(count, 0, 65536 * sizeof(*count));
        for (i = 0; i < n; i++) {
            count[(a[i] >> shift) & 0xFFFFu]++;
        }
        for (i = 0; i < 65536; i++) {
            size_t c = count[i];
            count[i] = sum;
            sum += c;
        }
        for (i = 0; i < n; i++) {
            tmp[count[(a[i] >> shift) & 0xFFFFu]++] = a[i];
        }
        memcpy(a, tmp, n * sizeof(*a));
    }
    free(tmp);
    free(count);
    return 0;
}

/* Nearest-rank percentile of sorted values. */
static double rank(const uint32_t *sorted, size_t n, double p)
{
    size_t k = (size_t)ceil(p * (double)n);
    return (double)sorted[k == 0 ? 0 : k - 1];
}

int lab_tstat(const lab_timing_t *tm, int kind, lab_tstat_t *out)
{
    const uint32_t *ticks = tm->ticks[kind];
    size_t n = tm->n[kind];
    uint32_t *v;
    double sum = 0;
    double sq = 0;
    size_t i;
    memset(out, 0, sizeof(*out));
    out->count = n;
    if (n == 0) {
        return 0;
    }
    v = malloc(n * sizeof(*v));
    if (v == NULL) {
        return -1;
    }
    for (i = 0; i < n; i++) {
        double ns = (double)ticks[i] * tm->ns_per_tick - tm->overhead_ns;
        v[i] = ns <= 0 ? 0 : ns >= (double)UINT32_MAX ? UINT32_MAX : (uint32_t)llround(ns);
        sum += v[i];
    }
    out->mean = sum / (double)n;
    for (i = 0; i < n; i++) {
        double d = v[i] - out->mean;
        sq += d * d;
    }
    out->stddev = sqrt(sq / (double)n);
    if (radix_sort(v, n) != 0) {
        free(v);
        return -1;
    }
    out->min = v[0];
    out->p50 = rank(v, n, 0.50);
    out->p99 = rank(v, n, 0.99);
    out->p999 = rank(v, n, 0.999);
    out->max = v[n - 1];
    free(v);
    return 0;
}

/* ---- derived metrics --------------------------------------------------- */

/* num / den - 1, or NaN (written as null) when it is undefined. */
static double excess(double num, double den) { return den > 0 ? num / den - 1.0 : NAN; }

typedef struct derived {
    double jw1, jw2, jw3, jw4;
} derived_t;

static derived_t derive(const lab_result_t *r)
{
    derived_t d;
    const lab_breakdown_t *b = &r->at_peak_live;
    d.jw1 = d.jw2 = d.jw3 = d.jw4 = NAN;
    if (!r->in_arena || !r->made) {
        return d;
    }
    d.jw1 = excess(r->sum_footprint, r->sum_requested);
    if (b->valid && b->walked) {
        d.jw2 = excess((double)b->footprint, (double)b->requested);
    }
    if (r->peak_footprint_rec != LAB_NONE) {
        d.jw3 = excess((double)r->peak_footprint, (double)r->requested_at_peak_footprint);
    }
    d.jw4 = excess((double)r->peak_footprint, (double)r->peak_requested);
    return d;
}

/* ---- JSON -------------------------------------------------------------- */

static const char timing_note[] =
    "noisy host timings: wall-clock ns per uniform call on a shared host, calibrated empty-measurement "
    "overhead subtracted and clamped at 0; compare allocators within one run, not across hosts";

static void write_series(json_t *j, const lab_result_t *r)
{
    const lab_series_t *s = &r->series;
    struct {
        const char *name;
        const uint64_t *col;
        int arena_only;
    } cols[] = {{"record", s->rec, 0},           {"live_requested", s->live_requested, 0},
                {"live_granted", s->live_granted, 0}, {"footprint", s->footprint, 1},
                {"free_bytes", s->free_bytes, 1}, {"largest_free", s->largest_free, 1},
                {"free_blocks", s->free_blocks, 1}, {"failures", s->failures, 0}};
    size_t c;
    size_t i;
    if (s->cap == 0) {
        json_null(j, "series");
        return;
    }
    json_obj(j, "series");
    json_u64(j, "samples", s->n);
    for (c = 0; c < sizeof(cols) / sizeof(cols[0]); c++) {
        if (cols[c].arena_only && !r->in_arena) {
            json_null(j, cols[c].name);
            continue;
        }
        json_arr(j, cols[c].name, 1);
        for (i = 0; i < s->n; i++) {
            json_u64(j, NULL, cols[c].col[i]);
        }
        json_end_arr(j);
    }
    json_end_obj(j);
}

static void write_heapmap(json_t *j, const lab_run_t *run)
{
    const lab_heapmap_t *hm = &run->res->heapmap;
    size_t s;
    size_t i;
    if (run->opt->heapmap == 0 || !run->res->in_arena) {
        json_null(j, "heapmap");
        return;
    }
    json_obj(j, "heapmap");
    json_u64(j, "cap", run->opt->heapmap_cap);
    if (hm->gross == LAB_GROSS_FIXED) {
        json_obj(j, "gross");
        json_u64(j, "head", hm->head);
        json_u64(j, "tail", hm->tail);
        json_end_obj(j);
    } else {
        json_null(j, "gross");
    }
    json_arr(j, "snapshots", 0);
    for (s = 0; s < hm->n; s++) {
        const lab_hm_snap_t *sn = &hm->snap[s];
        json_obj(j, NULL);
        json_u64(j, "record", sn->rec);
        json_u64(j, "walked_blocks", sn->raw_count);
        json_bool(j, "merged", sn->merged);
        json_bool(j, "truncated", sn->truncated);
        json_arr(j, "blocks", 1);
        for (i = sn->first; i < sn->first + sn->count; i++) {
            json_arr(j, NULL, 1);
            json_u64(j, NULL, hm->block[i].offset);
            json_u64(j, NULL, hm->block[i].size);
            json_u64(j, NULL, (uint64_t)hm->block[i].used);
            json_end_arr(j);
        }
        json_end_arr(j);
        if (run->opt->heapmap_owners) {
            json_arr(j, "owners", 1);
            for (i = sn->first; i < sn->first + sn->count; i++) {
                json_u64_or_null(j, NULL, hm->block[i].owner, LAB_NONE);
            }
            json_end_arr(j);
        }
        json_end_obj(j);
    }
    json_end_arr(j);
    json_end_obj(j);
}

static int write_timing(json_t *j, const lab_run_t *run)
{
    const lab_timing_t *tm = &run->res->timing;
    int k;
    if (!run->opt->timing) {
        json_null(j, "timing");
        return 0;
    }
    json_obj(j, "timing");
    json_bool(j, "noisy", 1);
    json_str(j, "note", timing_note);
    json_str(j, "unit", "ns");
    json_str(j, "clock", tm->clock);
    json_f64(j, "ns_per_tick", tm->ns_per_tick);
    json_f64(j, "overhead_ns", tm->overhead_ns);
    json_f64(j, "step_ns", tm->step_ns);
    for (k = 0; k < LAB_OP_KINDS; k++) {
        lab_tstat_t st;
        if (lab_tstat(tm, k, &st) != 0) {
            return -1;
        }
        json_obj_inline(j, lab_op_names[k]);
        json_u64(j, "count", st.count);
        if (st.count == 0) {
            json_null(j, "min");
            json_null(j, "p50");
            json_null(j, "p99");
            json_null(j, "p999");
            json_null(j, "max");
            json_null(j, "mean");
            json_null(j, "stddev");
        } else {
            json_f64(j, "min", st.min);
            json_f64(j, "p50", st.p50);
            json_f64(j, "p99", st.p99);
            json_f64(j, "p999", st.p999);
            json_f64(j, "max", st.max);
            json_f64(j, "mean", st.mean);
            json_f64(j, "stddev", st.stddev);
        }
        json_end_obj(j);
    }
    json_end_obj(j);
    return 0;
}

/* Everything the replay measured (also the size search's verification run). */
static int write_result(json_t *j, const char *key, const lab_run_t *run)
{
    const lab_result_t *r = run->res;
    const lab_breakdown_t *b = &r->at_peak_live;
    derived_t d = derive(r);
    int arena = r->in_arena;
    int k;

    json_obj(j, key);
    json_u64(j, "completed_records", r->completed);

    json_obj(j, "failures");
    json_u64(j, "total", r->failures_total);
    for (k = 0; k < LAB_OP_FREE; k++) {
        json_u64(j, lab_op_names[k], r->failures[k]);
    }
    json_u64(j, "unsupported_aligned", r->unsupported_aligned);
    json_u64_or_null(j, "first_failure_record", r->first_failure_rec, LAB_NONE);
    json_u64(j, "skipped_frees", r->skipped_frees);
    json_u64(j, "failed_realloc_frees", r->failed_realloc_frees);
    json_end_obj(j);

    json_obj(j, "errors");
    json_u64(j, "corrupt_blocks", r->corrupt_blocks);
    json_u64(j, "calloc_not_zero", r->calloc_not_zero);
    json_u64(j, "misaligned", r->misaligned);
    json_u64(j, "bad_blocks", r->bad_blocks);
    json_u64(j, "misuse_reports", r->final_stats.error_count);
    json_i64(j, "check", r->check_rc);
    json_bool(j, "patterns_checked", run->opt->fill);
    json_end_obj(j);

    json_obj(j, "memory");
    json_u64(j, "peak_live_requested", r->peak_requested);
    json_u64(j, "peak_live_record", r->peak_requested_rec);
    json_u64(j, "peak_live_granted", r->peak_granted);
    json_u64(j, "end_live_requested", r->live_requested);
    json_u64(j, "end_live_granted", r->live_granted);
    json_u64(j, "end_live_blocks", r->live_blocks);
    if (arena) {
        json_u64(j, "peak_footprint", r->peak_footprint);
        json_u64_or_null(j, "peak_footprint_record", r->peak_footprint_rec, LAB_NONE);
        json_u64(j, "live_requested_at_peak_footprint", r->requested_at_peak_footprint);
        json_u64(j, "end_footprint", r->footprint);
        json_u64(j, "peak_end", r->peak_end);
        json_u64(j, "capacity", r->final_stats.capacity);
        json_u64(j, "min_ever_free", r->final_stats.min_ever_free);
    } else {
        json_null(j, "peak_footprint");
        json_null(j, "peak_footprint_record");
        json_null(j, "live_requested_at_peak_footprint");
        json_null(j, "end_footprint");
        json_null(j, "peak_end");
        json_null(j, "capacity");
        json_null(j, "min_ever_free");
    }
    json_end_obj(j);

    json_obj(j, "fragmentation");
    json_f64(j, "jw1", d.jw1);
    json_f64(j, "jw2", d.jw2);
    json_f64(j, "jw3", d.jw3);
    json_f64(j, "jw4", d.jw4);
    json_end_obj(j);

    if (!b->valid) {
        json_null(j, "at_peak_live");
    } else {
        json_obj(j, "at_peak_live");
        json_u64(j, "record", b->rec);
        json_u64(j, "requested", b->requested);
        json_u64(j, "granted", b->granted);
        json_u64(j, "blocks", b->blocks);
        json_u64(j, "internal", b->granted - b->requested);
        if (b->walked) {
            json_u64(j, "footprint", b->footprint);
            json_u64(j, "external", b->external);
            json_i64(j, "metadata", b->metadata);
            json_u64(j, "free_blocks_below_footprint", b->free_below);
            json_u64(j, "largest_free_below_footprint", b->largest_free_below);
            json_u64(j, "free_above_footprint", b->free_above);
        } else {
            json_null(j, "footprint");
            json_null(j, "external");
            json_null(j, "metadata");
            json_null(j, "free_blocks_below_footprint");
            json_null(j, "largest_free_below_footprint");
            json_null(j, "free_above_footprint");
        }
        json_end_obj(j);
    }
    if (!r->has_counters) {
        json_null(j, "counters");
    } else {
        json_obj(j, "counters");
        json_u64(j, "reuses", r->counters.reuses);
        json_u64(j, "grows", r->counters.grows);
        json_u64(j, "splits", r->counters.splits);
        json_u64(j, "coalesces", r->counters.coalesces);
        json_u64(j, "free_blocks", r->counters.free_blocks);
        json_u64(j, "requested", r->counters.requested);
        json_u64(j, "max_heap", r->counters.max_heap);
        json_u64(j, "heap_blocks", r->heap_blocks);
        json_end_obj(j);
    }
    write_series(j, r);
    write_heapmap(j, run);
    if (write_timing(j, run) != 0) {
        return -1;
    }
    json_obj(j, "engine_time");
    json_f64(j, "replay_s", r->replay_s);
    json_f64(j, "replay_cpu_s", r->replay_cpu_s);
    json_f64(j, "records_per_s", r->replay_s > 0 ? (double)r->completed / r->replay_s : NAN);
    json_end_obj(j);
    json_end_obj(j);
    return 0;
}

static void write_search(json_t *j, const lab_search_t *s, const lab_trace_t *t)
{
    unsigned i;
    json_obj(j, "search");
    json_u64_or_null(j, "min_arena", s->min_arena, 0);
    json_u64(j, "peak_live_requested", t->peak_live);
    json_f64(j, "ratio", s->min_arena != 0 && t->peak_live != 0 ? (double)s->min_arena / (double)t->peak_live : NAN);
    json_u64(j, "granularity", s->granularity);
    json_u64(j, "failed_at", s->lower_bound);
    json_u64(j, "limit", s->limit);
    json_u64(j, "probes", s->probes);
    json_u64(j, "checked_below", s->checked_below);
    json_bool(j, "nonmonotone", s->n_succeeded_below != 0);
    json_arr(j, "succeeded_below", 1);
    for (i = 0; i < s->n_succeeded_below; i++) {
        json_u64(j, NULL, s->succeeded_below[i]);
    }
    json_end_arr(j);
    json_str(j, "reason", s->reason);
    json_end_obj(j);
}

int lab_write_json(FILE *f, const lab_run_t *run)
{
    const lab_trace_t *t = run->trace;
    const char *preload = getenv("LD_PRELOAD");
    json_t j;
    int k;

    json_init(&j, f);
    json_obj(&j, NULL);
    json_str(&j, "format", "heapkit-replay");
    json_u64(&j, "format_version", LAB_RESULTS_FORMAT_VERSION);
    json_str(&j, "mode", run->mode);

    json_obj(&j, "engine");
    json_u64(&j, "hk_align", HK_ALIGN);
    json_u64(&j, "hk_hardening", HK_HARDENING);
    json_str(&j, "ld_preload", preload != NULL && *preload != '\0' ? preload : NULL);
    json_f64(&j, "load_s", run->load_s);
    json_f64(&j, "total_s", run->total_s);
    json_f64(&j, "total_cpu_s", run->total_cpu_s);
    json_end_obj(&j);

    json_obj(&j, "trace");
    json_str(&j, "path", t->path);
    json_u64(&j, "records", t->count);
    json_u64(&j, "ids", t->ids);
    json_obj_inline(&j, "ops");
    for (k = 0; k < LAB_OP_KINDS; k++) {
        json_u64(&j, lab_op_names[k], t->ops[k]);
    }
    json_end_obj(&j);
    json_u64(&j, "peak_live_requested", t->peak_live);
    json_u64(&j, "peak_live_record", t->peak_live_rec);
    json_u64(&j, "peak_live_blocks", t->peak_blocks);
    json_u64(&j, "max_alignment", t->max_align);
    json_end_obj(&j);

    json_obj(&j, "allocator");
    json_str(&j, "name", run->alloc->name);
    json_str(&j, "family", lab_family_name(run->alloc->family));
    json_bool(&j, "in_arena", (run->alloc->flags & LAB_IN_ARENA) != 0);
    json_u64(&j, "pad", run->opt->pad);
    json_u64(&j, "second_region", run->opt->second_region);
    json_end_obj(&j);

    if (run->arena_size == 0) {
        json_null(&j, "arena");
    } else {
        json_obj(&j, "arena");
        json_u64(&j, "size", run->arena_size);
        json_u64(&j, "alignment", run->arena_align);
        json_bool(&j, "default", run->arena_default);
        json_bool(&j, "accepted", run->res->made);
        json_u64_or_null(&j, "control_bytes", run->res->control_bytes, LAB_NONE);
        json_end_obj(&j);
    }

    if (run->search != NULL) {
        write_search(&j, run->search, t);
        if (run->res != NULL && run->res->made) {
            if (write_result(&j, "verify", run) != 0) {
                return -1;
            }
        } else {
            json_null(&j, "verify");
        }
    } else if (write_result(&j, "replay", run) != 0) {
        return -1;
    }
    json_end_obj(&j);
    return ferror(f) ? -1 : 0;
}

/* ---- text -------------------------------------------------------------- */

static void fmt_ratio(char *buf, size_t n, double v)
{
    if (isfinite(v)) {
        snprintf(buf, n, "%.4f", v);
    } else {
        snprintf(buf, n, "-");
    }
}

void lab_write_text(FILE *f, const lab_run_t *run)
{
    const lab_result_t *r = run->res;
    const lab_trace_t *t = run->trace;
    derived_t d = derive(r);
    char a[32], b[32], c[32], e[32];
    int k;

    fprintf(f, "trace      %s: %" PRIu64 " records, %u ids, peak live requested %" PRIu64 " bytes\n", t->path,
            t->count, t->ids, t->peak_live);
    fprintf(f, "allocator  %s (%s)", run->alloc->name, lab_family_name(run->alloc->family));
    if (run->arena_size != 0) {
        fprintf(f, ", arena %" PRIu64 " bytes%s", run->arena_size, run->arena_default ? " (default)" : "");
    }
    fputc('\n', f);
    if (run->search != NULL) {
        const lab_search_t *s = run->search;
        if (s->min_arena != 0) {
            char ratio[48] = "peak live is 0";
            if (t->peak_live != 0) {
                snprintf(ratio, sizeof(ratio), "%.4f x peak live", (double)s->min_arena / (double)t->peak_live);
            }
            fprintf(f, "min arena  %" PRIu64 " bytes = %s (%u probes, granularity %" PRIu64 ")%s\n", s->min_arena,
                    ratio, s->probes, s->granularity,
                    s->n_succeeded_below ? ", NOT monotone: smaller arenas also succeeded" : "");
        } else {
            fprintf(f, "min arena  none: %s\n", s->reason != NULL ? s->reason : "?");
        }
    }
    if (r == NULL || !r->made) {
        fprintf(f, "the allocator refused the arena (status %d)\n", r != NULL ? (int)r->make_status : 0);
        return;
    }
    fprintf(f, "replayed   %" PRIu64 " records in %.3f s, %.3f s CPU (%.0f records/s)\n", r->completed, r->replay_s,
            r->replay_cpu_s, r->replay_s > 0 ? (double)r->completed / r->replay_s : 0.0);
    fprintf(f, "failures   %" PRIu64 " (malloc %" PRIu64 ", calloc %" PRIu64 ", aligned %" PRIu64 ", realloc %" PRIu64
               ")\n",
            r->failures_total, r->failures[LAB_OP_MALLOC], r->failures[LAB_OP_CALLOC], r->failures[LAB_OP_ALIGNED],
            r->failures[LAB_OP_REALLOC]);
    fprintf(f, "errors     corrupt %" PRIu64 ", calloc not zero %" PRIu64 ", misaligned %" PRIu64 ", bad %" PRIu64
               ", misuse %zu, check %d\n",
            r->corrupt_blocks, r->calloc_not_zero, r->misaligned, r->bad_blocks, r->final_stats.error_count,
            r->check_rc);
    if (r->in_arena) {
        fprintf(f, "footprint  peak %" PRIu64 " bytes; peak live requested %" PRIu64 "\n", r->peak_footprint,
                r->peak_requested);
        fmt_ratio(a, sizeof(a), d.jw1);
        fmt_ratio(b, sizeof(b), d.jw2);
        fmt_ratio(c, sizeof(c), d.jw3);
        fmt_ratio(e, sizeof(e), d.jw4);
        fprintf(f, "J&W        #1 %s  #2 %s  #3 %s  #4 %s\n", a, b, c, e);
        if (r->at_peak_live.valid && r->at_peak_live.walked) {
            const lab_breakdown_t *bk = &r->at_peak_live;
            fprintf(f,
                    "peak live  record %" PRIu64 ": requested %" PRIu64 ", internal %" PRIu64 ", external %" PRIu64
                    ", metadata %" PRId64 ", footprint %" PRIu64 "\n",
                    bk->rec, bk->requested, bk->granted - bk->requested, bk->external, bk->metadata, bk->footprint);
        }
    }
    if (run->opt->timing) {
        fprintf(f, "timing     ns per call, noisy host timings (overhead %.0f ns subtracted)\n",
                r->timing.overhead_ns);
        for (k = 0; k < LAB_OP_KINDS; k++) {
            lab_tstat_t st;
            if (r->timing.n[k] == 0 || lab_tstat(&r->timing, k, &st) != 0) {
                continue;
            }
            fprintf(f, "  %-8s n %-9zu min %-6.0f p50 %-6.0f p99 %-7.0f p99.9 %-7.0f max %-8.0f mean %.1f sd %.1f\n",
                    lab_op_names[k], st.count, st.min, st.p50, st.p99, st.p999, st.max, st.mean, st.stddev);
        }
    }
}
