/* SPDX-License-Identifier: MIT */
/*
 * The firmware trace recorder (ports/trace/hk_trace.c): record encoding,
 * ring wrap, drop counting, the block policy, draining through a sink that
 * takes a few bytes at a time, and the uniform-call wrappers.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "heapkit/tlsf.h"
#include "hk_trace.h"

#define W sizeof(uintptr_t)

/* A sink into a byte array, taking at most `chunk` bytes per call (0: all). */
typedef struct sink {
    uint8_t bytes[1 << 16];
    size_t len;
    size_t chunk;
    unsigned calls;
} sink_t;

static size_t sink_take(void *ctx, const uint8_t *bytes, size_t n)
{
    sink_t *s = ctx;
    if (s->chunk != 0 && n > s->chunk) {
        n = s->chunk;
    }
    assert_true(s->len + n <= sizeof(s->bytes));
    memcpy(s->bytes + s->len, bytes, n);
    s->len += n;
    s->calls++;
    return n;
}

static uint32_t clock_now;
static uint32_t fake_stamp(void) { return ++clock_now; }

/* One record decoded from the stream. */
typedef struct rec {
    int op;
    unsigned nwords;
    uintptr_t w[8];
    char str[256];
} rec_t;

/* Checks the 16-byte stream header and decodes up to max records; returns how many. */
static size_t decode(const sink_t *s, rec_t *out, size_t max)
{
    size_t pos = 16;
    size_t n = 0;
    assert_true(s->len >= 16);
    assert_memory_equal(s->bytes, "HKFWTRC", 8);
    assert_int_equal(s->bytes[8] | (s->bytes[9] << 8), HK_TRACE_VERSION);
    assert_int_equal(s->bytes[10], W);
    while (pos < s->len) {
        rec_t *r = &out[n];
        unsigned len;
        assert_true(n < max);
        assert_true(pos + 4 <= s->len);
        r->op = s->bytes[pos];
        r->nwords = s->bytes[pos + 1];
        len = s->bytes[pos + 2];
        assert_int_equal(s->bytes[pos + 3], 0);
        assert_true(r->nwords <= 8);
        pos += 4;
        memcpy(r->w, s->bytes + pos, r->nwords * W);
        pos += r->nwords * W;
        memcpy(r->str, s->bytes + pos, len);
        r->str[len] = '\0';
        pos += (len + 3u) & ~3u;
        assert_true(pos <= s->len);
        n++;
    }
    return n;
}

static uintptr_t buffer[(HK_TRACE_FOOTPRINT(1024) + 64) / sizeof(uintptr_t)];
static sink_t out;

static hk_trace_t *make(hk_trace_policy_t policy, hk_trace_sink_fn sink, size_t chunk)
{
    hk_trace_config_t config;
    memset(&config, 0, sizeof(config));
    memset(&out, 0, sizeof(out));
    out.chunk = chunk;
    clock_now = 0;
    config.policy = policy;
    config.sink = sink;
    config.sink_ctx = &out;
    config.stamp = fake_stamp;
    config.stamp_hz = 1000;
    return hk_trace_init(buffer, HK_TRACE_FOOTPRINT(1024), &config);
}

static void test_init(void **state)
{
    hk_trace_t *t;
    (void)state;
    assert_null(hk_trace_init(buffer, HK_TRACE_FOOTPRINT(HK_TRACE_MIN_RING) - 1, NULL));
    assert_null(hk_trace_init((uint8_t *)buffer + 1, sizeof(buffer) - 8, NULL));
    /* The ring is the largest power of two that fits. */
    t = hk_trace_init(buffer, HK_TRACE_FOOTPRINT(1024) + 64, NULL);
    assert_non_null(t);
    assert_ptr_equal(t, hk_trace_active);
    assert_int_equal(t->ring_size, 1024);
    assert_memory_equal(t->magic, "HKFWBUF", 8);
    assert_int_equal(t->word, W);
    assert_int_equal(t->header_size, sizeof(hk_trace_t));
    assert_int_equal(hk_trace_pending(t), 0);
}

