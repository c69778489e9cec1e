#ifndef P4AQM_IPV4_CHECKSUM_P4
#define P4AQM_IPV4_CHECKSUM_P4

#include "../headers.p4"

// Incremental IPv4 header checksum update (RFC 1624, eqn. 3) over the two 16-bit words
// this program may change (TOS with the ECN bits; TTL). It covers headers with options;
// a packet whose checksum arrived wrong never gets here (VerifyIpv4Checksum, ingress).
control Ipv4Checksum(inout headers_t hdr, in checksum_meta_t old) {
    apply {
        if (hdr.ipv4.isValid()) {
            bit<16> word_tos = hdr.ipv4.version ++ hdr.ipv4.ihl ++ hdr.ipv4.dscp ++ hdr.ipv4.ecn;
            bit<16> word_ttl = hdr.ipv4.ttl ++ hdr.ipv4.protocol;
            if (word_tos != old.word_tos || word_ttl != old.word_ttl) {
                bit<32> sum = (bit<32>)(~hdr.ipv4.hdr_checksum)
                              + (bit<32>)(~old.word_tos) + (bit<32>)word_tos
                              + (bit<32>)(~old.word_ttl) + (bit<32>)word_ttl;
                sum = (sum & 0xffff) + (sum >> 16);
                sum = (sum & 0xffff) + (sum >> 16);
                hdr.ipv4.hdr_checksum = ~((bit<16>)sum);
            }
        }
    }
}

#endif
