/* SPDX-License-Identifier: MIT */
/* A small streaming JSON writer: objects one member per line, scalar arrays on one line. */
#ifndef LAB_ENGINE_JSON_H
#define LAB_ENGINE_JSON_H

#include <stdint.h>
#include <stdio.h>

#define JSON_MAX_DEPTH 32

typedef struct json {
    FILE *f;
    int depth;
    int count[JSON_MAX_DEPTH];   /* members written at each level */
    int inline_[JSON_MAX_DEPTH]; /* level prints its members on one line */
} json_t;

void json_init(json_t *j, FILE *f);
/* key is NULL inside arrays. */
void json_obj(json_t *j, const char *key);
void json_obj_inline(json_t *j, const char *key);
void json_end_obj(json_t *j);
void json_arr(json_t *j, const char *key, int one_line);
void json_end_arr(json_t *j);
void json_u64(json_t *j, const char *key, uint64_t v);
void json_i64(json_t *j, const char *key, int64_t v);
/* Non-finite values are written as null. */
void json_f64(json_t *j, const char *key, double v);
void json_str(json_t *j, const char *key, const char *s);
void json_bool(json_t *j, const char *key, int v);
void json_null(json_t *j, const char *key);
/* v, or null when v == absent. */
void json_u64_or_null(json_t *j, const char *key, uint64_t v, uint64_t absent);

#endif
