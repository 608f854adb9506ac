/*
 * The embedded trace (lab/target/icount.h) and the driver's work arrays,
 * sized for it. Assembled once per trace by lab/heapkit/target.py with
 *   -DTGT_TRACE_FILE="path.hkc" -DTGT_RECORDS=n -DTGT_SLOTS=n
 * The trace goes to read-only memory (the board's 4 MiB "flash"); the
 * arrays, 8 bytes per record and 12 per slot, to the uninitialised .psram
 * section (16 MiB PSRAM; ports/baremetal/mps2-an385/link.ld).
 */
    .section .rodata.tgt_trace, "a"
    .balign 4
    .global tgt_trace
tgt_trace:
    .incbin TGT_TRACE_FILE
    .balign 4
    .global tgt_trace_capacity
tgt_trace_capacity:
    .word TGT_RECORDS, TGT_SLOTS

    .section .psram.tgt, "aw", %nobits
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
