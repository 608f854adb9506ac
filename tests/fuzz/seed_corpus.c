/* SPDX-License-Identifier: MIT */
/*
 * Writes the fuzzers' seed corpus: seed_corpus <dir>. A few operation
 * sequences in the byte format shadow_run_bytes decodes (fill then free,
 * realloc chains, aligned requests, must-fail sizes) and some pseudo-random
 * ones, so the fuzzers start deep in the decoder instead of at empty input.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_SEED 2048

static unsigned char buf[MAX_SEED];
static size_t len;

static void put(unsigned b)
{
    if (len < MAX_SEED) {
        buf[len++] = (unsigned char)b;
    }
}

static int save(const char *dir, const char *name)
{
    char path[4096];
    FILE *f;
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    f = fopen(path, "wb");
    if (f == NULL || fwrite(buf, 1, len, f) != len || fclose(f) != 0) {
        perror(path);
        return 1;
    }
    len = 0;
    return 0;
}

int main(int argc, char **argv)
{
    unsigned long x = 12345;
    int rc = 0;
    unsigned i;
    unsigned k;
    if (argc != 2) {
        fprintf(stderr, "usage: seed_corpus <dir>\n");
        return 2;
    }
    /* fill with small and medium mallocs, then free them all (op 5 frees block byte % live) */
    put(0);
    for (i = 0; i < 60; i++) {
        put(0);
        put(i % 3 == 0 ? 0xC0 + i % 8 : 8 + i * 3);
        if (i % 3 == 0) {
            put(i * 7);
        }
    }
    for (i = 0; i < 60; i++) {
        put(5);
        put(i * 11);
    }
    rc |= save(argv[1], "fill_free");
    /* realloc chains: grow and shrink the same blocks */
    put(3);
    for (i = 0; i < 10; i++) {
        put(0);
        put(16 + i);
    }
    for (i = 0; i < 80; i++) {
        put(3);
        put(i);
        put(i % 2 ? 0xC1 + i % 4 : 4 + i);
        if (i % 2) {
            put(i * 5);
        }
    }
    rc |= save(argv[1], "realloc_chain");
    /* aligned requests of every power of two, some not powers of two, then frees */
    put(1);
    for (i = 0; i < 40; i++) {
        put(4);
        put(i % 5 == 4 ? 0x80 + 24 : i % 14);
        put(1 + i * 5);
        put(6);
        put(i);
    }
    rc |= save(argv[1], "aligned");
    /* sizes that must fail, calloc overflow, free(NULL), probes, resets */
    put(2);
    for (k = 0xF8; k <= 0xFF; k++) {
        put(0);
        put(k);
        put(0x10);
        put(0x20);
        put(2);
        put(0xFF);
        put(k);
        put(0xFF);
        put(0xFF);
        put(0x85);
        put(0);
        put(8);
        put(0);
    }
    put(9);
    put(0xF9);
    rc |= save(argv[1], "edges");
    /* random sequences */
    for (k = 0; k < 8; k++) {
        char name[32];
        size_t n = 256u + 192u * k;
        for (i = 0; i < n; i++) {
            x = x * 1103515245ul + 12345ul;
            put((unsigned)(x >> 16) & 0xFFu);
        }
        snprintf(name, sizeof(name), "random_%u", k);
        rc |= save(argv[1], name);
    }
    return rc;
}
