/* SPDX-License-Identifier: MIT */
/*
 * Build shim for the "tlsf-conte" peer: Matthew Conte's TLSF 3.1 as LVGL 8
 * bundles it (lv_tlsf.c / lv_tlsf.h of the lvgl-sys crate 0.6.2, fetched by
 * tools/fetch_peers.sh), compiled on its own, without the rest of LVGL.
 *
 * It is force-included (-include) ahead of lv_tlsf.c, which then includes,
 * relative to its own directory, LVGL's lv_conf_internal.h, lv_mem.h,
 * lv_log.h and lv_assert.h. Defining their include guards here turns those
 * four headers into no-ops, so nothing of LVGL's configuration machinery is
 * read (no lv_conf.h needed) and this file supplies the few names lv_tlsf.c
 * uses from them:
 *
 *   LV_MEM_CUSTOM 0   lv_tlsf.c and lv_tlsf.h compile only then;
 *   LV_MEM_SIZE       lv_tlsf.c's TLSF_MAX_POOL_SIZE: the first-level index
 *                     count is log2 of it, rounded up (LVGL sets it to its
 *                     heap size). The Cortex-M3/RV32 counter passes its arena
 *                     size; the host engine keeps the default, 1 GiB, so any
 *                     arena it tries up to that fits one pool;
 *   LV_ASSERT(x)      nothing: asserts off, as in a release build (LVGL's
 *                     own LV_ASSERT is always on and would log and halt);
 *   LV_LOG_ERROR(...) nothing (lv_tlsf.c routes its printf calls, the
 *                     messages of a refused pool, through it);
 *   LV_UNUSED(x)      (void)x;
 *   lv_memcpy         memcpy (realloc's copy when the block moves).
 *
 * Every other line compiled is Conte's and LVGL's, unchanged.
 */
#ifndef HK_LAB_LV_TLSF_SHIM_H
#define HK_LAB_LV_TLSF_SHIM_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* The guards of lv_conf_internal.h, lv_mem.h, lv_log.h, lv_assert.h (LVGL 8.3). */
#define LV_CONF_INTERNAL_H
#define LV_MEM_H
#define LV_LOG_H
#define LV_ASSERT_H

#define LV_MEM_CUSTOM 0
#ifndef LV_MEM_SIZE
#define LV_MEM_SIZE (1024u * 1024u * 1024u)
#endif

#define LV_ASSERT(expr) ((void)0)
#define LV_LOG_ERROR(...) ((void)0)
#define LV_UNUSED(x) ((void)(x))
#define lv_memcpy memcpy

#endif
