/* SPDX-License-Identifier: MIT */
/*
 * The allocators the instruction counter replays (Cortex-M3 and RV32 alike):
 * every heapkit catalog entry, then the peers whose sources the build found
 * (fetched from crates.io by tools/fetch_peers.sh, compiled by
 * lab/heapkit/target.py with the same compiler and flags as heapkit; nothing
 * of theirs is in this repository). Each is called natively, the way an
 * application on the board would call it:
 *
 *   heapkit (catalog)  heap->ops->malloc/free/realloc(heap, ...): the
 *                      allocator's own function behind its ops table (the
 *                      direct hk_<x>_malloc plus one tail-call branch);
 *                      realloc, calloc and aligned through hk_realloc, hk_calloc and
 *                      hk_aligned_alloc (the uniform layer; no lock hooks);
 *   <catalog>-uniform  the same heap through the uniform layer for every
 *                      call: hk_malloc, hk_free, hk_realloc, hk_calloc,
 *                      hk_aligned_alloc (no lock hooks set, so what is added
 *                      is the layer's own dispatch and hook checks); only
 *                      tlsf-uniform runs by default, the others when named;
 *   tlsf-traced        tlsf through the firmware recorder's uniform-call
 *                      wrappers (ports/trace/: hk_trace_heap_malloc, _free,
 *                      _realloc, _calloc, _aligned_alloc): each call is the
 *                      uniform call plus one record, with its stamp (a load
 *                      from a counter word, as reading a timer register is),
 *                      into a RAM ring under the drop policy, no lock. The
 *                      ring is emptied after every record outside the
 *                      measured window (a firmware's drain task), so every
 *                      call takes the recording path, none the drop path.
 *                      Optional: runs when named; tlsf-uniform is its baseline;
 *   pool               the fctma-pools seed's FCTMA: one pool whose block is
 *                      the trace's largest request (header word 6), carved
 *                      from a bump heap on the arena (fctma_pool.h, as the
 *                      host engine's "pool"; not a catalog entry: the
 *                      catalog's poolset adds the size-class search), through
 *                      its direct hk_pool_malloc/hk_pool_free, realloc through
 *                      hk_realloc on the pool's heap (the uniform layer, as
 *                      the catalog entries; no lock hooks);
 *   sdma               the fctma-pools seed's SDMA (sdma.c, as the host engine's
 *                      "sdma"), the arena as its chunk, through its direct
 *                      lab_sdma_malloc/lab_sdma_free, realloc through
 *                      hk_realloc (no split: a block grows only by moving);
 *   freertos-heap4/5   pvPortMalloc, vPortFree, pvPortCalloc (TGT_HAVE_FREERTOS);
 *                      no realloc, no aligned allocation; heap_4's ucHeap is
 *                      tgt_arena, heap_5 gets it with vPortDefineHeapRegions;
 *                      vTaskSuspendAll/xTaskResumeAll are the no-op stubs a
 *                      bare-metal application supplies;
 *   o1heap             o1heapAllocate, o1heapFree on o1heapInit(tgt_arena)
 *                      (TGT_HAVE_O1HEAP); every block is 16-byte aligned;
 *   umm                umm_malloc, umm_free, umm_realloc, umm_calloc on
 *                      umm_init_heap() (TGT_HAVE_UMM); 15-bit block indices
 *                      cap its heap at 256 KiB (less when the arena is
 *                      smaller: 4 bytes and the rounding to its 8-byte
 *                      blocks are left out); the heap starts 4 bytes past
 *                      an 8-byte boundary so that payloads are 8-aligned;
 *   tlsf-conte         Conte's TLSF 3.1 as LVGL bundles it: lv_tlsf_malloc,
 *                      lv_tlsf_free, lv_tlsf_realloc, lv_tlsf_memalign on
 *                      lv_tlsf_create() + lv_tlsf_add_pool(tgt_arena)
 *                      (TGT_HAVE_TLSF_CONTE; asserts off, LV_MEM_SIZE the
 *                      arena size); 4-byte alignment on 32-bit targets;
 *   dmm-chosen-<app>   a dmm configuration of heapkit explore's (TGT_DMM_CONFIGS:
 *                      a header the lab writes, its TGT_DMM_ENTRIES naming them),
 *                      called as the catalog entries are; optional, runs when named;
 *   newlib, picolibc   malloc, free, realloc, calloc, memalign of the
 *                      toolchain's C library (Cortex-M3: newlib, RV32:
 *                      picolibc; libc.a, prebuilt by Debian, not rebuilt
 *                      with our flags), on the port's sbrk heap
 *                      (__heap_start..__heap_end of the board's link.ld), not
 *                      on tgt_arena: its memory limit differs, its code is
 *                      what every program of that toolchain gets.
 * The FreeRTOS heaps, umm and the C library keep their state in globals:
 * each can be set up once per run (the driver replays each allocator once).
 */
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "heapkit/catalog.h"
#include "heapkit/pool.h"
#include "hk_trace.h"
#include "fctma_pool.h"
#include "icount.h"
#include "sdma.h"

