/* SPDX-License-Identifier: MIT */
/*
 * The catalog: the entries named on the command line (the build's list, see
 * tests/CMakeLists.txt) are exactly the catalog's, every entry builds a heap
 * that serves requests, and refuses NULL and too-small arenas.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "heapkit/catalog.h"

static int expected_count;
static char **expected_names;
static unsigned char arena[64 * 1024] __attribute__((aligned(64)));

static void test_names_match_build_list(void **state)
{
    size_t i;
    (void)state;
    assert_int_equal(hk_catalog_count(), (size_t)expected_count);
    for (i = 0; i < hk_catalog_count(); i++) {
        assert_string_equal(hk_catalog_at(i)->name, expected_names[i]);
        assert_ptr_equal(hk_catalog_find(expected_names[i]), hk_catalog_at(i));
    }
    assert_null(hk_catalog_at(hk_catalog_count()));
    assert_null(hk_catalog_find("no-such-allocator"));
    assert_null(hk_catalog_find("tlsf-"));
    assert_null(hk_catalog_find(""));
}

static void test_every_entry_builds_a_working_heap(void **state)
{
    size_t i;
    (void)state;
    for (i = 0; i < hk_catalog_count(); i++) {
        const hk_catalog_entry_t *e = hk_catalog_at(i);
        hk_status_t status = HK_EINVAL;
        hk_heap_t *heap = e->make(arena, sizeof(arena), &status);
        void *p;
        assert_int_equal(status, HK_OK);
        assert_non_null(heap);
        p = hk_malloc(heap, 100);
        assert_non_null(p);
        assert_true(hk_owns(heap, p));
        assert_true(hk_usable_size(heap, p) >= 100);
        hk_free(heap, p);
        assert_int_equal(hk_check(heap), 0);
        assert_string_not_equal(hk_name(heap), "");
    }
}

static void test_every_entry_refuses_bad_arenas(void **state)
{
    size_t i;
    (void)state;
    for (i = 0; i < hk_catalog_count(); i++) {
        const hk_catalog_entry_t *e = hk_catalog_at(i);
        hk_status_t status = HK_OK;
        assert_null(e->make(NULL, sizeof(arena), &status));
        assert_int_equal(status, HK_EINVAL);
        status = HK_OK;
        assert_null(e->make(arena, 16, &status));
        assert_int_equal(status, HK_ETOOSMALL);
    }
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_names_match_build_list),
        cmocka_unit_test(test_every_entry_builds_a_working_heap),
        cmocka_unit_test(test_every_entry_refuses_bad_arenas),
    };
    expected_count = argc - 1;
    expected_names = argv + 1;
    return cmocka_run_group_tests(tests, NULL, NULL);
}
