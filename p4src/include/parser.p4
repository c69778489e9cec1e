#ifndef P4AQM_PARSER_P4
#define P4AQM_PARSER_P4

#include "headers.p4"

error { IPv4BadVersion, IPv4HeaderTooShort }

// Ethernet, IPv4 (options kept as opaque bytes), TCP (with Linux's timestamps option, for
// the RTT tracker), UDP. Anything else is payload and leaves untouched. A truncated L4
// header is tolerated (l3_parsed stays 1). TCP and UDP are parsed only in a profile that
// reads them (AECN's), TCP's timestamps only with the RTT tracker (profile.p4).
parser PacketParser(packet_in packet,
                    out headers_t hdr,
                    inout local_metadata_t meta,
                    inout standard_metadata_t std_meta) {
    state start {
        packet.extract(hdr.ethernet);
        transition select(hdr.ethernet.ether_type) {
            ETHERTYPE_IPV4: parse_ipv4;
            default: accept;
        }
    }

    // The header's checks as transitions: a verify() of an expression costs every packet a
    // temporary (defines.p4).
    state parse_ipv4 {
        packet.extract(hdr.ipv4);
        transition select(hdr.ipv4.version, hdr.ipv4.ihl) {
            (4, 5): parse_l4;
            (4, 6 .. 15): parse_ipv4_options;
            (4, _): ipv4_header_too_short;
            default: ipv4_bad_version;
        }
    }

    state ipv4_bad_version {
        verify(false, error.IPv4BadVersion);
        transition reject;
    }

    state ipv4_header_too_short {
        verify(false, error.IPv4HeaderTooShort);
        transition reject;
    }

    state parse_ipv4_options {
        packet.extract(hdr.ipv4_options, (bit<32>)(((bit<16>)hdr.ipv4.ihl - 5) << 5));
        transition parse_l4;
    }

    state parse_l4 {
#ifdef P4AQM_WITH_L4_PORTS
        meta.l3_parsed = 1;
        transition select(hdr.ipv4.frag_offset, hdr.ipv4.protocol) {
            (0, IP_PROTO_TCP): parse_tcp;
            (0, IP_PROTO_UDP): parse_udp;
            default: accept;
        }
#else
        transition accept;
#endif
    }

#ifdef P4AQM_WITH_L4_PORTS
    state parse_tcp {
        packet.extract(hdr.tcp);
#ifdef P4AQM_WITH_RTT_TRACKER
        transition select(hdr.tcp.data_offset) {
            8 .. 15: parse_tcp_options;
            default: accept;
        }
#else
        transition accept;
#endif
    }

#ifdef P4AQM_WITH_RTT_TRACKER
    state parse_tcp_options {
        transition select(packet.lookahead<bit<32>>()) {
            0x0101080a: parse_tcp_ts;
            default: accept;
        }
    }

    state parse_tcp_ts {
        packet.extract(hdr.tcp_ts);
        transition accept;
    }
#endif

    state parse_udp {
        packet.extract(hdr.udp);
        transition accept;
    }
#endif
}

control PacketDeparser(packet_out packet, in headers_t hdr) {
    apply {
#ifdef P4AQM_WITH_TELEMETRY
        packet.emit(hdr.telemetry);
#endif
        packet.emit(hdr.ethernet);
        packet.emit(hdr.ipv4);
        packet.emit(hdr.ipv4_options);
#ifdef P4AQM_WITH_L4_PORTS
        packet.emit(hdr.tcp);
#endif
#ifdef P4AQM_WITH_RTT_TRACKER
        packet.emit(hdr.tcp_ts);
#endif
#ifdef P4AQM_WITH_L4_PORTS
        packet.emit(hdr.udp);
#endif
    }
}

#endif
