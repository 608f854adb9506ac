/* SPDX-License-Identifier: MIT */
/*
 * The textual form of an hk_dmm_config_t (include/heapkit/dmm.h), one line,
 * used by hk-explore's input and by lab/heapkit/explore.py:
 *
 *   fit=first order=lifo split=9 coalesce=9 no_pool=0 class_round=0 pool_round=0 lists=16,1476-1500
 *
 * fit: first next best worst exact; order: lifo fifo address; split and
 * coalesce: 0..9; no_pool, class_round: 0 or 1; pool_round: 0 or a power of
 * two; lists: "none" or comma-separated LO or LO-HI request-byte ranges.
 *
 * Parsing starts from an all-zero config (first fit, LIFO, no splitting,
 * no coalescing, no lists); "preset=NAME" loads a preset and later keys
 * override it. Keys may come in any order, each at most once. The canonical
 * form (config_format) always writes every key in the order above, so
 * format(parse(format(c))) == format(c).
 */
#ifndef LAB_EXPLORE_CONFIG_TEXT_H
#define LAB_EXPLORE_CONFIG_TEXT_H

#include <stddef.h>

#include "heapkit/dmm.h"

/* Longest canonical text (16 lists of "32768-32768,"), with its NUL. */
#define CONFIG_TEXT_MAX 512u

/*
 * Parse the whitespace-separated tokens of text into *cfg. Returns 0, or -1
 * with a one-line reason in err. Only the syntax is checked here: a config
 * hk_dmm_validate() refuses still parses (the explorer reports it as refused).
 */
int config_parse(const char *text, hk_dmm_config_t *cfg, char *err, size_t errlen);

/* The canonical text of cfg into out (CONFIG_TEXT_MAX bytes is always enough). */
void config_format(const hk_dmm_config_t *cfg, char *out, size_t outlen);

#endif
