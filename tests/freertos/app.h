/* SPDX-License-Identifier: MIT */
/*
 * What heapkit's FreeRTOS applications share (app_common.c) and what each
 * heap build provides (app_heap.c, compiled once per heap with
 * APP_HEAP_NAME and friends). Every application runs on the real kernel,
 * for a bounded number of ticks, and ends the process with:
 *   0  everything checked out
 *   2  a check of the application failed (corrupt block, leak, counters)
 *   3  configASSERT failed (kernel, heap or application)
 *   4  the malloc-failed hook ran while no failure was expected
 *   5  bad command line
 */
#ifndef HEAPKIT_TEST_FREERTOS_APP_H
#define HEAPKIT_TEST_FREERTOS_APP_H

#include <stddef.h>
#include <stdint.h>

#include "FreeRTOS.h"

/* ---- app_heap.c: the heap under test ---- */

/* Name of the heap this binary was built with (heap_4, heap_5, buddy, tlsf, pools). */
const char *app_heap_name(void);
/*
 * Set the heap up before the first allocation: regions = 0 the heap's
 * default (ucHeap; heap_5: one region of the same size), 1 three
 * non-contiguous regions with misaligned starts, as heap_5 takes them.
 * Returns 0, or -1 when this heap has no such mode.
 */
int app_heap_setup(int regions);
/* 0, or the nonzero code of heapkit's full heap check (always 0 for the kernel's heaps). */
int app_heap_check(void);
/*
 * heapkit's heaps: vPortGetHeapStats field by field against a walk of the
 * heap (free bytes, free blocks, largest and smallest free block) and
 * heapkit's own counters (allocations, frees, minimum ever free). Returns 0,
 * or the number of the first field that disagrees (always 0 for the
 * kernel's heaps, which have no walk).
 */
int app_heap_stats_check(void);
/* pvPortRealloc where the heap has it (heapkit's), else NULL without doing anything. */
void *app_heap_realloc(void *pv, size_t size);
int app_heap_has_realloc(void);
/* vPortInitialiseBlocks where the heap has it (heap_5.c does not). */
void app_heap_initialise_blocks(void);

/* ---- app_common.c ---- */

/* Parse argv ("single" or "regions"), set the heap up, print the heap; exits 5 on a bad argument. */
void app_start(int argc, char **argv, const char *app);
/*
 * vPortHeapResetState() and the same setup again (the regions, for heap_5
 * and regions mode): the heap starts over; the trace counters too.
 */
void app_heap_restart(void);
/* End the process now with this status, after a last line saying why. */
void app_exit(int status, const char *why);
/* The check failed: print what and end with status 2. */
void app_fail(const char *what);
/* While nonzero, the malloc-failed hook is expected (counted, not fatal). */
extern volatile int app_malloc_fail_expected;
extern volatile unsigned long app_malloc_failures;

/* The fctma-pools seed's generator: sr_Seed = sr_Seed * 1103515245 + 12345; (sr_Seed >> 16) % max. */
unsigned long app_lcg(unsigned long max);
/* Same generator on a private seed (no lock needed). */
unsigned long app_lcg_r(unsigned long *seed, unsigned long max);

/* Counters fed by traceMALLOC/traceFREE: successful calls and the sizes they report. */
typedef struct app_trace {
    unsigned long mallocs;
    unsigned long frees;
    size_t malloc_bytes;
    size_t free_bytes;
} app_trace_t;
void app_trace_snapshot(app_trace_t *out);

/*
 * Leak check at the end of a run: the heap is back where it was at `start`
 * (free bytes, allocation minus free counts), the trace counters agree with
 * the heap's, and the heap check passes. Prints the two heap stats.
 */
typedef struct app_mark {
    HeapStats_t stats;
    app_trace_t trace;
    UBaseType_t tasks;
} app_mark_t;
void app_mark(app_mark_t *m);
void app_expect_back_to(const app_mark_t *start, const char *when);

void app_print_stats(const char *label, const HeapStats_t *s);

/* Monotonic nanoseconds. */
uint64_t app_now_ns(void);

#endif
