/* SPDX-License-Identifier: MIT */
/*
 * heapkit_malloc: the C library's allocation API on a heapkit regions heap
 * whose memory comes from mmap (see heapkit_malloc.h for the environment).
 *
 * Memory. One regions heap (include/heapkit/regions.h) holds the chosen
 * catalog allocator in every region. When no region can serve a request a
 * new region is mapped; its size is the bytes already in regions, clamped to
 * [HEAPKIT_REGION_MIN, HEAPKIT_REGION_MAX] (default 1 MiB and 64 MiB) and at
 * least twice the request rounded up to a power of two (room for a buddy
 * block of that size next to the control data), so the total doubles while
 * it is small. A region that still cannot serve the request is kept for
 * later ones and the request gets a mapping of its own. Requests from HEAPKIT_MMAP_THRESHOLD (default
 * 256 KiB) up, and alignments no region serves, get a mapping of their own
 * ("big" blocks) listed in a sorted table; like glibc's, the threshold rises
 * to the size of a freed big block, up to a quarter of the largest region.
 * realloc of a big block is an mremap.
 *
 * Return to the OS (HEAPKIT_RELEASE=1, the buddy-kth seed's optimisation): a
 * free that leaves its region without a used block removes the region and
 * munmaps it. Every region of the buddy allocators is a set of top-level
 * buddy blocks; the region goes back when all of them are wholly free.
 *
 * Locking. One pthread mutex serialises every call, taken once per call
 * around the heap operation and the growth, release and big-table updates
 * that go with it (so they are atomic with it); the heaps are called through
 * their direct functions. The mutex is glibc's adaptive one (it spins a
 * little before sleeping: the critical sections are short). Nothing under
 * the mutex calls malloc. fork: pthread_atfork locks in prepare, unlocks in
 * the parent and re-creates the mutex in the child (the only thread there). The environment is read on the first call (ld.so
 * makes it before any thread exists); pthread_atfork, which may allocate,
 * is registered after the heap is ready.
 *
 * Time: the allocator's own bound, plus a binary search over the regions
 * (free, realloc, usable_size) or over the big table; malloc tries the
 * regions in address order, skipping those without enough free bytes, so it
 * is O(regions) at worst; growing is one mmap, a big block one mmap/munmap.
 *
 * Overhead: the allocator's per-block overhead and each region's control
 * data (buddy: 1/16 of the region plus ~0.8 KiB); 16 bytes of table per big
 * block and whole pages for its mapping; the region table reserves 64 Ki
 * slots of 24 bytes (virtual memory, touched as used).
 *
 * Misuse (double free, interior or foreign pointer, corrupted header) is
 * detected by the allocators, by the regions heap and by the big table; it
 * prints "heapkit_malloc: <call>(<pointer>): <error>" and the call does
 * nothing, or aborts with HEAPKIT_ABORT_ON_ERROR=1.
 *
 * Pointers are aligned to 16 (this port builds the core with HK_ALIGN=16,
 * the x86-64 and AArch64 malloc alignment).
 */
#define _GNU_SOURCE
#include "heapkit_malloc.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "heapkit/catalog.h"
#include "heapkit/regions.h"

#define EXPORT __attribute__((visibility("default")))

#define KIB ((size_t)1024)
#define MIB (KIB * KIB)
#define DEFAULT_ALLOCATOR "tlsf"
#define DEFAULT_REGION_MIN MIB
#define DEFAULT_REGION_MAX (64 * MIB)
#define DEFAULT_MMAP_THRESHOLD (256 * KIB)
#define DEFAULT_SERIES_EVERY 1000
/* Lowest descriptor for the copy of stderr: above the numbers programs and shells pick themselves. */
#define STATS_FD_MIN 64
/* Region slots reserved (virtual memory, touched only as used): 64 Ki regions. */
#define MAX_REGIONS ((size_t)65536)

typedef struct big_block {
    uintptr_t start; /* what the caller got; the mapping starts here */
    size_t len;      /* bytes mapped, a multiple of the page size */
} big_block_t;

typedef struct sample {
    size_t call;
    size_t mapped;
    size_t in_regions;
    size_t free_in_regions;
    size_t used;
} sample_t;

/* A table of T that lives in its own mapping and grows by mremap. */
typedef struct table {
    void *items;
    size_t count;
    size_t cap;
} table_t;

enum { STATE_NONE, STATE_READY };

