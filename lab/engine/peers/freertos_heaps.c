/* SPDX-License-Identifier: MIT */
/*
 * Peers "freertos-heap2", "freertos-heap4", "freertos-heap5": the real
 * portable/MemMang/heap_2.c, heap_4.c and heap_5.c of FreeRTOS-Kernel
 * V11.2.0 (MIT; fetched from the freertos-next crate by
 * tools/fetch_peers.sh, built by peers/CMakeLists.txt), behind hk_ops_t.
 *
 *   heap_2: best fit over a size-ordered free list, no coalescing.
 *   heap_4: first fit over an address-ordered free list, coalescing.
 *   heap_5: heap_4's algorithm over regions given to vPortDefineHeapRegions().
 * All three: header {pxNextFreeBlock, xBlockSize} in front of every block
 * (16 bytes on x86-64), sizes rounded up to portBYTE_ALIGNMENT (8, from the
 * POSIX port's portmacro.h), the top bit of xBlockSize marks a used block.
 *
 * Building three copies into one binary: each heap file is compiled with
 * LAB_FREERTOS_HEAP=<N>, and freertos/FreeRTOSConfig.h renames its public
 * names (pvPortMalloc -> lab_freertos_heap<N>_pvPortMalloc, ...) with
 * #defines; declarations below take their types from the kernel's own
 * prototypes in portable.h. The scheduler hooks the heaps call
 * (vTaskSuspendAll, xTaskResumeAll, critical sections) are the shared no-ops
 * of freertos/stubs.c. A FreeRTOS heap is a singleton (its state is static):
 * one live instance per heap at a time, make() refuses a second.
 *
 * The arena: the heap must span exactly the caller's [arena, arena + size),
 * so that footprints are offsets from the arena's first byte and the
 * smallest working arena is the configTOTAL_HEAP_SIZE a FreeRTOS user would
 * need, the same meaning as for heapkit's allocators.
 *   - heap_5 takes run-time regions: vPortDefineHeapRegions({arena, size}),
 *     or, after lab_freertos_heap5_second_region(top), two: the arena's top
 *     `top` bytes become a second region, as the BL602 SDK gives heap_5 its
 *     heap_wifi memory beside the main heap. heap_5 ends each region with
 *     its own end marker, so no block ever spans or merges across the two.
 *   - heap_2 and heap_4 only know ucHeap[configTOTAL_HEAP_SIZE], a
 *     compile-time array. With configAPPLICATION_ALLOCATED_HEAP = 1 the
 *     application supplies ucHeap; here configTOTAL_HEAP_SIZE is a run-time
 *     variable and ucHeap a pointer set to the arena before each reset. C
 *     cannot declare an array of run-time size at file scope, so the build
 *     rewrites that one declaration in a generated copy ("extern uint8_t
 *     ucHeap[ configTOTAL_HEAP_SIZE ]" -> "extern uint8_t * ucHeap"; heap_2
 *     also has xFreeBytesRemaining's static initialiser, which
 *     vPortHeapResetState() sets anyway, replaced by 0). Every other line,
 *     prvHeapInit() included, is the kernel's. The alternatives were
 *     rejected: a large fixed ucHeap either lies outside the arena (the
 *     engine counts every block as bad) or, placed at the arena, makes
 *     prvHeapInit() write its end marker (heap_4) or first-block header past
 *     the arena's end no matter what leading or trailing allocation is made
 *     afterwards; heap_2's trailing-block trick would also cost 8 bytes a
 *     real heap_2 does not.
 * make() sets the arena, calls vPortHeapResetState() (V11.2) and then, for
 * heap_2/heap_4, pvPortMalloc(0), which runs the heap's own lazy
 * initialisation and returns NULL without counting anything, so walk() and
 * get_stats() see the initialised heap before the first real allocation.
 * The heap's static control data (xStart, pxEnd, counters: under 100 bytes)
 * lives outside the arena as it does on a target; heap_4/heap_5 keep their
 * 16-byte end marker at the top of the arena, heap_2 its list end outside.
 *
 * What the adapter adds, reading the block header (a mirror of the heaps'
 * BlockLink_t) where the heap has no API:
 *   - usable_size = xBlockSize - header;
 *   - realloc: none of these heaps has one, so malloc + copy + free, as a
 *     FreeRTOS application would write it (it always moves, even to shrink;
 *     on failure the old block is untouched);
 *   - malloc(0) asks for 1 byte (heapkit's convention: a unique block; the
 *     heaps themselves return NULL);
 *   - walk: from the first block by xBlockSize up to the end marker (heap_2:
 *     to the end of its single initial block; it never coalesces, so its
 *     blocks still tile that range); no aligned_alloc (portBYTE_ALIGNMENT is
 *     8 even in an HK_ALIGN=16 build);
 *   - get_stats: free bytes from xPortGetFreeHeapSize(); heap_4/5 also give
 *     min_ever_free and the free-block geometry (vPortGetHeapStats()); heap_2
 *     has neither, so they come from the adapter's own counters and a walk.
 *     used_requested, split_count and coalesce_count are not tracked (0);
 *   - check: failed configASSERTs (counted, as misuse reports, instead of
 *     halting), the walk tiling the heap exactly, free bytes and free blocks
 *     agreeing with the heap's figures, used headers well-formed, and the
 *     adapter's counters agreeing with the walk; heap_4/5 also: no two
 *     adjacent free blocks.
 * Misuse the heaps would not survive (a pointer outside the arena) is
 * reported as HK_ERR_FOREIGN_PTR before reaching them; a free of a block not
 * marked used is left to the heap, whose configASSERT counts it.
 */
