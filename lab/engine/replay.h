/* SPDX-License-Identifier: MIT */
/*
 * Replaying a trace against one allocator through the uniform API, with the
 * bookkeeping behind docs/metrics.md: live bytes, footprint, the
 * fragmentation breakdown at the peak-live moment, sampled series, heap
 * maps, per-operation timings, failures and pattern corruptions.
 */
#ifndef LAB_ENGINE_REPLAY_H
#define LAB_ENGINE_REPLAY_H

#include <stddef.h>
#include <stdint.h>

#include "allocators.h"
#include "heapkit/seqfit.h"
#include "trace.h"

#define LAB_NONE UINT64_MAX

typedef struct lab_options {
    int timing;            /* time every uniform call */
    int fill;              /* fill blocks with their id's pattern and verify it */
    int stop_on_failure;   /* size-search probes: stop at the first failed allocation */
    int progress;          /* report the records replayed on stderr (lab_progress) */
    unsigned series;       /* hk_get_stats samples (0: none) */
    unsigned heapmap;      /* hk_walk snapshots (0: none) */
    size_t heapmap_cap;    /* most entries kept per snapshot */
    int heapmap_owners;    /* name the trace id holding each used block of a snapshot (the viewer's hover) */
    int placements;        /* keep where each id's block went (lab_result_t.place): the viewer's map between snapshots */
    uint64_t snapshot_rec; /* record after which to take the breakdown walk (LAB_NONE: none) */
    uint64_t pad;          /* bytes added to every allocation request: a larger per-block header, as a seed's */
    uint64_t second_region; /* freertos-heap5's second region at the arena's top (0: none); set in its adapter, reported here */
    uint64_t mem_limit;    /* most bytes the footprint's bookkeeping may take (0: no limit; hk-replay: its memory limit) */
} lab_options_t;

/* Where the memory stood right after one record (the peak-live moment). */
typedef struct lab_breakdown {
    int valid;
    int walked;              /* the allocator walk was available (in-arena allocators) */
    uint64_t rec;
    uint64_t requested;      /* live requested bytes */
    uint64_t granted;        /* live usable bytes */
    uint64_t blocks;         /* live blocks */
    uint64_t footprint;
    uint64_t external;       /* gross bytes of free blocks inside the footprint */
    uint64_t free_below;     /* number of those free blocks */
    uint64_t largest_free_below;
    uint64_t free_above;     /* gross bytes of free blocks outside it */
    int64_t metadata;        /* footprint - granted - external */
} lab_breakdown_t;

typedef struct lab_series {
    size_t n;
    size_t cap;
    uint64_t *rec;
    uint64_t *live_requested;
    uint64_t *live_granted;
    uint64_t *footprint;
    uint64_t *free_bytes;
    uint64_t *largest_free;
    uint64_t *free_blocks;
    uint64_t *failures;    /* failed allocations so far */
} lab_series_t;

typedef struct lab_hm_snap {
    uint64_t rec;
    size_t first; /* index into the block arrays */
    size_t count;
    size_t raw_count; /* blocks the walk visited */
    int merged;       /* adjacent blocks in the same state were merged to fit the cap */
    int truncated;    /* still over the cap after merging: the highest blocks were dropped */
} lab_hm_snap_t;

typedef struct lab_hm_block {
    uint64_t offset; /* from the arena start */
    uint64_t size;   /* gross */
    int used;
    uint64_t owner;  /* with heapmap_owners: the trace id whose pointer lies in the block (LAB_NONE: free, merged or unknown) */
} lab_hm_block_t;

/*
 * How a used block's gross extent relates to what malloc returned, as every
 * used block of every snapshot showed it: start = payload - head and
 * end = payload + usable + tail. The viewer carves blocks placed between
 * snapshots with it; it holds only when no walk saw another relation.
 */
enum { LAB_GROSS_UNSEEN = 0, LAB_GROSS_FIXED, LAB_GROSS_VARIES };

typedef struct lab_heapmap {
    int gross;     /* LAB_GROSS_* */
    uint64_t head;
    uint64_t tail;
    size_t n;
    size_t cap;
    lab_hm_snap_t *snap;
    size_t blocks;
    size_t blocks_cap;
    lab_hm_block_t *block;
} lab_heapmap_t;

