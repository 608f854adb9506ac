/* SPDX-License-Identifier: MIT */
/* The semihosting sink (hk_trace_semihost.h): SYS_OPEN, SYS_WRITE, SYS_CLOSE. */
#include "hk_trace_semihost.h"

#define SYS_OPEN 0x01u
#define SYS_CLOSE 0x02u
#define SYS_WRITE 0x05u
#define MODE_WB 5u /* "wb" in the semihosting mode table */

static uintptr_t semihost(uintptr_t op, const void *arg)
{
#if defined(__arm__) && defined(__ARM_ARCH_PROFILE) && __ARM_ARCH_PROFILE == 'M'
    register uintptr_t r0 __asm__("r0") = op;
    register const void *r1 __asm__("r1") = arg;
    __asm__ volatile("bkpt 0xab" : "+r"(r0) : "r"(r1) : "memory");
    return r0;
#elif defined(__arm__)
    register uintptr_t r0 __asm__("r0") = op;
    register const void *r1 __asm__("r1") = arg;
    __asm__ volatile("svc 0x123456" : "+r"(r0) : "r"(r1) : "memory");
    return r0;
#elif defined(__riscv)
    register uintptr_t a0 __asm__("a0") = op;
    register const void *a1 __asm__("a1") = arg;
    /* The three instructions must stay uncompressed and together: the host recognises the sequence. */
    __asm__ volatile(".option push\n.option norvc\n.balign 16\n"
                     "slli x0, x0, 0x1f\nebreak\nsrai x0, x0, 7\n.option pop"
                     : "+r"(a0)
                     : "r"(a1)
                     : "memory");
    return a0;
#else
#error "hk_trace_semihost.c: semihosting is defined for Arm and RISC-V only"
#endif
}

static size_t length(const char *s)
{
    size_t n = 0;
    while (s[n] != '\0') {
        n++;
    }
    return n;
}

int hk_trace_semihost_open(hk_trace_semihost_t *out, const char *path)
{
    uintptr_t args[3];
    args[0] = (uintptr_t)path;
    args[1] = MODE_WB;
    args[2] = length(path);
    out->handle = (intptr_t)semihost(SYS_OPEN, args);
    return out->handle == -1 ? -1 : 0;
}

size_t hk_trace_semihost_sink(void *ctx, const uint8_t *bytes, size_t n)
{
    const hk_trace_semihost_t *out = (const hk_trace_semihost_t *)ctx;
    uintptr_t args[3];
    uintptr_t not_written;
    if (out->handle == -1) {
        return 0;
    }
    args[0] = (uintptr_t)out->handle;
    args[1] = (uintptr_t)bytes;
    args[2] = n;
    not_written = semihost(SYS_WRITE, args);
    return not_written <= n ? n - (size_t)not_written : 0u;
}

void hk_trace_semihost_close(hk_trace_semihost_t *out)
{
    uintptr_t args[1];
    if (out->handle == -1) {
        return;
    }
    args[0] = (uintptr_t)out->handle;
    (void)semihost(SYS_CLOSE, args);
    out->handle = -1;
}
