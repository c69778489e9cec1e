#ifndef P4AQM_IPV4_CHECKSUM_P4
#define P4AQM_IPV4_CHECKSUM_P4

#include "../headers.p4"

// The IPv4 header checksum over every header word but the checksum, options included.
#define IPV4_HEADER_WORDS { hdr.ipv4.version, hdr.ipv4.ihl, hdr.ipv4.dscp, hdr.ipv4.ecn, \
                            hdr.ipv4.total_len, hdr.ipv4.identification, hdr.ipv4.flags, \
                            hdr.ipv4.frag_offset, hdr.ipv4.ttl, hdr.ipv4.protocol, \
                            hdr.ipv4.src_addr, hdr.ipv4.dst_addr, hdr.ipv4_options.options }

// RFC 1812 5.2.2: a router discards a packet whose IPv4 header checksum is wrong; ingress
// drops it under its own reason (std_meta.checksum_error).
control VerifyIpv4Checksum(inout headers_t hdr, inout local_metadata_t meta) {
    apply {
#ifdef P4AQM_WITH_INPUT_CHECKS
        verify_checksum(hdr.ipv4.isValid(), IPV4_HEADER_WORDS, hdr.ipv4.hdr_checksum,
                        HashAlgorithm.csum16);
#endif
    }
}

// Recomputed after the TTL and ECN changes. BMv2's native checksum unit costs less than
// an incremental update (RFC 1624) in P4 expressions, and since every checksum that
// arrives was verified the two give the same field.
control UpdateIpv4Checksum(inout headers_t hdr, inout local_metadata_t meta) {
    apply {
        update_checksum(hdr.ipv4.isValid(), IPV4_HEADER_WORDS, hdr.ipv4.hdr_checksum,
                        HashAlgorithm.csum16);
    }
}

#endif
