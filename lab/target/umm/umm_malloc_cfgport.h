/* SPDX-License-Identifier: MIT */
/*
 * umm_malloc configuration for the Cortex-M3 instruction counter's umm peer
 * (lab/target/allocs.c), found by umm_malloc_cfg.h as <umm_malloc_cfgport.h>.
 * umm's defaults, as an application would ship it: best fit, 8-byte blocks,
 * no poisoning, no integrity checks, no statistics (UMM_INFO and
 * UMM_INTEGRITY_CHECK would add a heap walk to every call), no critical
 * sections.
 */
#ifndef TGT_UMM_MALLOC_CFGPORT_H
#define TGT_UMM_MALLOC_CFGPORT_H

#define UMM_BEST_FIT

#endif