#include "allocators.h"

#if defined(HK_HAVE_PEER_FREERTOS_HEAP2) || defined(HK_HAVE_PEER_FREERTOS_HEAP4) || \
    defined(HK_HAVE_PEER_FREERTOS_HEAP5)

#include <string.h>

#include "FreeRTOS.h"
#include "peer_tally.h"

typedef struct frtos_link {
    struct frtos_link *next;
    size_t size;
} frtos_link_t;

/* The heaps' xHeapStructSize and heapBLOCK_ALLOCATED_BITMASK. */
#define FRTOS_HEADER ((sizeof(frtos_link_t) + (size_t)portBYTE_ALIGNMENT_MASK) & ~(size_t)portBYTE_ALIGNMENT_MASK)
#define FRTOS_USED_BIT ((size_t)1 << (sizeof(size_t) * 8u - 1u))

typedef struct frtos_api {
    int kind; /* 2, 4 or 5 */
    void *(*malloc)(size_t size);
    void (*free)(void *ptr);
    size_t (*free_heap_size)(void);
    size_t (*min_ever_free)(void);           /* NULL: heap_2 */
    void (*heap_stats)(HeapStats_t *out);     /* NULL: heap_2 */
    void (*reset)(void);
    void (*define_regions)(const HeapRegion_t *regions); /* heap_5 only */
    uint8_t **uc_heap;                        /* heap_2/heap_4 only */
    size_t *total_heap_size;                  /* heap_2/heap_4 only */
} frtos_api_t;

/* Where one region's blocks lie. */
typedef struct frtos_region {
    uint8_t *first; /* first block */
    uint8_t *end;   /* one past the last block: heap_4/5's end marker */
} frtos_region_t;

typedef struct frtos_heap {
    hk_heap_t heap;
    const frtos_api_t *api;
    const uint8_t *lo; /* the arena */
    const uint8_t *hi;
    frtos_region_t region[2];
    unsigned regions;  /* 1, or 2 for heap_5 with a second region */
    size_t second;     /* heap_5: bytes of the arena's top that make() gives a second region (0: none) */
    size_t used_gross; /* gross bytes of used blocks, for heap_2's low-water mark */
    size_t peak_gross;
    size_t asserts;    /* failed configASSERTs */
    int live;
} frtos_heap_t;

static uintptr_t align_up(uintptr_t x) { return (x + (uintptr_t)portBYTE_ALIGNMENT_MASK) & ~(uintptr_t)portBYTE_ALIGNMENT_MASK; }

static frtos_link_t *link_of(const void *payload) { return (frtos_link_t *)((uintptr_t)payload - FRTOS_HEADER); }

static size_t gross_of(const frtos_link_t *b) { return b->size & ~FRTOS_USED_BIT; }

