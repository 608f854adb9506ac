/* SPDX-License-Identifier: MIT */
/*
 * lfpool: an ISR-safe pool, the fctma-pools seed's future work. Blocks of one
 * size, alloc and free lock-free and O(1), so an interrupt handler can take
 * and return blocks while tasks do the same. C11 <stdatomic.h>.
 *
 * Algorithm: a Treiber stack of free blocks. Its head is one 32-bit atomic
 * word, ((index + 1) of the first free block << 16) | tag (0: empty), so a
 * single 32-bit compare-and-swap (LDREX/STREX on Cortex-M3/M4, LR/SC of the
 * RV32 A extension) pops or pushes. Every push adds one to the tag, which
 * defeats ABA: a pop that read head = (t, i) and next(i) = j can only
 * install j if the head still reads (t, i); for i to be on top again after
 * another context popped it, it must have been pushed, which changed the
 * tag (pops leave the tag alone: one instruction less on the hot path). The
 * tag wraps after 65536 pushes, so the guard fails only if one pop is
 * suspended between reading the head and its CAS while a multiple of
 * exactly 65536 pushes complete and leave the same block on top: on a
 * microcontroller that is an ISR storm of 65536 operations inside a window
 * of a few instructions.
 *
 * Per-block state lives out of band, in a table of 32-bit atomic words after
 * the control struct (never inside a payload, so user writes cannot race
 * with it and overruns cannot relink the list):
 *   top byte   LF_FREE, LF_PRISTINE (free, never handed out since init),
 *              LF_USED or LF_DEAD (taken out of service after damage),
 *              the next byte 0; anything else: corrupted
 *   low half   free: the next free block's index + 1 (0: none);
 *              used: the block's stride - requested
 * so one subtraction and one unsigned comparison check a word: a free word
 * less LF_FREE (and the PRISTINE bit) is its link, which must not exceed the
 * block count; a used word less LF_USED is its slack, at most the stride.
 * Free moves the word from USED to FREE with one CAS, so of two racing frees
 * of one block exactly one wins and the other is reported as a double free.
 * init threads every block in address order, PRISTINE; pushes go to the
 * head, so the never-used blocks stay a suffix of the blocks at the list's
 * tail, and the count of blocks no longer PRISTINE (a binary search) is the
 * most that were ever out of the list at once: the high-water mark behind
 * min_ever_free, kept without an operation paying for it.
 *
 * Limits: at most HK_LFPOOL_MAX_BLOCKS (65535) blocks, the 16-bit link
 * reserving 0; block size at most HK_LFPOOL_MAX_BLOCK_SIZE, the slack
 * living in 16 bits.
 *
 * Cost on Cortex-M3 at -O2 (HK_HARDENING 1, direct calls): malloc 39, free
 * 44 instructions at most without contention.
 *
 * Time: alloc and free are lock-free, O(1) per attempt: a compare-and-swap
 * fails when another context changed the head meanwhile, or spuriously
 * when an exception clears the exclusive monitor (LDREX/STREX, LR/SC), so
 * the number of retries is bounded by the interleaved operations and
 * exceptions, not by the pool. get_stats is O(log blocks + blocks handed out
 * so far); walk and check are O(blocks) and need the pool quiet.
 *
 * Overhead: 4 bytes per block in the state table, each block rounded up to
 * HK_ALIGN (with LF_CANARY_ROOM added at level 2), and the control struct
 * (see include/heapkit/pool.h).
 *
 * Statistics: alloc and free change one counter between them: alloc_count
 * (an atomic inside the pool); the blocks in use and the bytes they
 * requested are read from the state table by get_stats, and free_count is
 * alloc_count less the blocks in use. peak_used is capacity - min_ever_free
 * (the high-water mark of gross used bytes). heap.stats keeps the capacity and the
 * counters the uniform layer and hk_report() touch (fail_count and
 * realloc_count from hk_malloc/hk_realloc and the rest of the uniform calls,
 * error_count); direct calls count no failures. A snapshot taken while other
 * contexts allocate may mix moments (and under concurrency the high-water
 * mark may count a block popped while another was being pushed); with
 * nothing running concurrently it is exact. Misuse reports count
 * error_count, and the uniform layer fail_count and realloc_count, without
 * atomics: two contexts counting at once can lose a count (the hook still
 * runs, the calls themselves stay lock-free and correct).
 *
 * Cortex-M0/M0+ (ARMv6-M) have no exclusive access instructions: this file
 * compiles there, but the compiler calls libatomic's __atomic_* functions,
 * which must be provided (typically by masking interrupts) for ISR safety.
 *
 * Hardening (HK_HARDENING, heapkit.h):
 *   0  no checks.
 *   1  every pointer handed in: range (foreign), block boundary (interior),
 *      state word (double free when FREE, corrupted when not USED); every
 *      block malloc takes: its state word must be FREE or PRISTINE and its
 *      link an index within the pool, else (once a second read of the head
 *      shows the read was not merely stale) HK_ERR_CORRUPT is reported, the
 *      list is taken out of service (its blocks become DEAD: walked and
 *      counted as used, with no usable bytes) and the untouched tail is
 *      pushed back, so the damaged links are never followed. Blocks freed
 *      by other contexts while this runs may be taken out of service too.
 *      There is no in-band header to overrun: an overrun reaches the next
 *      payload, which only level 2 watches.
 *   2  level 1, plus a canary (usable_size() is the requested size; the rest
 *      of the block, at least LF_CANARY_ROOM bytes, holds HK_CANARY_BYTE,
 *      checked on free, resize and usable_size) and poison (free blocks hold
 *      HK_POISON_BYTE from init and from every free, checked when malloc has
 *      taken the block; a block found written is reported and taken out of
 *      service).
 *   3  as 2.
 * check() also bounds the free-list walk, so a cycle is caught.
 */
