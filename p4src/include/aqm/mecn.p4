#ifndef P4AQM_MECN_P4
#define P4AQM_MECN_P4

#include "red.p4"

// MECN (seed 001, control_plane/algorithms/mecn.py): RED's control with two codepoints,
// incipient marks (ECT(1)) in [minth, midth), moderate marks (CE) in [midth, maxth), drop
// above.
action mecn(inout aqm_common_t c, inout red_params_t p, bit<32> limit, frac32_t wq,
            bit<8> idle_shift, qpkt_t minth, qpkt_t midth, qpkt_t maxth, slope_t slope1,
            slope_t slope2) {
    red_ramp(c, p, ECN_MODE_MARK, limit, wq, idle_shift, minth, midth, maxth, slope1, 0,
             slope2);
    p.level_a = LEVEL_INCIPIENT;
    p.level_b = LEVEL_MODERATE;
}

#endif