static int in_arena(const frtos_heap_t *h, const void *p)
{
    unsigned i;
    for (i = 0; i < h->regions; i++) {
        if ((const uint8_t *)p >= h->region[i].first + FRTOS_HEADER && (const uint8_t *)p < h->region[i].end) {
            return 1;
        }
    }
    return 0;
}

/* Bytes the blocks of every region cover. */
static size_t heap_span(const frtos_heap_t *h)
{
    size_t n = 0;
    unsigned i;
    for (i = 0; i < h->regions; i++) {
        n += (size_t)(h->region[i].end - h->region[i].first);
    }
    return n;
}

static void note_assert(frtos_heap_t *h)
{
    h->asserts++;
    h->heap.stats.error_count++;
}

static void note_error(frtos_heap_t *h, hk_error_t error, const void *ptr)
{
    h->heap.stats.error_count++;
    if (h->heap.hooks.on_error != NULL) {
        h->heap.hooks.on_error(h->heap.hooks.ctx, &h->heap, error, ptr);
    }
}

static void *frtos_malloc(hk_heap_t *heap, size_t size)
{
    frtos_heap_t *h = (frtos_heap_t *)heap;
    hk_stats_t *s = &heap->stats;
    size_t gross;
    void *p = h->api->malloc(size == 0 ? 1 : size);
    if (p == NULL) {
        s->fail_count++;
        return NULL;
    }
    gross = gross_of(link_of(p));
    s->alloc_count++;
    s->used_blocks++;
    s->used_granted += gross - FRTOS_HEADER;
    if (s->used_granted > s->peak_used) {
        s->peak_used = s->used_granted;
    }
    h->used_gross += gross;
    if (h->used_gross > h->peak_gross) {
        h->peak_gross = h->used_gross;
    }
    return p;
}

static void frtos_free(hk_heap_t *heap, void *ptr)
{
    frtos_heap_t *h = (frtos_heap_t *)heap;
    hk_stats_t *s = &heap->stats;
    const frtos_link_t *b;
    size_t gross;
    if (ptr == NULL) {
        return;
    }
    if (!in_arena(h, ptr)) {
        note_error(h, HK_ERR_FOREIGN_PTR, ptr);
        return;
    }
    b = link_of(ptr);
    if ((b->size & FRTOS_USED_BIT) == 0 || b->next != NULL) {
        h->api->free(ptr); /* the heap's configASSERT sees it and leaves the heap alone */
        return;
    }
    gross = gross_of(b);
    h->api->free(ptr);
    s->free_count++;
    s->used_blocks--;
    s->used_granted -= gross - FRTOS_HEADER;
    h->used_gross -= gross;
}

static size_t frtos_usable(hk_heap_t *heap, const void *ptr)
{
    frtos_heap_t *h = (frtos_heap_t *)heap;
    if (ptr == NULL || !in_arena(h, ptr)) {
        return 0;
    }
    return gross_of(link_of(ptr)) - FRTOS_HEADER;
}

static void *frtos_realloc(hk_heap_t *heap, void *ptr, size_t size)
{
    void *moved;
    size_t old;
    if (ptr == NULL) {
        return frtos_malloc(heap, size);
    }
    if (size == 0) {
        frtos_free(heap, ptr);
        return NULL;
    }
    if (!in_arena((frtos_heap_t *)heap, ptr)) {
        note_error((frtos_heap_t *)heap, HK_ERR_FOREIGN_PTR, ptr);
        return NULL;
    }
    old = frtos_usable(heap, ptr);
    moved = frtos_malloc(heap, size);
    if (moved != NULL) {
        memcpy(moved, ptr, old < size ? old : size);
        frtos_free(heap, ptr);
        heap->stats.realloc_count++;
    }
    return moved;
}

static void walk_region(const frtos_region_t *r, hk_walk_fn visit, void *ctx)
{
    uint8_t *p = r->first;
    while (p < r->end) {
        const frtos_link_t *b = (const frtos_link_t *)(void *)p;
        hk_block_info_t info;
        size_t gross = gross_of(b);
        if (gross < FRTOS_HEADER || gross > (size_t)(r->end - p)) {
            return; /* corrupt: check() says so */
        }
        info.start = p;
        info.size = gross;
        info.payload = p + FRTOS_HEADER;
        info.usable = gross - FRTOS_HEADER;
        info.used = (b->size & FRTOS_USED_BIT) != 0;
        visit(ctx, &info);
        p += gross;
    }
}