#include <stdatomic.h>

#include "heapkit/pool.h"
#include "hk_internal.h"

#define LF_LOW 0xFFFFu
#define LF_STATE 0xFFFF0000u
/* The state tags: one byte each, so every constant is one Thumb-2 immediate. */
#define LF_FREE 0x5E000000u
#define LF_PRISTINE 0x5F000000u
#define LF_USED 0xA1000000u
#define LF_DEAD 0xDE000000u
/* FREE and PRISTINE differ in this bit alone, so one comparison accepts both. */
#define LF_UNTOUCHED 0x01000000u
#define LF_MAGIC ((uintptr_t)0x1F9001u)
/* Level 2's room for the canary, whole HK_ALIGN units, so a block takes the same largest request at every level. */
#define LF_CANARY_ROOM ((HK_CANARY_ROOM + HK_ALIGN - 1u) & ~(size_t)(HK_ALIGN - 1u))

/*
 * Test seam: runs in a pop between reading the head and its CAS, where an
 * interrupt can land. Empty by default; tests/test_pool.c defines it to run
 * other operations there and so replay the interleavings ABA needs.
 */
#ifndef HK_LFPOOL_PREEMPT
#define HK_LFPOOL_PREEMPT(pool) ((void)(pool))
#endif

HK_STATIC_ASSERT(HK_LFPOOL_MAX_BLOCKS <= LF_LOW, an_index_plus_one_fits_the_low_half);
HK_STATIC_ASSERT(((HK_LFPOOL_MAX_BLOCK_SIZE + HK_ALIGN - 1u) & ~(HK_ALIGN - 1u)) + LF_CANARY_ROOM <= LF_LOW,
                 the_slack_fits_the_low_half);
HK_STATIC_ASSERT((LF_FREE | LF_UNTOUCHED) == LF_PRISTINE, pristine_is_free_and_untouched);

