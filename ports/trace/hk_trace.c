/* SPDX-License-Identifier: MIT */
/*
 * The recorder (hk_trace.h). A record is a 4-byte head (op, word count,
 * string length) followed by that many uintptr_t words in the target's
 * byte order and then the string padded to 4 bytes; docs/trace-format.md
 * ("Firmware recorder") is the layout the host reads. Records are copied
 * into the ring whole or not at all, so a reader never sees half of one.
 */
#include "hk_trace.h"

#include <string.h>

#define HEAD_BYTES 4u
#define MAX_WORDS 6u
#define MAX_STRING 255u

hk_trace_t *hk_trace_active;

static const char image_magic[8] = "HKFWBUF";
static const char stream_magic[8] = "HKFWTRC";

/* The stream's 16-byte header: magic, version, word size, 0, stamp rate. */
static void stream_header(const hk_trace_t *t, uint8_t out[16])
{
    uint32_t hz = t->stamp_hz;
    unsigned i;
    memcpy(out, stream_magic, 8);
    out[8] = (uint8_t)HK_TRACE_VERSION;
    out[9] = (uint8_t)(HK_TRACE_VERSION >> 8);
    out[10] = (uint8_t)sizeof(uintptr_t);
    out[11] = 0;
    for (i = 0; i < 4u; i++) {
        out[12u + i] = (uint8_t)(hz >> (8u * i));
    }
}

hk_trace_t *hk_trace_init(void *buffer, size_t size, const hk_trace_config_t *config)
{
    hk_trace_t *t = (hk_trace_t *)buffer;
    size_t room;
    uint32_t ring = HK_TRACE_MIN_RING;
    if (buffer == NULL || ((uintptr_t)buffer & (sizeof(uintptr_t) - 1u)) != 0 ||
        size < HK_TRACE_FOOTPRINT(HK_TRACE_MIN_RING)) {
        return NULL;
    }
    room = size - sizeof(hk_trace_t);
    while ((size_t)ring * 2u <= room && ring < 0x80000000u) {
        ring *= 2u;
    }
    memset(t, 0, sizeof(*t));
    memcpy(t->magic, image_magic, sizeof(t->magic));
    t->version = HK_TRACE_VERSION;
    t->word = (uint8_t)sizeof(uintptr_t);
    t->header_size = (uint32_t)sizeof(hk_trace_t);
    t->ring_size = ring;
    if (config != NULL) {
        t->config = *config;
        t->stamp_hz = config->stamp_hz;
    }
    hk_trace_active = t;
    return t;
}

static uint8_t *ring_of(hk_trace_t *t) { return (uint8_t *)t + sizeof(hk_trace_t); }

size_t hk_trace_pending(const hk_trace_t *t) { return (size_t)(uint32_t)(t->head - t->tail); }

static void lock(const hk_trace_t *t)
{
    if (t->config.lock != NULL) {
        t->config.lock();
    }
}

static void unlock(const hk_trace_t *t)
{
    if (t->config.unlock != NULL) {
        t->config.unlock();
    }
}

/* One sink call over the stream header's rest or the ring's first contiguous run; 0 when nothing moved. */
static size_t drain_step(hk_trace_t *t)
{
    uint32_t mask = t->ring_size - 1u;
    uint32_t used = t->head - t->tail;
    uint32_t pos = t->tail & mask;
    uint32_t run = t->ring_size - pos;
    size_t took;
    if (t->started < 16u) {
        uint8_t header[16];
        stream_header(t, header);
        took = t->config.sink(t->config.sink_ctx, header + t->started, 16u - t->started);
        t->started = (uint8_t)(t->started + took);
        return took;
    }
    if (used == 0) {
        return 0;
    }
    took = t->config.sink(t->config.sink_ctx, ring_of(t) + pos, used < run ? used : run);
    t->tail += (uint32_t)took;
    return took;
}

static size_t drain_locked(hk_trace_t *t)
{
    size_t total = 0;
    size_t took;
    if (t->config.sink == NULL) {
        return 0;
    }
    do {
        took = drain_step(t);
        total += took;
    } while (took != 0);
    return total;
}

