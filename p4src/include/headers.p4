#ifndef P4AQM_HEADERS_P4
#define P4AQM_HEADERS_P4

#include "defines.p4"
#include "profile.p4"

// Telemetry record: one per exported packet, delivered to the controller as a PacketIn
// whose metadata are these fields (the payload is truncated away).
@controller_header("packet_in")
header telemetry_t {
    bit<16> port;            // egress port the record describes
    bit<16> epoch;           // state epoch in force (the aqm_config entry's epoch_id)
    bit<32> pkt_seq;         // packets seen on the port with telemetry on, this one included
    bit<32> tele_seq;        // records exported for the port in this epoch, this one included
    bit<32> enq_ts;          // USEC, arrival at the queue
    bit<32> deq_timedelta;   // USEC, sojourn in the queue
    bit<48> egress_ts;       // USEC48, start of egress (the departure time)
    bit<32> qdepth;          // PKTS, queue the packet found on arrival
    bit<32> deq_qdepth;      // PKTS, queue the packet left behind (PI, REM at updates)
    bit<32> arr_seq;         // packets ingress handed to the port's queue (BLUE, REM)
    bit<32> avg;             // QPKT, RED family: average after this packet's update
    bit<32> prob;            // FRAC32, marking probability in force
    bit<32> count;           // PKTS, RED family: unmarked packets since the last mark
    bit<32> rnd;             // FRAC32, random draw used for this packet
    bit<32> state0;          // algorithm state, see control_plane/algorithms/
    bit<32> state1;
    bit<32> ingress_ts;      // USEC, low 32 bits of the ingress timestamp (AECN)
    bit<32> rtt;             // USEC, the flow's RTT the ingress measured (AECN; 0: none)
    bit<16> ip_id;           // IPv4 identification (0 if not IPv4), to match records to packets
    bit<8>  event;           // EVENT_*
    bit<8>  group;           // the packet's group (AECN: robust 0, average 1, fragile 2)
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

// TCP's timestamps option (RFC 7323) as Linux lays it out first in every segment after
// the handshake: NOP, NOP, kind 8, length 10. Other layouts are left in the payload.
header tcp_ts_t {
    bit<32> lead;    // 0x0101080a
    bit<32> tsval;
    bit<32> tsecr;
}

header udp_t {
    bit<16> src_port;
    bit<16> dst_port;
    bit<16> length;
    bit<16> checksum;
}

// Every header costs every packet (invalidated, defines.p4): TCP and UDP are parsed only
// in a profile that reads them (profile.p4).
struct headers_t {
#ifdef P4AQM_WITH_TELEMETRY
    telemetry_t    telemetry;
#endif
    ethernet_t     ethernet;
    ipv4_t         ipv4;
    ipv4_options_t ipv4_options;
#ifdef P4AQM_WITH_L4_PORTS
    tcp_t          tcp;
#endif
#ifdef P4AQM_WITH_RTT_TRACKER
    tcp_ts_t       tcp_ts;
#endif
#ifdef P4AQM_WITH_L4_PORTS
    udp_t          udp;
#endif
}

// What every AQM port has and the telemetry record (aqm_types.p4).
#include "aqm_types.p4"
// The profile's algorithms (profile.p4): each one's file under aqm/, with its parameters,
// aqm_config action and control (after the packet's headers, which their controls read).
#include "p4aqm_algorithms.p4"

// Each control's parameters and working values, and those of the steps an algorithm runs
// around its control (aqm/<name>.p4's name_h): the profile's. Headers, not structs: only
// the port's own are made valid, but each is invalidated for every packet (defines.p4).
#define AQM_CONTROL_PARAMETERS(CONTROL, Control, name, id) name##_h name;
#define AQM_AROUND_PARAMETERS(ACTION, action) action##_h action;
struct aqm_params_t {
    P4AQM_FOR_EACH_CONTROL(AQM_CONTROL_PARAMETERS)
    P4AQM_FOR_EACH_AROUND(AQM_AROUND_PARAMETERS)
}

struct local_metadata_t {
#ifdef P4AQM_WITH_L4_PORTS
    // 1: the parser got through the IPv4 header and its options (an L4 header cut short
    // after them is no error of the packet's). 8 bits, so that the metadata needs no
    // padding field (zeroed for every packet like any other). Without L4 headers nothing
    // is parsed after the options: any parser error is the IPv4 header's.
    bit<8>          l3_parsed;
#endif
#ifdef P4AQM_WITH_ARRIVALS
    bit<32>         arr_seq;    // ingress: packets handed to the egress port's queue so far
#endif
#ifdef P4AQM_WITH_RTT_TRACKER
    bit<32>         rtt_us;     // ingress: the flow's RTT (rtt_tracker.p4), 0 if not measured
#endif
#ifdef P4AQM_WITH_GROUP_INDEX
    // egress: port * 4 + the packet's group (verdict.p4's counters, the RED family's marker)
    bit<32>         group_index;
#endif
    aqm_params_t    aqm;
    aqm_record_h    rec;
#ifdef P4AQM_WITH_TELEMETRY
    aqm_export_h    export;
#endif
#if defined(P4AQM_WITH_TELEMETRY) || defined(P4AQM_WITH_PRIORITY_QUEUES)
    // Valid on a packet that exports a record; DualPI2's charge asks (a bool argument would
    // cost every charged packet a temporary), so it stays without telemetry, never valid.
    aqm_stamp_h     stamp;
#endif
}

#endif
