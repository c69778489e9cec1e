#ifndef P4AQM_AECN_P4
#define P4AQM_AECN_P4

#include "../aqm_types.p4"
#include "red.p4"

// AECN (seed 002, ch. 5): RED+ECN on RED's average (red.p4) with a ramp per RTT group
// and marks applied to the front. control_plane/algorithms/aecn.py says what it does,
// where BMv2 makes us differ from the seed, and what each field below holds. The record's
// fields it writes beside RED's, by the seed's names:
#define AECN_DEBTS state0      // the decisions each group owes: robust | average << 8 | fragile << 16
#define AECN_MEASURED state1   // 1: the group came from the RTT the ingress measured
// and group, rtt (the tracker's result), ingress_ts (its clock).
const bit<8> GROUP_ROBUST = 0;
const bit<8> GROUP_AVERAGE = 1;
const bit<8> GROUP_FRAGILE = 2;
const bit<8> RTT_FROM_TABLE = 0;
const bit<8> RTT_MEASURED = 1;
const bit<8> RTT_MEASURED_OR_TABLE = 2;
#define AECN_GROUP_ENTRIES 4096

// A port's AECN parameters (beside red_h, the average group's) and the working values of
// AecnGroup and AecnDebt: one header (red.p4 says why).
header aecn_h {
    qpkt_t   debt_floor;      // the lower of minth and robust_minth: debts end below it
    qpkt_t   robust_minth;
    slope_t  slope_robust;
    slope_t  slope_fragile;
    usec_t   robust_from;     // RTTs below this are no measurement (the seed: 0.5 ms)
    usec_t   average_from;
    usec_t   fragile_from;
    bit<8>   rtt_source;      // RTT_*
    // What aecn_groups matches a packet on (ports 0 without TCP or UDP)
    bit<32>  src_addr;
    bit<32>  dst_addr;
    bit<8>   protocol;
    bit<16>  src_port;
    bit<16>  dst_port;
    // AecnDebt's
    bit<32>  debts;
    bit<32>  owed;
    bit<8>   shift;
}

// The aqm_config action, expanded inside AqmDispatch (aqm_dispatch.p4): declared there,
// an action writes the port's parameter headers without p4c copying them. The RED
// parameters are the average group's; AecnGroup changes the ramp for the other groups.
#define AECN_ACTION \
    action aecn(bit<16> epoch_id, bit<32> prng_seed, bit<32> limit, \
                frac32_t wq, bit<8> idle_shift, qpkt_t minth, qpkt_t robust_minth, \
                qpkt_t maxth, slope_t slope_robust, slope_t slope_average, \
                slope_t slope_fragile, usec_t robust_from, usec_t average_from, \
                usec_t fragile_from, bit<8> rtt_source, bit<8> wait) { \
        aqm_common(RED_ID, ECN_MODE_MARK, ECN_CE, limit, epoch_id, prng_seed); \
        RED_RAMP(wq, idle_shift, minth, maxth, maxth, slope_average, 0, 0, wait) \
        meta.aqm.aecn.setValid(); \
        meta.aqm.aecn.debt_floor = robust_minth < minth ? robust_minth : minth; \
        meta.aqm.aecn.robust_minth = robust_minth; \
        meta.aqm.aecn.slope_robust = slope_robust; \
        meta.aqm.aecn.slope_fragile = slope_fragile; \
        meta.aqm.aecn.robust_from = robust_from; \
        meta.aqm.aecn.average_from = average_from; \
        meta.aqm.aecn.fragile_from = fragile_from; \
        meta.aqm.aecn.rtt_source = rtt_source; \
    }

// AECN's steps around RED's control, which AqmDispatch runs on a port whose AECN
// parameters are valid (an AECN port): the group before, the debt after.
#define AECN_INSTANCES \
    AecnGroup() aecn_group; \
    AecnDebt() aecn_debt;
