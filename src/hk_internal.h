/* SPDX-License-Identifier: MIT */
/*
 * Helpers shared by the allocator sources: arithmetic on sizes and addresses,
 * the bookkeeping every allocator does on the counters in hk_heap_t.stats,
 * misuse reporting, and the macro that turns an allocator's direct functions
 * into its hk_ops_t table.
 */
#ifndef HEAPKIT_INTERNAL_H
#define HEAPKIT_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "heapkit/heapkit.h"

/*
 * The only library calls the core makes. The builtins need no libc header,
 * so the core builds with a bare cross compiler; the compiler inlines small
 * fixed sizes and calls memcpy/memset otherwise.
 */
#if defined(__GNUC__) || defined(__clang__)
#define hk_memcpy __builtin_memcpy
#define hk_memset __builtin_memset
#else
#include <string.h>
#define hk_memcpy memcpy
#define hk_memset memset
#endif

/*
 * Linkage of the helpers the allocator sources share (core.c, tagged.c):
 * external in the library, static in a drop-in (dropin/, made by
 * tools/dropin.py), so that two drop-ins link into one program.
 */
#ifndef HK_INTERNAL
#define HK_INTERNAL
#endif

/* Internal preconditions: checked in debug builds (HK_DEBUG), free otherwise. */
#ifdef HK_DEBUG
#include <assert.h>
#define HK_ASSERT(cond) assert(cond)
#else
#define HK_ASSERT(cond) ((void)0)
#endif

/* A precondition the optimiser may rely on (an HK_ASSERT in debug builds): for facts it cannot see. */
#if defined(HK_DEBUG) || !(defined(__GNUC__) || defined(__clang__))
#define HK_ASSUME(cond) HK_ASSERT(cond)
#else
#define HK_ASSUME(cond) ((cond) ? (void)0 : __builtin_unreachable())
#endif

/*
 * The one spelling of the inlining attributes. HK_HOT: a helper of a hot
 * path that must not cost a call, so the path is built as one function with
 * its fields in registers. HK_APART and HK_COLD: paths kept out of one, so
 * that it saves fewer registers (another path, as fast as the compiler makes
 * it; an error path). A build for size (-Os) leaves the inlining of hot
 * helpers to the compiler: there a helper used twice is worth more as one
 * copy than as a call saved.
 */
#if (defined(__GNUC__) || defined(__clang__)) && !defined(__OPTIMIZE_SIZE__)
#define HK_HOT static inline __attribute__((always_inline))
#define HK_APART static __attribute__((noinline))
#define HK_COLD static __attribute__((noinline, cold))
#elif defined(__GNUC__) || defined(__clang__)
#define HK_HOT static inline
#define HK_APART static __attribute__((noinline))
#define HK_COLD static __attribute__((noinline, cold))
#else
#define HK_HOT static inline
#define HK_APART static
#define HK_COLD static
#endif

/* The hardening level's parts (HK_HARDENING in heapkit.h). */
#define HK_CHECKS (HK_HARDENING >= 1)
#define HK_CANARIES (HK_HARDENING >= 2)
#define HK_VALIDATE_EVERY_CALL (HK_HARDENING >= 3)

/*
 * Level 2 patterns, as ESP-IDF's comprehensive poisoning: the bytes after a
 * used block's requested size hold HK_CANARY_BYTE, a free block's payload
 * (beyond the allocator's own links) holds HK_POISON_BYTE.
 */
#define HK_CANARY_BYTE 0xCAu
#define HK_POISON_BYTE 0xFEu
/* Room every level-2 block keeps after its request, so a canary always exists. */
#define HK_CANARY_ROOM ((size_t)(HK_CANARIES ? 4u : 0u))

/* Fill [from, to) with byte; check that [from, to) holds only byte. */
static inline void hk_fill(void *from, const void *to, unsigned char byte)
{
    hk_memset(from, byte, (size_t)((const unsigned char *)to - (unsigned char *)from));
}

static inline int hk_filled(const void *from, const void *to, unsigned char byte)
{
    const unsigned char *p = (const unsigned char *)from;
    const unsigned char *end = (const unsigned char *)to;
    /* A word at a time in between: level 2 checks whole payloads, so this is its main cost. */
    const uintptr_t pattern = UINTPTR_MAX / 0xFFu * byte;
    while (p < end && (uintptr_t)p % sizeof(uintptr_t) != 0) {
        if (*p++ != byte) {
            return 0;
        }
    }
    for (; (size_t)(end - p) >= sizeof(uintptr_t); p += sizeof(uintptr_t)) {
        uintptr_t word;
        hk_memcpy(&word, p, sizeof(word)); /* an aligned load: no aliasing question */
        if (word != pattern) {
            return 0;
        }
    }
    while (p < end) {
        if (*p++ != byte) {
            return 0;
        }
    }
    return 1;
}

#define HK_STATIC_ASSERT(cond, name) typedef char hk_static_assert_##name[(cond) ? 1 : -1]

