/* SPDX-License-Identifier: MIT */
/*
 * The malloc replacement's API, linked in statically (libheapkit_malloc.a):
 * every function, alignments up to 1 MiB, calloc overflow and zeroing,
 * realloc across the region/big-block boundary, threads hammering the heap,
 * fork in a threaded program, misuse with and without
 * HEAPKIT_ABORT_ON_ERROR (in a re-executed child), and release to the OS.
 *
 * Usage: test_malloc <allocator> <release|keep>; the arguments say what the
 * environment (HEAPKIT_ALLOCATOR, HEAPKIT_RELEASE) must have selected.
 * test_malloc --misuse <kind> is the child the misuse tests run.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <setjmp.h>
#include <cmocka.h>

#include "heapkit_malloc.h"

static const char *want_allocator;
static int want_release;

static heapkit_malloc_info_t info(void)
{
    heapkit_malloc_info_t in;
    heapkit_malloc_info(&in);
    return in;
}

static void fill(void *p, size_t n, unsigned seed)
{
    unsigned char *b = p;
    for (size_t i = 0; i < n; i++) {
        b[i] = (unsigned char)(seed + 31u * i);
    }
}

static int intact(const void *p, size_t n, unsigned seed)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++) {
        if (b[i] != (unsigned char)(seed + 31u * i)) {
            return 0;
        }
    }
    return 1;
}

static int aligned(const void *p, size_t a) { return ((uintptr_t)p & (a - 1)) == 0; }

/* Bytes of the mapping in /proc/self/maps that contains p (0: not mapped). */
static size_t mapping_of(uintptr_t p)
{
    FILE *f = fopen("/proc/self/maps", "r");
    char line[512];
    size_t found = 0;
    assert_non_null(f);
    while (fgets(line, sizeof(line), f) != NULL) {
        uintptr_t lo;
        uintptr_t hi;
        if (sscanf(line, "%lx-%lx", &lo, &hi) == 2 && p >= lo && p < hi) {
            found = hi - lo;
        }
    }
    fclose(f);
    return found;
}

static void test_configuration(void **state)
{
    heapkit_malloc_info_t in;
    void *p;
    (void)state;
    p = malloc(10);
    in = info();
    assert_string_equal(in.allocator, want_allocator);
    assert_int_equal(in.release, want_release);
    assert_true(in.calls > 0);
    assert_true(in.regions >= 1);
    free(p);
}

static void test_every_function(void **state)
{
    size_t sizes[] = {0, 1, 7, 16, 17, 100, 1000, 4096, 5000, 65536, 300000, 3000000};
    (void)state;
    for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
        size_t n = sizes[i];
        unsigned char *a = malloc(n);
        unsigned char *c = calloc(n, 1);
        unsigned char *v = valloc(n);
        unsigned char *pv = pvalloc(n);
        unsigned char *m = memalign(64, n);
        unsigned char *al = aligned_alloc(256, n);
        void *pm = NULL;
        assert_non_null(a);
        assert_non_null(c);
        assert_non_null(v);
        assert_non_null(pv);
        assert_non_null(m);
        assert_non_null(al);
        assert_int_equal(posix_memalign(&pm, 128, n), 0);
        assert_true(aligned(a, 16) && aligned(c, 16) && aligned(pm, 128) && aligned(m, 64) && aligned(al, 256));
        assert_true(aligned(v, 4096) && aligned(pv, 4096));
        assert_true(malloc_usable_size(a) >= n && malloc_usable_size(pm) >= n);
        assert_true(malloc_usable_size(pv) >= (n == 0 ? 4096 : (n + 4095) / 4096 * 4096));
        for (size_t k = 0; k < n; k++) {
            assert_int_equal(c[k], 0);
        }
        fill(a, n, 1);
        fill(v, n, 2);
        fill(m, n, 3);
        fill(al, n, 4);
        fill(pm, n, 5);
        assert_true(intact(a, n, 1) && intact(v, n, 2) && intact(m, n, 3) && intact(al, n, 4));
        a = reallocarray(a, n + 1, 2);
        assert_non_null(a);
        assert_true(intact(a, n, 1));
        free(a);
        free(c);
        free(v);
        free(pv);
        free(m);
        free(al);
        free(pm);
    }
    assert_int_equal(malloc_usable_size(NULL), 0);
    free(NULL);
    assert_int_equal(info().errors, 0);
}

