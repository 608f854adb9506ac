/* SPDX-License-Identifier: MIT */
/*
 * hk-netapp: run one of the seed's network case studies on a packet capture
 * or on the synthetic traffic model, against any heapkit catalog allocator,
 * and print what happened (or emit the run's allocation trace).
 *
 *   hk-netapp APP (--pcap FILE [--repeat N] [--stagger US] | --synthetic SHAPE[,KEY=VALUE...])
 *             [--allocator NAME] [--arena BYTES] [--rate BYTES_PER_S | --load PCT] [--quantum BYTES]
 *             [--emit-trace OUT.hkb] [--departures FILE] [--json FILE|-] [--progress]
 *   hk-netapp --list
 *
 * The driver. Packets arrive at their timestamps; one output link drains
 * the application's queues at --rate bytes per second, by default the
 * input's mean rate x 100 / --load (default 100: buffers build up in the
 * input's bursts and drain in its lulls); for the synthetic model the mean
 * rate is its link rate R, which its shapes are drawn against. Before each
 * arrival the link takes every packet whose transmission starts before
 * that instant, each occupying it for wire_len / rate. When the input ends
 * the link drains the rest, then the application frees what it still
 * holds, so a trace ends with nothing live. Nothing depends on the clock
 * or on addresses: the same input and options give the same output, byte
 * for byte.
 *
 * --progress writes "hk-netapp: progress N" on stderr every PROGRESS_STEP
 * packets and at the end, N the packets read so far (the lab's progress bar).
 *
 * Exit status: 0 done (drops, allocation failures and corruptions are
 * results), 2 bad arguments or input (one line on stderr naming it), 1 an
 * output could not be written.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "heapkit/catalog.h"
#include "netapp.h"

#define DEFAULT_ARENA ((uint64_t)64 << 20)
#define DEFAULT_QUANTUM 9216u
#define MAX_REPEAT 100000u
#define DEFAULT_LOAD 100u /* % of the link the input's mean rate takes */
#define PROGRESS_STEP 65536u

static const na_app_t *const apps[] = {&na_app_drr, &na_app_easyport, &na_app_urlswitch};
#define NAPPS (sizeof apps / sizeof apps[0])

static const char usage[] =
    "usage: hk-netapp APP (--pcap FILE [--repeat N] [--stagger US] | --synthetic SHAPE[,KEY=VALUE...])\n"
    "                 [--allocator NAME] [--arena BYTES] [--rate BYTES_PER_S | --load PCT] [--quantum BYTES]\n"
    "                 [--emit-trace OUT.hkb] [--departures FILE] [--json FILE|-] [--progress]\n"
    "       hk-netapp --list\n"
    "APP: drr, easyport, url-switch. SHAPE: thin-spikes, fat-spikes, plateau, ramp;\n"
    "KEY: seed, packets, flows, modes (%% at the ACK/MTU modes), flowlen, rate (bytes/s).\n";