struct hk_lfpool {
    hk_heap_t heap;
    _Atomic uint32_t head;    /* (index + 1) of the first free block << 16 | tag; 0 in the high half: empty */
    uint32_t count;
    size_t max_request;       /* largest request a block takes: the stride, less LF_CANARY_ROOM */
    uintptr_t blocks_m;       /* blocks - stride: the block whose index + 1 is e starts at blocks_m + e * stride */
    size_t stride;            /* block size (+ LF_CANARY_ROOM) rounded up to HK_ALIGN */
    unsigned char *blocks;
    size_t capacity;          /* count * stride */
    uintptr_t magic;          /* LF_MAGIC ^ the pool's address */
    size_t block_size;        /* as created: what hk_lfpool_alloc requests */
    atomic_size_t alloc_count;
    atomic_size_t lost;       /* blocks taken out of service (DEAD) */
    _Atomic uint32_t state[]; /* one word per block: LF_FREE/LF_PRISTINE | next + 1, LF_USED | slack, LF_DEAD */
};

static uintptr_t magic_of(const hk_lfpool_t *pool) { return LF_MAGIC ^ (uintptr_t)pool; }
static void *payload_of(const hk_lfpool_t *pool, uint32_t index) { return pool->blocks + index * pool->stride; }
static uint32_t state_of(hk_lfpool_t *pool, uint32_t index)
{
    return atomic_load_explicit(&pool->state[index], memory_order_relaxed);
}

/* The head after a push (the tag counts pushes), or after a pop, naming the block whose index + 1 is e. */
static uint32_t pushed_head(uint32_t head, uint32_t e) { return ((head + 1u) & LF_LOW) | (e << 16); }
static uint32_t popped_head(uint32_t head, uint32_t e) { return (head & LF_LOW) | (e << 16); }
static uint32_t head_block(uint32_t head) { return head >> 16; }

/* A free word's link (at most LF_LOW), or a larger value for any other word. */
static uint32_t free_link(uint32_t word) { return (word - LF_FREE) & ~LF_UNTOUCHED; }
static int word_free(uint32_t word) { return free_link(word) <= LF_LOW; }
static int word_pristine(uint32_t word) { return word - LF_PRISTINE <= LF_LOW; }
/* A used word with a slack the block can have. */
static int word_used(const hk_lfpool_t *pool, uint32_t word) { return word - LF_USED <= pool->stride; }
static size_t requested_of(const hk_lfpool_t *pool, uint32_t word) { return pool->stride - (word & LF_LOW); }

/* Level 2: the canary after a used block's request, the poison in a free block. */
static int canary_ok(hk_lfpool_t *pool, uint32_t index, uint32_t word)
{
    unsigned char *p = (unsigned char *)payload_of(pool, index);
    return !HK_CANARIES || hk_filled(p + requested_of(pool, word), p + pool->stride, HK_CANARY_BYTE);
}

static int poison_ok(hk_lfpool_t *pool, uint32_t index)
{
    unsigned char *p = (unsigned char *)payload_of(pool, index);
    return !HK_CANARIES || hk_filled(p, p + pool->stride, HK_POISON_BYTE);
}

HK_DEFINE_OPS(hk_lfpool, hk_lfpool_t, "lfpool", NULL);

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
    stride = hk_round_up(block_size, HK_ALIGN) + LF_CANARY_ROOM;
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
    hk_heap_setup(&pool->heap, count * stride);
    pool->count = (uint32_t)count;
    pool->max_request = stride - LF_CANARY_ROOM;
    pool->magic = magic_of(pool);
    pool->blocks = (unsigned char *)hk_align_up_uptr((uintptr_t)&pool->state[count], HK_ALIGN);
    pool->stride = stride;
    pool->blocks_m = (uintptr_t)pool->blocks - stride;
    pool->capacity = count * stride;
    pool->block_size = block_size;
    atomic_init(&pool->alloc_count, 0u);
    atomic_init(&pool->lost, 0u);
    for (i = 0; i < pool->count; i++) {
        atomic_init(&pool->state[i], LF_PRISTINE | (i + 1u < pool->count ? i + 2u : 0u));
    }
    if (HK_CANARIES) {
        hk_fill(pool->blocks, pool->blocks + pool->capacity, HK_POISON_BYTE);
    }
    atomic_init(&pool->head, popped_head(0, 1u));
    hk_init_status(status, HK_OK);
    return pool;
}

