/* SPDX-License-Identifier: MIT */
/*
 * hk-fits-process: the fits-cse3320 seed's test as a process calling the C
 * library's malloc and free, for the seed's comparison of peak RSS (and time
 * per call) with the system malloc: run it plain (glibc) and under
 * LD_PRELOAD=libheapkit_malloc.so with HEAPKIT_ALLOCATOR=seqfit-first, -next,
 * -best or -worst.
 *
 * The requests come on stdin, one per line, "m ID SIZE" or "f ID" (the lab
 * writes them from its cse3320 workload, so the process makes exactly the
 * lab's requests), and are read into static arrays before the first call:
 * the replay itself allocates nothing but the blocks it is told to.
 *
 *   hk-fits-process < requests
 *
 * Prints one JSON object: the calls made, VmRSS before the first call and
 * VmHWM (peak RSS) after the last, in KiB, and the mean ns per malloc and
 * free (CLOCK_MONOTONIC around each call, as the seed timed with time.h).
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_OPS (1u << 20)
#define MAX_IDS (1u << 16)

typedef struct op {
    unsigned id;
    size_t size; /* 0: free */
} op_t;

static op_t ops[MAX_OPS];
static void *blocks[MAX_IDS];

static long long ns_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* A "Vm...:" line of /proc/self/status in KiB, or -1. */
static long status_kb(const char *key)
{
    char line[256];
    long kb = -1;
    size_t n = strlen(key);
    FILE *f = fopen("/proc/self/status", "r");
    if (f == NULL) {
        return -1;
    }
    while (fgets(line, sizeof(line), f) != NULL) {
        if (strncmp(line, key, n) == 0 && line[n] == ':') {
            kb = strtol(line + n + 1, NULL, 10);
            break;
        }
    }
    fclose(f);
    return kb;
}

static void die(const char *msg, unsigned long line)
{
    fprintf(stderr, "hk-fits-process: stdin line %lu: %s\n", line, msg);
    exit(2);
}

int main(void)
{
    char kind;
    unsigned id;
    unsigned long long size;
    unsigned long n = 0;
    unsigned long i;
    unsigned long mallocs = 0;
    unsigned long frees = 0;
    long long malloc_ns = 0;
    long long free_ns = 0;
    long rss_start;
    int got;

    while ((got = scanf(" %c %u", &kind, &id)) == 2) {
        if (n == MAX_OPS) {
            die("more requests than the process holds (1048576)", n + 1);
        }
        if (id >= MAX_IDS) {
            die("id out of range (65535 at most)", n + 1);
        }
        if (kind == 'm') {
            if (scanf(" %llu", &size) != 1 || size == 0 || size > (1ull << 30)) {
                die("malloc needs a size from 1 to 1 GiB", n + 1);
            }
            ops[n].size = (size_t)size;
        } else if (kind == 'f') {
            ops[n].size = 0;
        } else {
            die("expected 'm ID SIZE' or 'f ID'", n + 1);
        }
        ops[n++].id = id;
    }
    if (got != EOF) {
        die("expected 'm ID SIZE' or 'f ID'", n + 1);
    }
    rss_start = status_kb("VmRSS");
    for (i = 0; i < n; i++) {
        long long t0 = ns_now();
        if (ops[i].size != 0) {
            void *p = malloc(ops[i].size);
            malloc_ns += ns_now() - t0;
            if (p == NULL) {
                fprintf(stderr, "hk-fits-process: malloc(%zu) failed\n", ops[i].size);
                return 1;
            }
            memset(p, 0xA5, ops[i].size); /* the seed's blocks are used: their pages count */
            blocks[ops[i].id] = p;
            mallocs++;
        } else {
            free(blocks[ops[i].id]);
            free_ns += ns_now() - t0;
            blocks[ops[i].id] = NULL;
            frees++;
        }
    }
    printf("{\"mallocs\": %lu, \"frees\": %lu, \"rss_start_kb\": %ld, \"rss_peak_kb\": %ld, "
           "\"malloc_mean_ns\": %.1f, \"free_mean_ns\": %.1f}\n",
           mallocs, frees, rss_start, status_kb("VmHWM"), mallocs ? (double)malloc_ns / (double)mallocs : 0.0,
           frees ? (double)free_ns / (double)frees : 0.0);
    return 0;
}
