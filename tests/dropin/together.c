/* SPDX-License-Identifier: MIT */
/*
 * Several drop-ins in one program (tests/dropin/run.sh): every allocator used
 * through its own functions and through the uniform layer, which one drop-in
 * alone defines. WITH_BUMP: bump and tlsf (the pool drop-in holds bump, so the
 * two cannot meet); otherwise every other drop-in. Exit status 0 when every
 * heap behaves, else 1 with a line for each that did not.
 */
#include <stdio.h>
#include <string.h>

#ifdef WITH_BUMP
#include "heapkit_bump.h"
#include "heapkit_tlsf.h"
#else
#include "heapkit_buddy.h"
#include "heapkit_dmm.h"
#include "heapkit_lfpool.h"
#include "heapkit_pool.h"
#include "heapkit_seqfit.h"
#include "heapkit_tlsf.h"
#endif

/* One arena per heap, aligned for any block. */
typedef union {
    unsigned char bytes[16384];
    long double ld;
    void *p;
} arena_t;

static int failures;

static void fail(const char *name, const char *what)
{
    printf("together: %s: %s\n", name, what);
    failures++;
}

static void count_error(void *ctx, hk_heap_t *heap, hk_error_t error, const void *ptr)
{
    (void)heap;
    (void)error;
    (void)ptr;
    ++*(int *)ctx;
}

/* The uniform layer on one heap: a block written and freed twice (the second free reported), then a full check. */
static void uniform(hk_heap_t *heap, const char *name)
{
    int errors = 0;
    hk_hooks_t hooks = {NULL, NULL, count_error, &errors};
    char *p;

    hk_set_hooks(heap, &hooks);
    if (strcmp(hk_name(heap), name) != 0) {
        fail(name, "hk_name names another allocator");
    }
    p = hk_malloc(heap, 24);
    if (p == NULL) {
        fail(name, "hk_malloc failed");
        return;
    }
    memset(p, 0x5A, 24);
    hk_free(heap, p);
    hk_free(heap, p);
    if (errors != 1) {
        fail(name, "the double free was not reported once");
    }
    if (hk_check(heap) != HK_CHECK_OK) {
        fail(name, hk_check_name(hk_check(heap)));
    }
}

/* A heap's direct malloc and free, then the uniform layer on it. */
#define DIRECT(name, heap, prefix)                                                                                     \
    do {                                                                                                               \
        void *block_;                                                                                                  \
        if ((heap) == NULL) {                                                                                          \
            fail(name, "init failed");                                                                                 \
            break;                                                                                                     \
        }                                                                                                              \
        block_ = prefix##_malloc((heap), 40);                                                                          \
        if (block_ == NULL) {                                                                                          \
            fail(name, "direct malloc failed");                                                                        \
        }                                                                                                              \
        prefix##_free((heap), block_);                                                                                 \
        uniform(prefix##_heap(heap), name);                                                                            \
    } while (0)

int main(void)
{
    static arena_t arenas[7];
    hk_tlsf_t *tlsf = hk_tlsf_init(&arenas[0], sizeof arenas[0], NULL);
    hk_bump_t *bump = hk_bump_init(&arenas[1], sizeof arenas[1], NULL);

    DIRECT("tlsf", tlsf, hk_tlsf);
    DIRECT("bump", bump, hk_bump);
#ifndef WITH_BUMP
    {
        static const hk_pool_class_t classes[] = {{32, 16}, {128, 8}};
        hk_pool_t *pool = bump != NULL ? hk_pool_create(hk_bump_heap(bump), 48, 8) : NULL;
        hk_poolset_t *set = hk_poolset_init(&arenas[2], sizeof arenas[2], classes, 2, NULL);
        hk_lfpool_t *lfpool = hk_lfpool_init(&arenas[3], sizeof arenas[3], 64, NULL);
        hk_buddy_t *buddy = hk_buddy_init(&arenas[4], sizeof arenas[4], NULL, NULL);
        hk_seqfit_t *seqfit = hk_seqfit_init(&arenas[5], sizeof arenas[5], HK_SEQFIT_BEST, NULL);
        hk_dmm_t *dmm = hk_dmm_init(&arenas[6], sizeof arenas[6], hk_dmm_preset("net"), NULL);

        DIRECT("pool", pool, hk_pool);
        DIRECT("poolset", set, hk_poolset);
        DIRECT("lfpool", lfpool, hk_lfpool);
        DIRECT("buddy", buddy, hk_buddy);
        DIRECT("seqfit", seqfit, hk_seqfit);
        DIRECT("dmm", dmm, hk_dmm);
    }
#endif
    return failures == 0 ? 0 : 1;
}