extern char __heap_start[], __heap_end[]; /* the port's sbrk heap */

/* A heapkit heap, called the way its own code calls it: through its ops table. */
static int use_heap(tgt_heap_t *h, hk_heap_t *heap)
{
    if (heap == NULL) {
        return -1;
    }
    h->ctx = (uintptr_t)heap;
    h->has_ctx = 1;
    h->malloc_fn = (const void *)heap->ops->malloc;
    h->free_fn = (const void *)heap->ops->free;
    h->realloc_fn = (const void *)hk_realloc;
    h->calloc_fn = (const void *)hk_calloc;
    h->aligned_fn = (const void *)hk_aligned_alloc;
    h->max_align = HK_ALIGN;
    return 0;
}

static int setup_heapkit(tgt_heap_t *h, uint8_t *arena, size_t size, const void *arg)
{
    const hk_catalog_entry_t *e = arg;
    hk_status_t st;
    return use_heap(h, e->make(arena, size, &st));
}

#ifdef TGT_DMM_CONFIGS
#include "heapkit/dmm.h"

static int setup_dmm_config(tgt_heap_t *h, uint8_t *arena, size_t size, const void *arg)
{
    hk_status_t st;
    hk_dmm_t *d = hk_dmm_init(arena, size, arg, &st);
    return use_heap(h, d != NULL ? hk_dmm_heap(d) : NULL);
}

#include TGT_DMM_CONFIGS
#endif

/* The same heap, every call through the uniform layer (lock hooks unset). */
static int setup_heapkit_uniform(tgt_heap_t *h, uint8_t *arena, size_t size, const void *arg)
{
    if (setup_heapkit(h, arena, size, arg) != 0) {
        return -1;
    }
    h->malloc_fn = (const void *)hk_malloc;
    h->free_fn = (const void *)hk_free;
    h->realloc_fn = (const void *)hk_realloc;
    return 0;
}

/* The recorder's ring: far more than one record, so emptying it after each one means no drop. */
static uintptr_t traced_buffer[HK_TRACE_FOOTPRINT(4096) / sizeof(uintptr_t)];
static volatile uint32_t traced_clock; /* what the stamp reads: a counter register on a board */

static uint32_t traced_stamp(void) { return traced_clock; }

/* Drained to nowhere: only the recording, not the sink, is measured. */
static size_t traced_discard(void *ctx, const uint8_t *bytes, size_t n)
{
    (void)ctx;
    (void)bytes;
    return n;
}

static void traced_settle(void) { (void)hk_trace_drain(hk_trace_active); }

static int setup_tlsf_traced(tgt_heap_t *h, uint8_t *arena, size_t size, const void *arg)
{
    hk_trace_config_t config;
    (void)arg;
    memset(&config, 0, sizeof(config));
    config.policy = HK_TRACE_DROP;
    config.sink = traced_discard;
    config.stamp = traced_stamp;
    if (setup_heapkit(h, arena, size, hk_catalog_find("tlsf")) != 0 ||
        hk_trace_init(traced_buffer, sizeof(traced_buffer), &config) == NULL) {
        return -1;
    }
    h->malloc_fn = (const void *)hk_trace_heap_malloc;
    h->free_fn = (const void *)hk_trace_heap_free;
    h->realloc_fn = (const void *)hk_trace_heap_realloc;
    h->calloc_fn = (const void *)hk_trace_heap_calloc;
    h->aligned_fn = (const void *)hk_trace_heap_aligned_alloc;
    h->settle = traced_settle;
    return 0;
}

