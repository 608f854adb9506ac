/* SPDX-License-Identifier: MIT */
/*
 * A recorder sink that writes to a file on the host through semihosting
 * (a debugger, or QEMU with -semihosting-config enable=on,target=native):
 *
 *   static hk_trace_semihost_t out;
 *   hk_trace_semihost_open(&out, "trace.hkfw");
 *   config.sink = hk_trace_semihost_sink; config.sink_ctx = &out;
 *   ... hk_trace_drain(t) now and then, and at the end; hk_trace_semihost_close(&out);
 *
 * Arm (BKPT 0xAB on M-profile, SVC 0x123456 elsewhere) and RISC-V (the
 * slli/ebreak/srai sequence). Each sink call is one trap, so drain in
 * large runs: the ring's contiguous bytes go in one SYS_WRITE.
 */
#ifndef HEAPKIT_HK_TRACE_SEMIHOST_H
#define HEAPKIT_HK_TRACE_SEMIHOST_H

#include <stddef.h>
#include <stdint.h>

typedef struct hk_trace_semihost {
    intptr_t handle; /* -1: not open */
} hk_trace_semihost_t;

/* 0 on success, -1 when the host refuses the file. */
int hk_trace_semihost_open(hk_trace_semihost_t *out, const char *path);
size_t hk_trace_semihost_sink(void *ctx, const uint8_t *bytes, size_t n);
void hk_trace_semihost_close(hk_trace_semihost_t *out);

#endif
