/* SPDX-License-Identifier: MIT */
/* What heapkit's FreeRTOS applications share: start, exit, hooks, trace counters, leak check (app.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "FreeRTOS.h"
#include "task.h"
#include "app.h"

volatile int app_malloc_fail_expected;
volatile unsigned long app_malloc_failures;

static const char *g_app = "app";
static int g_regions;
static app_trace_t g_trace;
static unsigned long sr_Seed = 1;

void app_exit(int status, const char *why)
{
    printf("%s[%s]: %s (exit %d)\n", g_app, app_heap_name(), why, status);
    fflush(stdout);
    fflush(stderr);
    _exit(status);
}

void app_fail(const char *what)
{
    printf("%s[%s]: FAILED: %s\n", g_app, app_heap_name(), what);
    app_exit(2, "check failed");
}

void app_start(int argc, char **argv, const char *app)
{
    int regions;
    g_app = app;
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (argc != 2 || (strcmp(argv[1], "single") != 0 && strcmp(argv[1], "regions") != 0)) {
        fprintf(stderr, "%s: usage: %s single|regions\n", argv[0], argv[0]);
        _exit(5);
    }
    regions = strcmp(argv[1], "regions") == 0;
    g_regions = regions;
    if (app_heap_setup(regions) != 0) {
        fprintf(stderr, "%s: heap %s has no '%s' mode\n", argv[0], app_heap_name(), argv[1]);
        _exit(5);
    }
    printf("%s[%s]: %s heap\n", app, app_heap_name(), argv[1]);
}

void app_heap_restart(void)
{
    vPortHeapResetState();
    memset(&g_trace, 0, sizeof(g_trace));
    if (app_heap_setup(g_regions) != 0) {
        app_fail("heap setup after vPortHeapResetState");
    }
}

void app_assert_failed(const char *file, int line)
{
    printf("%s[%s]: configASSERT failed at %s:%d\n", g_app, app_heap_name(), file, line);
    app_exit(3, "assertion");
}

void vApplicationMallocFailedHook(void)
{
    if (!app_malloc_fail_expected) {
        app_exit(4, "malloc-failed hook");
    }
    app_malloc_failures++;
}

/* The heaps call these with the scheduler suspended: one task at a time. */
void app_trace_malloc(void *pv, size_t size)
{
    if (pv != NULL) {
        g_trace.mallocs++;
        g_trace.malloc_bytes += size;
    }
}

void app_trace_free(void *pv, size_t size)
{
    if (pv != NULL) {
        g_trace.frees++;
        g_trace.free_bytes += size;
    }
}

void app_trace_snapshot(app_trace_t *out)
{
    vTaskSuspendAll();
    *out = g_trace;
    (void)xTaskResumeAll();
}

unsigned long app_lcg_r(unsigned long *seed, unsigned long max)
{
    *seed = *seed * 1103515245ul + 12345ul;
    return max != 0 ? (*seed >> 16) % max : 0;
}

unsigned long app_lcg(unsigned long max)
{
    unsigned long r;
    taskENTER_CRITICAL();
    r = app_lcg_r(&sr_Seed, max);
    taskEXIT_CRITICAL();
    return r;
}

uint64_t app_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

void app_print_stats(const char *label, const HeapStats_t *s)
{
    printf("%s[%s]: %-18s available %7zu  largest %7zu  smallest %7zu  free blocks %4zu  min ever %7zu  "
           "allocs %7zu  frees %7zu\n",
           g_app, app_heap_name(), label, s->xAvailableHeapSpaceInBytes, s->xSizeOfLargestFreeBlockInBytes,
           s->xSizeOfSmallestFreeBlockInBytes, s->xNumberOfFreeBlocks, s->xMinimumEverFreeBytesRemaining,
           s->xNumberOfSuccessfulAllocations, s->xNumberOfSuccessfulFrees);
}

void app_mark(app_mark_t *m)
{
    vPortGetHeapStats(&m->stats);
    app_trace_snapshot(&m->trace);
    m->tasks = uxTaskGetNumberOfTasks();
}

void app_expect_back_to(const app_mark_t *start, const char *when)
{
    app_mark_t now;
    char what[160];
    size_t live_start = start->stats.xNumberOfSuccessfulAllocations - start->stats.xNumberOfSuccessfulFrees;
    size_t live_now;
    app_mark(&now);
    live_now = now.stats.xNumberOfSuccessfulAllocations - now.stats.xNumberOfSuccessfulFrees;
    app_print_stats("start", &start->stats);
    app_print_stats(when, &now.stats);
    if (now.tasks != start->tasks) {
        snprintf(what, sizeof(what), "%s: %lu tasks, %lu at the start", when, (unsigned long)now.tasks,
                 (unsigned long)start->tasks);
        app_fail(what);
    }
    if (now.stats.xAvailableHeapSpaceInBytes != start->stats.xAvailableHeapSpaceInBytes || live_now != live_start) {
        snprintf(what, sizeof(what), "%s: leak: %zu bytes free, %zu live blocks; at the start %zu and %zu", when,
                 now.stats.xAvailableHeapSpaceInBytes, live_now, start->stats.xAvailableHeapSpaceInBytes, live_start);
        app_fail(what);
    }
    if (now.stats.xMinimumEverFreeBytesRemaining > now.stats.xAvailableHeapSpaceInBytes ||
        now.stats.xSizeOfLargestFreeBlockInBytes > now.stats.xAvailableHeapSpaceInBytes) {
        app_fail("heap stats out of bounds");
    }
    /* traceMALLOC/traceFREE saw every successful call, with the bytes xPortGetFreeHeapSize moved by. */
    if (now.trace.mallocs != now.stats.xNumberOfSuccessfulAllocations ||
        now.trace.frees != now.stats.xNumberOfSuccessfulFrees ||
        (now.trace.malloc_bytes - start->trace.malloc_bytes) != (now.trace.free_bytes - start->trace.free_bytes)) {
        snprintf(what, sizeof(what), "%s: trace macros: %lu mallocs %lu frees, heap %zu and %zu; bytes %zu vs %zu",
                 when, now.trace.mallocs, now.trace.frees, now.stats.xNumberOfSuccessfulAllocations,
                 now.stats.xNumberOfSuccessfulFrees, now.trace.malloc_bytes - start->trace.malloc_bytes,
                 now.trace.free_bytes - start->trace.free_bytes);
        app_fail(what);
    }
    if (app_heap_check() != 0 || app_heap_stats_check() != 0) {
        snprintf(what, sizeof(what), "%s: heap check %d, heap stats check %d", when, app_heap_check(),
                 app_heap_stats_check());
        app_fail(what);
    }
}
