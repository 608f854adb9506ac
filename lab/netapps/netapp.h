/* SPDX-License-Identifier: MIT */
/*
 * hk-netapp: the three network case studies of the custom-dmm-network seed
 * (Section 6) as real applications over any heapkit allocator. This header
 * is the glue they share:
 *
 *   packets   na_packet_t, parsed from the frame bytes (packet.c);
 *   inputs    a pcap file through libpcap, optionally replayed N times with
 *             shifted flows and timestamps, or the seeded synthetic traffic
 *             model (source.c, synth.c), both streamed one packet at a time;
 *   memory    every allocation of an application goes through na_alloc /
 *             na_free (mem.c): a catalog allocator in an arena, exact live
 *             byte accounting and, on request, the .hkb trace of the calls;
 *   apps      drr.c, easyport.c, urlswitch.c behind na_app_t;
 *   driver    main.c: the output link that drains the applications' queues.
 *
 * Hosted C11 + POSIX lab code; deterministic for a given input and options.
 */
#ifndef LAB_NETAPPS_NETAPP_H
#define LAB_NETAPPS_NETAPP_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "heapkit/heapkit.h"

#define NA_ERRLEN 512
#define NA_MAX_FRAME 65535u

/* ---------------------------------------------------------------- packets */

/* The 5-tuple of an IP packet (family 0: not IP, the whole rest is zero). */
typedef struct na_flow_key {
    uint8_t src[16];
    uint8_t dst[16];
    uint16_t sport;
    uint16_t dport;
    uint8_t proto;
    uint8_t family; /* 4, 6 or 0 */
} na_flow_key_t;

typedef struct na_packet {
    uint64_t ts_ns;        /* arrival time */
    const uint8_t *data;   /* the captured frame */
    uint32_t caplen;       /* bytes in data */
    uint32_t wire_len;     /* bytes on the wire (the link and DRR count these) */
    /* Filled in by na_parse. Offsets are into data and within caplen. */
    na_flow_key_t key;
    uint32_t flow_hash;    /* FNV-1a of the key: the flow identity */
    uint32_t l3_off;       /* first byte after the link-layer headers */
    uint32_t l3_hlen;      /* IP header length, 0 when not IP */
    uint32_t l4_off;
    uint32_t l4_hlen;      /* TCP/UDP header length, 0 for other protocols */
    uint32_t payload_off;
    uint32_t payload_len;  /* L4 payload (IP: by its length fields, cut at caplen) */
    uint8_t tcp_flags;
} na_packet_t;

#define NA_TCP_FIN 0x01u
#define NA_TCP_SYN 0x02u
#define NA_TCP_RST 0x04u

/* Link layers understood (source.c maps libpcap's DLT_* values to these). */
typedef enum na_link { NA_LINK_NONE, NA_LINK_ETHERNET, NA_LINK_RAW, NA_LINK_LOOP, NA_LINK_SLL } na_link_t;

/* Parses p->data, framed by link, into the fields above; never fails (unknown -> not IP). */
void na_parse(na_packet_t *p, na_link_t link);

uint32_t na_fnv1a(const void *data, size_t n, uint32_t h);
#define NA_FNV_BASIS 2166136261u

/* ----------------------------------------------------------------- inputs */

typedef struct na_source na_source_t;

typedef struct na_synth_params {
    char shape[32];        /* thin-spikes, fat-spikes, plateau, ramp */
    uint64_t seed;
    uint64_t packets;
    uint32_t flows;        /* concurrent flows */
    uint32_t modes_pct;    /* % of packets at the ACK and MTU modes together */
    uint32_t flow_len;     /* mean packets per flow */
    uint64_t rate;         /* the link rate R the shapes are relative to, bytes/s */
} na_synth_params_t;

/* The shapes, NULL-terminated, and whether name is one. */
extern const char *const na_shapes[];
int na_shape_known(const char *name);

/* Parses "SHAPE[,key=value...]" into p (defaults first); -1 with err set. */
int na_synth_parse(const char *spec, na_synth_params_t *p, char *err, size_t errlen);

/*
 * Opens a pcap file: read whole, validated (one line naming the file in err
 * on failure). The capture is replayed `repeat` times, copy k shifted by
 * k * stagger_ns in time and by k in its IP addresses (so each copy is new
 * flows); stagger_ns 0 picks a quarter of the capture's duration.
 */