static int setup_pool(tgt_heap_t *h, uint8_t *arena, size_t size, const void *arg)
{
    hk_status_t st;
    hk_pool_t *pool = lab_fctma_pool(arena, size, tgt_trace_header[TGT_HKC_MAX_REQUEST_WORD], &st);
    (void)arg;
    /* One ctx serves the direct calls (the pool) and hk_realloc (its heap, the pool's first member). */
    if (pool == NULL || (void *)hk_pool_heap(pool) != (void *)pool) {
        return -1;
    }
    h->ctx = (uintptr_t)hk_pool_heap(pool);
    h->has_ctx = 1;
    h->malloc_fn = (const void *)hk_pool_malloc;
    h->free_fn = (const void *)hk_pool_free;
    h->realloc_fn = (const void *)hk_realloc;
    h->max_align = HK_ALIGN;
    return 0;
}

static int setup_sdma(tgt_heap_t *h, uint8_t *arena, size_t size, const void *arg)
{
    hk_status_t st;
    hk_heap_t *heap = lab_sdma_init(arena, size, &st);
    (void)arg;
    if (heap == NULL) {
        return -1;
    }
    h->ctx = (uintptr_t)heap;
    h->has_ctx = 1;
    h->malloc_fn = (const void *)lab_sdma_malloc;
    h->free_fn = (const void *)lab_sdma_free;
    h->realloc_fn = (const void *)hk_realloc;
    h->max_align = HK_ALIGN;
    return 0;
}

#ifdef TGT_HAVE_FREERTOS
#ifndef TGT_FREERTOS_ALIGN
#define TGT_FREERTOS_ALIGN 8
#endif

typedef struct frtos_region {
    uint8_t *start;
    size_t size;
} frtos_region_t; /* HeapRegion_t of FreeRTOS's portable.h */

void *tgt_freertos_heap4_pvPortMalloc(size_t size);
void *tgt_freertos_heap4_pvPortCalloc(size_t nmemb, size_t size);
void tgt_freertos_heap4_vPortFree(void *ptr);
void tgt_freertos_heap5_vPortDefineHeapRegions(const frtos_region_t *regions);
void *tgt_freertos_heap5_pvPortMalloc(size_t size);
void *tgt_freertos_heap5_pvPortCalloc(size_t nmemb, size_t size);
void tgt_freertos_heap5_vPortFree(void *ptr);

/* The scheduler hooks heap_4 and heap_5 call, as a kernel-less application defines them. */
void vTaskSuspendAll(void);
long xTaskResumeAll(void);
void vPortEnterCritical(void);
void vPortExitCritical(void);
void vTaskSuspendAll(void) {}
long xTaskResumeAll(void) { return 0; }
void vPortEnterCritical(void) {}
void vPortExitCritical(void) {}

static int setup_heap4(tgt_heap_t *h, uint8_t *arena, size_t size, const void *arg)
{
    static int used;
    (void)arena;
    (void)size;
    (void)arg;
    if (used++) {
        return -1;
    }
    h->malloc_fn = (const void *)tgt_freertos_heap4_pvPortMalloc;
    h->free_fn = (const void *)tgt_freertos_heap4_vPortFree;
    h->calloc_fn = (const void *)tgt_freertos_heap4_pvPortCalloc;
    h->max_align = TGT_FREERTOS_ALIGN; /* portBYTE_ALIGNMENT of the core's port */
    return 0;
}

