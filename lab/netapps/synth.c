/* SPDX-License-Identifier: MIT */
/*
 * The synthetic traffic model: seeded, deterministic, real packet bytes
 * (Ethernet II + IPv4 with a valid header checksum + TCP, HTTP requests).
 *
 * Flows. `flows` TCP connections are open at any time, client 10.x.y.z to
 * one of 16 servers 192.168.0.s port 80. Each packet goes to a uniformly
 * drawn open connection. A connection opens with a SYN, then sends an HTTP
 * request (GET mostly, some HEAD/POST; a URL drawn from templates and a
 * Host line), then carries a geometric number of packets (mean `flowlen`)
 * and closes with a FIN; its slot opens a new connection (new client port).
 *
 * Sizes: the network's bimodal mix. `modes` % of the packets a connection
 * carries between its request and its FIN sit at the two modes (its SYN and
 * FIN are ACK-sized too), half at the ACK mode (client->server pure ACKs, 54-66 B frames:
 * 40-52 B of IP, the TCP options vary) and half at the MTU mode
 * (server->client data, 1500-1514 B frames); the rest is spread evenly over
 * 67-1499 B, mostly server data, one in eight a further request on the
 * connection (its size is that of the request text).
 *
 * Usage shapes (Fig. 3 of the seed): the arrival rate relative to the link
 * rate R, by packet index i, in per mille of R; the link drains at R, so
 * the buffered bytes follow the shape:
 *   thin-spikes  0.5 R, and every 2000 packets a burst of 60 at 6 R:
 *                backlog spikes of ~50 packets that drain at once;
 *   fat-spikes   0.5 R, and every 4000 packets a burst of 1200 at 1.8 R:
 *                wide triangles of ~500 packets;
 *   plateau      every 5000 packets: fill (800 at 2 R), hold (3000 at R:
 *                the backlog stays level), drain (1200 at 0.4 R);
 *   ramp         1.25 R throughout: the backlog grows all along (until the
 *                end of the input, when the driver drains it).
 * Inter-arrival gaps are size / rate scaled by a uniform factor in
 * [0.5, 1.5), so the mean rate is as above.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "netapp.h"

#define SERVERS 16u
#define ETH_HLEN 14u
#define IP_HLEN 20u
#define TCP_HLEN 20u
#define HDRS (ETH_HLEN + IP_HLEN + TCP_HLEN)
#define ACK_MIN 54u
#define ACK_MAX 66u
#define MTU_MIN 1500u
#define MTU_MAX 1514u
#define MID_MIN 67u
#define MID_MAX 1499u
#define REQ_BUF 1200u

const char *const na_shapes[] = {"thin-spikes", "fat-spikes", "plateau", "ramp", NULL};

typedef struct conn {
    uint32_t client;      /* IPv4 address */
    uint16_t cport;
    uint8_t server;
    uint8_t state;        /* 0: SYN next, 1: request next, 2: established */
    uint32_t left;        /* packets before the FIN */
    uint32_t cseq, sseq;
} conn_t;

struct na_synth {
    na_synth_params_t p;
    uint64_t rng;
    uint64_t i;
    uint64_t t_ns;
    uint16_t next_port;
    uint32_t next_client;
    conn_t *conns;
    uint8_t frame[NA_MAX_FRAME];
    uint8_t payload[NA_MAX_FRAME];
};

int na_shape_known(const char *name)
{
    for (size_t i = 0; na_shapes[i] != NULL; i++) {
        if (strcmp(na_shapes[i], name) == 0) {
            return 1;
        }
    }
    return 0;
}