hk_heap_t *hk_lfpool_heap(hk_lfpool_t *pool) { return hk_bind(&pool->heap, &hk_lfpool_ops); }

void *hk_lfpool_alloc(hk_lfpool_t *pool) { return hk_lfpool_malloc(pool, pool->block_size); }

/*
 * The head seen names a block whose state word is not free or whose link
 * leaves the pool. If the head has not moved since, the read was not stale:
 * the list is damaged. Report it, swing the head to empty (so no context
 * follows the links any more), take the free blocks out of service and push
 * the untouched tail back.
 */
static void drop_list(hk_lfpool_t *pool, uint32_t seen)
{
    uint32_t expected = seen;
    uint32_t tail = pool->count;
    uint32_t i;
    uint32_t head;
    size_t lost = 0;
    if (!atomic_compare_exchange_strong_explicit(&pool->head, &expected, pushed_head(seen, 0), memory_order_acq_rel,
                                                 memory_order_relaxed)) {
        return; /* the head moved: the word read was stale */
    }
    hk_report(&pool->heap, HK_ERR_CORRUPT, payload_of(pool, head_block(seen) - 1u));
    while (tail > 0 && word_pristine(state_of(pool, tail - 1u))) {
        tail--;
    }
    for (i = 0; i < tail; i++) {
        uint32_t word = state_of(pool, i);
        if (word_free(word) && atomic_compare_exchange_strong_explicit(&pool->state[i], &word, LF_DEAD,
                                                                       memory_order_relaxed, memory_order_relaxed)) {
            lost++;
        }
    }
    atomic_fetch_add_explicit(&pool->lost, lost, memory_order_relaxed);
    if (tail == pool->count) {
        return;
    }
    for (i = tail; i + 1u < pool->count; i++) {
        atomic_store_explicit(&pool->state[i], LF_PRISTINE | (i + 2u), memory_order_relaxed);
    }
    head = atomic_load_explicit(&pool->head, memory_order_relaxed);
    do {
        atomic_store_explicit(&pool->state[pool->count - 1u], LF_PRISTINE | head_block(head), memory_order_relaxed);
    } while (!atomic_compare_exchange_weak_explicit(&pool->head, &head, pushed_head(head, tail + 1u),
                                                    memory_order_release, memory_order_relaxed));
}

/* Level 2: the block just popped (ours now) was written while free. Report it and take it out of service. */
static void quarantine(hk_lfpool_t *pool, uint32_t index)
{
    hk_report(&pool->heap, HK_ERR_CORRUPT, payload_of(pool, index));
    atomic_store_explicit(&pool->state[index], LF_DEAD, memory_order_relaxed);
    atomic_fetch_add_explicit(&pool->lost, 1u, memory_order_relaxed);
}

/*
 * Take the head block: its state word, less LF_FREE (and the PRISTINE bit),
 * is the link to install, which at level 1 must be at most the block count
 * (any word that is not free gives more). A stale word (another context
 * popped the block meanwhile) fails the CAS through the tag. Returns the
 * block's index + 1, 0 when the list is empty, or LF_DAMAGED after the
 * head's word failed the check (seen: the head then).
 *
 * The acquire load pairs with the release push that installed this head, so
 * the state word (and at level 2 the poison) read after it is the one that
 * push wrote; a CAS that succeeds saw that same value (the tag changes with
 * every push), so it needs no ordering of its own.
 */
#define LF_DAMAGED 0xFFFFFFFFu

