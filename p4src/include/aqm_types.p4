#ifndef P4AQM_AQM_TYPES_P4
#define P4AQM_AQM_TYPES_P4

#include "defines.p4"

// The port's AQM for one packet, in one header made valid (all zero) by its aqm_config
// action: what every algorithm has (its configuration, and two flags every algorithm
// passes on), then the telemetry record (what the AQM saw, its working values and the
// verdict). One header and not metadata: BMv2 zeroes every metadata field of every packet,
// and a header of every packet, valid or not, costs its invalidation (defines.p4); ports
// without an AQM pay only that. A telemetry clone copies it as it copies every valid
// header. The record's fields whose meaning depends on the algorithm (avg, prob, count,
// state0, state1) are named by each algorithm's file under aqm/ and described by its module
// (control_plane/algorithms/); those only some algorithms write are in a profile's record
// only with one of them (P4AQM_RECORD_<FIELD>, profile.p4), and telemetry exports 0 for
// the others, as their algorithms leave them.
header aqm_record_h {
#ifndef P4AQM_ONE_CONTROL
    bit<8>  algorithm;    // the control it runs, <CONTROL>_ID (profile.p4)
#endif
    bit<2>  ecn_mode;     // ECN_MODE_*
    bit<1>  fresh;        // 1: the packet is the first of the port's epoch (prologue.p4)
    bit<1>  fire;         // 1: the algorithm decided to mark or drop it (verdict.p4)
    // What a mark sets in region A (MECN: incipient; CE elsewhere), an ECN codepoint in
    // four bits that pad the header to whole bytes. Written only in a profile with
    // P4AQM_WITH_MECN_LEVELS.
    bit<4>  level_a;
    bit<32> limit;        // PKTS, drop when the arriving packet finds this many queued
    // Registers cannot be written over P4Runtime, so a port's state is reset by a new
    // epoch number: the first packet that sees it starts from a clean state.
    bit<16> epoch_id;
#ifdef P4AQM_WITH_SEEDED_PRNG
    bit<32> seed;         // xorshift32 seed; 0: BMv2's unseedable random() instead
#endif
    // The record.
    bit<16> epoch;
#ifdef P4AQM_WITH_DRAWS
    bit<32> rnd;
#endif
    bit<8>  region;
    bit<8>  outcome;
    bit<8>  ecn_in;
#ifdef P4AQM_RECORD_DEQ_QDEPTH
    bit<32> deq_qdepth;
#endif
#ifdef P4AQM_RECORD_ARR_SEQ
    bit<32> arr_seq;
#endif
#ifdef P4AQM_RECORD_AVG
    bit<32> avg;
#endif
#ifdef P4AQM_RECORD_COUNT
    bit<32> count;
#endif
#ifdef P4AQM_RECORD_PROB
    bit<32> prob;
#endif
#ifdef P4AQM_RECORD_STATE0
    bit<32> state0;
#endif
#ifdef P4AQM_RECORD_STATE1
    bit<32> state1;
#endif
#ifdef P4AQM_RECORD_EVENT
    bit<8>  event;
#endif
#ifdef P4AQM_RECORD_INGRESS_TS
    bit<32> ingress_ts;
#endif
#ifdef P4AQM_RECORD_RTT
    bit<32> rtt;
#endif
#ifdef P4AQM_RECORD_GROUP
    bit<8>  group;
#endif
}

// Telemetry's working values (telemetry.p4), valid on a port that exports: in the metadata,
// not in the control, where p4c would make every packet invalidate it at the control's
// start (a table of its own). A record's tele_seq is its seq and its pkt_seq its pkt_seq
// (the clone copies them).
header aqm_export_h {
    bit<32> pkt_seq;
    bit<32> seq;
    usec_t  last;
    usec_t  now;
    usec_t  interval;
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