static pthread_mutex_t heap_lock = PTHREAD_ADAPTIVE_MUTEX_INITIALIZER_NP;
static pthread_mutex_t init_lock = PTHREAD_MUTEX_INITIALIZER;
static int state;
static int atfork_registered;

static const hk_catalog_entry_t *entry;
static hk_regions_t *regions;
static size_t page;
static size_t region_min = DEFAULT_REGION_MIN;
static size_t region_max = DEFAULT_REGION_MAX;
static size_t mmap_threshold = DEFAULT_MMAP_THRESHOLD;
static size_t threshold_max;
static int release;
static int abort_on_error;

static table_t bigs;
static size_t region_bytes;
static size_t big_bytes;
static size_t mapped_peak;
static size_t region_maps;
static size_t region_unmaps;
static size_t calls;
static size_t errors;
static const char *call_name = "malloc";

static const char *stats_dest;
/* HEAPKIT_STATS=1: stderr as it was at set-up (programs such as coreutils close it before exit). */
static int stats_fd = -1;
static struct stat stats_fd_id;
static const char *series_path;
static size_t series_every = DEFAULT_SERIES_EVERY;
static table_t series;

/* ---------------------------------------------------------------------------
 * Output without stdio (nothing here may allocate).
 */

typedef struct line {
    char buf[512];
    size_t len;
} line_t;

static void put_str(line_t *l, const char *s)
{
    while (*s != '\0' && l->len < sizeof(l->buf) - 1) {
        l->buf[l->len++] = *s++;
    }
}

static void put_num(line_t *l, size_t v)
{
    char tmp[24];
    size_t n = 0;
    do {
        tmp[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v != 0);
    while (n > 0 && l->len < sizeof(l->buf) - 1) {
        l->buf[l->len++] = tmp[--n];
    }
}

static void put_hex(line_t *l, uintptr_t v)
{
    char tmp[2 * sizeof(v)];
    size_t n = 0;
    put_str(l, "0x");
    do {
        tmp[n++] = "0123456789abcdef"[v & 15u];
        v >>= 4;
    } while (v != 0);
    while (n > 0 && l->len < sizeof(l->buf) - 1) {
        l->buf[l->len++] = tmp[--n];
    }
}

static void write_all(int fd, const char *p, size_t n)
{
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR) {
            continue;
        }
        if (w <= 0) {
            return;
        }
        p += w;
        n -= (size_t)w;
    }
}

static void put_line(int fd, line_t *l)
{
    l->buf[l->len++] = '\n';
    write_all(fd, l->buf, l->len);
    l->len = 0;
}

/* ---------------------------------------------------------------------------
 * Mappings and tables.
 */

