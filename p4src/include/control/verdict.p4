#ifndef P4AQM_VERDICT_P4
#define P4AQM_VERDICT_P4

#include "../headers.p4"

// Carries out the algorithm's decision on the packet and counts every outcome per port
// (an AQM port's packets only: aqm_dispatch.p4 counts them all as seen).
// ECN rules (RFC 3168; SPEC for MECN): Not-ECT is never marked, it is dropped where an
// ECN-capable packet would be marked; CE never changes; a mark never lowers the level
// already in the packet (ECT(0) < ECT(1) < CE). A mark sets the port's level_a in region A
// (MECN's incipient codepoint; CE for the other algorithms) and CE elsewhere; a profile
// without MECN only marks CE (profile.p4).
// Drop counters are exclusive: prob_drops + forced_drops + overflow_drops is every drop;
// notect_drops counts the subset that were Not-ECT packets an ECN mode would have marked.
// A packet that passes (most of them) pays two conditions. A profile without reason
// counters (P4AQM_WITH_REASON_COUNTERS) decides and carries out the same, uncounted.
#ifdef P4AQM_WITH_REASON_COUNTERS
control OutcomeCounters(inout bit<32> group_index,
                        in standard_metadata_t std_meta,
                        in aqm_record_h rec,
                        in bool ecn_marks) {
    counter<port_t>(PORT_SLOTS, CounterType.packets) prob_drops;
    counter<port_t>(PORT_SLOTS, CounterType.packets) forced_drops;
    counter<port_t>(PORT_SLOTS, CounterType.packets) overflow_drops;
    counter<port_t>(PORT_SLOTS, CounterType.packets) notect_drops;
#ifdef P4AQM_WITH_MECN_LEVELS
    counter<port_t>(PORT_SLOTS, CounterType.packets) marks_incipient;
#endif
    counter<port_t>(PORT_SLOTS, CounterType.packets) marks_ce;
    // Marks and drops per group of the port (group_index = port * 4 + group; AECN's RTT
    // groups, PI2's classes, group 0 for the other algorithms).
    counter<bit<32>>(PORT_SLOTS * 4, CounterType.packets) group_marks;
    counter<bit<32>>(PORT_SLOTS * 4, CounterType.packets) group_drops;

    // The group's counter index, as a metadata field: p4c makes a temporary of any other.
    action group_of() {
#ifdef P4AQM_RECORD_GROUP
        group_index = ((bit<32>)std_meta.egress_port << 2) | (bit<32>)rec.group;
#else
        group_index = (bit<32>)std_meta.egress_port << 2;
#endif
    }

    apply {
        group_of();
        if (rec.outcome == OUTCOME_MARK) {
            group_marks.count(group_index);
#ifdef P4AQM_WITH_MECN_LEVELS
            if (rec.region == REGION_A && rec.level_a != (bit<4>)ECN_CE) {
                marks_incipient.count(std_meta.egress_port);
            } else
#endif
            {
                marks_ce.count(std_meta.egress_port);
            }
        } else {
            group_drops.count(group_index);
            if (rec.outcome == OUTCOME_PROB_DROP) {
                prob_drops.count(std_meta.egress_port);
            } else if (rec.outcome == OUTCOME_FORCED_DROP) {
                forced_drops.count(std_meta.egress_port);
            } else {
                overflow_drops.count(std_meta.egress_port);
            }
            if (ecn_marks && rec.ecn_in == (bit<8>)ECN_NOT_ECT
                    && rec.outcome != OUTCOME_OVERFLOW_DROP) {
                notect_drops.count(std_meta.egress_port);
            }
        }
    }
}
#endif

control Verdict(inout local_metadata_t meta,
                inout headers_t hdr,
                inout standard_metadata_t std_meta) {
#ifdef P4AQM_WITH_REASON_COUNTERS
    OutcomeCounters() outcome_counters;
#endif

    apply {
        if (meta.rec.fire == 1 || meta.rec.region == REGION_FORCED
                || (bit<32>)std_meta.enq_qdepth >= meta.rec.limit) {
            bool forced = meta.rec.region == REGION_FORCED;
            bool ecn_marks = meta.rec.ecn_mode == ECN_MODE_MARK_ALWAYS
                             || (meta.rec.ecn_mode == ECN_MODE_MARK && !forced);
            if (meta.rec.fire == 1 || forced) {
                if (ecn_marks && meta.rec.ecn_in != (bit<8>)ECN_NOT_ECT) {
                    meta.rec.outcome = OUTCOME_MARK;
                } else if (forced) {
                    meta.rec.outcome = OUTCOME_FORCED_DROP;
                } else {
                    meta.rec.outcome = OUTCOME_PROB_DROP;
                }
            }
            if ((meta.rec.outcome == OUTCOME_PASS || meta.rec.outcome == OUTCOME_MARK)
                    && (bit<32>)std_meta.enq_qdepth >= meta.rec.limit) {
                meta.rec.outcome = OUTCOME_OVERFLOW_DROP;
            }

            if (meta.rec.outcome == OUTCOME_MARK) {
#ifdef P4AQM_WITH_MECN_LEVELS
                if (meta.rec.region == REGION_A && meta.rec.level_a != (bit<4>)ECN_CE) {
                    if (meta.rec.ecn_in == (bit<8>)ECN_ECT0) {
                        hdr.ipv4.ecn = (bit<2>)meta.rec.level_a;
                    }
                } else
#endif
                {
                    hdr.ipv4.ecn = ECN_CE;
                }
            } else {
                mark_to_drop(std_meta);
            }
#ifdef P4AQM_WITH_REASON_COUNTERS
            outcome_counters.apply(meta.group_index, std_meta, meta.rec, ecn_marks);
#endif
        }
    }
}

#endif
