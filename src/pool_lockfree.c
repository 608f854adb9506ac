/*
 * lfpool: an ISR-safe pool, the fctma-pools seed's future work. Blocks of one
 * size, alloc and free lock-free and O(1), so an interrupt handler can take
 * and return blocks while tasks do the same. C11 <stdatomic.h>.
 *
 * Algorithm: a Treiber stack of free blocks. Its head is one 32-bit atomic
 * word, (tag << 16) | index of the first free block (0xFFFF: empty), so a
 * single 32-bit compare-and-swap (LDREX/STREX on Cortex-M3/M4, LR/SC of the
 * RV32 A extension) pops or pushes. Every successful CAS adds one to the tag,
 * which defeats ABA: a pop that read head = (t, i) and next(i) = j can only
 * install j if the head still reads (t, i), and any pop and push of i in
 * between changed the tag. The tag wraps after 65536 head changes, so the
 * guard fails only if one pop is suspended between reading the head and its
 * CAS while a multiple of exactly 65536 pushes and pops complete and leave
 * the same block on top: on a microcontroller that is an ISR storm of
 * 65536 operations inside a window of a few instructions.
 *
 * Per-block state lives out of band, in a table of 32-bit atomic words after
 * the control struct (never inside a payload, so user writes cannot race
 * with it and overruns cannot silently relink the list):
 *   high half  LF_FREE or LF_USED (anything else: corrupted)
 *   low half   free: the next free block's index; used: usable - requested
 * Free moves the word from USED to FREE with one CAS, so of two racing frees
 * of one block exactly one wins and the other is reported as a double free.
 *
 * Limits: at most HK_LFPOOL_MAX_BLOCKS (65535) blocks, the 16-bit index
 * reserving 0xFFFF; block size at most HK_LFPOOL_MAX_BLOCK_SIZE, the slack
 * living in 16 bits.
 *
 * Time: alloc and free are lock-free, O(1) per attempt: a compare-and-swap
 * fails when another context changed the head meanwhile, or spuriously
 * when an exception clears the exclusive monitor (LDREX/STREX, LR/SC), so
 * the number of retries is bounded by the interleaved operations and
 * exceptions, not by the pool. walk and check are O(blocks) and need the
 * pool quiet.
 *
 * Overhead: 4 bytes per block in the state table, each block rounded up to
 * HK_ALIGN, and the control struct (see include/heapkit/pool.h).
 *
 * Statistics: the counters that alloc and free change are atomics inside
 * the pool; get_stats merges them with heap.stats, which keeps the capacity
 * and the counters the uniform layer and hk_report() touch (fail_count from
 * hk_calloc/hk_aligned_alloc, error_count). A snapshot taken while other
 * contexts allocate may mix moments; with nothing running concurrently it
 * is exact. Misuse reports count error_count without atomics: misuse
 * reported from two contexts at once can lose a count (the hook still runs).
 *
 * Cortex-M0/M0+ (ARMv6-M) have no exclusive access instructions: this file
 * compiles there, but the compiler calls libatomic's __atomic_* functions,
 * which must be provided (typically by masking interrupts) for ISR safety.
 *
 * Misuse detected: foreign pointers (outside the blocks), interior pointers
 * (not at a block start), double free (state word FREE), corrupted state
 * words. check() also bounds the free-list walk, so a cycle is caught.
 */
#include <stdatomic.h>

#include "heapkit/pool.h"
#include "hk_internal.h"

#define LF_NIL 0xFFFFu
#define LF_LOW 0xFFFFu
#define LF_TAG_STEP 0x10000u
#define LF_STATE 0xFFFF0000u
#define LF_FREE 0x5EED0000u
#define LF_USED 0xA11C0000u
#define LF_MAGIC ((uintptr_t)0x1F9001u)

/*
 * Test seam: runs in a pop between reading the head and its CAS, where an
 * interrupt can land. Empty by default; tests/test_pool.c defines it to run
 * other operations there and so replay the interleavings ABA needs.
 */
#ifndef HK_LFPOOL_PREEMPT
#define HK_LFPOOL_PREEMPT(pool) ((void)(pool))
#endif

HK_STATIC_ASSERT(HK_LFPOOL_MAX_BLOCKS == LF_NIL, nil_is_past_the_last_index);
HK_STATIC_ASSERT(HK_LFPOOL_MAX_BLOCK_SIZE <= LF_LOW, slack_fits_the_low_half);

