#ifndef P4AQM_AQM_DISPATCH_P4
#define P4AQM_AQM_DISPATCH_P4

#include "../headers.p4"
#include "prologue.p4"
#ifdef P4AQM_ANY_ALGORITHM
#include "verdict.p4"
#endif

// The port's AQM on one packet: the aqm_config table chooses its algorithm and runs only
// that one, and the verdict carries out its decision. The table's action (one per
// algorithm, <ACTION>_ACTION in the algorithm's file under aqm/, expanded here: declared
// here, an action writes the port's parameter headers without p4c copying them) counts the
// packet and loads the port's configuration and parameters; then the shared prologue runs
// (the codepoint on arrival, the epoch, one random draw), the control of the port's
// algorithm (one `if` per control, in the registry's order) and the verdict. A port
// without an entry is only counted. The algorithms and controls are the profile's
// (profile.p4's lists, generated from the registry). Every parameter is action data
// written over P4Runtime; control_plane/algorithms/ builds these actions from physical
// values.
// Egress runs it as the packet leaves its queue, so a packet it drops has used a service
// slot of BMv2's rate-limited queue; built with P4AQM_DROP_AT_ENQUEUE, ingress runs it
// before the packet enters the queue (queue_at_arrival.p4), where Linux and ns-2 drop.
// (A switch on the table's action would dispatch without conditions, but p4c inlines the
// prologue once per case, and its copies' temporaries cost every packet more than the
// conditions: see defines.p4.)
// Whether the port runs the control numbered `id`: always, in a profile of one control
// (p4c drops the condition).
#ifdef P4AQM_ONE_CONTROL
#define AQM_RUNS(id) true
#else
#define AQM_RUNS(id) meta.rec.algorithm == id
#endif
// What each entry of the profile's lists (profile.p4) expands to here: an instance of each
// control and of the steps around one, each algorithm's action and its name in the table,
// and one branch per control.
#define AQM_INSTANCE(CONTROL, Control, name, id) Control() name##_aqm;
#define AQM_AROUND_INSTANCES(ACTION, action) ACTION##_INSTANCES
#define AQM_ACTION(ACTION, action) ACTION##_ACTION
#define AQM_TABLE_ACTION(ACTION, action) action;
#define AQM_BRANCH(CONTROL, Control, name, id) \
    if (AQM_RUNS(id)) { P4AQM_RUN_##CONTROL(name##_aqm) } else

control AqmDispatch(inout headers_t hdr,
                    inout local_metadata_t meta,
                    inout standard_metadata_t std_meta) {
    Prologue() prologue;
#ifdef P4AQM_ANY_ALGORITHM
    Verdict() verdict;
#endif
    P4AQM_FOR_EACH_CONTROL(AQM_INSTANCE)
    P4AQM_FOR_EACH_AROUND(AQM_AROUND_INSTANCES)

    // Every packet of the port, AQM or not (verdict.p4 counts what the AQM did to them).
    counter<port_t>(PORT_SLOTS, CounterType.packets_and_bytes) seen;

    // The part of every algorithm's aqm_config action that is the same for all: in the
    // table's action rather than after it, where p4c would make a table of its own for it
    // that every packet applies. level_a: what a mark sets in region A (MECN's incipient
    // level; CE for the other algorithms). prng_seed: the seeded stream's, or 0 for BMv2's
    // random() (prologue.p4).
    action aqm_common(bit<8> algorithm, bit<2> ecn_mode, bit<2> level_a, bit<32> limit,
                      bit<16> epoch_id, bit<32> prng_seed) {
        seen.count(std_meta.egress_port);
        meta.rec.setValid();
#ifndef P4AQM_ONE_CONTROL
        meta.rec.algorithm = algorithm;
#endif
        meta.rec.ecn_mode = ecn_mode;
        meta.rec.limit = limit;
        meta.rec.epoch_id = epoch_id;
#ifdef P4AQM_WITH_SEEDED_PRNG
        meta.rec.seed = prng_seed;
#endif
#ifdef P4AQM_WITH_MECN_LEVELS
        meta.rec.level_a = (bit<4>)level_a;
#endif
    }

    P4AQM_FOR_EACH_ALGORITHM(AQM_ACTION)

    // The port's AQM headers stay invalid.
    action no_aqm() {
        seen.count(std_meta.egress_port);
    }

    table aqm_config {
        key = { std_meta.egress_port: exact @name("port"); }
        actions = {
            P4AQM_FOR_EACH_ALGORITHM(AQM_TABLE_ACTION)
            @defaultonly no_aqm;
        }
        const default_action = no_aqm();
        size = PORT_SLOTS;
    }

    apply {
        // The profile "none" has no algorithm, so no port is ever a hit.
        if (aqm_config.apply().hit) {
#ifdef P4AQM_ANY_ALGORITHM
            prologue.apply(std_meta.egress_port, hdr, meta.rec);
            // One branch per control, each ending in `else` (the last one's is the empty
            // block): DropTail runs none.
            P4AQM_FOR_EACH_CONTROL(AQM_BRANCH) {}
            verdict.apply(meta, hdr, std_meta);
#endif
        }
    }
}

#endif
