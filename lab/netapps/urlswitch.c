/* SPDX-License-Identifier: MIT */
/*
 * url-switch: the seed's third case study, URL-based switching after
 * NetBench's URL application. At start a table of patterns is built, each
 * with the route that packets matching it take. Then every packet's headers
 * are parsed into small heap objects: a descriptor, a copy of its IP header
 * and of its TCP/UDP header; a packet that starts an HTTP request also has
 * its request line split into method, URL and version strings and its Host
 * line copied. The URL and Host are searched for every pattern in table
 * order; the first match gives the route (none: the default route 0), and
 * the connection (either direction of the TCP 4-tuple) is bound to it, so
 * the connection's later packets follow. Connections are created by a SYN
 * or a request and destroyed by a FIN or RST. The method, version and Host
 * are freed once matched; the URL and header copies stay with the
 * descriptor in the route's output queue until the link takes the packet,
 * when their checksum is verified. The link serves the route queues in
 * round robin, one packet per turn. The payload itself stays in the
 * receive buffer: this application's heap holds only small objects, as in
 * the seed (dedicated lists of 8, 11 and 20 bytes).
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "netapp.h"

#define ROUTES 16u
#define CONN_BUCKETS 256u
#define MAX_TOKEN 2048u

typedef struct pattern {
    char *text;
    uint32_t len;
    uint32_t route;
} pattern_t;

static const struct {
    const char *text;
    uint32_t route;
} patterns[] = {
    {"/images/", 1},      {".jpg", 1},        {".gif", 1},          {".png", 1},
    {"/video/", 2},       {".ts", 2},         {".mp4", 2},          {"/api/", 3},
    {"/cgi-bin/", 3},     {"/static/", 4},    {".css", 4},          {".js", 4},
    {"/download", 5},     {".tar.gz", 5},     {".sha256sum", 5},    {"mirror", 5},
    {"ethereal.com", 6},  {"neufbox", 6},     {"icanhazip", 6},     {"/pagead/", 7},
    {"example.com", 8},   {"example.org", 8}, {".edu", 9},          {"social", 10},
    {"maps.", 11},        {"news.", 12},      {"search.", 13},      {"mail.", 14},
    {"shop", 15},         {"?", 3},
};
#define NPATTERNS (sizeof patterns / sizeof patterns[0])

typedef struct conn {
    struct conn *next;
    na_flow_key_t key; /* canonical: the smaller (address, port) first */
    uint32_t hash;
    uint32_t route;
} conn_t;

typedef struct desc {
    struct desc *next;
    uint8_t *l3, *l4;
    char *url;
    uint32_t l3_len, l4_len, url_len;
    uint32_t wire_len, flow_hash, route, check;
} desc_t;

typedef struct urlsw {
    na_mem_t *m;
    na_app_stats_t *st;
    pattern_t **table;
    conn_t **conns;
    uint64_t nconns;
    desc_t *head[ROUTES], *tail[ROUTES];
    uint32_t rr;
    uint64_t queued_bytes;
} urlsw_t;

/* A heap copy of n bytes, NUL-terminated (n + 1 bytes); NULL when the heap refuses. */
static char *heap_str(urlsw_t *u, const uint8_t *s, size_t n)
{
    char *c = na_alloc(u->m, n + 1);
    if (c != NULL) {
        memcpy(c, s, n);
        c[n] = '\0';
    }
    return c;
}

static void urlsw_destroy(void *app);

