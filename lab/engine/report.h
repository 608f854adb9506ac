/* SPDX-License-Identifier: MIT */
/* Turning a replay (or a size search) into JSON (docs/results-format.md) or a short text summary. */
#ifndef LAB_ENGINE_REPORT_H
#define LAB_ENGINE_REPORT_H

#include <stdio.h>

#include "replay.h"

#define LAB_RESULTS_FORMAT_VERSION 1

typedef struct lab_search {
    uint64_t min_arena;       /* 0: none found (see reason) */
    uint64_t granularity;
    uint64_t lower_bound;     /* largest size the search saw fail below min_arena */
    uint64_t limit;           /* largest arena the search would try */
    unsigned probes;
    unsigned checked_below;   /* extra sizes below min_arena probed for non-monotonicity */
    uint64_t succeeded_below[16];
    unsigned n_succeeded_below;
    const char *reason;       /* why no arena was found, or NULL */
} lab_search_t;

typedef struct lab_run {
    const char *mode;          /* "replay" or "size-search" */
    const lab_trace_t *trace;
    const lab_alloc_t *alloc;
    uint64_t arena_size;       /* 0 when the allocator has no arena */
    uint64_t arena_align;
    int arena_default;
    const lab_options_t *opt;
    const lab_result_t *res;   /* the replay, or the size search's verification run */
    const lab_search_t *search; /* size search only */
    double load_s;
    double total_s;
    double total_cpu_s;
} lab_run_t;

/* Per-kind timing summary in ns: ticks scaled, calibrated overhead subtracted (clamped at 0). */
typedef struct lab_tstat {
    size_t count;
    double min, p50, p99, p999, max, mean, stddev;
} lab_tstat_t;

/* Returns -1 when out of memory. */
int lab_tstat(const lab_timing_t *tm, int kind, lab_tstat_t *out);

int lab_write_json(FILE *f, const lab_run_t *run);
void lab_write_text(FILE *f, const lab_run_t *run);

#endif