static int setup_heap5(tgt_heap_t *h, uint8_t *arena, size_t size, const void *arg)
{
    static int used;
    static frtos_region_t regions[2];
    (void)arg;
    if (used++) {
        return -1;
    }
    regions[0].start = arena;
    regions[0].size = size;
    tgt_freertos_heap5_vPortDefineHeapRegions(regions);
    h->malloc_fn = (const void *)tgt_freertos_heap5_pvPortMalloc;
    h->free_fn = (const void *)tgt_freertos_heap5_vPortFree;
    h->calloc_fn = (const void *)tgt_freertos_heap5_pvPortCalloc;
    h->max_align = TGT_FREERTOS_ALIGN; /* portBYTE_ALIGNMENT of the core's port */
    return 0;
}
#endif

#ifdef TGT_HAVE_O1HEAP
#include "o1heap.h"

static int setup_o1heap(tgt_heap_t *h, uint8_t *arena, size_t size, const void *arg)
{
    O1HeapInstance *o1 = o1heapInit(arena, size);
    (void)arg;
    if (o1 == NULL) {
        return -1;
    }
    h->ctx = (uintptr_t)o1;
    h->has_ctx = 1;
    h->malloc_fn = (const void *)o1heapAllocate;
    h->free_fn = (const void *)o1heapFree;
    h->max_align = O1HEAP_ALIGNMENT;
    return 0;
}
#endif

#ifdef TGT_HAVE_UMM
#include "umm_malloc.h"

/* umm_init() would read these; the driver calls umm_init_heap() instead. */
void *UMM_MALLOC_CFG_HEAP_ADDR;
uint32_t UMM_MALLOC_CFG_HEAP_SIZE;

#define UMM_MAX_HEAP (32768u * 8u)

static int setup_umm(tgt_heap_t *h, uint8_t *arena, size_t size, const void *arg)
{
    static int used;
    size_t heap = size - 4u > UMM_MAX_HEAP ? UMM_MAX_HEAP : (size - 4u) & ~(size_t)7u;
    (void)arg;
    if (used++ || size < 64u) {
        return -1;
    }
    umm_init_heap(arena + 4, heap);
    h->malloc_fn = (const void *)umm_malloc;
    h->free_fn = (const void *)umm_free;
    h->realloc_fn = (const void *)umm_realloc;
    h->calloc_fn = (const void *)umm_calloc;
    h->max_align = 8;
    return 0;
}
#endif

#ifdef TGT_HAVE_TLSF_CONTE
/* The shim first: its include guards keep LVGL's configuration headers out of lv_tlsf.h. */
#include "lv_tlsf_shim.h"

#include "lv_tlsf.h"

static int setup_tlsf_conte(tgt_heap_t *h, uint8_t *arena, size_t size, const void *arg)
{
    lv_tlsf_t tlsf = lv_tlsf_create(arena);
    (void)arg;
    if (tlsf == NULL || size < lv_tlsf_size() ||
        lv_tlsf_add_pool(tlsf, arena + lv_tlsf_size(), size - lv_tlsf_size()) == NULL) {
        return -1;
    }
    h->ctx = (uintptr_t)tlsf;
    h->has_ctx = 1;
    h->malloc_fn = (const void *)lv_tlsf_malloc;
    h->free_fn = (const void *)lv_tlsf_free;
    h->realloc_fn = (const void *)lv_tlsf_realloc;
    h->aligned_fn = (const void *)lv_tlsf_memalign;
    h->max_align = lv_tlsf_align_size();
    return 0;
}
#endif

static int setup_newlib(tgt_heap_t *h, uint8_t *arena, size_t size, const void *arg)
{
    static int used;
    (void)arena;
    (void)size;
    (void)arg;
    if (used++) {
        return -1;
    }
    h->malloc_fn = (const void *)malloc;
    h->free_fn = (const void *)free;
    h->realloc_fn = (const void *)realloc;
    h->calloc_fn = (const void *)calloc;
    h->aligned_fn = (const void *)memalign;
    h->max_align = 8;
    h->lo = (const uint8_t *)__heap_start;
    h->hi = (const uint8_t *)__heap_end;
    return 0;
}

/*
 * "selftest-overlap": a deliberately broken allocator for the driver's own
 * test (lab/tests/test_target.py): every block is the same 64 bytes, so the
 * pattern checks must report corruptions. Never part of the default run.
 */