HK_STATIC_ASSERT((HK_ALIGN & (HK_ALIGN - 1)) == 0, align_is_power_of_two);
HK_STATIC_ASSERT(sizeof(void *) <= HK_ALIGN, align_holds_a_pointer);

/*
 * x rotated right by n (0 < n < bits): one instruction where the target has
 * a rotate. An offset that must be a multiple of 2^n below a limit is one
 * compare this way: a remainder lands in the top bits.
 */
static inline size_t hk_rotr(size_t x, unsigned n)
{
    return (x >> n) | (x << ((sizeof(size_t) * 8u - n) & (sizeof(size_t) * 8u - 1u)));
}

static inline int hk_is_pow2(size_t x) { return x != 0 && (x & (x - 1)) == 0; }

static inline uintptr_t hk_align_up_uptr(uintptr_t x, uintptr_t a) { return (x + (a - 1)) & ~(a - 1); }

static inline uintptr_t hk_align_down_uptr(uintptr_t x, uintptr_t a) { return x & ~(a - 1); }

/* Round size up to a multiple of a power of two, or return 0 if that overflows. */
static inline size_t hk_round_up(size_t size, size_t a)
{
    return (size > SIZE_MAX - (a - 1)) ? 0 : ((size + (a - 1)) & ~(a - 1));
}

/* floor(log2(x)) for x > 0. */
static inline unsigned hk_log2_floor(size_t x)
{
#if defined(__GNUC__) || defined(__clang__)
    return (unsigned)(sizeof(unsigned long long) * 8u - 1u) - (unsigned)__builtin_clzll((unsigned long long)x);
#else
    unsigned r = 0;
    while (x >>= 1) {
        r++;
    }
    return r;
#endif
}

/* ceil(log2(x)) for x > 0. */
static inline unsigned hk_log2_ceil(size_t x) { return (x <= 1) ? 0u : hk_log2_floor(x - 1u) + 1u; }

#if (defined(__GNUC__) || defined(__clang__)) && !(defined(__riscv) && !defined(__riscv_zbb))
/* Index of the lowest set bit of a nonzero 32-bit mask. */
static inline unsigned hk_ffs32(uint32_t x) { return (unsigned)__builtin_ctzl((unsigned long)x); }

/* Index of the highest set bit of a nonzero 32-bit mask. */
static inline unsigned hk_fls32(uint32_t x)
{
    return (unsigned)(sizeof(unsigned long) * 8u - 1u) - (unsigned)__builtin_clzl((unsigned long)x);
}
#else
/*
 * No bit-scan instruction (RV32IMAC; the builtins would call libgcc): a
 * de Bruijn multiply finds the bit in a handful of instructions, constant
 * time all the same.
 */
static inline unsigned hk_ffs32(uint32_t x)
{
    static const unsigned char index_of[32] = {0,  1,  28, 2,  29, 14, 24, 3, 30, 22, 20, 15, 25, 17, 4,  8,
                                               31, 27, 13, 23, 21, 19, 16, 7, 26, 12, 18, 6,  11, 5,  10, 9};
    return index_of[((x & (0u - x)) * 0x077CB531u) >> 27];
}

static inline unsigned hk_fls32(uint32_t x)
{
    static const unsigned char index_of[32] = {0,  9,  1,  10, 13, 21, 2,  29, 11, 14, 16, 18, 22, 25, 3, 30,
                                               8,  12, 20, 28, 15, 17, 24, 7,  19, 27, 23, 6,  26, 5,  4, 31};
    x |= x >> 1;
    x |= x >> 2;
    x |= x >> 4;
    x |= x >> 8;
    x |= x >> 16;
    return index_of[(x * 0x07C4ACDDu) >> 27];
}
#endif

/* An arena's size, clamped so that lo + size stays inside the address space. */
static inline size_t hk_arena_room(uintptr_t lo, size_t size)
{
    return (size > UINTPTR_MAX - lo) ? (size_t)(UINTPTR_MAX - lo) : size;
}

/* One past the arena's last byte, clamped to the address space. */
static inline uintptr_t hk_arena_end(const void *arena, size_t size)
{
    return (uintptr_t)arena + hk_arena_room((uintptr_t)arena, size);
}

/* Pointer inside [lo, hi)? Compared as integers so foreign pointers are well defined. */
static inline int hk_in_range(const void *p, const void *lo, const void *hi)
{
    return (uintptr_t)p >= (uintptr_t)lo && (uintptr_t)p < (uintptr_t)hi;
}

/* Tell an init's caller how it went (status may be NULL); returns NULL for refusals. */
static inline void *hk_init_status(hk_status_t *status, hk_status_t result)
{
    if (status != NULL) {
        *status = result;
    }
    return NULL;
}


/*
 * Reset the handle of a freshly initialised heap whose capacity is all free.
 * It leaves ops NULL: init must not name the operations table, or every
 * program that calls init would link every operation the table points at.
 */
HK_INTERNAL void hk_heap_setup(hk_heap_t *heap, size_t capacity);

/*
 * The same for a handle already zeroed with the rest of its control block
 * (tlsf clears its list heads with one memset anyway): the capacity, all free.
 */
