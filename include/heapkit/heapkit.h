/* SPDX-License-Identifier: MIT */
/*
 * heapkit: allocators for small RAM and hard deadlines, behind one interface.
 *
 * Every allocator manages a caller-supplied arena and places its control data
 * at the start of that arena, so the library never calls malloc. Each one
 * offers direct functions (hk_tlsf_malloc, ...) for zero-overhead use, and
 * hk_<name>_heap() gives the uniform handle that tests, the lab and the ports
 * use through hk_malloc(), hk_free(), ... A program pays for what it calls:
 * only hk_<name>_heap() names the allocator's operations table, so a
 * firmware that calls init, malloc and free links those paths alone.
 *
 * The uniform calls take the port's lock hooks; the direct calls do not.
 *
 * Conventions shared by all allocators:
 *   - every pointer returned is aligned to HK_ALIGN (8 by default, or 16);
 *   - malloc(0) returns a unique minimum-size block that must be freed;
 *   - a size that cannot be satisfied (including sizes near SIZE_MAX) returns
 *     NULL and counts one failure; calloc whose n*size overflows does the same;
 *   - free(NULL) does nothing; realloc(NULL, n) is malloc(n); realloc(p, 0)
 *     frees p and returns NULL; a failed realloc leaves p untouched;
 *   - misuse (double free, foreign or interior pointer, corrupted header) is
 *     reported through the error hook and leaves the heap unchanged.
 */
#ifndef HEAPKIT_HEAPKIT_H
#define HEAPKIT_HEAPKIT_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Alignment of every returned pointer. Build-wide: 8 (default) or 16. */
#ifndef HK_ALIGN
#define HK_ALIGN 8
#endif

#if HK_ALIGN != 8 && HK_ALIGN != 16
#error "HK_ALIGN must be 8 or 16"
#endif

/*
 * How much checking every allocator does, build-wide (README: "Hardening
 * levels" has the table of what each level detects and costs):
 *   0  none, as o1heap and TLSF: misuse is undefined behaviour;
 *   1  constant-time checks of every pointer handed in and every block an
 *      operation touches (range, alignment, used/free state, a block's size
 *      against its neighbour's view of it, free-list links); damage is
 *      reported and the damaged block is taken out of service (default);
 *   2  level 1, plus a canary after each block's requested size (checked on
 *      free and realloc) and poisoned free payloads (checked when handed out);
 *   3  level 2, plus a full hk_check before and after every uniform call.
 */
#ifndef HK_HARDENING
#define HK_HARDENING 1
#endif

#if HK_HARDENING < 0 || HK_HARDENING > 3
#error "HK_HARDENING must be 0, 1, 2 or 3"
#endif

/* Result of an init call. */
typedef enum hk_status {
    HK_OK = 0,
    HK_EINVAL = -1,    /* NULL arena or an invalid configuration value */
    HK_ETOOSMALL = -2, /* the arena cannot hold the control data and one block */
    HK_ETOOBIG = -3    /* the arena is larger than one heap of this allocator and build can span
                          (tagged.h: HK_TAG_WIDE 0 spans 256 KiB, tlsf 2 GiB): split it, or use regions */
} hk_status_t;

/* Misuse detected on a pointer handed back to an allocator. */
typedef enum hk_error {
    HK_ERR_DOUBLE_FREE = 1,   /* the block is already free */
    HK_ERR_FOREIGN_PTR = 2,   /* the pointer lies outside this heap */
    HK_ERR_INTERIOR_PTR = 3,  /* inside the heap but not the start of a block */
    HK_ERR_CORRUPT = 4        /* a header or control structure fails validation */
} hk_error_t;

/*
 * What hk_check() found: HK_CHECK_OK, or the first broken invariant.
 * hk_check_name() gives each a short phrase.
 */
typedef enum hk_check {
    HK_CHECK_OK = 0,
    HK_CHECK_RANGE,     /* a block or link lies outside the heap */
    HK_CHECK_ALIGN,     /* a block, link or size is misaligned */
    HK_CHECK_SIZE,      /* a block size is impossible (too small, too large) */
    HK_CHECK_NEIGHBOUR, /* a block's size disagrees with its neighbour's view of it */
    HK_CHECK_STATE,     /* used/free flags disagree (a free block marked used, ...) */
    HK_CHECK_UNMERGED,  /* two free neighbours that should have been merged */
    HK_CHECK_LINK,      /* a free-list link is broken (not doubly linked, loops) */
    HK_CHECK_LIST,      /* a free block is on the wrong list, or a bitmap disagrees */
    HK_CHECK_COUNT,     /* the lists and the block chain hold different free blocks */
    HK_CHECK_STATS,     /* the counters disagree with the blocks */
    HK_CHECK_CANARY,    /* a used block's canary is overwritten (HK_HARDENING >= 2) */
    HK_CHECK_POISON,    /* a free block's poison is overwritten (HK_HARDENING >= 2) */
    HK_CHECK_CONTROL    /* the control structure itself is damaged */
} hk_check_t;

typedef struct hk_heap hk_heap_t;

typedef void (*hk_lock_fn)(void *ctx);
typedef void (*hk_error_fn)(void *ctx, hk_heap_t *heap, hk_error_t error, const void *ptr);

/*
 * Port hooks. NULL members are no-ops; unlock is called only after a lock
 * (set both or neither). The default error behaviour counts the
 * error in hk_stats_t.error_count and leaves the heap untouched; a build with
 * HK_DEBUG defined also asserts.
 */