static void *urlsw_create(na_mem_t *m, const na_app_cfg_t *cfg, na_app_stats_t *st, char *err,
                          size_t errlen)
{
    urlsw_t *u = calloc(1, sizeof *u);
    (void)cfg;
    if (u == NULL) {
        snprintf(err, errlen, "out of host memory");
        return NULL;
    }
    u->m = m;
    u->st = st;
    u->table = na_alloc(m, NPATTERNS * sizeof *u->table);
    u->conns = na_alloc(m, CONN_BUCKETS * sizeof *u->conns);
    if (u->table != NULL) {
        memset(u->table, 0, NPATTERNS * sizeof *u->table);
    }
    if (u->conns != NULL) {
        memset(u->conns, 0, CONN_BUCKETS * sizeof *u->conns);
    }
    for (size_t i = 0; u->table != NULL && u->conns != NULL && i < NPATTERNS; i++) {
        pattern_t *pt = na_alloc(m, sizeof *pt);
        u->table[i] = pt;
        if (pt == NULL) {
            break;
        }
        pt->len = (uint32_t)strlen(patterns[i].text);
        pt->route = patterns[i].route;
        pt->text = heap_str(u, (const uint8_t *)patterns[i].text, pt->len);
        if (pt->text == NULL) {
            break;
        }
    }
    if (u->table == NULL || u->conns == NULL || u->table[NPATTERNS - 1] == NULL ||
        u->table[NPATTERNS - 1]->text == NULL) {
        snprintf(err, errlen, "%s cannot hold the url-switch pattern table", m->allocator);
        urlsw_destroy(u);
        return NULL;
    }
    return u;
}

/* The connection key of p, the same for both directions. */
static void canonical(const na_packet_t *p, na_flow_key_t *k)
{
    int swap = memcmp(p->key.src, p->key.dst, 16);
    if (swap == 0) {
        swap = p->key.sport > p->key.dport;
    } else {
        swap = swap > 0;
    }
    *k = p->key;
    if (swap) {
        memcpy(k->src, p->key.dst, 16);
        memcpy(k->dst, p->key.src, 16);
        k->sport = p->key.dport;
        k->dport = p->key.sport;
    }
}

static conn_t **conn_slot(urlsw_t *u, const na_flow_key_t *k, uint32_t h)
{
    conn_t **c = &u->conns[h % CONN_BUCKETS];
    while (*c != NULL && ((*c)->hash != h || memcmp(&(*c)->key, k, sizeof *k) != 0)) {
        c = &(*c)->next;
    }
    return c;
}

static const uint8_t *find(const uint8_t *s, size_t n, const char *w, size_t wn)
{
    for (size_t i = 0; wn <= n && i <= n - wn; i++) {
        if (memcmp(s + i, w, wn) == 0) {
            return s + i;
        }
    }
    return NULL;
}

static int is_method(const uint8_t *s, size_t n)
{
    static const char *const methods[] = {"GET", "POST", "HEAD", "PUT", "DELETE", "OPTIONS", "PATCH",
                                          "CONNECT", "TRACE"};
    for (size_t i = 0; i < sizeof methods / sizeof methods[0]; i++) {
        if (n == strlen(methods[i]) && memcmp(s, methods[i], n) == 0) {
            return 1;
        }
    }
    return 0;
}

/* The route of the first pattern found in the URL or the Host, or 0. */
static uint32_t match(urlsw_t *u, const char *url, size_t url_len, const char *host, size_t host_len)
{
    for (size_t i = 0; i < NPATTERNS; i++) {
        const pattern_t *pt = u->table[i];
        if (find((const uint8_t *)url, url_len, pt->text, pt->len) != NULL ||
            (host != NULL && find((const uint8_t *)host, host_len, pt->text, pt->len) != NULL)) {
            u->st->matched++;
            return pt->route;
        }
    }
    return 0;
}

/*
 * Parses an HTTP request at the start of the payload: on success the URL is
 * left in d (heap), the route is returned and *is_request set; the other
 * tokens live only while matching. -1 when the heap refused a token.
 */