typedef struct lab_timing {
    uint32_t *ticks[LAB_OP_KINDS]; /* raw clock ticks per call, by the kind of uniform call made */
    size_t n[LAB_OP_KINDS];
    double ns_per_tick;
    const char *clock;             /* what a tick is */
    double overhead_ns;            /* median of an empty measurement, subtracted when reporting */
    double step_ns;                /* smallest nonzero difference of two clock reads: no finer time is resolved */
} lab_timing_t;

typedef struct lab_result {
    int made;                /* the allocator accepted the arena */
    hk_status_t make_status;
    int in_arena;
    uint64_t completed;      /* records replayed */
    uint64_t control_bytes;  /* offset of the first block the walk reports (LAB_NONE: no walk) */
    /* Failures, by the kind of the trace record. */
    uint64_t failures[LAB_OP_KINDS];
    uint64_t failures_total;
    uint64_t unsupported_aligned; /* of failures[aligned]: the allocator has no aligned_alloc */
    uint64_t first_failure_rec;
    uint64_t skipped_frees;       /* frees (and reallocs, as mallocs) of ids whose allocation failed */
    uint64_t failed_realloc_frees; /* old blocks the engine freed after a failed realloc */
    /* Allocator bugs the engine noticed. */
    uint64_t corrupt_blocks;      /* pattern mismatch before free/realloc, or in a realloc's prefix */
    uint64_t calloc_not_zero;
    uint64_t misaligned;          /* aligned allocations not honouring the alignment */
    uint64_t bad_blocks;          /* outside the arena, or usable < requested (not filled) */
    /* Live bytes and footprint. */
    uint64_t live_requested;
    uint64_t live_granted;
    uint64_t live_blocks;
    uint64_t peak_requested;
    uint64_t peak_requested_rec;
    uint64_t peak_granted;
    uint64_t footprint;      /* control data + each piece up to its highest live end (docs/metrics.md) */
    uint64_t peak_end;       /* highest live block end ever (arena offset): the heap maps' range */
    uint64_t peak_footprint;
    uint64_t peak_footprint_rec;
    uint64_t requested_at_peak_footprint;
    double sum_footprint;         /* over records, for J&W #1 */
    double sum_requested;
    lab_breakdown_t at_peak_live;
    hk_stats_t final_stats;
    int check_rc;
    /* The fits-cse3320 seed's counters, for seqfit heaps only (has_counters); requested excludes the pad. */
    int has_counters;
    hk_seqfit_counters_t counters;
    uint64_t heap_blocks; /* free blocks below max_heap, the top included: the seed's blocks on its sbrk heap */
    double replay_s;         /* wall time of the replay loop */
    double replay_cpu_s;     /* CPU time of the replay loop */
    lab_timing_t timing;
    lab_series_t series;
    lab_heapmap_t heapmap;
    /* With o->placements: per trace id, its block's payload offset and usable bytes (LAB_NONE: never placed in the arena). */
    uint64_t *place;
} lab_result_t;

/*
 * Replay t against a on [arena, arena + arena_size) (ignored for entries
 * without LAB_IN_ARENA). Returns 0, or -1 if the host ran out of memory.
 */
/* lab_replay's result when the fresh heap has more blocks than o->mem_limit lets the footprint track. */
#define LAB_TOO_MANY_BLOCKS (-2)

int lab_replay(const lab_trace_t *t, const lab_alloc_t *a, void *arena, size_t arena_size, const lab_options_t *o,
               lab_result_t *r);
void lab_result_free(lab_result_t *r);

/*
 * With o->progress, the loop writes "hk-replay: progress N" on stderr every
 * LAB_PROGRESS_STEP records and when it ends, N counting the records every
 * such replay of the process has done so far (the lab's progress bars).
 */
#define LAB_PROGRESS_STEP ((uint64_t)1 << 18)

/* Seconds on CLOCK_MONOTONIC, and CPU seconds used by the process. */
double lab_now_s(void);
double lab_cpu_s(void);

#endif