size_t hk_trace_drain(hk_trace_t *t)
{
    size_t n;
    lock(t);
    n = drain_locked(t);
    unlock(t);
    return n;
}

/*
 * Every record is a whole number of 32-bit units, so the ring is written a
 * unit at a time, wrapping per unit: a load and a store per unit, where a
 * memcpy call per part of a record cost more than all its units
 * (lab/target's tlsf-traced row). Both sides are 4-byte aligned (the ring
 * follows the control block, the sources are words or a unit_t); telling
 * the compiler so keeps a byte-wise copy, or a call, out of the loop on
 * targets without unaligned access.
 */
#if defined(__GNUC__)
#define ALIGNED4(p) __builtin_assume_aligned((p), 4)
#else
#define ALIGNED4(p) (p)
#endif

typedef union unit {
    uint8_t bytes[4];
    uint32_t word; /* only for its alignment */
} unit_t;

static void put_units(hk_trace_t *t, const void *src, uint32_t units)
{
    uint8_t *ring = (uint8_t *)ALIGNED4(ring_of(t));
    uint32_t mask = t->ring_size / 4u - 1u;
    uint32_t at = t->head / 4u;
    const uint8_t *s = (const uint8_t *)ALIGNED4(src);
    uint32_t i;
    for (i = 0; i < units; i++) {
        memcpy(ring + 4u * ((at + i) & mask), s + 4u * i, 4u); /* one load and one store */
    }
    t->head += 4u * units;
}

static uint32_t record_bytes(unsigned nwords, unsigned len)
{
    return HEAD_BYTES + (uint32_t)(nwords * sizeof(uintptr_t)) + ((len + 3u) & ~3u);
}

/* Room for n bytes, draining through the sink under the block policy. */
static int make_room(hk_trace_t *t, uint32_t n)
{
    while (t->ring_size - (t->head - t->tail) < n) {
        if (t->config.policy != HK_TRACE_BLOCK || t->config.sink == NULL) {
            return 0;
        }
        (void)drain_step(t);
    }
    return 1;
}

static void emit(hk_trace_t *t, int op, const uintptr_t *words, unsigned nwords, const char *str, unsigned len)
{
    unit_t head;
    unsigned i;
    head.bytes[0] = (uint8_t)op;
    head.bytes[1] = (uint8_t)nwords;
    head.bytes[2] = (uint8_t)len;
    head.bytes[3] = 0;
    put_units(t, &head, 1);
    put_units(t, words, (uint32_t)(nwords * sizeof(uintptr_t) / 4u));
    for (i = 0; i < len; i += 4u) {
        unit_t unit;
        unit.word = 0;
        memcpy(unit.bytes, str + i, len - i < 4u ? len - i : 4u);
        put_units(t, &unit, 1);
    }
    t->records++;
}

static uintptr_t stamp(const hk_trace_t *t) { return t->config.stamp != NULL ? t->config.stamp() : 0u; }

/*
 * Writes one record, preceded by a 'D' record when records were dropped
 * since the last one; a record without room is dropped and counted.
 */
static void record(hk_trace_t *t, int op, const uintptr_t *words, unsigned nwords, const char *str, unsigned len)
{
    uint32_t need = record_bytes(nwords, len);
    uintptr_t gap[2];
    lock(t);
    if (t->pending_drops != 0) {
        need += record_bytes(2, 0);
    }
    if (!make_room(t, need)) {
        t->dropped++;
        t->pending_drops++;
    } else {
        if (t->pending_drops != 0) {
            gap[0] = t->pending_drops;
            gap[1] = words[nwords - 1u];
            emit(t, HK_TRACE_DROPS, gap, 2, NULL, 0);
            t->pending_drops = 0;
        }
        emit(t, op, words, nwords, str, len);
    }
    unlock(t);
}

static unsigned bounded_length(const char *s)
{
    unsigned n = 0;
    while (s != NULL && n < MAX_STRING && s[n] != '\0') {
        n++;
    }
    return n;
}

