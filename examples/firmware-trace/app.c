/* SPDX-License-Identifier: MIT */
/*
 * A small FreeRTOS firmware whose heap use the recorder (ports/trace/)
 * traces: a producer sends messages through a queue to a consumer, which
 * parses each into a scratch buffer; a sensor task keeps a window of
 * samples; a software timer does housekeeping. record_calibration() leaks
 * one block on every tenth sample: the deliberate leak `heapkit leaks` must
 * find, with its file, line and task. After the first round the producer
 * marks the checkpoint "steady": what was allocated before it and is still
 * live (task stacks, the queue, the timer) is long-lived, not leaked.
 *
 *   run-qemu.sh mps2-an385 fw_<heap>.elf TRACE_FILE [ROUNDS]
 *
 * The trace leaves through semihosting into TRACE_FILE (drained by the
 * logger task every few ticks and at the end). A failed allocation is
 * counted (the malloc-failed hook) and the scenario goes on without that
 * block; the last line gives the count, the heap's low-water mark and the
 * recorder's totals. The program exits 0 after ROUNDS messages (default
 * 200) with no failed allocation and no dropped record; 3 when an
 * allocation failed (at once when a kernel object could not be created),
 * 4 when the trace file cannot be opened, 5 on a failed configASSERT, 6
 * when the recorder dropped records.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "FreeRTOS.h"
#include "queue.h"
#include "task.h"
#include "timers.h"

#include "hk_trace.h"
#include "hk_trace_semihost.h"

#define SAMPLE_WINDOW 4u

static uintptr_t trace_buffer[HK_TRACE_FOOTPRINT(16384) / sizeof(uintptr_t)];
static hk_trace_semihost_t trace_file;
static QueueHandle_t messages;
static TaskHandle_t logger;
static volatile int rounds = 200;
static volatile int done;
static volatile unsigned failed_allocations;

void app_assert_failed(const char *file, int line)
{
    printf("configASSERT failed at %s:%d\n", file, line);
    exit(5);
}

/* Counted, not fatal: the sizing check wants to know how many requests the heap could not serve. */
void vApplicationMallocFailedHook(void) { failed_allocations++; }

/* The trace's rest out, then the summary line `make firmware-trace` and its test read. */
static void finish(void)
{
    hk_trace_t *t = hk_trace_active;
    (void)hk_trace_drain(t);
    hk_trace_semihost_close(&trace_file);
    printf("heap %s: %u bytes, min ever free %u, %u failed allocations; trace: %lu records, %lu dropped\n",
           APP_HEAP_NAME, (unsigned)APP_HEAP_SIZE, (unsigned)xPortGetMinimumEverFreeHeapSize(),
           failed_allocations, (unsigned long)t->records, (unsigned long)t->dropped);
    exit(failed_allocations != 0 ? 3 : t->dropped != 0 ? 6 : 0);
}

/* The recorder's lock: the heaps already suspend the scheduler; draining from a task must too. */
static void trace_lock(void) { vTaskSuspendAll(); }
static void trace_unlock(void) { (void)xTaskResumeAll(); }
static uint32_t trace_stamp(void) { return (uint32_t)xTaskGetTickCount(); }

typedef struct message {
    size_t length;
    uint8_t payload[];
} message_t;

static message_t *make_message(size_t length)
{
    message_t *m = pvPortMalloc(sizeof(*m) + length);
    if (m != NULL) {
        m->length = length;
        memset(m->payload, (int)length, length);
    }
    return m;
}

static unsigned parse_message(const message_t *m)
{
    uint8_t *scratch = pvPortMalloc(m->length * 2u);
    unsigned sum = 0;
    size_t i;
    if (scratch == NULL) {
        return 0;
    }
    for (i = 0; i < m->length; i++) {
        scratch[2u * i] = m->payload[i];
        sum += scratch[2u * i];
    }
    vPortFree(scratch);
    return sum;
}

static void *sample_buffer(unsigned n) { return pvPortMalloc(16u + 8u * (n % 5u)); }

static void record_calibration(unsigned n)
{
    uint32_t *calibration = pvPortMalloc(40);
    if (calibration != NULL) {
        calibration[0] = n; /* kept nowhere: the leak */
    }
}

