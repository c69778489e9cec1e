#ifndef P4AQM_RED_P4
#define P4AQM_RED_P4

#include "../aqm_types.p4"
#include "../lib.p4"

// The RED family (control_plane/algorithms/red.py): RED (Floyd & Jacobson 1993), gentle
// RED, RED+ECN (RFC 3168) and ECNM (seed 002) are one ramp of the marking probability
// over RED's average queue; the action names the ECN mode. MECN (mecn.p4) is the same
// control with two codepoints, AECN (aecn.p4) with a ramp per RTT group.

// A port's RED parameters (the average's, queue_avg.p4, and the ramp's, marker.p4) and
// the working values of both: one header, made valid by the aqm_config action, whose
// every field costs every packet of the port a write to zero it (defines.p4).
header red_h {
    frac32_t wq;
    bit<8>   idle_shift;     // idle_decay bucket = idle time (USEC) >> idle_shift
    qpkt_t   t0;
    // The ramp above t0, packed: a field costs every packet a write to zero it and one to
    // load it, whatever its width; the ramp is read only by a packet above t0.
    bit<168> ramp;           // RED_T1 ++ RED_T2 ++ RED_SLOPE_A ++ RED_BASE_B ++ RED_SLOPE_B ++ RED_WAIT
    // QueueAverage's
    qavg_t   avg;
    qavg_t   q;
    bit<48>  last_departure; // USEC48: when the previous packet left (start of idleness)
    bit<48>  idle;           // USEC48
    bit<48>  bucket;         // idle >> idle_shift: past the table's last bucket, a miss
    // Marker's
    bit<64>  pb;             // FRAC32 (saturated), widened
    bit<64>  spent;          // count * pb, plus 1.0 without wait (FRAC32 scale)
    bit<32>  next;           // count after this packet (saturated)
}

// red_h.ramp's parts, read as v.RED_T1: t1, t2, slope_a, base_b, slope_b (32 bits each:
// QPKT, QPKT, SLOPE, FRAC32, SLOPE) and wait (8 bits; 1: ns-2's wait between marks).
#define RED_T1 ramp[167:136]
#define RED_T2 ramp[135:104]
#define RED_SLOPE_A ramp[103:72]
#define RED_BASE_B ramp[71:40]
#define RED_SLOPE_B ramp[39:8]
#define RED_WAIT ramp[7:0]

#include "queue_avg.p4"
#include "marker.p4"

// The aqm_config actions, expanded inside AqmDispatch (aqm_dispatch.p4): declared there,
// an action writes the port's parameter headers without p4c copying them. Region A is
// [minth, maxth); B is the gentle ramp [maxth, hardth) from maxp to 1, empty when
// hardth == maxth (gentle off). wait = 1: ns-2's wait between marks (marker.p4).
// RED_RAMP is the family's shared step (MECN's and AECN's too); RED, RED+ECN and ECNM
// differ only in their ECN mode. The marker's count is the group's (group 0 but with AECN,
// aecn.p4): its index is set here, where p4c does not propagate its expression into the
// register calls (temporaries, defines.p4).
#define RED_RAMP(WQ, IDLE_SHIFT, MINTH, MAXTH, HARDTH, SLOPE, MAXP, GENTLE_SLOPE, WAIT) \
    meta.aqm.red.setValid(); \
    meta.group_index = (bit<32>)std_meta.egress_port << 2; \
    meta.aqm.red.wq = WQ; \
    meta.aqm.red.idle_shift = IDLE_SHIFT; \
    meta.aqm.red.t0 = MINTH; \
    meta.aqm.red.ramp = (qpkt_t)(MAXTH) ++ (qpkt_t)(HARDTH) ++ (slope_t)(SLOPE) \
                        ++ (frac32_t)(MAXP) ++ (slope_t)(GENTLE_SLOPE) ++ (bit<8>)(WAIT);
#define RED_FAMILY_ACTION(name, mode) \
    action name(bit<16> epoch_id, bit<32> prng_seed, \
            bit<32> limit, frac32_t wq, bit<8> idle_shift, qpkt_t minth, qpkt_t maxth, \
            qpkt_t hardth, slope_t slope, frac32_t maxp, slope_t gentle_slope, bit<8> wait) { \
        aqm_common(RED_ID, mode, ECN_CE, limit, epoch_id, prng_seed); \
        RED_RAMP(wq, idle_shift, minth, maxth, hardth, slope, maxp, gentle_slope, wait) \
    }
#define RED_ACTION RED_FAMILY_ACTION(red, ECN_MODE_DROP)
#define RED_ECN_ACTION RED_FAMILY_ACTION(red_ecn, ECN_MODE_MARK)
#define ECNM_ACTION RED_FAMILY_ACTION(ecnm, ECN_MODE_MARK_ALWAYS)

// How AqmDispatch applies the control.
#define RED_APPLY(INSTANCE) \
    INSTANCE.apply(std_meta.egress_port, meta.group_index, meta.aqm.red, std_meta, meta.rec);

// record: avg (QPKT), prob = pb (FRAC32), count (unmarked packets before this one).
control Red(in port_t index,
            inout bit<32> group_index,
            inout red_h r,
            in standard_metadata_t std_meta,
            inout aqm_record_h rec) {
    QueueAverage() queue_avg;
    Marker() marker;

    apply {
        queue_avg.apply(index, r, std_meta, rec);
        marker.apply(group_index, r, rec);
    }
}

#endif
