/* SPDX-License-Identifier: MIT */
/* The textual form of an hk_dmm_config_t; see config_text.h. */
#include "config_text.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const fit_names[] = {"first", "next", "best", "worst", "exact"};
static const char *const order_names[] = {"lifo", "fifo", "address"};

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

static int fail(char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
    return -1;
}

/* A decimal number of at most 10 digits (so it fits 32 bits after the range check by the caller). */
static int parse_uint(const char *s, size_t len, unsigned long *out)
{
    unsigned long v = 0;
    size_t i;
    if (len == 0 || len > 10) {
        return -1;
    }
    for (i = 0; i < len; i++) {
        if (s[i] < '0' || s[i] > '9') {
            return -1;
        }
        v = v * 10u + (unsigned long)(s[i] - '0');
    }
    if (v > 0xFFFFFFFFul) {
        return -1;
    }
    *out = v;
    return 0;
}

static int parse_name(const char *value, const char *const *names, size_t n, unsigned *out)
{
    size_t i;
    for (i = 0; i < n; i++) {
        if (strcmp(value, names[i]) == 0) {
            *out = (unsigned)i;
            return 0;
        }
    }
    return -1;
}

/* "none", or comma-separated LO / LO-HI ranges. */
static int parse_lists(const char *value, hk_dmm_config_t *cfg, char *err, size_t errlen)
{
    const char *p = value;
    cfg->nlists = 0;
    memset(cfg->lists, 0, sizeof(cfg->lists));
    if (strcmp(value, "none") == 0) {
        return 0;
    }
    for (;;) {
        const char *comma = strchr(p, ',');
        size_t len = comma != NULL ? (size_t)(comma - p) : strlen(p);
        const char *dash = memchr(p, '-', len);
        unsigned long lo;
        unsigned long hi;
        if (cfg->nlists == HK_DMM_MAX_LISTS) {
            return fail(err, errlen, "lists: more than %u ranges", HK_DMM_MAX_LISTS);
        }
        if (dash != NULL) {
            if (parse_uint(p, (size_t)(dash - p), &lo) != 0 ||
                parse_uint(dash + 1, len - (size_t)(dash - p) - 1, &hi) != 0) {
                return fail(err, errlen, "lists: bad range '%.*s' (expected LO or LO-HI)", (int)len, p);
            }
        } else {
            if (parse_uint(p, len, &lo) != 0) {
                return fail(err, errlen, "lists: bad size '%.*s' (expected LO or LO-HI)", (int)len, p);
            }
            hi = lo;
        }
        cfg->lists[cfg->nlists].lo = (uint32_t)lo;
        cfg->lists[cfg->nlists].hi = (uint32_t)hi;
        cfg->nlists++;
        if (comma == NULL) {
            return 0;
        }
        p = comma + 1;
    }
}

enum {
    K_PRESET, K_FIT, K_ORDER, K_SPLIT, K_COALESCE, K_NO_POOL, K_CLASS_ROUND, K_POOL_ROUND, K_LISTS, K_COUNT
};
static const char *const key_names[K_COUNT] = {"preset",  "fit",         "order",      "split", "coalesce",
                                               "no_pool", "class_round", "pool_round", "lists"};

/* The key named by the len characters at name, or K_COUNT. */
static int key_of(const char *name, size_t len)
{
    int key;
    for (key = 0; key < K_COUNT; key++) {
        if (strlen(key_names[key]) == len && strncmp(name, key_names[key], len) == 0) {
            break;
        }
    }
    return key;
}

/* 1 when a key other than preset was already given. */
static int any_override(const int *seen)
{
    int key;
    for (key = K_PRESET + 1; key < K_COUNT; key++) {
        if (seen[key]) {
            return 1;
        }
    }
    return 0;
}

