/* SPDX-License-Identifier: MIT */
/* The catalog of allocator configurations (see heapkit/catalog.h). */
#include "heapkit/catalog.h"

#include "heapkit/buddy.h"
#include "heapkit/bump.h"
#include "heapkit/dmm.h"
#include "heapkit/gbuddy.h"
#include "heapkit/pool.h"
#include "heapkit/seqfit.h"
#include "heapkit/tlsf.h"
#include "hk_internal.h"

static hk_heap_t *make_bump(void *arena, size_t size, hk_status_t *status)
{
    hk_bump_t *h = hk_bump_init(arena, size, status);
    return h != NULL ? hk_bump_heap(h) : NULL;
}

/* The control struct begins with its hk_heap_t, so the handle is the heap. */
static void reset_bump(hk_heap_t *heap) { hk_bump_reset((hk_bump_t *)(void *)heap); }

static hk_heap_t *make_seqfit(void *arena, size_t size, hk_seqfit_policy_t policy, hk_status_t *status)
{
    hk_seqfit_t *h = hk_seqfit_init(arena, size, policy, status);
    return h != NULL ? hk_seqfit_heap(h) : NULL;
}

static hk_heap_t *make_seqfit_first(void *a, size_t n, hk_status_t *s) { return make_seqfit(a, n, HK_SEQFIT_FIRST, s); }
static hk_heap_t *make_seqfit_next(void *a, size_t n, hk_status_t *s) { return make_seqfit(a, n, HK_SEQFIT_NEXT, s); }
static hk_heap_t *make_seqfit_best(void *a, size_t n, hk_status_t *s) { return make_seqfit(a, n, HK_SEQFIT_BEST, s); }
static hk_heap_t *make_seqfit_worst(void *a, size_t n, hk_status_t *s) { return make_seqfit(a, n, HK_SEQFIT_WORST, s); }

static hk_heap_t *make_buddy_cfg(void *arena, size_t size, int lazy, hk_status_t *status)
{
    hk_buddy_config_t cfg;
    hk_buddy_t *h;
    hk_memset(&cfg, 0, sizeof(cfg));
    cfg.lazy = lazy;
    h = hk_buddy_init(arena, size, &cfg, status);
    return h != NULL ? hk_buddy_heap(h) : NULL;
}

/* aligned_alloc honours what the block area's base satisfies: at least this (buddy.h). */
#define BUDDY_ALIGN (HK_BUDDY_BASE_ALIGN > HK_BUDDY_MIN_BLOCK ? HK_BUDDY_BASE_ALIGN : HK_BUDDY_MIN_BLOCK)

static hk_heap_t *make_buddy(void *a, size_t n, hk_status_t *s) { return make_buddy_cfg(a, n, 0, s); }
static hk_heap_t *make_buddy_lazy(void *a, size_t n, hk_status_t *s) { return make_buddy_cfg(a, n, 1, s); }

static hk_heap_t *make_gbuddy(void *arena, size_t size, hk_gbuddy_kind_t kind, hk_status_t *status)
{
    hk_gbuddy_config_t cfg;
    hk_gbuddy_t *h;
    hk_memset(&cfg, 0, sizeof(cfg));
    cfg.kind = kind;
    h = hk_gbuddy_init(arena, size, &cfg, status);
    return h != NULL ? hk_gbuddy_heap(h) : NULL;
}

static hk_heap_t *make_buddy_fib(void *a, size_t n, hk_status_t *s) { return make_gbuddy(a, n, HK_GBUDDY_FIBONACCI, s); }
static hk_heap_t *make_buddy_weighted(void *a, size_t n, hk_status_t *s) { return make_gbuddy(a, n, HK_GBUDDY_WEIGHTED, s); }

static hk_heap_t *make_tlsf(void *arena, size_t size, hk_status_t *status)
{
    hk_tlsf_t *h = hk_tlsf_init(arena, size, status);
    return h != NULL ? hk_tlsf_heap(h) : NULL;
}

/*
 * Four classes, 16 to 1024 bytes, with 8:4:2:1 blocks; the counts are the
 * largest multiple that fits the arena (binary search over init).
 */
#define POOLSET_MAX_BLOCK 1024u

static hk_heap_t *poolset_try(void *arena, size_t size, size_t k, hk_status_t *status)
{
    hk_pool_class_t classes[4];
    hk_poolset_t *h;
    classes[0].block_size = 16;
    classes[0].count = 8 * k;
    classes[1].block_size = 64;
    classes[1].count = 4 * k;
    classes[2].block_size = 256;
    classes[2].count = 2 * k;
    classes[3].block_size = POOLSET_MAX_BLOCK;
    classes[3].count = k;
    h = hk_poolset_init(arena, size, classes, 4, status);
    return h != NULL ? hk_poolset_heap(h) : NULL;
}