struct hk_lfpool {
    hk_heap_t heap;
    _Atomic uint32_t head;    /* tag << 16 | index of the first free block */
    uint32_t count;
    uintptr_t magic;          /* LF_MAGIC ^ the pool's address */
    unsigned char *blocks;
    size_t stride;            /* block size rounded up to HK_ALIGN: all of it usable */
    size_t block_size;        /* as created: what hk_lfpool_alloc requests */
    atomic_size_t used;       /* blocks handed out */
    atomic_size_t max_used;
    atomic_size_t requested;
    atomic_size_t alloc_count;
    atomic_size_t free_count;
    atomic_size_t realloc_count;
    atomic_size_t fail_count; /* this pool's; heap.stats.fail_count has the uniform layer's */
    _Atomic uint32_t state[]; /* one word per block: LF_FREE | next, or LF_USED | slack */
};

static uintptr_t magic_of(const hk_lfpool_t *pool) { return LF_MAGIC ^ (uintptr_t)pool; }
static size_t capacity_of(const hk_lfpool_t *pool) { return (size_t)pool->count * pool->stride; }
static void *payload_of(const hk_lfpool_t *pool, uint32_t index) { return pool->blocks + index * pool->stride; }

/* The head after one more change, naming block index. */
static uint32_t next_head(uint32_t head, uint32_t index) { return ((head & LF_STATE) + LF_TAG_STEP) | index; }

static int word_used(const hk_lfpool_t *pool, uint32_t word)
{
    return (word & LF_STATE) == LF_USED && (word & LF_LOW) <= pool->stride;
}

static void *count_fail(hk_lfpool_t *pool)
{
    atomic_fetch_add_explicit(&pool->fail_count, 1u, memory_order_relaxed);
    return NULL;
}

HK_DEFINE_OPS_REALLOC(hk_lfpool, hk_lfpool_t, "lfpool", NULL);

hk_lfpool_t *hk_lfpool_init(void *arena, size_t size, size_t block_size, hk_status_t *status)
{
    uintptr_t lo = (uintptr_t)arena;
    hk_lfpool_t *pool;
    size_t control;
    size_t stride;
    size_t count;
    uint32_t i;

    if (arena == NULL || block_size == 0 || block_size > HK_LFPOOL_MAX_BLOCK_SIZE) {
        hk_init_status(status, HK_EINVAL);
        return NULL;
    }
    size = hk_arena_room(lo, size);
    stride = hk_round_up(block_size, HK_ALIGN);
    pool = (hk_lfpool_t *)hk_align_up_uptr(lo, HK_ALIGN);
    control = (size_t)((uintptr_t)pool - lo) + sizeof(hk_lfpool_t);
    /* Each block costs its state word and its stride; the blocks start up to HK_ALIGN later. */
    count = size > control + HK_ALIGN ? (size - control - HK_ALIGN) / (stride + sizeof(uint32_t)) : 0;
    if (count > HK_LFPOOL_MAX_BLOCKS) {
        count = HK_LFPOOL_MAX_BLOCKS;
    }
    if (count == 0) {
        hk_init_status(status, HK_ETOOSMALL);
        return NULL;
    }
    hk_heap_setup(&pool->heap, &hk_lfpool_ops, count * stride);
    pool->count = (uint32_t)count;
    pool->magic = magic_of(pool);
    pool->blocks = (unsigned char *)hk_align_up_uptr((uintptr_t)&pool->state[count], HK_ALIGN);
    pool->stride = stride;
    pool->block_size = block_size;
    atomic_init(&pool->used, 0u);
    atomic_init(&pool->max_used, 0u);
    atomic_init(&pool->requested, 0u);
    atomic_init(&pool->alloc_count, 0u);
    atomic_init(&pool->free_count, 0u);
    atomic_init(&pool->realloc_count, 0u);
    atomic_init(&pool->fail_count, 0u);
    for (i = 0; i < pool->count; i++) {
        atomic_init(&pool->state[i], LF_FREE | (i + 1u < pool->count ? i + 1u : LF_NIL));
    }
    atomic_init(&pool->head, 0u);
    hk_init_status(status, HK_OK);
    return pool;
}

hk_heap_t *hk_lfpool_heap(hk_lfpool_t *pool) { return &pool->heap; }

void *hk_lfpool_alloc(hk_lfpool_t *pool) { return hk_lfpool_malloc(pool, pool->block_size); }

