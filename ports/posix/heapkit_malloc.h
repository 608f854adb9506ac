/* SPDX-License-Identifier: MIT */
/*
 * heapkit_malloc: heapkit as the C library's malloc on Linux.
 *
 * libheapkit_malloc.so (LD_PRELOAD) and libheapkit_malloc.a (link it into a
 * program) define malloc, free, calloc, realloc, reallocarray,
 * posix_memalign, aligned_alloc, memalign, valloc, pvalloc and
 * malloc_usable_size on one heapkit regions heap that grows by mmap. The
 * environment chooses the allocator and options when the first call is
 * made (every variable: docs/environment.md):
 *
 *   HEAPKIT_ALLOCATOR       buddy, buddy-lazy, tlsf (default),
 *                           seqfit-first, seqfit-next, seqfit-best,
 *                           seqfit-worst, or a dmm preset but dmm-ose
 *                           (16-byte alignment only: larger alignments get
 *                           a page mapping each); any other name prints one
 *                           line and aborts
 *   HEAPKIT_RELEASE=1       munmap a region as soon as it holds no used
 *                           block (buddy-kth's return of free top-level
 *                           blocks to the OS)
 *   HEAPKIT_ABORT_ON_ERROR=1  misuse prints the error and pointer, then
 *                           aborts (default: the line is printed and the
 *                           call ignored)
 *   HEAPKIT_STATS=1 | path  one counters line at exit, on stderr (as it
 *                           was at the first call, even if the program
 *                           closed it since) or appended to the file
 *   HEAPKIT_SERIES=path     memory samples (CSV) written at exit, every
 *                           HEAPKIT_SERIES_EVERY calls (default 1000) and
 *                           at each region map/unmap
 *   HEAPKIT_REGION_MIN, HEAPKIT_REGION_MAX, HEAPKIT_MMAP_THRESHOLD  bytes
 *
 * This header adds one query for tests and tools. Under LD_PRELOAD, find it
 * with dlsym(RTLD_DEFAULT, "heapkit_malloc_info").
 */
#ifndef HEAPKIT_MALLOC_H
#define HEAPKIT_MALLOC_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct heapkit_malloc_info {
    const char *allocator; /* catalog name in use */
    int release;           /* HEAPKIT_RELEASE in effect */
    int abort_on_error;
    size_t regions;        /* regions mapped now */
    size_t region_bytes;   /* bytes of those regions */
    size_t big_blocks;     /* blocks with a mapping of their own */
    size_t big_bytes;      /* bytes of those mappings */
    size_t mapped_peak;    /* high-water mark of region_bytes + big_bytes */
    size_t region_maps;    /* regions mapped so far */
    size_t region_unmaps;  /* regions given back so far */
    size_t used_bytes;     /* usable bytes of live blocks, both kinds */
    size_t free_bytes;     /* free bytes inside the regions */
    size_t calls;          /* allocation-API calls served */
    size_t errors;         /* misuse reports */
    size_t mmap_threshold; /* requests from this size up get their own mapping */
} heapkit_malloc_info_t;

typedef void (*heapkit_malloc_info_fn)(heapkit_malloc_info_t *out);

void heapkit_malloc_info(heapkit_malloc_info_t *out);

#ifdef __cplusplus
}
#endif

#endif