static int parse_request(urlsw_t *u, const na_packet_t *p, desc_t *d, int *is_request, uint32_t *route)
{
    const uint8_t *s = p->data + p->payload_off, *end, *sp1, *sp2, *line_end, *h;
    size_t n = p->payload_len;
    char *method, *version, *host = NULL;
    size_t host_len = 0;
    *is_request = 0;
    line_end = find(s, n < MAX_TOKEN ? n : MAX_TOKEN, "\r\n", 2);
    if (line_end == NULL) {
        return 0;
    }
    sp1 = memchr(s, ' ', (size_t)(line_end - s));
    if (sp1 == NULL || !is_method(s, (size_t)(sp1 - s))) {
        return 0;
    }
    sp2 = memchr(sp1 + 1, ' ', (size_t)(line_end - sp1 - 1));
    if (sp2 == NULL || sp2 == sp1 + 1 || (size_t)(line_end - sp2 - 1) < 8 || memcmp(sp2 + 1, "HTTP/", 5) != 0) {
        return 0;
    }
    method = heap_str(u, s, (size_t)(sp1 - s));
    d->url = heap_str(u, sp1 + 1, (size_t)(sp2 - sp1 - 1));
    version = heap_str(u, sp2 + 1, (size_t)(line_end - sp2 - 1));
    end = s + n;
    /* header lines up to the blank line (or the end of the segment) */
    for (h = line_end + 2; h < end;) {
        const uint8_t *e = find(h, (size_t)(end - h), "\r\n", 2);
        size_t len = e != NULL ? (size_t)(e - h) : (size_t)(end - h);
        if (len == 0) {
            break;
        }
        if (len > 5 && strncasecmp((const char *)h, "host:", 5) == 0 && host == NULL) {
            const uint8_t *v = h + 5, *ve = h + len;
            while (v < ve && (*v == ' ' || *v == '\t')) {
                v++;
            }
            while (ve > v && (ve[-1] == ' ' || ve[-1] == '\t')) {
                ve--;
            }
            host_len = (size_t)(ve - v);
            host = heap_str(u, v, host_len);
            if (host == NULL) {
                break;
            }
        }
        if (e == NULL) {
            break;
        }
        h = e + 2;
    }
    if (method == NULL || d->url == NULL || version == NULL || (host_len != 0 && host == NULL)) {
        na_free(u->m, method);
        na_free(u->m, version);
        na_free(u->m, host);
        return -1;
    }
    for (char *c = host; c != NULL && *c != '\0'; c++) {
        *c = (char)tolower((unsigned char)*c);
    }
    d->url_len = (uint32_t)(sp2 - sp1 - 1);
    *is_request = 1;
    u->st->http_requests++;
    *route = match(u, d->url, d->url_len, host, host_len);
    na_free(u->m, method);
    na_free(u->m, version);
    na_free(u->m, host);
    return 0;
}

static uint32_t desc_check(const desc_t *d)
{
    uint32_t h = na_fnv1a(d->l3, d->l3_len, NA_FNV_BASIS);
    h = na_fnv1a(d->l4, d->l4_len, h);
    return na_fnv1a(d->url, d->url_len, h);
}

static void free_desc(urlsw_t *u, desc_t *d)
{
    na_free(u->m, d->url);
    na_free(u->m, d->l4);
    na_free(u->m, d->l3);
    na_free(u->m, d);
}

