#ifndef P4AQM_AQM_TYPES_P4
#define P4AQM_AQM_TYPES_P4

#include "defines.p4"

// What every AQM port has, whatever its algorithm (set by the aqm_config action; a header
// so that ports without an AQM do not pay for its fields, see defines.p4), and the two
// flags every algorithm passes on for the packet (0 when the action makes it valid).
header aqm_common_h {
    bit<8>  algorithm;    // ALGO_*
    bit<32> limit;        // PKTS, drop when the arriving packet finds this many queued
    // Registers cannot be written over P4Runtime, so a port's state is reset by a new
    // epoch number: the first packet that sees it starts from a clean state.
    bit<16> epoch;
    bit<32> seed;         // xorshift32 seed (non-zero)
    bit<2>  bmv2_random;  // 1: BMv2's unseedable random() instead of the seeded stream
    bit<2>  ecn_mode;     // ECN_MODE_*
#ifdef P4AQM_WITH_MECN_LEVELS
    bit<2>  level_a;      // what a mark sets in region A (MECN: incipient); CE elsewhere
#else
    bit<2>  unused;       // BMv2's headers are whole bytes
#endif
    bit<1>  fresh;        // 1: the packet is the first of the port's epoch (port_epoch.p4)
    bit<1>  fire;         // 1: the algorithm decided to mark or drop it (verdict.p4)
}

// What a classification table matches a packet on (AECN's aecn_groups); ports are 0
// without TCP or UDP.
header flow_key_h {
    bit<32> src_addr;
    bit<32> dst_addr;
    bit<8>  protocol;
    bit<16> src_port;
    bit<16> dst_port;
}

// A telemetry record's fields (headers.p4's telemetry_t) in two headers. BMv2 zeroes every
// metadata field of every packet and every header when it is made valid, each field at a
// cost (defines.p4), so the record is not metadata: a telemetry clone copies it as it
// copies every valid header.
// What the AQM computed for one packet: the inputs it saw, its working values and the
// verdict; made valid (all zero) by the aqm_config action. The fields whose meaning
// depends on the algorithm (avg, prob, count, state0, state1) are documented with each
// algorithm (control_plane/algorithms/).
header aqm_record_h {
    bit<16> epoch;
    bit<32> pkt_seq;
    bit<32> tele_seq;
    bit<32> deq_qdepth;
    bit<32> arr_seq;
    bit<32> avg;
    bit<32> prob;
    bit<32> count;
    bit<32> rnd;
    bit<32> state0;
    bit<32> state1;
    bit<32> ingress_ts;
    bit<32> rtt;
    bit<8>  event;
    bit<8>  group;
    bit<8>  region;
    bit<8>  outcome;
    bit<8>  ecn_in;
}

// The packet and its queue as it left: only telemetry reads these, so they are filled only
// on a packet that exports (telemetry.p4). Zero where they do not apply: ip_id and ecn_out
// of a packet that is not IPv4.
header aqm_stamp_h {
    bit<16> port;
    bit<32> enq_ts;
    bit<32> deq_timedelta;
    bit<48> egress_ts;
    bit<32> qdepth;
    bit<32> pkt_len;
    bit<16> ip_id;
    bit<8>  ecn_out;
}

#endif
