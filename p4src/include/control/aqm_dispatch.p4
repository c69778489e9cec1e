#ifndef P4AQM_AQM_DISPATCH_P4
#define P4AQM_AQM_DISPATCH_P4

#include "../headers.p4"
#include "port_epoch.p4"
#include "prng.p4"

// Chooses the port's algorithm with the aqm_config table and runs only that algorithm.
// The table's action (one per algorithm, defined as a macro in the algorithm's file under
// aqm/ and expanded here) loads the port's epoch, seed and parameters; then the shared
// prologue runs (the record's inputs, the epoch, one random draw), then the algorithm's
// control: one `if` per algorithm, the RED family first. Every parameter is action data
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
    Red() red_aqm;
    Newque() newque_aqm;
    Blue() blue_aqm;
    Pi() pi_aqm;
    Rem() rem_aqm;
    AecnGroup() aecn_group;
    AecnDebt() aecn_debt;
    Codel() codel_aqm;
    Pie() pie_aqm;
    Pi2() pi2_aqm;

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
        meta.aqm.common.level_a = ECN_CE;
        meta.group_index = meta.port_index << 2;
    }

    // One line per algorithm: its aqm_config action(s), from its file under aqm/.
    DROPTAIL_ACTIONS
    RED_ACTIONS
    MECN_ACTIONS
    NEWQUE_ACTIONS
    BLUE_ACTIONS
    PI_ACTIONS
    REM_ACTIONS
    AECN_ACTIONS
    CODEL_ACTIONS
    PIE_ACTIONS
    PI2_ACTIONS
    DUALPI2_ACTIONS

    // Nothing to do: the port's AQM headers stay invalid.
    action no_aqm() {
    }

    table aqm_config {
        key = { meta.port_index: exact @name("port"); }
        actions = {
            droptail;
            red;
            red_ecn;
            ecnm;
            mecn;
            newque;
            blue;
            pi;
            rem;
            aecn;
            codel;
            pie;
            pi2;
            dualpi2;
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
            if (meta.aqm.common.algorithm == ALGO_RED
                    || meta.aqm.common.algorithm == ALGO_AECN) {
                // AECN is RED+ECN with a ramp per RTT group and decisions owed per group.
                if (meta.aqm.common.algorithm == ALGO_AECN) {
                    aecn_group.apply(meta.port_index, meta.aqm.aecn, meta.aqm.red, hdr,
                                     meta.rtt_us, std_meta, meta.rec, meta.group_index);
                }
                red_aqm.apply(meta.port_index, meta.group_index, meta.aqm.common.fresh,
                              meta.aqm.red, std_meta, meta.rec, meta.aqm.common.fire);
                if (meta.aqm.common.algorithm == ALGO_AECN) {
                    aecn_debt.apply(meta.port_index, meta.aqm.common.fresh, meta.aqm.aecn,
                                    meta.rec, meta.aqm.common.fire);
                }
            } else if (meta.aqm.common.algorithm == ALGO_NEWQUE) {
                newque_aqm.apply(meta.port_index, meta.aqm.common.fresh, meta.aqm.common.limit,
                                 meta.aqm.newque, std_meta, meta.arr_seq, meta.rec,
                                 meta.aqm.common.fire);
            } else if (meta.aqm.common.algorithm == ALGO_BLUE) {
                blue_aqm.apply(meta.port_index, meta.aqm.common.fresh, meta.aqm.blue, std_meta,
                               meta.arr_seq, meta.rec, meta.aqm.common.fire);
            } else if (meta.aqm.common.algorithm == ALGO_PI) {
                pi_aqm.apply(meta.port_index, meta.aqm.common.fresh, meta.aqm.pi, std_meta,
                             meta.rec, meta.aqm.common.fire);
            } else if (meta.aqm.common.algorithm == ALGO_REM) {
                rem_aqm.apply(meta.port_index, meta.aqm.common.fresh, meta.aqm.rem, std_meta,
                              meta.arr_seq, meta.rec, meta.aqm.common.fire);
            } else if (meta.aqm.common.algorithm == ALGO_CODEL) {
                codel_aqm.apply(meta.port_index, meta.aqm.common.fresh,
                                meta.aqm.common.ecn_mode, meta.aqm.codel, std_meta, meta.rec,
                                meta.aqm.common.fire);
            } else if (meta.aqm.common.algorithm == ALGO_PIE) {
                pie_aqm.apply(meta.port_index, meta.aqm.common.fresh, meta.aqm.common.ecn_mode,
                              meta.aqm.pie, std_meta, meta.rec, meta.aqm.common.fire);
            } else if (meta.aqm.common.algorithm == ALGO_PI2) {
                pi2_aqm.apply(meta.port_index, meta.aqm.common.fresh, meta.aqm.pi2, std_meta,
                              meta.rec, meta.group_index, meta.aqm.common.fire);
            }
        }
    }
}

#endif