#define AECN_AROUND(RUN) \
    if (meta.aqm.aecn.isValid()) { \
        aecn_group.apply(std_meta.egress_port, meta.aqm.aecn, meta.aqm.red, hdr, meta.rtt_us, \
                         std_meta, meta.rec, meta.group_index); \
    } \
    RUN \
    if (meta.aqm.aecn.isValid()) { \
        aecn_debt.apply(std_meta.egress_port, meta.aqm.aecn, meta.rec); \
    }

// Before RED's average and marker: the packet's group, and the group's ramp.
control AecnGroup(in port_t index,
                  inout aecn_h p,
                  inout red_h ramp,
                  in headers_t hdr,
                  in bit<32> rtt,
                  in standard_metadata_t std_meta,
                  inout aqm_record_h rec,
                  inout bit<32> group_index) {

    action set_group(bit<8> group) {
        rec.group = group;
    }

    table aecn_groups {
        key = {
            index: exact @name("port");
            p.src_addr: ternary @name("src_addr");
            p.dst_addr: ternary @name("dst_addr");
            p.protocol: ternary @name("protocol");
            p.src_port: ternary @name("src_port");
            p.dst_port: ternary @name("dst_port");
        }
        actions = { set_group; @defaultonly NoAction; }
        const default_action = NoAction();
        size = AECN_GROUP_ENTRIES;
    }

    apply {
        rec.rtt = rtt;
        rec.ingress_ts = (bit<32>)std_meta.ingress_global_timestamp;
        rec.group = GROUP_AVERAGE;
        if (p.rtt_source != RTT_FROM_TABLE && rtt >= p.robust_from) {
            rec.AECN_MEASURED = 1;
            if (rtt < p.average_from) {
                rec.group = GROUP_ROBUST;
            } else if (rtt >= p.fragile_from) {
                rec.group = GROUP_FRAGILE;
            }
        } else if (p.rtt_source != RTT_MEASURED && hdr.ipv4.isValid()) {
            p.src_addr = hdr.ipv4.src_addr;
            p.dst_addr = hdr.ipv4.dst_addr;
            p.protocol = hdr.ipv4.protocol;
            if (hdr.tcp.isValid()) {
                p.src_port = hdr.tcp.src_port;
                p.dst_port = hdr.tcp.dst_port;
            } else if (hdr.udp.isValid()) {
                p.src_port = hdr.udp.src_port;
                p.dst_port = hdr.udp.dst_port;
            }
            aecn_groups.apply();
        }
        if (rec.group == GROUP_ROBUST) {
            ramp.t0 = p.robust_minth;
            ramp.RED_SLOPE_A = p.slope_robust;
        } else if (rec.group == GROUP_FRAGILE) {
            ramp.RED_SLOPE_A = p.slope_fragile;
        }
        group_index = group_index + (bit<32>)rec.group;
    }
}

// After RED's marker, whose decision (`fire` on entry) becomes a debt of the group.
control AecnDebt(in port_t index,
                 inout aecn_h v,
                 inout aqm_record_h rec) {
    register<bit<32>, port_t>(PORT_SLOTS) debt_reg;

    // The register calls in actions: outside one, p4c copies the port into a temporary
    // (defines.p4).
    action load() {
        debt_reg.read(v.debts, index);
    }

    action store() {
        debt_reg.write(index, v.debts);
        rec.AECN_DEBTS = v.debts;
    }

    apply {
        load();
        if (rec.fresh == 1 || rec.avg < v.debt_floor) {
            v.debts = 0;
        }
        v.shift = rec.group << 3;
        v.owed = (v.debts >> v.shift) & 0xff;
        // A decision on a Not-ECT packet drops it; otherwise it becomes a debt.
        if (rec.fire == 1 && rec.ecn_in != (bit<8>)ECN_NOT_ECT) {
            rec.fire = 0;
            if (v.owed != 0xff) {
                v.owed = v.owed + 1;
            }
        }
        if ((rec.ecn_in == (bit<8>)ECN_ECT0 || rec.ecn_in == (bit<8>)ECN_ECT1)
                && v.owed != 0) {
            rec.fire = 1;
            v.owed = v.owed - 1;
        }
        v.debts = (v.debts & ~(32w0xff << v.shift)) | (v.owed << v.shift);
        store();
    }
}

#endif
