/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target: the input bytes are decoded into an operation sequence
 * (shadow_run_bytes in tests/support/shadow.c) and run through the shadow
 * model on a fresh heap of 4 to 32 KiB, with every check after every operation.
 * Any mismatch aborts, which libFuzzer reports as a crash with the input
 * saved. The allocator is fixed at compile time: -DHK_FUZZ_ALLOCATOR="tlsf".
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "heapkit/catalog.h"
#include "shadow.h"

#ifndef HK_FUZZ_ALLOCATOR
#error "define HK_FUZZ_ALLOCATOR to a catalog entry name"
#endif

/* 1/8 of it (the smallest arena an input picks) must hold a poolset: 5.3 KiB */
#define FUZZ_ARENA_SIZE (64u * 1024u)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const hk_catalog_entry_t *entry;
    if (entry == NULL) {
        entry = hk_catalog_find(HK_FUZZ_ALLOCATOR);
        if (entry == NULL) {
            fprintf(stderr, "fuzz: no catalog entry '%s'\n", HK_FUZZ_ALLOCATOR);
            abort();
        }
    }
    if (shadow_run_bytes(entry, data, size, FUZZ_ARENA_SIZE) != 0) {
        abort();
    }
    return 0;
}
