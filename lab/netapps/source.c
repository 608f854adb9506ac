/* SPDX-License-Identifier: MIT */
/*
 * Inputs: a pcap file read whole through libpcap, or the synthetic model
 * (synth.c), both handed to the driver one packet at a time.
 *
 * Replaying a capture N times (--repeat): the real captures at hand are tens
 * of packets, so a workload worth exploring is built from N copies of one.
 * Copy k is the capture with every timestamp moved by k * stagger and the
 * 16-bit value at bytes 1-2 of each IPv4 address (bytes 4-5 of an IPv6 one)
 * raised by k, both directions alike, so every copy is a new set of flows
 * with the capture's own sizes, payloads and timing. With the default
 * stagger (a quarter of the capture's duration) about four copies overlap
 * at any time. The copies are merged by timestamp (ties: lower copy, then
 * capture order). IP checksums are left as captured: nothing verifies them.
 * A packet cut at the capture's snaplen is handed over at its wire length,
 * the bytes not captured as zeros (the applications allocate what arrived).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pcap/pcap.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "netapp.h"

typedef struct cap_pkt {
    uint64_t ts_ns;
    uint32_t caplen;
    uint32_t wire_len;
    size_t off; /* into bytes */
} cap_pkt_t;

typedef struct order {
    uint64_t ts_ns;
    uint32_t copy;
    uint32_t idx;
} order_t;

struct na_source {
    int synthetic;
    char describe[600];
    /* pcap */
    na_link_t link;
    cap_pkt_t *pkts;
    uint32_t npkts;
    uint8_t *bytes;
    order_t *order;
    uint64_t total, next;
    uint64_t rate;
    uint8_t scratch[NA_MAX_FRAME];
    /* synthetic */
    na_synth_t *synth;
    na_synth_params_t params;
};

/* libpcap's link type as ours (NONE: not supported). */
static na_link_t link_of(int dlt)
{
    switch (dlt) {
    case DLT_EN10MB: return NA_LINK_ETHERNET;
    case DLT_RAW:
#ifdef DLT_IPV4
    case DLT_IPV4:
    case DLT_IPV6:
#endif
        return NA_LINK_RAW;
    case DLT_NULL:
    case DLT_LOOP: return NA_LINK_LOOP;
    case DLT_LINUX_SLL: return NA_LINK_SLL;
    default: return NA_LINK_NONE;
    }
}

static int cmp_order(const void *a, const void *b)
{
    const order_t *x = a, *y = b;
    if (x->ts_ns != y->ts_ns) {
        return x->ts_ns < y->ts_ns ? -1 : 1;
    }
    if (x->copy != y->copy) {
        return x->copy < y->copy ? -1 : 1;
    }
    return x->idx < y->idx ? -1 : x->idx > y->idx;
}

static void source_fail(na_source_t *s)
{
    if (s != NULL) {
        free(s->pkts);
        free(s->bytes);
        free(s->order);
        free(s);
    }
}

