/* SPDX-License-Identifier: MIT */
/*
 * The fctma-pools seed's ITC benchmark on the real kernel: 10 producer and
 * 10 consumer tasks exchange 127-byte blocks (the largest IEEE 802.15.4
 * frame) through a real FreeRTOS queue. A producer allocates 20 blocks,
 * fills each with a pattern naming it (producer, sequence number) and sends
 * them; once 16 KB are allocated it sleeps a pseudo-random time from the
 * seed's generator, otherwise it yields. A consumer takes up to 10 blocks,
 * verifies every byte, frees them and waits a pseudo-random time.
 *
 * After RUN_TICKS ticks the producers stop, the consumers drain the queue,
 * all twenty tasks delete themselves, and the heap must be back where it was
 * before they were created (app_expect_back_to). Prints the live-block
 * average and the alloc/free times seen (wall clock: preemption included).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "FreeRTOS.h"
#include "queue.h"
#include "task.h"
#include "app.h"

#define PRODUCERS 10
#define CONSUMERS 10
#define BLOCK 127u
#define BURST 20
#define TAKE 10
#define LIMIT_BYTES (16u * 1024u)
#define MAX_TIME_PRODUCER 20ul
#define MAX_TIME_CONSUMER 4ul
#define QUEUE_LEN 512
#define RUN_TICKS 3000u

static QueueHandle_t g_queue;
static volatile int g_stop;
static volatile int g_producers_left = PRODUCERS;
static volatile int g_consumers_left = CONSUMERS;
static volatile size_t g_live_bytes;
static volatile unsigned long g_blocks_done;
static volatile unsigned long g_corrupt;
static uint64_t g_live_sum;
static uint64_t g_live_samples;

/* Per-operation times, kept by whoever holds the scheduler lock. */
typedef struct times {
    uint64_t n;
    uint64_t min;
    uint64_t max;
    uint64_t sum;
} times_t;
static times_t g_alloc_t = {0, UINT64_MAX, 0, 0};
static times_t g_free_t = {0, UINT64_MAX, 0, 0};

static void note_time(times_t *t, uint64_t ns)
{
    taskENTER_CRITICAL();
    t->n++;
    t->sum += ns;
    t->min = ns < t->min ? ns : t->min;
    t->max = ns > t->max ? ns : t->max;
    taskEXIT_CRITICAL();
}

static unsigned char pattern(unsigned id, uint32_t seq, unsigned i) { return (unsigned char)(id * 131u + seq * 7u + i * 29u + 1u); }

static void fill(unsigned char *b, unsigned id, uint32_t seq)
{
    unsigned i;
    b[0] = (unsigned char)id;
    memcpy(b + 1, &seq, sizeof(seq));
    for (i = 5; i < BLOCK; i++) {
        b[i] = pattern(id, seq, i);
    }
}

static int intact(const unsigned char *b)
{
    uint32_t seq;
    unsigned i;
    if (((uintptr_t)b & portBYTE_ALIGNMENT_MASK) != 0 || b[0] >= PRODUCERS) {
        return 0;
    }
    memcpy(&seq, b + 1, sizeof(seq));
    for (i = 5; i < BLOCK; i++) {
        if (b[i] != pattern(b[0], seq, i)) {
            return 0;
        }
    }
    return 1;
}

static void producer(void *arg)
{
    unsigned id = (unsigned)(uintptr_t)arg;
    uint32_t seq = 0;
    while (!g_stop) {
        int i;
        for (i = 0; i < BURST && !g_stop; i++) {
            uint64_t t0 = app_now_ns();
            unsigned char *b = pvPortMalloc(BLOCK);
            note_time(&g_alloc_t, app_now_ns() - t0);
            if (b == NULL) {
                app_fail("producer: pvPortMalloc(127) returned NULL");
            }
            fill(b, id, seq++);
            taskENTER_CRITICAL();
            g_live_bytes += BLOCK;
            taskEXIT_CRITICAL();
            while (xQueueSend(g_queue, &b, pdMS_TO_TICKS(10)) != pdPASS) {
                /* The queue is full: the consumers are behind; keep trying (they always drain). */
            }
        }
        if (g_live_bytes >= LIMIT_BYTES) {
            vTaskDelay(app_lcg(MAX_TIME_PRODUCER) + 1u);
        } else {
            taskYIELD();
        }
    }
    taskENTER_CRITICAL();
    g_producers_left--;
    taskEXIT_CRITICAL();
    vTaskDelete(NULL);
}