static void test_malloc_zero_is_unique(void **state)
{
    void *a = malloc(0);
    void *b = malloc(0);
    (void)state;
    assert_non_null(a);
    assert_non_null(b);
    assert_ptr_not_equal(a, b);
    free(a);
    free(b);
}

static void test_alignment(void **state)
{
    volatile size_t odd = 24; /* volatile: compilers reject a constant non-power-of-two alignment */
    size_t sizes[] = {1, 100, 5000, 300000};
    void *p;
    (void)state;
    for (size_t a = 16; a <= ((size_t)1 << 20); a <<= 1) {
        for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
            void *q = NULL;
            assert_int_equal(posix_memalign(&q, a, sizes[i]), 0);
            assert_true(aligned(q, a));
            assert_true(malloc_usable_size(q) >= sizes[i]);
            fill(q, sizes[i], 9);
            p = aligned_alloc(a, sizes[i]);
            assert_true(aligned(p, a));
            assert_true(intact(q, sizes[i], 9));
            free(q);
            free(p);
        }
    }
    p = (void *)1;
    assert_int_equal(posix_memalign(&p, odd, 10), EINVAL);
    assert_int_equal(posix_memalign(&p, 4, 10), EINVAL);
    assert_ptr_equal(p, (void *)1);
    errno = 0;
    assert_null(aligned_alloc(odd, 10));
    assert_int_equal(errno, EINVAL);
    p = memalign(odd, 10); /* glibc rounds the alignment up to 32 */
    assert_true(aligned(p, 32));
    free(p);
    assert_int_equal(info().errors, 0);
}

static void test_calloc_api(void **state)
{
    /* volatile: the compiler must not see (and refuse) the impossible sizes */
    volatile size_t half = SIZE_MAX / 2 + 1;
    volatile size_t huge = SIZE_MAX - 100;
    unsigned char *p;
    (void)state;
    errno = 0;
    assert_null(calloc(half, 2));
    assert_int_equal(errno, ENOMEM);
    assert_null(calloc(2, half));
    errno = 0;
    assert_null(malloc(huge));
    assert_int_equal(errno, ENOMEM);
    /* A reused block comes back zeroed. */
    for (int round = 0; round < 50; round++) {
        size_t n = 24 + 40 * (size_t)round;
        p = malloc(n);
        memset(p, 0xAA, n);
        free(p);
        p = calloc(1, n);
        for (size_t k = 0; k < n; k++) {
            assert_int_equal(p[k], 0);
        }
        free(p);
    }
}

static void test_realloc_api(void **state)
{
    unsigned char *p = NULL;
    size_t n = 1;
    size_t used;
    (void)state;
    /* Grow from 1 byte to 8 MiB (region blocks, then a mapping of its own, then mremap). */
    for (; n <= ((size_t)8 << 20); n = n * 3 / 2 + 1) {
        size_t old = p == NULL ? 0 : (n - 1) * 2 / 3;
        p = realloc(p, n);
        assert_non_null(p);
        assert_true(intact(p, old, 7));
        fill(p, n, 7);
    }
    n = (n - 1) * 2 / 3; /* the last size allocated */
    for (; n > 1; n /= 3) {
        p = realloc(p, n);
        assert_non_null(p);
        assert_true(intact(p, n, 7));
    }
    free(p);
    used = info().used_bytes;
    p = realloc(NULL, 100);
    assert_non_null(p);
    assert_true(info().used_bytes > used);
    assert_null(realloc(p, 0)); /* frees, as glibc does */
    assert_int_equal(info().used_bytes, used);
    assert_int_equal(info().errors, 0);
}

