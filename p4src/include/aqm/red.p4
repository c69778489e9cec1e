#ifndef P4AQM_RED_P4
#define P4AQM_RED_P4

#include "../aqm_types.p4"
#include "queue_avg.p4"
#include "marker.p4"

// The RED family (control_plane/algorithms/red.py): RED (Floyd & Jacobson 1993), gentle
// RED, RED+ECN (RFC 3168) and ECNM (seed 002) are one ramp of the marking probability
// over RED's average queue; the action names the ECN mode. MECN (mecn.p4) is the same
// control with two codepoints.
const bit<8> ALGO_RED = 2;

// The aqm_config actions, expanded inside AqmDispatch (aqm_dispatch.p4): declared there,
// an action writes the port's parameter headers without p4c copying them. Region A is
// [minth, maxth); B is the gentle ramp [maxth, hardth) from maxp to 1, empty when
// hardth == maxth (gentle off). wait = 1: ns-2's wait between marks (marker.p4).
// red_ramp is the family's shared step (MECN's and AECN's too); RED, RED+ECN and ECNM
// differ only in their ECN mode.
#define RED_RAMP_ACTION \
    action red_ramp(frac32_t wq, bit<8> idle_shift, qpkt_t minth, qpkt_t maxth, \
                    qpkt_t hardth, slope_t slope, frac32_t maxp, slope_t gentle_slope, \
                    bit<8> wait) { \
        meta.aqm.red.setValid(); \
        meta.aqm.red.wq = wq; \
        meta.aqm.red.idle_shift = idle_shift; \
        meta.aqm.red.t0 = minth; \
        meta.aqm.red.t1 = maxth; \
        meta.aqm.red.t2 = hardth; \
        meta.aqm.red.slope_a = slope; \
        meta.aqm.red.base_b = maxp; \
        meta.aqm.red.slope_b = gentle_slope; \
        meta.aqm.red.wait = wait; \
    }
#define RED_FAMILY_ACTION(name, mode) \
    action name(bit<16> epoch_id, bit<32> prng_seed, bit<1> use_bmv2_random, \
            bit<32> limit, frac32_t wq, bit<8> idle_shift, qpkt_t minth, qpkt_t maxth, \
            qpkt_t hardth, slope_t slope, frac32_t maxp, slope_t gentle_slope, bit<8> wait) { \
        aqm_common(ALGO_RED, mode, limit, epoch_id, prng_seed, use_bmv2_random); \
        red_ramp(wq, idle_shift, minth, maxth, hardth, slope, maxp, gentle_slope, wait); \
    }
#define RED_ACTION RED_FAMILY_ACTION(red, ECN_MODE_DROP)
#define RED_ECN_ACTION RED_FAMILY_ACTION(red_ecn, ECN_MODE_MARK)
#define ECNM_ACTION RED_FAMILY_ACTION(ecnm, ECN_MODE_MARK_ALWAYS)

// record: avg (QPKT), prob = pb (FRAC32), count (unmarked packets before this one).
control Red(in bit<32> index,
            inout bit<32> group_index,
            in bit<1> fresh,
            in red_h p,
            in standard_metadata_t std_meta,
            inout aqm_record_h rec,
            inout bit<1> fire) {   // 0 on entry (aqm_common_h)
    QueueAverage() queue_avg;
    Marker() marker;

    apply {
        queue_avg.apply(index, fresh, p.wq, p.idle_shift, std_meta, rec.avg);
        marker.apply(group_index, fresh, p, rec, fire);
    }
}

#endif
