/* SPDX-License-Identifier: MIT */
/*
 * easyport: the seed's second case study, Infineon's Easyport buffering.
 * Every frame received from the Ethernet side is allocated at its captured
 * size (hence the seed's dedicated lists of 66 and 1514 bytes, the ACK and
 * MTU frames), copied in, and forwarded in FIFO order when the output link
 * takes it. Descriptors sit in a ring like a NIC's (host memory, not the
 * application's heap); a full ring drops the frame. A frame's checksum is
 * kept in its descriptor and checked when it leaves.
 */
#include <stdlib.h>
#include <string.h>

#include "netapp.h"

#define RING 65536u

typedef struct desc {
    uint8_t *frame;
    uint32_t len;
    uint32_t wire_len;
    uint32_t check;
    uint32_t flow_hash;
} desc_t;

typedef struct easyport {
    na_mem_t *m;
    na_app_stats_t *st;
    desc_t *ring;
    uint32_t head, count;
    uint64_t queued_bytes;
} easyport_t;

static void *ep_create(na_mem_t *m, const na_app_cfg_t *cfg, na_app_stats_t *st, char *err,
                       size_t errlen)
{
    easyport_t *e = calloc(1, sizeof *e);
    (void)cfg;
    if (e == NULL || (e->ring = calloc(RING, sizeof *e->ring)) == NULL) {
        free(e);
        snprintf(err, errlen, "out of host memory");
        return NULL;
    }
    e->m = m;
    e->st = st;
    return e;
}

static int ep_arrive(void *app, const na_packet_t *p)
{
    easyport_t *e = app;
    desc_t *d;
    uint8_t *buf;
    if (e->count == RING) {
        e->st->dropped++;
        return 0;
    }
    buf = na_alloc(e->m, p->caplen);
    if (buf == NULL) {
        e->st->dropped++;
        return 0;
    }
    memcpy(buf, p->data, p->caplen);
    d = &e->ring[(e->head + e->count) % RING];
    *d = (desc_t){buf, p->caplen, p->wire_len, na_fnv1a(p->data, p->caplen, NA_FNV_BASIS), p->flow_hash};
    e->count++;
    e->st->enqueued++;
    e->queued_bytes += p->wire_len;
    if (e->queued_bytes > e->st->peak_queued_bytes) {
        e->st->peak_queued_bytes = e->queued_bytes;
    }
    return 1;
}

static int ep_depart(void *app, na_departure_t *out)
{
    easyport_t *e = app;
    desc_t *d;
    if (e->count == 0) {
        return 0;
    }
    d = &e->ring[e->head];
    if (na_fnv1a(d->frame, d->len, NA_FNV_BASIS) != d->check) {
        e->st->corruptions++;
    }
    out->wire_len = d->wire_len;
    out->flow_hash = d->flow_hash;
    na_free(e->m, d->frame);
    e->head = (e->head + 1) % RING;
    e->count--;
    e->queued_bytes -= d->wire_len;
    e->st->departed++;
    return 1;
}

static void ep_destroy(void *app)
{
    easyport_t *e = app;
    na_departure_t ignored;
    while (ep_depart(e, &ignored)) {
    }
    free(e->ring);
    free(e);
}

const na_app_t na_app_easyport = {
    "easyport",
    "FIFO buffering of whole frames before forwarding",
    ep_create,
    ep_arrive,
    ep_depart,
    ep_destroy,
};
