#ifndef P4AQM_DUALPI2_P4
#define P4AQM_DUALPI2_P4

#include "pi2.p4"

// DualPI2 (RFC 9332) on BMv2's two priority queues: PI2's control (pi2.p4) with `dual`
// set, the L queue in ingress, and the L queue's departures charged to the classic queue
// (control_plane/algorithms/dualpi2.py says why and how).

// Each port's clone sessions for the charge (the controller installs them for every port):
// DUALPI2_CHARGE_SESSIONS + port to the port itself; DUALPI2_CHARGE_EXPORT_SESSIONS + port
// to the port and the CPU port.
const bit<32> DUALPI2_CHARGE_SESSIONS = 512;
const bit<32> DUALPI2_CHARGE_EXPORT_SESSIONS = 1024;

// The aqm_config action, expanded inside AqmDispatch (aqm_dispatch.p4).
#define DUALPI2_ACTION \
    action dualpi2(bit<16> epoch_id, bit<32> prng_seed, \
                   bit<32> limit, bit<2> ecn_mode, pgain_t alpha, pgain_t beta, \
                   p48_t alpha_target, usec_t tupdate, bit<32> inv_tupdate, bit<8> k, \
                   usec_t step_thresh, bit<32> step_qlen, bit<8> dual) { \
        aqm_common(PI2_ID, ecn_mode, ECN_CE, limit, epoch_id, prng_seed); \
        PI2_CORE(alpha, beta, alpha_target, tupdate, inv_tupdate, k) \
        meta.aqm.pi2.dual = dual; \
        meta.aqm.pi2.step_thresh = step_thresh; \
        meta.aqm.pi2.step_qlen = step_qlen; \
        meta.aqm.pi2.charge_session = DUALPI2_CHARGE_SESSIONS + (bit<32>)std_meta.egress_port; \
        meta.aqm.pi2.charge_export_session = DUALPI2_CHARGE_EXPORT_SESSIONS + (bit<32>)std_meta.egress_port; \
    }

// Ingress, after forwarding: the L queue for ECT(1) and CE packets to a port with an entry
// (the controller writes one for each DualPI2 port). Other packets pay one condition.
control DualPi2Queue(in headers_t hdr,
                     inout standard_metadata_t std_meta) {

    action l_queue() {
        std_meta.priority = 1;
    }

    table dualpi2_queue {
        key = { std_meta.egress_spec: exact @name("port"); }
        actions = { l_queue; @defaultonly NoAction; }
        const default_action = NoAction();
        size = PORT_SLOTS;
    }

    apply {
        if (hdr.ipv4.isValid() && hdr.ipv4.ecn[0:0] == 1) {
            dualpi2_queue.apply();
        }
    }
}

// Egress, after telemetry: an L packet that leaves is charged to the classic queue. Its
// clone replaces the telemetry clone when the packet also exports a record (BMv2 keeps a
// packet's last clone), through the session whose replicas are both.
control DualPi2Charge(in pi2_h p, in aqm_record_h rec, in aqm_stamp_h stamp) {
    apply {
        if (p.dual == PI2_DUAL_CHARGED && rec.PI2_CLASS == PI2_L4S && rec.outcome <= OUTCOME_MARK) {
            if (stamp.isValid()) {     // it exports a record (never without telemetry)
                clone(CloneType.E2E, p.charge_export_session);
            } else {
                clone(CloneType.E2E, p.charge_session);
            }
        }
    }
}

#endif
