/* SPDX-License-Identifier: MIT */
/*
 * Frame parsing shared by the applications: link layer (Ethernet with
 * 802.1Q tags and PPPoE sessions, Linux cooked, raw IP, BSD loopback), then
 * IPv4 / IPv6 (extension headers skipped) and TCP / UDP. Every read is
 * bounded by the captured length; a field that is cut off simply ends the
 * parse there, so truncated captures still give a flow and a payload.
 */
#include <string.h>

#include "netapp.h"

#define ETH_IPV4 0x0800u
#define ETH_IPV6 0x86DDu
#define ETH_VLAN 0x8100u
#define ETH_QINQ 0x88A8u
#define ETH_PPPOE 0x8864u
#define PPP_IPV4 0x0021u
#define PPP_IPV6 0x0057u

uint32_t na_fnv1a(const void *data, size_t n, uint32_t h)
{
    const uint8_t *b = data;
    for (size_t i = 0; i < n; i++) {
        h ^= b[i];
        h *= 16777619u;
    }
    return h;
}

static uint16_t be16(const uint8_t *b) { return (uint16_t)((b[0] << 8) | b[1]); }

/* Offset of the network header and its ethertype (0 when none is recognised). */
static uint32_t link_layer(const na_packet_t *p, na_link_t link, uint16_t *type)
{
    const uint8_t *d = p->data;
    uint32_t n = p->caplen, off;
    *type = 0;
    if (link == NA_LINK_RAW) {
        if (n >= 1) {
            *type = (d[0] >> 4) == 6 ? ETH_IPV6 : ETH_IPV4;
        }
        return 0;
    }
    if (link == NA_LINK_LOOP) {
        if (n >= 4) {
            /* host-order AF_INET (2) or one of the AF_INET6 values (24, 28, 30) */
            uint32_t af = d[0] | d[1] | d[2] | d[3];
            *type = af == 2 ? ETH_IPV4 : ETH_IPV6;
        }
        return 4;
    }
    if (link == NA_LINK_SLL) {
        if (n >= 16) {
            *type = be16(d + 14);
        }
        return 16;
    }
    if (n < 14) {
        return n;
    }
    *type = be16(d + 12);
    off = 14;
    while ((*type == ETH_VLAN || *type == ETH_QINQ) && off + 4 <= n) {
        *type = be16(d + off + 2);
        off += 4;
    }
    if (*type == ETH_PPPOE) {
        uint16_t proto = off + 8 <= n ? be16(d + off + 6) : 0;
        *type = proto == PPP_IPV4 ? ETH_IPV4 : proto == PPP_IPV6 ? ETH_IPV6 : 0;
        off += 8;
    }
    return off <= n ? off : n;
}

static int is_ipv6_ext(uint8_t nh)
{
    return nh == 0 || nh == 43 || nh == 60 || nh == 51;
}

/* Network layer from l3_off: the key's addresses and protocol, the L4 offset and its end. */
static void network_layer(na_packet_t *p, uint16_t type, uint32_t *l4_end)
{
    const uint8_t *d = p->data + p->l3_off;
    uint32_t avail = p->caplen - p->l3_off;
    if (type == ETH_IPV4 && avail >= 20 && (d[0] >> 4) == 4) {
        uint32_t ihl = (uint32_t)(d[0] & 0xF) * 4u, total = be16(d + 2);
        if (ihl < 20 || ihl > avail) {
            return;
        }
        p->key.family = 4;
        p->key.proto = d[9];
        memcpy(p->key.src, d + 12, 4);
        memcpy(p->key.dst, d + 16, 4);
        p->l3_hlen = ihl;
        p->l4_off = p->l3_off + ihl;
        /* only the first fragment carries the L4 header */
        if ((be16(d + 6) & 0x1FFFu) != 0) {
            p->key.proto = 0;
        }
        *l4_end = p->l3_off + (total >= ihl ? total : ihl);
    } else if (type == ETH_IPV6 && avail >= 40 && (d[0] >> 4) == 6) {
        uint8_t nh = d[6];
        uint32_t off = 40;
        p->key.family = 6;
        memcpy(p->key.src, d + 8, 16);
        memcpy(p->key.dst, d + 24, 16);
        *l4_end = p->l3_off + 40u + be16(d + 4);
        while (is_ipv6_ext(nh) && off + 8 <= avail) {
            uint32_t len = nh == 51 ? ((uint32_t)d[off + 1] + 2u) * 4u : ((uint32_t)d[off + 1] + 1u) * 8u;
            nh = d[off];
            off += len;
        }
        if (off > avail) {
            off = avail;
        }
        p->key.proto = is_ipv6_ext(nh) ? 0 : nh;
        p->l3_hlen = off;
        p->l4_off = p->l3_off + off;
    }
}

void na_parse(na_packet_t *p, na_link_t link)
{
    uint16_t type;
    uint32_t l4_end;
    memset(&p->key, 0, sizeof p->key);
    p->l3_off = link_layer(p, link, &type);
    p->l3_hlen = 0;
    p->l4_off = p->l3_off;
    p->l4_hlen = 0;
    p->tcp_flags = 0;
    l4_end = p->caplen;
    network_layer(p, type, &l4_end);
    if (l4_end > p->caplen) {
        l4_end = p->caplen;
    }
    if (l4_end < p->l4_off) {
        l4_end = p->l4_off;
    }
    if (p->key.family != 0) {
        const uint8_t *d = p->data + p->l4_off;
        uint32_t avail = l4_end - p->l4_off;
        if (p->key.proto == 6 && avail >= 20) {
            uint32_t doff = (uint32_t)(d[12] >> 4) * 4u;
            p->key.sport = be16(d);
            p->key.dport = be16(d + 2);
            p->tcp_flags = d[13];
            p->l4_hlen = doff >= 20 && doff <= avail ? doff : avail;
        } else if (p->key.proto == 17 && avail >= 8) {
            p->key.sport = be16(d);
            p->key.dport = be16(d + 2);
            p->l4_hlen = 8;
        }
    }
    p->payload_off = p->l4_off + p->l4_hlen;
    p->payload_len = l4_end - p->payload_off;
    p->flow_hash = na_fnv1a(&p->key, sizeof p->key, NA_FNV_BASIS);
}
