/* SPDX-License-Identifier: MIT */
/* Mapping and validating a .hkb trace; see trace.h and docs/trace-format.md. */
#define _GNU_SOURCE
#include "trace.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

const char *const lab_op_names[LAB_OP_KINDS] = {"malloc", "calloc", "aligned", "realloc", "free"};

static int host_is_little_endian(void)
{
    const uint16_t one = 1;
    uint8_t first;
    memcpy(&first, &one, 1);
    return first == 1;
}

static int fail(char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
    return -1;
}

static uint32_t read_u32(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t read_u64(const unsigned char *p) { return (uint64_t)read_u32(p) | (uint64_t)read_u32(p + 4) << 32; }

/* Live ids during the pre-pass: requested bytes, with UINT64_MAX meaning "not live". */
#define NOT_LIVE UINT64_MAX

/*
 * Live requested bytes in 128 bits: a calloc record asks for up to about
 * 2^64 bytes and up to 2^32 of them can be live, so 64 bits can wrap.
 */
typedef struct wide {
    uint64_t hi;
    uint64_t lo;
} wide_t;

static void wide_add(wide_t *w, uint64_t x)
{
    w->lo += x;
    w->hi += w->lo < x;
}

static void wide_sub(wide_t *w, uint64_t x)
{
    w->hi -= w->lo < x;
    w->lo -= x;
}

static int wide_gt(wide_t a, wide_t b) { return a.hi > b.hi || (a.hi == b.hi && a.lo > b.lo); }

/*
 * Check every record against the model (dense ids in order, frees and
 * reallocs of live ids only) and compute the pre-pass figures.
 */
static int prepass(lab_trace_t *t, char *err, size_t errlen)
{
    uint64_t *live = NULL;
    wide_t live_bytes = {0, 0};
    wide_t peak = {0, 0};
    uint64_t live_blocks = 0;
    uint32_t next_id = 0;
    uint64_t i;

    if (t->ids != 0) {
        live = malloc((size_t)t->ids * sizeof(*live));
        if (live == NULL) {
            return fail(err, errlen, "%s: out of memory for %u ids", t->path, t->ids);
        }
        memset(live, 0xFF, (size_t)t->ids * sizeof(*live));
    }
    for (i = 0; i < t->count; i++) {
        const lab_rec_t *r = &t->rec[i];
        const char *why = NULL;
        char buf[96];
        if (r->reserved != 0) {
            why = "reserved byte is not 0";
        } else if (r->op == 'f') {
            if (r->id >= next_id || live[r->id] == NOT_LIVE) {
                snprintf(buf, sizeof(buf), "free of id %u, which is not live", r->id);
                why = buf;
            } else if (r->size != 0 || r->aux != 0) {
                why = "free with nonzero size or aux";
            }
        } else if (r->op == 'm' || r->op == 'c' || r->op == 'a' || r->op == 'r') {
            if (r->id != next_id) {
                snprintf(buf, sizeof(buf), "id %u out of order (ids are dense: expected %u)", r->id, next_id);
                why = buf;
            } else if (r->id >= t->ids) {
                snprintf(buf, sizeof(buf), "id %u not below the header's id count %u", r->id, t->ids);
                why = buf;
            } else if (r->op == 'm' && r->aux != 0) {
                why = "malloc with nonzero aux";
            } else if (r->op == 'a' && (r->aux == 0 || (r->aux & (r->aux - 1u)) != 0)) {
                snprintf(buf, sizeof(buf), "alignment %u is not a power of two", r->aux);
                why = buf;
            } else if (r->op == 'r' && r->aux != LAB_NULL_ID && (r->aux >= next_id || live[r->aux] == NOT_LIVE)) {
                snprintf(buf, sizeof(buf), "realloc of id %u, which is not live", r->aux);
                why = buf;
            } else if (r->op == 'r' && r->aux != LAB_NULL_ID && r->size == 0) {
                why = "realloc to size 0 (the format writes it as a free)";
            }
        } else {
            snprintf(buf, sizeof(buf), "unknown op byte 0x%02x", r->op);
            why = buf;
        }
        if (why != NULL) {
            free(live);
            return fail(err, errlen, "%s: record %llu: %s", t->path, (unsigned long long)i, why);
        }
        switch (r->op) {
        case 'f':
            wide_sub(&live_bytes, live[r->id]);
            live[r->id] = NOT_LIVE;
            live_blocks--;
            t->ops[LAB_OP_FREE]++;
            break;
        case 'r':
            if (r->aux != LAB_NULL_ID) {
                wide_sub(&live_bytes, live[r->aux]);
                live[r->aux] = NOT_LIVE;
                live_blocks--;
            }
            t->ops[LAB_OP_REALLOC]++;
            break;
        case 'a':
            if (r->aux > t->max_align) {
                t->max_align = r->aux;
            }
            t->ops[LAB_OP_ALIGNED]++;
            break;
        case 'c':
            t->ops[LAB_OP_CALLOC]++;
            break;
        default:
            t->ops[LAB_OP_MALLOC]++;
            break;
        }
        if (r->op != 'f') {
            live[r->id] = lab_rec_bytes(r);
            if (live[r->id] > t->max_request) {
                t->max_request = live[r->id];
            }
            wide_add(&live_bytes, live[r->id]);
            live_blocks++;
            next_id++;
        }
        if (wide_gt(live_bytes, peak)) {
            peak = live_bytes;
            t->peak_live_rec = i;
        }
        if (live_blocks > t->peak_blocks) {
            t->peak_blocks = live_blocks;
        }
    }
    free(live);
    t->peak_live = peak.hi != 0 ? UINT64_MAX : peak.lo;
    if (next_id != t->ids) {
        return fail(err, errlen, "%s: header says %u ids but the records create %u", t->path, t->ids, next_id);
    }
    return 0;
}

int lab_trace_parse(lab_trace_t *t, const char *path, const void *data, size_t len, char *err, size_t errlen)
{
    const unsigned char *h = data;
    uint64_t records;
    uint64_t body;

    memset(t, 0, sizeof(*t));
    t->path = path;
    if (!host_is_little_endian()) {
        return fail(err, errlen, "%s: the engine reads .hkb on little-endian hosts only", path);
    }
    if (len == 0) {
        return fail(err, errlen, "%s: empty file", path);
    }
    if (memcmp(h, LAB_HKB_MAGIC, len < LAB_HKB_MAGIC_LEN ? len : LAB_HKB_MAGIC_LEN) != 0) {
        return fail(err, errlen, "%s: bad magic, not a heapkit binary trace (.hkb)", path);
    }
    if (len < LAB_HKB_HEADER) {
        return fail(err, errlen, "%s: truncated: %zu bytes, shorter than the %u-byte .hkb header", path, len,
                    LAB_HKB_HEADER);
    }
    if (read_u32(h + 8) != LAB_HKB_VERSION) {
        return fail(err, errlen, "%s: unsupported .hkb version %u (the engine reads %u)", path, read_u32(h + 8),
                    LAB_HKB_VERSION);
    }
    if (read_u32(h + 12) != 0 || read_u32(h + 28) != 0) {
        return fail(err, errlen, "%s: header flags or reserved field is not 0", path);
    }
    records = read_u64(h + 16);
    body = len - LAB_HKB_HEADER;
    if (records > body / LAB_HKB_RECORD) {
        return fail(err, errlen, "%s: truncated: the header says %llu records but the file holds %llu%s", path,
                    (unsigned long long)records, (unsigned long long)(body / LAB_HKB_RECORD),
                    body % LAB_HKB_RECORD != 0 ? " and part of another" : "");
    }
    if (records * LAB_HKB_RECORD != body) {
        return fail(err, errlen, "%s: %llu bytes after the header's %llu records", path,
                    (unsigned long long)(body - records * LAB_HKB_RECORD), (unsigned long long)records);
    }
    t->count = records;
    t->ids = read_u32(h + 24);
    if (t->ids > records) {
        return fail(err, errlen, "%s: header says %u ids but there are only %llu records", path, t->ids,
                    (unsigned long long)records);
    }
    t->rec = (const lab_rec_t *)(const void *)(h + LAB_HKB_HEADER);
    return prepass(t, err, errlen);
}

int lab_trace_open(lab_trace_t *t, const char *path, char *err, size_t errlen)
{
    struct stat st;
    void *map = NULL;
    size_t len;
    int fd;

    memset(t, 0, sizeof(*t));
    fd = open(path, O_RDONLY);
    if (fd < 0) {
        return fail(err, errlen, "%s: cannot open: %s", path, strerror(errno));
    }
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        return fail(err, errlen, "%s: not a regular file", path);
    }
    len = (size_t)st.st_size;
    if (len != 0) {
        map = mmap(NULL, len, PROT_READ, MAP_PRIVATE, fd, 0);
        if (map == MAP_FAILED) {
            int e = errno;
            close(fd);
            return fail(err, errlen, "%s: cannot map: %s", path, strerror(e));
        }
        madvise(map, len, MADV_SEQUENTIAL);
    }
    close(fd);
    if (lab_trace_parse(t, path, map, len, err, errlen) != 0) {
        if (map != NULL) {
            munmap(map, len);
        }
        memset(t, 0, sizeof(*t));
        return -1;
    }
    t->map = map;
    t->map_len = len;
    return 0;
}

void lab_trace_close(lab_trace_t *t)
{
    if (t->map != NULL) {
        munmap(t->map, t->map_len);
    }
    t->map = NULL;
    t->rec = NULL;
}
