/* SPDX-License-Identifier: MIT */
/*
 * DRR: Deficit Round Robin (Shreedhar and Varghese, 1995), the seed's first
 * case study. One queue per flow (flow = the 5-tuple hash), created when a
 * packet arrives for a flow without one and destroyed when it empties. The
 * active queues are served in round robin: on each visit a queue's deficit
 * grows by the quantum (9 KB = 9216 bytes, as in most Cisco routers) and the
 * queue sends head packets while the head fits in the deficit; an emptied
 * queue is destroyed (its deficit with it), a queue whose head no longer
 * fits keeps its deficit and goes to the back.
 *
 * Memory, as in the seed: each packet is allocated at its size plus 16 bytes
 * of application data. "Its size" is the L4 payload, the size the seed's
 * traces count (an ACK is 0 bytes, an MTU packet 1460: hence its dedicated
 * lists of 16 and 1476 bytes); the 16 bytes hold the queue link, the wire
 * length the deficit counts, the payload length and a checksum of the payload
 * checked when the packet leaves. Flow queues are heap nodes too; the flow
 * hash table is allocated once at start.
 */
#include <stdlib.h>
#include <string.h>

#include "netapp.h"

#define BUCKETS 256u
#define APP_DATA 16u

typedef struct pkt {
    union {
        struct pkt *next;
        uint64_t pad; /* the application data stays 16 bytes on 32-bit hosts too */
    } link;
    uint16_t wire_len;
    uint16_t payload_len;
    uint32_t check;
    uint8_t payload[];
} pkt_t;
_Static_assert(sizeof(pkt_t) == APP_DATA, "DRR's application data is 16 bytes");

typedef struct flow {
    struct flow *bucket_next;
    struct flow *active_next;
    pkt_t *head, *tail;
    uint32_t hash;
    uint32_t deficit;
    uint32_t credited; /* the quantum of the current visit has been added */
    na_flow_key_t key;
} flow_t;

typedef struct drr {
    na_mem_t *m;
    na_app_stats_t *st;
    uint32_t quantum;
    flow_t **table;
    flow_t *active_head, *active_tail;
    uint64_t flows, queued_bytes;
} drr_t;

static void *drr_create(na_mem_t *m, const na_app_cfg_t *cfg, na_app_stats_t *st, char *err,
                        size_t errlen)
{
    drr_t *d = calloc(1, sizeof *d);
    if (d == NULL) {
        snprintf(err, errlen, "out of host memory");
        return NULL;
    }
    d->m = m;
    d->st = st;
    d->quantum = cfg->quantum;
    d->table = na_alloc(m, BUCKETS * sizeof *d->table);
    if (d->table == NULL) {
        snprintf(err, errlen, "%s cannot hold DRR's flow table (%zu bytes)", m->allocator,
                 BUCKETS * sizeof *d->table);
        free(d);
        return NULL;
    }
    memset(d->table, 0, BUCKETS * sizeof *d->table);
    return d;
}

static flow_t **bucket_of(drr_t *d, uint32_t hash) { return &d->table[hash % BUCKETS]; }

static flow_t *find_flow(drr_t *d, const na_packet_t *p)
{
    for (flow_t *f = *bucket_of(d, p->flow_hash); f != NULL; f = f->bucket_next) {
        if (f->hash == p->flow_hash && memcmp(&f->key, &p->key, sizeof f->key) == 0) {
            return f;
        }
    }
    return NULL;
}

static int drr_arrive(void *app, const na_packet_t *p)
{
    drr_t *d = app;
    flow_t *f = find_flow(d, p);
    const uint8_t *payload = p->data + p->payload_off;
    pkt_t *k = na_alloc(d->m, APP_DATA + (size_t)p->payload_len);
    if (k == NULL) {
        d->st->dropped++;
        return 0;
    }
    if (f == NULL) {
        f = na_alloc(d->m, sizeof *f);
        if (f == NULL) {
            na_free(d->m, k);
            d->st->dropped++;
            return 0;
        }
        memset(f, 0, sizeof *f);
        f->hash = p->flow_hash;
        f->key = p->key;
        f->bucket_next = *bucket_of(d, p->flow_hash);
        *bucket_of(d, p->flow_hash) = f;
        if (d->active_tail != NULL) {
            d->active_tail->active_next = f;
        } else {
            d->active_head = f;
        }
        d->active_tail = f;
        d->st->flows_created++;
        if (++d->flows > d->st->peak_flows) {
            d->st->peak_flows = d->flows;
        }
    }
    k->link.pad = 0;
    k->wire_len = (uint16_t)p->wire_len;
    k->payload_len = (uint16_t)p->payload_len;
    memcpy(k->payload, payload, p->payload_len);
    k->check = na_fnv1a(payload, p->payload_len, p->flow_hash);
    if (f->tail != NULL) {
        f->tail->link.next = k;
    } else {
        f->head = k;
    }
    f->tail = k;
    d->st->enqueued++;
    d->queued_bytes += p->wire_len;
    if (d->queued_bytes > d->st->peak_queued_bytes) {
        d->st->peak_queued_bytes = d->queued_bytes;
    }
    return 1;
}

static void destroy_flow(drr_t *d, flow_t *f)
{
    flow_t **b = bucket_of(d, f->hash);
    while (*b != f) {
        b = &(*b)->bucket_next;
    }
    *b = f->bucket_next;
    na_free(d->m, f);
    d->flows--;
    d->st->flows_destroyed++;
}

/* Sends the head of f (it fits its deficit). */
static void send_head(drr_t *d, flow_t *f, na_departure_t *out)
{
    pkt_t *k = f->head;
    f->head = k->link.next;
    if (f->head == NULL) {
        f->tail = NULL;
    }
    f->deficit -= k->wire_len;
    if (na_fnv1a(k->payload, k->payload_len, f->hash) != k->check) {
        d->st->corruptions++;
    }
    out->wire_len = k->wire_len;
    out->flow_hash = f->hash;
    d->queued_bytes -= k->wire_len;
    d->st->departed++;
    na_free(d->m, k);
}

static int drr_depart(void *app, na_departure_t *out)
{
    drr_t *d = app;
    while (d->active_head != NULL) {
        flow_t *f = d->active_head;
        if (!f->credited) {
            f->deficit += d->quantum;
            f->credited = 1;
        }
        if (f->head->wire_len <= f->deficit) {
            send_head(d, f, out);
            if (f->head == NULL) {
                d->active_head = f->active_next;
                if (d->active_head == NULL) {
                    d->active_tail = NULL;
                }
                destroy_flow(d, f);
            }
            return 1;
        }
        /* the head does not fit: the visit ends, the deficit is kept */
        f->credited = 0;
        if (f->active_next != NULL) {
            d->active_head = f->active_next;
            f->active_next = NULL;
            d->active_tail->active_next = f;
            d->active_tail = f;
        }
    }
    return 0;
}

static void drr_destroy(void *app)
{
    drr_t *d = app;
    na_departure_t ignored;
    while (drr_depart(d, &ignored)) {
    }
    na_free(d->m, d->table);
    free(d);
}

const na_app_t na_app_drr = {
    "drr",
    "Deficit Round Robin over per-flow queues (quantum 9216 B), packets at payload + 16 B",
    drr_create,
    drr_arrive,
    drr_depart,
    drr_destroy,
};
