/* SPDX-License-Identifier: MIT */
/*
 * Task churn, software timers and queues on the real kernel. Rounds of six
 * worker tasks, each created with a pseudo-random stack depth and priority,
 * until RUN_TICKS: a worker
 *   - creates a queue of random length and item size, fills it with
 *     numbered items and reads them back, checking every byte;
 *   - allocates blocks of random sizes (pvPortMalloc with a pattern,
 *     pvPortCalloc checked to be zero, pvPortRealloc growing a block and
 *     checking its prefix where the heap has it), checks and frees them;
 *   - creates a one-shot and an auto-reload software timer, waits for the
 *     one-shot's notification and three auto-reload periods, deletes both;
 *   - tells the monitor and suspends itself; the monitor deletes it.
 * At the end the heap must be back where it was before the first round.
 *
 * Why the monitor deletes every worker, inside a critical section: on the
 * POSIX port a deleted task's pthread is joined (and its stack unmapped) by
 * whoever frees the TCB, with the tick signal unblocked. A self-deleted
 * task is freed by the idle task, which the tick can then suspend while it
 * holds glibc's thread-stack lock; the next xTaskCreate (pthread_create)
 * waits for that lock forever. Blocking the tick signal around the delete
 * (taskENTER_CRITICAL) and creating and deleting from one task only avoids
 * it; self-deletion is exercised by the ITC application.
 */
#include <stdio.h>
#include <string.h>

#include "FreeRTOS.h"
#include "queue.h"
#include "task.h"
#include "timers.h"
#include "app.h"

#define WORKERS 6
#define RUN_TICKS 3000u
#define BLOCKS 24

static TaskHandle_t g_monitor;
static volatile unsigned long g_rounds;
static volatile unsigned long g_tasks_made;
static volatile unsigned long g_timer_fires;

typedef struct worker_arg {
    unsigned long seed;
    TaskHandle_t handle;
} worker_arg_t;

static worker_arg_t g_args[WORKERS];

static unsigned char pattern(unsigned long tag, size_t i) { return (unsigned char)(tag * 13u + i * 7u + 3u); }

static void fill(unsigned char *p, size_t n, unsigned long tag)
{
    size_t i;
    for (i = 0; i < n; i++) {
        p[i] = pattern(tag, i);
    }
}

static void expect_fill(const unsigned char *p, size_t n, unsigned long tag, const char *what)
{
    size_t i;
    if (((uintptr_t)p & portBYTE_ALIGNMENT_MASK) != 0) {
        app_fail("misaligned block");
    }
    for (i = 0; i < n; i++) {
        if (p[i] != pattern(tag, i)) {
            app_fail(what);
        }
    }
}

static void one_shot(TimerHandle_t t) { xTaskNotifyGive((TaskHandle_t)pvTimerGetTimerID(t)); }

static void reload(TimerHandle_t t)
{
    (void)t;
    taskENTER_CRITICAL();
    g_timer_fires++;
    taskEXIT_CRITICAL();
}

static void queue_round_trip(unsigned long *seed)
{
    UBaseType_t len = (UBaseType_t)app_lcg_r(seed, 16) + 1u;
    size_t item = (size_t)app_lcg_r(seed, 57) + 8u;
    unsigned char buf[64];
    QueueHandle_t q = xQueueCreate(len, item);
    UBaseType_t i;
    if (q == NULL) {
        app_fail("xQueueCreate");
    }
    for (i = 0; i < len; i++) {
        fill(buf, item, *seed + i);
        if (xQueueSend(q, buf, 0) != pdPASS) {
            app_fail("xQueueSend to a queue with room");
        }
    }
    for (i = 0; i < len; i++) {
        memset(buf, 0, sizeof(buf));
        if (xQueueReceive(q, buf, 0) != pdPASS) {
            app_fail("xQueueReceive from a full queue");
        }
        expect_fill(buf, item, *seed + i, "queue item changed");
    }
    vQueueDelete(q);
}

static void blocks_round_trip(unsigned long *seed)
{
    unsigned char *b[BLOCKS];
    size_t n[BLOCKS];
    int i;
    for (i = 0; i < BLOCKS; i++) {
        n[i] = (size_t)app_lcg_r(seed, 3000) + 1u;
        if (i % 4 == 1) {
            size_t k;
            b[i] = pvPortCalloc(n[i], 1);
            if (b[i] == NULL) {
                app_fail("pvPortCalloc returned NULL");
            }
            for (k = 0; k < n[i]; k++) {
                if (b[i][k] != 0) {
                    app_fail("pvPortCalloc block not zeroed");
                }
            }
        } else {
            b[i] = pvPortMalloc(n[i]);
            if (b[i] == NULL) {
                app_fail("pvPortMalloc returned NULL");
            }
        }
        fill(b[i], n[i], (unsigned long)i + n[i]);
    }
    if (app_heap_has_realloc()) {
        for (i = 0; i < BLOCKS; i += 3) {
            size_t grown = n[i] + (size_t)app_lcg_r(seed, 2000) + 1u;
            unsigned char *p = app_heap_realloc(b[i], grown);
            if (p == NULL) {
                app_fail("pvPortRealloc returned NULL");
            }
            expect_fill(p, n[i], (unsigned long)i + n[i], "pvPortRealloc lost the prefix");
            b[i] = p;
        }
    }
    for (i = 0; i < BLOCKS; i++) {
        expect_fill(b[i], n[i], (unsigned long)i + n[i], "block changed while live");
        vPortFree(b[i]);
    }
}