static void *overlap_malloc(size_t size)
{
    (void)size;
    return tgt_arena + 64;
}

static void overlap_free(void *ptr) { (void)ptr; }

static int setup_overlap(tgt_heap_t *h, uint8_t *arena, size_t size, const void *arg)
{
    (void)arena;
    (void)size;
    (void)arg;
    h->malloc_fn = (const void *)overlap_malloc;
    h->free_fn = (const void *)overlap_free;
    h->max_align = 8;
    return 0;
}

#ifdef __PICOLIBC__
#define TGT_LIBC_NAME "picolibc"
#else
#define TGT_LIBC_NAME "newlib"
#endif

/*
 * "selftest-spin": malloc(size) spins size * 256 times before answering
 * (one block at tgt_arena + 64, as selftest-overlap): a call long enough to
 * wrap the board's counter, so that the test sees it reported saturated.
 * Never part of the default run.
 */
static void *spin_malloc(size_t size)
{
    volatile uint32_t i;
    for (i = 0; i < (uint32_t)size * 256u; i++) {
    }
    return tgt_arena + 64;
}

static int setup_spin(tgt_heap_t *h, uint8_t *arena, size_t size, const void *arg)
{
    (void)arena;
    (void)size;
    (void)arg;
    h->malloc_fn = (const void *)spin_malloc;
    h->free_fn = (const void *)overlap_free;
    h->max_align = 8;
    return 0;
}

static const tgt_alloc_t peers[] = {
    {"tlsf-traced", "traced", setup_tlsf_traced, NULL, 1},
    {"pool", "heapkit", setup_pool, NULL, 0},
    {"sdma", "peer", setup_sdma, NULL, 0},
#ifdef TGT_HAVE_FREERTOS
    {"freertos-heap4", "peer", setup_heap4, NULL, 0},
    {"freertos-heap5", "peer", setup_heap5, NULL, 0},
#endif
#ifdef TGT_HAVE_O1HEAP
    {"o1heap", "peer", setup_o1heap, NULL, 0},
#endif
#ifdef TGT_HAVE_UMM
    {"umm", "peer", setup_umm, NULL, 0},
#endif
#ifdef TGT_HAVE_TLSF_CONTE
    {"tlsf-conte", "peer", setup_tlsf_conte, NULL, 0},
#endif
#ifdef TGT_DMM_CONFIGS
    TGT_DMM_ENTRIES,
#endif
    {TGT_LIBC_NAME, "peer", setup_newlib, NULL, 0},
    {"selftest-overlap", "selftest", setup_overlap, NULL, 1},
    {"selftest-spin", "selftest", setup_spin, NULL, 1},
};

/* The catalog (direct calls), its uniform-layer twins, tlsf-traced, then the single pool (heapkit) and the peers. */
#define N_PEERS (sizeof(peers) / sizeof(peers[0]))
#define UNIFORM_SUFFIX "-uniform"
#define UNIFORM_DEFAULT "tlsf"

size_t tgt_alloc_count(void) { return 2u * hk_catalog_count() + N_PEERS; }

const tgt_alloc_t *tgt_alloc_at(size_t i)
{
    static tgt_alloc_t entry;
    static char name[48];
    size_t n = hk_catalog_count();
    const hk_catalog_entry_t *e = hk_catalog_at(i < n ? i : i - n);
    if (i < n) {
        entry.name = e->name;
        entry.family = "heapkit";
        entry.setup = setup_heapkit;
        entry.arg = e;
        entry.optional = 0;
        return &entry;
    }
    if (i < 2u * n) {
        snprintf(name, sizeof(name), "%s%s", e->name, UNIFORM_SUFFIX);
        entry.name = name;
        entry.family = "uniform";
        entry.setup = setup_heapkit_uniform;
        entry.arg = e;
        entry.optional = strcmp(e->name, UNIFORM_DEFAULT) != 0;
        return &entry;
    }
    i -= 2u * n;
    return i < N_PEERS ? &peers[i] : NULL;
}
