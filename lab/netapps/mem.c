/* SPDX-License-Identifier: MIT */
/*
 * The applications' memory: a catalog allocator in a 64-byte aligned arena
 * (as the replay engine builds it, so a trace replayed on the same entry and
 * arena size makes the same placement decisions), exact accounting of live
 * requested and granted bytes, and the .hkb trace (lab/common/hkb.h,
 * docs/trace-format.md) of every successful call: `m ID SIZE` per
 * allocation, `f ID` per free. A refused allocation leaves no record, so the
 * trace replays without failures on any allocator big enough.
 *
 * Live blocks are found by pointer in an open-addressing table (linear
 * probing, backward-shift deletion) that also keeps each block's id and
 * requested size.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../common/hkb.h"
#include "heapkit/catalog.h"
#include "netapp.h"

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "the .hkb writer assumes a little-endian host"
#endif

#define ARENA_ALIGN 64u
#define MAP_MIN 1024u

static size_t slot_of(const na_mem_t *m, uintptr_t key)
{
    uint64_t h = (uint64_t)key * 0x9E3779B97F4A7C15ull;
    return (size_t)(h >> 20) & m->map_mask;
}

static int map_grow(na_mem_t *m)
{
    size_t old_n = m->map_mask + 1, n = m->map == NULL ? MAP_MIN : old_n * 2;
    na_slot_t *old = m->map, *fresh = calloc(n, sizeof *fresh);
    if (fresh == NULL) {
        return -1;
    }
    m->map = fresh;
    m->map_mask = n - 1;
    for (size_t i = 0; old != NULL && i < old_n; i++) {
        if (old[i].key != 0) {
            size_t j = slot_of(m, old[i].key);
            while (fresh[j].key != 0) {
                j = (j + 1) & m->map_mask;
            }
            fresh[j] = old[i];
        }
    }
    free(old);
    return 0;
}

static int map_put(na_mem_t *m, uintptr_t key, uint32_t id, uint32_t size)
{
    size_t i;
    if (m->map == NULL || (m->map_used + 1) * 2 > m->map_mask + 1) {
        if (map_grow(m) != 0) {
            return -1;
        }
    }
    i = slot_of(m, key);
    while (m->map[i].key != 0) {
        i = (i + 1) & m->map_mask;
    }
    m->map[i] = (na_slot_t){key, id, size};
    m->map_used++;
    return 0;
}

/* Removes key, returning its slot's content in *out; -1 when it is not live. */
static int map_take(na_mem_t *m, uintptr_t key, na_slot_t *out)
{
    size_t i, j;
    if (m->map == NULL) {
        return -1;
    }
    i = slot_of(m, key);
    while (m->map[i].key != key) {
        if (m->map[i].key == 0) {
            return -1;
        }
        i = (i + 1) & m->map_mask;
    }
    *out = m->map[i];
    /* backward shift: pull later members of the probe run into the hole */
    j = i;
    for (;;) {
        size_t home;
        j = (j + 1) & m->map_mask;
        if (m->map[j].key == 0) {
            break;
        }
        home = slot_of(m, m->map[j].key);
        if (((j - home) & m->map_mask) >= ((j - i) & m->map_mask)) {
            m->map[i] = m->map[j];
            i = j;
        }
    }
    m->map[i].key = 0;
    m->map_used--;
    return 0;
}

static void put_header(uint8_t h[LAB_HKB_HEADER], uint64_t records, uint32_t ids)
{
    memset(h, 0, LAB_HKB_HEADER);
    memcpy(h, LAB_HKB_MAGIC, LAB_HKB_MAGIC_LEN);
    h[8] = (uint8_t)LAB_HKB_VERSION;
    memcpy(h + 16, &records, 8);
    memcpy(h + 24, &ids, 4);
}

static void record(na_mem_t *m, uint8_t op, uint32_t id, uint32_t size)
{
    lab_rec_t r = {op, 0, 0, id, size, 0};
    if (m->trace == NULL || m->trace_failed) {
        return;
    }
    if (fwrite(&r, sizeof r, 1, m->trace) != 1) {
        m->trace_failed = errno != 0 ? errno : EIO;
    }
    m->records++;
}