typedef struct hk_hooks {
    hk_lock_fn lock;
    hk_lock_fn unlock;
    hk_error_fn on_error;
    void *ctx;
} hk_hooks_t;

/*
 * One snapshot of a heap. Byte counts are exact:
 *   capacity = free_bytes + (gross bytes of used blocks)
 * where a block's gross size includes its header; used_granted counts what
 * usable_size() reports and used_requested what the callers asked for.
 */
typedef struct hk_stats {
    size_t capacity;       /* bytes covered by blocks (arena minus control data) */
    size_t free_bytes;     /* gross bytes in free blocks */
    size_t min_ever_free;  /* low-water mark of free_bytes */
    size_t used_requested; /* live bytes as requested; equals used_granted where requests are not
                              stored (buddy; tlsf, seqfit, dmm below HK_HARDENING 2) */
    size_t used_granted;   /* live usable bytes */
    size_t peak_used;      /* high-water mark of gross used bytes: capacity - min_ever_free */
    size_t largest_free;   /* gross size of the largest free block */
    size_t smallest_free;  /* gross size of the smallest free block (0 if none) */
    size_t free_blocks;
    size_t used_blocks;
    size_t alloc_count;    /* successful malloc/calloc/aligned_alloc, and realloc moves */
    size_t free_count;     /* successful frees, and realloc moves */
    size_t realloc_count;  /* successful realloc calls */
    size_t fail_count;     /* allocations that returned NULL */
    size_t split_count;
    size_t coalesce_count;
    size_t error_count;    /* misuse reports */
} hk_stats_t;

/* One block as the walk sees it. */
typedef struct hk_block_info {
    const void *start;   /* first byte of the block, header included */
    size_t size;         /* gross size */
    const void *payload; /* what malloc returned (used blocks) */
    size_t usable;       /* usable_size of a used block; payload room of a free one */
    int used;
} hk_block_info_t;

typedef void (*hk_walk_fn)(void *ctx, const hk_block_info_t *block);

typedef struct hk_ops {
    const char *name;
    void *(*malloc)(hk_heap_t *heap, size_t size);
    /* NULL where the allocator cannot honour alignments above HK_ALIGN. */
    void *(*aligned_alloc)(hk_heap_t *heap, size_t alignment, size_t size);
    /*
     * A whole realloc, for a wrapper of another library's allocator (the
     * lab's peers); NULL for heapkit's allocators, which provide resize.
     */
    void *(*realloc)(hk_heap_t *heap, void *ptr, size_t size);
    /*
     * Resize ptr's block in place to hold size bytes (ptr not NULL, size not
     * 0): ptr, or NULL with nothing changed when the block cannot stay put;
     * misuse is reported. hk_realloc does the rest (NULL, 0, moving).
     */
    void *(*resize)(hk_heap_t *heap, void *ptr, size_t size);
    void (*free)(hk_heap_t *heap, void *ptr);
    size_t (*usable_size)(hk_heap_t *heap, const void *ptr);
    void (*get_stats)(hk_heap_t *heap, hk_stats_t *out);
    void (*walk)(hk_heap_t *heap, hk_walk_fn visit, void *ctx);
    /* HK_CHECK_OK when every invariant holds, otherwise the first broken one. */
    hk_check_t (*check)(hk_heap_t *heap);
    /* Nonzero when ptr lies inside the memory this heap hands out. */
    int (*owns)(const hk_heap_t *heap, const void *ptr);
} hk_ops_t;

/*
 * The uniform handle. It sits at the start of every allocator's control
 * block. stats holds what the allocator counts per operation: capacity and
 * error_count always; free_bytes and min_ever_free in every allocator that
 * regions or the FreeRTOS port can host (all but a lone pool and lfpool,
 * which derive them), since those read them in O(1); the rest as the
 * allocator chooses.
 * Read statistics through hk_get_stats(), which derives the rest (used
 * bytes and blocks, the peak, the largest/smallest free block).
 */
struct hk_heap {
    const hk_ops_t *ops;
    hk_hooks_t hooks;
    hk_stats_t stats;
};

void hk_set_hooks(hk_heap_t *heap, const hk_hooks_t *hooks);

void *hk_malloc(hk_heap_t *heap, size_t size);
void *hk_calloc(hk_heap_t *heap, size_t count, size_t size);
void *hk_realloc(hk_heap_t *heap, void *ptr, size_t size);
/* alignment must be a power of two; returns NULL if the allocator cannot honour it. */
void *hk_aligned_alloc(hk_heap_t *heap, size_t alignment, size_t size);
void hk_free(hk_heap_t *heap, void *ptr);
size_t hk_usable_size(hk_heap_t *heap, const void *ptr);
void hk_get_stats(hk_heap_t *heap, hk_stats_t *out);
/*
 * Restart min_ever_free (and so peak_used) from the free bytes now, as
 * FreeRTOS's xPortResetHeapMinimumEverFreeHeapSize asks. A lone pool and
 * lfpool derive their low-water mark from the blocks ever touched, which
 * this cannot undo.
 */
void hk_restart_low_water(hk_heap_t *heap);
void hk_walk(hk_heap_t *heap, hk_walk_fn visit, void *ctx);
hk_check_t hk_check(hk_heap_t *heap);
int hk_owns(const hk_heap_t *heap, const void *ptr);
const char *hk_name(const hk_heap_t *heap);
const char *hk_error_name(hk_error_t error);
const char *hk_check_name(hk_check_t code);

#ifdef __cplusplus
}
#endif

#endif