HK_HOT uint32_t pop(hk_lfpool_t *pool, uint32_t *seen)
{
    uint32_t head;
    uint32_t e;
    uint32_t next;
    do {
        head = atomic_load_explicit(&pool->head, memory_order_acquire);
        e = head_block(head);
        if (e == 0) {
            return 0;
        }
        next = free_link(state_of(pool, e - 1u));
        if (HK_CHECKS && next > pool->count) {
            *seen = head;
            return LF_DAMAGED;
        }
        HK_LFPOOL_PREEMPT(pool);
    } while (!atomic_compare_exchange_weak_explicit(&pool->head, &head, popped_head(head, next), memory_order_relaxed,
                                                    memory_order_relaxed));
    return e;
}

/* Hand out block e - 1, just popped, for a request of size bytes. */
HK_HOT void *grant(hk_lfpool_t *pool, uint32_t e, size_t size)
{
    unsigned char *p = (unsigned char *)(pool->blocks_m + e * pool->stride);
    if (HK_CANARIES) {
        hk_fill(p + size, p + pool->stride, HK_CANARY_BYTE);
    }
    atomic_store_explicit(&pool->state[e - 1u], LF_USED | (uint32_t)(pool->stride - size), memory_order_relaxed);
    atomic_fetch_add_explicit(&pool->alloc_count, 1u, memory_order_relaxed);
    return p;
}

/*
 * The general path: level 2 (poison), and damage met by the fast path. A
 * loop, not a retry by recursion: each turn takes a damaged list or a
 * written block out of service, or finds the head moved by another context.
 */
HK_COLD void *malloc_slow(hk_lfpool_t *pool, size_t size)
{
    for (;;) {
        uint32_t seen = 0;
        uint32_t e = pop(pool, &seen);
        if (e == 0) {
            return NULL;
        }
        if (e == LF_DAMAGED) {
            drop_list(pool, seen);
        } else if (!poison_ok(pool, e - 1u)) {
            quarantine(pool, e - 1u);
        } else {
            return grant(pool, e, size);
        }
    }
}

void *hk_lfpool_malloc(hk_lfpool_t *pool, size_t size)
{
    uint32_t seen;
    uint32_t e;
    if (size > pool->max_request) {
        return NULL;
    }
    if (HK_CANARIES) {
        return malloc_slow(pool, size);
    }
    e = pop(pool, &seen);
    if (e == 0) {
        return NULL;
    }
    if (HK_CHECKS && e == LF_DAMAGED) {
        return malloc_slow(pool, size);
    }
    return grant(pool, e, size);
}

/* Index of the block ptr starts, or LF_LOW after reporting a pointer that starts none. */
static uint32_t block_index(hk_lfpool_t *pool, const void *ptr)
{
    uintptr_t off = (uintptr_t)ptr - (uintptr_t)pool->blocks;
    if (!HK_CHECKS) {
        return (uint32_t)(off / pool->stride);
    }
    if (off >= pool->capacity) {
        hk_report(&pool->heap, HK_ERR_FOREIGN_PTR, ptr);
        return LF_LOW;
    }
    if (off % pool->stride != 0) {
        hk_report(&pool->heap, HK_ERR_INTERIOR_PTR, ptr);
        return LF_LOW;
    }
    return (uint32_t)(off / pool->stride);
}

/* The state word of a used block with an intact canary, or 0 after reporting. */
static uint32_t used_word(hk_lfpool_t *pool, uint32_t index, const void *ptr)
{
    uint32_t word = state_of(pool, index);
    if (!HK_CHECKS || (word_used(pool, word) && canary_ok(pool, index, word))) {
        return word;
    }
    hk_report(&pool->heap, word_free(word) ? HK_ERR_DOUBLE_FREE : HK_ERR_CORRUPT, ptr);
    return 0;
}

/* Push block index, whose state word this context owns, onto the list. */
static void push(hk_lfpool_t *pool, uint32_t index)
{
    uint32_t head = atomic_load_explicit(&pool->head, memory_order_relaxed);
    do {
        atomic_store_explicit(&pool->state[index], LF_FREE | head_block(head), memory_order_relaxed);
    } while (!atomic_compare_exchange_weak_explicit(&pool->head, &head, pushed_head(head, index + 1u),
                                                    memory_order_release, memory_order_relaxed));
}