static void test_big_blocks(void **state)
{
    size_t before = info().big_blocks;
    unsigned char *p = malloc((size_t)16 << 20);
    uintptr_t at = (uintptr_t)p;
    (void)state;
    assert_non_null(p);
    assert_int_equal(info().big_blocks, before + 1);
    assert_true(mapping_of(at) >= ((size_t)16 << 20));
    p[0] = 1;
    p[((size_t)16 << 20) - 1] = 2;
    assert_true(malloc_usable_size(p) >= ((size_t)16 << 20));
    free(p);
    assert_int_equal(info().big_blocks, before);
    assert_int_equal(mapping_of(at), 0);
}

/* ---- threads ---- */

#define THREADS 4
#define SLOTS 1024
#define OPS 20000

static _Atomic(uintptr_t) shared_slots[SLOTS];

/* Each block carries its size and seed in its first 16 bytes, so any thread can check and free it. */
static void *make_block(size_t n, unsigned seed)
{
    size_t *p = malloc(n < 16 ? 16 : n);
    if (p != NULL) {
        p[0] = n < 16 ? 16 : n;
        p[1] = seed;
        fill(p + 2, p[0] - 16, seed);
    }
    return p;
}

static int block_ok(const size_t *p) { return intact(p + 2, p[0] - 16, (unsigned)p[1]); }

static void *hammer(void *arg)
{
    uint64_t x = (uintptr_t)arg * 0x9E3779B97F4A7C15ull + 1;
    long bad = 0;
    for (int i = 0; i < OPS; i++) {
        uintptr_t old;
        void *p;
        size_t n;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        n = (x >> 20) % 64 == 0 ? (size_t)(x >> 40) % 400000 : (size_t)(x >> 40) % 2000;
        if ((x & 7) == 0) {
            p = aligned_alloc((size_t)64 << ((x >> 3) & 3), n + 16);
            if (p != NULL) {
                ((size_t *)p)[0] = n + 16;
                ((size_t *)p)[1] = (unsigned)x;
                fill((size_t *)p + 2, n, (unsigned)x);
            }
        } else {
            p = make_block(n, (unsigned)x);
        }
        if (p == NULL) {
            bad++;
            continue;
        }
        old = atomic_exchange(&shared_slots[(x >> 8) % SLOTS], (uintptr_t)p);
        if (old != 0) {
            size_t *q = (size_t *)old;
            if (!block_ok(q)) {
                bad++;
            }
            if ((x & 0x30) == 0) {
                size_t m = q[0] + (x >> 50) % 3000;
                q = realloc(q, m);
                if (q == NULL || !block_ok(q)) {
                    bad++;
                }
            }
            free(q);
        }
    }
    return (void *)bad;
}

static void drain_slots(void)
{
    for (size_t i = 0; i < SLOTS; i++) {
        size_t *q = (size_t *)atomic_exchange(&shared_slots[i], 0);
        if (q != NULL) {
            assert_true(block_ok(q));
            free(q);
        }
    }
}

static void *idle(void *arg) { return arg; }

static void test_threads(void **state)
{
    pthread_t t[THREADS];
    size_t used;
    (void)state;
    /* glibc keeps a finished thread's stack, and the TLS vector it allocated, for the next thread. */
    for (uintptr_t i = 0; i < THREADS; i++) {
        assert_int_equal(pthread_create(&t[i], NULL, idle, NULL), 0);
    }
    for (int i = 0; i < THREADS; i++) {
        pthread_join(t[i], NULL);
    }
    used = info().used_bytes;
    for (uintptr_t i = 0; i < THREADS; i++) {
        assert_int_equal(pthread_create(&t[i], NULL, hammer, (void *)(i + 1)), 0);
    }
    for (int i = 0; i < THREADS; i++) {
        void *bad;
        pthread_join(t[i], &bad);
        assert_int_equal((long)bad, 0);
    }
    drain_slots();
    assert_int_equal(info().used_bytes, used);
    assert_int_equal(info().errors, 0);
}

