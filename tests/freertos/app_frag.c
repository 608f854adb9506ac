/* SPDX-License-Identifier: MIT */
/*
 * The buddy-freertos seed's fragmentation and merge phases (its sections
 * 5.1 to 5.3) as a FreeRTOS task on the real kernel, in rounds until
 * RUN_TICKS:
 *   fragmentation  allocate BLOCKS blocks of pseudo-random sizes (16 to 4 KiB),
 *                  free every other one: vPortGetHeapStats shows the holes
 *                  (largest/smallest free block, free bytes, free blocks);
 *   merge          free the rest: the heap must be back to its start value
 *                  (free bytes; no more free blocks, no smaller largest block);
 *   efficiency     20 allocations of random size and their frees, timed.
 * Each round uses another seed; the first round's statistics are printed.
 * Also checked: xPortGetFreeHeapSize and xPortGetMinimumEverFreeHeapSize
 * against vPortGetHeapStats, xPortResetHeapMinimumEverFreeHeapSize, and,
 * before the scheduler starts, vPortInitialiseBlocks, vPortHeapResetState and
 * requests that must fail (through the malloc-failed hook).
 */
#include <stdio.h>
#include <string.h>

#include "FreeRTOS.h"
#include "task.h"
#include "app.h"

#define BLOCKS 128
#define RUN_TICKS 1500u
#define TIMED 20

/*
 * Everything merged back: the same free bytes, in no more free blocks, the
 * largest no smaller. (A first-fit heap may fill a hole the kernel's own
 * allocations left and merge it on free: fewer blocks than at the start.)
 */
static void expect_merged(const HeapStats_t *a, const HeapStats_t *b, const char *when)
{
    char what[200];
    if (a->xAvailableHeapSpaceInBytes != b->xAvailableHeapSpaceInBytes ||
        b->xNumberOfFreeBlocks > a->xNumberOfFreeBlocks ||
        b->xSizeOfLargestFreeBlockInBytes < a->xSizeOfLargestFreeBlockInBytes) {
        snprintf(what, sizeof(what), "%s: free %zu in %zu blocks (largest %zu), at the start %zu in %zu (largest %zu)",
                 when, b->xAvailableHeapSpaceInBytes, b->xNumberOfFreeBlocks, b->xSizeOfLargestFreeBlockInBytes,
                 a->xAvailableHeapSpaceInBytes, a->xNumberOfFreeBlocks, a->xSizeOfLargestFreeBlockInBytes);
        app_fail(what);
    }
}

static void round_of(unsigned long seed, int print)
{
    static unsigned char *b[BLOCKS];
    static size_t n[BLOCKS];
    HeapStats_t s0;
    HeapStats_t s1;
    HeapStats_t s2;
    uint64_t amin = UINT64_MAX, amax = 0, asum = 0, fmin = UINT64_MAX, fmax = 0, fsum = 0;
    int i;

    vPortGetHeapStats(&s0);
    for (i = 0; i < BLOCKS; i++) {
        n[i] = (size_t)app_lcg_r(&seed, 4096 - 16) + 16u;
        b[i] = pvPortMalloc(n[i]);
        if (b[i] == NULL) {
            app_fail("fragmentation phase: pvPortMalloc returned NULL");
        }
        memset(b[i], (int)(i & 0xFF), n[i]);
    }
    for (i = 1; i < BLOCKS; i += 2) {
        vPortFree(b[i]);
    }
    vPortGetHeapStats(&s1);
    if (app_heap_stats_check() != 0) {
        app_fail("fragmentation phase: vPortGetHeapStats disagrees with a walk of the heap");
    }
    for (i = 0; i < BLOCKS; i += 2) {
        size_t k;
        for (k = 0; k < n[i]; k++) {
            if (b[i][k] != (unsigned char)(i & 0xFF)) {
                app_fail("fragmentation phase: a live block changed");
            }
        }
        vPortFree(b[i]);
    }
    vPortGetHeapStats(&s2);
    expect_merged(&s0, &s2, "merge phase");
    if (xPortGetFreeHeapSize() != s2.xAvailableHeapSpaceInBytes ||
        xPortGetMinimumEverFreeHeapSize() != s2.xMinimumEverFreeBytesRemaining ||
        s2.xMinimumEverFreeBytesRemaining > s1.xAvailableHeapSpaceInBytes) {
        app_fail("xPortGetFreeHeapSize/xPortGetMinimumEverFreeHeapSize disagree with vPortGetHeapStats");
    }
    if (s1.xAvailableHeapSpaceInBytes >= s0.xAvailableHeapSpaceInBytes ||
        s1.xNumberOfFreeBlocks < 1 || s1.xSizeOfLargestFreeBlockInBytes > s0.xSizeOfLargestFreeBlockInBytes) {
        app_fail("fragmentation phase: implausible statistics");
    }
    for (i = 0; i < TIMED; i++) {
        uint64_t t0;
        uint64_t dt;
        n[i] = (size_t)app_lcg_r(&seed, 4096 - 16) + 16u;
        t0 = app_now_ns();
        b[i] = pvPortMalloc(n[i]);
        dt = app_now_ns() - t0;
        if (b[i] == NULL) {
            app_fail("efficiency phase: pvPortMalloc returned NULL");
        }
        amin = dt < amin ? dt : amin;
        amax = dt > amax ? dt : amax;
        asum += dt;
    }
    for (i = 0; i < TIMED; i++) {
        uint64_t t0 = app_now_ns();
        uint64_t dt;
        vPortFree(b[i]);
        dt = app_now_ns() - t0;
        fmin = dt < fmin ? dt : fmin;
        fmax = dt > fmax ? dt : fmax;
        fsum += dt;
    }
    if (print) {
        app_print_stats("start", &s0);
        app_print_stats("fragmented", &s1);
        app_print_stats("merged", &s2);
        printf("frag[%s]: %d allocations ns min %llu avg %llu max %llu; frees ns min %llu avg %llu max %llu\n",
               app_heap_name(), TIMED, (unsigned long long)amin, (unsigned long long)(asum / TIMED),
               (unsigned long long)amax, (unsigned long long)fmin, (unsigned long long)(fsum / TIMED),
               (unsigned long long)fmax);
    }
}

