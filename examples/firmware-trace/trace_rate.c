/* SPDX-License-Identifier: MIT */
/*
 * How fast the recorder's records leave the target through semihosting
 * (docs/firmware-trace.md, "Cost"): RECORDS allocation records (a malloc
 * and a free of one block, in turn) go through a 16 KiB ring under the
 * block policy, so every record reaches the host file and the sink is
 * called whenever the ring is full (one SYS_WRITE per contiguous run).
 * Bare metal on mps2-an385, no RTOS:
 *
 *   run-qemu.sh mps2-an385 trace_rate.elf TRACE_FILE RECORDS
 *
 * It prints the records, the bytes and the virtual time they took (SysTick
 * at 25 MHz, its wraps counted by its interrupt), split into the time spent
 * recording and the time spent in the sink. QEMU services a semihosting
 * call between two guest instructions, so the sink's virtual time is the
 * target's side of the call only; the wall time of the run is the host's.
 */
#include <stdio.h>
#include <stdlib.h>

#include "hk_trace.h"
#include "hk_trace_semihost.h"

#define SYST_CSR (*(volatile uint32_t *)0xE000E010u)
#define SYST_RVR (*(volatile uint32_t *)0xE000E014u)
#define SYST_CVR (*(volatile uint32_t *)0xE000E018u)
#define SYST_RELOAD 0xFFFFFFu
#define CLOCK_HZ 25000000u

static uintptr_t buffer[HK_TRACE_FOOTPRINT(16384) / sizeof(uintptr_t)];
static hk_trace_semihost_t out;
static volatile uint32_t wraps;
static uint64_t sink_ticks;

void hk_systick_handler(void) { wraps++; }

/* SysTick ticks since start: wraps and the down-counter read consistently. */
static uint64_t now(void)
{
    uint32_t w;
    uint32_t cvr;
    do {
        w = wraps;
        cvr = SYST_CVR;
    } while (w != wraps);
    return (uint64_t)w * (SYST_RELOAD + 1u) + (SYST_RELOAD - cvr);
}

static uint32_t stamp(void) { return (uint32_t)now(); }

static size_t timed_sink(void *ctx, const uint8_t *bytes, size_t n)
{
    uint64_t t0 = now();
    size_t took = hk_trace_semihost_sink(ctx, bytes, n);
    sink_ticks += now() - t0;
    return took;
}

int main(int argc, char **argv)
{
    hk_trace_config_t config = {HK_TRACE_BLOCK, timed_sink, &out, stamp, CLOCK_HZ, NULL, NULL};
    hk_trace_t *t;
    unsigned long records;
    unsigned long i;
    uint64_t t0;
    uint64_t ticks;
    if (argc != 3 || hk_trace_semihost_open(&out, argv[1]) != 0) {
        printf("usage: trace_rate TRACE_FILE RECORDS (the trace file must be writable on the host)\n");
        return 2;
    }
    records = strtoul(argv[2], NULL, 0);
    SYST_RVR = SYST_RELOAD;
    SYST_CVR = 0;
    SYST_CSR = 7u; /* processor clock, interrupt on wrap, enabled */
    t = hk_trace_init(buffer, sizeof(buffer), &config);
    t0 = now();
    for (i = 0; i < records; i++) {
        const void *block = (const void *)(uintptr_t)(0x20100000u + 64u * (i / 2u % 1024u));
        if (i % 2u == 0) {
            hk_trace_alloc(t, HK_TRACE_MALLOC, block, 16u + i % 48u, 0, (const void *)main, 0);
        } else {
            hk_trace_free(t, block, 0, (const void *)main, 0);
        }
    }
    (void)hk_trace_drain(t);
    ticks = now() - t0;
    hk_trace_semihost_close(&out);
    printf("trace rate: %lu records, %lu bytes, %lu dropped in %lu us of virtual time "
           "(%lu us in the sink): %lu records/s, %lu KiB/s\n",
           (unsigned long)t->records, (unsigned long)(t->head + 16u), (unsigned long)t->dropped,
           (unsigned long)(ticks / (CLOCK_HZ / 1000000u)), (unsigned long)(sink_ticks / (CLOCK_HZ / 1000000u)),
           (unsigned long)(ticks ? (uint64_t)t->records * CLOCK_HZ / ticks : 0u),
           (unsigned long)(ticks ? (uint64_t)(t->head + 16u) * CLOCK_HZ / ticks / 1024u : 0u));
    return t->dropped == 0 && t->records == records ? 0 : 1;
}
