/* SPDX-License-Identifier: MIT */
/*
 * The fctma-pools seed's ITC benchmark on the real kernel, every allocation
 * and free counted in instructions: 10 producer and 10 consumer tasks pass
 * 127-byte blocks (an IEEE 802.15.4 frame) through a FreeRTOS queue. A
 * producer allocates 20 blocks and sends them; once 16 KB are live it sleeps
 * a pseudo-random time from the seed's generator (Fig. 2), otherwise it
 * yields. A consumer takes up to 10 blocks, checks and frees them, and waits
 * a pseudo-random time. The producers stop after ITC_BLOCKS blocks in all,
 * the consumers drain the queue, and the monitor prints one JSON line.
 *
 * The allocator under test (one ELF each, ITC_HEAP_*):
 *   heap_4  pvPortMalloc / vPortFree of the kernel's heap_4.c, the heap the
 *           kernel's own objects come from too (the seed's Heap4);
 *   pool    hk_pool_malloc / hk_pool_free on one pool of 127-byte blocks
 *           carved from a bump allocator (lab/target/fctma_pool.h, the lab's
 *           "pool"), called from the tasks as the seed's FCTMA is;
 *   bump    hk_bump_malloc / hk_bump_free (the seed's SimpleDMA: free
 *           reclaims nothing, so its arena holds every block of the run);
 *   sdma    the seed's SDMA (lab/target/sdma.c), served from a chunk taken
 *           from heap_4 with pvPortMalloc at start-up, as the seed's (48 KB
 *           against the seed's 32: SDMA_CHUNK says why);
 *   pool_sync  the pool of "pool" with its lock and counting semaphore
 *           attached (hk_pool_set_sync: a FreeRTOS mutex and counting
 *           semaphore), as the seed's FCTMA runs in its toolchain: every
 *           alloc and free takes the semaphore and the mutex, and the counts
 *           include them.
 *
 * itc_trace (ITC_TRACE) is itc_heap_4 with the firmware recorder (ports/trace/)
 * in heap_4's hooks and 20,000 frames; it writes the trace to the host file
 * named on its command line (tools/record_traces.sh itc: data/traces/embedded).
 * Its counts include the recorder and are not used.
 *
 * Multitasking safety (ITC_STRESS, the pool_sync ELF and its control
 * pool_race, the same pool without the sync): after the benchmark,
 * STRESS_TASKS tasks of equal priority allocate and free pool blocks with
 * interrupts enabled, so the tick preempts them inside the pool's calls.
 * Each task stamps every word of a block it gets with its id and the
 * block's sequence number and checks the stamp before freeing it: a block
 * handed to two tasks at once fails the check. At the end every block must
 * be back in the pool. pool_race shows that the check catches the race the
 * lock prevents.
 *
 * Counting: the kernel owns SysTick (its tick), so the counter is the
 * board's CMSDK APB timer 0, free-running from 0xFFFFFFFF on the same 25 MHz
 * clock, read by lab/target/measure_m3.S's window (assembled with
 * TGT_COUNTER_REG, the timer's VALUE): under QEMU -icount shift=7 it ticks
 * 3.2 times per instruction, as SysTick does for the lab's driver, and its
 * 32-bit wrap is a multiple of the window's 24 bits, so no reload ever falls
 * out of a reading. Each call runs with interrupts masked (PRIMASK, which the
 * kernel's BASEPRI critical sections inside heap_4 do not undo), as the seed
 * disabled multitasking and interrupts around each call: the tick and
 * context switches stay out of the counts. Before the benchmark the monitor
 * calibrates with the window's known-length callees (1 and 1000
 * instructions) ITC_CAL_REPS times each, at phases of the tick drifting
 * between readings, and stops unless every reading is exact.
 *
 *   run-qemu.sh mps2-an385 itc_<heap>.elf
 *
 * Exit status: 0 done; 2 a check failed (calibration, a corrupted block,
 * lost blocks, a block held by two tasks); 3 an allocation failed; 5 a
 * configASSERT failed.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "FreeRTOS.h"
#include "queue.h"
#include "semphr.h"
#include "task.h"

#include "fctma_pool.h"
#include "icount.h"
#include "sdma.h"
#ifdef ITC_TRACE
#include "hk_trace.h"
#include "hk_trace_semihost.h"

/* itc_trace: heap_4's calls recorded (its hooks, FreeRTOSConfig.h); the ring drains when full. */
static uintptr_t g_trace_buffer[HK_TRACE_FOOTPRINT(16384) / sizeof(uintptr_t)];
static hk_trace_semihost_t g_trace_file;
static void trace_lock(void) { vTaskSuspendAll(); }
static void trace_unlock(void) { (void)xTaskResumeAll(); }
static uint32_t trace_stamp(void) { return (uint32_t)xTaskGetTickCount(); }
#endif