static void runner(void *arg)
{
    app_mark_t start;
    unsigned long rounds = 0;
    (void)arg;
    app_mark(&start);
    while (xTaskGetTickCount() < RUN_TICKS) {
        round_of(rounds * 7919u + 1u, rounds == 0);
        rounds++;
        xPortResetHeapMinimumEverFreeHeapSize();
        if (xPortGetMinimumEverFreeHeapSize() != xPortGetFreeHeapSize()) {
            app_fail("xPortResetHeapMinimumEverFreeHeapSize");
        }
        if (app_heap_check() != 0) {
            app_fail("heap check failed");
        }
        vTaskDelay(1);
    }
    printf("frag[%s]: %lu rounds\n", app_heap_name(), rounds);
    app_expect_back_to(&start, "after the rounds");
    app_exit(0, "passed");
}

/* vPortInitialiseBlocks does nothing harmful; vPortHeapResetState starts the heap and its counters over. */
static void reset_state(void)
{
    HeapStats_t s;
    void *p = pvPortMalloc(100);
    app_heap_initialise_blocks();
    vPortFree(p);
    app_heap_restart();
    vPortGetHeapStats(&s);
    if (s.xNumberOfSuccessfulAllocations != 0 || s.xNumberOfSuccessfulFrees != 0) {
        app_fail("vPortHeapResetState kept the counters");
    }
    p = pvPortMalloc(100);
    vPortGetHeapStats(&s);
    if (p == NULL || s.xNumberOfSuccessfulAllocations != 1 || s.xAvailableHeapSpaceInBytes == 0) {
        app_fail("the heap after vPortHeapResetState");
    }
    vPortFree(p);
}

/* Requests that must fail: NULL, the malloc-failed hook for pvPortMalloc (as heap_4), nothing else moves. */
static void hopeless_requests(void)
{
    HeapStats_t before;
    HeapStats_t after;
    unsigned long failures = app_malloc_failures;
    vPortGetHeapStats(&before);
    app_malloc_fail_expected = 1;
    if (pvPortMalloc(2u * configTOTAL_HEAP_SIZE) != NULL || app_malloc_failures != failures + 1u) {
        app_fail("pvPortMalloc(twice the heap) did not fail through the hook");
    }
    if (pvPortMalloc(0) != NULL || app_malloc_failures != failures + 2u) {
        app_fail("pvPortMalloc(0) did not fail through the hook");
    }
    if (pvPortCalloc(SIZE_MAX / 2u, 4) != NULL) {
        app_fail("pvPortCalloc with an overflowing product");
    }
    app_malloc_fail_expected = 0;
    vPortGetHeapStats(&after);
    if (after.xAvailableHeapSpaceInBytes != before.xAvailableHeapSpaceInBytes ||
        after.xNumberOfSuccessfulAllocations != before.xNumberOfSuccessfulAllocations) {
        app_fail("a failed request changed the heap");
    }
}

int main(int argc, char **argv)
{
    app_start(argc, argv, "frag");
    reset_state();
    hopeless_requests();
    if (xTaskCreate(runner, "frag", configMINIMAL_STACK_SIZE, NULL, 2, NULL) != pdPASS) {
        app_fail("setup");
    }
    vTaskStartScheduler();
    app_fail("scheduler returned");
    return 2;
}
