/* SPDX-License-Identifier: MIT */
/*
 * hk_trace: an allocation-trace recorder for firmware. Every malloc, free,
 * realloc and aligned allocation becomes a compact record (operation,
 * pointer, size, alignment, the caller's return address, the task, a stamp)
 * in a RAM ring buffer the application provides; the bytes leave the target
 * through a sink hook (UART, RTT, ITM, semihosting: hk_trace_semihost.h), or
 * a debugger dumps the buffer afterwards. docs/firmware-trace.md is the
 * user's guide, docs/trace-format.md the byte layout; `heapkit import` and
 * `heapkit leaks` read both the stream and the buffer image.
 *
 * Hooking it in:
 *   - FreeRTOS: #include "hk_trace_freertos.h" at the end of FreeRTOSConfig.h
 *     (traceMALLOC/traceFREE/traceTASK_CREATE: any heap file, heap_4, heap_5
 *     or heapkit's);
 *   - bare metal on a heapkit heap: hk_trace_heap_* below, the uniform
 *     calls with a record added.
 *
 * Freestanding C99: no libc beyond memcpy, no allocation. The recorder
 * itself is not reentrant: set lock/unlock when records can come from more
 * than one context (FreeRTOS's hooks run with the scheduler suspended, which
 * is enough unless an ISR allocates).
 */
#ifndef HEAPKIT_HK_TRACE_H
#define HEAPKIT_HK_TRACE_H

#include <stddef.h>
#include <stdint.h>

#include "heapkit/heapkit.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Format version of the stream and of the buffer image (docs/trace-format.md). */
#define HK_TRACE_VERSION 1u

/* Record ops: the .hkt letters for allocation events, upper case for the rest. */
#define HK_TRACE_MALLOC 'm'
#define HK_TRACE_CALLOC 'c'
#define HK_TRACE_ALIGNED 'a'
#define HK_TRACE_REALLOC 'r'
#define HK_TRACE_FREE 'f'
#define HK_TRACE_TASK 'T'  /* a task's name, once per task */
#define HK_TRACE_MARK 'K'  /* a checkpoint with a label */
#define HK_TRACE_DROPS 'D' /* records dropped since the last one of these */

/* What a record call does when the ring has no room. */
typedef enum hk_trace_policy {
    HK_TRACE_DROP = 0, /* the record is lost and counted; a 'D' record marks the gap */
    HK_TRACE_BLOCK = 1 /* the sink drains the ring until the record fits (no sink: as DROP) */
} hk_trace_policy_t;

/* Takes up to n bytes; returns how many it took (0: try again later). */
typedef size_t (*hk_trace_sink_fn)(void *ctx, const uint8_t *bytes, size_t n);
typedef uint32_t (*hk_trace_stamp_fn)(void);
typedef void (*hk_trace_lock_fn)(void);

typedef struct hk_trace_config {
    hk_trace_policy_t policy;
    hk_trace_sink_fn sink;   /* NULL: the buffer is read by a debugger or drained later */
    void *sink_ctx;
    hk_trace_stamp_fn stamp; /* cycle counter or tick count; NULL: stamps are 0 */
    uint32_t stamp_hz;       /* the stamp's rate, for the host's time axis (0: unknown) */
    hk_trace_lock_fn lock;   /* both or neither; around every change to the ring */
    hk_trace_lock_fn unlock;
} hk_trace_config_t;

/*
 * The buffer image: this control block, then the ring. Its first fields are
 * what a debugger dump needs to rebuild the stream (the magic, the word
 * size, the ring's size and indexes), so they are part of the format.
 */
typedef struct hk_trace {
    char magic[8];          /* "HKFWBUF" */
    uint16_t version;
    uint8_t word;           /* sizeof(uintptr_t): the width of every record word */
    uint8_t started;        /* bytes of the stream header sent to the sink so far */
    uint32_t header_size;   /* sizeof(hk_trace_t): where the ring starts */
    uint32_t ring_size;     /* bytes of ring after this block, a power of two */
    volatile uint32_t head; /* bytes ever written (free-running; mod ring_size is the position) */
    volatile uint32_t tail; /* bytes ever drained */
    uint32_t stamp_hz;
    uint32_t dropped;       /* records dropped, in all */
    uint32_t pending_drops; /* dropped since the last 'D' record */
    uint32_t records;       /* records written, in all */
    hk_trace_config_t config;
} hk_trace_t;

/*
 * Bytes of buffer for a ring of ring_bytes (use it to size a static array:
 * uintptr_t buf[HK_TRACE_FOOTPRINT(4096) / sizeof(uintptr_t)]).
 */
#define HK_TRACE_MIN_RING 512u
#define HK_TRACE_FOOTPRINT(ring_bytes) (sizeof(hk_trace_t) + (size_t)(ring_bytes))

/*
 * Sets up the recorder in [buffer, buffer + size) (aligned to uintptr_t)
 * and makes it the one the hooks record into. The ring is the largest power
 * of two that fits after the control block (one mask instead of a division
 * per byte range). NULL when it cannot hold the largest record, a 255-byte
 * task name or label (HK_TRACE_MIN_RING). config may be NULL (drop policy,
 * no sink, no stamp).
 */
hk_trace_t *hk_trace_init(void *buffer, size_t size, const hk_trace_config_t *config);

/* The recorder the hooks use (NULL: none yet, hooks do nothing). */
extern hk_trace_t *hk_trace_active;

/* The records; caller is the return address at the allocation's call site, task 0 on bare metal. */
void hk_trace_alloc(hk_trace_t *t, int op, const void *ptr, size_t size, size_t aux, const void *caller,
                    uintptr_t task);
void hk_trace_realloc(hk_trace_t *t, const void *ptr, size_t size, const void *old, const void *caller,
                      uintptr_t task);
void hk_trace_free(hk_trace_t *t, const void *ptr, size_t size, const void *caller, uintptr_t task);
/* A task's name (at most 255 bytes are kept). */
void hk_trace_task(hk_trace_t *t, uintptr_t task, const char *name);
/* A checkpoint: `heapkit leaks --checkpoint LABEL` splits the blocks live at the end here. */
void hk_trace_mark(hk_trace_t *t, const char *label, uintptr_t task);

/* Pushes what the ring holds through the sink; returns the bytes it took. */
size_t hk_trace_drain(hk_trace_t *t);

/* Bytes waiting in the ring. */
size_t hk_trace_pending(const hk_trace_t *t);

/*
 * Bare metal: the uniform calls of heapkit/heapkit.h with a record of each
 * (into hk_trace_active, task 0). The caller's address is taken here, so
 * these must be called directly from the code whose allocations are traced.
 */
void *hk_trace_heap_malloc(hk_heap_t *heap, size_t size);
void *hk_trace_heap_calloc(hk_heap_t *heap, size_t count, size_t size);
void *hk_trace_heap_realloc(hk_heap_t *heap, void *ptr, size_t size);
void *hk_trace_heap_aligned_alloc(hk_heap_t *heap, size_t alignment, size_t size);
void hk_trace_heap_free(hk_heap_t *heap, void *ptr);

#ifdef __cplusplus
}
#endif

#endif
