/* SPDX-License-Identifier: MIT */
/*
 * The binary trace (.hkb, docs/trace-format.md) as the engine sees it: the
 * file mapped read-only, validated record by record, plus what a pre-pass
 * over it learns without any allocator (operation counts, peak live
 * requested bytes and the first record that reaches it).
 */
#ifndef LAB_ENGINE_TRACE_H
#define LAB_ENGINE_TRACE_H

#include <stddef.h>
#include <stdint.h>

/* The header and record layout, lab_rec_t (the engine runs on little-endian hosts only). */
#include "../common/hkb.h"

/* Operation kinds, indexing per-kind counters and timing arrays. */
enum { LAB_OP_MALLOC, LAB_OP_CALLOC, LAB_OP_ALIGNED, LAB_OP_REALLOC, LAB_OP_FREE, LAB_OP_KINDS };

extern const char *const lab_op_names[LAB_OP_KINDS];

typedef struct lab_trace {
    const char *path;
    const lab_rec_t *rec;
    uint64_t count;        /* records */
    uint32_t ids;          /* one past the largest id */
    void *map;
    size_t map_len;
    /* From the pre-pass, assuming every allocation succeeds. */
    uint64_t ops[LAB_OP_KINDS];
    uint64_t peak_live;    /* peak of live requested bytes (UINT64_MAX: that or more) */
    uint64_t peak_live_rec; /* first record after which live == peak_live (0 if no record) */
    uint64_t peak_blocks;  /* peak number of live ids */
    uint64_t max_align;    /* largest alignment asked by an `a` record (0: none) */
    uint64_t max_request;  /* largest requested bytes of one allocating record (0: none) */
} lab_trace_t;

/* Requested bytes of an allocating record (calloc: nmemb * size, in 64 bits). */
static inline uint64_t lab_rec_bytes(const lab_rec_t *r)
{
    return r->op == 'c' ? (uint64_t)r->size * r->aux : r->size;
}

/*
 * Map and validate path. On failure returns -1 with a one-line message in
 * err naming the file and, for a bad record, its index.
 */
int lab_trace_open(lab_trace_t *t, const char *path, char *err, size_t errlen);
/* Validate len bytes of .hkb at data, kept by the caller while t is in use; path names it in errors. */
int lab_trace_parse(lab_trace_t *t, const char *path, const void *data, size_t len, char *err, size_t errlen);
void lab_trace_close(lab_trace_t *t);

#endif
