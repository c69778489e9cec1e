#ifndef P4AQM_PARSER_P4
#define P4AQM_PARSER_P4

#include "headers.p4"

error { IPv4BadVersion, IPv4HeaderTooShort }

// Ethernet, IPv4 (options kept as opaque bytes), TCP (with Linux's timestamps option, for
// the RTT tracker), UDP. Anything else is payload and leaves untouched. A truncated L4
// header is tolerated (l3_parsed stays 1).
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

    state parse_ipv4 {
        packet.extract(hdr.ipv4);
        verify(hdr.ipv4.version == 4, error.IPv4BadVersion);
        verify(hdr.ipv4.ihl >= 5, error.IPv4HeaderTooShort);
        meta.csum.word_tos = hdr.ipv4.version ++ hdr.ipv4.ihl ++ hdr.ipv4.dscp ++ hdr.ipv4.ecn;
        meta.csum.word_ttl = hdr.ipv4.ttl ++ hdr.ipv4.protocol;
        transition select(hdr.ipv4.ihl) {
            5: parse_l4;
            default: parse_ipv4_options;
        }
    }

    state parse_ipv4_options {
        packet.extract(hdr.ipv4_options, (bit<32>)(((bit<16>)hdr.ipv4.ihl - 5) << 5));
        transition parse_l4;
    }

    state parse_l4 {
        meta.l3_parsed = 1;
        transition select(hdr.ipv4.frag_offset, hdr.ipv4.protocol) {
            (0, IP_PROTO_TCP): parse_tcp;
            (0, IP_PROTO_UDP): parse_udp;
            default: accept;
        }
    }

    state parse_tcp {
        packet.extract(hdr.tcp);
        transition select(hdr.tcp.data_offset) {
            8 .. 15: parse_tcp_options;
            default: accept;
        }
    }

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

    state parse_udp {
        packet.extract(hdr.udp);
        transition accept;
    }
}

control PacketDeparser(packet_out packet, in headers_t hdr) {
    apply {
        packet.emit(hdr.telemetry);
        packet.emit(hdr.ethernet);
        packet.emit(hdr.ipv4);
        packet.emit(hdr.ipv4_options);
        packet.emit(hdr.tcp);
        packet.emit(hdr.tcp_ts);
        packet.emit(hdr.udp);
    }
}

// RFC 1812 5.2.2: a router discards a packet whose IPv4 header checksum (options
// included) is wrong; ingress drops it under its own reason (std_meta.checksum_error).
control VerifyIpv4Checksum(inout headers_t hdr, inout local_metadata_t meta) {
    apply {
        verify_checksum(hdr.ipv4.isValid(),
                        { hdr.ipv4.version, hdr.ipv4.ihl, hdr.ipv4.dscp, hdr.ipv4.ecn,
                          hdr.ipv4.total_len, hdr.ipv4.identification, hdr.ipv4.flags,
                          hdr.ipv4.frag_offset, hdr.ipv4.ttl, hdr.ipv4.protocol,
                          hdr.ipv4.src_addr, hdr.ipv4.dst_addr, hdr.ipv4_options.options },
                        hdr.ipv4.hdr_checksum, HashAlgorithm.csum16);
    }
}

// The checksum is updated incrementally in egress (ipv4_checksum.p4), over the two words
// the program may change: cheaper than BMv2 recomputing it over the whole header.
control NoChecksum(inout headers_t hdr, inout local_metadata_t meta) {
    apply { }
}

#endif