static inline void hk_heap_ready(hk_heap_t *heap, size_t capacity)
{
    heap->stats.capacity = capacity;
    heap->stats.free_bytes = capacity;
    heap->stats.min_ever_free = capacity;
}

/* What each hk_<name>_heap() returns: the handle, its table stored only now that the uniform API is wanted. */
static inline hk_heap_t *hk_bind(hk_heap_t *heap, const hk_ops_t *ops)
{
    heap->ops = ops;
    return heap;
}

/* Report misuse: count it, call the hook, assert in debug builds. */
HK_INTERNAL void hk_report(hk_heap_t *heap, hk_error_t error, const void *ptr);

/*
 * The low-water mark's writers, the only ones: hk_note_low wherever
 * free_bytes may have fallen, hk_take_free where a fast path takes bytes out
 * (it reads the mark before it stores the count, an instruction fewer on
 * RV32's worst poolset malloc than reading both back). peak_used is not
 * kept: hk_stats_read derives it from the mark.
 */
static inline void hk_note_low(hk_stats_t *s)
{
    if (s->free_bytes < s->min_ever_free) {
        s->min_ever_free = s->free_bytes;
    }
}

static inline void hk_take_free(hk_stats_t *s, size_t bytes)
{
    size_t free_bytes = s->free_bytes - bytes;
    size_t low = s->min_ever_free;
    s->free_bytes = free_bytes;
    s->min_ever_free = free_bytes < low ? free_bytes : low;
}

/*
 * Copy what the allocator counts into *out, field by field (a struct copy
 * would link memcpy into every program that reads its statistics), with
 * peak_used derived; the allocator's get_stats derives the rest.
 */
HK_INTERNAL void hk_stats_read(const hk_heap_t *heap, hk_stats_t *out);

/* Counter updates for one block leaving or entering the free pool. */
static inline void hk_count_alloc(hk_heap_t *heap, size_t requested, size_t granted, size_t gross)
{
    hk_stats_t *s = &heap->stats;
    s->alloc_count++;
    s->used_blocks++;
    s->used_requested += requested;
    s->used_granted += granted;
    s->free_bytes -= gross;
    hk_note_low(s);
}

static inline void hk_count_free(hk_heap_t *heap, size_t requested, size_t granted, size_t gross)
{
    hk_stats_t *s = &heap->stats;
    s->free_count++;
    s->used_blocks--;
    s->used_requested -= requested;
    s->used_granted -= granted;
    s->free_bytes += gross;
}

/* An in-place realloc: the block keeps its address but changes size. */
static inline void hk_count_resize(hk_heap_t *heap, size_t old_requested, size_t old_granted, size_t old_gross,
                                   size_t new_requested, size_t new_granted, size_t new_gross)
{
    hk_stats_t *s = &heap->stats;
    s->used_requested = s->used_requested - old_requested + new_requested;
    s->used_granted = s->used_granted - old_granted + new_granted;
    s->free_bytes = s->free_bytes + old_gross - new_gross;
    hk_note_low(s);
}


#define HK_DEFINE_OPS_COMMON(prefix, type)                                                                           \
    static void *prefix##_op_malloc(hk_heap_t *h, size_t n) { return prefix##_malloc((type *)h, n); }           \
    static void prefix##_op_free(hk_heap_t *h, void *p) { prefix##_free((type *)h, p); }                        \
    static size_t prefix##_op_usable(hk_heap_t *h, const void *p) { return prefix##_usable_size((type *)h, p); } \
    static void prefix##_op_stats(hk_heap_t *h, hk_stats_t *s) { prefix##_get_stats((type *)h, s); }            \
    static void prefix##_op_walk(hk_heap_t *h, hk_walk_fn f, void *c) { prefix##_walk((type *)h, f, c); }       \
    static hk_check_t prefix##_op_check(hk_heap_t *h) { return (hk_check_t)prefix##_check((type *)h); }           \
    static int prefix##_op_owns(const hk_heap_t *h, const void *p) { return prefix##_owns((const type *)h, p); }

/*
 * Define `static const hk_ops_t <prefix>_ops` from the direct functions
 * <prefix>_malloc, _resize, _free, _usable_size, _get_stats, _walk, _check
 * and _owns, each taking a `type *` first. name is the allocator's short
 * name; aligned is the aligned-alloc adapter or NULL.
 */
#define HK_DEFINE_OPS(prefix, type, name, aligned)                                                                      \
    HK_DEFINE_OPS_COMMON(prefix, type)                                                                                  \
    static void *prefix##_op_resize(hk_heap_t *h, void *p, size_t n) { return prefix##_resize((type *)h, p, n); }   \
    static const hk_ops_t prefix##_ops = {name,             prefix##_op_malloc, aligned,          NULL,                \
                                          prefix##_op_resize, prefix##_op_free, prefix##_op_usable, prefix##_op_stats,  \
                                          prefix##_op_walk, prefix##_op_check,  prefix##_op_owns}

#endif