#define PRODUCERS 10
#define CONSUMERS 10
#define BLOCK 127u
#define BURST 20
#define TAKE 10
#define LIMIT_BYTES (16u * 1024u)
#define MAX_TIME_PRODUCER 20u
#define MAX_TIME_CONSUMER 4u
#define QUEUE_LEN 512
#ifndef ITC_BLOCKS
#define ITC_BLOCKS 3000u
#endif
#define ITC_CAL_REPS 400u
/* The bump's arena holds every block of the run; the pool's, a few hundred live ones. */
#define BUMP_ARENA (ITC_BLOCKS * 144u + 1024u)
#define POOL_ARENA (64u * 1024u)
/*
 * The seed's SDMA took 32 KB from heap_4, room for its ~100 live blocks. Here ten producers'
 * bursts of 20 above the 16 KB mark can hold 328 blocks live, 144 bytes each in SDMA's class:
 * the chunk is 48 KB (heap_4's other 48 KB hold the kernel's tasks and queue).
 */
#define SDMA_CHUNK (48u * 1024u)
#define STRESS_TASKS 4
#define STRESS_HOLD 6
#ifndef STRESS_ROUNDS
#define STRESS_ROUNDS 20000u
#endif

/* CMSDK APB timer 0 of mps2-an385 (the window reads VALUE, 0x40000004: CMakeLists.txt). */
#define TIMER0_CTRL (*(volatile uint32_t *)0x40000000u)
#define TIMER0_VALUE (*(volatile uint32_t *)0x40000004u)
#define TIMER0_RELOAD (*(volatile uint32_t *)0x40000008u)
#define TIMER_ENABLE 1u

typedef struct calls {
    uint32_t n;
    uint32_t insns[ITC_BLOCKS];
} calls_t;

static calls_t g_alloc, g_free;
static QueueHandle_t g_queue;
static volatile uint32_t g_tickets;   /* blocks the producers may still allocate */
static volatile uint32_t g_live;      /* blocks allocated and not yet freed */
static volatile uint32_t g_live_max;
static volatile unsigned g_corrupt;
static volatile int g_producers_left = PRODUCERS;
static volatile int g_consumers_left = CONSUMERS;
static uint32_t g_empty_insns;
static unsigned long g_seed = 1;      /* the seed's generator (Fig. 2) */

#if defined(ITC_HEAP_POOL) || defined(ITC_HEAP_POOL_SYNC)
#define ITC_POOL
#ifdef ITC_HEAP_POOL_SYNC
#define HEAP_NAME "pool_sync"
#else
#define HEAP_NAME "pool"
#endif
static uint8_t g_arena[POOL_ARENA] __attribute__((aligned(8)));
static hk_pool_t *g_pool;
#define ALLOC_CALL(ret) counted((const void *)hk_pool_malloc, (uintptr_t)g_pool, BLOCK, ret)
#define FREE_CALL(p) counted((const void *)hk_pool_free, (uintptr_t)g_pool, (uintptr_t)(p), NULL)
#elif defined(ITC_HEAP_SDMA)
#define HEAP_NAME "sdma"
static hk_heap_t *g_sdma;
#define ALLOC_CALL(ret) counted((const void *)lab_sdma_malloc, (uintptr_t)g_sdma, BLOCK, ret)
#define FREE_CALL(p) counted((const void *)lab_sdma_free, (uintptr_t)g_sdma, (uintptr_t)(p), NULL)
#elif defined(ITC_HEAP_BUMP)
#define HEAP_NAME "bump"
static uint8_t g_arena[BUMP_ARENA] __attribute__((aligned(8)));
static hk_bump_t *g_bump;
#define ALLOC_CALL(ret) counted((const void *)hk_bump_malloc, (uintptr_t)g_bump, BLOCK, ret)
#define FREE_CALL(p) counted((const void *)hk_bump_free, (uintptr_t)g_bump, (uintptr_t)(p), NULL)
#else
#define HEAP_NAME "heap_4"
#define ALLOC_CALL(ret) counted((const void *)pvPortMalloc, BLOCK, 0, ret)
#define FREE_CALL(p) counted((const void *)vPortFree, (uintptr_t)(p), 0, NULL)
#endif