static int urlsw_arrive(void *app, const na_packet_t *p)
{
    urlsw_t *u = app;
    desc_t *d = na_alloc(u->m, sizeof *d);
    na_flow_key_t key;
    uint32_t h, route = 0;
    conn_t **slot, *c;
    int is_request = 0;
    if (d == NULL) {
        u->st->dropped++;
        return 0;
    }
    memset(d, 0, sizeof *d);
    /* IP header, or the start of what follows the link header (ARP is 28 bytes) */
    d->l3_len = p->l3_hlen != 0 ? p->l3_hlen : (p->caplen - p->l3_off < 28 ? p->caplen - p->l3_off : 28);
    d->l4_len = p->l4_hlen;
    d->l3 = d->l3_len != 0 ? na_alloc(u->m, d->l3_len) : NULL;
    d->l4 = d->l4_len != 0 ? na_alloc(u->m, d->l4_len) : NULL;
    if ((d->l3_len != 0 && d->l3 == NULL) || (d->l4_len != 0 && d->l4 == NULL) ||
        (p->key.proto == 6 && p->payload_len != 0 && parse_request(u, p, d, &is_request, &route) != 0)) {
        free_desc(u, d);
        u->st->dropped++;
        return 0;
    }
    if (d->l3 != NULL) {
        memcpy(d->l3, p->data + p->l3_off, d->l3_len);
    }
    if (d->l4 != NULL) {
        memcpy(d->l4, p->data + p->l4_off, d->l4_len);
    }
    if (p->key.proto == 6) {
        canonical(p, &key);
        h = na_fnv1a(&key, sizeof key, NA_FNV_BASIS);
        slot = conn_slot(u, &key, h);
        c = *slot;
        if (c == NULL && (is_request || (p->tcp_flags & NA_TCP_SYN) != 0)) {
            c = na_alloc(u->m, sizeof *c);
            if (c != NULL) {
                *c = (conn_t){NULL, key, h, route};
                *slot = c;
                u->st->flows_created++;
                if (++u->nconns > u->st->peak_flows) {
                    u->st->peak_flows = u->nconns;
                }
            }
        }
        if (c != NULL) {
            if (is_request) {
                c->route = route;
            }
            route = c->route;
            if ((p->tcp_flags & (NA_TCP_FIN | NA_TCP_RST)) != 0) {
                *slot = c->next;
                na_free(u->m, c);
                u->nconns--;
                u->st->flows_destroyed++;
            }
        }
    }
    d->wire_len = p->wire_len;
    d->flow_hash = p->flow_hash;
    d->route = route;
    d->check = desc_check(d);
    if (u->tail[route] != NULL) {
        u->tail[route]->next = d;
    } else {
        u->head[route] = d;
    }
    u->tail[route] = d;
    u->st->routes[route]++;
    u->st->enqueued++;
    u->queued_bytes += p->wire_len;
    if (u->queued_bytes > u->st->peak_queued_bytes) {
        u->st->peak_queued_bytes = u->queued_bytes;
    }
    return 1;
}

static int urlsw_depart(void *app, na_departure_t *out)
{
    urlsw_t *u = app;
    for (uint32_t k = 0; k < ROUTES; k++) {
        uint32_t r = (u->rr + k) % ROUTES;
        desc_t *d = u->head[r];
        if (d == NULL) {
            continue;
        }
        u->head[r] = d->next;
        if (u->head[r] == NULL) {
            u->tail[r] = NULL;
        }
        if (desc_check(d) != d->check) {
            u->st->corruptions++;
        }
        out->wire_len = d->wire_len;
        out->flow_hash = d->flow_hash;
        u->queued_bytes -= d->wire_len;
        u->st->departed++;
        free_desc(u, d);
        u->rr = (r + 1) % ROUTES;
        return 1;
    }
    return 0;
}

static void urlsw_destroy(void *app)
{
    urlsw_t *u = app;
    na_departure_t ignored;
    while (urlsw_depart(u, &ignored)) {
    }
    for (uint32_t b = 0; u->conns != NULL && b < CONN_BUCKETS; b++) {
        while (u->conns[b] != NULL) {
            conn_t *c = u->conns[b];
            u->conns[b] = c->next;
            na_free(u->m, c);
            u->st->flows_destroyed++;
        }
    }
    for (size_t i = 0; u->table != NULL && i < NPATTERNS && u->table[i] != NULL; i++) {
        na_free(u->m, u->table[i]->text);
        na_free(u->m, u->table[i]);
    }
    na_free(u->m, u->table);
    na_free(u->m, u->conns);
    free(u);
}

const na_app_t na_app_urlswitch = {
    "url-switch",
    "URL-based switching: pattern table, per-packet header parsing into small allocations",
    urlsw_create,
    urlsw_arrive,
    urlsw_depart,
    urlsw_destroy,
};
