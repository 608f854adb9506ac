/* SPDX-License-Identifier: MIT */
/*
 * Misuse goes to configASSERT: a double free, with the scheduler running.
 * The test passes when the run ends in "configASSERT failed" (exit status
 * 3) from the heap; ending normally means the double free went unnoticed.
 */
#include <stdio.h>

#include "FreeRTOS.h"
#include "task.h"
#include "app.h"

static void runner(void *arg)
{
    void *keep = pvPortMalloc(64);
    void *p = pvPortMalloc(100);
    (void)arg;
    if (p == NULL || keep == NULL) {
        app_fail("pvPortMalloc returned NULL");
    }
    vPortFree(p);
    printf("misuse[%s]: freeing %p a second time\n", app_heap_name(), p);
    vPortFree(p);
    app_exit(0, "double free not detected");
}

int main(int argc, char **argv)
{
    app_start(argc, argv, "misuse");
    if (xTaskCreate(runner, "misuse", configMINIMAL_STACK_SIZE, NULL, 2, NULL) != pdPASS) {
        app_fail("setup");
    }
    vTaskStartScheduler();
    app_fail("scheduler returned");
    return 2;
}