void app_assert_failed(const char *file, int line)
{
    printf("configASSERT failed at %s:%d\n", file, line);
    exit(5);
}

void vApplicationMallocFailedHook(void)
{
    printf("itc[%s]: the kernel's heap is exhausted\n", HEAP_NAME);
    exit(3);
}

static void fail(const char *what)
{
    printf("itc[%s]: %s\n", HEAP_NAME, what);
    exit(2);
}

/* Ticks to instructions: 16 ticks every 5 instructions, rounded (as lab/target/counter_m3.c). */
static uint32_t insns_of(uint32_t ticks) { return (ticks * 5u + 8u) / 16u; }

/* Instructions fn(a0, a1) executed, its return included (the empty window and the blx taken off). */
static uint32_t counted(const void *fn, uintptr_t a0, uintptr_t a1, uintptr_t *ret)
{
    uint32_t raw;
    __asm__ volatile("cpsid i" ::: "memory");
    raw = tgt_measure(fn, a0, a1, 0);
    if (ret != NULL) {
        *ret = tgt_measure_result;
    }
    __asm__ volatile("cpsie i" ::: "memory");
    return insns_of(raw) - g_empty_insns - 1u;
}

static uint32_t empty_window(void)
{
    uint32_t raw;
    __asm__ volatile("cpsid i" ::: "memory");
    raw = tgt_measure_empty();
    __asm__ volatile("cpsie i" ::: "memory");
    return insns_of(raw);
}

/* Every reading of the known-length callees exact, with the tick interrupt and task switches in between. */
static void calibrate(void)
{
    uint32_t i;
    g_empty_insns = empty_window();
    for (i = 0; i < ITC_CAL_REPS; i++) {
        volatile uint32_t spin;
        if (empty_window() != g_empty_insns || counted((const void *)tgt_cal_nop, 0, 0, NULL) != 1u ||
            counted((const void *)tgt_cal_1000, 0, 0, NULL) != 1000u) {
            fail("calibration: a known-length callee was not counted exactly");
        }
        for (spin = 0; spin < (i * 37u) % 3000u; spin++) {
            /* the next readings at another phase of the tick */
        }
        if (i % 16u == 15u) {
            vTaskDelay(1);
        }
    }
}

static unsigned long lcg(unsigned long max)
{
    g_seed = g_seed * 1103515245ul + 12345ul;
    return ((g_seed >> 16) % max);
}

static unsigned char pattern(uint32_t seq, unsigned i) { return (unsigned char)(seq * 7u + i * 29u + 1u); }

static void note(calls_t *c, uint32_t n)
{
    taskENTER_CRITICAL();
    c->insns[c->n++] = n;
    taskEXIT_CRITICAL();
}

static void producer(void *arg)
{
    (void)arg;
    for (;;) {
        int i;
        for (i = 0; i < BURST; i++) {
            uintptr_t got;
            unsigned char *b;
            uint32_t seq;
            unsigned k;
            taskENTER_CRITICAL();
            seq = g_tickets;
            g_tickets = seq != 0 ? seq - 1u : 0;
            taskEXIT_CRITICAL();
            if (seq == 0) {
                goto done;
            }
            note(&g_alloc, ALLOC_CALL(&got));
            b = (unsigned char *)got;
            if (b == NULL) {
                printf("itc[%s]: malloc(127) failed with %lu blocks live\n", HEAP_NAME, (unsigned long)g_live);
                exit(3);
            }
            memcpy(b, &seq, sizeof(seq));
            for (k = sizeof(seq); k < BLOCK; k++) {
                b[k] = pattern(seq, k);
            }
            taskENTER_CRITICAL();
            g_live++;
            g_live_max = g_live > g_live_max ? g_live : g_live_max;
            taskEXIT_CRITICAL();
            while (xQueueSend(g_queue, &b, pdMS_TO_TICKS(10)) != pdPASS) {
            }
        }
        if (g_live * BLOCK >= LIMIT_BYTES) {
            vTaskDelay(lcg(MAX_TIME_PRODUCER) + 1u);
        } else {
            taskYIELD();
        }
    }
done:
    taskENTER_CRITICAL();
    g_producers_left--;
    taskEXIT_CRITICAL();
    vTaskDelete(NULL);
}