static atomic_int stop_hammer;

static void *hammer_until_stopped(void *arg)
{
    (void)arg;
    while (!atomic_load(&stop_hammer)) {
        void *p = malloc(1000);
        void *q = malloc(70000);
        free(p);
        free(q);
    }
    return NULL;
}

/* fork while other threads hold the heap lock now and then; the child must be able to allocate. */
static void test_fork_in_threaded_program(void **state)
{
    pthread_t t[2];
    (void)state;
    atomic_store(&stop_hammer, 0);
    for (int i = 0; i < 2; i++) {
        assert_int_equal(pthread_create(&t[i], NULL, hammer_until_stopped, NULL), 0);
    }
    for (int round = 0; round < 20; round++) {
        int status;
        pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
            alarm(10); /* a deadlocked child dies of SIGALRM instead of hanging the test */
            for (int i = 0; i < 1000; i++) {
                void *p = make_block((size_t)i * 7, (unsigned)i);
                if (p == NULL || !block_ok(p)) {
                    _exit(3);
                }
                free(p);
            }
            _exit(info().errors == 0 ? 0 : 4);
        }
        assert_int_equal(waitpid(pid, &status, 0), pid);
        assert_true(WIFEXITED(status));
        assert_int_equal(WEXITSTATUS(status), 0);
    }
    atomic_store(&stop_hammer, 1);
    for (int i = 0; i < 2; i++) {
        pthread_join(t[i], NULL);
    }
}

/* ---- misuse, in a re-executed child ---- */

static int misuse_child(const char *kind)
{
    int local = 0;
    unsigned char *p = malloc(100);
    unsigned char *big = malloc((size_t)4 << 20);
    void *bad = NULL;
    if (strcmp(kind, "double") == 0) {
        bad = p;
    } else if (strcmp(kind, "interior") == 0) {
        bad = p + 24;
    } else if (strcmp(kind, "foreign") == 0) {
        bad = &local;
    } else if (strcmp(kind, "big-interior") == 0) {
        bad = big + 4096;
    } else if (strcmp(kind, "realloc-foreign") == 0) {
        bad = &local;
    }
    printf("ptr=%p\n", bad); /* before the first free: stdout's buffer must not take p's place */
    fflush(stdout);
    if (strcmp(kind, "double") == 0) {
        free(p);
    }
    if (strcmp(kind, "realloc-foreign") == 0) {
        if (realloc(bad, 10) != NULL) {
            return 5;
        }
    } else {
        free(bad);
    }
    printf("survived errors=%zu\n", info().errors);
    return 0;
}

typedef struct child_result {
    int status;
    char out[512];
    char err[1024];
} child_result_t;

static void read_all(int fd, char *buf, size_t cap)
{
    size_t n = 0;
    ssize_t r;
    while (n < cap - 1 && (r = read(fd, buf + n, cap - 1 - n)) > 0) {
        n += (size_t)r;
    }
    buf[n] = '\0';
}

static void run_misuse(const char *kind, int abort_on_error, child_result_t *res)
{
    int out[2];
    int err[2];
    pid_t pid;
    assert_int_equal(pipe(out), 0);
    assert_int_equal(pipe(err), 0);
    pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        dup2(out[1], 1);
        dup2(err[1], 2);
        setenv("HEAPKIT_ABORT_ON_ERROR", abort_on_error ? "1" : "0", 1);
        execl("/proc/self/exe", "test_malloc", "--misuse", kind, (char *)NULL);
        _exit(127);
    }
    close(out[1]);
    close(err[1]);
    read_all(out[0], res->out, sizeof(res->out));
    read_all(err[0], res->err, sizeof(res->err));
    close(out[0]);
    close(err[0]);
    assert_int_equal(waitpid(pid, &res->status, 0), pid);
}

