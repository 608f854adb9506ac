/* SPDX-License-Identifier: MIT */
/*
 * The uniform interface: port locking around each call, the calling rules
 * (NULL, 0, realloc by moving, calloc's overflow check, alignment fallback),
 * failure counting and level-3 validation. Every allocator reaches its
 * callers through these functions or through its own direct ones; what
 * those direct ones share lives in core.c.
 */
#include "hk_internal.h"

const char *hk_error_name(hk_error_t error)
{
    switch (error) {
    case HK_ERR_DOUBLE_FREE:
        return "double free";
    case HK_ERR_FOREIGN_PTR:
        return "foreign pointer";
    case HK_ERR_INTERIOR_PTR:
        return "interior pointer";
    case HK_ERR_CORRUPT:
        return "corrupted header";
    }
    return "unknown error";
}

const char *hk_check_name(hk_check_t code)
{
    switch (code) {
    case HK_CHECK_OK:
        return "ok";
    case HK_CHECK_RANGE:
        return "block or link outside the heap";
    case HK_CHECK_ALIGN:
        return "misaligned block, link or size";
    case HK_CHECK_SIZE:
        return "impossible block size";
    case HK_CHECK_NEIGHBOUR:
        return "size disagrees with the neighbour's view";
    case HK_CHECK_STATE:
        return "used/free state inconsistent";
    case HK_CHECK_UNMERGED:
        return "free neighbours not merged";
    case HK_CHECK_LINK:
        return "broken free-list link";
    case HK_CHECK_LIST:
        return "free block on the wrong list";
    case HK_CHECK_COUNT:
        return "lists and chain disagree";
    case HK_CHECK_STATS:
        return "counters disagree with the blocks";
    case HK_CHECK_CANARY:
        return "canary overwritten";
    case HK_CHECK_POISON:
        return "free-block poison overwritten";
    case HK_CHECK_CONTROL:
        return "control structure damaged";
    }
    return "unknown check code";
}

void hk_set_hooks(hk_heap_t *heap, const hk_hooks_t *hooks)
{
    if (hooks == NULL) {
        hk_memset(&heap->hooks, 0, sizeof(heap->hooks));
    } else {
        heap->hooks = *hooks;
    }
}

/*
 * The calling rules live here, so allocators never see them: malloc(0) is
 * malloc(1); a NULL result is a failure counted here; realloc of NULL is
 * malloc, realloc to 0 is free, and a block that cannot be resized in place
 * moves. An hk_ops_t without resize wraps another library's allocator that
 * has its own realloc (the lab's peers): it gets realloc whole, and counts
 * its own failures.
 */
/* The failure path, out of line: the hot path then needs nothing of the heap after the call but this. */
HK_COLD void *alloc_failed(hk_heap_t *heap)
{
    if (heap->ops->resize != NULL) {
        heap->stats.fail_count++;
    }
    return NULL;
}

static void *alloc_counted(hk_heap_t *heap, size_t size)
{
    void *p = heap->ops->malloc(heap, size + (size == 0));
    return p != NULL ? p : alloc_failed(heap);
}

/* Level 3: the whole heap is checked before every uniform call that changes it. */
static void validate(hk_heap_t *heap)
{
#if HK_VALIDATE_EVERY_CALL
    if (heap->ops->check(heap) != HK_CHECK_OK) {
        hk_report(heap, HK_ERR_CORRUPT, NULL);
    }
#else
    (void)heap;
#endif
}

static void lock(const hk_heap_t *heap)
{
    if (heap->hooks.lock != NULL) {
        heap->hooks.lock(heap->hooks.ctx);
    }
}

static void unlock(const hk_heap_t *heap)
{
    if (heap->hooks.unlock != NULL) {
        heap->hooks.unlock(heap->hooks.ctx);
    }
}

/* Lock and unlock around a call that changes the heap (validated first at level 3). */
static void enter(hk_heap_t *heap)
{
    lock(heap);
    validate(heap);
}

static void leave(hk_heap_t *heap) { unlock(heap); }

/*
 * malloc and free without lock hooks (or validation) are the hot paths: one
 * test of the hook, then the allocator.
 */
static int unlocked(const hk_heap_t *heap) { return heap->hooks.lock == NULL && !HK_VALIDATE_EVERY_CALL; }

