/* SPDX-License-Identifier: MIT */
/*
 * The buddies' level-2 tail word (src/buddy.c, src/gbuddy.c): their blocks
 * have no header, so the requested size lives in a used block's last word
 * and the canary runs from the request up to it.
 */
#ifndef HK_TAIL_H
#define HK_TAIL_H

#include "hk_internal.h"

#if HK_CANARIES
/*
 * The stored size is trusted only as far as it leaves room for the canary,
 * so a damaged word never sends a read or a copy past the block.
 */
#define HK_TAIL_WORD sizeof(size_t)
#define HK_TAIL_EXTRA (HK_CANARY_ROOM + HK_TAIL_WORD)

static inline size_t hk_tail_request(const unsigned char *b, size_t bytes)
{
    size_t r;
    hk_memcpy(&r, b + bytes - HK_TAIL_WORD, sizeof(r));
    return r <= bytes - HK_TAIL_EXTRA ? r : bytes - HK_TAIL_EXTRA;
}

static inline void hk_tail_set(unsigned char *b, size_t bytes, size_t requested)
{
    hk_fill(b + requested, b + bytes - HK_TAIL_WORD, HK_CANARY_BYTE);
    hk_memcpy(b + bytes - HK_TAIL_WORD, &requested, sizeof(requested));
}

static inline int hk_tail_intact(const unsigned char *b, size_t bytes)
{
    size_t r;
    hk_memcpy(&r, b + bytes - HK_TAIL_WORD, sizeof(r));
    return r <= bytes - HK_TAIL_EXTRA && hk_filled(b + r, b + bytes - HK_TAIL_WORD, HK_CANARY_BYTE);
}
#endif

#endif /* HK_TAIL_H */
