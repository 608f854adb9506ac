/*
 * The allocators the Cortex-M3 instruction counter replays: every heapkit
 * catalog entry, then the peers whose sources the build found (fetched from
 * crates.io by tools/fetch_peers.sh, compiled by lab/heapkit/target.py with
 * the same compiler and flags as heapkit; nothing of theirs is in this
 * repository). Each is called natively, the way an application on the
 * board would call it:
 *
 *   heapkit (catalog)  heap->ops->malloc/free/realloc(heap, ...): the
 *                      allocator's own function behind its ops table (the
 *                      direct hk_<x>_malloc plus one tail-call branch);
 *                      realloc, calloc and aligned through hk_realloc, hk_calloc and
 *                      hk_aligned_alloc (the uniform layer; no lock hooks);
 *   pool               one FCTMA pool of POOL_BLOCK-byte blocks carved from a
 *                      bump heap on the arena (not a catalog entry: the
 *                      catalog's poolset adds the size-class search), through
 *                      its direct hk_pool_malloc/hk_pool_free;
 *   freertos-heap4/5   pvPortMalloc, vPortFree, pvPortCalloc (TGT_HAVE_FREERTOS);
 *                      no realloc, no aligned allocation; heap_4's ucHeap is
 *                      tgt_arena, heap_5 gets it with vPortDefineHeapRegions;
 *                      vTaskSuspendAll/xTaskResumeAll are the no-op stubs a
 *                      bare-metal application supplies;
 *   o1heap             o1heapAllocate, o1heapFree on o1heapInit(tgt_arena)
 *                      (TGT_HAVE_O1HEAP); every block is 16-byte aligned;
 *   umm                umm_malloc, umm_free, umm_realloc, umm_calloc on
 *                      umm_init_heap() (TGT_HAVE_UMM); 15-bit block indices
 *                      cap its heap at 256 KiB; the heap starts 4 bytes past
 *                      an 8-byte boundary so that payloads are 8-aligned;
 *   newlib             malloc, free, realloc, calloc, memalign of the
 *                      toolchain's newlib (libc.a, prebuilt by Debian, not
 *                      rebuilt with our flags), on the port's _sbrk heap in
 *                      PSRAM (ports/baremetal/common/runtime.c), not on
 *                      tgt_arena: its memory limit differs, its code is
 *                      what every arm-none-eabi newlib program gets.
 * The FreeRTOS heaps, umm and newlib keep their state in globals: each
 * can be set up once per run (the driver replays each allocator once).
 */
#include <malloc.h>
#include <stdlib.h>

#include "heapkit/bump.h"
#include "heapkit/catalog.h"
#include "heapkit/pool.h"
#include "icount.h"

extern char __heap_start[], __heap_end[]; /* the port's sbrk heap */

static int setup_heapkit(tgt_heap_t *h, uint8_t *arena, size_t size, const void *arg)
{
    const hk_catalog_entry_t *e = arg;
    hk_status_t st;
    hk_heap_t *heap = e->make(arena, size, &st);
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

#define POOL_BLOCK 128u
/* Blocks per pool: far fewer than the arena holds, so the bump heap always has room. */
#define POOL_BYTES_PER_BLOCK 192u

static int setup_pool(tgt_heap_t *h, uint8_t *arena, size_t size, const void *arg)
{
    hk_status_t st;
    hk_bump_t *bump = hk_bump_init(arena, size, &st);
    hk_pool_t *pool = bump != NULL ? hk_pool_create(hk_bump_heap(bump), POOL_BLOCK, size / POOL_BYTES_PER_BLOCK) : NULL;
    (void)arg;
    if (pool == NULL) {
        return -1;
    }
    h->ctx = (uintptr_t)pool;
    h->has_ctx = 1;
    h->malloc_fn = (const void *)hk_pool_malloc;
    h->free_fn = (const void *)hk_pool_free;
    h->realloc_fn = (const void *)hk_pool_realloc;
    h->max_align = HK_ALIGN;
    return 0;
}

#ifdef TGT_HAVE_FREERTOS
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
    h->max_align = 8;
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
    h->max_align = 8;
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
    (void)arg;
    if (used++ || size < UMM_MAX_HEAP + 8u) {
        return -1;
    }
    umm_init_heap(arena + 4, UMM_MAX_HEAP);
    h->malloc_fn = (const void *)umm_malloc;
    h->free_fn = (const void *)umm_free;
    h->realloc_fn = (const void *)umm_realloc;
    h->calloc_fn = (const void *)umm_calloc;
    h->max_align = 8;
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

static const tgt_alloc_t peers[] = {
    {"pool", "heapkit", setup_pool, NULL},
#ifdef TGT_HAVE_FREERTOS
    {"freertos-heap4", "peer", setup_heap4, NULL},
    {"freertos-heap5", "peer", setup_heap5, NULL},
#endif
#ifdef TGT_HAVE_O1HEAP
    {"o1heap", "peer", setup_o1heap, NULL},
#endif
#ifdef TGT_HAVE_UMM
    {"umm", "peer", setup_umm, NULL},
#endif
    {"newlib", "peer", setup_newlib, NULL},
    {"selftest-overlap", "selftest", setup_overlap, NULL},
};

/* After the catalog: the single pool (heapkit) and the peers. */
#define N_PEERS (sizeof(peers) / sizeof(peers[0]))

size_t tgt_alloc_count(void) { return hk_catalog_count() + N_PEERS; }

const tgt_alloc_t *tgt_alloc_at(size_t i)
{
    static tgt_alloc_t entry;
    const hk_catalog_entry_t *e = hk_catalog_at(i);
    if (e != NULL) {
        entry.name = e->name;
        entry.family = "heapkit";
        entry.setup = setup_heapkit;
        entry.arg = e;
        return &entry;
    }
    i -= hk_catalog_count();
    return i < N_PEERS ? &peers[i] : NULL;
}
