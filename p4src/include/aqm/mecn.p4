#ifndef P4AQM_MECN_P4
#define P4AQM_MECN_P4

#include "red.p4"

// MECN (seed 001, control_plane/algorithms/mecn.py): RED's control with two codepoints,
// incipient marks (ECT(1)) in [minth, midth), moderate marks (CE) in [midth, maxth), drop
// above. wait = 1: ns-2's wait between marks, in both regions (one count).
// The aqm_config action (expanded inside AqmDispatch, aqm_dispatch.p4).
#define MECN_ACTION \
    action mecn(bit<16> epoch_id, bit<32> prng_seed, \
                bit<32> limit, frac32_t wq, bit<8> idle_shift, qpkt_t minth, qpkt_t midth, \
                qpkt_t maxth, slope_t slope1, slope_t slope2, bit<8> wait) { \
        aqm_common(RED_ID, ECN_MODE_MARK, LEVEL_INCIPIENT, limit, epoch_id, prng_seed); \
        RED_RAMP(wq, idle_shift, minth, midth, maxth, slope1, 0, slope2, wait) \
    }

#endif
