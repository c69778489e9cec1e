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

struct red_params_t {
    frac32_t wq;
    bit<8>   idle_shift;  // idle_decay bucket = idle time (USEC) >> idle_shift
    ramp_t   ramp;
}

// Region A is [minth, maxth); B is the gentle ramp [maxth, hardth) from maxp to 1, empty
// when hardth == maxth (gentle off).
action red_ramp(inout red_params_t p, frac32_t wq, bit<8> idle_shift, qpkt_t minth,
                qpkt_t maxth, qpkt_t hardth, slope_t slope, frac32_t maxp,
                slope_t gentle_slope) {
    p.wq = wq;
    p.idle_shift = idle_shift;
    p.ramp.t0 = minth;
    p.ramp.t1 = maxth;
    p.ramp.t2 = hardth;
    p.ramp.slope_a = slope;
    p.ramp.base_b = maxp;
    p.ramp.slope_b = gentle_slope;
}

action red(inout aqm_common_t c, inout red_params_t p, bit<16> epoch_id, bit<32> prng_seed,
           bit<1> use_bmv2_random, bit<32> limit, frac32_t wq, bit<8> idle_shift,
           qpkt_t minth, qpkt_t maxth, qpkt_t hardth, slope_t slope, frac32_t maxp,
           slope_t gentle_slope) {
    aqm_common(c, ALGO_RED, ECN_MODE_DROP, limit, epoch_id, prng_seed, use_bmv2_random);
    red_ramp(p, wq, idle_shift, minth, maxth, hardth, slope, maxp, gentle_slope);
}

action red_ecn(inout aqm_common_t c, inout red_params_t p, bit<16> epoch_id, bit<32> prng_seed,
               bit<1> use_bmv2_random, bit<32> limit, frac32_t wq, bit<8> idle_shift,
               qpkt_t minth, qpkt_t maxth, qpkt_t hardth, slope_t slope, frac32_t maxp,
               slope_t gentle_slope) {
    aqm_common(c, ALGO_RED, ECN_MODE_MARK, limit, epoch_id, prng_seed, use_bmv2_random);
    red_ramp(p, wq, idle_shift, minth, maxth, hardth, slope, maxp, gentle_slope);
}

action ecnm(inout aqm_common_t c, inout red_params_t p, bit<16> epoch_id, bit<32> prng_seed,
            bit<1> use_bmv2_random, bit<32> limit, frac32_t wq, bit<8> idle_shift,
            qpkt_t minth, qpkt_t maxth, qpkt_t hardth, slope_t slope, frac32_t maxp,
            slope_t gentle_slope) {
    aqm_common(c, ALGO_RED, ECN_MODE_MARK_ALWAYS, limit, epoch_id, prng_seed, use_bmv2_random);
    red_ramp(p, wq, idle_shift, minth, maxth, hardth, slope, maxp, gentle_slope);
}

// record: avg (QPKT), prob = pb (FRAC32), count (unmarked packets before this one).
control Red(in port_t port,
            in bit<1> fresh,
            in red_params_t p,
            in standard_metadata_t std_meta,
            inout aqm_record_t rec,
            out bool fire) {
    QueueAverage() queue_avg;
    Marker() marker;

    apply {
        queue_avg.apply(port, fresh, p.wq, p.idle_shift, std_meta, rec.avg);
        marker.apply(port, fresh, p.ramp, rec.avg, rec.rnd, rec.region, rec.prob, rec.count,
                     fire);
    }
}

#endif
