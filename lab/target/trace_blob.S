/* SPDX-License-Identifier: MIT */
/*
 * The embedded trace (lab/target/icount.h) and the driver's work arrays,
 * sized for it. Assembled once per trace and target by lab/heapkit/target.py with
 *   -DTGT_TRACE_FILE="path.hkc" -DTGT_RECORDS=n -DTGT_SLOTS=n -DTGT_WORK_SECTION=name
 * The trace goes to read-only data (Cortex-M3: the board's 4 MiB "flash");
 * the arrays, 8 bytes per record and 12 per slot, to TGT_WORK_SECTION:
 * Cortex-M3 .psram.tgt, the uninitialised PSRAM section (16 MiB;
 * ports/baremetal/mps2-an385/link.ld); RV32 .bss.tgt (one 128 MiB RAM).
 */
#ifndef TGT_WORK_SECTION
#define TGT_WORK_SECTION .psram.tgt
#endif
    .section .rodata.tgt_trace, "a"
    .balign 4
    .global tgt_trace
tgt_trace:
    .incbin TGT_TRACE_FILE
    .balign 4
    .global tgt_trace_capacity
tgt_trace_capacity:
    .word TGT_RECORDS, TGT_SLOTS

    .section TGT_WORK_SECTION, "aw", %nobits
    .balign 8
    .global tgt_counts
tgt_counts:
    .space 4 * (TGT_RECORDS + 1)
    .global tgt_scratch
tgt_scratch:
    .space 4 * (TGT_RECORDS + 1)
    .global tgt_slot_words
tgt_slot_words:
    .space 12 * (TGT_SLOTS + 1)