/* The general path of free: NULL, misuse (reported), level 2. */
HK_COLD void free_slow(hk_lfpool_t *pool, void *ptr)
{
    uint32_t index;
    uint32_t word;
    if (ptr == NULL) {
        return;
    }
    index = block_index(pool, ptr);
    if (index == LF_LOW) {
        return;
    }
    do {
        word = used_word(pool, index, ptr);
        if (word == 0) {
            return;
        }
    } while (!atomic_compare_exchange_weak_explicit(&pool->state[index], &word, LF_FREE, memory_order_relaxed,
                                                    memory_order_relaxed));
    if (HK_CANARIES) {
        hk_fill(ptr, (unsigned char *)ptr + pool->stride, HK_POISON_BYTE);
    }
    push(pool, index);
}

/*
 * The fast path: a block boundary inside the pool whose state word says
 * USED (level 1), below level 2. The word moves to FREE with one CAS, which
 * claims the block against a racing free; the push publishes it.
 */
void hk_lfpool_free(hk_lfpool_t *pool, void *ptr)
{
    uintptr_t off = (uintptr_t)ptr - (uintptr_t)pool->blocks;
    uint32_t index;
    uint32_t word;

    if (HK_CANARIES || off >= pool->capacity) {
        free_slow(pool, ptr);
        return;
    }
    index = (uint32_t)(off / pool->stride);
    if (HK_CHECKS && off != index * pool->stride) {
        free_slow(pool, ptr);
        return;
    }
    word = state_of(pool, index);
    do {
        if (HK_CHECKS && !word_used(pool, word)) {
            free_slow(pool, ptr); /* reports what the word is now */
            return;
        }
    } while (!atomic_compare_exchange_weak_explicit(&pool->state[index], &word, LF_FREE, memory_order_relaxed,
                                                    memory_order_relaxed));
    push(pool, index);
}

void *hk_lfpool_resize(hk_lfpool_t *pool, void *ptr, size_t size)
{
    uint32_t index;
    uint32_t word;

    index = block_index(pool, ptr);
    if (index == LF_LOW) {
        return NULL;
    }
    do {
        word = used_word(pool, index, ptr);
        if (word == 0) {
            return NULL;
        }
        if (size > pool->max_request) {
            return NULL; /* no block is larger: hk_realloc's malloc fails too */
        }
    } while (!atomic_compare_exchange_weak_explicit(&pool->state[index], &word,
                                                    LF_USED | (uint32_t)(pool->stride - size), memory_order_relaxed,
                                                    memory_order_relaxed));
    if (HK_CANARIES) {
        hk_fill((unsigned char *)ptr + size, (unsigned char *)ptr + pool->stride, HK_CANARY_BYTE);
    }
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
    if (index == LF_LOW) {
        return 0;
    }
    word = used_word(pool, index, ptr);
    if (word == 0) {
        return 0;
    }
    return HK_CANARIES ? requested_of(pool, word) : pool->max_request;
}

/* Blocks [touched, count) are the PRISTINE tail, a suffix of the blocks: a binary search finds where it starts. */
static uint32_t touched_blocks(hk_lfpool_t *pool)
{
    uint32_t lo = 0;
    uint32_t hi = pool->count;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2u;
        if (word_pristine(state_of(pool, mid))) {
            hi = mid;
        } else {
            lo = mid + 1u;
        }
    }
    return lo;
}

