/* SPDX-License-Identifier: MIT */
/*
 * The trivial allocator the instruction counter's calibration is checked
 * against: a bump malloc with no branch, so the number of instructions it
 * executes is the number its disassembly shows (lab/tests/test_target.py
 * counts them with objdump and compares with what the driver measured).
 */
#include <stdint.h>

#include "icount.h"

static uintptr_t probe_top = 0x1000u;

void *tgt_probe_bump_malloc(size_t size)
{
    uintptr_t p = probe_top;
    probe_top = p + ((size + 7u) & ~(uintptr_t)7u);
    return (void *)p;
}
