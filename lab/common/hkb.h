/* SPDX-License-Identifier: MIT */
/*
 * The binary trace (.hkb, docs/trace-format.md) on disk: the one C definition
 * of its layout, shared by the engine's reader (lab/engine/trace.c) and the
 * capture library's writer (lab/capture/hkcapture.c). Little-endian only.
 *
 * Header (LAB_HKB_HEADER bytes): magic (8), version u32, flags u32 (0),
 * record count u64, id count u32, reserved u32 (0); then the records.
 */
#ifndef LAB_COMMON_HKB_H
#define LAB_COMMON_HKB_H

#include <stdint.h>

#define LAB_HKB_MAGIC "HKTRACE" /* 8 bytes with its terminating NUL */
#define LAB_HKB_MAGIC_LEN 8u
#define LAB_HKB_VERSION 1u
#define LAB_HKB_HEADER 32u
#define LAB_HKB_RECORD 16u
#define LAB_NULL_ID 0xFFFFFFFFu

/* A record exactly as stored. */
typedef struct lab_rec {
    uint8_t op;
    uint8_t reserved;
    uint16_t tid;
    uint32_t id;
    uint32_t size;
    uint32_t aux;
} lab_rec_t;
_Static_assert(sizeof(lab_rec_t) == LAB_HKB_RECORD, "a .hkb record is 16 bytes");

#endif
