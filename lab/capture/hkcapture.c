/* SPDX-License-Identifier: MIT */
/*
 * libhkcapture.so: records every malloc-family call of a dynamically linked
 * Linux program, loaded with LD_PRELOAD, straight to a heapkit binary trace
 * (.hkb, docs/trace-format.md). `heapkit trace` (lab/heapkit/capture.py)
 * drives it; it can also be used by hand:
 *
 *   HEAPKIT_TRACE_OUT=/tmp/t-%p.hkb LD_PRELOAD=build/lab/capture/libhkcapture.so prog
 *
 * What is recorded: malloc, calloc, realloc, reallocarray, free,
 * posix_memalign, aligned_alloc, memalign, valloc and pvalloc (the last five
 * as `a` records; valloc/pvalloc with the page size as alignment and pvalloc's
 * size rounded up to pages), each with the calling thread's gettid() truncated
 * to 16 bits. Ids are dense in record order; realloc consumes the old id and
 * makes a new one; realloc(p, 0) that returns NULL is recorded as a free of p,
 * and one that returns a block as that free plus a malloc(0);
 * a failed call (NULL / error) records nothing. Dropped and counted: free(NULL),
 * frees of pointers the library never saw (allocated before it was active),
 * and reallocs of such pointers (recorded as realloc(NULL, size)). Sizes,
 * counts and alignments above 32 bits are clamped to fit and counted.
 *
 * Output: $HEAPKIT_TRACE_OUT (default heapkit-%p.hkb; `%p` is the pid, `%%`
 * a percent sign), made absolute at start-up so a later chdir does not move
 * it. Each process writes its own file: the child of fork() starts a fresh
 * trace (ids from 0; blocks inherited from the parent are "unknown"), and a
 * program started by exec inherits LD_PRELOAD and the variable. Without `%p`
 * a fork child appends ".PID" to the name. Next to each trace:
 * - FILE.info, key/value lines: pid, ppid, exe, records, ids, the
 *   dropped/clamped counters and `complete 1` once the header was rewritten
 *   at exit;
 * - FILE.callers, one little-endian u64 per record: the return address in
 *   the code that called malloc, free, ... (for C++'s operator new, inside
 *   the C++ library), written with the records;
 * - FILE.modules, one line per executable segment of every loaded object,
 *   `module BIAS START END PATH` (hex; BIAS: what the loader added to the
 *   object's addresses), written at start-up and again at exit, so that
 *   `heapkit leaks --elf` can name callers in a position-independent
 *   program or library (an object dlclose'd before exit is not in it).
 *
 * How, without allocating while recording:
 * - the real functions come from dlsym(RTLD_NEXT); dlsym itself may call
 *   malloc/calloc, which are then served from a static bootstrap buffer whose
 *   pointers are never passed to the real free or realloc;
 * - the pointer -> id map is an open-addressing (linear probing, backward-
 *   shift deletion) table in anonymous mmap memory, doubled by mmap + rehash;
 * - records are gathered in an mmap'd buffer and written with pwrite(2) in
 *   1 MiB chunks; the 32-byte header (record and id counts) is written with
 *   count 0 at start and rewritten at exit (atexit handler, destructor, and
 *   the interposed _exit/_Exit). A process that ends otherwise (killed, exec
 *   of a static program) leaves a stale header over whole flushed records,
 *   which capture.py repairs: what was flushed is a valid prefix of the trace;
 * - the descriptor is moved high and checked (dev/ino) before each write: a
 *   program that closes or reuses descriptors it does not know gets its own
 *   files left alone, and the trace is reopened by name;
 * - a thread-local flag marks "inside the recorder": nested calls (libc
 *   functions we call, or a real allocator calling itself through the PLT)
 *   pass straight to the real functions unrecorded;
 * - one mutex orders the map, the id counter and the buffer, so file order is
 *   a valid global order: a free is recorded (and its pointer leaves the map)
 *   before the real free, an allocation after the real call returned, and a
 *   realloc takes its old pointer out of the map before the real call.
 *   pthread_atfork takes the mutex and flushes before fork; the child resets
 *   everything and opens its own file.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <link.h>
#include <malloc.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "../common/hkb.h"

#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "the .hkb writer assumes a little-endian host"
#endif

#define EXPORT __attribute__((visibility("default")))
#define TLS __thread __attribute__((tls_model("initial-exec")))

#define ENV_OUT "HEAPKIT_TRACE_OUT"
#define DEFAULT_OUT "heapkit-%p.hkb"
#define BUF_RECORDS ((size_t)1 << 16)      /* 1 MiB of records per write */
#define MAP_INITIAL ((size_t)1 << 16)      /* slots; doubled at 70% load */
#define BOOT_BYTES ((size_t)1 << 16)