static hk_heap_t *make_poolset(void *arena, size_t size, hk_status_t *status)
{
    size_t lo = 0;
    size_t hi = size / 1920u + 1u; /* each step of k costs 1920 bytes before headers: hi never fits */
    hk_status_t st;
    while (hi - lo > 1) {
        size_t mid = lo + (hi - lo) / 2;
        if (poolset_try(arena, size, mid, &st) != NULL) {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    return poolset_try(arena, size, lo != 0 ? lo : 1, status);
}

#define LFPOOL_BLOCK 128u

static hk_heap_t *make_lfpool(void *arena, size_t size, hk_status_t *status)
{
    hk_lfpool_t *h = hk_lfpool_init(arena, size, LFPOOL_BLOCK, status);
    return h != NULL ? hk_lfpool_heap(h) : NULL;
}

static hk_heap_t *make_dmm(void *arena, size_t size, const char *preset, hk_status_t *status)
{
    hk_dmm_t *h = hk_dmm_init(arena, size, hk_dmm_preset(preset), status);
    return h != NULL ? hk_dmm_heap(h) : NULL;
}

static hk_heap_t *make_dmm_wince(void *a, size_t n, hk_status_t *s) { return make_dmm(a, n, "wince", s); }
static hk_heap_t *make_dmm_winxp(void *a, size_t n, hk_status_t *s) { return make_dmm(a, n, "winxp", s); }
static hk_heap_t *make_dmm_lea(void *a, size_t n, hk_status_t *s) { return make_dmm(a, n, "lea", s); }
static hk_heap_t *make_dmm_ose(void *a, size_t n, hk_status_t *s) { return make_dmm(a, n, "ose", s); }
static hk_heap_t *make_dmm_uclinux(void *a, size_t n, hk_status_t *s) { return make_dmm(a, n, "uclinux", s); }
static hk_heap_t *make_dmm_net(void *a, size_t n, hk_status_t *s) { return make_dmm(a, n, "net", s); }

/* The ose preset has no general pool: requests above its largest class fail. */
#define DMM_OSE_MAX_REQUEST 4096u

#define GENERAL (HK_CATALOG_RECLAIMS | HK_CATALOG_EXACT_REQUESTED | HK_CATALOG_RESTORES)
/* The tagged heaps store the request only from HK_HARDENING 2 on (the canary sits after it). */
#define TAGGED (HK_CATALOG_RECLAIMS | HK_CATALOG_RESTORES | (HK_HARDENING >= 2 ? HK_CATALOG_EXACT_REQUESTED : 0u))
/* Free lists that never merge: freed memory is reused, but an emptied heap is not the initial one. */
#define UNMERGED (HK_CATALOG_RECLAIMS | (HK_HARDENING >= 2 ? HK_CATALOG_EXACT_REQUESTED : 0u))
/* Alignment the tagged allocators honour: any power of two that fits the arena. */
#define ANY_ALIGN ((size_t)1 << 20)

static const hk_catalog_entry_t entries[] = {
    {"bump", make_bump, HK_CATALOG_EXACT_REQUESTED, SIZE_MAX, ANY_ALIGN, reset_bump},
    {"seqfit-first", make_seqfit_first, TAGGED, SIZE_MAX, ANY_ALIGN, NULL},
    {"seqfit-next", make_seqfit_next, TAGGED, SIZE_MAX, ANY_ALIGN, NULL},
    {"seqfit-best", make_seqfit_best, TAGGED, SIZE_MAX, ANY_ALIGN, NULL},
    {"seqfit-worst", make_seqfit_worst, TAGGED, SIZE_MAX, ANY_ALIGN, NULL},
    {"buddy", make_buddy, HK_CATALOG_RECLAIMS | HK_CATALOG_RESTORES, SIZE_MAX, BUDDY_ALIGN, NULL},
    {"buddy-lazy", make_buddy_lazy, HK_CATALOG_RECLAIMS | HK_CATALOG_RESTORES, SIZE_MAX, BUDDY_ALIGN, NULL},
    {"buddy-fib", make_buddy_fib, HK_CATALOG_RECLAIMS | HK_CATALOG_RESTORES, SIZE_MAX, HK_ALIGN, NULL},
    {"buddy-weighted", make_buddy_weighted, HK_CATALOG_RECLAIMS | HK_CATALOG_RESTORES, SIZE_MAX, HK_ALIGN, NULL},
    {"tlsf", make_tlsf, TAGGED, SIZE_MAX, ANY_ALIGN, NULL},
    {"poolset", make_poolset, GENERAL, POOLSET_MAX_BLOCK, HK_ALIGN, NULL},
    {"lfpool", make_lfpool, GENERAL, LFPOOL_BLOCK, HK_ALIGN, NULL},
    {"dmm-wince", make_dmm_wince, TAGGED, SIZE_MAX, HK_ALIGN, NULL},
    {"dmm-winxp", make_dmm_winxp, UNMERGED, SIZE_MAX, HK_ALIGN, NULL},
    {"dmm-lea", make_dmm_lea, UNMERGED, SIZE_MAX, HK_ALIGN, NULL},
    {"dmm-ose", make_dmm_ose, UNMERGED, DMM_OSE_MAX_REQUEST, HK_ALIGN, NULL},
    {"dmm-uclinux", make_dmm_uclinux, UNMERGED, SIZE_MAX, HK_ALIGN, NULL},
    {"dmm-net", make_dmm_net, UNMERGED, SIZE_MAX, HK_ALIGN, NULL}};

size_t hk_catalog_count(void) { return sizeof(entries) / sizeof(entries[0]); }

const hk_catalog_entry_t *hk_catalog_at(size_t i) { return i < hk_catalog_count() ? &entries[i] : NULL; }

static int same_name(const char *a, const char *b)
{
    while (*a != '\0' && *a == *b) {
        a++;
        b++;
    }
    return *a == *b;
}

const hk_catalog_entry_t *hk_catalog_find(const char *name)
{
    size_t i;
    for (i = 0; i < hk_catalog_count(); i++) {
        if (same_name(entries[i].name, name)) {
            return &entries[i];
        }
    }
    return NULL;
}