/* splitmix64 */
static uint64_t next_u64(na_synth_t *g)
{
    uint64_t z = (g->rng += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* Uniform in [0, n). */
static uint32_t below(na_synth_t *g, uint32_t n) { return (uint32_t)(next_u64(g) % n); }

static uint32_t between(na_synth_t *g, uint32_t lo, uint32_t hi) { return lo + below(g, hi - lo + 1); }

/* Arrival rate at packet i in per mille of R. */
static uint32_t shape_permille(const char *shape, uint64_t i)
{
    if (strcmp(shape, "thin-spikes") == 0) {
        return i % 2000u >= 1000u && i % 2000u < 1060u ? 6000u : 500u;
    }
    if (strcmp(shape, "fat-spikes") == 0) {
        return i % 4000u >= 1000u && i % 4000u < 2200u ? 1800u : 500u;
    }
    if (strcmp(shape, "plateau") == 0) {
        uint64_t k = i % 5000u;
        return k < 800u ? 2000u : k < 3800u ? 1000u : 400u;
    }
    return 1250u; /* ramp */
}

static void open_conn(na_synth_t *g, conn_t *c)
{
    c->client = (10u << 24) | (g->next_client++ & 0xFFFFFFu);
    c->cport = g->next_port;
    g->next_port = (uint16_t)(g->next_port == 65535u ? 1024u : g->next_port + 1u);
    c->server = (uint8_t)below(g, SERVERS);
    c->state = 0;
    /* geometric with mean flow_len, at least 2 */
    c->left = 2;
    while (below(g, g->p.flow_len) != 0 && c->left < 100000u) {
        c->left++;
    }
    c->cseq = (uint32_t)next_u64(g);
    c->sseq = (uint32_t)next_u64(g);
}

na_synth_t *na_synth_new(const na_synth_params_t *p)
{
    na_synth_t *g = calloc(1, sizeof *g);
    if (g == NULL) {
        return NULL;
    }
    g->p = *p;
    g->rng = p->seed;
    g->next_port = 1024;
    g->next_client = 1;
    g->conns = calloc(p->flows, sizeof *g->conns);
    if (g->conns == NULL) {
        free(g);
        return NULL;
    }
    for (uint32_t i = 0; i < p->flows; i++) {
        open_conn(g, &g->conns[i]);
    }
    return g;
}

void na_synth_free(na_synth_t *g)
{
    if (g != NULL) {
        free(g->conns);
        free(g);
    }
}

static void put16(uint8_t *b, uint32_t v)
{
    b[0] = (uint8_t)(v >> 8);
    b[1] = (uint8_t)v;
}

static void put32(uint8_t *b, uint32_t v)
{
    put16(b, v >> 16);
    put16(b + 2, v & 0xFFFFu);
}

static uint16_t ip_checksum(const uint8_t *h)
{
    uint32_t sum = 0;
    for (unsigned i = 0; i < IP_HLEN; i += 2) {
        sum += ((uint32_t)h[i] << 8) | h[i + 1];
    }
    while (sum >> 16) {
        sum = (sum & 0xFFFFu) + (sum >> 16);
    }
    return (uint16_t)~sum;
}

static const char *const hosts[] = {
    "www.example.com", "images.example.com", "cdn.video.net", "api.shop.org",
    "news.site.info", "static.cdn.net", "mail.example.org", "search.engine.com",
    "www.university.edu", "downloads.mirror.org", "maps.service.io", "m.social.net",
};

/* A request line and headers for connection c into buf; its length. */
static uint32_t http_request(na_synth_t *g, char *buf)
{
    char url[300];
    uint32_t n = below(g, 100000u);
    const char *method = below(g, 20u) == 0 ? "HEAD" : below(g, 12u) == 0 ? "POST" : "GET";
    const char *host = hosts[below(g, sizeof hosts / sizeof hosts[0])];
    switch (below(g, 10u)) {
    case 0: snprintf(url, sizeof url, "/index.html"); break;
    case 1: snprintf(url, sizeof url, "/images/p%u.jpg", n); break;
    case 2: snprintf(url, sizeof url, "/images/icons/i%u.gif", n % 500u); break;
    case 3: snprintf(url, sizeof url, "/video/seg-%u.ts", n); break;
    case 4: snprintf(url, sizeof url, "/api/v1/items?id=%u&page=%u", n, n % 17u); break;
    case 5: snprintf(url, sizeof url, "/static/css/site%u.css", n % 40u); break;
    case 6: snprintf(url, sizeof url, "/static/js/app.%x.js", n); break;
    case 7: snprintf(url, sizeof url, "/cgi-bin/query?q=%x%x", n, (uint32_t)next_u64(g)); break;
    case 8: snprintf(url, sizeof url, "/download/file%u.tar.gz", n % 1000u); break;
    default: snprintf(url, sizeof url, "/"); break;
    }
    return (uint32_t)snprintf(buf, REQ_BUF,
                              "%s %s HTTP/1.1\r\nHost: %s\r\nUser-Agent: hk-netapp/1.0\r\n"
                              "Accept: */*\r\n\r\n",
                              method, url, host);
}

/* Writes the frame: Ethernet, IPv4, TCP with opt bytes of options, payload. */
static uint32_t build(na_synth_t *g, const conn_t *c, int to_server, uint8_t flags, uint32_t opt,
                      const uint8_t *payload, uint32_t plen)
{
    uint8_t *f = g->frame, *ip = f + ETH_HLEN, *tcp = ip + IP_HLEN;
    uint32_t cli = c->client, srv = (192u << 24) | (168u << 16) | (1u + c->server);
    uint32_t tcp_len = TCP_HLEN + opt, ip_len = IP_HLEN + tcp_len + plen;
    memset(f, 0, HDRS + opt);
    f[0] = 0x02, f[5] = to_server ? 1 : 2;   /* locally administered MACs */
    f[6] = 0x02, f[11] = to_server ? 2 : 1;
    put16(f + 12, 0x0800);
    ip[0] = 0x45;
    put16(ip + 2, ip_len);
    put16(ip + 4, (uint32_t)g->i);
    ip[6] = 0x40; /* DF */
    ip[8] = 64;
    ip[9] = 6;
    put32(ip + 12, to_server ? cli : srv);
    put32(ip + 16, to_server ? srv : cli);
    put16(ip + 10, ip_checksum(ip));
    put16(tcp, to_server ? c->cport : 80u);
    put16(tcp + 2, to_server ? 80u : c->cport);
    put32(tcp + 4, to_server ? c->cseq : c->sseq);
    put32(tcp + 8, to_server ? c->sseq : c->cseq);
    tcp[12] = (uint8_t)((tcp_len / 4u) << 4);
    tcp[13] = flags;
    put16(tcp + 14, 65535u);
    for (uint32_t k = 0; k < opt; k++) {
        tcp[TCP_HLEN + k] = 1; /* NOP */
    }
    if (plen != 0) {
        memcpy(tcp + tcp_len, payload, plen);
    }
    return ETH_HLEN + ip_len;
}

/* Deterministic filler for server data: the stream's sequence numbers spelled out. */
static void fill_data(uint8_t *b, uint32_t n, uint32_t seq)
{
    for (uint32_t k = 0; k < n; k++) {
        b[k] = (uint8_t)((seq + k) * 2654435761u >> 24);
    }
}

int na_synth_next(na_synth_t *g, na_packet_t *p)
{
    uint8_t *payload = g->payload;
    conn_t *c;
    uint32_t len, r;
    uint64_t gap;
    if (g->i == g->p.packets) {
        return 0;
    }
    c = &g->conns[below(g, g->p.flows)];
    if (c->state == 0) {
        len = build(g, c, 1, 0x02, 12, NULL, 0);
        c->state = 1;
        c->cseq++;
    } else if (c->state == 1) {
        uint32_t n = http_request(g, (char *)payload);
        len = build(g, c, 1, 0x18, 0, payload, n);
        c->state = 2;
        c->cseq += n;
    } else if (c->left == 0) {
        len = build(g, c, 1, 0x11, 0, NULL, 0);
        open_conn(g, c);
    } else {
        c->left--;
        r = below(g, 200u);
        if (r < g->p.modes_pct) {
            len = build(g, c, 1, 0x10, between(g, 0, 3) * 4u, NULL, 0);
        } else if (r < 2u * g->p.modes_pct) {
            uint32_t n = between(g, MTU_MIN, MTU_MAX) - HDRS;
            fill_data(payload, n, c->sseq);
            len = build(g, c, 0, 0x10, 0, payload, n);
            c->sseq += n;
        } else if (below(g, 8u) == 0) {
            uint32_t n = http_request(g, (char *)payload);
            len = build(g, c, 1, 0x18, 0, payload, n);
            c->cseq += n;
        } else {
            uint32_t n = between(g, MID_MIN, MID_MAX) - HDRS;
            fill_data(payload, n, c->sseq);
            len = build(g, c, 0, 0x18, 0, payload, n);
            c->sseq += n;
        }
    }
    /* gap = len / (R * shape) seconds, times a factor in [0.5, 1.5) */
    gap = (uint64_t)len * 1000000000u / g->p.rate * 1000u / shape_permille(g->p.shape, g->i);
    gap = gap / 2u + gap * below(g, 1024u) / 1024u;
    g->t_ns += gap;
    g->i++;
    memset(p, 0, sizeof *p);
    p->ts_ns = g->t_ns;
    p->data = g->frame;
    p->caplen = p->wire_len = len;
    na_parse(p, NA_LINK_ETHERNET);
    return 1;
}

int na_synth_parse(const char *spec, na_synth_params_t *p, char *err, size_t errlen)
{
    char buf[512], *save = NULL, *tok;
    memset(p, 0, sizeof *p);
    p->seed = 1;
    p->packets = 20000;
    p->flows = 32;
    p->modes_pct = 50;
    p->flow_len = 40;
    p->rate = 12500000; /* 100 Mbit/s */
    if (strlen(spec) >= sizeof buf) {
        snprintf(err, errlen, "--synthetic: specification too long");
        return -1;
    }
    strcpy(buf, spec);
    tok = strtok_r(buf, ",", &save);
    if (tok == NULL || !na_shape_known(tok)) {
        snprintf(err, errlen, "--synthetic: unknown shape '%s' (thin-spikes, fat-spikes, plateau, ramp)",
                 tok != NULL ? tok : "");
        return -1;
    }
    snprintf(p->shape, sizeof p->shape, "%s", tok);
    while ((tok = strtok_r(NULL, ",", &save)) != NULL) {
        char *eq = strchr(tok, '='), *end;
        unsigned long long v;
        if (eq == NULL) {
            snprintf(err, errlen, "--synthetic: expected KEY=VALUE, got '%s'", tok);
            return -1;
        }
        *eq = '\0';
        if (eq[1] < '0' || eq[1] > '9') {
            snprintf(err, errlen, "--synthetic: %s: not a number: '%s'", tok, eq + 1);
            return -1;
        }
        v = strtoull(eq + 1, &end, 10);
        if (*end != '\0') {
            snprintf(err, errlen, "--synthetic: %s: not a number: '%s'", tok, eq + 1);
            return -1;
        }
        if (strcmp(tok, "seed") == 0) {
            p->seed = v;
        } else if (strcmp(tok, "packets") == 0 && v >= 1 && v <= 100000000ull) {
            p->packets = v;
        } else if (strcmp(tok, "flows") == 0 && v >= 1 && v <= 1000000ull) {
            p->flows = (uint32_t)v;
        } else if (strcmp(tok, "modes") == 0 && v <= 100) {
            p->modes_pct = (uint32_t)v;
        } else if (strcmp(tok, "flowlen") == 0 && v >= 2 && v <= 100000ull) {
            p->flow_len = (uint32_t)v;
        } else if (strcmp(tok, "rate") == 0 && v >= 1000 && v <= 1000000000000ull) {
            p->rate = v;
        } else if (strcmp(tok, "seed") != 0 && strcmp(tok, "packets") != 0 && strcmp(tok, "flows") != 0 &&
                   strcmp(tok, "modes") != 0 && strcmp(tok, "flowlen") != 0 && strcmp(tok, "rate") != 0) {
            snprintf(err, errlen,
                     "--synthetic: unknown key '%s' (seed, packets, flows, modes, flowlen, rate)", tok);
            return -1;
        } else {
            snprintf(err, errlen,
                     "--synthetic: %s=%llu out of range (packets 1-1e8, flows 1-1e6, modes 0-100, "
                     "flowlen 2-1e5, rate 1000-1e12)",
                     tok, v);
            return -1;
        }
    }
    return 0;
}