static void die(int code, const char *fmt, ...)
{
    va_list ap;
    fputs("hk-netapp: ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    exit(code);
}

/* Decimal with an optional K, M or G (binary) suffix, in [lo, hi]. */
static uint64_t parse_num(const char *opt, const char *s, uint64_t lo, uint64_t hi, int suffix)
{
    char *end;
    unsigned long long v;
    uint64_t mult = 1;
    errno = 0;
    v = strtoull(s, &end, 10);
    if (end == s || errno != 0 || *s == '-' || *s == '+' || *s == ' ') {
        die(2, "%s: not a number: '%s'", opt, s);
    }
    if (suffix && (*end == 'K' || *end == 'k')) {
        mult = 1024, end++;
    } else if (suffix && (*end == 'M' || *end == 'm')) {
        mult = 1024 * 1024, end++;
    } else if (suffix && (*end == 'G' || *end == 'g')) {
        mult = 1024 * 1024 * 1024, end++;
    }
    if (*end != '\0') {
        die(2, "%s: not a number: '%s'", opt, s);
    }
    if (v > UINT64_MAX / mult || v * mult < lo || v * mult > hi) {
        die(2, "%s: %s is out of range (%" PRIu64 " to %" PRIu64 ")", opt, s, lo, hi);
    }
    return (uint64_t)v * mult;
}

typedef struct run {
    const na_app_t *app;
    na_app_cfg_t cfg;
    na_app_stats_t st;
    na_mem_t mem;
    uint64_t rate;
    uint64_t packets, bytes, payload_bytes;
    uint64_t link_free; /* ns: when the link can start the next packet */
    uint64_t queued;    /* packets in the application */
    FILE *departures;
    void *state;
    int progress;
} run_t;

static uint64_t tx_ns(const run_t *r, uint32_t len)
{
    return ((uint64_t)len * 1000000000u + r->rate - 1) / r->rate;
}

/* The link takes every packet it can start before time t. */
static void drain(run_t *r, uint64_t t)
{
    na_departure_t d;
    while (r->queued > 0 && r->link_free <= t && r->app->depart(r->state, &d)) {
        if (r->departures != NULL) {
            fprintf(r->departures, "%" PRIu64 " %08" PRIx32 " %" PRIu32 "\n", r->link_free, d.flow_hash,
                    d.wire_len);
        }
        r->queued--;
        r->link_free += tx_ns(r, d.wire_len);
    }
}

static void run_input(run_t *r, na_source_t *src)
{
    na_packet_t p;
    while (na_source_next(src, &p)) {
        drain(r, p.ts_ns);
        if (r->queued == 0 && r->link_free < p.ts_ns) {
            r->link_free = p.ts_ns; /* the link was idle */
        }
        if (r->app->arrive(r->state, &p)) {
            r->queued++;
        }
        r->packets++;
        r->bytes += p.wire_len;
        r->payload_bytes += p.payload_len;
        if (r->progress && r->packets % PROGRESS_STEP == 0) {
            fprintf(stderr, "hk-netapp: progress %" PRIu64 "\n", r->packets);
        }
    }
    drain(r, UINT64_MAX);
    if (r->progress) {
        fprintf(stderr, "hk-netapp: progress %" PRIu64 "\n", r->packets);
    }
}

typedef struct out {
    FILE *f;
    int json;
    int first;
} out_t;

static void put_u(out_t *o, const char *key, uint64_t v)
{
    if (o->json) {
        fprintf(o->f, "%s\n  \"%s\": %" PRIu64, o->first ? "" : ",", key, v);
    } else {
        fprintf(o->f, "%-22s %" PRIu64 "\n", key, v);
    }
    o->first = 0;
}

static void put_i(out_t *o, const char *key, int64_t v)
{
    if (o->json) {
        fprintf(o->f, "%s\n  \"%s\": %" PRId64, o->first ? "" : ",", key, v);
    } else {
        fprintf(o->f, "%-22s %" PRId64 "\n", key, v);
    }
    o->first = 0;
}

static void put_s(out_t *o, const char *key, const char *v)
{
    if (o->json) {
        fprintf(o->f, "%s\n  \"%s\": \"", o->first ? "" : ",", key);
        for (const char *c = v; c != NULL && *c != '\0'; c++) {
            if (*c == '"' || *c == '\\') {
                fprintf(o->f, "\\%c", *c);
            } else if ((unsigned char)*c < 0x20) {
                fprintf(o->f, "\\u%04x", (unsigned)(unsigned char)*c);
            } else {
                fputc(*c, o->f);
            }
        }
        fputc('"', o->f);
    } else {
        fprintf(o->f, "%-22s %s\n", key, v != NULL ? v : "-");
    }
    o->first = 0;
}

/* n counters: a JSON array, or one line of numbers. */
static void put_list(out_t *o, const char *key, const uint64_t *v, unsigned n)
{
    if (o->json) {
        fprintf(o->f, "%s\n  \"%s\": [", o->first ? "" : ",", key);
    } else {
        fprintf(o->f, "%-22s", key);
    }
    for (unsigned i = 0; i < n; i++) {
        fprintf(o->f, "%s%" PRIu64, !o->json ? " " : i != 0 ? ", " : "", v[i]);
    }
    fputs(o->json ? "]" : "\n", o->f);
    o->first = 0;
}

static void report(out_t *o, const run_t *r, const char *input, const hk_stats_t *hs, int check,
                   const char *trace, uint64_t trace_records)
{
    if (o->json) {
        fputc('{', o->f);
    }
    put_s(o, "app", r->app->name);
    put_s(o, "input", input);
    put_s(o, "allocator", r->mem.allocator);
    put_u(o, "arena", r->mem.arena_size);
    put_u(o, "rate", r->rate);
    put_u(o, "quantum", r->app == &na_app_drr ? r->cfg.quantum : 0);
    put_u(o, "packets", r->packets);
    put_u(o, "bytes", r->bytes);
    put_u(o, "payload_bytes", r->payload_bytes);
    put_u(o, "enqueued", r->st.enqueued);
    put_u(o, "drops", r->st.dropped);
    put_u(o, "departed", r->st.departed);
    put_u(o, "corruptions", r->st.corruptions);
    put_u(o, "peak_queued_bytes", r->st.peak_queued_bytes);
    put_u(o, "flows_created", r->st.flows_created);
    put_u(o, "flows_destroyed", r->st.flows_destroyed);
    put_u(o, "peak_flows", r->st.peak_flows);
    if (r->app == &na_app_urlswitch) {
        put_u(o, "http_requests", r->st.http_requests);
        put_u(o, "pattern_matches", r->st.matched);
        put_list(o, "packets_per_route", r->st.routes, 16);
    }
    put_u(o, "allocations", r->mem.allocs);
    put_u(o, "frees", r->mem.frees);
    put_u(o, "alloc_failures", r->mem.fails);
    put_u(o, "small_allocations", r->mem.small_allocs);
    put_u(o, "requested_bytes", r->mem.requested_total);
    put_u(o, "peak_live_bytes", r->mem.peak_requested);
    put_u(o, "peak_live_granted", r->mem.peak_granted);
    put_u(o, "peak_live_blocks", r->mem.peak_blocks);
    put_u(o, "end_live_bytes", r->mem.live_requested);
    put_u(o, "heap_capacity", hs->capacity);
    put_u(o, "heap_peak_used", hs->peak_used);
    put_u(o, "heap_min_free", hs->min_ever_free);
    put_u(o, "heap_splits", hs->split_count);
    put_u(o, "heap_coalesces", hs->coalesce_count);
    put_u(o, "heap_errors", hs->error_count + r->mem.misuse);
    put_i(o, "heap_check", check);
    put_s(o, "trace", trace);
    put_u(o, "trace_records", trace_records);
    if (o->json) {
        fputs("\n}\n", o->f);
    }
}

/* Dies (status 2) unless path can be written: not a directory, in a writable directory. */
static void check_output(const char *path)
{
    struct stat st;
    char *dir = strdup(path), *slash;
    if (dir == NULL) {
        die(1, "out of host memory");
    }
    slash = strrchr(dir, '/');
    if (slash == dir) {
        slash[1] = '\0';
    } else if (slash != NULL) {
        *slash = '\0';
    } else {
        strcpy(dir, ".");
    }
    if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
        free(dir);
        die(2, "%s: cannot write: Is a directory", path);
    }
    if (access(dir, W_OK) != 0) {
        int e = errno;
        free(dir);
        die(2, "%s: cannot write: %s", path, strerror(e));
    }
    free(dir);
}