void hk_trace_alloc(hk_trace_t *t, int op, const void *ptr, size_t size, size_t aux, const void *caller,
                    uintptr_t task)
{
    uintptr_t w[MAX_WORDS];
    unsigned n = 0;
    if (t == NULL || ptr == NULL) {
        return;
    }
    w[n++] = (uintptr_t)ptr;
    w[n++] = (uintptr_t)size;
    if (op != HK_TRACE_MALLOC) {
        w[n++] = (uintptr_t)aux;
    }
    w[n++] = (uintptr_t)caller;
    w[n++] = task;
    w[n++] = stamp(t);
    record(t, op, w, n, NULL, 0);
}

void hk_trace_realloc(hk_trace_t *t, const void *ptr, size_t size, const void *old, const void *caller,
                      uintptr_t task)
{
    hk_trace_alloc(t, HK_TRACE_REALLOC, ptr, size, (size_t)(uintptr_t)old, caller, task);
}

void hk_trace_free(hk_trace_t *t, const void *ptr, size_t size, const void *caller, uintptr_t task)
{
    uintptr_t w[5];
    if (t == NULL || ptr == NULL) {
        return;
    }
    w[0] = (uintptr_t)ptr;
    w[1] = (uintptr_t)size;
    w[2] = (uintptr_t)caller;
    w[3] = task;
    w[4] = stamp(t);
    record(t, HK_TRACE_FREE, w, 5, NULL, 0);
}

void hk_trace_task(hk_trace_t *t, uintptr_t task, const char *name)
{
    uintptr_t w[2];
    if (t == NULL) {
        return;
    }
    w[0] = task;
    w[1] = stamp(t);
    record(t, HK_TRACE_TASK, w, 2, name, bounded_length(name));
}

void hk_trace_mark(hk_trace_t *t, const char *label, uintptr_t task)
{
    uintptr_t w[2];
    if (t == NULL) {
        return;
    }
    w[0] = task;
    w[1] = stamp(t);
    record(t, HK_TRACE_MARK, w, 2, label, bounded_length(label));
}

/*
 * The uniform calls with a record each. heap.c keeps every calling rule;
 * these only read the outcome: a NULL result is a failure (nothing to
 * record, the block, if any, is unchanged), realloc to 0 freed the block.
 */
#if defined(__GNUC__)
#define HK_TRACE_NOINLINE __attribute__((noinline))
#else
#define HK_TRACE_NOINLINE
#endif
#define CALLER() __builtin_return_address(0)

HK_TRACE_NOINLINE void *hk_trace_heap_malloc(hk_heap_t *heap, size_t size)
{
    void *p = hk_malloc(heap, size);
    hk_trace_alloc(hk_trace_active, HK_TRACE_MALLOC, p, size, 0, CALLER(), 0);
    return p;
}

HK_TRACE_NOINLINE void *hk_trace_heap_calloc(hk_heap_t *heap, size_t count, size_t size)
{
    void *p = hk_calloc(heap, count, size);
    hk_trace_alloc(hk_trace_active, HK_TRACE_CALLOC, p, size, count, CALLER(), 0);
    return p;
}

HK_TRACE_NOINLINE void *hk_trace_heap_aligned_alloc(hk_heap_t *heap, size_t alignment, size_t size)
{
    void *p = hk_aligned_alloc(heap, alignment, size);
    hk_trace_alloc(hk_trace_active, HK_TRACE_ALIGNED, p, size, alignment, CALLER(), 0);
    return p;
}

HK_TRACE_NOINLINE void *hk_trace_heap_realloc(hk_heap_t *heap, void *ptr, size_t size)
{
    void *p = hk_realloc(heap, ptr, size);
    if (ptr != NULL && size == 0) {
        hk_trace_free(hk_trace_active, ptr, 0, CALLER(), 0);
    } else {
        hk_trace_realloc(hk_trace_active, p, size, ptr, CALLER(), 0);
    }
    return p;
}

HK_TRACE_NOINLINE void hk_trace_heap_free(hk_heap_t *heap, void *ptr)
{
    /* Recorded first: once freed, the address may be handed out again by another context. */
    hk_trace_free(hk_trace_active, ptr, 0, CALLER(), 0);
    hk_free(heap, ptr);
}
