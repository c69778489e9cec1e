#ifndef P4AQM_AQM_CONFIG_P4
#define P4AQM_AQM_CONFIG_P4

#include "../headers.p4"

// Chooses and parameterises the AQM of an egress port. Every parameter is action data
// written over P4Runtime; control_plane/aqm.py builds these actions from physical values.
control AqmConfig(in port_t port, inout aqm_params_t p) {

    action common(bit<32> limit, frac32_t wq, bit<8> idle_shift, bit<2> ecn_mode) {
        p.enabled = 1;
        p.limit = limit;
        p.wq = wq;
        p.idle_shift = idle_shift;
        p.ecn_mode = ecn_mode;
    }

    // RED's regions: A is [minth, maxth); B is the gentle ramp [maxth, hardth) from maxp to 1,
    // empty when hardth == maxth (gentle off).
    action red_regions(qpkt_t minth, qpkt_t maxth, qpkt_t hardth, slope_t slope,
                       frac32_t maxp, slope_t gentle_slope) {
        p.t0 = minth;
        p.t1 = maxth;
        p.t2 = hardth;
        p.slope_a = slope;
        p.base_b = maxp;
        p.slope_b = gentle_slope;
        p.level_a = ECN_CE;
        p.level_b = ECN_CE;
    }

    action no_aqm() {
        p.enabled = 0;
    }

    action droptail(bit<32> limit, frac32_t wq, bit<8> idle_shift) {
        common(limit, wq, idle_shift, ECN_MODE_DROP);
        red_regions(QPKT_MAX, QPKT_MAX, QPKT_MAX, 0, 0, 0);
    }

    action red(bit<32> limit, frac32_t wq, bit<8> idle_shift, qpkt_t minth, qpkt_t maxth,
               qpkt_t hardth, slope_t slope, frac32_t maxp, slope_t gentle_slope) {
        common(limit, wq, idle_shift, ECN_MODE_DROP);
        red_regions(minth, maxth, hardth, slope, maxp, gentle_slope);
    }

    action red_ecn(bit<32> limit, frac32_t wq, bit<8> idle_shift, qpkt_t minth, qpkt_t maxth,
                   qpkt_t hardth, slope_t slope, frac32_t maxp, slope_t gentle_slope) {
        common(limit, wq, idle_shift, ECN_MODE_MARK);
        red_regions(minth, maxth, hardth, slope, maxp, gentle_slope);
    }

    action ecnm(bit<32> limit, frac32_t wq, bit<8> idle_shift, qpkt_t minth, qpkt_t maxth,
                qpkt_t hardth, slope_t slope, frac32_t maxp, slope_t gentle_slope) {
        common(limit, wq, idle_shift, ECN_MODE_MARK_ALWAYS);
        red_regions(minth, maxth, hardth, slope, maxp, gentle_slope);
    }

    // MECN: incipient marks (ECT(1)) in [minth, midth), moderate marks (CE) in [midth, maxth).
    action mecn(bit<32> limit, frac32_t wq, bit<8> idle_shift, qpkt_t minth, qpkt_t midth,
                qpkt_t maxth, slope_t slope1, slope_t slope2) {
        common(limit, wq, idle_shift, ECN_MODE_MARK);
        p.t0 = minth;
        p.t1 = midth;
        p.t2 = maxth;
        p.slope_a = slope1;
        p.base_b = 0;
        p.slope_b = slope2;
        p.level_a = LEVEL_INCIPIENT;
        p.level_b = LEVEL_MODERATE;
    }

    table aqm_config {
        key = { port: exact @name("port"); }
        actions = { droptail; red; red_ecn; ecnm; mecn; @defaultonly no_aqm; }
        const default_action = no_aqm();
        size = PORT_SLOTS;
    }

    apply {
        aqm_config.apply();
    }
}

#endif
