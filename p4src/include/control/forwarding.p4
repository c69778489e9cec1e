#ifndef P4AQM_FORWARDING_P4
#define P4AQM_FORWARDING_P4

#include "../headers.p4"

// IPv4 LPM routing with MAC rewrite; exact L2 forwarding for everything that is not IPv4.
// Nothing is flooded: a miss, an expired TTL, a malformed header or an IPv4 header that
// fails RFC 1812's checks drops the packet and counts it by reason (a profile without input
// checks forwards what they would drop; one without reason counters does not count).
control Forwarding(inout headers_t hdr,
                   inout local_metadata_t meta,
                   inout standard_metadata_t std_meta) {

#ifdef P4AQM_WITH_REASON_COUNTERS
    counter<bit<32>>(INGRESS_DROP_REASONS, CounterType.packets) ingress_drops;
#endif
    // Packets the ingress handed to each egress queue. Compared with the egress "seen"
    // counter it reveals BMv2's silent tail drops at a full queue.
    counter<port_t>(PORT_SLOTS, CounterType.packets_and_bytes) enqueued;
#ifdef P4AQM_WITH_ARRIVALS
    // The same count as a number each packet carries to egress (meta.arr_seq): a gap
    // between two consecutive packets of a port is BMv2's tail drops between them, and the
    // difference over an interval is the arrivals in it (NEWQUE, BLUE, REM).
    register<bit<32>, port_t>(PORT_SLOTS) arrivals;
#endif

    action drop(bit<32> reason) {
        mark_to_drop(std_meta);
#ifdef P4AQM_WITH_REASON_COUNTERS
        ingress_drops.count(reason);
#endif
    }

    // Hands the packet to a port's queue: counted, and numbered (meta.arr_seq) in a profile
    // that reads the number. Per-port registers and counters are indexed by the port itself
    // (egress reads it from the standard metadata).
    action enqueue(port_t port) {
        std_meta.egress_spec = port;
        enqueued.count(port);
#ifdef P4AQM_WITH_ARRIVALS
        arrivals.read(meta.arr_seq, port);
        meta.arr_seq = meta.arr_seq + 1;
        arrivals.write(port, meta.arr_seq);
#endif
    }

    action route(port_t port, mac_t src_mac, mac_t dst_mac) {
        enqueue(port);
        hdr.ethernet.src_addr = src_mac;
        hdr.ethernet.dst_addr = dst_mac;
        hdr.ipv4.ttl = hdr.ipv4.ttl - 1;
    }

    action no_route() {
        drop(DROP_NO_ROUTE);
    }

    table ipv4_lpm {
        key = { hdr.ipv4.dst_addr: lpm @name("dst_addr"); }
        actions = { route; no_route; }
        const default_action = no_route();
        size = 1024;
    }

    action l2_forward(port_t port) {
        enqueue(port);
    }

    action no_l2_entry() {
        drop(DROP_NO_L2_ENTRY);
    }

    table l2_exact {
        key = { hdr.ethernet.dst_addr: exact @name("dst_addr"); }
        actions = { l2_forward; no_l2_entry; }
        const default_action = no_l2_entry();
        size = 1024;
    }

    apply {
#ifdef P4AQM_WITH_INPUT_CHECKS
        if (std_meta.parser_error != error.NoError
#ifdef P4AQM_WITH_L4_PORTS
                && meta.l3_parsed == 0
#endif
                ) {
            drop(DROP_MALFORMED);
        } else
#endif
        if (hdr.ipv4.isValid()) {
#ifdef P4AQM_WITH_INPUT_CHECKS
            // RFC 1812 5.2.2's input checks, then the TTL. Bytes beyond the total length
            // (Ethernet padding) are allowed; fewer are not.
            if (std_meta.checksum_error == 1) {
                drop(DROP_BAD_CHECKSUM);
            } else if (hdr.ipv4.total_len < ((bit<16>)hdr.ipv4.ihl << 2)) {
                drop(DROP_LENGTH_BELOW_HEADER);
            } else if ((bit<32>)hdr.ipv4.total_len + ETHERNET_BYTES > std_meta.packet_length) {
                drop(DROP_TRUNCATED);
            } else
#endif
            if (hdr.ipv4.ttl <= 1) {
                drop(DROP_TTL_EXPIRED);
            } else {
                ipv4_lpm.apply();
            }
        } else {
            l2_exact.apply();
        }
    }
}

#endif
