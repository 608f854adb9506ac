/* SPDX-License-Identifier: MIT */
/*
 * lab/target/sdma.c called directly (lab/tests/test_sdma.py compiles and runs this): the
 * seed's classes and lifetime placement, and every bad pointer handed back reported
 * through the error hook, the heap untouched and still consistent. Prints "ok" or the
 * first failed expectation, exit 1.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "sdma.h"

static unsigned char chunk[64 * 1024] __attribute__((aligned(16)));
static int last_error;
static int failures;

#define EXPECT(cond)                                                                                                   \
    do {                                                                                                               \
        if (!(cond)) {                                                                                                 \
            printf("line %d: %s\n", __LINE__, #cond);                                                                  \
            failures++;                                                                                                \
        }                                                                                                              \
    } while (0)

static void on_error(void *ctx, hk_heap_t *heap, hk_error_t error, const void *ptr)
{
    (void)ctx;
    (void)heap;
    (void)ptr;
    last_error = (int)error;
}

/* free(ptr) must be refused with error, and leave the heap consistent. */
static void refused(hk_heap_t *h, void *ptr, hk_error_t error)
{
    hk_stats_t before = h->stats;
    last_error = 0;
    h->ops->free(h, ptr);
    EXPECT(last_error == (int)error);
    EXPECT(h->stats.error_count == before.error_count + 1);
    EXPECT(h->stats.used_blocks == before.used_blocks && h->stats.free_bytes == before.free_bytes);
    EXPECT(h->ops->check(h) == HK_CHECK_OK);
}

int main(void)
{
    hk_status_t st;
    hk_heap_t *h = lab_sdma_init(chunk, sizeof(chunk), &st);
    hk_hooks_t hooks = {NULL, NULL, on_error, NULL};
    unsigned char *a, *b, *big, *again;
    unsigned char outside[32];
    EXPECT(h != NULL && st == HK_OK);
    if (h == NULL) {
        return 1;
    }
    h->hooks = hooks;
    EXPECT(lab_sdma_init(chunk, 64, &st) == NULL && st == HK_ETOOSMALL);

    /* A 127-byte request: 135 with the header, 136 in HK_ALIGN units, class (7, 1) starts at 144. */
    a = lab_sdma_malloc(h, 127);
    b = lab_sdma_malloc(h, 127);
    EXPECT(a != NULL && b != NULL && h->ops->usable_size(h, a) == 136 && b == a + 144);
    /* Short-lived classes (below 256 B, mask 255) grow from the bottom, long-lived ones from the top. */
    big = lab_sdma_malloc(h, 1000);
    EXPECT(big != NULL && big > b + 32 * 1024 && h->ops->usable_size(h, big) == 1016);
    EXPECT(lab_sdma_malloc(h, 30712) != NULL && lab_sdma_malloc(h, 30713) == NULL);

    /* free and reuse: the class's own list first, no split of a larger block, no merge. */
    lab_sdma_free(h, a);
    again = lab_sdma_malloc(h, 130);
    EXPECT(again == a);
    lab_sdma_free(h, big);
    EXPECT(lab_sdma_malloc(h, 100) == b + 144);
    EXPECT(h->ops->check(h) == HK_CHECK_OK);

    /* Misuse. */
    lab_sdma_free(h, NULL);
    EXPECT(h->stats.error_count == 0);
    refused(h, outside + 16, HK_ERR_FOREIGN_PTR);
    refused(h, a + 3, HK_ERR_INTERIOR_PTR);
    refused(h, a + 16, HK_ERR_INTERIOR_PTR);
    refused(h, b + 3 * 144 + 64, HK_ERR_INTERIOR_PTR); /* the untouched middle of the chunk */
    lab_sdma_free(h, b);
    refused(h, b, HK_ERR_DOUBLE_FREE);
    refused(h, big, HK_ERR_DOUBLE_FREE);
    EXPECT(h->ops->usable_size(h, b) == 0 && last_error == (int)HK_ERR_DOUBLE_FREE);
    /* A stray write over the header of a live block: its free is refused, check() sees it. */
    memset(again - 8, 0x41, 8);
    last_error = 0;
    lab_sdma_free(h, again);
    EXPECT(last_error == (int)HK_ERR_INTERIOR_PTR);
    EXPECT(h->ops->check(h) != HK_CHECK_OK);
    if (failures == 0) {
        printf("ok\n");
    }
    return failures != 0;
}