static void timers_round_trip(unsigned long *seed)
{
    TickType_t period = (TickType_t)app_lcg_r(seed, 5) + 1u;
    TimerHandle_t once = xTimerCreate("once", period, pdFALSE, xTaskGetCurrentTaskHandle(), one_shot);
    TimerHandle_t again = xTimerCreate("again", 1, pdTRUE, NULL, reload);
    unsigned long fires;
    if (once == NULL || again == NULL) {
        app_fail("xTimerCreate");
    }
    fires = g_timer_fires;
    if (xTimerStart(once, portMAX_DELAY) != pdPASS || xTimerStart(again, portMAX_DELAY) != pdPASS) {
        app_fail("xTimerStart");
    }
    if (ulTaskNotifyTake(pdTRUE, pdMS_TO_TICKS(500)) == 0) {
        app_fail("one-shot timer never fired");
    }
    while (g_timer_fires < fires + 3u) {
        vTaskDelay(1);
    }
    if (xTimerDelete(once, portMAX_DELAY) != pdPASS || xTimerDelete(again, portMAX_DELAY) != pdPASS) {
        app_fail("xTimerDelete");
    }
}

static void worker(void *arg)
{
    /* A copy: the monitor reuses the argument for the next round once every worker has notified it. */
    worker_arg_t w = *(const worker_arg_t *)arg;
    queue_round_trip(&w.seed);
    blocks_round_trip(&w.seed);
    timers_round_trip(&w.seed);
    xTaskNotifyGive(g_monitor);
    vTaskSuspend(NULL);
    app_fail("a suspended worker ran again");
}

static void monitor(void *arg)
{
    app_mark_t start;
    app_mark_t now;
    int i;
    (void)arg;
    app_mark(&start);
    while (xTaskGetTickCount() < RUN_TICKS) {
        for (i = 0; i < WORKERS; i++) {
            configSTACK_DEPTH_TYPE depth = (configSTACK_DEPTH_TYPE)(configMINIMAL_STACK_SIZE + app_lcg(256));
            UBaseType_t prio = (UBaseType_t)app_lcg(3) + 1u;
            g_args[i].seed = g_rounds * 1000u + (unsigned long)i + 1u;
            if (xTaskCreate(worker, "worker", depth, &g_args[i], prio, &g_args[i].handle) != pdPASS) {
                app_fail("xTaskCreate(worker)");
            }
            g_tasks_made++;
        }
        for (i = 0; i < WORKERS; i++) {
            if (ulTaskNotifyTake(pdFALSE, pdMS_TO_TICKS(2000)) == 0) {
                app_fail("a worker did not finish");
            }
        }
        for (i = 0; i < WORKERS; i++) {
            while (eTaskGetState(g_args[i].handle) != eSuspended) {
                vTaskDelay(1);
            }
            taskENTER_CRITICAL();
            vTaskDelete(g_args[i].handle);
            taskEXIT_CRITICAL();
        }
        g_rounds++;
        if (app_heap_check() != 0) {
            app_fail("heap check failed between rounds");
        }
    }
    /* The timer task frees deleted timers: wait for it. */
    for (i = 0; i < 500; i++) {
        app_mark(&now);
        if (now.tasks == start.tasks && now.stats.xAvailableHeapSpaceInBytes == start.stats.xAvailableHeapSpaceInBytes) {
            break;
        }
        vTaskDelay(1);
    }
    printf("churn[%s]: %lu rounds, %lu tasks created and deleted, %lu auto-reload timer periods\n", app_heap_name(),
           g_rounds, g_tasks_made, g_timer_fires);
    app_expect_back_to(&start, "after the churn");
    if (g_rounds < 10) {
        app_fail("too few rounds");
    }
    app_exit(0, "passed");
}

int main(int argc, char **argv)
{
    app_start(argc, argv, "churn");
    if (xTaskCreate(monitor, "monitor", configMINIMAL_STACK_SIZE, NULL, 5, &g_monitor) != pdPASS) {
        app_fail("setup");
    }
    vTaskStartScheduler();
    app_fail("scheduler returned");
    return 2;
}
