#ifndef P4AQM_DROPTAIL_P4
#define P4AQM_DROPTAIL_P4

#include "../aqm_types.p4"

// DropTail (control_plane/algorithms/droptail.py): only the hard limit, which the verdict
// applies; no state, no draw. The port still counts and exports telemetry.
const bit<8> ALGO_DROPTAIL = 1;

action droptail(inout aqm_common_t c, bit<32> limit) {
    c.algorithm = ALGO_DROPTAIL;
    c.ecn_mode = ECN_MODE_DROP;
    c.limit = limit;
}

#endif