void *hk_lfpool_malloc(hk_lfpool_t *pool, size_t size)
{
    uint32_t head;
    uint32_t index;
    uint32_t next;
    size_t used;
    size_t peak;

    if (size > pool->stride) {
        return count_fail(pool);
    }
    head = atomic_load_explicit(&pool->head, memory_order_acquire);
    do {
        index = head & LF_LOW;
        if (index == LF_NIL) {
            return count_fail(pool);
        }
        /* Stale if another context popped index meanwhile; the tag then fails the CAS. */
        next = atomic_load_explicit(&pool->state[index], memory_order_relaxed) & LF_LOW;
        HK_LFPOOL_PREEMPT(pool);
    } while (!atomic_compare_exchange_weak_explicit(&pool->head, &head, next_head(head, next), memory_order_acquire,
                                                    memory_order_acquire));
    atomic_store_explicit(&pool->state[index], LF_USED | (uint32_t)(pool->stride - size), memory_order_relaxed);

    used = atomic_fetch_add_explicit(&pool->used, 1u, memory_order_relaxed) + 1u;
    peak = atomic_load_explicit(&pool->max_used, memory_order_relaxed);
    while (used > peak &&
           !atomic_compare_exchange_weak_explicit(&pool->max_used, &peak, used, memory_order_relaxed,
                                                  memory_order_relaxed)) {
        continue;
    }
    atomic_fetch_add_explicit(&pool->requested, size, memory_order_relaxed);
    atomic_fetch_add_explicit(&pool->alloc_count, 1u, memory_order_relaxed);
    return payload_of(pool, index);
}

/* Index of the block ptr starts, or LF_NIL after reporting a pointer that starts none. */
static uint32_t block_index(hk_lfpool_t *pool, const void *ptr)
{
    uintptr_t a = (uintptr_t)ptr;
    uintptr_t base = (uintptr_t)pool->blocks;
    if (a < base || a - base >= capacity_of(pool)) {
        hk_report(&pool->heap, HK_ERR_FOREIGN_PTR, ptr);
        return LF_NIL;
    }
    if ((a - base) % pool->stride != 0) {
        hk_report(&pool->heap, HK_ERR_INTERIOR_PTR, ptr);
        return LF_NIL;
    }
    return (uint32_t)((a - base) / pool->stride);
}

static void report_state(hk_lfpool_t *pool, uint32_t word, const void *ptr)
{
    hk_report(&pool->heap, (word & LF_STATE) == LF_FREE ? HK_ERR_DOUBLE_FREE : HK_ERR_CORRUPT, ptr);
}

void hk_lfpool_free(hk_lfpool_t *pool, void *ptr)
{
    uint32_t index;
    uint32_t word;
    uint32_t head;

    if (ptr == NULL) {
        return;
    }
    index = block_index(pool, ptr);
    if (index == LF_NIL) {
        return;
    }
    word = atomic_load_explicit(&pool->state[index], memory_order_relaxed);
    do {
        if (!word_used(pool, word)) {
            report_state(pool, word, ptr);
            return;
        }
    } while (!atomic_compare_exchange_weak_explicit(&pool->state[index], &word, LF_FREE | LF_NIL,
                                                    memory_order_acq_rel, memory_order_relaxed));

    /* Counted before the push, so `used` never exceeds the blocks actually off the list. */
    atomic_fetch_sub_explicit(&pool->requested, pool->stride - (word & LF_LOW), memory_order_relaxed);
    atomic_fetch_sub_explicit(&pool->used, 1u, memory_order_relaxed);
    atomic_fetch_add_explicit(&pool->free_count, 1u, memory_order_relaxed);

    head = atomic_load_explicit(&pool->head, memory_order_relaxed);
    do {
        atomic_store_explicit(&pool->state[index], LF_FREE | (head & LF_LOW), memory_order_relaxed);
    } while (!atomic_compare_exchange_weak_explicit(&pool->head, &head, next_head(head, index), memory_order_release,
                                                    memory_order_relaxed));
}

void *hk_lfpool_realloc(hk_lfpool_t *pool, void *ptr, size_t size)
{
    uint32_t index;
    uint32_t word;

    if (ptr == NULL) {
        return hk_lfpool_malloc(pool, size);
    }
    if (size == 0) {
        hk_lfpool_free(pool, ptr);
        return NULL;
    }
    index = block_index(pool, ptr);
    if (index == LF_NIL) {
        return NULL;
    }
    word = atomic_load_explicit(&pool->state[index], memory_order_relaxed);
    do {
        if (!word_used(pool, word)) {
            report_state(pool, word, ptr);
            return NULL;
        }
        if (size > pool->stride) {
            return count_fail(pool); /* no larger block to move to */
        }
    } while (!atomic_compare_exchange_weak_explicit(&pool->state[index], &word,
                                                    LF_USED | (uint32_t)(pool->stride - size), memory_order_relaxed,
                                                    memory_order_relaxed));
    atomic_fetch_sub_explicit(&pool->requested, pool->stride - (word & LF_LOW), memory_order_relaxed);
    atomic_fetch_add_explicit(&pool->requested, size, memory_order_relaxed);
    atomic_fetch_add_explicit(&pool->realloc_count, 1u, memory_order_relaxed);
    return ptr;
}

