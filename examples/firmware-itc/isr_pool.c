/* SPDX-License-Identifier: MIT */
/*
 * The fctma-pools seed's future work on the real kernel: a pool that an
 * interrupt handler can use while tasks use it too. heapkit's lfpool
 * (src/pool_lockfree.c) under a real interrupt on QEMU mps2-an385:
 *
 *   - TASKS tasks of equal priority (FreeRTOS time-slices them on SysTick)
 *     each loop: allocate a block, claim it, stamp it, check and free the
 *     block it allocated HOLD rounds earlier;
 *   - the CMSDK APB timer 1 interrupt (IRQ 9, the highest priority, above
 *     the kernel's critical sections, so it lands anywhere in a task's
 *     pool call) does the same with its own blocks, ISR_OPS times per
 *     interrupt, and counts each of its calls in instructions;
 *   - a claim swaps the holder's id into the block's entry of an ownership
 *     table (an atomic exchange): a block already claimed is a block handed
 *     out twice; a stamp (the holder and a sequence number in every word)
 *     that changed before the free is an overlap; at the end every block
 *     must be free again (the pool's own count and its check()).
 * The run stops after OPS_TARGET operations (tasks and ISR together).
 *
 * ISR_POOL_RACE builds the same harness on heapkit's plain pool (pool.c,
 * no lock): the control that shows these checks catch what an unsafe pool
 * does under the interrupt.
 *
 * Counting: as app.c, the window of lab/target/measure_m3.S on the CMSDK
 * timer 0, calibrated in the running kernel before the run; nothing
 * preempts the ISR, so its counts are exact.
 *
 * Prints one JSON line {"type":"isr", ...}. Exit status: 0 done; 2 a check
 * failed (a block handed out twice, overwritten, lost, the calibration).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "FreeRTOS.h"
#include "task.h"

#include "heapkit/pool.h"
#include "icount.h"

#define TASKS 3
#define HOLD 8
#define ISR_HOLD 16
#define ISR_OPS 2
#define BLOCK 64u
#define BLOCKS 160u
#define OPS_TARGET 1000000u
#define ISR_ID (TASKS + 1u)
/* Timer 1 interrupts about every 1,500 instructions (it counts 3.2 ticks per instruction under -icount shift=7). */
#define ISR_PERIOD_TICKS 4800u
#define CAL_REPS 200u

#define TIMER0 0x40000000u
#define TIMER1 0x40001000u
#define REG(a) (*(volatile uint32_t *)(a))
#define T_CTRL 0x0u
#define T_VALUE 0x4u
#define T_RELOAD 0x8u
#define T_INTCLEAR 0xCu
#define T_ENABLE 1u
#define T_IRQ_ENABLE 8u
#define TIMER1_IRQ 9u
#define NVIC_ISER0 0xE000E100u
#define NVIC_ICER0 0xE000E180u
#define NVIC_IPR 0xE000E400u
#define SCB_VTOR 0xE000ED08u

#ifdef ISR_POOL_RACE
#define POOL_NAME "pool (no lock)"
static hk_pool_t *g_pool;
#define POOL_ALLOC() hk_pool_malloc(g_pool, BLOCK)
#define POOL_FREE(p) hk_pool_free(g_pool, (p))
#define POOL_ALLOC_FN ((const void *)hk_pool_malloc)
#define POOL_FREE_FN ((const void *)hk_pool_free)
#define POOL_HEAP() hk_pool_heap(g_pool)
#else
#define POOL_NAME "lfpool"
static hk_lfpool_t *g_pool;
#define POOL_ALLOC() hk_lfpool_malloc(g_pool, BLOCK)
#define POOL_FREE(p) hk_lfpool_free(g_pool, (p))
#define POOL_ALLOC_FN ((const void *)hk_lfpool_malloc)
#define POOL_FREE_FN ((const void *)hk_lfpool_free)
#define POOL_HEAP() hk_lfpool_heap(g_pool)
#endif

