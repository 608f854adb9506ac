/* SPDX-License-Identifier: MIT */
/*
 * Replays the records in ops.h (written by lab/tests/test_advise.py from the
 * first records of a trace) on the heap a heapkit advise snippet configures,
 * and exits 1 when an allocation failed. Built two ways:
 *
 *   plain            the C snippet's app_heap_init() and the uniform API
 *                    (hk_malloc, hk_calloc, hk_aligned_alloc, hk_realloc, hk_free);
 *   -DADV_FREERTOS   the FreeRTOS snippet: pvPortMalloc, pvPortCalloc,
 *                    pvPortRealloc (heapkit's heap files), vPortFree, called
 *                    from a task of the real kernel (POSIX port) whose own
 *                    memory is static, so the heap holds only the trace's blocks.
 *
 * The records follow the replay engine's rules (lab/engine/replay.c): a
 * failed allocation leaves its id empty and its free is skipped, a realloc
 * of an empty id is a malloc, a failed realloc frees the old block.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "ops.h"

#ifdef ADV_FREERTOS
#include "FreeRTOS.h"
#include "task.h"

void *pvPortRealloc(void *pv, size_t xWantedSize);

#define ADV_MALLOC(n) pvPortMalloc(n)
#define ADV_CALLOC(k, n) pvPortCalloc((k), (n))
#define ADV_REALLOC(p, n) pvPortRealloc((p), (n))
#define ADV_FREE(p) vPortFree(p)
/* portBYTE_ALIGNMENT is what every FreeRTOS block has; the kernel's API has no aligned allocation. */
#define ADV_ALIGNED(a, n) ((a) <= portBYTE_ALIGNMENT ? pvPortMalloc(n) : NULL)
#define ADV_ZERO_IS_NULL 1 /* pvPortMalloc(0) returns NULL by design */
#else
#include "heapkit/heapkit.h"

hk_heap_t *app_heap_init(void);

static hk_heap_t *heap;

#define ADV_MALLOC(n) hk_malloc(heap, (n))
#define ADV_CALLOC(k, n) hk_calloc(heap, (k), (n))
#define ADV_REALLOC(p, n) hk_realloc(heap, (p), (n))
#define ADV_FREE(p) hk_free(heap, (p))
#define ADV_ALIGNED(a, n) hk_aligned_alloc(heap, (a), (n))
#define ADV_ZERO_IS_NULL 0
#endif

static void *ptrs[ADV_N_IDS];

/* The number of failed allocations. */
static unsigned long replay(void)
{
    unsigned long failures = 0;
    size_t i;
    for (i = 0; i < ADV_N_OPS; i++) {
        const adv_op_t *o = &adv_ops[i];
        void *p = NULL;
        switch (o->op) {
        case 'm':
            p = ADV_MALLOC(o->size);
            break;
        case 'c':
            p = ADV_CALLOC(o->aux, o->size);
            break;
        case 'a':
            p = ADV_ALIGNED(o->aux, o->size);
            break;
        case 'r':
            if (o->aux == ADV_NULL || ptrs[o->aux] == NULL) {
                p = ADV_MALLOC(o->size);
            } else {
                p = ADV_REALLOC(ptrs[o->aux], o->size);
                if (p == NULL) {
                    ADV_FREE(ptrs[o->aux]);
                }
                ptrs[o->aux] = NULL;
            }
            break;
        default:
            ADV_FREE(ptrs[o->id]);
            ptrs[o->id] = NULL;
            continue;
        }
        ptrs[o->id] = p;
        if (p == NULL && !(ADV_ZERO_IS_NULL && (o->size == 0 || (o->op == 'c' && o->aux == 0)))) {
            failures++;
        }
    }
    return failures;
}

static int report(unsigned long failures)
{
    printf("replayed %lu records, %lu failed allocations\n", (unsigned long)ADV_N_OPS, failures);
    fflush(stdout);
    return failures != 0;
}

#ifdef ADV_FREERTOS
static StaticTask_t task_tcb;
static StackType_t task_stack[8 * configMINIMAL_STACK_SIZE];

static void replay_task(void *arg)
{
    (void)arg;
    _exit(report(replay()));
}

void vApplicationMallocFailedHook(void) {}

void adv_assert_failed(const char *file, int line)
{
    printf("configASSERT failed at %s:%d\n", file, line);
    fflush(stdout);
    _exit(3);
}

int main(void)
{
    xTaskCreateStatic(replay_task, "replay", sizeof task_stack / sizeof task_stack[0], NULL, 1, task_stack,
                      &task_tcb);
    vTaskStartScheduler();
    return 4;
}
#else
int main(void)
{
    heap = app_heap_init();
    if (heap == NULL) {
        printf("app_heap_init() returned NULL\n");
        return 2;
    }
    return report(replay());
}
#endif
