/* SPDX-License-Identifier: MIT */
/* The allocator table (see allocators.h): heapkit's catalog, the FCTMA pool, SDMA, the system malloc and the peers. */
#include "allocators.h"

#include <string.h>

#include "heapkit/catalog.h"

extern const lab_alloc_t lab_pool_alloc;
extern const lab_alloc_t lab_sdma_alloc;
extern const lab_alloc_t lab_system_alloc;

#define LAB_PEER(sym) extern const lab_alloc_t sym;
#include "peers/peers.def"
#undef LAB_PEER

#ifdef LAB_TEST_ALLOCATORS
extern const lab_alloc_t *const lab_test_allocs[];
#endif

static const lab_alloc_t *const fixed[] = {
    &lab_pool_alloc,
    &lab_sdma_alloc,
    &lab_system_alloc,
#define LAB_PEER(sym) &sym,
#include "peers/peers.def"
#undef LAB_PEER
    NULL};

#define MAX_CATALOG 64

static lab_alloc_t from_catalog[MAX_CATALOG];
static const lab_alloc_t *table[MAX_CATALOG + sizeof(fixed) / sizeof(fixed[0]) + 8];
static size_t table_len;

static void build(void)
{
    size_t i;
    size_t n = hk_catalog_count();
    if (table_len != 0) {
        return;
    }
    for (i = 0; i < n && i < MAX_CATALOG; i++) {
        const hk_catalog_entry_t *e = hk_catalog_at(i);
        from_catalog[i].name = e->name;
        from_catalog[i].family = LAB_FAMILY_HEAPKIT;
        from_catalog[i].make = e->make;
        from_catalog[i].destroy = NULL;
        from_catalog[i].flags = LAB_IN_ARENA;
        table[table_len++] = &from_catalog[i];
    }
    for (i = 0; fixed[i] != NULL; i++) {
        table[table_len++] = fixed[i];
    }
#ifdef LAB_TEST_ALLOCATORS
    for (i = 0; lab_test_allocs[i] != NULL && table_len < sizeof(table) / sizeof(table[0]); i++) {
        table[table_len++] = lab_test_allocs[i];
    }
#endif
}

size_t lab_alloc_count(void)
{
    build();
    return table_len;
}

const lab_alloc_t *lab_alloc_at(size_t i)
{
    build();
    return i < table_len ? table[i] : NULL;
}

const lab_alloc_t *lab_alloc_find(const char *name)
{
    size_t i;
    build();
    for (i = 0; i < table_len; i++) {
        if (strcmp(table[i]->name, name) == 0) {
            return table[i];
        }
    }
    return NULL;
}

const char *lab_family_name(lab_family_t family)
{
    switch (family) {
    case LAB_FAMILY_HEAPKIT:
        return "heapkit";
    case LAB_FAMILY_SYSTEM:
        return "system";
    case LAB_FAMILY_PEER:
        return "peer";
    case LAB_FAMILY_TEST:
        return "test";
    }
    return "unknown";
}