static void *map_bytes(size_t len)
{
    void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

/* n rounded up to whole pages, or 0 if that overflows. */
static size_t page_round(size_t n)
{
    return n > SIZE_MAX - (page - 1) ? 0 : (n + page - 1) & ~(page - 1);
}

static size_t pow2_ceil(size_t n)
{
    size_t p = 1;
    while (p < n && p <= SIZE_MAX / 2) {
        p <<= 1;
    }
    return p;
}

/* Room for one more item of size item in t; 0 when no memory. */
static int table_reserve(table_t *t, size_t item)
{
    size_t cap;
    void *p;
    if (t->count < t->cap) {
        return 1;
    }
    cap = t->cap == 0 ? page / item : t->cap * 2;
    p = t->items == NULL ? map_bytes(cap * item) : mremap(t->items, t->cap * item, cap * item, MREMAP_MAYMOVE);
    if (p == NULL || p == MAP_FAILED) {
        return 0;
    }
    t->items = p;
    t->cap = cap;
    return 1;
}

static size_t mapped_now(void) { return region_bytes + big_bytes; }

static void note_mapped(void)
{
    if (mapped_now() > mapped_peak) {
        mapped_peak = mapped_now();
    }
}

static void take_sample(void)
{
    hk_heap_t *h = hk_regions_heap(regions);
    hk_stats_t st;
    sample_t *s;
    if (!table_reserve(&series, sizeof(sample_t))) {
        return;
    }
    s = (sample_t *)series.items + series.count++;
    s->call = calls;
    s->mapped = mapped_now();
    s->in_regions = region_bytes;
    hk_get_stats(h, &st);
    s->free_in_regions = st.free_bytes;
    s->used = st.used_granted + big_bytes;
}

/* ---------------------------------------------------------------------------
 * Misuse reports.
 */

static void report(hk_error_t error, const void *ptr)
{
    line_t l;
    l.len = 0;
    errors++;
    put_str(&l, "heapkit_malloc: ");
    put_str(&l, call_name);
    put_str(&l, "(");
    put_hex(&l, (uintptr_t)ptr);
    put_str(&l, "): ");
    put_str(&l, hk_error_name(error));
    put_str(&l, abort_on_error ? ", aborting (HEAPKIT_ABORT_ON_ERROR=1)" : ", call ignored");
    put_line(2, &l);
    if (abort_on_error) {
        abort();
    }
}

static void on_heap_error(void *ctx, hk_heap_t *heap, hk_error_t error, const void *ptr)
{
    (void)ctx;
    (void)heap;
    report(error, ptr);
}

/* ---------------------------------------------------------------------------
 * Regions.
 */

static size_t next_region_size(size_t need)
{
    size_t want = region_bytes < region_min ? region_min : region_bytes;
    size_t fit = pow2_ceil(need);
    if (want > region_max) {
        want = region_max;
    }
    fit = fit > SIZE_MAX / 2 ? SIZE_MAX : fit * 2;
    return page_round(fit > want ? fit : want);
}

/* Map one more region able to serve a request of need bytes. */
static int grow(size_t need)
{
    size_t size = next_region_size(need);
    void *m = size != 0 ? map_bytes(size) : NULL;
    if (m == NULL) {
        return 0;
    }
    if (hk_regions_add(regions, m, size) != HK_OK) {
        munmap(m, size);
        return 0;
    }
    region_bytes += size;
    region_maps++;
    note_mapped();
    if (series_path != NULL) {
        take_sample();
    }
    return 1;
}

/* HEAPKIT_RELEASE: give region i back when no used block is left in it. */
static void maybe_release(size_t i)
{
    hk_region_info_t info;
    hk_stats_t st;
    if (!release || !hk_regions_at(regions, i, &info)) {
        return;
    }
    hk_get_stats(info.heap, &st);
    if (st.used_blocks != 0) {
        return;
    }
    if (hk_regions_remove(regions, i, &info) == HK_OK) {
        munmap(info.arena, info.size);
        region_bytes -= info.size;
        region_unmaps++;
        if (series_path != NULL) {
            take_sample();
        }
    }
}

/* ---------------------------------------------------------------------------
 * Big blocks: one mapping each, in a table sorted by address.
 */

static big_block_t *big_at(size_t i) { return (big_block_t *)bigs.items + i; }

/* Index of the first big block starting above p. */
static size_t big_above(uintptr_t p)
{
    size_t lo = 0;
    size_t hi = bigs.count;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (big_at(mid)->start <= p) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    return lo;
}

/* Index of the big block containing p, or bigs.count. */
static size_t big_find(const void *ptr)
{
    uintptr_t p = (uintptr_t)ptr;
    size_t i = big_above(p);
    if (i == 0 || p - big_at(i - 1)->start >= big_at(i - 1)->len) {
        return bigs.count;
    }
    return i - 1;
}

static int big_insert(uintptr_t start, size_t len)
{
    size_t i;
    if (!table_reserve(&bigs, sizeof(big_block_t))) {
        return 0;
    }
    i = big_above(start);
    memmove(big_at(i + 1), big_at(i), (bigs.count - i) * sizeof(big_block_t));
    big_at(i)->start = start;
    big_at(i)->len = len;
    bigs.count++;
    big_bytes += len;
    note_mapped();
    return 1;
}

static void big_remove(size_t i)
{
    big_bytes -= big_at(i)->len;
    memmove(big_at(i), big_at(i + 1), (bigs.count - i - 1) * sizeof(big_block_t));
    bigs.count--;
}

static void *big_alloc(size_t alignment, size_t n)
{
    size_t len = page_round(n == 0 ? 1 : n);
    size_t extra = alignment > page ? alignment - page : 0;
    uintptr_t map;
    uintptr_t start;
    if (len == 0 || len > SIZE_MAX - extra) {
        return NULL;
    }
    map = (uintptr_t)map_bytes(len + extra);
    if (map == 0) {
        return NULL;
    }
    start = alignment > page ? (map + alignment - 1) & ~(uintptr_t)(alignment - 1) : map;
    if (start > map) {
        munmap((void *)map, start - map);
    }
    if (map + extra > start) {
        munmap((void *)(start + len), map + extra - start);
    }
    if (!big_insert(start, len)) {
        munmap((void *)start, len);
        return NULL;
    }
    return (void *)start;
}

static void big_free(size_t i)
{
    big_block_t b = *big_at(i);
    big_remove(i);
    munmap((void *)b.start, b.len);
    if (b.len > mmap_threshold && b.len <= threshold_max) {
        mmap_threshold = b.len;
    }
}

/* ---------------------------------------------------------------------------
 * Set-up.
 */

static size_t env_size(const char *name, size_t fallback)
{
    const char *s = getenv(name);
    char *end;
    unsigned long long v;
    if (s == NULL || *s == '\0') {
        return fallback;
    }
    v = strtoull(s, &end, 0);
    if (*end != '\0' || v == 0 || v > SIZE_MAX) {
        line_t l;
        l.len = 0;
        put_str(&l, "heapkit_malloc: ");
        put_str(&l, name);
        put_str(&l, "=");
        put_str(&l, s);
        put_str(&l, ": not a positive number of bytes");
        put_line(2, &l);
        abort();
    }
    return (size_t)v;
}

static int env_flag(const char *name)
{
    const char *s = getenv(name);
    return s != NULL && *s != '\0' && strcmp(s, "0") != 0;
}

/* Allocators this port offers: those that reclaim and take any request size. */
static int usable_entry(const hk_catalog_entry_t *e)
{
    return e != NULL && (e->caps & HK_CATALOG_RECLAIMS) != 0 && e->max_request == SIZE_MAX;
}

static const hk_catalog_entry_t *choose_allocator(void)
{
    const char *name = getenv("HEAPKIT_ALLOCATOR");
    const hk_catalog_entry_t *e;
    line_t l;
    size_t i;
    if (name == NULL || *name == '\0') {
        name = DEFAULT_ALLOCATOR;
    }
    e = hk_catalog_find(name);
    if (usable_entry(e)) {
        return e;
    }
    l.len = 0;
    put_str(&l, "heapkit_malloc: HEAPKIT_ALLOCATOR=");
    put_str(&l, name);
    put_str(&l, ": unknown allocator, choose one of:");
    for (i = 0; i < hk_catalog_count(); i++) {
        if (usable_entry(hk_catalog_at(i))) {
            put_str(&l, " ");
            put_str(&l, hk_catalog_at(i)->name);
        }
    }
    put_line(2, &l);
    abort();
}

static void fail_setup(const char *what)
{
    line_t l;
    l.len = 0;
    put_str(&l, "heapkit_malloc: ");
    put_str(&l, what);
    put_line(2, &l);
    abort();
}

static void keep_stderr(void)
{
    int fd = fcntl(2, F_DUPFD_CLOEXEC, STATS_FD_MIN);
    if (fd >= 0 && fstat(fd, &stats_fd_id) == 0) {
        stats_fd = fd;
    } else if (fd >= 0) {
        close(fd);
    }
}

/* The copy of stderr, unless the program has since put something else at its number; else stderr. */
static int stats_stderr(void)
{
    struct stat now;
    if (stats_fd >= 0 && fstat(stats_fd, &now) == 0 && now.st_dev == stats_fd_id.st_dev &&
        now.st_ino == stats_fd_id.st_ino) {
        return stats_fd;
    }
    return 2;
}

static void setup(void)
{
    size_t ctl;
    void *mem;
    hk_hooks_t hooks;
    page = (size_t)sysconf(_SC_PAGESIZE);
    entry = choose_allocator();
    release = env_flag("HEAPKIT_RELEASE");
    abort_on_error = env_flag("HEAPKIT_ABORT_ON_ERROR");
    region_min = env_size("HEAPKIT_REGION_MIN", DEFAULT_REGION_MIN);
    region_max = env_size("HEAPKIT_REGION_MAX", DEFAULT_REGION_MAX);
    if (region_max < region_min) {
        region_max = region_min;
    }
    mmap_threshold = env_size("HEAPKIT_MMAP_THRESHOLD", DEFAULT_MMAP_THRESHOLD);
    threshold_max = region_max / 4 > mmap_threshold ? region_max / 4 : mmap_threshold;
    stats_dest = getenv("HEAPKIT_STATS");
    if (stats_dest != NULL && (*stats_dest == '\0' || strcmp(stats_dest, "0") == 0)) {
        stats_dest = NULL;
    }
    if (stats_dest != NULL && strcmp(stats_dest, "1") == 0) {
        keep_stderr();
    }
    series_path = getenv("HEAPKIT_SERIES");
    if (series_path != NULL && *series_path == '\0') {
        series_path = NULL;
    }
    series_every = env_size("HEAPKIT_SERIES_EVERY", DEFAULT_SERIES_EVERY);
    ctl = page_round(hk_regions_footprint(MAX_REGIONS));
    mem = map_bytes(ctl);
    regions = mem != NULL ? hk_regions_init(mem, ctl, entry->make, NULL) : NULL;
    if (regions == NULL) {
        fail_setup("cannot map the regions table");
    }
    memset(&hooks, 0, sizeof(hooks));
    hooks.on_error = on_heap_error;
    hk_set_hooks(hk_regions_heap(regions), &hooks);
}

static void atfork_prepare(void) { pthread_mutex_lock(&heap_lock); }
static void atfork_parent(void) { pthread_mutex_unlock(&heap_lock); }
static void atfork_child(void)
{
    static const pthread_mutex_t fresh = PTHREAD_ADAPTIVE_MUTEX_INITIALIZER_NP;
    heap_lock = fresh;
}

static void init_slow(void)
{
    pthread_mutex_lock(&init_lock);
    if (__atomic_load_n(&state, __ATOMIC_ACQUIRE) != STATE_READY) {
        setup();
        __atomic_store_n(&state, STATE_READY, __ATOMIC_RELEASE);
    }
    pthread_mutex_unlock(&init_lock);
    if (!__atomic_exchange_n(&atfork_registered, 1, __ATOMIC_ACQ_REL)) {
        pthread_atfork(atfork_prepare, atfork_parent, atfork_child);
    }
}

/* Take the heap for one call of the API named name. */
static void enter(const char *name)
{
    if (__atomic_load_n(&state, __ATOMIC_ACQUIRE) != STATE_READY) {
        init_slow();
    }
    pthread_mutex_lock(&heap_lock);
    call_name = name;
    calls++;
    if (series_path != NULL && calls % series_every == 0) {
        take_sample();
    }
}

static void leave(void) { pthread_mutex_unlock(&heap_lock); }

/* ---------------------------------------------------------------------------
 * The operations, under the lock.
 */

/* A block of n bytes aligned to alignment (a power of two); *fresh is set for zeroed memory. */
static void *alloc_locked(size_t alignment, size_t n, int *fresh)
{
    void *p = NULL;
    *fresh = 0;
    if (n < mmap_threshold) {
        p = alignment <= 16 ? hk_regions_malloc(regions, n) : hk_regions_aligned_alloc(regions, alignment, n);
        if (p == NULL && alignment <= entry->max_align && n <= SIZE_MAX - alignment && grow(n + alignment)) {
            p = alignment <= 16 ? hk_regions_malloc(regions, n) : hk_regions_aligned_alloc(regions, alignment, n);
        }
    }
    if (p == NULL) {
        p = big_alloc(alignment, n);
        *fresh = p != NULL;
    }
    return p;
}

static void free_locked(void *ptr)
{
    size_t i = hk_regions_index_of(regions, ptr);
    if (i < hk_regions_count(regions)) {
        hk_regions_free(regions, ptr);
        maybe_release(i);
        return;
    }
    i = big_find(ptr);
    if (i == bigs.count) {
        report(HK_ERR_FOREIGN_PTR, ptr);
    } else if (big_at(i)->start != (uintptr_t)ptr) {
        report(HK_ERR_INTERIOR_PTR, ptr);
    } else {
        big_free(i);
    }
}

/* Usable bytes of a live block; 0 after a misuse report. */
static size_t usable_locked(const void *ptr)
{
    size_t i = hk_regions_index_of(regions, ptr);
    if (i < hk_regions_count(regions)) {
        size_t seen = errors;
        size_t n = hk_regions_usable_size(regions, ptr);
        return errors == seen ? n : 0;
    }
    i = big_find(ptr);
    if (i == bigs.count) {
        report(HK_ERR_FOREIGN_PTR, ptr);
        return 0;
    }
    if (big_at(i)->start != (uintptr_t)ptr) {
        report(HK_ERR_INTERIOR_PTR, ptr);
        return 0;
    }
    return big_at(i)->len;
}

static void *move_locked(void *ptr, size_t old, size_t n)
{
    int fresh;
    void *q = alloc_locked(16, n, &fresh);
    if (q != NULL) {
        memcpy(q, ptr, old < n ? old : n);
        free_locked(ptr);
    }
    return q;
}

static void *realloc_big(size_t i, size_t n)
{
    big_block_t b = *big_at(i);
    size_t len = page_round(n);
    void *q;
    if (n < mmap_threshold / 2 || len == 0) {
        return move_locked((void *)b.start, b.len, n);
    }
    if (len == b.len) {
        return (void *)b.start;
    }
    q = mremap((void *)b.start, b.len, len, MREMAP_MAYMOVE);
    if (q == MAP_FAILED) {
        return NULL;
    }
    /* The removal leaves room in the table, so re-filing the block cannot fail. */
    big_remove(i);
    (void)big_insert((uintptr_t)q, len);
    return q;
}

static void *realloc_locked(void *ptr, size_t n)
{
    size_t i = hk_regions_index_of(regions, ptr);
    size_t old;
    void *q;
    if (i == hk_regions_count(regions)) {
        i = big_find(ptr);
        if (i < bigs.count && big_at(i)->start == (uintptr_t)ptr) {
            return realloc_big(i, n);
        }
        usable_locked(ptr); /* reports the foreign or interior pointer */
        return NULL;
    }
    old = usable_locked(ptr);
    if (old == 0) {
        return NULL;
    }
    if (n < mmap_threshold) {
        q = hk_realloc(hk_regions_heap(regions), ptr, n);
        if (q != NULL) {
            maybe_release(i);
            return q;
        }
    }
    return move_locked(ptr, old, n);
}

/* ---------------------------------------------------------------------------
 * The API.
 */

static void *alloc_api(const char *name, size_t alignment, size_t n, int zero)
{
    int fresh;
    void *p;
    enter(name);
    p = alloc_locked(alignment, n, &fresh);
    leave();
    if (p == NULL) {
        errno = ENOMEM;
    } else if (zero && !fresh) {
        memset(p, 0, n);
    }
    return p;
}

EXPORT void *malloc(size_t n) { return alloc_api("malloc", 16, n, 0); }

/* free and posix_memalign leave errno alone (POSIX 2024), whatever munmap or a report does. */
EXPORT void free(void *ptr)
{
    int saved_errno = errno;
    if (ptr == NULL) {
        return;
    }
    enter("free");
    free_locked(ptr);
    leave();
    errno = saved_errno;
}

EXPORT void *calloc(size_t count, size_t size)
{
    if (size != 0 && count > SIZE_MAX / size) {
        errno = ENOMEM;
        return NULL;
    }
    return alloc_api("calloc", 16, count * size, 1);
}

EXPORT void *realloc(void *ptr, size_t n)
{
    void *q;
    if (ptr == NULL) {
        return alloc_api("realloc", 16, n, 0);
    }
    if (n == 0) {
        enter("realloc");
        free_locked(ptr);
        leave();
        return NULL;
    }
    enter("realloc");
    q = realloc_locked(ptr, n);
    leave();
    if (q == NULL) {
        errno = ENOMEM;
    }
    return q;
}

EXPORT void *reallocarray(void *ptr, size_t count, size_t size)
{
    if (size != 0 && count > SIZE_MAX / size) {
        errno = ENOMEM;
        return NULL;
    }
    return realloc(ptr, count * size);
}

static int pow2(size_t x) { return x != 0 && (x & (x - 1)) == 0; }

EXPORT int posix_memalign(void **out, size_t alignment, size_t n)
{
    int saved_errno;
    void *p;
    if (!pow2(alignment) || alignment % sizeof(void *) != 0) {
        return EINVAL;
    }
    saved_errno = errno;
    p = alloc_api("posix_memalign", alignment, n, 0);
    errno = saved_errno;
    if (p == NULL) {
        return ENOMEM;
    }
    *out = p;
    return 0;
}

EXPORT void *aligned_alloc(size_t alignment, size_t n)
{
    if (!pow2(alignment)) {
        errno = EINVAL;
        return NULL;
    }
    return alloc_api("aligned_alloc", alignment, n, 0);
}

/* glibc's memalign: a non-power-of-two alignment is rounded up to one. */
EXPORT void *memalign(size_t alignment, size_t n)
{
    if (alignment > SIZE_MAX / 2) {
        errno = EINVAL;
        return NULL;
    }
    return alloc_api("memalign", pow2_ceil(alignment), n, 0);
}

EXPORT void *valloc(size_t n) { return alloc_api("valloc", (size_t)sysconf(_SC_PAGESIZE), n, 0); }

EXPORT void *pvalloc(size_t n)
{
    size_t pg = (size_t)sysconf(_SC_PAGESIZE);
    size_t len = n == 0 ? pg : (n > SIZE_MAX - (pg - 1) ? 0 : (n + pg - 1) & ~(pg - 1));
    if (len == 0) {
        errno = ENOMEM;
        return NULL;
    }
    return alloc_api("pvalloc", pg, len, 0);
}

EXPORT size_t malloc_usable_size(void *ptr)
{
    size_t n;
    if (ptr == NULL) {
        return 0;
    }
    enter("malloc_usable_size");
    n = usable_locked(ptr);
    leave();
    return n;
}

EXPORT void heapkit_malloc_info(heapkit_malloc_info_t *out)
{
    hk_heap_t *h;
    hk_stats_t st;
    enter("heapkit_malloc_info");
    h = hk_regions_heap(regions);
    out->allocator = entry->name;
    out->release = release;
    out->abort_on_error = abort_on_error;
    out->regions = hk_regions_count(regions);
    out->region_bytes = region_bytes;
    out->big_blocks = bigs.count;
    out->big_bytes = big_bytes;
    out->mapped_peak = mapped_peak;
    out->region_maps = region_maps;
    out->region_unmaps = region_unmaps;
    hk_get_stats(h, &st);
    out->used_bytes = st.used_granted + big_bytes;
    out->free_bytes = st.free_bytes;
    out->calls = calls;
    out->errors = errors;
    out->mmap_threshold = mmap_threshold;
    leave();
}

/* ---------------------------------------------------------------------------
 * At exit: the stats line and the memory series.
 */

static void write_stats(void)
{
    heapkit_malloc_info_t in;
    line_t l;
    int fd;
    heapkit_malloc_info(&in);
    l.len = 0;
    put_str(&l, "heapkit_malloc: pid=");
    put_num(&l, (size_t)getpid());
    put_str(&l, " allocator=");
    put_str(&l, in.allocator);
    put_str(&l, " release=");
    put_num(&l, (size_t)in.release);
    put_str(&l, " calls=");
    put_num(&l, in.calls);
    put_str(&l, " regions=");
    put_num(&l, in.regions);
    put_str(&l, " region_maps=");
    put_num(&l, in.region_maps);
    put_str(&l, " region_unmaps=");
    put_num(&l, in.region_unmaps);
    put_str(&l, " big_blocks=");
    put_num(&l, in.big_blocks);
    put_str(&l, " mapped_peak=");
    put_num(&l, in.mapped_peak);
    put_str(&l, " used=");
    put_num(&l, in.used_bytes);
    put_str(&l, " errors=");
    put_num(&l, in.errors);
    if (strcmp(stats_dest, "1") == 0) {
        put_line(stats_stderr(), &l);
        return;
    }
    fd = open(stats_dest, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd < 0) {
        return;
    }
    put_line(fd, &l);
    close(fd);
}

static void write_series(void)
{
    int fd = open(series_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    line_t l;
    size_t i;
    if (fd < 0) {
        return;
    }
    l.len = 0;
    put_str(&l, "call,mapped,in_regions,free_in_regions,used");
    put_line(fd, &l);
    pthread_mutex_lock(&heap_lock);
    take_sample();
    for (i = 0; i < series.count; i++) {
        const sample_t *s = (const sample_t *)series.items + i;
        put_num(&l, s->call);
        put_str(&l, ",");
        put_num(&l, s->mapped);
        put_str(&l, ",");
        put_num(&l, s->in_regions);
        put_str(&l, ",");
        put_num(&l, s->free_in_regions);
        put_str(&l, ",");
        put_num(&l, s->used);
        put_line(fd, &l);
    }
    pthread_mutex_unlock(&heap_lock);
    close(fd);
}

__attribute__((destructor)) static void at_exit(void)
{
    if (__atomic_load_n(&state, __ATOMIC_ACQUIRE) != STATE_READY) {
        return;
    }
    if (stats_dest != NULL) {
        write_stats();
    }
    if (series_path != NULL) {
        write_series();
    }
}