static const na_app_t *find_app(const char *name)
{
    for (size_t i = 0; i < NAPPS; i++) {
        if (strcmp(apps[i]->name, name) == 0) {
            return apps[i];
        }
    }
    return NULL;
}

static void list(void)
{
    printf("applications:\n");
    for (size_t i = 0; i < NAPPS; i++) {
        printf("  %-12s %s\n", apps[i]->name, apps[i]->summary);
    }
    printf("synthetic shapes:");
    for (size_t i = 0; na_shapes[i] != NULL; i++) {
        printf(" %s", na_shapes[i]);
    }
    printf("\nallocators:");
    for (size_t i = 0; i < hk_catalog_count(); i++) {
        printf(" %s", hk_catalog_at(i)->name);
    }
    printf("\n");
}

int main(int argc, char **argv)
{
    enum { O_PCAP = 1, O_SYNTH, O_ALLOC, O_ARENA, O_RATE, O_QUANTUM, O_TRACE, O_DEPART, O_JSON, O_REPEAT,
           O_STAGGER, O_LIST, O_HELP, O_LOAD, O_PROGRESS };
    static const struct option opts[] = {
        {"pcap", required_argument, NULL, O_PCAP},         {"synthetic", required_argument, NULL, O_SYNTH},
        {"allocator", required_argument, NULL, O_ALLOC},   {"arena", required_argument, NULL, O_ARENA},
        {"rate", required_argument, NULL, O_RATE},         {"quantum", required_argument, NULL, O_QUANTUM},
        {"emit-trace", required_argument, NULL, O_TRACE},  {"departures", required_argument, NULL, O_DEPART},
        {"json", required_argument, NULL, O_JSON},         {"repeat", required_argument, NULL, O_REPEAT},
        {"stagger", required_argument, NULL, O_STAGGER},   {"list", no_argument, NULL, O_LIST},
        {"help", no_argument, NULL, O_HELP},               {"load", required_argument, NULL, O_LOAD},
        {"progress", no_argument, NULL, O_PROGRESS},       {NULL, 0, NULL, 0},
    };
    const char *pcap = NULL, *synth = NULL, *alloc = "tlsf", *trace = NULL, *depart = NULL, *json = NULL;
    uint64_t arena = DEFAULT_ARENA, rate = 0, stagger_us = 0, load = 0;
    uint32_t repeat = 1;
    int repeat_given = 0;
    char err[NA_ERRLEN];
    run_t r;
    na_source_t *src;
    na_synth_params_t sp;
    hk_stats_t hs;
    int c, check;
    out_t o;
    FILE *jf = NULL;

    memset(&r, 0, sizeof r);
    r.cfg.quantum = DEFAULT_QUANTUM;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (c) {
        case O_PCAP: pcap = optarg; break;
        case O_SYNTH: synth = optarg; break;
        case O_ALLOC: alloc = optarg; break;
        case O_ARENA: arena = parse_num("--arena", optarg, 1024, (uint64_t)1 << 36, 1); break;
        case O_RATE: rate = parse_num("--rate", optarg, 1, (uint64_t)1 << 44, 1); break;
        case O_LOAD: load = parse_num("--load", optarg, 1, 10000, 0); break;
        case O_QUANTUM: r.cfg.quantum = (uint32_t)parse_num("--quantum", optarg, 1, 1u << 24, 1); break;
        case O_TRACE: trace = optarg; break;
        case O_DEPART: depart = optarg; break;
        case O_JSON: json = optarg; break;
        case O_REPEAT:
            repeat = (uint32_t)parse_num("--repeat", optarg, 1, MAX_REPEAT, 0);
            repeat_given = 1;
            break;
        case O_STAGGER: stagger_us = parse_num("--stagger", optarg, 1, (uint64_t)1 << 40, 0); break;
        case O_PROGRESS: r.progress = 1; break;
        case O_LIST: list(); return 0;
        case O_HELP: fputs(usage, stdout); return 0;
        default:
            if (optopt != 0) {
                die(2, "option '%s' needs a value (see --help)", argv[optind - 1]);
            }
            die(2, "unknown option '%s' (see --help)", argv[optind - 1]);
        }
    }
    if (optind != argc - 1) {
        die(2, optind >= argc ? "give the application: drr, easyport or url-switch (see --help)"
                              : "unexpected argument '%s' (see --help)",
            argv[optind < argc - 1 ? optind + 1 : optind]);
    }
    r.app = find_app(argv[optind]);
    if (r.app == NULL) {
        die(2, "unknown application '%s' (drr, easyport, url-switch)", argv[optind]);
    }
    if ((pcap == NULL) == (synth == NULL)) {
        die(2, "give exactly one input: --pcap FILE or --synthetic SHAPE");
    }
    if (synth != NULL && (repeat_given || stagger_us != 0)) {
        die(2, "--repeat and --stagger apply to --pcap only");
    }
    if (rate != 0 && load != 0) {
        die(2, "give --rate or --load, not both");
    }
    if (trace != NULL) {
        check_output(trace);
    }
    if (json != NULL && strcmp(json, "-") != 0) {
        check_output(json);
    }
    if (hk_catalog_find(alloc) == NULL) {
        die(2, "--allocator: no catalog entry named '%s' (see --list)", alloc);
    }
    if (pcap != NULL) {
        src = na_source_pcap(pcap, repeat, stagger_us * 1000u, err, sizeof err);
        if (src == NULL) {
            die(2, "%s", err);
        }
    } else {
        if (na_synth_parse(synth, &sp, err, sizeof err) != 0) {
            die(2, "%s", err);
        }
        src = na_source_synth(&sp);
        if (src == NULL) {
            die(1, "out of host memory");
        }
    }
    if (rate != 0) {
        r.rate = rate;
    } else {
        /* the input's mean rate (the synthetic model's R) at the given load */
        if (load == 0) {
            load = DEFAULT_LOAD;
        }
        r.rate = na_source_rate(src) * 100u / load;
        if (r.rate == 0) {
            r.rate = 1;
        }
    }
    if (na_mem_open(&r.mem, alloc, (size_t)arena, trace, err, sizeof err) != 0) {
        die(2, "%s", err);
    }
    if (depart != NULL && (r.departures = fopen(depart, "w")) == NULL) {
        na_mem_close(&r.mem, 0, err, sizeof err);
        die(2, "%s: cannot write: %s", depart, strerror(errno));
    }
    r.state = r.app->create(&r.mem, &r.cfg, &r.st, err, sizeof err);
    if (r.state == NULL) {
        na_mem_close(&r.mem, 0, err, sizeof err);
        die(2, "%s", err);
    }
    run_input(&r, src);
    r.app->destroy(r.state);
    hk_get_stats(r.mem.heap, &hs);
    check = hk_check(r.mem.heap);
    if (r.departures != NULL && fclose(r.departures) != 0) {
        na_mem_close(&r.mem, 0, err, sizeof err);
        die(1, "%s: cannot write: %s", depart, strerror(errno));
    }
    if (na_mem_close(&r.mem, 1, err, sizeof err) != 0) {
        die(1, "%s", err);
    }
    if (json != NULL && strcmp(json, "-") != 0 && (jf = fopen(json, "w")) == NULL) {
        die(1, "%s: cannot write: %s", json, strerror(errno));
    }
    o = (out_t){jf != NULL ? jf : stdout, json != NULL, 1};
    report(&o, &r, na_source_describe(src), &hs, check, trace, r.mem.records);
    na_source_close(src);
    if (jf != NULL && fclose(jf) != 0) {
        die(1, "%s: cannot write: %s", json, strerror(errno));
    }
    if (fflush(stdout) != 0) {
        die(1, "stdout: write failed");
    }
    return 0;
}
