/* SPDX-License-Identifier: MIT */
/* The JSON writer (see json.h). */
#include "json.h"

#include <inttypes.h>
#include <math.h>

void json_init(json_t *j, FILE *f)
{
    j->f = f;
    j->depth = 0;
    j->count[0] = 0;
    j->inline_[0] = 0;
}

static void indent(json_t *j)
{
    int i;
    fputc('\n', j->f);
    for (i = 0; i < j->depth; i++) {
        fputs("  ", j->f);
    }
}

static void put_string(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s != '\0'; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\') {
            fputc('\\', f);
            fputc(c, f);
        } else if (c < 0x20) {
            fprintf(f, "\\u%04x", c);
        } else {
            fputc(c, f);
        }
    }
    fputc('"', f);
}

/* Separator, layout and key before a member. */
static void member(json_t *j, const char *key)
{
    if (j->depth > 0) {
        if (j->count[j->depth]++ > 0) {
            fputc(',', j->f);
            if (j->inline_[j->depth]) {
                fputc(' ', j->f);
            }
        }
        if (!j->inline_[j->depth]) {
            indent(j);
        }
    }
    if (key != NULL) {
        put_string(j->f, key);
        fputs(": ", j->f);
    }
}

static void open_level(json_t *j, const char *key, char c, int one_line)
{
    member(j, key);
    fputc(c, j->f);
    if (j->depth + 1 < JSON_MAX_DEPTH) {
        j->depth++;
        j->count[j->depth] = 0;
        j->inline_[j->depth] = one_line || (j->depth > 1 && j->inline_[j->depth - 1]);
    }
}

static void close_level(json_t *j, char c)
{
    int had = j->count[j->depth] > 0;
    int was_inline = j->inline_[j->depth];
    j->depth--;
    if (had && !was_inline) {
        indent(j);
    }
    fputc(c, j->f);
    if (j->depth == 0) {
        fputc('\n', j->f);
    }
}

void json_obj(json_t *j, const char *key) { open_level(j, key, '{', 0); }
void json_obj_inline(json_t *j, const char *key) { open_level(j, key, '{', 1); }
void json_end_obj(json_t *j) { close_level(j, '}'); }
void json_arr(json_t *j, const char *key, int one_line) { open_level(j, key, '[', one_line); }
void json_end_arr(json_t *j) { close_level(j, ']'); }

void json_u64(json_t *j, const char *key, uint64_t v)
{
    member(j, key);
    fprintf(j->f, "%" PRIu64, v);
}

void json_i64(json_t *j, const char *key, int64_t v)
{
    member(j, key);
    fprintf(j->f, "%" PRId64, v);
}

void json_f64(json_t *j, const char *key, double v)
{
    member(j, key);
    if (isfinite(v)) {
        fprintf(j->f, "%.9g", v);
    } else {
        fputs("null", j->f);
    }
}

void json_str(json_t *j, const char *key, const char *s)
{
    member(j, key);
    if (s == NULL) {
        fputs("null", j->f);
    } else {
        put_string(j->f, s);
    }
}

void json_bool(json_t *j, const char *key, int v)
{
    member(j, key);
    fputs(v ? "true" : "false", j->f);
}

void json_null(json_t *j, const char *key)
{
    member(j, key);
    fputs("null", j->f);
}

void json_u64_or_null(json_t *j, const char *key, uint64_t v, uint64_t absent)
{
    if (v == absent) {
        json_null(j, key);
    } else {
        json_u64(j, key, v);
    }
}