static uint8_t g_arena[BLOCKS * (BLOCK + 16u) + 512u] __attribute__((aligned(8)));
static uint8_t *g_lo, *g_hi;           /* where blocks can be: the arena */
static size_t g_blocks;               /* free blocks before the run */
static uint32_t g_owner[BLOCKS * 2u]; /* claim table, by block address / BLOCK (wider than the pool) */
static volatile uint32_t g_ops;
static volatile uint32_t g_twice, g_overlap, g_empty_pool, g_foreign;
static volatile uint32_t g_in_call;      /* tasks inside a pool call now */
static volatile uint32_t g_isr_inside;   /* interrupts that landed inside a task's pool call */
static volatile int g_tasks_left = TASKS;
static uint32_t g_empty_insns;

typedef struct isr_calls {
    uint32_t count, min, max;
    uint64_t sum;
} isr_calls_t;
static isr_calls_t g_isr_alloc = {0, 0xFFFFFFFFu, 0, 0}, g_isr_free = {0, 0xFFFFFFFFu, 0, 0};
static uint32_t *g_isr_held[ISR_HOLD];
static uint32_t g_isr_want[ISR_HOLD];
static uint32_t g_isr_round;

/* The exception table in RAM: the board's 16 entries and the external interrupts (VTOR moves here). */
static void (*g_vectors[64])(void) __attribute__((aligned(256)));

void app_assert_failed(const char *file, int line)
{
    printf("configASSERT failed at %s:%d\n", file, line);
    exit(5);
}

void vApplicationMallocFailedHook(void)
{
    printf("isr[%s]: the kernel's heap is exhausted\n", POOL_NAME);
    exit(3);
}

static void fail(const char *what)
{
    printf("isr[%s]: %s\n", POOL_NAME, what);
    exit(2);
}

static uint32_t insns_of(uint32_t ticks) { return (ticks * 5u + 8u) / 16u; }

static uint32_t measured(const void *fn, uintptr_t a0, uintptr_t a1, uintptr_t *ret)
{
    uint32_t raw = tgt_measure(fn, a0, a1, 0);
    if (ret != NULL) {
        *ret = tgt_measure_result;
    }
    return insns_of(raw) - g_empty_insns - 1u;
}

static void calibrate(void)
{
    uint32_t i;
    __asm__ volatile("cpsid i" ::: "memory");
    g_empty_insns = insns_of(tgt_measure_empty());
    for (i = 0; i < CAL_REPS; i++) {
        if (insns_of(tgt_measure_empty()) != g_empty_insns || measured((const void *)tgt_cal_nop, 0, 0, NULL) != 1u ||
            measured((const void *)tgt_cal_1000, 0, 0, NULL) != 1000u) {
            fail("calibration: a known-length callee was not counted exactly");
        }
    }
    __asm__ volatile("cpsie i" ::: "memory");
}

static void note(isr_calls_t *c, uint32_t n)
{
    c->count++;
    c->sum += n;
    c->min = n < c->min ? n : c->min;
    c->max = n > c->max ? n : c->max;
}

static uint32_t *slot_of(const void *p)
{
    if ((const uint8_t *)p < g_lo || (const uint8_t *)p >= g_hi) {
        g_foreign++;
        return NULL;
    }
    return &g_owner[((const uint8_t *)p - g_lo) / BLOCK];
}

/* Take the block for holder id: it must have had no holder. */
static void claim(uint32_t *b, uint32_t id, uint32_t want)
{
    uint32_t *slot = slot_of(b);
    unsigned k;
    if (slot != NULL && __atomic_exchange_n(slot, id, __ATOMIC_SEQ_CST) != 0) {
        g_twice++;
    }
    for (k = 0; k < BLOCK / 4u; k++) {
        b[k] = want;
    }
}

/* Check the stamp and give the block up: it must still be id's. */
static void release(uint32_t *b, uint32_t id, uint32_t want)
{
    uint32_t *slot = slot_of(b);
    unsigned k;
    for (k = 0; k < BLOCK / 4u; k++) {
        if (b[k] != want) {
            g_overlap++;
            break;
        }
    }
    if (slot != NULL && __atomic_exchange_n(slot, 0u, __ATOMIC_SEQ_CST) != id) {
        g_twice++;
    }
}