typedef struct {
    uintptr_t key;              /* 0: empty slot */
    uint32_t id;
    uint32_t unused;
} slot_t;

/* An output file, its descriptor kept high and checked against dev/ino before use. */
typedef struct {
    int fd;
    dev_t dev;
    ino_t ino;
    char path[PATH_MAX + 48];
} out_file_t;

/* ---- the real functions ------------------------------------------------- */

static struct {
    void *(*malloc)(size_t);
    void *(*calloc)(size_t, size_t);
    void *(*realloc)(void *, size_t);
    void (*free)(void *);
    int (*posix_memalign)(void **, size_t, size_t);
    void *(*aligned_alloc)(size_t, size_t);
    void *(*memalign)(size_t, size_t);
    void *(*valloc)(size_t);
    void *(*pvalloc)(size_t);
    size_t (*malloc_usable_size)(void *);
    void (*exit_now)(int);
} real;

static volatile int resolving;

static _Alignas(64) unsigned char boot_buf[BOOT_BYTES];
static size_t boot_used;

/* Bootstrap memory for dlsym: bump-allocated, never freed. The block size
 * sits in the 16 bytes before each block, for realloc and usable_size. */
static void *boot_alloc(size_t align, size_t n)
{
    if (align < 16)
        align = 16;
    uintptr_t base = (uintptr_t)boot_buf;
    uintptr_t p = (base + boot_used + 16 + align - 1) & ~(uintptr_t)(align - 1);
    if (n > BOOT_BYTES || p + n > base + BOOT_BYTES)
        return NULL;
    ((size_t *)p)[-1] = n;
    boot_used = p + n - base;
    return (void *)p;
}

static int is_boot(const void *p)
{
    return (const unsigned char *)p >= boot_buf && (const unsigned char *)p < boot_buf + BOOT_BYTES;
}

static void *next_symbol(const char *name)
{
    return dlsym(RTLD_NEXT, name);
}

static void resolve(void)
{
    resolving = 1;
    real.malloc = (void *(*)(size_t))next_symbol("malloc");
    real.calloc = (void *(*)(size_t, size_t))next_symbol("calloc");
    real.realloc = (void *(*)(void *, size_t))next_symbol("realloc");
    real.free = (void (*)(void *))next_symbol("free");
    real.posix_memalign = (int (*)(void **, size_t, size_t))next_symbol("posix_memalign");
    real.aligned_alloc = (void *(*)(size_t, size_t))next_symbol("aligned_alloc");
    real.memalign = (void *(*)(size_t, size_t))next_symbol("memalign");
    real.valloc = (void *(*)(size_t))next_symbol("valloc");
    real.pvalloc = (void *(*)(size_t))next_symbol("pvalloc");
    real.malloc_usable_size = (size_t (*)(void *))next_symbol("malloc_usable_size");
    real.exit_now = (void (*)(int))next_symbol("_exit");
    resolving = 0;
}

/* 1 when the real functions can be called; 0 while dlsym is running. */
static int ready(void)
{
    if (real.free)
        return 1;
    if (resolving)
        return 0;
    resolve();
    return real.free != NULL;
}

/* ---- recorder state ----------------------------------------------------- */

static TLS int in_hook;          /* this thread is inside the recorder */
static TLS int hook_before_fork; /* in_hook to restore after fork */
static TLS pid_t tid_cache;

static struct {
    pthread_mutex_t lock;
    int recording;               /* read unlocked as a hint, decided under lock */
    int closing;                 /* after the destructor: write every record through */
    out_file_t trace;            /* the .hkb */
    out_file_t callers;          /* FILE.callers */
    pid_t pid;                   /* the process the file belongs to */
    slot_t *map;
    size_t map_cap, map_used;
    unsigned map_bits;
    lab_rec_t *buf;
    uint64_t *caller_buf;        /* the callers of buf's records */
    size_t buffered;
    uint64_t flushed;            /* records in the file */
    uint32_t flushed_ids;        /* ids those records create */
    uint32_t next_id;
    uint64_t free_null;          /* atomic: counted without the lock */
    uint64_t unknown_free, unknown_realloc, clamped;
    long pagesize;
    int has_pid_token;
    char templ[PATH_MAX];
    char info_path[PATH_MAX + 40];
    char modules_path[PATH_MAX + 40];
    char exe[PATH_MAX];
} S = { .lock = PTHREAD_MUTEX_INITIALIZER, .trace.fd = -1, .callers.fd = -1 };

static uint16_t my_tid(void)
{
    if (tid_cache == 0)
        tid_cache = (pid_t)syscall(SYS_gettid);
    return (uint16_t)tid_cache;
}