int na_mem_open(na_mem_t *m, const char *name, size_t arena_size, const char *trace_path,
                char *err, size_t errlen)
{
    const hk_catalog_entry_t *e = hk_catalog_find(name);
    hk_status_t status = HK_OK;
    memset(m, 0, sizeof *m);
    m->allocator = name;
    if (e == NULL) {
        snprintf(err, errlen, "--allocator: no catalog entry named '%s'", name);
        return -1;
    }
    arena_size = (arena_size + ARENA_ALIGN - 1) / ARENA_ALIGN * ARENA_ALIGN;
    m->arena = aligned_alloc(ARENA_ALIGN, arena_size);
    if (m->arena == NULL) {
        snprintf(err, errlen, "--arena: cannot get %zu bytes from the host", arena_size);
        return -1;
    }
    m->arena_size = arena_size;
    m->heap = e->make(m->arena, arena_size, &status);
    if (m->heap == NULL) {
        snprintf(err, errlen, "--arena: %s refuses an arena of %zu bytes (status %d)", name, arena_size,
                 (int)status);
        free(m->arena);
        m->arena = NULL;
        return -1;
    }
    if (trace_path != NULL) {
        uint8_t h[LAB_HKB_HEADER];
        size_t n = strlen(trace_path) + 32;
        m->trace_path = strdup(trace_path);
        m->trace_tmp = malloc(n);
        if (m->trace_path == NULL || m->trace_tmp == NULL) {
            snprintf(err, errlen, "out of host memory");
            return -1;
        }
        snprintf(m->trace_tmp, n, "%s.tmp.%ld", trace_path, (long)getpid());
        m->trace = fopen(m->trace_tmp, "wb");
        put_header(h, 0, 0);
        if (m->trace == NULL || fwrite(h, sizeof h, 1, m->trace) != 1) {
            snprintf(err, errlen, "%s: cannot write: %s", trace_path, strerror(errno));
            if (m->trace != NULL) {
                fclose(m->trace);
                m->trace = NULL;
                unlink(m->trace_tmp);
            }
            return -1;
        }
    }
    return 0;
}

void *na_alloc(na_mem_t *m, size_t size)
{
    void *p = hk_malloc(m->heap, size);
    if (p == NULL) {
        m->fails++;
        return NULL;
    }
    if (map_put(m, (uintptr_t)p, m->next_id, (uint32_t)size) != 0) {
        fputs("hk-netapp: out of host memory\n", stderr);
        exit(1);
    }
    record(m, 'm', m->next_id, (uint32_t)size);
    m->next_id++;
    m->allocs++;
    m->requested_total += size;
    if (size <= NA_SMALL) {
        m->small_allocs++;
    }
    m->live_requested += size;
    m->live_granted += hk_usable_size(m->heap, p);
    m->live_blocks++;
    if (m->live_requested > m->peak_requested) {
        m->peak_requested = m->live_requested;
    }
    if (m->live_granted > m->peak_granted) {
        m->peak_granted = m->live_granted;
    }
    if (m->live_blocks > m->peak_blocks) {
        m->peak_blocks = m->live_blocks;
    }
    return p;
}

void na_free(na_mem_t *m, void *p)
{
    na_slot_t s;
    if (p == NULL) {
        return;
    }
    if (map_take(m, (uintptr_t)p, &s) != 0) {
        m->misuse++;
        return;
    }
    m->live_granted -= hk_usable_size(m->heap, p);
    hk_free(m->heap, p);
    record(m, 'f', s.id, 0);
    m->frees++;
    m->live_requested -= s.size;
    m->live_blocks--;
}

int na_mem_close(na_mem_t *m, int keep, char *err, size_t errlen)
{
    int rc = 0;
    if (m->trace != NULL) {
        uint8_t h[LAB_HKB_HEADER];
        put_header(h, m->records, m->next_id);
        if (keep && !m->trace_failed &&
            (fseek(m->trace, 0, SEEK_SET) != 0 || fwrite(h, sizeof h, 1, m->trace) != 1)) {
            m->trace_failed = errno != 0 ? errno : EIO;
        }
        if (fclose(m->trace) != 0 && !m->trace_failed) {
            m->trace_failed = errno != 0 ? errno : EIO;
        }
        m->trace = NULL;
        if (keep && m->trace_failed) {
            snprintf(err, errlen, "%s: cannot write: %s", m->trace_path, strerror(m->trace_failed));
            rc = -1;
        }
        if (keep && rc == 0 && rename(m->trace_tmp, m->trace_path) != 0) {
            snprintf(err, errlen, "%s: cannot write: %s", m->trace_path, strerror(errno));
            rc = -1;
        }
        if (!keep || rc != 0) {
            unlink(m->trace_tmp);
        }
    }
    free(m->trace_path);
    free(m->trace_tmp);
    free(m->map);
    free(m->arena);
    m->trace_path = m->trace_tmp = NULL;
    m->map = NULL;
    m->arena = NULL;
    m->heap = NULL;
    return rc;
}