/* Reads every packet of the open capture into s; -1 with err set. */
static int read_all(na_source_t *s, pcap_t *pc, const char *path, char *err, size_t errlen)
{
    size_t cap_pkts = 0, cap_bytes = 0, used = 0;
    struct pcap_pkthdr *h;
    const u_char *data;
    int rc;
    while ((rc = pcap_next_ex(pc, &h, &data)) == 1) {
        if (s->npkts == cap_pkts) {
            cap_pkts = cap_pkts != 0 ? cap_pkts * 2 : 256;
            cap_pkt_t *grown = realloc(s->pkts, cap_pkts * sizeof *grown);
            if (grown == NULL) {
                snprintf(err, errlen, "%s: out of host memory", path);
                return -1;
            }
            s->pkts = grown;
        }
        if (h->len > NA_MAX_FRAME || h->caplen > h->len) {
            snprintf(err, errlen,
                     "%s: packet %u: captured length %u with wire length %u (at most %u, not below the "
                     "captured one)",
                     path, s->npkts + 1, h->caplen, h->len, NA_MAX_FRAME);
            return -1;
        }
        if (used + h->caplen > cap_bytes) {
            cap_bytes = cap_bytes != 0 ? cap_bytes * 2 : 65536;
            while (used + h->caplen > cap_bytes) {
                cap_bytes *= 2;
            }
            uint8_t *grown = realloc(s->bytes, cap_bytes);
            if (grown == NULL) {
                snprintf(err, errlen, "%s: out of host memory", path);
                return -1;
            }
            s->bytes = grown;
        }
        memcpy(s->bytes + used, data, h->caplen);
        s->pkts[s->npkts] = (cap_pkt_t){(uint64_t)h->ts.tv_sec * 1000000000u + (uint64_t)h->ts.tv_usec,
                                        h->caplen, h->len, used};
        used += h->caplen;
        s->npkts++;
    }
    if (rc == PCAP_ERROR) {
        snprintf(err, errlen, "%s: malformed capture after %u packets: %s", path, s->npkts,
                 pcap_geterr(pc));
        return -1;
    }
    if (s->npkts == 0) {
        snprintf(err, errlen, "%s: the capture holds no packet", path);
        return -1;
    }
    return 0;
}

na_source_t *na_source_pcap(const char *path, uint32_t repeat, uint64_t stagger_ns, char *err,
                            size_t errlen)
{
    char perr[PCAP_ERRBUF_SIZE] = "";
    na_source_t *s = calloc(1, sizeof *s);
    pcap_t *pc;
    uint64_t t0, duration, bytes = 0, span;
    FILE *f;
    if (s == NULL) {
        snprintf(err, errlen, "out of host memory");
        return NULL;
    }
    /* fopen first, so a missing file gets the system's reason, not libpcap's wording */
    f = fopen(path, "rb");
    if (f == NULL) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        source_fail(s);
        return NULL;
    }
    pc = pcap_fopen_offline_with_tstamp_precision(f, PCAP_TSTAMP_PRECISION_NANO, perr);
    if (pc == NULL) {
        fclose(f);
        snprintf(err, errlen, "%s: not a readable pcap file: %s", path, perr);
        source_fail(s);
        return NULL;
    }
    s->link = link_of(pcap_datalink(pc));
    if (s->link == NA_LINK_NONE) {
        int dlt = pcap_datalink(pc);
        snprintf(err, errlen,
                 "%s: link type %d (%s) is not supported (Ethernet, raw IP, loopback, Linux cooked)",
                 path, dlt, pcap_datalink_val_to_name(dlt) != NULL ? pcap_datalink_val_to_name(dlt) : "?");
        pcap_close(pc);
        source_fail(s);
        return NULL;
    }
    if (read_all(s, pc, path, err, errlen) != 0) {
        pcap_close(pc);
        source_fail(s);
        return NULL;
    }
    pcap_close(pc);

    t0 = s->pkts[0].ts_ns;
    duration = 0;
    for (uint32_t i = 0; i < s->npkts; i++) {
        if (s->pkts[i].ts_ns < t0) {
            t0 = s->pkts[i].ts_ns;
        }
    }
    for (uint32_t i = 0; i < s->npkts; i++) {
        s->pkts[i].ts_ns -= t0;
        if (s->pkts[i].ts_ns > duration) {
            duration = s->pkts[i].ts_ns;
        }
        bytes += s->pkts[i].wire_len;
    }
    if (stagger_ns == 0) {
        stagger_ns = duration / 4 != 0 ? duration / 4 : 1000000u;
    }
    s->total = (uint64_t)s->npkts * repeat;
    s->order = malloc(s->total * sizeof *s->order);
    if (s->order == NULL) {
        snprintf(err, errlen, "%s: out of host memory for %u copies", path, repeat);
        source_fail(s);
        return NULL;
    }
    for (uint32_t k = 0; k < repeat; k++) {
        for (uint32_t i = 0; i < s->npkts; i++) {
            s->order[(uint64_t)k * s->npkts + i] =
                (order_t){s->pkts[i].ts_ns + (uint64_t)k * stagger_ns, k, i};
        }
    }
    qsort(s->order, s->total, sizeof *s->order, cmp_order);
    span = s->order[s->total - 1].ts_ns;
    bytes *= repeat;
    /* the mean input rate; a capture of one instant counts as one second */
    s->rate = span != 0 ? (uint64_t)((double)bytes * 1e9 / (double)span) : bytes;
    if (s->rate == 0) {
        s->rate = 1;
    }
    snprintf(s->describe, sizeof s->describe, "pcap %s x%u (stagger %llu us)", path, repeat,
             (unsigned long long)(repeat > 1 ? stagger_ns / 1000u : 0));
    return s;
}

