/* SPDX-License-Identifier: MIT */
/*
 * Writes the trace reader fuzzer's seed corpus: trace_seed_corpus <dir>.
 * Valid .hkb files (every operation, realloc(NULL), thread ids, the largest
 * sizes and alignments, a calloc whose bytes need 64 bits), so the fuzzer
 * starts past the header checks and mutates records the pre-pass accepts.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "../../lab/common/hkb.h"

#define MAX_RECORDS 200

static lab_rec_t rec[MAX_RECORDS];
static unsigned n_rec;
static uint32_t n_ids;

static void add(char op, uint32_t id, uint32_t size, uint32_t aux, uint16_t tid)
{
    lab_rec_t *r = &rec[n_rec++];
    r->op = (uint8_t)op;
    r->reserved = 0;
    r->tid = tid;
    r->id = id;
    r->size = size;
    r->aux = aux;
    if (op != 'f') {
        n_ids++;
    }
}

static void put32(unsigned char *p, uint32_t v)
{
    p[0] = (unsigned char)v;
    p[1] = (unsigned char)(v >> 8);
    p[2] = (unsigned char)(v >> 16);
    p[3] = (unsigned char)(v >> 24);
}

/* Records are little-endian on disk and in memory: the engine runs on little-endian hosts only. */
static int save(const char *dir, const char *name)
{
    unsigned char head[LAB_HKB_HEADER];
    char path[4096];
    FILE *f;
    memset(head, 0, sizeof(head));
    memcpy(head, LAB_HKB_MAGIC, LAB_HKB_MAGIC_LEN);
    put32(head + 8, LAB_HKB_VERSION);
    put32(head + 16, n_rec);
    put32(head + 24, n_ids);
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    f = fopen(path, "wb");
    if (f == NULL || fwrite(head, 1, sizeof(head), f) != sizeof(head) ||
        fwrite(rec, sizeof(rec[0]), n_rec, f) != n_rec || fclose(f) != 0) {
        perror(path);
        return 1;
    }
    n_rec = 0;
    n_ids = 0;
    return 0;
}

int main(int argc, char **argv)
{
    unsigned long x = 2024;
    uint32_t live[64];
    unsigned n_live = 0;
    int rc = 0;
    unsigned i;
    if (argc != 2) {
        fprintf(stderr, "usage: trace_seed_corpus <dir>\n");
        return 2;
    }
    rc |= save(argv[1], "empty");
    add('m', 0, 16, 0, 0);
    add('c', 1, 8, 4, 1);
    add('a', 2, 100, 64, 2);
    add('r', 3, 40, 0, 0);
    add('r', 4, 24, LAB_NULL_ID, 3);
    add('f', 1, 0, 0, 1);
    add('f', 3, 0, 0, 0);
    rc |= save(argv[1], "every_op");
    add('m', 0, UINT32_MAX, 0, 0);
    add('c', 1, UINT32_MAX, UINT32_MAX, 0);
    add('a', 2, 1, 1u << 31, 0);
    add('f', 0, 0, 0, 0);
    rc |= save(argv[1], "largest");
    /* a random walk of mallocs, reallocs and frees of live ids */
    for (i = 0; i < MAX_RECORDS; i++) {
        x = x * 1103515245ul + 12345ul;
        if (n_live != 0 && (x >> 16) % 3 == 0) {
            unsigned j = (unsigned)(x >> 20) % n_live;
            add('f', live[j], 0, 0, (uint16_t)(x >> 8));
            live[j] = live[--n_live];
        } else if (n_live != 0 && (x >> 16) % 3 == 1) {
            unsigned j = (unsigned)(x >> 20) % n_live;
            add('r', n_ids, (uint32_t)(x >> 24) % 4096 + 1, live[j], 0);
            live[j] = n_ids - 1;
        } else if (n_live < 64) {
            live[n_live++] = n_ids;
            add('m', n_ids, (uint32_t)(x >> 24) % 1024, 0, 0);
        }
    }
    rc |= save(argv[1], "random_walk");
    return rc;
}