/* With lock hooks (or level 3's validation): apart, so the hook-free path saves no registers for it. */
HK_APART void *malloc_locked(hk_heap_t *heap, size_t size)
{
    void *p;
    enter(heap);
    p = alloc_counted(heap, size);
    leave(heap);
    return p;
}

void *hk_malloc(hk_heap_t *heap, size_t size)
{
    return unlocked(heap) ? alloc_counted(heap, size) : malloc_locked(heap, size);
}

void *hk_calloc(hk_heap_t *heap, size_t count, size_t size)
{
    void *p = NULL;
    enter(heap);
    if (size != 0 && count > SIZE_MAX / size) {
        heap->stats.fail_count++;
    } else {
        p = alloc_counted(heap, count * size);
    }
    leave(heap);
    if (p != NULL) {
        hk_memset(p, 0, count * size);
    }
    return p;
}

/* realloc of a live block (size > 0): in place, or moved; NULL on misuse or failure. */
static void *resize_or_move(hk_heap_t *heap, void *ptr, size_t size)
{
    size_t old_usable = heap->ops->usable_size(heap, ptr);
    void *p;
    if (old_usable == 0) {
        return NULL; /* misuse, reported */
    }
    p = heap->ops->resize(heap, ptr, size);
    if (p == NULL) {
        p = heap->ops->malloc(heap, size);
        if (p == NULL) {
            heap->stats.fail_count++;
            return NULL;
        }
        hk_memcpy(p, ptr, old_usable < size ? old_usable : size);
        heap->ops->free(heap, ptr);
    }
    heap->stats.realloc_count++;
    return p;
}

void *hk_realloc(hk_heap_t *heap, void *ptr, size_t size)
{
    void *p = NULL;
    enter(heap);
    if (heap->ops->resize == NULL) {
        p = heap->ops->realloc(heap, ptr, ptr == NULL ? size + (size == 0) : size);
    } else if (ptr == NULL) {
        p = alloc_counted(heap, size);
    } else if (size == 0) {
        heap->ops->free(heap, ptr);
    } else {
        p = resize_or_move(heap, ptr, size);
    }
    leave(heap);
    return p;
}

void *hk_aligned_alloc(hk_heap_t *heap, size_t alignment, size_t size)
{
    void *p = NULL;
    enter(heap);
    if (!hk_is_pow2(alignment)) {
        heap->stats.fail_count++;
    } else if (alignment <= HK_ALIGN) {
        p = alloc_counted(heap, size);
    } else if (heap->ops->aligned_alloc != NULL) {
        p = heap->ops->aligned_alloc(heap, alignment, size + (size == 0));
        if (p == NULL && heap->ops->resize != NULL) {
            heap->stats.fail_count++;
        }
    } else {
        heap->stats.fail_count++;
    }
    leave(heap);
    return p;
}

HK_APART void free_locked(hk_heap_t *heap, void *ptr)
{
    enter(heap);
    heap->ops->free(heap, ptr);
    leave(heap);
}

void hk_free(hk_heap_t *heap, void *ptr)
{
    if (ptr == NULL) {
        return;
    }
    if (unlocked(heap)) {
        heap->ops->free(heap, ptr);
    } else {
        free_locked(heap, ptr);
    }
}

size_t hk_usable_size(hk_heap_t *heap, const void *ptr)
{
    size_t n;
    if (ptr == NULL) {
        return 0;
    }
    lock(heap);
    n = heap->ops->usable_size(heap, ptr);
    unlock(heap);
    return n;
}

void hk_get_stats(hk_heap_t *heap, hk_stats_t *out)
{
    lock(heap);
    heap->ops->get_stats(heap, out);
    unlock(heap);
}

void hk_restart_low_water(hk_heap_t *heap)
{
    lock(heap);
    heap->stats.min_ever_free = heap->stats.free_bytes;
    unlock(heap);
}

void hk_walk(hk_heap_t *heap, hk_walk_fn visit, void *ctx)
{
    lock(heap);
    heap->ops->walk(heap, visit, ctx);
    unlock(heap);
}

hk_check_t hk_check(hk_heap_t *heap)
{
    hk_check_t rc;
    lock(heap);
    rc = heap->ops->check(heap);
    unlock(heap);
    return rc;
}

int hk_owns(const hk_heap_t *heap, const void *ptr) { return heap->ops->owns(heap, ptr); }

const char *hk_name(const hk_heap_t *heap) { return heap->ops->name; }