static void frtos_walk(hk_heap_t *heap, hk_walk_fn visit, void *ctx)
{
    const frtos_heap_t *h = (const frtos_heap_t *)heap;
    unsigned i;
    for (i = 0; i < h->regions; i++) {
        walk_region(&h->region[i], visit, ctx);
    }
}

/* The walk's tally, and the used blocks still linked into the free list (heap_4/5 clear the link). */
typedef struct frtos_tally {
    peer_tally_t t;
    size_t bad_used;
} frtos_tally_t;

static void tally_block(void *ctx, const hk_block_info_t *b)
{
    frtos_tally_t *ft = ctx;
    peer_tally_block(&ft->t, b);
    ft->bad_used += b->used && ((const frtos_link_t *)b->start)->next != NULL;
}

static void frtos_tally(frtos_heap_t *h, frtos_tally_t *ft)
{
    unsigned i;
    peer_tally_start(&ft->t, h->region[0].first);
    ft->bad_used = 0;
    for (i = 0; i < h->regions; i++) {
        /* Each region's blocks tile it from its own first block; free blocks in two regions are not neighbours. */
        ft->t.expect = h->region[i].first;
        ft->t.prev_free = 0;
        walk_region(&h->region[i], tally_block, ft);
    }
}

/*
 * heap_5's vPortGetHeapStats() counts the end marker of every region but the
 * last, a 0-byte block on its free list, as a free block: the real count is
 * that many fewer.
 */
static size_t free_blocks_of(const frtos_heap_t *h, const HeapStats_t *hs)
{
    return hs->xNumberOfFreeBlocks - (h->regions - 1u);
}

static void frtos_stats(hk_heap_t *heap, hk_stats_t *out)
{
    frtos_heap_t *h = (frtos_heap_t *)heap;
    *out = heap->stats;
    out->free_bytes = h->api->free_heap_size();
    if (h->api->heap_stats != NULL) {
        HeapStats_t hs;
        h->api->heap_stats(&hs);
        out->min_ever_free = h->api->min_ever_free();
        out->largest_free = hs.xSizeOfLargestFreeBlockInBytes;
        out->smallest_free = hs.xNumberOfFreeBlocks != 0 ? hs.xSizeOfSmallestFreeBlockInBytes : 0;
        out->free_blocks = free_blocks_of(h, &hs);
    } else {
        frtos_tally_t t;
        frtos_tally(h, &t);
        out->min_ever_free = out->capacity - h->peak_gross;
        peer_tally_geometry(&t.t, out);
    }
}

static hk_check_t frtos_check(hk_heap_t *heap)
{
    frtos_heap_t *h = (frtos_heap_t *)heap;
    frtos_tally_t t;
    if (h->asserts != 0) {
        return 1; /* the heap itself saw misuse or corruption */
    }
    frtos_tally(h, &t);
    if (t.t.covered != heap_span(h)) {
        return 2; /* the blocks do not tile the heap */
    }
    if (t.t.free_bytes != h->api->free_heap_size()) {
        return 3;
    }
    if (t.bad_used != 0) {
        return 4; /* a used block still linked into the free list */
    }
    if (!peer_tally_counts_agree(&t.t, heap)) {
        return 5;
    }
    if (h->api->heap_stats != NULL) {
        HeapStats_t hs;
        h->api->heap_stats(&hs);
        if (free_blocks_of(h, &hs) != t.t.free_blocks) {
            return 6;
        }
        if (t.t.adjacent_free) {
            return 7; /* heap_4/5 coalesce on every free */
        }
    }
    return 0;
}

static int frtos_owns(const hk_heap_t *heap, const void *ptr)
{
    const frtos_heap_t *h = (const frtos_heap_t *)heap;
    return peer_in_arena(h->lo, h->hi, ptr);
}

