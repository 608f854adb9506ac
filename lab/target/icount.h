/* SPDX-License-Identifier: MIT */
/*
 * The instruction counter (lab/target/): a bare-metal driver that replays
 * one lab trace, embedded in the image at build time, against every heapkit
 * catalog entry and peer allocator linked in, and reports the exact number
 * of instructions each allocator call executed. One driver (icount.c,
 * allocs.c, probe.c) serves every target; what differs per target is the
 * measuring window (measure_<target>.S) and the counter behind it
 * (counter_<target>.c):
 *
 *   cortex-m3  QEMU mps2-an385, -icount shift=7: SysTick's current value
 *              read around each call (measure_m3.S, counter_m3.c);
 *   rv32       QEMU virt, RV32IMAC, -icount shift=7: the minstret CSR read
 *              around each call (measure_rv32.S, counter_rv32.c).
 *
 * The compact trace (.hkc, written by lab/heapkit/target.py from a .hkb and
 * read by the driver from the host, a chunk at a time) replaces the trace's dense ids by
 * slots: a slot is reused once its block is freed, so the driver's table of
 * live blocks is as long as the most blocks ever live at once, not the
 * number of ids. Little-endian 32-bit words:
 *
 *   header (8 words): magic TGT_HKC_MAGIC, version 1, records, slots,
 *                     payload words, ids, the largest request (bytes), 0
 *   records, one after the other, 1 to 3 words each; word 0 is
 *   op | slot << 3:
 *     TGT_OP_MALLOC        size
 *     TGT_OP_FREE          -
 *     TGT_OP_CALLOC        size nmemb
 *     TGT_OP_ALIGNED       size alignment
 *     TGT_OP_REALLOC       size            (the block in slot moves; it keeps the slot)
 *     TGT_OP_REALLOC_NULL  size            (realloc(NULL, size) into a new slot)
 */
#ifndef LAB_TARGET_ICOUNT_H
#define LAB_TARGET_ICOUNT_H

#include <stddef.h>
#include <stdint.h>

#define TGT_HKC_MAGIC 0x43544B48u /* "HKTC" */
#define TGT_HKC_VERSION 1u
#define TGT_HKC_HEADER_WORDS 8u
#define TGT_HKC_MAX_REQUEST_WORD 6u /* sizes the "pool" entry's block (fctma_pool.h) */

enum {
    TGT_OP_MALLOC = 0,
    TGT_OP_FREE = 1,
    TGT_OP_CALLOC = 2,
    TGT_OP_ALIGNED = 3,
    TGT_OP_REALLOC = 4,
    TGT_OP_REALLOC_NULL = 5
};

/* Operation kinds reported (realloc(NULL, n) counts as a realloc). */
enum { TGT_K_MALLOC, TGT_K_FREE, TGT_K_CALLOC, TGT_K_ALIGNED, TGT_K_REALLOC, TGT_KINDS };

/*
 * One allocator as the driver calls it. Each function is called natively,
 * with ctx first when has_ctx is set:
 *   malloc(size)  free(ptr)  realloc(ptr, size)  calloc(nmemb, size)  aligned(alignment, size)
 * A NULL realloc or calloc is emulated by the driver from the measured calls
 * it has (malloc + free; malloc + memset) and flagged in the report; a NULL
 * aligned serves alignments up to max_align with malloc and counts larger
 * ones as unsupported.
 */
typedef struct tgt_heap {
    uintptr_t ctx;
    int has_ctx;
    const void *malloc_fn;
    const void *free_fn;
    const void *realloc_fn;
    const void *calloc_fn;
    const void *aligned_fn;
    size_t max_align;      /* alignment every malloc result has */
    const uint8_t *lo;     /* where blocks may lie */
    const uint8_t *hi;
    void (*settle)(void);  /* NULL, or run after every record outside the measured window */
} tgt_heap_t;

typedef struct tgt_alloc {
    const char *name;
    /* "heapkit" (direct calls), "uniform" (heapkit through hk_malloc & co.), "peer" or "selftest" */
    const char *family;
    /* Build the heap in [arena, arena + size) (the C library: its own sbrk heap); 0 on success. */
    int (*setup)(tgt_heap_t *heap, uint8_t *arena, size_t size, const void *arg);
    const void *arg;  /* heapkit: its catalog entry */
    int optional;     /* not part of a run that names no allocator */
} tgt_alloc_t;

size_t tgt_alloc_count(void);
const tgt_alloc_t *tgt_alloc_at(size_t i);

/* The arena every in-arena allocator gets (heap_4's ucHeap). */
extern uint8_t tgt_arena[];

/*
 * measure_<target>.S: the measuring window, in raw counter units.
 * tgt_measure(fn, a0, a1, a2) calls fn(a0, a1, a2) between two reads of the
 * counter and returns their difference; the callee's return value goes to
 * tgt_measure_result. tgt_measure_empty() is the same window with nothing
 * in it. tgt_cal_nop and tgt_cal_1000 execute 1 and 1000 instructions,
 * their return included.
 */
uint32_t tgt_measure(const void *fn, uintptr_t a0, uintptr_t a1, uintptr_t a2);
uint32_t tgt_measure_empty(void);
void tgt_cal_nop(void);
void tgt_cal_1000(void);
extern uintptr_t tgt_measure_result;

/*
 * counter_<target>.c: the counter behind the window and the board's memory.
 *   tgt_counter_start()       once, before anything is measured;
 *   tgt_counter_arm()         right before each window (outside it);
 *   tgt_counter_overflowed()  right after it: nonzero when the window may
 *                             have wrapped the counter (the count saturates);
 *   tgt_counter_insns(raw)    raw units to instructions, rounded;
 *   tgt_counter_describe()    the calibration line's fields naming the
 *                             counter (printed after a comma, no braces);
 *   tgt_arena_placed()        nonzero when tgt_arena clears .data, .bss,
 *                             the stack and the C library's heap.
 */
void tgt_counter_start(void);
void tgt_counter_arm(void);
int tgt_counter_overflowed(void);
uint32_t tgt_counter_insns(uint32_t raw);
void tgt_counter_describe(uint32_t empty_raw, uint32_t raw_1000);
int tgt_arena_placed(void);

/* probe.c: the trivial allocator the calibration is checked against. */
void *tgt_probe_bump_malloc(size_t size);

/* icount.c: the header of the trace being replayed (TGT_HKC_MAX_REQUEST_WORD sizes the pool entry's block). */
extern uint32_t tgt_trace_header[TGT_HKC_HEADER_WORDS];

#endif