static uint32_t clamp32(size_t v)
{
    if (v > UINT32_MAX) {
        S.clamped++;
        return UINT32_MAX;
    }
    return (uint32_t)v;
}

/* A power of two >= align (at least 1), clamped to 2^31. */
static uint32_t alignment_of(size_t align)
{
    if (align > ((size_t)1 << 31)) {
        S.clamped++;
        return (uint32_t)1 << 31;
    }
    uint32_t a = 1;
    while (a < align)
        a <<= 1;
    return a;
}

/* ---- small text helpers (no stdio: it allocates) ------------------------ */

static size_t put_str(char *dst, size_t at, size_t cap, const char *s)
{
    while (*s && at + 1 < cap)
        dst[at++] = *s++;
    dst[at < cap ? at : cap - 1] = '\0';
    return at;
}

static size_t put_u64(char *dst, size_t at, size_t cap, uint64_t v)
{
    char digits[21];
    size_t n = 0;
    do {
        digits[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    while (n && at + 1 < cap)
        dst[at++] = digits[--n];
    dst[at < cap ? at : cap - 1] = '\0';
    return at;
}

static size_t put_hex(char *dst, size_t at, size_t cap, uint64_t v)
{
    char digits[17];
    size_t n = 0;
    do {
        digits[n++] = "0123456789abcdef"[v & 15];
        v >>= 4;
    } while (v);
    at = put_str(dst, at, cap, "0x");
    while (n && at + 1 < cap)
        dst[at++] = digits[--n];
    dst[at < cap ? at : cap - 1] = '\0';
    return at;
}

static void say(const char *what, const char *path)
{
    char line[PATH_MAX + 128];
    size_t n = put_str(line, 0, sizeof line, "heapkit capture: ");
    n = put_str(line, n, sizeof line, what);
    n = put_str(line, n, sizeof line, path);
    n = put_str(line, n, sizeof line, "\n");
    ssize_t ignored = write(2, line, n);
    (void)ignored;
}

static int write_all(int fd, const void *data, size_t n, off_t at)
{
    const char *p = data;
    while (n) {
        ssize_t w = pwrite(fd, p, n, at);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        p += w;
        n -= (size_t)w;
        at += w;
    }
    return 0;
}

/* ---- the output file ---------------------------------------------------- */

/* FILE + suffix into dst. */
static void path_with(char *dst, size_t cap, const char *suffix)
{
    put_str(dst, put_str(dst, 0, cap, S.trace.path), cap, suffix);
}

static void make_paths(pid_t pid, int forked)
{
    size_t n = 0;
    char *path = S.trace.path;
    const size_t cap = sizeof S.trace.path - 16;   /* room for the suffixes below */
    for (const char *t = S.templ; *t; t++) {
        if (t[0] == '%' && t[1] == 'p') {
            n = put_u64(path, n, cap, (uint64_t)pid);
            t++;
        } else if (t[0] == '%' && t[1] == '%') {
            n = put_str(path, n, cap, "%");
            t++;
        } else {
            char c[2] = { *t, '\0' };
            n = put_str(path, n, cap, c);
        }
    }
    if (forked && !S.has_pid_token) {
        n = put_str(path, n, cap, ".");
        n = put_u64(path, n, cap, (uint64_t)pid);
    }
    path_with(S.info_path, sizeof S.info_path, ".info");
    path_with(S.modules_path, sizeof S.modules_path, ".modules");
    path_with(S.callers.path, sizeof S.callers.path, ".callers");
}

static void header_bytes(unsigned char h[LAB_HKB_HEADER], uint64_t records, uint32_t ids)
{
    memset(h, 0, LAB_HKB_HEADER);
    memcpy(h, LAB_HKB_MAGIC, LAB_HKB_MAGIC_LEN);
    h[8] = LAB_HKB_VERSION;                    /* u32, little-endian */
    memcpy(h + 16, &records, 8);
    memcpy(h + 24, &ids, 4);
}

/* One "key value" line of FILE.info. */
static size_t put_info_u64(char *dst, size_t at, size_t cap, const char *key, uint64_t v)
{
    at = put_str(dst, at, cap, key);
    at = put_str(dst, at, cap, " ");
    at = put_u64(dst, at, cap, v);
    return put_str(dst, at, cap, "\n");
}

static void write_info(int complete)
{
    char text[PATH_MAX + 512];
    const size_t cap = sizeof text;
    size_t n = put_str(text, 0, cap, "heapkit-capture 1\n");
    n = put_info_u64(text, n, cap, "pid", (uint64_t)getpid());
    n = put_info_u64(text, n, cap, "ppid", (uint64_t)getppid());
    n = put_str(text, n, cap, "exe ");
    n = put_str(text, n, cap, S.exe);
    n = put_str(text, n, cap, "\n");
    n = put_info_u64(text, n, cap, "records", S.flushed);
    n = put_info_u64(text, n, cap, "ids", S.flushed_ids);
    n = put_info_u64(text, n, cap, "free_null", __atomic_load_n(&S.free_null, __ATOMIC_RELAXED));
    n = put_info_u64(text, n, cap, "unknown_free", S.unknown_free);
    n = put_info_u64(text, n, cap, "unknown_realloc", S.unknown_realloc);
    n = put_info_u64(text, n, cap, "clamped", S.clamped);
    n = put_info_u64(text, n, cap, "complete", (uint64_t)complete);
    int fd = open(S.info_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0)
        return;
    (void)write_all(fd, text, n, 0);
    close(fd);
}

/* Our descriptor, unless the program closed it or reuses its number (shells
 * and daemons close or move descriptors they do not know about). */
static int file_is_ours(const out_file_t *f)
{
    struct stat st;
    return f->fd >= 0 && fstat(f->fd, &st) == 0 && st.st_dev == f->dev && st.st_ino == f->ino;
}

/* Moves fd out of the way of the descriptors a program usually picks. */
static int high_fd(int fd)
{
    struct rlimit lim;
    rlim_t top = 1024;
    if (getrlimit(RLIMIT_NOFILE, &lim) == 0 && lim.rlim_cur < top)
        top = lim.rlim_cur;
    int hi = fcntl(fd, F_DUPFD_CLOEXEC, (int)(top * 3 / 4));
    if (hi < 0)
        return fd;
    close(fd);
    return hi;
}

/* 0 when f's descriptor is its file, reopened by name if the program took it away. */
static int file_own(out_file_t *f)
{
    if (file_is_ours(f))
        return 0;
    f->fd = -1;
    int fd = open(f->path, O_WRONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    f->fd = high_fd(fd);
    if (file_is_ours(f))
        return 0;
    close(f->fd);
    f->fd = -1;
    return -1;
}

/* Creates (truncates) f; 0 on success, else -1 with f closed. */
static int file_create(out_file_t *f)
{
    struct stat st;
    int fd = open(f->path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0)
        return -1;
    f->fd = high_fd(fd);
    if (fstat(f->fd, &st) != 0) {
        close(f->fd);
        f->fd = -1;
        return -1;
    }
    f->dev = st.st_dev;
    f->ino = st.st_ino;
    return 0;
}

/* Closes f if the descriptor is still ours (never one the program reused). */
static void file_close(out_file_t *f)
{
    if (file_is_ours(f))
        close(f->fd);
    f->fd = -1;
}

static off_t end_of_records(void)
{
    return (off_t)(LAB_HKB_HEADER + S.flushed * sizeof(lab_rec_t));
}

static void stop_locked(const char *why);

/* Writes the buffered records and their callers; the files then hold S.flushed of each. */
static void flush_locked(void)
{
    if (S.trace.fd < 0 || S.buffered == 0)
        return;
    if (file_own(&S.trace) != 0 ||
        write_all(S.trace.fd, S.buf, S.buffered * sizeof(lab_rec_t), end_of_records()) != 0 ||
        file_own(&S.callers) != 0 ||
        write_all(S.callers.fd, S.caller_buf, S.buffered * sizeof(uint64_t),
                  (off_t)(S.flushed * sizeof(uint64_t))) != 0) {
        S.buffered = 0;
        stop_locked("cannot write ");
        return;
    }
    S.flushed += S.buffered;
    S.flushed_ids = S.next_id;    /* an id and its record are made under one lock */
    S.buffered = 0;
    write_info(0);
}

/* Rewrites the header to match the records in the file. */
static void finish_locked(int complete)
{
    if (S.trace.fd < 0)
        return;
    flush_locked();
    if (S.trace.fd < 0)
        return;
    unsigned char h[LAB_HKB_HEADER];
    header_bytes(h, S.flushed, S.flushed_ids);
    if (file_own(&S.trace) != 0 || write_all(S.trace.fd, h, LAB_HKB_HEADER, 0) != 0)
        stop_locked("cannot write the header of ");
    else
        write_info(complete);
}

/* Recording ends (an error): the file keeps a valid trace of what reached it. */
static void stop_locked(const char *why)
{
    say(why, S.trace.path);
    __atomic_store_n(&S.recording, 0, __ATOMIC_RELAXED);
    if (file_is_ours(&S.callers) && ftruncate(S.callers.fd, (off_t)(S.flushed * sizeof(uint64_t))) != 0)
        say("cannot truncate ", S.callers.path);
    file_close(&S.callers);
    if (!file_is_ours(&S.trace)) {
        S.trace.fd = -1;
        return;
    }
    if (ftruncate(S.trace.fd, end_of_records()) == 0) {
        unsigned char h[LAB_HKB_HEADER];
        header_bytes(h, S.flushed, S.flushed_ids);
        if (write_all(S.trace.fd, h, LAB_HKB_HEADER, 0) == 0)
            write_info(0);
    }
    file_close(&S.trace);
}

static int open_output(pid_t pid, int forked)
{
    make_paths(pid, forked);
    S.pid = pid;
    if (file_create(&S.trace) != 0) {
        say("cannot create ", S.trace.path);
        return -1;
    }
    unsigned char h[LAB_HKB_HEADER];
    header_bytes(h, 0, 0);
    if (write_all(S.trace.fd, h, LAB_HKB_HEADER, 0) != 0) {
        say("cannot write ", S.trace.path);
        file_close(&S.trace);
        return -1;
    }
    if (file_create(&S.callers) != 0) {
        say("cannot create ", S.callers.path);
        file_close(&S.trace);
        return -1;
    }
    write_info(0);
    return 0;
}

/* One `module BIAS START END PATH` line per executable segment of a loaded object. */
static int module_lines(struct dl_phdr_info *info, size_t size, void *arg)
{
    int fd = *(int *)arg;
    (void)size;
    /* The program itself is the object without a name; the vDSO has one. */
    const char *name = info->dlpi_name && info->dlpi_name[0] ? info->dlpi_name : S.exe;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X))
            continue;
        char line[PATH_MAX + 96];
        uintptr_t start = info->dlpi_addr + ph->p_vaddr;
        size_t n = put_str(line, 0, sizeof line, "module ");
        n = put_hex(line, n, sizeof line, info->dlpi_addr);
        n = put_str(line, n, sizeof line, " ");
        n = put_hex(line, n, sizeof line, start);
        n = put_str(line, n, sizeof line, " ");
        n = put_hex(line, n, sizeof line, start + ph->p_memsz);
        n = put_str(line, n, sizeof line, " ");
        n = put_str(line, n, sizeof line, name);
        n = put_str(line, n, sizeof line, "\n");
        ssize_t ignored = write(fd, line, n);
        (void)ignored;
    }
    return 0;
}