/* Where the heap's initialisation will put a region's first block and its end, so make() can refuse arenas it cannot use. */
static int frtos_geometry(const frtos_heap_t *h, frtos_region_t *r, uint8_t *arena, size_t size)
{
    uintptr_t start = align_up((uintptr_t)arena);
    uintptr_t skip = start - (uintptr_t)arena;
    uintptr_t end;
    if (h->api->kind == 2) {
        /* prvHeapInit: one block of configTOTAL_HEAP_SIZE - portBYTE_ALIGNMENT bytes at the aligned start. */
        if (size < (size_t)portBYTE_ALIGNMENT + FRTOS_HEADER + (size_t)portBYTE_ALIGNMENT) {
            return 0;
        }
        end = start + size - (size_t)portBYTE_ALIGNMENT;
    } else {
        /* heap_4 prvHeapInit / heap_5 vPortDefineHeapRegions: an end marker at the aligned top. */
        if (size < skip + 2 * FRTOS_HEADER + (size_t)portBYTE_ALIGNMENT) {
            return 0;
        }
        end = (start + (size - skip) - FRTOS_HEADER) & ~(uintptr_t)portBYTE_ALIGNMENT_MASK;
        if (end - start < FRTOS_HEADER + (size_t)portBYTE_ALIGNMENT) {
            return 0;
        }
    }
    r->first = (uint8_t *)start;
    r->end = (uint8_t *)end;
    return 1;
}

static hk_heap_t *frtos_make(frtos_heap_t *h, const hk_ops_t *ops, void *arena, size_t size, hk_status_t *status)
{
    const frtos_api_t *api = h->api;
    hk_status_t st = HK_OK;
    size_t main_size = size - (h->second < size ? h->second : size);
    unsigned regions = h->second != 0 ? 2u : 1u;
    frtos_region_t region[2];
    if (arena == NULL || h->live) {
        st = HK_EINVAL;
    } else if (!frtos_geometry(h, &region[0], arena, main_size) ||
               (regions == 2 && !frtos_geometry(h, &region[1], (uint8_t *)arena + main_size, h->second))) {
        st = HK_ETOOSMALL;
    }
    if (st != HK_OK) {
        if (status != NULL) {
            *status = st;
        }
        return NULL;
    }
    h->regions = regions;
    memcpy(h->region, region, regions * sizeof(region[0]));
    if (api->kind == 5) {
        HeapRegion_t defined[3];
        memset(defined, 0, sizeof(defined)); /* the list ends with {NULL, 0} */
        defined[0].pucStartAddress = arena;
        defined[0].xSizeInBytes = main_size;
        if (regions == 2) {
            defined[1].pucStartAddress = (uint8_t *)arena + main_size;
            defined[1].xSizeInBytes = h->second;
        }
        api->reset();
        api->define_regions(defined);
    } else {
        *api->uc_heap = arena;
        *api->total_heap_size = size;
        api->reset();
        (void)api->malloc(0); /* runs prvHeapInit() */
    }
    memset(&h->heap, 0, sizeof(h->heap));
    h->heap.ops = ops;
    h->lo = arena;
    h->hi = (const uint8_t *)arena + size;
    h->used_gross = 0;
    h->peak_gross = 0;
    h->asserts = 0;
    h->heap.stats.capacity = api->free_heap_size();
    h->heap.stats.free_bytes = h->heap.stats.capacity;
    h->heap.stats.min_ever_free = h->heap.stats.capacity;
    if (h->heap.stats.capacity != heap_span(h)) {
        /* the heap laid itself out differently from what this adapter walks: do not pretend */
        if (status != NULL) {
            *status = HK_EINVAL;
        }
        return NULL;
    }
    h->live = 1;
    if (status != NULL) {
        *status = HK_OK;
    }
    return &h->heap;
}

static void frtos_destroy(hk_heap_t *heap) { ((frtos_heap_t *)heap)->live = 0; }

