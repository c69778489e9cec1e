#ifndef P4AQM_HEADERS_P4
#define P4AQM_HEADERS_P4

#include "defines.p4"

// Telemetry record: one per exported packet, delivered to the controller as a PacketIn
// whose metadata are these fields (the payload is truncated away).
@controller_header("packet_in")
header telemetry_t {
    bit<16> port;            // egress port the record describes
    bit<16> epoch;           // state epoch in force (see port_epoch table)
    bit<32> pkt_seq;         // packets seen on the port in this epoch, this one included
    bit<32> tele_seq;        // records exported for the port in this epoch, this one included
    bit<32> enq_ts;          // USEC, arrival at the queue
    bit<32> deq_timedelta;   // USEC, sojourn in the queue
    bit<48> egress_ts;       // USEC48, start of egress (the departure time)
    bit<32> qdepth;          // PKTS, queue the packet found on arrival
    bit<32> avg;             // QPKT, average after this packet's update
    bit<32> prob;            // FRAC32, base marking probability pb in force
    bit<32> count;           // PKTS, unmarked packets since the last mark, before this one
    bit<32> rnd;             // FRAC32, random draw used for this packet
    bit<16> ip_id;           // IPv4 identification (0 if not IPv4), to match records to packets
    bit<8>  region;          // REGION_*
    bit<8>  outcome;         // OUTCOME_*
    bit<8>  ecn_in;          // codepoint on arrival (Not-ECT for non-IPv4)
    bit<8>  ecn_out;         // codepoint on departure
    bit<32> pkt_len;         // bytes
}

header ethernet_t {
    mac_t   dst_addr;
    mac_t   src_addr;
    bit<16> ether_type;
}

header ipv4_t {
    bit<4>  version;
    bit<4>  ihl;
    bit<6>  dscp;
    bit<2>  ecn;
    bit<16> total_len;
    bit<16> identification;
    bit<3>  flags;
    bit<13> frag_offset;
    bit<8>  ttl;
    bit<8>  protocol;
    bit<16> hdr_checksum;
    ipv4_addr_t src_addr;
    ipv4_addr_t dst_addr;
}

header ipv4_options_t {
    varbit<320> options;
}

header tcp_t {
    bit<16> src_port;
    bit<16> dst_port;
    bit<32> seq_no;
    bit<32> ack_no;
    bit<4>  data_offset;
    bit<4>  res;
    bit<8>  flags;
    bit<16> window;
    bit<16> checksum;
    bit<16> urgent_ptr;
}

header udp_t {
    bit<16> src_port;
    bit<16> dst_port;
    bit<16> length;
    bit<16> checksum;
}

struct headers_t {
    telemetry_t    telemetry;
    ethernet_t     ethernet;
    ipv4_t         ipv4;
    ipv4_options_t ipv4_options;
    tcp_t          tcp;
    udp_t          udp;
}

// The header words the incremental checksum update needs (RFC 1624), saved by the parser.
struct checksum_meta_t {
    bit<16> word_tos;   // version, ihl, dscp, ecn as received
    bit<16> word_ttl;   // ttl, protocol as received
}

// Per-port AQM parameters loaded by the aqm_config table (formats in defines.p4).
// Every algorithm is expressed as a two-region marker:
//   region A [t0, t1): pb = slope_a * (avg - t0), marks at level_a
//   region B [t1, t2): pb = base_b + slope_b * (avg - t1), marks at level_b
//   avg >= t2: forced (drop, or mark at level_b in ECNM)
struct aqm_params_t {
    bit<1>  enabled;
    bit<2>  ecn_mode;
    bit<32> limit;        // PKTS, drop when the arriving packet finds this many queued
    frac32_t wq;
    bit<8>  idle_shift;   // decay-table bucket = idle time (USEC) >> idle_shift
    qpkt_t  t0;
    qpkt_t  t1;
    qpkt_t  t2;
    slope_t slope_a;
    frac32_t base_b;
    slope_t slope_b;
    bit<2>  level_a;
    bit<2>  level_b;
}

// What the AQM computed for one packet: the working values of the egress controls, and the
// record a telemetry clone carries (every field is preserved in the clone).
struct aqm_record_t {
    @field_list(FL_TELEMETRY) bit<16> port;
    @field_list(FL_TELEMETRY) bit<16> epoch;
    @field_list(FL_TELEMETRY) bit<32> pkt_seq;
    @field_list(FL_TELEMETRY) bit<32> tele_seq;
    @field_list(FL_TELEMETRY) bit<32> enq_ts;
    @field_list(FL_TELEMETRY) bit<32> deq_timedelta;
    @field_list(FL_TELEMETRY) bit<48> egress_ts;
    @field_list(FL_TELEMETRY) bit<32> qdepth;
    @field_list(FL_TELEMETRY) bit<32> avg;
    @field_list(FL_TELEMETRY) bit<32> prob;
    @field_list(FL_TELEMETRY) bit<32> count;
    @field_list(FL_TELEMETRY) bit<32> rnd;
    @field_list(FL_TELEMETRY) bit<16> ip_id;
    @field_list(FL_TELEMETRY) bit<8>  region;
    @field_list(FL_TELEMETRY) bit<8>  outcome;
    @field_list(FL_TELEMETRY) bit<8>  ecn_in;
    @field_list(FL_TELEMETRY) bit<8>  ecn_out;
    @field_list(FL_TELEMETRY) bit<32> pkt_len;
}

struct local_metadata_t {
    bit<1>          l3_parsed;  // the parser got through the IPv4 header and its options
    checksum_meta_t csum;
    aqm_params_t    aqm;
    aqm_record_t    rec;
}

#endif
