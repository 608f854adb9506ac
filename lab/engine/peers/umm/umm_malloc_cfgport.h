/* SPDX-License-Identifier: MIT */
/*
 * umm_malloc configuration for the lab's umm peer (umm.c), found by
 * umm_malloc_cfg.h as <umm_malloc_cfgport.h>. Defaults otherwise: 8-byte
 * blocks, no poisoning, no critical sections (the uniform layer locks).
 */
#ifndef LAB_UMM_MALLOC_CFGPORT_H
#define LAB_UMM_MALLOC_CFGPORT_H

/* umm's default policy (also the umm-malloc-sys crate's). */
#define UMM_BEST_FIT

/* umm_info(): free/used block counts and the largest free block, for get_stats. */
#define UMM_INFO

/* umm_integrity_check(): umm's own consistency check, behind the adapter's check(). */
#define UMM_INTEGRITY_CHECK

#endif
