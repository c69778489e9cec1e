#ifndef P4AQM_AQM_TYPES_P4
#define P4AQM_AQM_TYPES_P4

#include "defines.p4"

// What every AQM port has, whatever its algorithm (set by the aqm_config action; a header
// so that ports without an AQM do not pay for its fields, see defines.p4).
header aqm_common_h {
    bit<8>  algorithm;    // ALGO_*
    bit<32> limit;        // PKTS, drop when the arriving packet finds this many queued
    // Registers cannot be written over P4Runtime, so a port's state is reset by a new
    // epoch number: the first packet that sees it starts from a clean state.
    bit<16> epoch;
    bit<32> seed;         // xorshift32 seed (non-zero)
    bit<2>  bmv2_random;  // 1: BMv2's unseedable random() instead of the seeded stream
    bit<2>  ecn_mode;     // ECN_MODE_*
    bit<2>  level_a;      // codepoint a mark sets in region A (MECN: incipient)
    bit<2>  level_b;      // ... elsewhere (CE)
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

// What the egress computed for one packet: the inputs it saw, the algorithm's working
// values and the verdict. A telemetry clone preserves every field (so it is metadata); the
// fields whose meaning depends on the algorithm (avg, prob, count, state0, state1) are
// documented with each algorithm (control_plane/algorithms/).
struct aqm_record_t {
    @field_list(FL_TELEMETRY) bit<16> port;
    @field_list(FL_TELEMETRY) bit<16> epoch;
    @field_list(FL_TELEMETRY) bit<32> pkt_seq;
    @field_list(FL_TELEMETRY) bit<32> tele_seq;
    @field_list(FL_TELEMETRY) bit<32> enq_ts;
    @field_list(FL_TELEMETRY) bit<32> deq_timedelta;
    @field_list(FL_TELEMETRY) bit<48> egress_ts;
    @field_list(FL_TELEMETRY) bit<32> qdepth;
    @field_list(FL_TELEMETRY) bit<32> deq_qdepth;
    @field_list(FL_TELEMETRY) bit<32> arr_seq;
    @field_list(FL_TELEMETRY) bit<32> avg;
    @field_list(FL_TELEMETRY) bit<32> prob;
    @field_list(FL_TELEMETRY) bit<32> count;
    @field_list(FL_TELEMETRY) bit<32> rnd;
    @field_list(FL_TELEMETRY) bit<32> state0;
    @field_list(FL_TELEMETRY) bit<32> state1;
    @field_list(FL_TELEMETRY) bit<32> ingress_ts;
    @field_list(FL_TELEMETRY) bit<32> rtt;
    @field_list(FL_TELEMETRY) bit<16> ip_id;
    @field_list(FL_TELEMETRY) bit<8>  event;
    @field_list(FL_TELEMETRY) bit<8>  group;
    @field_list(FL_TELEMETRY) bit<8>  region;
    @field_list(FL_TELEMETRY) bit<8>  outcome;
    @field_list(FL_TELEMETRY) bit<8>  ecn_in;
    @field_list(FL_TELEMETRY) bit<8>  ecn_out;
    @field_list(FL_TELEMETRY) bit<32> pkt_len;
}

#endif