static void test_encoding(void **state)
{
    rec_t r[8];
    int x, y, z;
    hk_trace_t *t = make(HK_TRACE_DROP, sink_take, 0);
    (void)state;
    hk_trace_alloc(t, HK_TRACE_MALLOC, &x, 40, 0, (void *)0x1234, 7);
    hk_trace_alloc(t, HK_TRACE_ALIGNED, &y, 100, 64, (void *)0x99, 0);
    hk_trace_realloc(t, &z, 200, &x, (void *)0x55, 7);
    hk_trace_free(t, &z, 208, (void *)0x66, 8);
    hk_trace_task(t, 7, "sensor");
    hk_trace_mark(t, "steady", 8);
    hk_trace_alloc(t, HK_TRACE_MALLOC, NULL, 40, 0, (void *)0x1, 7); /* failed: nothing */
    assert_int_equal(hk_trace_pending(t), 6 * 4 + (5 + 6 + 6 + 5 + 2 + 2) * W + 8 + 8);
    hk_trace_drain(t);
    assert_int_equal(hk_trace_pending(t), 0);
    assert_int_equal(decode(&out, r, 8), 6);
    assert_int_equal(out.bytes[12], 1000 & 0xff);

    assert_int_equal(r[0].op, 'm');
    assert_int_equal(r[0].nwords, 5);
    assert_true(r[0].w[0] == (uintptr_t)&x && r[0].w[1] == 40 && r[0].w[2] == 0x1234);
    assert_true(r[0].w[3] == 7 && r[0].w[4] == 1);
    assert_int_equal(r[1].op, 'a');
    assert_true(r[1].w[1] == 100 && r[1].w[2] == 64 && r[1].w[3] == 0x99 && r[1].w[4] == 0);
    assert_int_equal(r[2].op, 'r');
    assert_true(r[2].w[0] == (uintptr_t)&z && r[2].w[2] == (uintptr_t)&x && r[2].w[3] == 0x55);
    assert_int_equal(r[3].op, 'f');
    assert_true(r[3].w[0] == (uintptr_t)&z && r[3].w[1] == 208 && r[3].w[2] == 0x66 && r[3].w[3] == 8);
    assert_int_equal(r[4].op, 'T');
    assert_true(r[4].w[0] == 7);
    assert_string_equal(r[4].str, "sensor");
    assert_int_equal(r[5].op, 'K');
    assert_string_equal(r[5].str, "steady");
    assert_true(r[5].w[0] == 8 && r[5].w[1] == 6);
    assert_int_equal(t->records, 6);
    assert_int_equal(t->dropped, 0);
}

/* Records of every length cross the ring's end many times; the stream stays whole and in order. */
static void test_ring_wrap(void **state)
{
    static rec_t r[600];
    uintptr_t i;
    size_t n;
    char name[40];
    hk_trace_t *t = make(HK_TRACE_DROP, sink_take, 0);
    (void)state;
    for (i = 0; i < 500; i++) {
        if (i % 7 == 3) {
            memset(name, 'a' + (int)(i % 26), sizeof(name));
            name[i % 39] = '\0';
            hk_trace_task(t, i, name);
        } else {
            hk_trace_alloc(t, HK_TRACE_MALLOC, (void *)(i * 16 + 16), i, 0, (void *)i, i);
        }
        if (i % 9 == 0) {
            hk_trace_drain(t);
        }
    }
    hk_trace_drain(t);
    assert_int_equal(t->dropped, 0);
    assert_true(t->head > 4 * t->ring_size);
    n = decode(&out, r, 600);
    assert_int_equal(n, 500);
    for (i = 0; i < 500; i++) {
        if (i % 7 == 3) {
            assert_int_equal(r[i].op, 'T');
            assert_int_equal(strlen(r[i].str), i % 39);
        } else {
            assert_int_equal(r[i].op, 'm');
            assert_true(r[i].w[0] == i * 16 + 16 && r[i].w[1] == i && r[i].w[2] == i);
        }
    }
}

/* Without a sink the ring fills; the rest is dropped and counted, and a 'D' record marks the gap. */
static void test_drop_counting(void **state)
{
    static rec_t r[200];
    uintptr_t i;
    size_t per = 4 + 5 * W;
    size_t fit = 1024 / per;
    size_t n;
    hk_trace_t *t = make(HK_TRACE_DROP, NULL, 0);
    (void)state;
    for (i = 0; i < fit + 10; i++) {
        hk_trace_alloc(t, HK_TRACE_MALLOC, (void *)(i + 1), i, 0, NULL, 0);
    }
    assert_int_equal(t->records, fit);
    assert_int_equal(t->dropped, 10);
    assert_int_equal(hk_trace_drain(t), 0); /* no sink */
    /* A sink appears (the debugger, a UART task): the gap is reported before the next record. */
    t->config.sink = sink_take;
    hk_trace_drain(t);
    hk_trace_alloc(t, HK_TRACE_MALLOC, (void *)0x1000, 1, 0, NULL, 0);
    hk_trace_drain(t);
    n = decode(&out, r, 200);
    assert_int_equal(n, fit + 2);
    assert_int_equal(r[fit].op, 'D');
    assert_true(r[fit].w[0] == 10);
    assert_int_equal(r[fit + 1].op, 'm');
    assert_true(r[fit + 1].w[0] == 0x1000);
    assert_int_equal(t->dropped, 10);
    assert_int_equal(t->pending_drops, 0);
}