static uint32_t stamp_of(uint32_t id, uint32_t seq) { return (id << 24) ^ seq ^ 0xA5C3u; }

static void ops_add(uint32_t n) { __atomic_fetch_add(&g_ops, n, __ATOMIC_RELAXED); }

/* Timer 1: free the block of this slot (allocated ISR_HOLD rounds ago) and allocate one, each call counted. */
static void timer1_isr(void)
{
    unsigned i;
    REG(TIMER1 + T_INTCLEAR) = 1u;
    if (g_in_call != 0) {
        g_isr_inside++;
    }
    for (i = 0; i < ISR_OPS; i++) {
        unsigned slot = g_isr_round++ % ISR_HOLD;
        uintptr_t got;
        if (g_isr_held[slot] != NULL) {
            release(g_isr_held[slot], ISR_ID, g_isr_want[slot]);
            note(&g_isr_free, measured(POOL_FREE_FN, (uintptr_t)g_pool, (uintptr_t)g_isr_held[slot], NULL));
            g_isr_held[slot] = NULL;
        }
        note(&g_isr_alloc, measured(POOL_ALLOC_FN, (uintptr_t)g_pool, BLOCK, &got));
        if (got == 0) {
            g_empty_pool++;
        } else {
            g_isr_held[slot] = (uint32_t *)got;
            g_isr_want[slot] = stamp_of(ISR_ID, g_isr_round);
            claim(g_isr_held[slot], ISR_ID, g_isr_want[slot]);
        }
    }
    ops_add(2u * ISR_OPS);
}

static void worker(void *arg)
{
    uint32_t id = (uint32_t)(uintptr_t)arg, round = 0;
    uint32_t *held[HOLD] = {NULL};
    uint32_t want[HOLD] = {0};
    while (g_ops < OPS_TARGET) {
        unsigned slot = round % HOLD;
        if (held[slot] != NULL) {
            release(held[slot], id, want[slot]);
            __atomic_fetch_add(&g_in_call, 1u, __ATOMIC_RELAXED);
            POOL_FREE(held[slot]);
            __atomic_fetch_sub(&g_in_call, 1u, __ATOMIC_RELAXED);
        }
        __atomic_fetch_add(&g_in_call, 1u, __ATOMIC_RELAXED);
        held[slot] = POOL_ALLOC();
        __atomic_fetch_sub(&g_in_call, 1u, __ATOMIC_RELAXED);
        if (held[slot] == NULL) {
            g_empty_pool++;
        } else {
            want[slot] = stamp_of(id, ++round);
            claim(held[slot], id, want[slot]);
        }
        ops_add(2u);
    }
    for (round = 0; round < HOLD; round++) {
        if (held[round] != NULL) {
            release(held[round], id, want[round]);
            POOL_FREE(held[round]);
        }
    }
    taskENTER_CRITICAL();
    g_tasks_left--;
    taskEXIT_CRITICAL();
    vTaskDelete(NULL);
}

static void count_free(void *ctx, const hk_block_info_t *b)
{
    if (!b->used) {
        (*(size_t *)ctx)++;
    }
}