static void producer_task(void *arg)
{
    int i;
    (void)arg;
    for (i = 0; i < rounds; i++) {
        message_t *m = make_message(24u + (size_t)(i * 37) % 200u);
        if (i == 1) {
            hk_trace_mark(hk_trace_active, "steady", (uintptr_t)xTaskGetCurrentTaskHandle());
        }
        if (m != NULL) { /* NULL on the queue is the end of the stream */
            (void)xQueueSend(messages, &m, portMAX_DELAY);
        }
        vTaskDelay(1);
    }
    {
        message_t *end = NULL;
        (void)xQueueSend(messages, &end, portMAX_DELAY);
    }
    vTaskDelete(NULL);
}

static void consumer_task(void *arg)
{
    unsigned total = 0;
    (void)arg;
    for (;;) {
        message_t *m;
        (void)xQueueReceive(messages, &m, portMAX_DELAY);
        if (m == NULL) {
            break;
        }
        total += parse_message(m);
        vPortFree(m);
    }
    (void)total;
    done = 1;
    xTaskNotifyGive(logger);
    vTaskDelete(NULL);
}

static void sensor_task(void *arg)
{
    void *window[SAMPLE_WINDOW] = {0};
    unsigned n;
    (void)arg;
    for (n = 0; !done; n++) {
        unsigned slot = n % SAMPLE_WINDOW;
        vPortFree(window[slot]);
        window[slot] = sample_buffer(n);
        if (n % 10u == 9u) {
            record_calibration(n);
        }
        vTaskDelay(2);
    }
    for (n = 0; n < SAMPLE_WINDOW; n++) {
        vPortFree(window[n]);
    }
    vTaskDelete(NULL);
}

static void housekeeping(TimerHandle_t timer)
{
    char *report = pvPortMalloc(96);
    (void)timer;
    if (report != NULL) {
        (void)snprintf(report, 96, "free %u", (unsigned)xPortGetFreeHeapSize());
        vPortFree(report);
    }
}

static void logger_task(void *arg)
{
    hk_trace_t *t = hk_trace_active;
    (void)arg;
    while (!done) {
        (void)ulTaskNotifyTake(pdTRUE, 5);
        (void)hk_trace_drain(t);
    }
    vTaskDelay(10); /* the sensor's last frees */
    finish();
}

int main(int argc, char **argv)
{
    hk_trace_config_t config;
    TimerHandle_t timer;
    if (argc < 2 || hk_trace_semihost_open(&trace_file, argv[1]) != 0) {
        printf("usage: fw TRACE_FILE [ROUNDS] (the trace file must be writable on the host)\n");
        return 4;
    }
    if (argc > 2) {
        rounds = atoi(argv[2]);
    }
#if defined(__riscv)
    {
        /* The port's trap entry takes ecall (yield) and the machine timer; the startup's only reports traps. */
        extern void freertos_risc_v_trap_handler(void);
        __asm__ volatile(".option push\n.option arch, +zicsr\ncsrw mtvec, %0\n.option pop" ::"r"(
            freertos_risc_v_trap_handler));
    }
#endif
    memset(&config, 0, sizeof(config));
    config.policy = HK_TRACE_DROP;
    config.sink = hk_trace_semihost_sink;
    config.sink_ctx = &trace_file;
    config.stamp = trace_stamp;
    config.stamp_hz = configTICK_RATE_HZ;
    config.lock = trace_lock;
    config.unlock = trace_unlock;
    (void)hk_trace_init(trace_buffer, sizeof(trace_buffer), &config);

    messages = xQueueCreate(8, sizeof(message_t *));
    timer = xTimerCreate("housekeeping", pdMS_TO_TICKS(7), pdTRUE, NULL, housekeeping);
    if (messages == NULL || timer == NULL || xTimerStart(timer, 0) != pdPASS ||
        xTaskCreate(producer_task, "producer", configMINIMAL_STACK_SIZE, NULL, 2, NULL) != pdPASS ||
        xTaskCreate(consumer_task, "consumer", configMINIMAL_STACK_SIZE, NULL, 2, NULL) != pdPASS ||
        xTaskCreate(sensor_task, "sensor", configMINIMAL_STACK_SIZE, NULL, 1, NULL) != pdPASS ||
        xTaskCreate(logger_task, "logger", configMINIMAL_STACK_SIZE * 2, NULL, 1, &logger) != pdPASS) {
        finish(); /* the scenario cannot run without its kernel objects */
    }
    vTaskStartScheduler();
    finish(); /* no memory for the idle or the timer task */
    return 1;
}