void hk_lfpool_get_stats(hk_lfpool_t *pool, hk_stats_t *out)
{
    size_t lost = atomic_load_explicit(&pool->lost, memory_order_seq_cst);
    uint32_t touched = touched_blocks(pool);
    size_t live = 0;
    size_t requested = 0;
    size_t allocs;
    uint32_t i;
    for (i = 0; i < touched; i++) {
        uint32_t word = state_of(pool, i);
        if (word_used(pool, word)) {
            live++;
            requested += requested_of(pool, word);
        }
    }
    /* After the table: under concurrency a block may show USED before its allocation is counted. */
    allocs = atomic_load_explicit(&pool->alloc_count, memory_order_seq_cst);
    hk_stats_read(&pool->heap, out);
    out->alloc_count = allocs;
    out->free_count = allocs > live ? allocs - live : 0;
    out->used_blocks = live + lost;
    out->free_blocks = pool->count - out->used_blocks;
    out->used_requested = requested;
    out->used_granted = HK_CANARIES ? requested : live * pool->max_request;
    out->free_bytes = out->free_blocks * pool->stride;
    out->min_ever_free = (pool->count - touched) * pool->stride;
    out->peak_used = out->capacity - out->min_ever_free;
    out->largest_free = out->free_blocks != 0 ? pool->stride : 0;
    out->smallest_free = out->largest_free;
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
        info.used = !word_free(word);
        /* Dead or damaged blocks count as used, with nothing usable. */
        info.usable = !info.used                ? pool->max_request
                      : !word_used(pool, word) ? 0
                      : HK_CANARIES             ? requested_of(pool, word)
                                                : pool->max_request;
        visit(ctx, &info);
    }
}

hk_check_t hk_lfpool_check(hk_lfpool_t *pool)
{
    uint32_t e = head_block(atomic_load_explicit(&pool->head, memory_order_acquire));
    size_t listed = 0;
    size_t free_blocks = 0;
    size_t dead = 0;
    uint32_t tail = pool->count;
    uint32_t i;

    if (pool->magic != magic_of(pool) || pool->count == 0 || pool->count > HK_LFPOOL_MAX_BLOCKS ||
        pool->stride < LF_CANARY_ROOM + 1u || pool->max_request != pool->stride - LF_CANARY_ROOM ||
        pool->capacity != (size_t)pool->count * pool->stride || pool->heap.stats.capacity != pool->capacity ||
        pool->blocks_m != (uintptr_t)pool->blocks - pool->stride) {
        return HK_CHECK_CONTROL;
    }
    if (pool->stride % HK_ALIGN != 0 || (uintptr_t)pool->blocks % HK_ALIGN != 0) {
        return HK_CHECK_ALIGN;
    }
    while (e != 0) {
        uint32_t word;
        if (e > pool->count) {
            return HK_CHECK_RANGE;
        }
        if (++listed > pool->count) {
            return HK_CHECK_LINK; /* a cycle */
        }
        word = state_of(pool, e - 1u);
        if (!word_free(word)) {
            return HK_CHECK_STATE;
        }
        e = free_link(word);
    }
    for (i = 0; i < pool->count; i++) {
        uint32_t word = state_of(pool, i);
        if (word_pristine(word)) {
            /* The untouched tail: a suffix of the blocks, linked in address order. */
            tail = tail < i ? tail : i;
            if (free_link(word) != (i + 1u < pool->count ? i + 2u : 0u)) {
                return HK_CHECK_LINK;
            }
        } else if (tail != pool->count) {
            return HK_CHECK_STATE;
        }
        if (word_free(word)) {
            if (!poison_ok(pool, i)) {
                return HK_CHECK_POISON;
            }
            free_blocks++;
        } else if (word_used(pool, word)) {
            if (requested_of(pool, word) > pool->max_request) {
                return HK_CHECK_SIZE;
            }
            if (!canary_ok(pool, i, word)) {
                return HK_CHECK_CANARY;
            }
        } else if (word == LF_DEAD) {
            dead++;
        } else {
            return HK_CHECK_STATE;
        }
    }
    if (free_blocks != listed) {
        return HK_CHECK_COUNT;
    }
    if (dead != atomic_load_explicit(&pool->lost, memory_order_relaxed)) {
        return HK_CHECK_STATS;
    }
    return HK_CHECK_OK;
}

int hk_lfpool_owns(const hk_lfpool_t *pool, const void *ptr)
{
    return (uintptr_t)ptr - (uintptr_t)pool->blocks < pool->capacity;
}