static int apply(hk_dmm_config_t *cfg, int key, const char *value, char *err, size_t errlen)
{
    unsigned long v = 0;
    const hk_dmm_config_t *preset;
    switch (key) {
    case K_PRESET:
        preset = hk_dmm_preset(value);
        if (preset == NULL) {
            return fail(err, errlen, "preset: unknown preset '%s'", value);
        }
        *cfg = *preset;
        return 0;
    case K_FIT:
        if (parse_name(value, fit_names, COUNT(fit_names), &cfg->fit) != 0) {
            return fail(err, errlen, "fit: '%s' is not first, next, best, worst or exact", value);
        }
        return 0;
    case K_ORDER:
        if (parse_name(value, order_names, COUNT(order_names), &cfg->order) != 0) {
            return fail(err, errlen, "order: '%s' is not lifo, fifo or address", value);
        }
        return 0;
    case K_LISTS:
        return parse_lists(value, cfg, err, errlen);
    default:
        break;
    }
    if (parse_uint(value, strlen(value), &v) != 0) {
        return fail(err, errlen, "%s: '%s' is not a number", key_names[key], value);
    }
    switch (key) {
    case K_SPLIT:
        cfg->split = (unsigned)v;
        break;
    case K_COALESCE:
        cfg->coalesce = (unsigned)v;
        break;
    case K_NO_POOL:
        cfg->no_pool = (unsigned)v;
        break;
    case K_CLASS_ROUND:
        cfg->class_round = (unsigned)v;
        break;
    default:
        cfg->pool_round = (unsigned)v;
        break;
    }
    return 0;
}

int config_parse(const char *text, hk_dmm_config_t *cfg, char *err, size_t errlen)
{
    int seen[K_COUNT] = {0};
    const char *p = text;
    memset(cfg, 0, sizeof(*cfg));
    for (;;) {
        char token[CONFIG_TEXT_MAX];
        const char *eq;
        size_t len;
        int key;
        while (*p == ' ' || *p == '\t') {
            p++;
        }
        if (*p == '\0' || *p == '\n' || *p == '\r') {
            break;
        }
        len = strcspn(p, " \t\r\n");
        if (len >= sizeof(token)) {
            return fail(err, errlen, "token of %zu characters is too long", len);
        }
        memcpy(token, p, len);
        token[len] = '\0';
        p += len;
        eq = strchr(token, '=');
        if (eq == NULL) {
            return fail(err, errlen, "'%s' is not KEY=VALUE", token);
        }
        key = key_of(token, (size_t)(eq - token));
        if (key == K_COUNT) {
            return fail(err, errlen, "unknown key '%.*s' (keys: preset fit order split coalesce no_pool "
                                     "class_round pool_round lists)", (int)(eq - token), token);
        }
        if (seen[key]) {
            return fail(err, errlen, "key '%s' given twice", key_names[key]);
        }
        if (key == K_PRESET && any_override(seen)) {
            return fail(err, errlen, "preset= must come before the keys that override it");
        }
        seen[key] = 1;
        if (apply(cfg, key, eq + 1, err, errlen) != 0) {
            return -1;
        }
    }
    return 0;
}

void config_format(const hk_dmm_config_t *cfg, char *out, size_t outlen)
{
    size_t n;
    unsigned i;
    n = (size_t)snprintf(out, outlen,
                         "fit=%s order=%s split=%u coalesce=%u no_pool=%u class_round=%u pool_round=%u lists=",
                         cfg->fit < COUNT(fit_names) ? fit_names[cfg->fit] : "?",
                         cfg->order < COUNT(order_names) ? order_names[cfg->order] : "?", cfg->split,
                         cfg->coalesce, cfg->no_pool, cfg->class_round, cfg->pool_round);
    if (cfg->nlists == 0) {
        snprintf(out + n, n < outlen ? outlen - n : 0, "none");
        return;
    }
    for (i = 0; i < cfg->nlists && i < HK_DMM_MAX_LISTS && n < outlen; i++) {
        const hk_dmm_range_t *r = &cfg->lists[i];
        const char *sep = i + 1 < cfg->nlists ? "," : "";
        if (r->lo == r->hi) {
            n += (size_t)snprintf(out + n, outlen - n, "%u%s", (unsigned)r->lo, sep);
        } else {
            n += (size_t)snprintf(out + n, outlen - n, "%u-%u%s", (unsigned)r->lo, (unsigned)r->hi, sep);
        }
    }
}