static void consumer(void *arg)
{
    (void)arg;
    for (;;) {
        unsigned char *b;
        int got = 0;
        while (got < TAKE && xQueueReceive(g_queue, &b, got == 0 ? pdMS_TO_TICKS(5) : 0) == pdPASS) {
            uint64_t t0;
            got++;
            if (!intact(b)) {
                g_corrupt++;
            }
            t0 = app_now_ns();
            vPortFree(b);
            note_time(&g_free_t, app_now_ns() - t0);
            taskENTER_CRITICAL();
            g_live_bytes -= BLOCK;
            g_blocks_done++;
            taskEXIT_CRITICAL();
        }
        if (got == 0 && g_stop && g_producers_left == 0 && uxQueueMessagesWaiting(g_queue) == 0) {
            break;
        }
        vTaskDelay(app_lcg(MAX_TIME_CONSUMER));
    }
    taskENTER_CRITICAL();
    g_consumers_left--;
    taskEXIT_CRITICAL();
    vTaskDelete(NULL);
}

static void monitor(void *arg)
{
    app_mark_t start;
    int i;
    (void)arg;
    app_mark(&start);
    for (i = 0; i < PRODUCERS; i++) {
        if (xTaskCreate(producer, "prod", configMINIMAL_STACK_SIZE, (void *)(uintptr_t)i, 2, NULL) != pdPASS) {
            app_fail("xTaskCreate(producer)");
        }
    }
    for (i = 0; i < CONSUMERS; i++) {
        if (xTaskCreate(consumer, "cons", configMINIMAL_STACK_SIZE, NULL, 2, NULL) != pdPASS) {
            app_fail("xTaskCreate(consumer)");
        }
    }
    while (xTaskGetTickCount() < RUN_TICKS) {
        vTaskDelay(pdMS_TO_TICKS(10));
        g_live_sum += g_live_bytes / BLOCK;
        g_live_samples++;
        if (g_corrupt != 0) {
            app_fail("a consumer found a corrupted block");
        }
    }
    g_stop = 1;
    while (g_producers_left > 0 || g_consumers_left > 0) {
        vTaskDelay(pdMS_TO_TICKS(10));
        if (xTaskGetTickCount() > 4u * RUN_TICKS) {
            app_fail("tasks did not finish");
        }
    }
    /*
     * Let the idle task free the deleted tasks' memory, and finish: it joins
     * their pthreads after the task count drops (POSIX port).
     */
    while (uxTaskGetNumberOfTasks() > start.tasks && xTaskGetTickCount() < 5u * RUN_TICKS) {
        vTaskDelay(pdMS_TO_TICKS(5));
    }
    vTaskDelay(pdMS_TO_TICKS(20));
    if (g_corrupt != 0 || g_live_bytes != 0) {
        app_fail("corrupted or lost blocks");
    }
    printf("itc[%s]: %lu blocks of 127 bytes through the queue, %.1f blocks live on average\n", app_heap_name(),
           g_blocks_done, g_live_samples ? (double)g_live_sum / (double)g_live_samples : 0.0);
    printf("itc[%s]: alloc ns min %llu avg %llu max %llu; free ns min %llu avg %llu max %llu (wall clock)\n",
           app_heap_name(), (unsigned long long)g_alloc_t.min,
           (unsigned long long)(g_alloc_t.n ? g_alloc_t.sum / g_alloc_t.n : 0), (unsigned long long)g_alloc_t.max,
           (unsigned long long)g_free_t.min, (unsigned long long)(g_free_t.n ? g_free_t.sum / g_free_t.n : 0),
           (unsigned long long)g_free_t.max);
    app_expect_back_to(&start, "after the run");
    if (g_blocks_done < 1000) {
        app_fail("too few blocks went through");
    }
    app_exit(0, "passed");
}

int main(int argc, char **argv)
{
    app_start(argc, argv, "itc");
    g_queue = xQueueCreate(QUEUE_LEN, sizeof(unsigned char *));
    if (g_queue == NULL || xTaskCreate(monitor, "monitor", configMINIMAL_STACK_SIZE, NULL, 5, NULL) != pdPASS) {
        app_fail("setup");
    }
    vTaskStartScheduler();
    app_fail("scheduler returned");
    return 2;
}