na_source_t *na_source_pcap(const char *path, uint32_t repeat, uint64_t stagger_ns, char *err,
                            size_t errlen);
na_source_t *na_source_synth(const na_synth_params_t *p);
/* 1: *p holds the next packet (valid until the next call); 0: end. */
int na_source_next(na_source_t *s, na_packet_t *p);
/* Mean input rate over the whole input (bytes/s); the synthetic model's R. */
uint64_t na_source_rate(const na_source_t *s);
const char *na_source_describe(const na_source_t *s);
void na_source_close(na_source_t *s);

/* Synthetic model internals used by na_source_synth (synth.c). */
typedef struct na_synth na_synth_t;
na_synth_t *na_synth_new(const na_synth_params_t *p);
int na_synth_next(na_synth_t *g, na_packet_t *p);
void na_synth_free(na_synth_t *g);

/* ----------------------------------------------------------------- memory */

typedef struct na_slot {
    uintptr_t key; /* 0: empty */
    uint32_t id;
    uint32_t size;
} na_slot_t;

typedef struct na_mem {
    hk_heap_t *heap;
    void *arena;
    size_t arena_size;
    const char *allocator;
    /* live blocks: pointer -> (trace id, requested size) */
    na_slot_t *map;
    size_t map_mask;
    size_t map_used;
    /* accounting (requested = what the application asked for) */
    uint64_t live_requested, peak_requested;
    uint64_t live_granted, peak_granted;
    uint64_t live_blocks, peak_blocks;
    uint64_t allocs, frees, fails;
    uint64_t small_allocs;   /* requests of NA_SMALL bytes or less */
    uint64_t requested_total;
    uint64_t misuse;         /* frees of pointers not live (an application bug) */
    /* trace */
    FILE *trace;
    char *trace_path, *trace_tmp;
    uint64_t records;
    uint32_t next_id;
    int trace_failed;
} na_mem_t;

#define NA_SMALL 32u

/*
 * Builds allocator `name` from the catalog in a fresh arena of arena_size
 * bytes (64-byte aligned, as the replay engine's); trace_path, when not
 * NULL, receives the .hkb trace (written to a temporary name and renamed by
 * na_mem_close, so a failed run leaves no partial trace). -1 with err set.
 */
int na_mem_open(na_mem_t *m, const char *name, size_t arena_size, const char *trace_path,
                char *err, size_t errlen);
/* Allocation through the allocator; NULL (counted in fails) when it refuses. */
void *na_alloc(na_mem_t *m, size_t size);
void na_free(na_mem_t *m, void *p);
/* Finishes the trace (keep != 0) or removes it; -1 with err set on a write error. */
int na_mem_close(na_mem_t *m, int keep, char *err, size_t errlen);

/* ------------------------------------------------------------------- apps */

/* What the link transmits. */
typedef struct na_departure {
    uint32_t wire_len;
    uint32_t flow_hash;
} na_departure_t;

/* Counters every application fills in (zero where they do not apply). */
typedef struct na_app_stats {
    uint64_t enqueued;
    uint64_t dropped;          /* the allocator refused a buffer, or a ring was full */
    uint64_t departed;
    uint64_t corruptions;      /* content that did not verify on dequeue */
    uint64_t flows_created;
    uint64_t flows_destroyed;
    uint64_t peak_flows;
    uint64_t http_requests;    /* url-switch: request lines parsed */
    uint64_t matched;          /* url-switch: requests that matched a pattern */
    uint64_t routes[16];       /* url-switch: packets per route */
    uint64_t peak_queued_bytes;
} na_app_stats_t;

typedef struct na_app_cfg {
    uint32_t quantum; /* drr */
} na_app_cfg_t;

typedef struct na_app {
    const char *name;
    const char *summary;
    /* Builds the long-lived structures; -1 (err set) when the allocator cannot hold them. */
    void *(*create)(na_mem_t *m, const na_app_cfg_t *cfg, na_app_stats_t *st, char *err,
                    size_t errlen);
    /* 1: queued; 0: dropped. */
    int (*arrive)(void *app, const na_packet_t *p);
    /* Takes the next packet for the link: 1 with *d filled, 0 when nothing is queued. */
    int (*depart)(void *app, na_departure_t *d);
    /* Frees everything still held. */
    void (*destroy)(void *app);
} na_app_t;

extern const na_app_t na_app_drr;
extern const na_app_t na_app_easyport;
extern const na_app_t na_app_urlswitch;

#endif
