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
//   P48     probability * 2^48       bit<64>  PI's probability (1.0 is exactly 2^48)
//   GAIN48  probability/packet*2^48  bit<64>  PI's gains a and b
//   PGAIN   probability/USEC * 2^48  bit<64>  PIE's alpha and beta (Hz as P48 per us)
//   PRICE   price * 2^32             bit<64>  REM's link price
//   RATE    packets/s * 2^16         bit<32>  NEWQUE's arrival rate and capacity
//   USEC    microseconds             bit<32>  enq_timestamp, deq_timedelta, intervals
//   USEC48  microseconds             bit<48>  egress_global_timestamp, times of events
//   PKTS    packets                  bit<32>  limit, count, thresholds of events
//
// All arithmetic is unsigned. A signed change (PI, REM) is formed as the difference of two
// non-negative sums and clamped at 0. Products are formed after widening both operands
// and results are saturated instead of wrapping. There is no division anywhere.
//
// Where values live (the cost of a packet in BMv2, counted by benchmarks/instructions.py):
// BMv2 zeroes every metadata field - the user metadata, and every local variable and
// temporary p4c makes - for every packet, about 650 instructions each, whatever the packet
// runs. A header costs about as much per packet to invalidate, and as much per field to
// zero when it is made valid; an assignment costs about 1 000, a condition or a table
// without a key about 400, each arithmetic operation in an expression about 240 (GMP
// integers). So what every AQM has (its configuration, the per-packet flags) and the
// telemetry record are one header (aqm_types.p4), each algorithm's parameters and working
// values are one header of its own, both made valid by the aqm_config action, a profile's
// record has only the fields its algorithms write (profile.p4), and metadata holds only
// what crosses from ingress to egress. Packing parameters into one wide field saves a
// field's zeroing and load but p4c masks every part of a `++`, so only a group read off the
// common path is packed (red.p4). p4c gives a register or counter call a temporary for
// every index that is not a metadata field or an action's parameter, and for every value
// that is an expression; its copy propagation turns a field just assigned an expression in
// the same action back into that expression. Values for those calls are therefore computed
// in another action than the call's (a table's, or one called directly), from where p4c
// does not propagate them. There are no helper functions (each call site costs
// temporaries). Straight-line code goes into actions where it can (p4c makes a table of
// every stretch of it between `if`s, and of every action called directly, so statements
// that follow such a call are a table more), but never an `if`: p4c predicates an `if`
// inside an action into conditional expressions, which cost more in BMv2 without logging
// (RED +10 % measured) than the tables and conditions they save. A header passed whole to a
// primitive (setValid, setInvalid) makes BMv2 keep every field of it as a number: a packet
// header made invalid anywhere costs every packet's parser about 90 instructions a field.

typedef bit<9>  port_t;
typedef bit<48> mac_t;
typedef bit<32> ipv4_addr_t;
typedef bit<64> qavg_t;
typedef bit<32> qpkt_t;
typedef bit<32> frac32_t;
typedef bit<32> slope_t;
typedef bit<64> p48_t;
typedef bit<64> gain48_t;
typedef bit<64> pgain_t;
typedef bit<64> price_t;
typedef bit<32> rate_t;
typedef bit<32> usec_t;
typedef bit<48> usec48_t;

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
const bit<32> TELEMETRY_BYTES = 82;

const bit<32> PKT_INSTANCE_TYPE_NORMAL = 0;
const bit<32> PKT_INSTANCE_TYPE_EGRESS_CLONE = 2;

// ECN codepoints (RFC 3168). MECN levels (SPEC, seed 001 Table 1):
// no congestion = ECT(0), incipient = ECT(1), moderate = CE.
const bit<2> ECN_NOT_ECT = 0;
const bit<2> ECN_ECT1 = 1;
const bit<2> ECN_ECT0 = 2;
const bit<2> ECN_CE = 3;

// What the ECN-capable packet gets when MECN's marker fires in [minth, midth); a mark sets
// CE (moderate) elsewhere.
const bit<2> LEVEL_INCIPIENT = ECN_ECT1;

// How a marking decision is carried out.
const bit<2> ECN_MODE_DROP = 0;         // every decision drops
const bit<2> ECN_MODE_MARK = 1;         // mark ECT, drop Not-ECT; a forced region drops
const bit<2> ECN_MODE_MARK_ALWAYS = 2;  // ECNM: forced region marks too; drops only at the limit

// Region of the packet, in telemetry and in the golden model.
const bit<8> REGION_NONE = 0;    // no marking (RED family: avg < t0)
const bit<8> REGION_A = 1;       // marks with probability prob (RED family: t0 <= avg < t1)
const bit<8> REGION_B = 2;       // RED family: t1 <= avg < t2
const bit<8> REGION_FORCED = 3;  // RED family: avg >= t2

// What a packet did to an algorithm's state (NEWQUE, BLUE, PI, REM), in telemetry.
const bit<8> EVENT_NONE = 0;
const bit<8> EVENT_INCREASE = 1;  // the probability went up
const bit<8> EVENT_DECREASE = 2;  // the probability went down
const bit<8> EVENT_HELD = 3;      // a change was due, but the last one is too recent
const bit<8> EVENT_UPDATE = 4;    // a periodic update ran (PI, REM)

// Outcome of one packet, in telemetry and in the golden model.
const bit<8> OUTCOME_PASS = 0;
const bit<8> OUTCOME_MARK = 1;
const bit<8> OUTCOME_PROB_DROP = 2;
const bit<8> OUTCOME_FORCED_DROP = 3;
const bit<8> OUTCOME_OVERFLOW_DROP = 4;

// Ingress drop reasons (index of the ingress_drops counter), checked in this order.
const bit<32> DROP_NO_ROUTE = 0;
const bit<32> DROP_NO_L2_ENTRY = 1;
const bit<32> DROP_TTL_EXPIRED = 2;
const bit<32> DROP_MALFORMED = 3;         // the parser did not get through IPv4 and options
const bit<32> DROP_BAD_CHECKSUM = 4;      // IPv4 header checksum wrong (RFC 1812 5.2.2)
const bit<32> DROP_LENGTH_BELOW_HEADER = 5;  // total length < 4 * IHL
const bit<32> DROP_TRUNCATED = 6;         // total length > the bytes that arrived
#define INGRESS_DROP_REASONS 7

const bit<32> ETHERNET_BYTES = 14;

const bit<32> FRAC32_ONE = 0xffffffff;
const p48_t P48_ONE = 1 << 48;
const qpkt_t QPKT_MAX = 0xffffffff;
// enq_qdepth is saturated to this before it is scaled to QPKT.
const bit<19> QDEPTH_MAX = 0xffff;
// Lookup-table buckets above this all share the last key (a miss).
const bit<16> BUCKET_MAX = 0xffff;
// Entries of each per-port lookup table, all ports together (up to 1024 per port).
#define LOOKUP_ENTRIES 65536

#endif