na_source_t *na_source_synth(const na_synth_params_t *p)
{
    na_source_t *s = calloc(1, sizeof *s);
    if (s == NULL) {
        return NULL;
    }
    s->synthetic = 1;
    s->params = *p;
    s->synth = na_synth_new(p);
    if (s->synth == NULL) {
        free(s);
        return NULL;
    }
    s->total = p->packets;
    s->rate = p->rate;
    snprintf(s->describe, sizeof s->describe,
             "synthetic %s seed=%llu packets=%llu flows=%u modes=%u flowlen=%u rate=%llu", p->shape,
             (unsigned long long)p->seed, (unsigned long long)p->packets, p->flows, p->modes_pct,
             p->flow_len, (unsigned long long)p->rate);
    return s;
}

/* Raises the 16-bit big-endian value at b by k. */
static void shift16(uint8_t *b, uint32_t k)
{
    uint32_t v = (((uint32_t)b[0] << 8) | b[1]) + k;
    b[0] = (uint8_t)(v >> 8);
    b[1] = (uint8_t)v;
}

int na_source_next(na_source_t *s, na_packet_t *p)
{
    const order_t *o;
    const cap_pkt_t *c;
    if (s->synthetic) {
        return na_synth_next(s->synth, p);
    }
    if (s->next == s->total) {
        return 0;
    }
    o = &s->order[s->next++];
    c = &s->pkts[o->idx];
    memset(p, 0, sizeof *p);
    p->ts_ns = o->ts_ns;
    p->caplen = c->caplen;
    p->wire_len = c->wire_len;
    p->data = s->bytes + c->off;
    if (c->caplen < c->wire_len) {
        /* A capture cut at its snaplen: the application received the whole frame, so it
         * gets the wire length, the bytes the capture did not keep reading as zeros. */
        memcpy(s->scratch, p->data, c->caplen);
        memset(s->scratch + c->caplen, 0, c->wire_len - c->caplen);
        p->data = s->scratch;
        p->caplen = c->wire_len;
    }
    na_parse(p, s->link);
    if (o->copy != 0 && p->key.family != 0) {
        uint32_t a = p->key.family == 4 ? 1u : 4u, src = p->key.family == 4 ? 12u : 8u,
                 dst = p->key.family == 4 ? 16u : 24u;
        if (p->data != s->scratch) {
            memcpy(s->scratch, p->data, p->caplen);
        }
        shift16(s->scratch + p->l3_off + src + a, o->copy);
        shift16(s->scratch + p->l3_off + dst + a, o->copy);
        p->data = s->scratch;
        na_parse(p, s->link);
    }
    return 1;
}

uint64_t na_source_rate(const na_source_t *s) { return s->rate; }

const char *na_source_describe(const na_source_t *s) { return s->describe; }

void na_source_close(na_source_t *s)
{
    if (s != NULL) {
        na_synth_free(s->synth);
        source_fail(s);
    }
}
