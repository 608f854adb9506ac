/* SPDX-License-Identifier: MIT */
/*
 * The buddy-freertos seed's comparison (its tables 3 to 6) for one heap, on
 * the real kernel's heap API, before the scheduler starts (so no tick
 * preempts a measurement; vTaskSuspendAll/xTaskResumeAll still run, and on
 * the POSIX port their critical sections cost two signal-mask system calls
 * per heap call, the same for every heap: the lock_ns figure).
 *
 *   fragmentation  BLOCKS blocks of pseudo-random sizes (16 B to 4 KiB),
 *                  every other one freed: largest/smallest free block, free
 *                  bytes, free blocks (table 3);
 *   timing         on that fragmented heap, ROUNDS rounds of 20 allocations
 *                  of random size (the seed's test) and their 20 frees, each
 *                  call timed: min/median/avg/99th percentile/max ns
 *                  (tables 5 and 6; the max is at the mercy of the host);
 *   merge          everything freed: largest/smallest, free blocks (table 4).
 *
 * Prints one line of key=value pairs; bench_table.sh puts the heaps side by
 * side. Exit status as app.h says (a NULL from pvPortMalloc is a failure).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "FreeRTOS.h"
#include "task.h"
#include "app.h"

#define BLOCKS 128
#define ROUNDS 2000
#define BURST 20
#define SAMPLES (ROUNDS * BURST)

static uint64_t g_alloc_ns[SAMPLES];
static uint64_t g_free_ns[SAMPLES];
static uint64_t g_lock_ns[SAMPLES];

static int by_value(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a;
    uint64_t y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* Sorts v; prints min, median, average, 99th percentile and max under this name. */
static void summary(const char *name, uint64_t *v, size_t n)
{
    uint64_t sum = 0;
    size_t i;
    qsort(v, n, sizeof(v[0]), by_value);
    for (i = 0; i < n; i++) {
        sum += v[i];
    }
    printf(" %s_min=%llu %s_med=%llu %s_avg=%llu %s_p99=%llu %s_max=%llu", name, (unsigned long long)v[0], name,
           (unsigned long long)v[n / 2], name, (unsigned long long)(sum / n), name,
           (unsigned long long)v[n - n / 100 - 1], name, (unsigned long long)v[n - 1]);
}

static void stats_fields(const char *phase, const HeapStats_t *s)
{
    printf(" %s_free=%zu %s_largest=%zu %s_smallest=%zu %s_blocks=%zu", phase, s->xAvailableHeapSpaceInBytes, phase,
           s->xSizeOfLargestFreeBlockInBytes, phase, s->xSizeOfSmallestFreeBlockInBytes, phase,
           s->xNumberOfFreeBlocks);
}

int main(int argc, char **argv)
{
    static unsigned char *b[BLOCKS];
    unsigned char *burst[BURST];
    unsigned long seed = 2026;
    HeapStats_t s0, s1, s2;
    size_t k = 0;
    int r, i;

    app_start(argc, argv, "bench");
    /* Warm the heap up (first-use initialisation) outside the measurements. */
    vPortFree(pvPortMalloc(16));
    vPortGetHeapStats(&s0);
    for (i = 0; i < BLOCKS; i++) {
        b[i] = pvPortMalloc((size_t)app_lcg_r(&seed, 4096 - 16) + 16u);
        if (b[i] == NULL) {
            app_fail("fragmentation: pvPortMalloc returned NULL");
        }
    }
    for (i = 1; i < BLOCKS; i += 2) {
        vPortFree(b[i]);
    }
    vPortGetHeapStats(&s1);

    for (r = 0; r < ROUNDS; r++) {
        for (i = 0; i < BURST; i++) {
            size_t n = (size_t)app_lcg_r(&seed, 4096 - 16) + 16u;
            uint64_t t0 = app_now_ns();
            burst[i] = pvPortMalloc(n);
            g_alloc_ns[k + (size_t)i] = app_now_ns() - t0;
            if (burst[i] == NULL) {
                app_fail("timing: pvPortMalloc returned NULL");
            }
        }
        for (i = 0; i < BURST; i++) {
            uint64_t t0 = app_now_ns();
            vPortFree(burst[i]);
            g_free_ns[k + (size_t)i] = app_now_ns() - t0;
        }
        for (i = 0; i < BURST; i++) {
            uint64_t t0 = app_now_ns();
            vTaskSuspendAll();
            (void)xTaskResumeAll();
            g_lock_ns[k + (size_t)i] = app_now_ns() - t0;
        }
        k += BURST;
    }

    for (i = 0; i < BLOCKS; i += 2) {
        vPortFree(b[i]);
    }
    vPortGetHeapStats(&s2);
    if (s2.xAvailableHeapSpaceInBytes != s0.xAvailableHeapSpaceInBytes) {
        app_fail("merge: free bytes differ from the start");
    }
    printf("heap=%s", app_heap_name());
    stats_fields("start", &s0);
    stats_fields("frag", &s1);
    stats_fields("merge", &s2);
    summary("alloc", g_alloc_ns, SAMPLES);
    summary("free", g_free_ns, SAMPLES);
    summary("lock", g_lock_ns, SAMPLES);
    printf("\n");
    fflush(stdout);
    return 0;
}
