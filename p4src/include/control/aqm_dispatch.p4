#ifndef P4AQM_AQM_DISPATCH_P4
#define P4AQM_AQM_DISPATCH_P4

#include "../headers.p4"
#include "prologue.p4"
#include "verdict.p4"

// The port's AQM on one packet: the aqm_config table chooses its algorithm and runs only
// that one, and the verdict carries out its decision. The table's action (one per
// algorithm, defined as a macro in the algorithm's file under aqm/ and expanded here)
// counts the packet and loads the port's configuration and parameters; then the shared
// prologue runs (the codepoint on arrival, the epoch, one random draw), the algorithm's
// control (one `if` per algorithm, the RED family first) and the verdict. A port without
// an entry is only counted. A build profile (profile.p4) keeps only its algorithms'
// actions, controls and branches. Every parameter is action data written over P4Runtime;
// control_plane/algorithms/ builds these actions from physical values.
// Egress runs it as the packet leaves its queue, so a packet it drops has used a service
// slot of BMv2's rate-limited queue; built with P4AQM_DROP_AT_ENQUEUE, ingress runs it
// before the packet enters the queue (queue_at_arrival.p4), where Linux and ns-2 drop.
// (A switch on the table's action would dispatch without conditions, but p4c inlines the
// prologue once per case, and its copies' temporaries cost every packet more than the
// conditions: see defines.p4.)
// Whether the port runs the control of the algorithm numbered `id`: always, in a profile of
// one control (p4c drops the condition).
#ifdef P4AQM_ONE_CONTROL
#define AQM_RUNS(id) true
#else
#define AQM_RUNS(id) meta.rec.algorithm == id
#endif

control AqmDispatch(inout headers_t hdr,
                    inout local_metadata_t meta,
                    inout standard_metadata_t std_meta) {
    Prologue() prologue;
    Verdict() verdict;
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

    // Every packet of the port, AQM or not (verdict.p4 counts what the AQM did to them).
    counter(PORT_SLOTS, CounterType.packets_and_bytes) seen;

    // The part of every algorithm's aqm_config action that is the same for all: in the
    // table's action rather than after it, where p4c would make a table of its own for it
    // that every packet applies. level_a: what a mark sets in region A (MECN's incipient
    // level; CE for the other algorithms).
    action aqm_common(bit<8> algorithm, bit<2> ecn_mode, bit<2> level_a, bit<32> limit,
                      bit<16> epoch_id, bit<32> prng_seed, bit<1> use_bmv2_random) {
        seen.count(meta.port_index);
        meta.rec.setValid();
#ifndef P4AQM_ONE_CONTROL
        meta.rec.algorithm = algorithm;
#endif
        meta.rec.ecn_mode = ecn_mode;
        meta.rec.limit = limit;
        meta.rec.epoch_id = epoch_id;
        meta.rec.seed = prng_seed;
        meta.rec.bmv2_random = (bit<2>)use_bmv2_random;
#ifdef P4AQM_WITH_MECN_LEVELS
        meta.rec.level_a = level_a;
#endif
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

    // The port's AQM headers stay invalid.
    action no_aqm() {
        seen.count(meta.port_index);
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
        // The profile "none" has no algorithm, so no port is ever a hit.
        if (aqm_config.apply().hit) {
#ifdef P4AQM_ANY_ALGORITHM
            prologue.apply(meta.port_index, hdr, meta.rec);
            // One branch per control in the profile, each ending in `else` (the last one's
            // is the empty block): DropTail has none.
#ifdef P4AQM_WITH_RED_RAMP
            if (AQM_RUNS(ALGO_RED)
#ifdef P4AQM_WITH_AECN
                    || meta.rec.algorithm == ALGO_AECN
#endif
                    ) {
#ifdef P4AQM_WITH_AECN
                // AECN is RED+ECN with a ramp per RTT group and decisions owed per group.
                if (meta.rec.algorithm == ALGO_AECN) {
                    aecn_group.apply(meta.port_index, meta.aqm.aecn, meta.aqm.red, hdr,
                                     meta.rtt_us, std_meta, meta.rec, meta.group_index);
                }
#endif
                red_aqm.apply(meta.port_index, meta.group_index, meta.aqm.red, std_meta,
                              meta.rec);
#ifdef P4AQM_WITH_AECN
                if (meta.rec.algorithm == ALGO_AECN) {
                    aecn_debt.apply(meta.port_index, meta.aqm.aecn, meta.rec);
                }
#endif
            } else
#endif
#ifdef P4AQM_WITH_NEWQUE
            if (AQM_RUNS(ALGO_NEWQUE)) {
                newque_aqm.apply(meta.port_index, meta.aqm.newque, std_meta, meta.arr_seq,
                                 meta.rec);
            } else
#endif
#ifdef P4AQM_WITH_BLUE
            if (AQM_RUNS(ALGO_BLUE)) {
                blue_aqm.apply(meta.port_index, meta.aqm.blue, std_meta, meta.arr_seq,
                               meta.rec);
            } else
#endif
#ifdef P4AQM_WITH_PI
            if (AQM_RUNS(ALGO_PI)) {
                pi_aqm.apply(meta.port_index, meta.aqm.pi, std_meta, meta.rec);
            } else
#endif
#ifdef P4AQM_WITH_REM
            if (AQM_RUNS(ALGO_REM)) {
                rem_aqm.apply(meta.port_index, meta.aqm.rem, std_meta, meta.arr_seq,
                              meta.rec);
            } else
#endif
#ifdef P4AQM_WITH_CODEL
            if (AQM_RUNS(ALGO_CODEL)) {
                codel_aqm.apply(meta.port_index, meta.aqm.codel, std_meta, meta.rec);
            } else
#endif
#ifdef P4AQM_WITH_PIE
            if (AQM_RUNS(ALGO_PIE)) {
                pie_aqm.apply(meta.port_index, meta.aqm.pie, std_meta, meta.rec);
            } else
#endif
#ifdef P4AQM_WITH_PI2_CONTROL
            if (AQM_RUNS(ALGO_PI2)) {
                pi2_aqm.apply(meta.port_index, meta.aqm.pi2, std_meta, meta.rec);
            } else
#endif
            {}
            verdict.apply(meta.port_index, meta.group_index, hdr, std_meta, meta.rec);
#endif
        }
    }
}

#endif