static int intact(const unsigned char *b)
{
    uint32_t seq;
    unsigned k;
    memcpy(&seq, b, sizeof(seq));
    for (k = sizeof(seq); k < BLOCK; k++) {
        if (b[k] != pattern(seq, k)) {
            return 0;
        }
    }
    return 1;
}

static void consumer(void *arg)
{
    (void)arg;
    for (;;) {
        unsigned char *b;
        int got = 0;
        while (got < TAKE && xQueueReceive(g_queue, &b, got == 0 ? pdMS_TO_TICKS(5) : 0) == pdPASS) {
            got++;
            if (!intact(b)) {
                g_corrupt++;
            }
            note(&g_free, FREE_CALL(b));
            taskENTER_CRITICAL();
            g_live--;
            taskEXIT_CRITICAL();
        }
        if (got == 0 && g_producers_left == 0 && uxQueueMessagesWaiting(g_queue) == 0) {
            break;
        }
        vTaskDelay(lcg(MAX_TIME_CONSUMER));
    }
    taskENTER_CRITICAL();
    g_consumers_left--;
    taskEXIT_CRITICAL();
    vTaskDelete(NULL);
}

static int by_value(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

/* count, min, p50 (nearest rank, as lab/heapkit/target.py), max, sum and sum of squares (mean, sd). */
static void print_calls(const char *name, calls_t *c)
{
    unsigned long long sum = 0, sumsq = 0;
    uint32_t i, k;
    qsort(c->insns, c->n, sizeof(c->insns[0]), by_value);
    for (i = 0; i < c->n; i++) {
        sum += c->insns[i];
        sumsq += (unsigned long long)c->insns[i] * c->insns[i];
    }
    k = (c->n * 500u + 999u) / 1000u;
    printf("\"%s\":{\"count\":%lu,\"min\":%lu,\"p50\":%lu,\"max\":%lu,\"sum\":%llu,\"sumsq\":%llu}", name,
           (unsigned long)c->n, (unsigned long)(c->n ? c->insns[0] : 0),
           (unsigned long)(c->n ? c->insns[(k ? k : 1) - 1] : 0), (unsigned long)(c->n ? c->insns[c->n - 1] : 0),
           sum, sumsq);
}

#if defined(ITC_POOL)
static void first_block(void *ctx, const hk_block_info_t *block)
{
    const uint8_t **first = ctx;
    if (*first == NULL) {
        *first = block->start;
    }
}

/*
 * Table III of the seed on this 32-bit core, at the pool's high-water mark (every block is
 * free again by now, so the block stride is capacity / blocks): user bytes = 127 per block
 * that was out at once, total = those blocks' gross bytes plus the pool's control data before
 * its first block.
 */
static void print_table3(void)
{
    hk_stats_t st;
    const uint8_t *first = NULL;
    size_t peak_blocks;
    hk_get_stats(hk_pool_heap(g_pool), &st);
    hk_walk(hk_pool_heap(g_pool), first_block, &first);
    peak_blocks = st.peak_used / (st.capacity / hk_pool_available(g_pool));
    printf(",\"table3\":{\"blocks\":%lu,\"user\":%lu,\"control\":%lu,\"peak_used\":%lu}",
           (unsigned long)peak_blocks, (unsigned long)(peak_blocks * BLOCK), (unsigned long)(first - g_arena),
           (unsigned long)st.peak_used);
}
#endif

#if defined(ITC_HEAP_POOL_SYNC)
/* The seed's BlocksAvailable and PoolLock, as FreeRTOS objects. */
static SemaphoreHandle_t g_pool_lock;

static void *sync_sem_create(void *ctx, size_t count)
{
    (void)ctx;
    return xSemaphoreCreateCounting((UBaseType_t)count, (UBaseType_t)count);
}

static int sync_sem_take(void *sem, uint32_t timeout_ticks)
{
    return xSemaphoreTake((SemaphoreHandle_t)sem, (TickType_t)timeout_ticks) == pdTRUE;
}

static void sync_sem_give(void *sem) { (void)xSemaphoreGive((SemaphoreHandle_t)sem); }

static void sync_lock(void *ctx) { (void)xSemaphoreTake((SemaphoreHandle_t)ctx, portMAX_DELAY); }

static void sync_unlock(void *ctx) { (void)xSemaphoreGive((SemaphoreHandle_t)ctx); }

static hk_pool_sync_t g_sync = {NULL, sync_sem_create, sync_sem_take, sync_sem_give, sync_lock, sync_unlock};
#endif

#if defined(ITC_STRESS)
static uint32_t g_stress_ops;
static uint32_t g_stress_overlaps;
static volatile int g_stress_left;

static uint32_t stamp_of(uint32_t task, uint32_t seq) { return (task << 24) ^ seq ^ 0x5A5A5A5Au; }

static void stamp(uint32_t *b, uint32_t v)
{
    unsigned k;
    for (k = 0; k < BLOCK / 4u; k++) {
        b[k] = v;
    }
}

static int stamped(const uint32_t *b, uint32_t v)
{
    unsigned k;
    for (k = 0; k < BLOCK / 4u; k++) {
        if (b[k] != v) {
            return 0;
        }
    }
    return 1;
}

/* Hold STRESS_HOLD blocks, each stamped with this task's id; re-check a stamp after yielding, then free. */
static void stress_task(void *arg)
{
    uint32_t id = (uint32_t)(uintptr_t)arg, round, seq = 0, ops = 0, overlaps = 0;
    volatile uint32_t spin;
    uint32_t *held[STRESS_HOLD] = {NULL};
    uint32_t want[STRESS_HOLD] = {0};
    for (round = 0; round < STRESS_ROUNDS; round++) {
        unsigned slot = round % STRESS_HOLD;
        if (held[slot] != NULL) {
            overlaps += !stamped(held[slot], want[slot]);
            hk_pool_free(g_pool, held[slot]);
            ops++;
        }
        held[slot] = hk_pool_malloc(g_pool, BLOCK);
        ops++;
        if (held[slot] == NULL) {
            fail("stress: the pool ran out");
        }
        want[slot] = stamp_of(id, ++seq);
        stamp(held[slot], want[slot]);
        /* A varying pause, so that the tick lands at every point of the pool's calls. */
        for (spin = 0; spin < (round * 2654435761u ^ id * 40503u) % 97u; spin++) {
        }
        if (round % 7u == 0) {
            taskYIELD();
        }
    }
    for (round = 0; round < STRESS_HOLD; round++) {
        if (held[round] != NULL) {
            overlaps += !stamped(held[round], want[round]);
            hk_pool_free(g_pool, held[round]);
            ops++;
        }
    }
    taskENTER_CRITICAL();
    g_stress_ops += ops;
    g_stress_overlaps += overlaps;
    g_stress_left--;
    taskEXIT_CRITICAL();
    vTaskDelete(NULL);
}

/* The tasks preempt each other inside the pool's calls (interrupts on, time slicing); one JSON member. */
static void stress(void)
{
    size_t before = hk_pool_available(g_pool), after;
    uint32_t i;
    g_stress_left = STRESS_TASKS;
    for (i = 0; i < STRESS_TASKS; i++) {
        if (xTaskCreate(stress_task, "stress", configMINIMAL_STACK_SIZE, (void *)(uintptr_t)(i + 1u), 1, NULL) != pdPASS) {
            fail("xTaskCreate(stress)");
        }
    }
    while (g_stress_left > 0) {
        vTaskDelay(pdMS_TO_TICKS(10));
    }
    after = hk_pool_available(g_pool);
    printf(",\"stress\":{\"tasks\":%u,\"ops\":%lu,\"overlaps\":%lu,\"free_before\":%lu,\"free_after\":%lu}",
           (unsigned)STRESS_TASKS, (unsigned long)g_stress_ops, (unsigned long)g_stress_overlaps, (unsigned long)before,
           (unsigned long)after);
    if (g_stress_overlaps != 0 || after != before) {
        printf("}\n");
        fail("stress: a block was held by two tasks at once, or lost");
    }
}
#endif

static void monitor(void *arg)
{
    int i;
    (void)arg;
    calibrate();
    g_tickets = ITC_BLOCKS;
    for (i = 0; i < PRODUCERS; i++) {
        if (xTaskCreate(producer, "prod", configMINIMAL_STACK_SIZE, NULL, 2, NULL) != pdPASS) {
            fail("xTaskCreate(producer)");
        }
    }
    for (i = 0; i < CONSUMERS; i++) {
        if (xTaskCreate(consumer, "cons", configMINIMAL_STACK_SIZE, NULL, 2, NULL) != pdPASS) {
            fail("xTaskCreate(consumer)");
        }
    }
    while (g_producers_left > 0 || g_consumers_left > 0) {
        vTaskDelay(pdMS_TO_TICKS(10));
    }
    if (g_corrupt != 0 || g_live != 0 || g_alloc.n != ITC_BLOCKS || g_free.n != ITC_BLOCKS) {
        fail("corrupted or lost blocks");
    }
    printf("{\"type\":\"itc\",\"heap\":\"%s\",\"blocks\":%lu,\"block\":%u,\"live_max\":%lu,"
           "\"calibration\":{\"counter\":\"CMSDK timer 0\",\"empty_window\":%lu,\"reps\":%u,\"exact\":true},",
           HEAP_NAME, (unsigned long)ITC_BLOCKS, BLOCK, (unsigned long)g_live_max, (unsigned long)g_empty_insns,
           ITC_CAL_REPS);
    print_calls("alloc", &g_alloc);
    putchar(',');
    print_calls("free", &g_free);
#ifdef ITC_TRACE
    (void)hk_trace_drain(hk_trace_active);
    hk_trace_semihost_close(&g_trace_file);
    printf(",\"trace\":{\"records\":%lu,\"dropped\":%lu}", (unsigned long)hk_trace_active->records,
           (unsigned long)hk_trace_active->dropped);
    if (hk_trace_active->dropped != 0) {
        printf("}\n");
        fail("the recorder dropped records");
    }
#endif
#if defined(ITC_POOL)
    print_table3();
#endif
#if defined(ITC_STRESS)
    stress();
#endif
    printf("}\n");
    exit(0);
}

#ifdef ITC_TRACE
int main(int argc, char **argv)
#else
int main(void)
#endif
{
    hk_status_t st = HK_OK;
#ifdef ITC_TRACE
    hk_trace_config_t config;
    if (argc < 2 || hk_trace_semihost_open(&g_trace_file, argv[1]) != 0) {
        fail("usage: itc_trace.elf TRACE_FILE (the trace file must be writable on the host)");
    }
    memset(&config, 0, sizeof(config));
    config.policy = HK_TRACE_BLOCK;
    config.sink = hk_trace_semihost_sink;
    config.sink_ctx = &g_trace_file;
    config.stamp = trace_stamp;
    config.stamp_hz = configTICK_RATE_HZ;
    config.lock = trace_lock;
    config.unlock = trace_unlock;
    (void)hk_trace_init(g_trace_buffer, sizeof(g_trace_buffer), &config);
#endif
#if defined(ITC_POOL)
    g_pool = lab_fctma_pool(g_arena, sizeof(g_arena), BLOCK, &st);
    if (g_pool == NULL) {
        fail("the pool does not fit its arena");
    }
#if defined(ITC_HEAP_POOL_SYNC)
    g_pool_lock = xSemaphoreCreateMutex();
    g_sync.ctx = g_pool_lock;
    if (g_pool_lock == NULL || hk_pool_set_sync(g_pool, &g_sync) != HK_OK) {
        fail("the pool's lock and semaphore could not be attached");
    }
#endif
#elif defined(ITC_HEAP_SDMA)
    {
        void *chunk = pvPortMalloc(SDMA_CHUNK);
        g_sdma = chunk != NULL ? lab_sdma_init(chunk, SDMA_CHUNK, &st) : NULL;
        if (g_sdma == NULL) {
            fail("no chunk from heap_4 for SDMA");
        }
    }
#elif defined(ITC_HEAP_BUMP)
    g_bump = hk_bump_init(g_arena, sizeof(g_arena), &st);
    if (g_bump == NULL) {
        fail("the bump does not fit its arena");
    }
#endif
    (void)st;
    TIMER0_CTRL = 0;
    TIMER0_RELOAD = 0xFFFFFFFFu;
    TIMER0_VALUE = 0xFFFFFFFFu;
    TIMER0_CTRL = TIMER_ENABLE;
    g_queue = xQueueCreate(QUEUE_LEN, sizeof(unsigned char *));
    if (g_queue == NULL || xTaskCreate(monitor, "monitor", configMINIMAL_STACK_SIZE * 2, NULL, 3, NULL) != pdPASS) {
        fail("setup");
    }
    vTaskStartScheduler();
    fail("the scheduler returned");
    return 2;
}