static void monitor(void *arg)
{
    uint32_t i, claimed = 0;
    size_t free_end = 0;
    hk_stats_t st;
    hk_check_t rc;
    (void)arg;
    calibrate();
    for (i = 0; i < TASKS; i++) {
        if (xTaskCreate(worker, "worker", configMINIMAL_STACK_SIZE, (void *)(uintptr_t)(i + 1u), 1, NULL) != pdPASS) {
            fail("xTaskCreate(worker)");
        }
    }
    REG(TIMER1 + T_CTRL) = 0;
    REG(TIMER1 + T_RELOAD) = ISR_PERIOD_TICKS;
    REG(TIMER1 + T_VALUE) = ISR_PERIOD_TICKS;
    REG(TIMER1 + T_CTRL) = T_ENABLE | T_IRQ_ENABLE;
    while (g_tasks_left > 0) {
        vTaskDelay(pdMS_TO_TICKS(20));
    }
    REG(TIMER1 + T_CTRL) = 0;
    REG(NVIC_ICER0) = 1u << TIMER1_IRQ;
    for (i = 0; i < ISR_HOLD; i++) {
        if (g_isr_held[i] != NULL) {
            release(g_isr_held[i], ISR_ID, g_isr_want[i]);
            POOL_FREE(g_isr_held[i]);
        }
    }
    for (i = 0; i < sizeof(g_owner) / sizeof(g_owner[0]); i++) {
        claimed += g_owner[i] != 0;
    }
    hk_walk(POOL_HEAP(), count_free, &free_end);
    hk_get_stats(POOL_HEAP(), &st);
    rc = hk_check(POOL_HEAP());
    printf("{\"type\":\"isr\",\"pool\":\"%s\",\"block\":%u,\"blocks\":%lu,\"tasks\":%u,\"ops\":%lu,"
           "\"isr_inside_task_call\":%lu,\"twice\":%lu,\"overlap\":%lu,\"foreign\":%lu,\"empty\":%lu,"
           "\"still_claimed\":%lu,\"free_end\":%lu,\"used_end\":%lu,\"check\":%d,",
           POOL_NAME, BLOCK, (unsigned long)g_blocks, (unsigned)TASKS, (unsigned long)g_ops,
           (unsigned long)g_isr_inside, (unsigned long)g_twice, (unsigned long)g_overlap, (unsigned long)g_foreign,
           (unsigned long)g_empty_pool, (unsigned long)claimed, (unsigned long)free_end, (unsigned long)st.used_blocks,
           (int)rc);
    printf("\"isr_alloc\":{\"count\":%lu,\"min\":%lu,\"max\":%lu,\"sum\":%llu},"
           "\"isr_free\":{\"count\":%lu,\"min\":%lu,\"max\":%lu,\"sum\":%llu}}\n",
           (unsigned long)g_isr_alloc.count, (unsigned long)g_isr_alloc.min, (unsigned long)g_isr_alloc.max,
           (unsigned long long)g_isr_alloc.sum, (unsigned long)g_isr_free.count, (unsigned long)g_isr_free.min,
           (unsigned long)g_isr_free.max, (unsigned long long)g_isr_free.sum);
    if (g_twice != 0 || g_overlap != 0 || g_foreign != 0 || claimed != 0 || free_end != g_blocks ||
        st.used_blocks != 0 || rc != HK_CHECK_OK) {
        fail("a block was handed out twice, overwritten or lost");
    }
    exit(0);
}

int main(void)
{
    hk_status_t st = HK_OK;
    uint32_t i;
#ifdef ISR_POOL_RACE
    g_pool = hk_pool_init(g_arena, sizeof(g_arena), BLOCK, &st);
#else
    g_pool = hk_lfpool_init(g_arena, sizeof(g_arena), BLOCK, &st);
#endif
    if (g_pool == NULL) {
        fail("the pool does not fit its arena");
    }
    g_lo = g_arena;
    g_hi = g_arena + sizeof(g_arena);
    hk_walk(POOL_HEAP(), count_free, &g_blocks);
    for (i = 0; i < 16u; i++) {
        g_vectors[i] = ((void (**)(void))0)[i];
    }
    g_vectors[16u + TIMER1_IRQ] = timer1_isr;
    REG(SCB_VTOR) = (uint32_t)(uintptr_t)g_vectors;
    *(volatile uint8_t *)(NVIC_IPR + TIMER1_IRQ) = 0; /* above configMAX_SYSCALL_INTERRUPT_PRIORITY */
    REG(NVIC_ISER0) = 1u << TIMER1_IRQ;
    REG(TIMER0 + T_CTRL) = 0;
    REG(TIMER0 + T_RELOAD) = 0xFFFFFFFFu;
    REG(TIMER0 + T_VALUE) = 0xFFFFFFFFu;
    REG(TIMER0 + T_CTRL) = T_ENABLE;
    if (xTaskCreate(monitor, "monitor", configMINIMAL_STACK_SIZE * 2, NULL, 3, NULL) != pdPASS) {
        fail("setup");
    }
    vTaskStartScheduler();
    fail("the scheduler returned");
    return 2;
}