/* One instance of everything above per heap file: its renamed functions, its state, its entry. */
#define FRTOS_OPS(n)                                                                                                  \
    static const hk_ops_t frtos##n##_ops = {"freertos-heap" #n, frtos_malloc, NULL,         frtos_realloc, NULL,  \
                                            frtos_free,         frtos_usable, frtos_stats, frtos_walk,           \
                                            frtos_check,        frtos_owns};                                      \
    static hk_heap_t *frtos##n##_make(void *arena, size_t size, hk_status_t *status)                                  \
    {                                                                                                                  \
        return frtos_make(&frtos##n##_heap, &frtos##n##_ops, arena, size, status);                                   \
    }                                                                                                                  \
    void lab_freertos_heap##n##_assert_failed(int line);                                                             \
    void lab_freertos_heap##n##_assert_failed(int line)                                                              \
    {                                                                                                                  \
        (void)line;                                                                                                    \
        note_assert(&frtos##n##_heap);                                                                                \
    }                                                                                                                  \
    const lab_alloc_t lab_peer_freertos_heap##n = {"freertos-heap" #n, LAB_FAMILY_PEER, frtos##n##_make,              \
                                                   frtos_destroy, LAB_IN_ARENA, NULL}

#define FRTOS_DECLARE(n, fn) extern __typeof__(fn) lab_freertos_heap##n##_##fn

#ifdef HK_HAVE_PEER_FREERTOS_HEAP2
FRTOS_DECLARE(2, pvPortMalloc);
FRTOS_DECLARE(2, vPortFree);
FRTOS_DECLARE(2, xPortGetFreeHeapSize);
FRTOS_DECLARE(2, vPortHeapResetState);
uint8_t *lab_freertos_heap2_ucHeap;
size_t lab_freertos_heap2_total_heap_size;
static const frtos_api_t frtos2_api = {2,
                                       lab_freertos_heap2_pvPortMalloc,
                                       lab_freertos_heap2_vPortFree,
                                       lab_freertos_heap2_xPortGetFreeHeapSize,
                                       NULL,
                                       NULL,
                                       lab_freertos_heap2_vPortHeapResetState,
                                       NULL,
                                       &lab_freertos_heap2_ucHeap,
                                       &lab_freertos_heap2_total_heap_size};
static frtos_heap_t frtos2_heap = {.api = &frtos2_api};
FRTOS_OPS(2);
#endif

#ifdef HK_HAVE_PEER_FREERTOS_HEAP4
FRTOS_DECLARE(4, pvPortMalloc);
FRTOS_DECLARE(4, vPortFree);
FRTOS_DECLARE(4, xPortGetFreeHeapSize);
FRTOS_DECLARE(4, xPortGetMinimumEverFreeHeapSize);
FRTOS_DECLARE(4, vPortGetHeapStats);
FRTOS_DECLARE(4, vPortHeapResetState);
uint8_t *lab_freertos_heap4_ucHeap;
size_t lab_freertos_heap4_total_heap_size;
static const frtos_api_t frtos4_api = {4,
                                       lab_freertos_heap4_pvPortMalloc,
                                       lab_freertos_heap4_vPortFree,
                                       lab_freertos_heap4_xPortGetFreeHeapSize,
                                       lab_freertos_heap4_xPortGetMinimumEverFreeHeapSize,
                                       lab_freertos_heap4_vPortGetHeapStats,
                                       lab_freertos_heap4_vPortHeapResetState,
                                       NULL,
                                       &lab_freertos_heap4_ucHeap,
                                       &lab_freertos_heap4_total_heap_size};
static frtos_heap_t frtos4_heap = {.api = &frtos4_api};
FRTOS_OPS(4);
#endif

#ifdef HK_HAVE_PEER_FREERTOS_HEAP5
FRTOS_DECLARE(5, pvPortMalloc);
FRTOS_DECLARE(5, vPortFree);
FRTOS_DECLARE(5, xPortGetFreeHeapSize);
FRTOS_DECLARE(5, xPortGetMinimumEverFreeHeapSize);
FRTOS_DECLARE(5, vPortGetHeapStats);
FRTOS_DECLARE(5, vPortHeapResetState);
FRTOS_DECLARE(5, vPortDefineHeapRegions);
static const frtos_api_t frtos5_api = {5,
                                       lab_freertos_heap5_pvPortMalloc,
                                       lab_freertos_heap5_vPortFree,
                                       lab_freertos_heap5_xPortGetFreeHeapSize,
                                       lab_freertos_heap5_xPortGetMinimumEverFreeHeapSize,
                                       lab_freertos_heap5_vPortGetHeapStats,
                                       lab_freertos_heap5_vPortHeapResetState,
                                       lab_freertos_heap5_vPortDefineHeapRegions,
                                       NULL,
                                       NULL};
static frtos_heap_t frtos5_heap = {.api = &frtos5_api};
FRTOS_OPS(5);

void lab_freertos_heap5_second_region(size_t top) { frtos5_heap.second = top; }
#endif

#endif