/* The block policy drains through the sink, a few bytes a call, instead of dropping. */
static void test_block_policy(void **state)
{
    static rec_t r[400];
    uintptr_t i;
    hk_trace_t *t = make(HK_TRACE_BLOCK, sink_take, 7);
    (void)state;
    for (i = 0; i < 300; i++) {
        hk_trace_alloc(t, HK_TRACE_MALLOC, (void *)(i + 1), i, 0, NULL, 0);
    }
    assert_int_equal(t->dropped, 0);
    assert_true(out.len > 0);
    assert_true(hk_trace_pending(t) <= t->ring_size);
    hk_trace_drain(t);
    assert_int_equal(decode(&out, r, 400), 300);
    for (i = 0; i < 300; i++) {
        assert_true(r[i].w[0] == i + 1);
    }
    /* Block without a sink cannot wait for anyone: it drops. */
    t = make(HK_TRACE_BLOCK, NULL, 0);
    for (i = 0; i < 300; i++) {
        hk_trace_alloc(t, HK_TRACE_MALLOC, (void *)(i + 1), i, 0, NULL, 0);
    }
    assert_true(t->dropped > 0);
}

/* A sink that takes one byte per call still gets the exact stream, header included. */
static void test_sink_draining(void **state)
{
    static sink_t whole;
    static rec_t r[64];
    uintptr_t i;
    hk_trace_t *t = make(HK_TRACE_DROP, sink_take, 1);
    (void)state;
    for (i = 0; i < 20; i++) {
        hk_trace_alloc(t, HK_TRACE_CALLOC, (void *)(i + 1), 8, i, (void *)i, 3);
        if (i % 5 == 4) {
            hk_trace_drain(t);
        }
    }
    hk_trace_drain(t);
    assert_int_equal(out.calls, out.len);
    assert_int_equal(decode(&out, r, 64), 20);
    assert_true(r[19].w[2] == 19 && r[19].op == 'c');
    whole = out;
    /* Draining an empty ring calls nothing. */
    out.calls = 0;
    assert_int_equal(hk_trace_drain(t), 0);
    assert_int_equal(out.calls, 0);
    assert_int_equal(whole.len, 16 + 20 * (4 + 6 * W));
}

/* The wrappers record their caller's return address and what heap.c did. */
static __attribute__((noinline)) void *traced_calls(hk_heap_t *heap)
{
    void *p = hk_trace_heap_malloc(heap, 100);
    void *q = hk_trace_heap_calloc(heap, 4, 10);
    void *a = hk_trace_heap_aligned_alloc(heap, 64, 30);
    p = hk_trace_heap_realloc(heap, p, 3000);
    (void)hk_trace_heap_malloc(heap, (size_t)1 << 30); /* fails: no record */
    hk_trace_heap_free(heap, q);
    (void)hk_trace_heap_realloc(heap, a, 0);
    return p;
}

static void test_heap_wrappers(void **state)
{
    static uint8_t arena[16384] __attribute__((aligned(16)));
    static rec_t r[16];
    hk_status_t st;
    hk_tlsf_t *tlsf = hk_tlsf_init(arena, sizeof(arena), &st);
    hk_heap_t *heap = hk_tlsf_heap(tlsf);
    hk_trace_t *t = make(HK_TRACE_DROP, sink_take, 0);
    uintptr_t lo = (uintptr_t)traced_calls;
    hk_stats_t stats;
    void *p;
    size_t i;
    (void)state;
    p = traced_calls(heap);
    hk_trace_drain(t);
    assert_int_equal(decode(&out, r, 16), 6);
    assert_int_equal(r[0].op, 'm');
    assert_true(r[0].w[1] == 100);
    assert_int_equal(r[1].op, 'c');
    assert_true(r[1].w[1] == 10 && r[1].w[2] == 4);
    assert_int_equal(r[2].op, 'a');
    assert_true(r[2].w[1] == 30 && r[2].w[2] == 64);
    assert_int_equal(r[3].op, 'r');
    assert_true(r[3].w[0] == (uintptr_t)p && r[3].w[2] == r[0].w[0] && r[3].w[1] == 3000);
    assert_int_equal(r[4].op, 'f');
    assert_true(r[4].w[0] == r[1].w[0]);
    assert_int_equal(r[5].op, 'f'); /* realloc to 0 */
    assert_true(r[5].w[0] == r[2].w[0]);
    for (i = 0; i < 6; i++) {
        uintptr_t caller = r[i].w[r[i].nwords - 3];
        /* A return address inside traced_calls (it is far shorter than 1 KiB). */
        assert_true(caller > lo && caller < lo + 1024);
        assert_true(i == 0 || caller > r[i - 1].w[r[i - 1].nwords - 3]);
    }
    hk_trace_heap_free(heap, p);
    hk_get_stats(heap, &stats);
    assert_int_equal(stats.used_blocks, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_init),          cmocka_unit_test(test_encoding),
        cmocka_unit_test(test_ring_wrap),     cmocka_unit_test(test_drop_counting),
        cmocka_unit_test(test_block_policy),  cmocka_unit_test(test_sink_draining),
        cmocka_unit_test(test_heap_wrappers),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