size_t hk_lfpool_usable_size(hk_lfpool_t *pool, const void *ptr)
{
    uint32_t index;
    uint32_t word;
    if (ptr == NULL) {
        return 0;
    }
    index = block_index(pool, ptr);
    if (index == LF_NIL) {
        return 0;
    }
    word = atomic_load_explicit(&pool->state[index], memory_order_relaxed);
    if (!word_used(pool, word)) {
        report_state(pool, word, ptr);
        return 0;
    }
    return pool->stride;
}

void hk_lfpool_get_stats(hk_lfpool_t *pool, hk_stats_t *out)
{
    size_t used = atomic_load_explicit(&pool->used, memory_order_relaxed);
    size_t max_used = atomic_load_explicit(&pool->max_used, memory_order_relaxed);
    *out = pool->heap.stats;
    out->used_blocks = used;
    out->free_blocks = pool->count - used;
    out->used_granted = used * pool->stride;
    out->used_requested = atomic_load_explicit(&pool->requested, memory_order_relaxed);
    out->free_bytes = out->free_blocks * pool->stride;
    out->peak_used = max_used * pool->stride;
    out->min_ever_free = capacity_of(pool) - max_used * pool->stride;
    out->largest_free = out->free_blocks != 0 ? pool->stride : 0;
    out->smallest_free = out->largest_free;
    out->alloc_count = atomic_load_explicit(&pool->alloc_count, memory_order_relaxed);
    out->free_count = atomic_load_explicit(&pool->free_count, memory_order_relaxed);
    out->realloc_count = atomic_load_explicit(&pool->realloc_count, memory_order_relaxed);
    out->fail_count = pool->heap.stats.fail_count + atomic_load_explicit(&pool->fail_count, memory_order_relaxed);
}

void hk_lfpool_walk(hk_lfpool_t *pool, hk_walk_fn visit, void *ctx)
{
    uint32_t i;
    for (i = 0; i < pool->count; i++) {
        uint32_t word = atomic_load_explicit(&pool->state[i], memory_order_acquire);
        hk_block_info_t info;
        info.start = payload_of(pool, i);
        info.size = pool->stride;
        info.payload = info.start;
        info.usable = pool->stride;
        info.used = (word & LF_STATE) == LF_USED;
        visit(ctx, &info);
    }
}

int hk_lfpool_check(hk_lfpool_t *pool)
{
    uint32_t index = atomic_load_explicit(&pool->head, memory_order_acquire) & LF_LOW;
    size_t listed = 0;
    size_t free_count = 0;
    size_t used = 0;
    size_t requested = 0;
    size_t max_used = atomic_load_explicit(&pool->max_used, memory_order_relaxed);
    uint32_t i;

    if (pool->magic != magic_of(pool) || pool->count == 0 || pool->count > HK_LFPOOL_MAX_BLOCKS ||
        pool->stride == 0 || pool->stride % HK_ALIGN != 0 || pool->heap.stats.capacity != capacity_of(pool)) {
        return 1;
    }
    while (index != LF_NIL) {
        uint32_t word;
        if (index >= pool->count || ++listed > pool->count) {
            return 2; /* a link out of the pool, or a cycle */
        }
        word = atomic_load_explicit(&pool->state[index], memory_order_relaxed);
        if ((word & LF_STATE) != LF_FREE) {
            return 3;
        }
        index = word & LF_LOW;
    }
    for (i = 0; i < pool->count; i++) {
        uint32_t word = atomic_load_explicit(&pool->state[i], memory_order_relaxed);
        if ((word & LF_STATE) == LF_FREE) {
            free_count++;
        } else if (word_used(pool, word)) {
            used++;
            requested += pool->stride - (word & LF_LOW);
        } else {
            return 4;
        }
    }
    if (free_count != listed) {
        return 5;
    }
    if (used != atomic_load_explicit(&pool->used, memory_order_relaxed) ||
        requested != atomic_load_explicit(&pool->requested, memory_order_relaxed) || max_used < used ||
        max_used > pool->count) {
        return 6;
    }
    return 0;
}

int hk_lfpool_owns(const hk_lfpool_t *pool, const void *ptr)
{
    return (uintptr_t)ptr >= (uintptr_t)pool->blocks && (uintptr_t)ptr - (uintptr_t)pool->blocks < capacity_of(pool);
}
