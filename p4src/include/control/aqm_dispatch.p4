#ifndef P4AQM_AQM_DISPATCH_P4
#define P4AQM_AQM_DISPATCH_P4

#include "../headers.p4"
#include "port_epoch.p4"
#include "prng.p4"

// Chooses the port's algorithm with the aqm_config table and runs only that algorithm.
// The table's action (one per algorithm, defined as a macro in the algorithm's file under
// aqm/ and expanded here) loads the port's epoch, seed and parameters; then the shared
// prologue runs (the record's inputs, the epoch, one random draw), then the algorithm's
// control: one `if` per algorithm, the RED family first. A build profile (profile.p4)
// keeps only its algorithms' actions, controls and branches. Every parameter is action data
// written over P4Runtime; control_plane/algorithms/ builds these actions from physical
// values.
// (A switch on the table's action would dispatch without conditions, but p4c inlines the
// prologue once per case, and its copies' temporaries cost every packet more than the
// conditions: see defines.p4.)
control AqmDispatch(in headers_t hdr,
                    in standard_metadata_t std_meta,
                    inout local_metadata_t meta) {
    PortEpoch() epoch;
    Prng() prng;
#ifdef P4AQM_WITH_RED_RAMP
    Red() red_aqm;
#endif
#ifdef P4AQM_WITH_NEWQUE
    Newque() newque_aqm;
#endif
#ifdef P4AQM_WITH_BLUE
    Blue() blue_aqm;
#endif
#ifdef P4AQM_WITH_PI
    Pi() pi_aqm;
#endif
#ifdef P4AQM_WITH_REM
    Rem() rem_aqm;
#endif
#ifdef P4AQM_WITH_AECN
    AecnGroup() aecn_group;
    AecnDebt() aecn_debt;
#endif
#ifdef P4AQM_WITH_CODEL
    Codel() codel_aqm;
#endif
#ifdef P4AQM_WITH_PIE
    Pie() pie_aqm;
#endif
#ifdef P4AQM_WITH_PI2_CONTROL
    Pi2() pi2_aqm;
#endif

    // The part of every algorithm's aqm_config action that is the same for all: in the
    // table's action rather than after it, where p4c would make a table of its own for it
    // that every packet applies.
    action aqm_common(bit<8> algorithm, bit<2> ecn_mode, bit<32> limit, bit<16> epoch_id,
                      bit<32> prng_seed, bit<1> use_bmv2_random) {
        meta.rec.setValid();
        meta.aqm.common.setValid();
        meta.aqm.common.algorithm = algorithm;
        meta.aqm.common.ecn_mode = ecn_mode;
        meta.aqm.common.limit = limit;
        meta.aqm.common.epoch = epoch_id;
        meta.aqm.common.seed = prng_seed;
        meta.aqm.common.bmv2_random = (bit<2>)use_bmv2_random;
#ifdef P4AQM_WITH_MECN_LEVELS
        meta.aqm.common.level_a = ECN_CE;
#endif
        meta.group_index = meta.port_index << 2;
    }

    // Each algorithm's aqm_config action, from its file under aqm/, and the steps some
    // share (the RED family's ramp, PI2's core).
#ifdef P4AQM_WITH_DROPTAIL
    DROPTAIL_ACTION
#endif
#ifdef P4AQM_WITH_RED_RAMP
    RED_RAMP_ACTION
#endif
#ifdef P4AQM_WITH_RED
    RED_ACTION
#endif
#ifdef P4AQM_WITH_RED_ECN
    RED_ECN_ACTION
#endif
#ifdef P4AQM_WITH_ECNM
    ECNM_ACTION
#endif
#ifdef P4AQM_WITH_MECN
    MECN_ACTION
#endif
#ifdef P4AQM_WITH_NEWQUE
    NEWQUE_ACTION
#endif
#ifdef P4AQM_WITH_BLUE
    BLUE_ACTION
#endif
#ifdef P4AQM_WITH_PI
    PI_ACTION
#endif
#ifdef P4AQM_WITH_REM
    REM_ACTION
#endif
#ifdef P4AQM_WITH_AECN
    AECN_ACTION
#endif
#ifdef P4AQM_WITH_CODEL
    CODEL_ACTION
#endif
#ifdef P4AQM_WITH_PIE
    PIE_ACTION
#endif
#ifdef P4AQM_WITH_PI2_CONTROL
    PI2_CORE_ACTION
#endif
#ifdef P4AQM_WITH_PI2
    PI2_ACTION
#endif
#ifdef P4AQM_WITH_DUALPI2
    DUALPI2_ACTION
#endif

    // Nothing to do: the port's AQM headers stay invalid.
    action no_aqm() {
    }

    table aqm_config {
        key = { meta.port_index: exact @name("port"); }
        actions = {
#ifdef P4AQM_WITH_DROPTAIL
            droptail;
#endif
#ifdef P4AQM_WITH_RED
            red;
#endif
#ifdef P4AQM_WITH_RED_ECN
            red_ecn;
#endif
#ifdef P4AQM_WITH_ECNM
            ecnm;
#endif
#ifdef P4AQM_WITH_MECN
            mecn;
#endif
#ifdef P4AQM_WITH_NEWQUE
            newque;
#endif
#ifdef P4AQM_WITH_BLUE
            blue;
#endif
#ifdef P4AQM_WITH_PI
            pi;
#endif
#ifdef P4AQM_WITH_REM
            rem;
#endif
#ifdef P4AQM_WITH_AECN
            aecn;
#endif
#ifdef P4AQM_WITH_CODEL
            codel;
#endif
#ifdef P4AQM_WITH_PIE
            pie;
#endif
#ifdef P4AQM_WITH_PI2
            pi2;
#endif
#ifdef P4AQM_WITH_DUALPI2
            dualpi2;
#endif
            @defaultonly no_aqm;
        }
        const default_action = no_aqm();
        size = PORT_SLOTS;
    }

    apply {
        if (aqm_config.apply().hit) {
            // The codepoint on arrival (the record is zeroed: Not-ECT unless IPv4).
            if (hdr.ipv4.isValid()) {
                meta.rec.ecn_in = (bit<8>)hdr.ipv4.ecn;
            }
            epoch.apply(meta.port_index, meta.aqm.common.epoch, meta.aqm.common.fresh,
                        meta.rec);
            prng.apply(meta.port_index, meta.aqm.common, meta.rec);
            // One branch per control in the profile, each ending in `else` (the last one's
            // is the empty block): DropTail has none.
#ifdef P4AQM_WITH_RED_RAMP
            if (meta.aqm.common.algorithm == ALGO_RED
#ifdef P4AQM_WITH_AECN
                    || meta.aqm.common.algorithm == ALGO_AECN
#endif
                    ) {
#ifdef P4AQM_WITH_AECN
                // AECN is RED+ECN with a ramp per RTT group and decisions owed per group.
                if (meta.aqm.common.algorithm == ALGO_AECN) {
                    aecn_group.apply(meta.port_index, meta.aqm.aecn, meta.aqm.red, hdr,
                                     meta.rtt_us, std_meta, meta.rec, meta.group_index);
                }
#endif
                red_aqm.apply(meta.port_index, meta.group_index, meta.aqm.common.fresh,
                              meta.aqm.red, std_meta, meta.rec, meta.aqm.common.fire);
#ifdef P4AQM_WITH_AECN
                if (meta.aqm.common.algorithm == ALGO_AECN) {
                    aecn_debt.apply(meta.port_index, meta.aqm.common.fresh, meta.aqm.aecn,
                                    meta.rec, meta.aqm.common.fire);
                }
#endif
            } else
#endif
#ifdef P4AQM_WITH_NEWQUE
            if (meta.aqm.common.algorithm == ALGO_NEWQUE) {
                newque_aqm.apply(meta.port_index, meta.aqm.common.fresh, meta.aqm.common.limit,
                                 meta.aqm.newque, std_meta, meta.arr_seq, meta.rec,
                                 meta.aqm.common.fire);
            } else
#endif
#ifdef P4AQM_WITH_BLUE
            if (meta.aqm.common.algorithm == ALGO_BLUE) {
                blue_aqm.apply(meta.port_index, meta.aqm.common.fresh, meta.aqm.blue, std_meta,
                               meta.arr_seq, meta.rec, meta.aqm.common.fire);
            } else
#endif
#ifdef P4AQM_WITH_PI
            if (meta.aqm.common.algorithm == ALGO_PI) {
                pi_aqm.apply(meta.port_index, meta.aqm.common.fresh, meta.aqm.pi, std_meta,
                             meta.rec, meta.aqm.common.fire);
            } else
#endif
#ifdef P4AQM_WITH_REM
            if (meta.aqm.common.algorithm == ALGO_REM) {
                rem_aqm.apply(meta.port_index, meta.aqm.common.fresh, meta.aqm.rem, std_meta,
                              meta.arr_seq, meta.rec, meta.aqm.common.fire);
            } else
#endif
#ifdef P4AQM_WITH_CODEL
            if (meta.aqm.common.algorithm == ALGO_CODEL) {
                codel_aqm.apply(meta.port_index, meta.aqm.common.fresh,
                                meta.aqm.common.ecn_mode, meta.aqm.codel, std_meta, meta.rec,
                                meta.aqm.common.fire);
            } else
#endif
#ifdef P4AQM_WITH_PIE
            if (meta.aqm.common.algorithm == ALGO_PIE) {
                pie_aqm.apply(meta.port_index, meta.aqm.common.fresh, meta.aqm.common.ecn_mode,
                              meta.aqm.pie, std_meta, meta.rec, meta.aqm.common.fire);
            } else
#endif
#ifdef P4AQM_WITH_PI2_CONTROL
            if (meta.aqm.common.algorithm == ALGO_PI2) {
                pi2_aqm.apply(meta.port_index, meta.aqm.common.fresh, meta.aqm.pi2, std_meta,
                              meta.rec, meta.group_index, meta.aqm.common.fire);
            } else
#endif
            {}
        }
    }
}

#endif
