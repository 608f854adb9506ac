/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target for the replay engine's trace reader (lab/engine/trace.c):
 * the input is a .hkb file. The reader must accept it or refuse it with one
 * line naming the file, and never read outside it (ASan). What it accepts
 * must hold what the engine relies on, recounted here from the records: the
 * size matches the header, ids are dense and below the id count, every
 * operation is counted once, the peak-live record exists.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trace.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(int ok, const char *what)
{
    if (!ok) {
        fprintf(stderr, "fuzz_trace: accepted a trace that breaks: %s\n", what);
        abort();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const char path[] = "input.hkb";
    lab_trace_t t;
    char err[512];
    uint64_t ops = 0;
    uint64_t i;
    uint32_t next_id = 0;
    int k;

    err[0] = '\0';
    if (lab_trace_parse(&t, path, data, size, err, sizeof(err)) != 0) {
        check(strncmp(err, "input.hkb: ", sizeof(path) + 1) == 0, "the error names the file");
        check(strchr(err, '\n') == NULL && strlen(err) < sizeof(err) - 1, "the error is one whole line");
        return 0;
    }
    check(err[0] == '\0', "no error text on success");
    check(size == LAB_HKB_HEADER + t.count * LAB_HKB_RECORD, "file size = header + records");
    check(t.ids <= t.count, "ids <= records");
    for (k = 0; k < LAB_OP_KINDS; k++) {
        ops += t.ops[k];
    }
    check(ops == t.count, "every record counted once");
    for (i = 0; i < t.count; i++) {
        const lab_rec_t *r = &t.rec[i];
        if (r->op != 'f') {
            check(r->id == next_id++, "allocating ids are dense");
        } else {
            check(r->id < next_id, "frees name an earlier id");
        }
    }
    check(next_id == t.ids, "the id count is the header's");
    check(t.count == 0 ? t.peak_live == 0 : t.peak_live_rec < t.count, "the peak-live record exists");
    check(t.max_align == 0 || (t.max_align & (t.max_align - 1)) == 0, "the largest alignment is a power of two");
    return 0;
}
