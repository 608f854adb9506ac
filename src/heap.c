/*
 * The uniform interface: port locking around each call, calloc's overflow
 * check, alignment fallback, and misuse reporting. Every allocator reaches
 * its callers through these functions or through its own direct ones.
 */
#include "hk_internal.h"

#ifdef HK_DEBUG
#include <assert.h>
#endif

void hk_heap_setup(hk_heap_t *heap, const hk_ops_t *ops, size_t capacity)
{
    hk_memset(heap, 0, sizeof(*heap));
    heap->ops = ops;
    heap->stats.capacity = capacity;
    heap->stats.free_bytes = capacity;
    heap->stats.min_ever_free = capacity;
}

uint32_t hk_heap_key(const void *where)
{
    static uint32_t keys_issued;
    uintptr_t a = (uintptr_t)where;
    uint32_t h = (uint32_t)a ^ (uint32_t)(a >> 16 >> 16) ^ (++keys_issued * 0x9E3779B9u);
    h ^= h >> 16;
    h *= 0x85EBCA6Bu;
    h ^= h >> 13;
    h *= 0xC2B2AE35u;
    h ^= h >> 16;
    return h;
}

void hk_report(hk_heap_t *heap, hk_error_t error, const void *ptr)
{
    heap->stats.error_count++;
    if (heap->hooks.on_error != NULL) {
        heap->hooks.on_error(heap->hooks.ctx, heap, error, ptr);
        return;
    }
#ifdef HK_DEBUG
    assert(!"heapkit: misuse detected (see hk_error_t)");
#endif
}

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

void *hk_realloc_by_move(hk_heap_t *heap, void *ptr, size_t old_usable, size_t size)
{
    void *moved = heap->ops->malloc(heap, size);
    if (moved != NULL) {
        hk_memcpy(moved, ptr, old_usable < size ? old_usable : size);
        heap->ops->free(heap, ptr);
    }
    return moved;
}

void hk_set_hooks(hk_heap_t *heap, const hk_hooks_t *hooks)
{
    if (hooks == NULL) {
        hk_memset(&heap->hooks, 0, sizeof(heap->hooks));
    } else {
        heap->hooks = *hooks;
    }
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

void *hk_malloc(hk_heap_t *heap, size_t size)
{
    void *p;
    lock(heap);
    p = heap->ops->malloc(heap, size);
    unlock(heap);
    return p;
}

void *hk_calloc(hk_heap_t *heap, size_t count, size_t size)
{
    void *p;
    if (size != 0 && count > SIZE_MAX / size) {
        lock(heap);
        heap->stats.fail_count++;
        unlock(heap);
        return NULL;
    }
    lock(heap);
    p = heap->ops->malloc(heap, count * size);
    unlock(heap);
    if (p != NULL) {
        hk_memset(p, 0, count * size);
    }
    return p;
}

void *hk_realloc(hk_heap_t *heap, void *ptr, size_t size)
{
    void *p;
    lock(heap);
    p = heap->ops->realloc(heap, ptr, size);
    unlock(heap);
    return p;
}

void *hk_aligned_alloc(hk_heap_t *heap, size_t alignment, size_t size)
{
    void *p = NULL;
    lock(heap);
    if (!hk_is_pow2(alignment)) {
        heap->stats.fail_count++;
    } else if (alignment <= HK_ALIGN) {
        p = heap->ops->malloc(heap, size);
    } else if (heap->ops->aligned_alloc != NULL) {
        p = heap->ops->aligned_alloc(heap, alignment, size);
    } else {
        heap->stats.fail_count++;
    }
    unlock(heap);
    return p;
}

void hk_free(hk_heap_t *heap, void *ptr)
{
    if (ptr == NULL) {
        return;
    }
    lock(heap);
    heap->ops->free(heap, ptr);
    unlock(heap);
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
