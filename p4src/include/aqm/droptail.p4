#ifndef P4AQM_DROPTAIL_P4
#define P4AQM_DROPTAIL_P4

#include "../aqm_types.p4"

// DropTail (control_plane/algorithms/droptail.py): only the hard limit, which the verdict
// applies; no state of its own. The port still counts and exports telemetry.

// The aqm_config action, expanded inside AqmDispatch (aqm_dispatch.p4).
#define DROPTAIL_ACTION \
    action droptail(bit<16> epoch_id, bit<32> prng_seed, \
                    bit<32> limit) { \
        aqm_common(NO_CONTROL_ID, ECN_MODE_DROP, ECN_CE, limit, epoch_id, prng_seed); \
    }

#endif
