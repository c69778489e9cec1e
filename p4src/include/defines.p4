#ifndef P4AQM_DEFINES_P4
#define P4AQM_DEFINES_P4

// Fixed-point formats. This table is the contract with control_plane/fixedpoint.py,
// which is the only code that converts physical values to and from these formats.
//
//   QAVG    packets * 2^32           bit<64>  the average's register (QPKT = QAVG >> 16)
//   QPKT    packets * 2^16           bit<32>  avg as the pipeline reads it, thresholds
//   FRAC32  fraction * 2^32          bit<32>  wq, probabilities, decay factors, random draws;
//                                             1.0 is written as 2^32 - 1 (saturated)
//   SLOPE   probability/packet*2^32  bit<32>  pb = (slope * (avg - threshold)) >> 16
//   USEC    microseconds             bit<32>  enq_timestamp, deq_timedelta, export interval
//   USEC48  microseconds             bit<48>  egress_global_timestamp, idle time
//   PKTS    packets                  bit<32>  limit, count
//
// All arithmetic is unsigned. Products are formed in bit<64> after widening both operands
// and results are saturated instead of wrapping. There is no division anywhere.

typedef bit<9>  port_t;
typedef bit<48> mac_t;
typedef bit<32> ipv4_addr_t;
typedef bit<64> qavg_t;
typedef bit<32> qpkt_t;
typedef bit<32> frac32_t;
typedef bit<32> slope_t;
typedef bit<32> usec_t;

const bit<16> ETHERTYPE_IPV4 = 0x0800;
const bit<8>  IP_PROTO_TCP = 6;
const bit<8>  IP_PROTO_UDP = 17;

// BMv2's drop port: mark_to_drop() sends the packet here.
const port_t DROP_PORT = 511;
// Register and counter arrays are indexed by the 9-bit port number.
#define PORT_SLOTS 512
// simple_switch_grpc --cpu-port; PacketIn telemetry leaves through it.
const port_t CPU_PORT = 510;
// Mirror session that clones telemetry to CPU_PORT (written by the controller).
const bit<32> TELEMETRY_SESSION = 500;
// Size of telemetry_t in bytes: a telemetry clone is truncated to it.
const bit<32> TELEMETRY_BYTES = 56;
// @field_list index of the metadata preserved in a telemetry clone.
#define FL_TELEMETRY 1

const bit<32> PKT_INSTANCE_TYPE_NORMAL = 0;
const bit<32> PKT_INSTANCE_TYPE_EGRESS_CLONE = 2;

// ECN codepoints (RFC 3168). MECN levels (SPEC, seed 001 Table 1):
// no congestion = ECT(0), incipient = ECT(1), moderate = CE.
const bit<2> ECN_NOT_ECT = 0;
const bit<2> ECN_ECT1 = 1;
const bit<2> ECN_ECT0 = 2;
const bit<2> ECN_CE = 3;

// What the ECN-capable packet gets when the marker fires.
const bit<2> LEVEL_INCIPIENT = ECN_ECT1;
const bit<2> LEVEL_MODERATE = ECN_CE;

// How a marking decision is carried out.
const bit<2> ECN_MODE_DROP = 0;         // RED: every decision drops
const bit<2> ECN_MODE_MARK = 1;         // RED+ECN, MECN: mark ECT, drop Not-ECT; forced region drops
const bit<2> ECN_MODE_MARK_ALWAYS = 2;  // ECNM: forced region marks too; drops only at the limit

// Region of the average queue, in telemetry and in the golden model.
const bit<8> REGION_NONE = 0;    // avg < t0 (or no AQM on the port)
const bit<8> REGION_A = 1;       // t0 <= avg < t1
const bit<8> REGION_B = 2;       // t1 <= avg < t2
const bit<8> REGION_FORCED = 3;  // avg >= t2

// Outcome of one packet, in telemetry and in the golden model.
const bit<8> OUTCOME_PASS = 0;
const bit<8> OUTCOME_MARK = 1;
const bit<8> OUTCOME_PROB_DROP = 2;
const bit<8> OUTCOME_FORCED_DROP = 3;
const bit<8> OUTCOME_OVERFLOW_DROP = 4;

// Ingress drop reasons (index of the ingress_drops counter).
const bit<32> DROP_NO_ROUTE = 0;
const bit<32> DROP_NO_L2_ENTRY = 1;
const bit<32> DROP_TTL_EXPIRED = 2;
const bit<32> DROP_MALFORMED = 3;
#define INGRESS_DROP_REASONS 4

const bit<32> FRAC32_ONE = 0xffffffff;
const qpkt_t QPKT_MAX = 0xffffffff;
// enq_qdepth is saturated to this before it is scaled to QPKT.
const bit<19> QDEPTH_MAX = 0xffff;
// Decay-table buckets above this all share the last key (a miss: the average is reset).
const bit<16> IDLE_BUCKET_MAX = 0xffff;
// Entries of the idle_decay table, all ports together (up to 1024 per port).
#define IDLE_DECAY_ENTRIES 65536

#endif