/* FILE.modules, written without the recorder's lock: a thread inside dlopen
 * holds the loader's lock, which dl_iterate_phdr takes, and may be waiting
 * for the recorder's. */
static void write_modules(void)
{
    int fd = open(S.modules_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0)
        return;
    dl_iterate_phdr(module_lines, &fd);
    close(fd);
}

/* ---- the pointer -> id map ---------------------------------------------- */

static void *map_pages(size_t bytes)
{
    void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

static size_t home_of(uintptr_t key, unsigned bits)
{
    return (size_t)(((uint64_t)key * 0x9E3779B97F4A7C15ull) >> (64 - bits));
}

static int map_reset(void)
{
    if (S.map)
        munmap(S.map, S.map_cap * sizeof(slot_t));
    S.map = map_pages(MAP_INITIAL * sizeof(slot_t));
    S.map_cap = S.map ? MAP_INITIAL : 0;
    S.map_used = 0;
    S.map_bits = 16;
    return S.map ? 0 : -1;
}

static void map_store(slot_t *map, size_t mask, unsigned bits, uintptr_t key, uint32_t id)
{
    size_t i = home_of(key, bits);
    while (map[i].key != 0 && map[i].key != key)
        i = (i + 1) & mask;
    map[i].key = key;
    map[i].id = id;
}

static int map_grow(void)
{
    size_t cap = S.map_cap * 2;
    slot_t *map = map_pages(cap * sizeof(slot_t));
    if (!map)
        return -1;
    for (size_t i = 0; i < S.map_cap; i++)
        if (S.map[i].key)
            map_store(map, cap - 1, S.map_bits + 1, S.map[i].key, S.map[i].id);
    munmap(S.map, S.map_cap * sizeof(slot_t));
    S.map = map;
    S.map_cap = cap;
    S.map_bits++;
    return 0;
}

/* Maps key to id, replacing a stale entry (a block freed unrecorded). */
static int map_put(uintptr_t key, uint32_t id)
{
    if ((S.map_used + 1) * 10 > S.map_cap * 7 && map_grow() != 0)
        return -1;
    size_t mask = S.map_cap - 1;
    size_t i = home_of(key, S.map_bits);
    while (S.map[i].key != 0 && S.map[i].key != key)
        i = (i + 1) & mask;
    if (S.map[i].key == 0)
        S.map_used++;
    S.map[i].key = key;
    S.map[i].id = id;
    return 0;
}

/* Removes key; 1 and its id when it was there. */
static int map_take(uintptr_t key, uint32_t *id)
{
    size_t mask = S.map_cap - 1;
    size_t i = home_of(key, S.map_bits);
    while (S.map[i].key != key) {
        if (S.map[i].key == 0)
            return 0;
        i = (i + 1) & mask;
    }
    *id = S.map[i].id;
    /* Backward shift: pull later entries of the cluster into the hole unless
     * their home lies cyclically after the hole (they would become unreachable). */
    for (size_t j = (i + 1) & mask; S.map[j].key != 0; j = (j + 1) & mask) {
        size_t home = home_of(S.map[j].key, S.map_bits);
        if (((j - home) & mask) >= ((j - i) & mask)) {
            S.map[i] = S.map[j];
            i = j;
        }
    }
    S.map[i].key = 0;
    S.map_used--;
    return 1;
}

/* ---- recording ---------------------------------------------------------- */

static void append_locked(uint8_t op, uint16_t tid, uint32_t id, uint32_t size, uint32_t aux,
                          const void *caller)
{
    S.caller_buf[S.buffered] = (uint64_t)(uintptr_t)caller;
    lab_rec_t *r = &S.buf[S.buffered++];
    r->op = op;
    r->reserved = 0;
    r->tid = tid;
    r->id = id;
    r->size = size;
    r->aux = aux;
    if (S.closing)
        finish_locked(1);
    else if (S.buffered == BUF_RECORDS)
        flush_locked();
}

/* An allocation that returned p: a new id. old is the consumed id of a
 * realloc (LAB_NULL_ID for realloc(NULL)); caller, the return address in
 * the code that asked. */
static void note_alloc(uint8_t op, void *p, size_t size, size_t aux, uint32_t old, const void *caller)
{
    uint16_t tid = my_tid();
    pthread_mutex_lock(&S.lock);
    if (S.recording) {
        uint32_t id = S.next_id;
        uint32_t a;
        if (op == 'c')
            a = clamp32(aux);
        else if (op == 'a')
            a = alignment_of(aux);
        else if (op == 'r')
            a = old;
        else
            a = 0;
        if (id == LAB_NULL_ID) {
            stop_locked("4294967295 ids (the format's limit); trace ends early: ");
        } else if (map_put((uintptr_t)p, id) != 0) {
            stop_locked("out of memory for the pointer map; trace ends early: ");
        } else {
            S.next_id++;
            append_locked(op, tid, id, clamp32(size), a, caller);
        }
    }
    pthread_mutex_unlock(&S.lock);
}

/* Takes p out of the map before the real free or realloc sees it.
 * 1 and its id when p was known. */
static int forget(void *p, uint32_t *id)
{
    int known = 0;
    pthread_mutex_lock(&S.lock);
    if (S.recording)
        known = map_take((uintptr_t)p, id);
    pthread_mutex_unlock(&S.lock);
    return known;
}

static void note_free(int known, uint32_t id, const void *caller)
{
    uint16_t tid = my_tid();
    pthread_mutex_lock(&S.lock);
    if (S.recording) {
        if (known)
            append_locked('f', tid, id, 0, 0, caller);
        else
            S.unknown_free++;
    }
    pthread_mutex_unlock(&S.lock);
}

static int recording_hint(void)
{
    return __atomic_load_n(&S.recording, __ATOMIC_RELAXED);
}

/* ---- process life ------------------------------------------------------- */

static void before_fork(void)
{
    hook_before_fork = in_hook;
    in_hook = 1;
    pthread_mutex_lock(&S.lock);
    flush_locked();
}

static void after_fork_parent(void)
{
    pthread_mutex_unlock(&S.lock);
    in_hook = hook_before_fork;
}

/* The only thread of the child starts a trace of its own. */
static void after_fork_child(void)
{
    pthread_mutex_init(&S.lock, NULL);
    tid_cache = 0;
    file_close(&S.trace);         /* the child's copies: the parent keeps writing */
    file_close(&S.callers);
    S.buffered = 0;
    S.flushed = 0;
    S.next_id = S.flushed_ids = 0;
    S.free_null = 0;
    S.unknown_free = S.unknown_realloc = S.clamped = 0;
    if (S.recording) {
        if (map_reset() != 0 || open_output(getpid(), 1) != 0)
            S.recording = 0;
    }
    in_hook = hook_before_fork;
}

static void at_exit_flush(void)
{
    int was = in_hook;
    in_hook = 1;
    write_modules();
    pthread_mutex_lock(&S.lock);
    finish_locked(1);
    pthread_mutex_unlock(&S.lock);
    in_hook = was;
}

static void set_template(void)
{
    const char *env = getenv(ENV_OUT);
    if (!env || !*env)
        env = DEFAULT_OUT;
    size_t n = 0;
    if (env[0] != '/' && getcwd(S.templ, sizeof S.templ - 1) != NULL) {
        n = strlen(S.templ);
        if (n == 0 || S.templ[n - 1] != '/')
            n = put_str(S.templ, n, sizeof S.templ, "/");
    }
    put_str(S.templ, n, sizeof S.templ, env);
    S.has_pid_token = 0;
    for (const char *t = S.templ; *t; t++) {
        if (t[0] == '%' && (t[1] == 'p' || t[1] == '%')) {
            if (t[1] == 'p')
                S.has_pid_token = 1;
            t++;
        }
    }
}

__attribute__((constructor)) static void hkcapture_start(void)
{
    in_hook = 1;
    if (ready() && real.malloc && real.calloc && real.realloc && real.posix_memalign) {
        S.pagesize = sysconf(_SC_PAGESIZE);
        set_template();
        ssize_t n = readlink("/proc/self/exe", S.exe, sizeof S.exe - 1);
        S.exe[n > 0 ? n : 0] = '\0';
        S.buf = map_pages(BUF_RECORDS * sizeof(lab_rec_t));
        S.caller_buf = map_pages(BUF_RECORDS * sizeof(uint64_t));
        if (S.buf && S.caller_buf && map_reset() == 0 && open_output(getpid(), 0) == 0) {
            write_modules();
            pthread_atfork(before_fork, after_fork_parent, after_fork_child);
            atexit(at_exit_flush);
            __atomic_store_n(&S.recording, 1, __ATOMIC_RELEASE);
        }
    }
    in_hook = 0;
}

/* Last: the header is rewritten, and whatever still allocates after this
 * (later destructors, other threads) is written through record by record. */
__attribute__((destructor)) static void hkcapture_finish(void)
{
    int was = in_hook;
    in_hook = 1;
    if (S.trace.fd >= 0)
        write_modules();
    pthread_mutex_lock(&S.lock);
    finish_locked(1);
    S.closing = 1;
    pthread_mutex_unlock(&S.lock);
    in_hook = was;
}

/* ---- the interposed functions ------------------------------------------- */

/* The return address in the code that called the interposed function. */
#define CALLER() __builtin_return_address(0)

static void *malloc_from(size_t n, const void *caller)
{
    if (!ready())
        return boot_alloc(16, n);
    if (in_hook || !recording_hint())
        return real.malloc(n);
    in_hook = 1;
    void *p = real.malloc(n);
    if (p)
        note_alloc('m', p, n, 0, 0, caller);
    in_hook = 0;
    return p;
}

EXPORT void *malloc(size_t n)
{
    return malloc_from(n, CALLER());
}

EXPORT void *calloc(size_t nmemb, size_t size)
{
    if (!ready()) {
        if (size && nmemb > SIZE_MAX / size)
            return NULL;
        return boot_alloc(16, nmemb * size);   /* static memory: already zero */
    }
    if (in_hook || !recording_hint())
        return real.calloc(nmemb, size);
    in_hook = 1;
    void *p = real.calloc(nmemb, size);
    if (p)
        note_alloc('c', p, size, nmemb, 0, CALLER());
    in_hook = 0;
    return p;
}

/* A bootstrap block moves to real memory; the copy is a recorded malloc. */
static void *realloc_boot(void *p, size_t n, const void *caller)
{
    size_t old = ((size_t *)p)[-1];
    void *q = malloc_from(n ? n : 1, caller);
    if (q)
        memcpy(q, p, old < n ? old : n);
    return q;
}

static void *realloc_from(void *p, size_t n, const void *caller)
{
    if (p && is_boot(p))
        return realloc_boot(p, n, caller);
    if (!ready())
        return p ? NULL : boot_alloc(16, n);
    if (in_hook || !recording_hint())
        return real.realloc(p, n);
    in_hook = 1;
    uint32_t old = LAB_NULL_ID;
    int known = p ? forget(p, &old) : 0;
    void *q = real.realloc(p, n);
    if (q) {
        if (p && !known) {
            pthread_mutex_lock(&S.lock);
            S.unknown_realloc += (uint64_t)S.recording;
            pthread_mutex_unlock(&S.lock);
        }
        if (p && n == 0) {
            /* realloc(p, 0) that hands out a block: in the trace, a free of p and a new malloc(0) */
            note_free(known, old, caller);
            note_alloc('m', q, 0, 0, LAB_NULL_ID, caller);
        } else {
            note_alloc('r', q, n, 0, known ? old : LAB_NULL_ID, caller);
        }
    } else if (p && n == 0) {
        note_free(known, old, caller);        /* realloc(p, 0) freed p */
    } else if (known) {
        pthread_mutex_lock(&S.lock);          /* failed: p is still p's */
        if (S.recording && map_put((uintptr_t)p, old) != 0)
            stop_locked("out of memory for the pointer map; trace ends early: ");
        pthread_mutex_unlock(&S.lock);
    }
    in_hook = 0;
    return q;
}

EXPORT void *realloc(void *p, size_t n)
{
    return realloc_from(p, n, CALLER());
}

EXPORT void *reallocarray(void *p, size_t nmemb, size_t size)
{
    if (size && nmemb > SIZE_MAX / size) {
        errno = ENOMEM;
        return NULL;
    }
    return realloc_from(p, nmemb * size, CALLER());
}

EXPORT void free(void *p)
{
    if (!p) {
        if (!in_hook && recording_hint())
            __atomic_fetch_add(&S.free_null, 1, __ATOMIC_RELAXED);
        return;
    }
    if (is_boot(p) || !ready())
        return;
    if (in_hook || !recording_hint()) {
        real.free(p);
        return;
    }
    in_hook = 1;
    uint32_t id = 0;
    uint16_t tid = my_tid();
    pthread_mutex_lock(&S.lock);
    if (S.recording) {
        if (map_take((uintptr_t)p, &id))
            append_locked('f', tid, id, 0, 0, CALLER());
        else
            S.unknown_free++;
    }
    pthread_mutex_unlock(&S.lock);
    real.free(p);
    in_hook = 0;
}

EXPORT int posix_memalign(void **out, size_t align, size_t size)
{
    if (!ready()) {
        void *p = boot_alloc(align, size);
        if (!p)
            return ENOMEM;
        *out = p;
        return 0;
    }
    if (in_hook || !recording_hint())
        return real.posix_memalign(out, align, size);
    in_hook = 1;
    int rc = real.posix_memalign(out, align, size);
    if (rc == 0)
        note_alloc('a', *out, size, align, 0, CALLER());
    in_hook = 0;
    return rc;
}

/* aligned_alloc, memalign, valloc, pvalloc: an `a` record of what was asked. */
static void *aligned_call(void *(*fn2)(size_t, size_t), void *(*fn1)(size_t),
                          size_t align, size_t size, size_t recorded_size, const void *caller)
{
    if (!ready())
        return boot_alloc(align, size);
    if (fn2 == NULL && fn1 == NULL)
        return NULL;
    if (in_hook || !recording_hint())
        return fn2 ? fn2(align, size) : fn1(size);
    in_hook = 1;
    void *p = fn2 ? fn2(align, size) : fn1(size);
    if (p)
        note_alloc('a', p, recorded_size, align, 0, caller);
    in_hook = 0;
    return p;
}

static size_t page_size(void)
{
    return S.pagesize > 0 ? (size_t)S.pagesize : 4096;
}

EXPORT void *aligned_alloc(size_t align, size_t size)
{
    return aligned_call(real.aligned_alloc, NULL, align, size, size, CALLER());
}

EXPORT void *memalign(size_t align, size_t size)
{
    return aligned_call(real.memalign, NULL, align, size, size, CALLER());
}

EXPORT void *valloc(size_t size)
{
    return aligned_call(NULL, real.valloc, page_size(), size, size, CALLER());
}

EXPORT void *pvalloc(size_t size)
{
    size_t page = page_size();
    size_t rounded = size > SIZE_MAX - (page - 1) ? size : (size + page - 1) & ~(page - 1);
    return aligned_call(NULL, real.pvalloc, page, size, rounded, CALLER());
}

/* _exit and _Exit skip atexit and destructors; the trace is finished here
 * (exit() itself reaches the kernel without passing through these). */
__attribute__((noreturn)) static void finish_and_exit(int status)
{
    if (ready()) {
        if (getpid() == S.pid)          /* not a vfork child sharing our memory */
            at_exit_flush();
        if (real.exit_now)
            real.exit_now(status);
    }
    for (;;)
        syscall(SYS_exit_group, status);
}

EXPORT void _exit(int status)
{
    finish_and_exit(status);
}

EXPORT void _Exit(int status)
{
    finish_and_exit(status);
}

EXPORT size_t malloc_usable_size(void *p)
{
    if (p && is_boot(p))
        return ((size_t *)p)[-1];
    if (!ready() || !real.malloc_usable_size)
        return 0;
    return real.malloc_usable_size(p);
}