static void check_misuse(const char *kind, const char *call, const char *error)
{
    child_result_t r;
    char want[256];
    char ptr[64];
    const char *at;

    run_misuse(kind, 1, &r);
    assert_true(WIFSIGNALED(r.status));
    assert_int_equal(WTERMSIG(r.status), SIGABRT);
    at = strstr(r.out, "ptr=");
    assert_non_null(at);
    assert_int_equal(sscanf(at, "ptr=%63s", ptr), 1);
    snprintf(want, sizeof(want), "heapkit_malloc: %s(%s): %s, aborting", call, ptr, error);
    if (strstr(r.err, want) == NULL) {
        fail_msg("%s: expected \"%s\" on stderr, got \"%s\"", kind, want, r.err);
    }

    run_misuse(kind, 0, &r);
    at = strstr(r.out, "ptr=");
    assert_non_null(at);
    assert_int_equal(sscanf(at, "ptr=%63s", ptr), 1);
    assert_true(WIFEXITED(r.status));
    assert_int_equal(WEXITSTATUS(r.status), 0);
    snprintf(want, sizeof(want), "heapkit_malloc: %s(%s): %s, call ignored", call, ptr, error);
    if (strstr(r.err, want) == NULL) {
        fail_msg("%s: expected \"%s\" on stderr, got \"%s\"", kind, want, r.err);
    }
    assert_non_null(strstr(r.out, "survived errors=1"));
}

static void test_misuse(void **state)
{
    (void)state;
    check_misuse("double", "free", "double free");
    check_misuse("interior", "free", "interior pointer");
    check_misuse("foreign", "free", "foreign pointer");
    check_misuse("big-interior", "free", "interior pointer");
    check_misuse("realloc-foreign", "realloc", "foreign pointer");
}

/* ---- release to the OS ---- */

#define RELEASE_BLOCKS (1u << 20)

static void test_release(void **state)
{
    static unsigned char *blocks[RELEASE_BLOCKS];
    static uintptr_t where[RELEASE_BLOCKS];
    heapkit_malloc_info_t before;
    heapkit_malloc_info_t full;
    heapkit_malloc_info_t after;
    size_t gone = 0;
    size_t count = 0;
    (void)state;
    before = info();
    /* 500-byte blocks until three more regions are mapped. */
    while (info().region_maps < before.region_maps + 3) {
        assert_true(count < RELEASE_BLOCKS);
        blocks[count] = malloc(500);
        assert_non_null(blocks[count]);
        where[count] = (uintptr_t)blocks[count];
        count++;
    }
    full = info();
    for (size_t i = 0; i < count; i++) {
        free(blocks[i]);
    }
    after = info();
    for (size_t i = 0; i < count; i += 97) {
        gone += mapping_of(where[i]) == 0;
    }
    if (want_release) {
        assert_true(after.region_unmaps > full.region_unmaps);
        assert_true(after.region_bytes < full.region_bytes);
        assert_true(after.regions < full.regions);
        assert_true(gone > 0); /* /proc/self/maps no longer has some of them */
    } else {
        assert_int_equal(after.region_unmaps, 0);
        assert_int_equal(after.region_bytes, full.region_bytes);
        assert_int_equal(gone, 0);
    }
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_configuration), cmocka_unit_test(test_every_function),
        cmocka_unit_test(test_malloc_zero_is_unique), cmocka_unit_test(test_alignment),
        cmocka_unit_test(test_calloc_api), cmocka_unit_test(test_realloc_api),
        cmocka_unit_test(test_big_blocks), cmocka_unit_test(test_threads),
        cmocka_unit_test(test_fork_in_threaded_program), cmocka_unit_test(test_misuse),
        cmocka_unit_test(test_release),
    };
    if (argc == 3 && strcmp(argv[1], "--misuse") == 0) {
        return misuse_child(argv[2]);
    }
    if (argc != 3 || (strcmp(argv[2], "release") != 0 && strcmp(argv[2], "keep") != 0)) {
        fprintf(stderr, "usage: test_malloc <allocator> <release|keep>\n");
        return 2;
    }
    want_allocator = argv[1];
    want_release = strcmp(argv[2], "release") == 0;
    return cmocka_run_group_tests(tests, NULL, NULL);
}
